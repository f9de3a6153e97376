"""Per-call cost of the Python layer: `Matcher.fill_next_token_bitmask` timed from Python
versus the same Rust `fill_mask` call timed inside Rust, at every step of a real JSON
document with o200k_base (README "Python package"). A benchmark, not a test.

    python python/bench/overhead.py [REPEATS]
"""

import statistics
import sys
import time
from pathlib import Path

import numpy as np

import stackmask
from stackmask._stackmask import _rust_fill_seconds_per_call

REPO = Path(__file__).resolve().parents[2]


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    tok = stackmask.Tokenizer.from_tiktoken("o200k_base")
    grammar = stackmask.Compiler(tok).compile_lark(
        (REPO / "grammars" / "json.lark").read_text(), "json.lark"
    )
    text = (REPO / "grammars" / "samples" / "json" / "schemastore_tsconfig-lib.json").read_text()
    ids = tok.encode(text)
    bitmask = stackmask.allocate_token_bitmask(1, tok.vocab_size)
    m = stackmask.Matcher(grammar)
    fill = m.fill_next_token_bitmask
    py_ns, rust_ns = [], []
    for t in ids:
        # Per step, the best of 5 interleaved rounds of each: the machine is shared, and
        # the minimum is the cost without interference.
        rust, py = [], []
        for _ in range(5):
            rust.append(1e9 * _rust_fill_seconds_per_call(m, bitmask, 0, repeats))
            started = time.perf_counter_ns()
            for _ in range(repeats):
                fill(bitmask, 0)
            py.append((time.perf_counter_ns() - started) / repeats)
        rust_ns.append(min(rust))
        py_ns.append(min(py))
        assert m.accept_token(t)
    over = [p - r for p, r in zip(py_ns, rust_ns)]
    print(f"{len(ids)} steps, best of 5 x {repeats} calls each (tiktoken:o200k_base, json.lark)")
    for name, xs in (("Python call", py_ns), ("Rust call", rust_ns), ("overhead", over)):
        xs = sorted(xs)
        print(f"{name:12s} p50 {statistics.median(xs):8.0f} ns  p90 "
              f"{xs[int(0.9 * (len(xs) - 1))]:8.0f} ns  mean {statistics.fmean(xs):8.0f} ns")


if __name__ == "__main__":
    main()
