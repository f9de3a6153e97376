#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets from the repo's and /work/shared's real
data (grammars, schemas, tokenizers, sample documents), each seed small.

Run from the repository root: python3 fuzz/scripts/seed_corpus.py
(artifact_load's real-artifact seed comes from the target itself: see README)."""

import glob
import hashlib
import json
import os
import random
import struct

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.path.join(ROOT, "..", "shared")
OUT = os.path.join(ROOT, "fuzz", "corpus")
# Seeds past these sizes are left out: grammars and schemas that large cost
# milliseconds per execution in the LR construction, and mutations of small ones
# reach the same code.
MAX_SEED = {"grammar_frontend": 2048, "schema_frontend": 1024}
rng = random.Random(11)


def put(target, data):
    if len(data) > MAX_SEED.get(target, 8 * 1024):
        return
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    name = hashlib.sha1(data).hexdigest()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def lark_seeds():
    paths = glob.glob(os.path.join(ROOT, "grammars", "*.lark"))
    paths += glob.glob(os.path.join(SHARED, "corpus", "lark", "**", "*.lark"), recursive=True)
    paths += glob.glob(os.path.join(SHARED, "corpus", "lark-grammars-ligurio", "**", "*.lark"), recursive=True)
    for p in paths:
        put("grammar_frontend", read(p))
    # llguidance's and xgrammar's Lark test grammars (small, many edge cases).
    for line in open(os.path.join(SHARED, "corpus", "llguidance", "extracted", "lark_test_cases.jsonl")):
        rec = json.loads(line)
        if "grammar" in rec:
            put("grammar_frontend", rec["grammar"].encode())
    for line in open(os.path.join(SHARED, "corpus", "xgrammar", "extracted", "test_grammars.jsonl")):
        rec = json.loads(line)
        if rec.get("dialect") == "lark":
            put("grammar_frontend", rec["grammar"].encode())


def schema_seeds():
    schemas = []
    for p in sorted(glob.glob(os.path.join(SHARED, "corpus", "jsonschemabench", "maskbench_data_subset", "*.json"))):
        schemas.append(json.load(open(p))["schema"])
    for p in sorted(glob.glob(os.path.join(SHARED, "corpus", "JSON-Schema-Test-Suite", "tests", "draft2020-12", "*.json"))):
        for group in json.load(open(p)):
            schemas.append(group["schema"])
    for s in schemas:
        text = json.dumps(s, separators=(",", ":")).encode()
        put("schema_frontend", bytes([rng.randrange(32)]) + text)


def small_tokenizer(path, keep):
    """The tokenizer with its model vocabulary cut to the ids below `keep` plus the
    byte-fallback/byte-alphabet tokens, merges among them, and its added tokens."""
    t = json.load(open(path))
    model = t["model"]
    vocab = model.get("vocab", {})
    kept = {k: v for k, v in vocab.items() if v < keep or k.startswith("<0x")}
    # Renumber densely, keeping order, so the ids stay contiguous.
    order = sorted(kept, key=lambda k: kept[k])
    model["vocab"] = {k: i for i, k in enumerate(order)}
    merges = []
    for m in model.get("merges", []):
        a, b = m.split(" ", 1) if isinstance(m, str) else m
        if a in model["vocab"] and b in model["vocab"] and a + b in model["vocab"]:
            merges.append(m)
    model["merges"] = merges
    n = len(order)
    added = []
    for i, a in enumerate(t.get("added_tokens", [])[:4]):
        a = dict(a)
        if a["content"] in model["vocab"]:
            a["id"] = model["vocab"][a["content"]]
        else:
            a["id"] = n
            n += 1
        added.append(a)
    t["added_tokens"] = added
    return json.dumps(t, separators=(",", ":")).encode()


def tokenizer_seeds():
    for name in ["gpt-2", "phi-3", "qwen2"]:
        path = os.path.join(SHARED, "tokenizers", name + ".tokenizer.json")
        for keep in [0, 8, 300]:
            put("tokenizer_json", small_tokenizer(path, keep))


def matcher_seeds():
    # A document of a grammar fed token by token (op 0: commit, two-byte id), with
    # mask checks (op 4), rollbacks (op 3) and clones (op 5) sprinkled in.
    for index, grammar in enumerate(["expr", "json"]):
        docs = glob.glob(os.path.join(ROOT, "grammars", "samples", grammar, "**", "*"), recursive=True)
        for p in sorted(d for d in docs if os.path.isfile(d))[:16]:
            doc = read(p)[:40]
            ops = bytearray([index])
            for i, b in enumerate(doc):
                ops += bytes([0, b, 0])
                if i % 5 == 4:
                    ops += bytes([4])
                if i % 7 == 6:
                    ops += bytes([3, 2])
                if i % 11 == 10:
                    ops += bytes([5, 1])
            ops += bytes([8, 0, 0, 1, 4])
            put("matcher_ops", bytes(ops))
            put("matcher_ops", bytes([index, 2, 5]) + doc[:5] + bytes([9, 3]) + doc[5:8] + bytes([4]))


def artifact_seeds():
    # Modes 1–3 against the real expr × bytes artifact (mode 0 gets the artifact itself
    # from the target; see README).
    put("artifact_load", bytes([1]) + struct.pack("<I", 0x80) [:3] + b"\x01")
    for section in range(24):
        put("artifact_load", bytes([2, section]) + b"\x00\x00\xff\x04\x00\x00")
        put("artifact_load", bytes([3, section]))
        put("artifact_load", bytes([3, section]) + b"\x01\x00\x00\x00\x02\x00\x00\x00")


lark_seeds()
schema_seeds()
tokenizer_seeds()
matcher_seeds()
artifact_seeds()
for t in sorted(os.listdir(OUT)):
    files = glob.glob(os.path.join(OUT, t, "*"))
    print(t, len(files), sum(os.path.getsize(f) for f in files))
