#!/usr/bin/env bash
# The Python half of the test command (scripts/test.sh runs it after the Rust tests):
# the package built into a virtual environment and its pytest suite.
#
# The build reuses the dev profile and target directory of `cargo test`, so only the
# extension crate itself is compiled on top of what the Rust tests built.
# STACKMASK_VENV overrides where the virtual environment lives (default
# target/python-venv; it is reused when present).
set -euo pipefail
cd "$(dirname "$0")/.."

venv="${STACKMASK_VENV:-${CARGO_TARGET_DIR:-target}/python-venv}"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
  -r python/requirements-test.txt
# maturin installs into the environment named by VIRTUAL_ENV.
VIRTUAL_ENV="$(cd "$venv" && pwd)" PATH="$venv/bin:$PATH" \
  maturin develop --locked --manifest-path python/Cargo.toml

status=0
"$venv/bin/python" -m pytest python/tests -q -p no:cacheprovider || status=$?
if [ "$status" -eq 5 ]; then
  echo "error: pytest collected no tests" >&2
  exit 1
fi
exit "$status"
