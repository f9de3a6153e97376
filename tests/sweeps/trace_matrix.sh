#!/usr/bin/env bash
# Opt-in sweep (tens of minutes): every shipped grammar × every tokenizer below × every
# sample document, traced on the compiled path with every mask checked against the
# embedded reference path (`stackmask trace ARTIFACT --text FILE --check-reference`).
# Usage: tests/sweeps/trace_matrix.sh [GRAMMAR...]   (default: all shipped grammars)
# Needs a release build of the CLI (cargo build --release -p stackmask-compiler).
set -uo pipefail
cd "$(dirname "$0")/../.."
B=${STACKMASK_BIN:-target/release/stackmask}
OUT=${STACKMASK_SWEEP_DIR:-$(mktemp -d)}
SPECS=(bytes tiktoken:cl100k_base tiktoken:o200k_base hf:../shared/tokenizers/qwen2.tokenizer.json)
GRAMMARS=("$@")
[ ${#GRAMMARS[@]} -eq 0 ] && GRAMMARS=(json expr toml sql c)
passed=0 failed=0
for g in "${GRAMMARS[@]}"; do
  for spec in "${SPECS[@]}"; do
    art="$OUT/$g.$(echo "$spec" | tr -c 'a-z0-9\n' '_').smask"
    if ! "$B" compile "grammars/$g.lark" --tokenizer "$spec" -o "$art" > "$art.log" 2>&1; then
      echo "FAIL compile $g × $spec: $(tail -1 "$art.log")"; failed=$((failed + 1)); continue
    fi
    for f in grammars/samples/"$g"/*; do
      [ -f "$f" ] || continue
      if msg=$("$B" trace "$art" --text "$f" --check-reference 2>&1); then
        passed=$((passed + 1))
      else
        echo "FAIL $g × $spec × $f: $(echo "$msg" | head -3)"; failed=$((failed + 1))
      fi
    done
    echo "done $g × $spec"
  done
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
