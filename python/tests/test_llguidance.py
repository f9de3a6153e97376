"""On JSON with o200k_base, masks equal llguidance's (PyPI `llguidance`, forcing off as
DESIGN.md section 1 prescribes) step by step along real documents; benches/src/peer.rs
does the same comparison from Rust."""

import numpy as np
import pytest

import stackmask
from conftest import GRAMMARS

llguidance = pytest.importorskip("llguidance", reason="llguidance is a test dependency")

NO_FORCING = '%llguidance {"no_forcing": true}'
DOCUMENTS = ["simdjson_example_config.json", "schemastore_all-contributors_complete.json"]


class VocabForLlguidance:
    """The `gtokenizer` llguidance's TokenizerWrapper reads: token bytes, EOS, special
    ids, and an encoder."""

    def __init__(self, tok: stackmask.Tokenizer):
        self.eos_token_id = tok.eos_id
        self.bos_token_id = None
        self.tokens = [tok.token_bytes(i) for i in range(tok.vocab_size)]
        self.special_token_ids = [i for i in range(tok.vocab_size) if tok.is_special(i)]
        self._tok = tok

    def __call__(self, text):
        return self._tok.encode(text)


@pytest.fixture(scope="module")
def llg_tokenizer(o200k):
    wrapper = llguidance.TokenizerWrapper(VocabForLlguidance(o200k))
    return llguidance.LLTokenizer(wrapper)


@pytest.mark.parametrize("doc", DOCUMENTS)
def test_json_masks_equal_llguidance(doc, json_grammar, json_source, o200k, llg_tokenizer):
    # Appended, not prepended, so llguidance's line numbers match the file.
    peer = llguidance.LLMatcher(llg_tokenizer, json_source + "\n" + NO_FORCING + "\n")
    assert not peer.is_error(), peer.get_error()
    text = (GRAMMARS / "samples" / "json" / doc).read_text()
    ids = o200k.encode(text)
    assert o200k.decode(ids) == text.encode()
    ours = stackmask.Matcher(json_grammar)
    bm = stackmask.allocate_token_bitmask(1, o200k.vocab_size)
    for step, t in enumerate(ids + [o200k.eos_id]):
        ours.fill_next_token_bitmask(bm)
        theirs = np.frombuffer(peer.compute_bitmask(), dtype=np.int32)
        assert theirs.shape == bm[0].shape
        if not np.array_equal(bm[0], theirs):
            diff = np.flatnonzero(
                np.unpackbits((bm[0] ^ theirs).view(np.uint8), bitorder="little")
            )
            pytest.fail(f"{doc} step {step}: masks differ on tokens {diff[:10].tolist()}")
        assert ours.accept_token(t), (doc, step)
        assert peer.consume_token(t), (doc, step, peer.get_error())
    assert ours.is_terminated()
