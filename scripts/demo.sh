#!/usr/bin/env bash
# Main job: install the package and train a model on the built-in iris data set.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
$PY -m pip install -q --disable-pip-version-check ".[progress,plot]"
cd /tmp && $PY -m pyggmlr demo "$@"
