"""Thread safety: many threads, each with its own matchers, one shared grammar; the GIL
is released in mask calls, so the threads really run the Rust code concurrently."""

import threading

import numpy as np

import stackmask

DOCS = [
    '{"a": [1, 2, {"b": null}], "c": "d"}',
    "[true, false, -0.5e-3, \"x\\u00e9\"]",
    '{"nested": {"deeper": {"deepest": [[], {}]}}}',
    '"just a string"',
]


def trace_masks(grammar, ids):
    """Every mask along a document, as one array."""
    m = stackmask.Matcher(grammar)
    out = np.zeros((len(ids) + 1, grammar.bitmask_words), dtype=np.int32)
    for i, t in enumerate(ids):
        m.fill_next_token_bitmask(out, i)
        assert m.accept_token(t)
    m.fill_next_token_bitmask(out, len(ids))
    return out


def run_in_threads(worker, n):
    """Runs `worker(k, errors)` on `n` threads started together; returns the errors
    they reported (a thread cannot fail the test itself)."""
    errors = []
    barrier = threading.Barrier(n)

    def run(k):
        try:
            barrier.wait()
            worker(k, errors)
        except Exception as e:
            errors.append(f"thread {k}: {e!r}")

    threads = [threading.Thread(target=run, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def test_many_threads_one_grammar(json_grammar, o200k):
    docs = [o200k.encode(d) for d in DOCS]
    expected = [trace_masks(json_grammar, ids) for ids in docs]

    def worker(k, errors):
        for rep in range(3):
            i = (k + rep) % len(docs)
            if not np.array_equal(trace_masks(json_grammar, docs[i]), expected[i]):
                errors.append(f"thread {k} doc {i} differs")

    assert run_in_threads(worker, 8) == []


def test_batch_fill_from_several_threads(json_grammar, o200k):
    docs = [o200k.encode(d) for d in DOCS]

    def worker(k, errors):
        matchers = [stackmask.Matcher(json_grammar) for _ in docs]
        for m, ids in zip(matchers, docs):
            assert m.accept_tokens(ids[: len(ids) // 2])
        batch = np.zeros((len(docs), json_grammar.bitmask_words), dtype=np.int32)
        for _ in range(5):
            stackmask.fill_next_token_bitmask_batch(matchers, batch)
            for i, m in enumerate(matchers):
                row = np.zeros((1, json_grammar.bitmask_words), dtype=np.int32)
                m.fill_next_token_bitmask(row)
                if not np.array_equal(row[0], batch[i]):
                    errors.append(f"thread {k} row {i} differs")

    assert run_in_threads(worker, 6) == []


def test_a_matcher_in_use_by_another_call_is_refused_not_corrupted(json_grammar):
    # PyO3's borrow flag makes each Matcher exclusive: a batch that names a matcher
    # twice is refused before anything is written.
    m = stackmask.Matcher(json_grammar)
    bm = np.zeros((2, json_grammar.bitmask_words), dtype=np.int32)
    try:
        stackmask.fill_next_token_bitmask_batch([m, m], bm)
    except ValueError as e:
        assert "appears twice" in str(e)
    else:
        raise AssertionError("a matcher used twice in one batch was accepted")
    assert not bm.any()
