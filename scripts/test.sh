#!/usr/bin/env bash
# Set up everything the tests need on a fresh Debian 12 machine, then run them:
#   the Python suite (pytest), the R package's testthat suite, and the rpy2 parity tier.
# R is installed from Debian packages when missing (needs root, as on CI).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

bash scripts/install-r.sh
$PY -m pip install -q --disable-pip-version-check -e ".[test,progress,plot]"
if command -v R >/dev/null 2>&1; then
    $PY -m pip install -q --disable-pip-version-check "rpy2>=3.5,<3.6" || echo "warning: rpy2 did not install; parity tests will skip"
    bash scripts/install-r-package.sh
fi

$PY -m pytest -q "$@"
if command -v Rscript >/dev/null 2>&1 && [ -d r/tests/testthat ]; then
    Rscript -e 'res <- testthat::test_dir("r/tests/testthat", package = "pyggmlr", load_package = "installed", reporter = "summary", stop_on_failure = TRUE)'
fi
