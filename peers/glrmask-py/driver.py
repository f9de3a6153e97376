#!/usr/bin/env python3
"""glrmask 0.5 through its PyPI wheel: the same driver protocol as the Rust drivers
(stackmask_peers::driver: `bench TRACES` | `masks TRACES OUT`, one JSON report on stdout),
for when the glrmask crate cannot be built (its release build takes ~16 min on 2 cores).

Timing: each call is timed on its own with time.perf_counter_ns() around the Python call.
That includes the Python → native call overhead, which the Rust drivers do not pay. The
driver measures that overhead the same way on a trivial native method
(`Constraint.mask_len()`), reports its distribution in the notes, and subtracts its median
from every timed call (floored at 1 ns) before the percentiles: rows are "native time,
estimated". The raw p50/p99.9 are in the notes too.

Mapping onto glrmask is the Rust driver's (peers/glrmask-driver/src/main.rs): special tokens
and EOS left out of the vocabulary, EOS bit from `is_accepting()` inside the timed
get_mask, explicit-whitespace c.lark (../glrmask-driver/grammars/c.lark), `%llguidance`
lines dropped.
"""
import json
import sys
import time
from pathlib import Path

import numpy as np
import glrmask

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
REWRITTEN = [("grammars/c.lark", ROOT / "grammars" / "c.lark", HERE.parent / "glrmask-driver" / "grammars" / "c.lark")]
OPS = ["get_mask", "commit", "mask_commit", "compile", "load", "new_matcher", "clone"]


def grammar_for_glrmask(original, notes):
    for name, orig, copy in REWRITTEN:
        if orig.read_text() == original:
            notes.append(f"{name}: glrmask gets the explicit-whitespace copy peers/glrmask-driver/{name} "
                         "(same language as stackmask's)")
            return copy.read_text()
    kept = []
    for line in original.splitlines():
        if line.lstrip().startswith("%llguidance"):
            notes.append(f"dropped {line.strip()!r} (an llguidance option glrmask does not read)")
        else:
            kept.append(line)
    if any(l.lstrip().startswith("%ignore") for l in kept):
        notes.append("LANGUAGE DIFFERS: glrmask reads %ignore the Lark way (also before the first and "
                     "after the last lexeme) and there is no explicit-whitespace copy of this grammar")
    return "\n".join(kept) + "\n"


