"""Bitmask arrays: dtype, shape, contiguity, writability, padding, batch fill, apply."""

import numpy as np
import pytest

import stackmask
from conftest import mask_bits


@pytest.fixture
def matcher(expr_grammar):
    return stackmask.Matcher(expr_grammar)


def test_row_is_written_in_place_and_others_untouched(matcher, expr_grammar):
    w = expr_grammar.bitmask_words
    bm = np.full((3, w), 0x5A5A5A5A, dtype=np.int32)
    ptr = bm.ctypes.data
    matcher.fill_next_token_bitmask(bm, 1)
    assert bm.ctypes.data == ptr
    assert (bm[0] == 0x5A5A5A5A).all() and (bm[2] == 0x5A5A5A5A).all()
    allowed = mask_bits(bm[1], expr_grammar.vocab_size)
    assert ord("1") in allowed and ord("(") in allowed and ord(")") not in allowed


def test_one_dimensional_row_and_padded_width(matcher, expr_grammar):
    w = expr_grammar.bitmask_words
    row = np.full(w, -1, dtype=np.int32)
    matcher.fill_next_token_bitmask(row)
    padded = np.full((1, w + 5), -1, dtype=np.int32)  # vLLM pads the vocabulary
    matcher.fill_next_token_bitmask(padded, 0)
    assert np.array_equal(padded[0, :w], row)
    assert (padded[0, w:] == 0).all()


def test_bad_bitmasks(matcher, expr_grammar):
    w = expr_grammar.bitmask_words
    with pytest.raises(TypeError, match="dtype int32, got int64"):
        matcher.fill_next_token_bitmask(np.zeros((1, w), dtype=np.int64))
    with pytest.raises(TypeError, match="dtype int32, got uint32"):
        matcher.fill_next_token_bitmask(np.zeros((1, w), dtype=np.uint32))
    with pytest.raises(ValueError, match="needs 10"):
        matcher.fill_next_token_bitmask(np.zeros((1, w - 1), dtype=np.int32))
    with pytest.raises(ValueError, match="1-D or 2-D, got 3"):
        matcher.fill_next_token_bitmask(np.zeros((1, 1, w), dtype=np.int32))
    with pytest.raises(ValueError, match="index 2 is out of range"):
        matcher.fill_next_token_bitmask(np.zeros((2, w), dtype=np.int32), 2)
    with pytest.raises(OverflowError):
        matcher.fill_next_token_bitmask(np.zeros((2, w), dtype=np.int32), -1)
    strided = np.zeros((2, 2 * w), dtype=np.int32)[:, ::2]
    with pytest.raises(ValueError, match="C-contiguous"):
        matcher.fill_next_token_bitmask(strided)
    fortran = np.asfortranarray(np.zeros((2, w), dtype=np.int32))
    with pytest.raises(ValueError, match="C-contiguous"):
        matcher.fill_next_token_bitmask(fortran)
    ro = np.zeros((1, w), dtype=np.int32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="not writable"):
        matcher.fill_next_token_bitmask(ro)
    with pytest.raises(TypeError, match="numpy array or a CPU torch tensor, got list"):
        matcher.fill_next_token_bitmask([[0] * w])


