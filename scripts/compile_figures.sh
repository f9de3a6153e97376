#!/usr/bin/env bash
# Compile and load figures for every shipped grammar × {cl100k_base, o200k_base}:
# stackmask's compile time and peak memory (/usr/bin/time), artifact size and load time
# (`stackmask bench`'s load row), beside the peers' compile times (grammar + vocabulary →
# ready matcher), printed as one Markdown table (BENCHMARKS.md, "Compile and load").
#
# Usage: scripts/compile_figures.sh [OUTDIR]   (artifacts and logs go to OUTDIR,
#        default /tmp/stackmask-compile-figures)
# Environment:
#   STACKMASK   the stackmask binary (default target/release/stackmask; build it with
#               cargo build --release -p stackmask-compiler --bin stackmask)
#   PEERS       space-separated --peer arguments, e.g. "llguidance glrmask=PATH"
#               (default: every driver found next to STACKMASK; "" for none)
#   GRAMMARS    grammar names (default: every grammars/*.lark)
#   TOKENIZERS  (default: "cl100k_base o200k_base")
#   PEER_TIMEOUT seconds per peer driver run (default 1800)
set -euo pipefail
cd "$(dirname "$0")/.."

out=${1:-/tmp/stackmask-compile-figures}
mkdir -p "$out"
bin=${STACKMASK:-target/release/stackmask}
[ -x "$bin" ] || { echo "no stackmask binary at $bin (cargo build --release -p stackmask-compiler --bin stackmask)" >&2; exit 2; }
bindir=$(dirname "$bin")
if [ -z "${PEERS+x}" ]; then
  PEERS=""
  for e in llguidance glrmask; do
    [ -x "$bindir/stackmask-$e-driver" ] && PEERS="$PEERS $e"
  done
fi
grammars=${GRAMMARS:-$(for g in grammars/*.lark; do basename "$g" .lark; done)}
tokenizers=${TOKENIZERS:-"cl100k_base o200k_base"}

rows="$out/rows.jsonl"
: > "$rows"
for g in $grammars; do
  for t in $tokenizers; do
    art="$out/$g.$t.smask"
    log="$out/$g.$t"
    echo "== $g × $t" >&2
    /usr/bin/time -f "%e %M" -o "$log.time" \
      "$bin" compile "grammars/$g.lark" --tokenizer "tiktoken:$t" -o "$art" > "$log.compile.log" 2>&1 \
      || { echo "stackmask compile failed: $log.compile.log" >&2; continue; }
    read -r secs kb < "$log.time"
    peer_args=()
    for p in $PEERS; do peer_args+=(--peer "$p"); done
    [ ${#peer_args[@]} -gt 0 ] && peer_args+=(--grammar "grammars/$g.lark" --peer-timeout "${PEER_TIMEOUT:-1800}")
    # Replays the grammar's samples once (the warm-up pass, not timed): the rows wanted
    # here are load (stackmask, glrmask) and compile (peers).
    if ! "$bin" bench "$art" --docs "grammars/samples/$g" --repeats 0 --walks 0 --json \
        "${peer_args[@]}" > "$log.bench.json" 2> "$log.bench.log"; then
      echo "stackmask bench failed: $log.bench.log" >&2
      echo '[]' > "$log.bench.json"
    fi
    python3 - "$g" "$t" "$secs" "$kb" "$(stat -c %s "$art")" "$log.bench.json" >> "$rows" <<'PY'
import json, sys
g, t, secs, kb, size, bench = sys.argv[1:]
rows = json.load(open(bench))
def p50(engine, op):
    return next((r["p50_us"] for r in rows if r["engine"] == engine and r["op"] == op), None)
print(json.dumps({"grammar": g, "tokenizer": t, "compile_s": float(secs), "peak_mb": int(kb) / 1024,
                  "artifact_mb": int(size) / 1e6, "load_ms": (p50("stackmask", "load") or 0) / 1e3,
                  "llguidance_compile_us": p50("llguidance", "compile"),
                  "glrmask_compile_us": p50("glrmask", "compile"),
                  "glrmask_load_us": p50("glrmask", "load")}))
PY
  done
done

python3 - "$rows" <<'PY'
import json, sys
def ms(us):
    return "—" if us is None else (f"{us / 1e3:,.0f} ms" if us >= 1e4 else f"{us / 1e3:.2f} ms")
print("| grammar × tokenizer | stackmask compile | peak memory | artifact | load (p50) | llguidance compile | glrmask compile | glrmask load (p50) |")
print("|---|---|---|---|---|---|---|---|")
for line in open(sys.argv[1]):
    r = json.loads(line)
    print(f"| {r['grammar']} × {r['tokenizer']} | {r['compile_s']:.2f} s | {r['peak_mb']:,.0f} MB | "
          f"{r['artifact_mb']:.1f} MB | {r['load_ms']:.1f} ms | {ms(r['llguidance_compile_us'])} | "
          f"{ms(r['glrmask_compile_us'])} | {ms(r['glrmask_load_us'])} |")
PY
echo "(peer notes and rejections: $out/*.bench.log)" >&2
