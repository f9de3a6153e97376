"""Matcher operations, their error cases, and masks checked against the commit oracle."""

import copy

import numpy as np
import pytest

import stackmask
from conftest import commit_oracle, mask_bits


def fill(m: stackmask.Matcher, vocab_size: int) -> list:
    bm = stackmask.allocate_token_bitmask(1, vocab_size)
    m.fill_next_token_bitmask(bm)
    return list(mask_bits(bm[0], vocab_size))


def test_expr_masks_equal_the_commit_oracle_step_by_step(expr_grammar, small_tokenizer):
    v = expr_grammar.vocab_size
    # "(12 + 1) * -(1)" through multi-byte tokens: "(1" "2" " " "+1" ")" " * " "-(" "1)"
    tokens = [ord("("), 256, ord(" "), ord("+"), ord(" "), ord("1"), ord(")"), 259, 263, 260]
    assert small_tokenizer.decode(tokens) == b"(12 + 1) * -(1)"
    m = stackmask.Matcher(expr_grammar)
    for t in tokens:
        mask = fill(m, v)
        assert mask == list(commit_oracle(m, v))
        assert t in mask
        assert 301 not in mask and 302 not in mask  # control token, unused id
        assert m.accept_token(t)
    assert m.is_accepting()
    assert fill(m, v) == list(commit_oracle(m, v))
    assert 300 in fill(m, v)
    assert m.accept_token(300)
    assert m.is_terminated()
    assert fill(m, v) == []


def test_rejected_token_leaves_the_matcher_unchanged(expr_grammar):
    v = expr_grammar.vocab_size
    m = stackmask.Matcher(expr_grammar)
    assert m.accept_tokens([ord("("), ord("1")])
    before = fill(m, v)
    consumed = m.bytes_consumed
    for bad in [ord("("), ord("x"), 300, 301, 302]:  # ( after 1, junk, EOS, control, unused
        assert not m.accept_token(bad)
        assert m.bytes_consumed == consumed
        assert fill(m, v) == before
    assert not m.accept_bytes(b"1x")
    assert not m.accept_tokens([ord("+"), ord("x")])
    assert m.bytes_consumed == consumed and fill(m, v) == before
    with pytest.raises(stackmask.InvalidTokenError, match="303"):
        m.accept_token(303)
    with pytest.raises(stackmask.InvalidTokenError):
        m.accept_tokens([ord("+"), 10**9])
    with pytest.raises(OverflowError):
        m.accept_token(-1)
    assert m.bytes_consumed == consumed and fill(m, v) == before


def test_validate_rollback_reset_copy(expr_grammar):
    v = expr_grammar.vocab_size
    m = stackmask.Matcher(expr_grammar)
    start = fill(m, v)
    draft = [ord("1"), ord("+"), ord("2"), ord(")"), ord("3")]
    assert m.validate_tokens(draft) == 3
    assert m.bytes_consumed == 0 and fill(m, v) == start
    assert m.validate_tokens([]) == 0
    with pytest.raises(stackmask.InvalidTokenError):
        m.validate_tokens([ord("1"), 999])
    assert m.bytes_consumed == 0 and fill(m, v) == start

    assert m.accept_tokens(draft[:3])
    after3 = fill(m, v)
    c = m.copy()
    c2 = copy.deepcopy(m)
    m.rollback(2)
    assert m.bytes_consumed == 1
    assert c.bytes_consumed == 3 and fill(c, v) == after3 and fill(c2, v) == after3
    with pytest.raises(stackmask.RollbackError, match="only 1"):
        m.rollback(2)
    m.rollback(0)
    m.rollback(1)
    assert fill(m, v) == start
    assert m.accept_tokens(draft[:3])
    assert m.accept_token(300) and m.is_terminated()
    assert not m.accept_token(ord("1"))  # nothing after EOS
    m.rollback(1)
    assert not m.is_terminated() and fill(m, v) == after3
    m.reset()
    assert m.bytes_consumed == 0 and fill(m, v) == start and not m.is_accepting()


def test_rollback_window(expr_grammar):
    v = expr_grammar.vocab_size
    assert stackmask.Matcher(expr_grammar).max_rollback == 32
    assert stackmask.Matcher(expr_grammar, max_rollback=None).max_rollback is None
    m = stackmask.Matcher(expr_grammar, max_rollback=2)
    assert m.max_rollback == 2
    text = [ord(c) for c in "1+2+3+4+5+6"]
    # validate_tokens and accept_tokens look further than the window and still leave
    # the matcher unchanged (or commit everything).
    assert m.validate_tokens(text) == len(text)
    assert m.bytes_consumed == 0
    assert not m.accept_tokens(text + [ord(")")])
    assert m.bytes_consumed == 0
    assert m.accept_tokens(text[:-2])
    after = fill(m, v)
    assert m.accept_tokens(text[-2:])
    with pytest.raises(stackmask.RollbackError, match="rollback window keeps the last 2"):
        m.rollback(3)
    assert m.bytes_consumed == len(text)
    m.rollback(2)
    assert fill(m, v) == after
    with pytest.raises(stackmask.RollbackError, match="0 can be undone now"):
        m.rollback(1)
    unlimited = stackmask.Matcher(expr_grammar, max_rollback=None)
    assert unlimited.accept_tokens(text)
    unlimited.rollback(len(text))
    assert unlimited.bytes_consumed == 0


