#!/usr/bin/env bash
# Creates .cache/reference-venv with the published lovia 0.9.119, for tests/compat to compare
# this project's behaviour against (its tests skip that comparison when the venv is absent).
# Nothing of this project is installed there, and the project never depends on it.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.cache/reference-venv
PY="${PY:-python3}"
if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c 'import importlib.metadata as m, sys; sys.exit(m.version("lovia") != "0.9.119")' 2>/dev/null; then
    exit 0
fi
rm -rf "$VENV"
mkdir -p .cache
"$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check 'lovia==0.9.119'
"$VENV/bin/python" -c 'import lovia; print("reference venv: lovia", lovia.__version__)'