class Timings:
    """Samples per op; `overhead[op]` (else `overhead_default`) ns are subtracted."""

    def __init__(self):
        self.samples = {op: [] for op in OPS}
        self.overhead = {}
        self.overhead_default = 0

    def record(self, op, ns):
        self.samples[op].append(max(1, ns - self.overhead.get(op, self.overhead_default)))

    def rows(self, engine, grammar, vocab):
        out = []
        for op in OPS:
            s = sorted(self.samples[op])
            if not s:
                continue
            n = len(s)
            # The smallest value with at least q of the samples at or below it (HDR's rule).
            q = lambda p: s[min(n - 1, max(0, -(-int(p * n * 1000) // 1000) - 1))] / 1e3
            out.append({"engine": engine, "grammar": grammar, "vocab": vocab, "op": op, "count": n,
                        "mean_us": sum(s) / n / 1e3, "p50_us": q(0.5), "p90_us": q(0.9), "p99_us": q(0.99),
                        "p999_us": q(0.999), "max_us": s[-1] / 1e3})
        return out


def main(argv):
    if len(argv) == 2 and argv[0] == "bench":
        traces_path, dump = argv[1], None
    elif len(argv) == 3 and argv[0] == "masks":
        traces_path, dump = argv[1], argv[2]
    else:
        print("usage: DRIVER bench TRACES | DRIVER masks TRACES OUT", file=sys.stderr)
        return 2
    f = json.loads(Path(traces_path).read_text())
    if f.get("format") != "stackmask-traces/1":
        print(f"trace file format {f.get('format')!r}, this driver reads 'stackmask-traces/1'", file=sys.stderr)
        return 2
    notes, rejections = [], []
    v = f["vocab"]
    special = set(v["special"]) | {v["eos"]}
    eos = v["eos"]
    words = (len(v["tokens"]) + 31) // 32
    started = time.perf_counter_ns()
    vocab = glrmask.Vocab.from_id_to_bytes(
        {i: bytes.fromhex(h) for i, h in enumerate(v["tokens"]) if i not in special})
    notes.append(f"vocabulary setup (Vocab.from_id_to_bytes, not in compile): "
                 f"{(time.perf_counter_ns() - started) / 1e6:.1f} ms")
    text = grammar_for_glrmask(f["grammar"], notes)
    started = time.perf_counter_ns()
    constraint = glrmask.Grammar.from_lark(text).compile(vocab)
    compile_ns = time.perf_counter_ns() - started
    mask = np.zeros(words, dtype=np.int32)
    eos_word, eos_bit = eos // 32, np.int32(np.uint32(1 << (eos % 32)).view(np.int32))
    traces = [t["tokens"] for t in f["traces"]]
    pc = time.perf_counter_ns

    def fill(state):
        state.fill_mask(mask)
        if state.is_accepting():
            mask[eos_word] |= eos_bit

    def allowed(t):
        return (int(mask[t // 32]) >> (t % 32)) & 1 == 1

    if dump is not None:
        with open(dump, "wb") as out:
            for i, trace in enumerate(traces):
                state = constraint.start()
                for step in range(len(trace) + 1):
                    fill(state)
                    out.write(np.array([i, step], dtype=np.uint32).tobytes() + mask.tobytes())
                    if step == len(trace):
                        break
                    if not state.commit_token(trace[step]):
                        rejections.append({"trace": i, "step": step, "token": trace[step],
                                           "error": "commit: commit_token returned False"})
                        break
        t = Timings()
        t.record("compile", compile_ns)
        rows = t.rows("glrmask", f["grammar_name"], f["tokenizer"])
    else:
        # The Python overhead, timed like the calls below on trivial native methods: one
        # call (commit, new matcher, clone), and fill()'s shape (a Python function making
        # two native calls and a test) for get_mask.
        def shape():
            constraint.mask_len()
            if constraint.mask_len() < 0:
                pass

        def probe(call):
            s = []
            for _ in range(20000):
                a = pc(); call(); s.append(pc() - a)
            s.sort()
            return s

        one, two = probe(constraint.mask_len), probe(shape)
        p50 = lambda s: s[len(s) // 2]
        for name, s in (("one native call", one), ("get_mask's shape (a function, two native calls)", two)):
            notes.append(f"Python overhead of {name}: p50 {p50(s)} ns, p99 {s[int(len(s) * 0.99)]} ns, "
                         f"p99.9 {s[int(len(s) * 0.999)]} ns")
        notes.append("each call's time minus the p50 overhead of its shape is recorded (estimated native time)")
        t = Timings()
        t.overhead = {"get_mask": p50(two), "mask_commit": p50(two) + p50(one)}
        t.overhead_default = p50(one)
        raw = Timings()
        t.samples["compile"].append(compile_ns)
        saved = constraint.save()
        notes.append(f"saved constraint: {len(saved)} bytes")
        for _ in range(3):
            a = pc(); glrmask.Constraint.load(saved, vocab); t.samples["load"].append(pc() - a)
        usable = [len(tr) for tr in traces]
        for p in range(f["repeats"] + 1):
            timed = p > 0
            for i, trace in enumerate(traces):
                a = pc(); fresh = constraint.start(); took = pc() - a
                del fresh
                if timed:
                    t.record("new_matcher", took)
                state = constraint.start()
                for step in range(usable[i]):
                    tok = trace[step]
                    a = pc(); fill(state); m = pc() - a
                    ok_mask = allowed(tok)
                    a = pc(); ok = state.commit_token(tok); c = pc() - a
                    if not (ok_mask and ok):
                        rejections.append({"trace": i, "step": step, "token": tok,
                                           "error": "not in the mask" if not ok_mask else "commit: commit_token returned False"})
                        usable[i] = step
                        break
                    if not timed:
                        continue
                    t.record("get_mask", m); t.record("commit", c); t.record("mask_commit", m + c)
                    raw.record("get_mask", m)
                    if p == 1:
                        a = pc(); copy = state.copy(); took = pc() - a
                        del copy
                        t.record("clone", took)
        r = raw.rows("glrmask", "", "")
        if r:
            notes.append(f"raw get_mask with the Python overhead: p50 {r[0]['p50_us']:.2f} µs, "
                         f"p99.9 {r[0]['p999_us']:.2f} µs, max {r[0]['max_us']:.2f} µs")
        rows = t.rows("glrmask", f["grammar_name"], f["tokenizer"])
    print(json.dumps({"engine": "glrmask", "version": glrmask.__version__,
                      "route": "PyPI wheel glrmask==" + glrmask.__version__
                               + " (Grammar.from_lark(..).compile, ConstraintState.fill_mask / commit_token), Python call overhead subtracted",
                      "notes": notes, "rows": rows, "rejections": rejections}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