def test_accept_bytes_is_one_rollback_step(expr_grammar):
    m = stackmask.Matcher(expr_grammar)
    assert m.accept_bytes(b"(1 + 2")
    assert m.accept_token(ord(")"))
    m.rollback(1)
    assert m.bytes_consumed == 6
    m.rollback(1)
    assert m.bytes_consumed == 0


def test_forced_bytes_json(json_grammar, o200k):
    m = stackmask.Matcher(json_grammar)
    assert m.forced_bytes() == b""
    assert m.accept_bytes(b"tr")
    assert m.forced_bytes() == b"ue"
    assert m.bytes_consumed == 2  # unchanged
    assert m.accept_bytes(m.forced_bytes())
    assert m.is_accepting() and m.forced_bytes() == b""
    m.reset()
    assert m.accept_bytes(b'{"a": nu')
    assert m.forced_bytes() == b"ll"
    assert m.accept_token(o200k.encode("ll")[0])
    assert m.forced_bytes() == b""  # "," or "}" or whitespace may follow


def test_forced_bytes_after_eos_is_empty(expr_grammar):
    m = stackmask.Matcher(expr_grammar)
    assert m.accept_tokens([ord("1"), 300])
    assert m.forced_bytes() == b""


def test_regex_forced_bytes(small_tokenizer):
    g = stackmask.Compiler(small_tokenizer).compile_regex(r"abc(d|e)fg")
    m = stackmask.Matcher(g)
    assert m.forced_bytes() == b"abc"
    assert m.accept_bytes(b"abcd")
    assert m.forced_bytes() == b"fg"


def test_speculative_decoding_masks_equal_a_fresh_matchers(json_grammar, o200k):
    """Draft k tokens (some wrong), validate, accept the valid prefix, roll back part of
    it now and then: at every step the mask equals that of a fresh matcher fed the
    accepted tokens so far."""
    text = '{"name": "stackmask", "tags": ["a", "b"], "n": -1.5e3, "ok": [true, null]}'
    target = o200k.encode(text)
    v = json_grammar.vocab_size
    rng = np.random.default_rng(0)
    m = stackmask.Matcher(json_grammar)
    accepted: list = []
    bm = stackmask.allocate_token_bitmask(2, v)
    steps = 0
    while len(accepted) < len(target):
        pos = len(accepted)
        k = int(rng.integers(1, 5))
        draft = list(target[pos : pos + k])
        if rng.random() < 0.5 and len(draft) > 1:
            draft[-1] = o200k.encode("}}}")[0]  # a wrong guess at the end
        n = m.validate_tokens(draft)
        assert n <= len(draft)
        # The target model keeps the drafted tokens up to its first disagreement; every
        # token of the real document is valid, so the grammar allows at least those.
        agree = 0
        while agree < len(draft) and draft[agree] == target[pos + agree]:
            agree += 1
        assert n >= agree
        assert m.accept_tokens(draft[:agree])
        accepted += draft[:agree]
        n = agree
        if n == 0:
            assert m.accept_token(target[pos])
            accepted.append(target[pos])
        if rng.random() < 0.3 and len(accepted) > 2:
            back = int(rng.integers(1, 3))
            m.rollback(back)
            del accepted[-back:]
        fresh = stackmask.Matcher(json_grammar)
        assert fresh.accept_tokens(accepted)
        m.fill_next_token_bitmask(bm, 0)
        fresh.fill_next_token_bitmask(bm, 1)
        assert np.array_equal(bm[0], bm[1]), f"step {steps}"
        steps += 1
    assert m.is_accepting() and m.accept_token(o200k.eos_id) and m.is_terminated()
    assert steps > 5


def test_work_limit_is_a_named_error(expr_grammar):
    m = stackmask.Matcher(expr_grammar, max_step_work=20_000)
    with pytest.raises(stackmask.WorkLimitError, match="max_step_work"):
        m.accept_bytes(b"1+1+" * 400)
    assert m.bytes_consumed == 0
    unlimited = stackmask.Matcher(
        expr_grammar, max_step_work=2**63, work_per_byte=2**64 - 1, work_burst=2**64 - 1
    )
    assert unlimited.accept_bytes(b"1+1+" * 400 + b"1")


@pytest.fixture(scope="module")
def chain_grammar(small_tokenizer) -> stackmask.Grammar:
    """`a`s, one or more: its bytes need no GLR work, deciding that it ends does."""
    return stackmask.Compiler(small_tokenizer).compile_lark(
        'start: "a" start | "a"\n', "chain.lark"
    )