def test_words_are_little_endian_bits(expr_grammar):
    assert expr_grammar.bitmask_words == 10  # 303 ids
    m = stackmask.Matcher(expr_grammar)
    assert m.accept_token(ord("1"))
    bm = np.zeros((1, 10), dtype=np.int32)
    m.fill_next_token_bitmask(bm)
    allowed = set(mask_bits(bm[0], 303))
    for t in [ord("+"), ord("2"), 300]:
        assert t in allowed
        assert (int(bm[0, t // 32]) >> (t % 32)) & 1 == 1
    assert (int(bm[0, ord("(") // 32]) >> (ord("(") % 32)) & 1 == 0


def test_batch_equals_one_by_one(expr_grammar):
    prefixes = [b"", b"(", b"1 +", b"((1", b"2 * (3)", b"1"]
    matchers = []
    for p in prefixes:
        m = stackmask.Matcher(expr_grammar)
        assert m.accept_bytes(p) if p else True
        matchers.append(m)
    w = expr_grammar.bitmask_words
    one = np.zeros((len(matchers), w), dtype=np.int32)
    for i, m in enumerate(matchers):
        m.fill_next_token_bitmask(one, i)
    batch = np.full((len(matchers) + 2, w), 7, dtype=np.int32)
    indices = [2, 0, 7, 1, 5, 3]
    stackmask.fill_next_token_bitmask_batch(matchers, batch, indices)
    for m_i, row in enumerate(indices):
        assert np.array_equal(batch[row], one[m_i])
    assert (batch[4] == 7).all() and (batch[6] == 7).all()
    default = np.zeros_like(one)
    stackmask.fill_next_token_bitmask_batch(matchers, default)
    assert np.array_equal(default, one)


def test_batch_errors(expr_grammar):
    w = expr_grammar.bitmask_words
    a, b = stackmask.Matcher(expr_grammar), stackmask.Matcher(expr_grammar)
    bm = np.zeros((2, w), dtype=np.int32)
    with pytest.raises(ValueError, match="appears twice"):
        stackmask.fill_next_token_bitmask_batch([a, a], bm)
    with pytest.raises(ValueError, match="row 1 appears twice"):
        stackmask.fill_next_token_bitmask_batch([a, b], bm, [1, 1])
    with pytest.raises(ValueError, match="2 matchers but 1 indices"):
        stackmask.fill_next_token_bitmask_batch([a, b], bm, [0])
    with pytest.raises(ValueError, match="out of range"):
        stackmask.fill_next_token_bitmask_batch([a, b], bm, [0, 2])
    with pytest.raises(TypeError, match="int32"):
        stackmask.fill_next_token_bitmask_batch([a, b], bm.astype(np.float32))
    with pytest.raises(TypeError):
        stackmask.fill_next_token_bitmask_batch([a, "not a matcher"], bm)
    stackmask.fill_next_token_bitmask_batch([], bm)  # nothing to do


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_apply_token_bitmask_inplace(dtype):
    vocab = 70  # 3 words; ids 64..69 in the last word
    bm = np.zeros((2, 3), dtype=np.int32)
    bm[0, 0] = 1 << 3
    bm[0, 2] = 1 << 5  # token 69
    bm[1, 1] = -1  # tokens 32..63
    logits = np.arange(2 * vocab, dtype=dtype).reshape(2, vocab)
    stackmask.apply_token_bitmask_inplace(logits, bm)
    assert list(np.flatnonzero(np.isfinite(logits[0]))) == [3, 69]
    assert list(np.flatnonzero(np.isfinite(logits[1]))) == list(range(32, 64))
    assert logits[0, 3] == 3 and logits[1, 40] == vocab + 40

    wide = np.zeros((1, 100), dtype=dtype)  # columns past 32 * words are disallowed
    stackmask.apply_token_bitmask_inplace(wide, np.full((1, 3), -1, dtype=np.int32))
    assert np.isfinite(wide[0, :96]).all() and np.isneginf(wide[0, 96:]).all()

    row = np.zeros(vocab, dtype=dtype)
    stackmask.apply_token_bitmask_inplace(row, bm[1])
    assert list(np.flatnonzero(np.isfinite(row))) == list(range(32, 64))

    some = np.zeros((2, vocab), dtype=dtype)
    stackmask.apply_token_bitmask_inplace(some, bm, indices=[1])
    assert np.isfinite(some[0]).all()
    assert list(np.flatnonzero(np.isfinite(some[1]))) == list(range(32, 64))


def test_apply_errors():
    bm = np.zeros((2, 3), dtype=np.int32)
    with pytest.raises(ValueError, match="2 rows but the bitmask has 1"):
        stackmask.apply_token_bitmask_inplace(np.zeros((2, 70), np.float32), bm[:1])
    with pytest.raises(TypeError, match="float32 or float64"):
        stackmask.apply_token_bitmask_inplace(np.zeros((2, 70), np.int32), bm)
    with pytest.raises(TypeError, match="int32"):
        stackmask.apply_token_bitmask_inplace(np.zeros((2, 70), np.float32), bm.astype(np.int64))
    with pytest.raises(ValueError, match="out of range"):
        stackmask.apply_token_bitmask_inplace(np.zeros((2, 70), np.float32), bm, indices=[2])


class FakeCpuTensor:
    """What the fill path uses of a torch tensor: `__dlpack__`, `device.type` and a
    `numpy()` view sharing memory (torch is not a test dependency)."""

    def __init__(self, array, device="cpu"):
        self.array = array
        self.device = type("Device", (), {"type": device, "__str__": lambda s: device})()

    def __dlpack__(self, *args, **kwargs):
        return self.array.__dlpack__(*args, **kwargs)

    def numpy(self):
        return self.array


def test_tensor_like_bitmask_is_filled_without_copy(expr_grammar):
    m = stackmask.Matcher(expr_grammar)
    w = expr_grammar.bitmask_words
    backing = np.zeros((2, w), dtype=np.int32)
    m.fill_next_token_bitmask(FakeCpuTensor(backing), 1)
    expected = np.zeros((2, w), dtype=np.int32)
    m.fill_next_token_bitmask(expected, 1)
    assert np.array_equal(backing, expected) and backing[1].any()
    stackmask.fill_next_token_bitmask_batch([m], FakeCpuTensor(backing), [0])
    assert np.array_equal(backing[0], expected[1])
    with pytest.raises(ValueError, match="must be on the CPU"):
        m.fill_next_token_bitmask(FakeCpuTensor(backing, "cuda"))
    with pytest.raises(TypeError, match="int32"):
        m.fill_next_token_bitmask(FakeCpuTensor(backing.astype(np.int64)))
