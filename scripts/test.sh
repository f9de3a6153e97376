#!/usr/bin/env bash
# The project's test command (README "Set-up", run by .ci/run): the Rust workspace
# tests, then the Python package built into a virtual environment and its pytest suite
# (scripts/test_python.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

cargo test --workspace --locked
scripts/test_python.sh
