#!/usr/bin/env bash
# Main job: install the package and train a model on the built-in iris data set.
# When R is installed, rpy2 and the R package are installed too (never failing the demo), so
# the demo can run the same training in R and print the parity line.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
$PY -m pip install -q --disable-pip-version-check ".[progress,plot]"
if command -v R >/dev/null 2>&1; then
    { $PY -m pip install -q --disable-pip-version-check "rpy2>=3.5,<3.6" && bash scripts/install-r-package.sh; } \
        || echo "warning: rpy2 or the R package did not install; the demo skips the R parity run"
fi
cd /tmp && $PY -m pyggmlr demo "$@"
