"""Tokenizer sources: tiktoken, Hugging Face files and objects, explicit token lists."""

import json

import pytest

import stackmask
from conftest import SHARED


def test_tiktoken_o200k_layout(o200k):
    # DESIGN.md section 7: ranks 0..=199997, gap 199998, specials 199999 and 200018.
    assert o200k.vocab_size == 200019
    assert o200k.eos_id == 199999
    assert o200k.is_special(199999) and o200k.is_special(200018)
    assert not o200k.is_special(0)
    assert o200k.name == "tiktoken:o200k_base"
    ids = o200k.encode('{"a": 1}')
    assert o200k.decode(ids) == b'{"a": 1}'
    assert o200k.encode(b"hello") == o200k.encode("hello")
    assert o200k.token_bytes(ids[0]) == o200k.decode(ids[:1])


def test_unknown_tiktoken_name_is_named():
    with pytest.raises(stackmask.TokenizerError, match="unknown tokenizer spec `tiktoken:gpt9`"):
        stackmask.Tokenizer.from_tiktoken("gpt9")


def test_invalid_utf8_cannot_be_encoded(o200k):
    with pytest.raises(stackmask.TokenizerError, match="offset 2"):
        o200k.encode(b"ab\xffc")


def test_out_of_range_ids(o200k):
    with pytest.raises(stackmask.InvalidTokenError, match="200019"):
        o200k.token_bytes(200019)
    with pytest.raises(stackmask.InvalidTokenError):
        o200k.decode([1, 10**6])
    with pytest.raises(OverflowError):
        o200k.token_bytes(-1)


def test_hf_file_and_json_text_give_the_same_vocabulary():
    path = SHARED / "tokenizers" / "gpt-2.tokenizer.json"
    from_file = stackmask.Tokenizer.from_hf_file(path)
    from_text = stackmask.Tokenizer.from_hf_json(path.read_text())
    assert from_file.vocab_size == from_text.vocab_size == 50257
    assert from_file.vocab_hash == from_text.vocab_hash
    assert from_text.name == "hf:<tokenizer.json text>"
    assert from_file.encode("Hello world") == from_text.encode("Hello world")
    assert from_file.decode(from_file.encode("Hello world")) == b"Hello world"


def test_hf_object_through_to_str():
    path = SHARED / "tokenizers" / "gpt-2.tokenizer.json"
    text = path.read_text()

    class FakeHfTokenizer:  # what tokenizers.Tokenizer offers
        def to_str(self):
            return text

    class FakeTransformersFast:  # what PreTrainedTokenizerFast offers
        backend_tokenizer = FakeHfTokenizer()

    expected = stackmask.Tokenizer.from_hf_file(path).vocab_hash
    assert stackmask.tokenizer_from_hf(FakeHfTokenizer()).vocab_hash == expected
    assert stackmask.tokenizer_from_hf(FakeTransformersFast()).vocab_hash == expected
    with pytest.raises(stackmask.TokenizerError, match="no tokenizer.json form"):
        stackmask.tokenizer_from_hf(object())


def test_hf_errors_name_the_file(tmp_path):
    with pytest.raises(stackmask.TokenizerError, match="cannot read"):
        stackmask.Tokenizer.from_hf_file(tmp_path / "missing.json")
    bad = tmp_path / "tokenizer.json"
    bad.write_text("{not json")
    with pytest.raises(stackmask.TokenizerError, match="malformed tokenizer.json"):
        stackmask.Tokenizer.from_hf_file(bad)
    with pytest.raises(stackmask.TokenizerError) as e:
        stackmask.Tokenizer.from_hf_json(json.dumps({"model": {}}))
    assert str(e.value).startswith("<tokenizer.json text>: unsupported tokenizer style")
    with pytest.raises(stackmask.TokenizerError, match="^<tokenizer.json text>: malformed"):
        stackmask.Tokenizer.from_hf_json("[1, 2")


def test_explicit_tokens(small_tokenizer):
    t = small_tokenizer
    assert t.vocab_size == 303
    assert t.eos_id == 300
    assert t.is_special(300) and t.is_special(301) and not t.is_special(256)
    assert t.token_bytes(256) == b"12"
    assert t.name == "explicit"
    with pytest.raises(stackmask.TokenizerError, match="no encoder"):
        t.encode("12")


def test_explicit_tokens_bad_special_id():
    with pytest.raises(stackmask.TokenizerError, match="special token id 5 is outside"):
        stackmask.Tokenizer.from_tokens([b"a", b"b"], eos_id=5)
    with pytest.raises(stackmask.TokenizerError, match="special token id 9"):
        stackmask.Tokenizer.from_tokens([b"a", b"b"], eos_id=1, special_ids=[9])
