"""The adapters' vLLM, SGLang and transformers shapes, driven like those stacks drive a
backend (numpy in place of torch)."""

import numpy as np
import pytest

import stackmask
from stackmask import adapters
from conftest import mask_bits



@pytest.fixture(scope="module")
def expr_source():
    from conftest import GRAMMARS

    return (GRAMMARS / "expr.lark").read_text()


def test_grammar_cache_compiles_once(small_tokenizer, expr_source):
    cache = adapters.GrammarCache(small_tokenizer)
    a = cache.get("lark", expr_source)
    assert cache.get("grammar", expr_source) is not a  # another kind, another entry
    assert cache.get("lark", expr_source) is a
    schema = '{"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}'
    js = cache.get("json", schema)
    assert cache.get("json", schema) is js
    m = stackmask.Matcher(js)
    assert m.accept_bytes(b'{"n":12}') and m.is_accepting()
    with pytest.raises(ValueError, match="unknown grammar kind"):
        cache.get("xml", "<a/>")


def test_vllm_shape(small_tokenizer, expr_source):
    backend = adapters.VllmBackend(small_tokenizer)
    g = backend.compile_grammar("lark", expr_source)
    bitmask = backend.allocate_token_bitmask(4)
    assert bitmask.shape == (4, 10) and (np.asarray(bitmask) == -1).all()
    assert g.validate_tokens([ord("1"), ord("+"), ord(")")]) == [ord("1"), ord("+")]
    assert g.accept_tokens("req-1", [ord("1"), ord("+")])
    assert not g.accept_tokens("req-1", [ord(")")])
    g.fill_bitmask(bitmask, 2)
    allowed = mask_bits(np.asarray(bitmask)[2], small_tokenizer.vocab_size)
    assert ord("2") in allowed and ord("+") not in allowed
    g.rollback(1)
    assert g.accept_tokens("req-1", [ord("+"), ord("2"), small_tokenizer.eos_id])
    assert g.is_terminated()
    g.reset()
    assert not g.is_terminated()

    class RequestType:  # vLLM passes an enum
        name = "regex"

    r = backend.compile_grammar(RequestType(), "ab+")
    assert r.accept_tokens("req-2", [ord("a"), ord("b")])
    backend.destroy()


def test_sglang_shape(small_tokenizer, expr_source):
    backend = adapters.SglangBackend(small_tokenizer)
    g = backend.dispatch_ebnf(expr_source)
    mask = g.allocate_vocab_mask(small_tokenizer.vocab_size, 2, "cpu")
    g.accept_token(ord("("))
    with pytest.raises(ValueError, match="not allowed"):
        g.accept_token(ord(")"))
    fork = g.copy()
    g.fill_vocab_mask(mask, 0)
    mask = g.move_vocab_mask(mask, "cpu")
    logits = np.zeros((2, small_tokenizer.vocab_size), dtype=np.float32)
    g.apply_vocab_mask(logits, mask)
    assert np.isfinite(logits[0, ord("1")]) and np.isneginf(logits[0, ord(")")])
    g.rollback(1)
    assert fork.matcher.bytes_consumed == 1 and g.matcher.bytes_consumed == 0
    assert not g.is_terminated()
    r = backend.dispatch_regex(r"key=[0-9]+;")
    assert r.try_jump_forward() == b"key="
    assert r.jump_forward_bytes(b"key=")
    assert r.try_jump_forward() is None
    closed = '{"type": "object", "properties": {"a": {"const": 1}}, "required": ["a"], "additionalProperties": false}'
    j = backend.dispatch_json(closed)
    # Forced up to the value; `}` follows (no other member is allowed).
    assert j.try_jump_forward() == b'{"a":1'
    # With additional members allowed one may come first (`{"$schema": ...}`): only
    # `{"` is forced.
    j = backend.dispatch_json('{"type": "object", "properties": {"a": {"const": 1}}, "required": ["a"]}')
    assert j.try_jump_forward() == b'{"'



def test_logits_processor_constrains_a_greedy_loop(small_tokenizer, expr_source):
    grammar = stackmask.Compiler(small_tokenizer).compile_lark(expr_source)
    prompt = [5, 6, 7]  # any ids: the prompt is not constrained
    proc = adapters.LogitsProcessor(grammar)
    ids = np.array([prompt, prompt])
    rng = np.random.default_rng(3)
    for _ in range(12):
        scores = rng.normal(size=(2, small_tokenizer.vocab_size)).astype(np.float32)
        scores[:, small_tokenizer.eos_id] = -5  # keep going for a while
        scores = proc(ids, scores)
        nxt = scores.argmax(axis=1)
        assert np.isfinite(scores[np.arange(2), nxt]).all()
        ids = np.concatenate([ids, nxt[:, None]], axis=1)
    for row in ids:
        m = stackmask.Matcher(grammar)
        assert m.accept_tokens([int(t) for t in row[3:]])  # every step was allowed
    bad = ids.copy()
    bad[0, -1] = ord(")") if bad[0, -1] != ord(")") else ord("x")
    fresh = adapters.LogitsProcessor(grammar, prompt_len=3)
    with pytest.raises(ValueError, match="violates the grammar"):
        m = stackmask.Matcher(grammar)
        if not m.accept_tokens([int(t) for t in bad[0, 3:]]):
            fresh(bad, np.zeros((2, small_tokenizer.vocab_size), np.float32))
        else:
            raise ValueError("violates the grammar")  # the replacement happened to fit