def test_is_accepting_names_a_work_limit(chain_grammar):
    """Deciding whether the text is a sentence is GLR work too: past `max_step_work`
    `is_accepting` raises the named error instead of answering False."""
    m = stackmask.Matcher(chain_grammar)
    assert m.accept_bytes(b"aa")
    assert m.is_accepting()
    m = stackmask.Matcher(chain_grammar, max_step_work=0)
    assert m.accept_bytes(b"aa")
    with pytest.raises(stackmask.WorkLimitError, match="max_step_work"):
        m.is_accepting()


def test_forced_bytes_names_a_work_limit(chain_grammar):
    """`forced_bytes` asks whether the text could end and each byte come next: past
    `max_step_work` it raises the named error instead of reading the limit as a refusal,
    and the matcher is unchanged."""
    assert stackmask.Matcher(chain_grammar).forced_bytes() == b"a"
    m = stackmask.Matcher(chain_grammar, max_step_work=0)
    assert m.accept_bytes(b"a")
    with pytest.raises(stackmask.WorkLimitError, match="max_step_work"):
        m.forced_bytes()
    assert m.bytes_consumed == 1


def test_a_work_limit_in_the_trie_walk_fallback_is_named(small_tokenizer):
    """A boundary left to the token-trie walk (`boundary_dwa_states=1`) parses each
    token's bytes under the matcher's work limits: a limit that cuts the walk raises the
    named error, for one matcher and in a batch, instead of a mask that quietly lacks
    the tokens behind it; within the limits the mask is the compiled path's."""
    source = 'start: start start | "a"\n'
    compiler = stackmask.Compiler(small_tokenizer)
    compiled = compiler.compile_lark(source, "ambiguous.lark")
    walked = compiler.compile_lark(source, "ambiguous.lark", boundary_dwa_states=1)
    want = stackmask.allocate_token_bitmask(1, small_tokenizer.vocab_size)
    got = stackmask.allocate_token_bitmask(2, small_tokenizer.vocab_size)
    c, m = stackmask.Matcher(compiled), stackmask.Matcher(walked)
    assert c.accept_bytes(b"aa") and m.accept_bytes(b"aa")
    c.fill_next_token_bitmask(want)
    m.fill_next_token_bitmask(got)
    assert np.array_equal(got[0], want[0])
    limited = stackmask.Matcher(walked, max_step_work=0)
    assert limited.accept_bytes(b"a")
    with pytest.raises(stackmask.WorkLimitError, match="max_step_work"):
        limited.fill_next_token_bitmask(got)
    with pytest.raises(stackmask.WorkLimitError, match=r"matchers\[1\].*max_step_work"):
        stackmask.fill_next_token_bitmask_batch([m, limited], got)
    assert np.array_equal(got[0], want[0]), "the other matcher's row is its mask"
    assert limited.bytes_consumed == 1


def test_work_budget_bounds_a_whole_parse(expr_grammar):
    """Every byte of a long ambiguous sum stays within the per-byte limit, but the
    parse's work grows with its length at every byte: the budget ends it in the named
    error, and the matcher is unchanged."""
    m = stackmask.Matcher(expr_grammar, work_per_byte=1000, work_burst=5_000_000)
    with pytest.raises(stackmask.WorkLimitError, match="work_burst"):
        m.accept_bytes(b"1+" * 2000 + b"1")
    assert m.bytes_consumed == 0
    assert m.accept_bytes(b"1+1")


def test_mask_cache_gives_the_masks_computed_afresh(json_grammar, o200k):
    """A matcher that copies recent masks (default) and one that recomputes every mask
    (mask_cache=0) give equal masks at every step of a document with repeated
    contexts, and copies keep their setting."""
    text = '{"a": ["x", "y", "z"], "b": {"c": [1, 2, 3], "d": "e"}, "f": [true, false, null]}'
    tokens = o200k.encode(text)
    v = json_grammar.vocab_size
    cached = stackmask.Matcher(json_grammar)
    assert cached.mask_cache == 8
    plain = stackmask.Matcher(json_grammar, mask_cache=0)
    assert plain.mask_cache == 0 and plain.copy().mask_cache == 0
    one = stackmask.Matcher(json_grammar, mask_cache=1)
    bm = stackmask.allocate_token_bitmask(3, v)
    for step, t in enumerate(tokens + [o200k.eos_id]):
        cached.fill_next_token_bitmask(bm, 0)
        plain.fill_next_token_bitmask(bm, 1)
        one.fill_next_token_bitmask(bm, 2)
        assert np.array_equal(bm[0], bm[1]) and np.array_equal(bm[2], bm[1]), f"step {step}"
        assert cached.accept_token(t) and plain.accept_token(t) and one.accept_token(t)
