#!/usr/bin/env bash
# Set up everything the tests need on a fresh Debian 12 machine, then run them:
#   the Python suite (pytest), the R package's testthat suite, and the rpy2 parity tier.
# R is installed from Debian packages when missing (needs root, as on CI).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

bash scripts/install-r.sh
$PY -m pip install -q --disable-pip-version-check -e ".[test,progress,plot]"

# ---- MPI for the data-parallel tests, Python's and R's. r-cran-rmpi (install-r.sh) brings mpirun but
# ---- not libopenmpi-dev, whose unversioned libmpi.so Rmpi opens at load: without it Rmpi cannot
# ---- load and R's MPI tests could not run, so the -dev package is installed whenever it is missing
if ! dpkg -s libopenmpi-dev >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        openmpi-bin libopenmpi-dev >/dev/null; } || echo "warning: OpenMPI did not install; MPI tests will skip"
fi
if command -v mpirun >/dev/null 2>&1; then
    $PY -m pip install -q --disable-pip-version-check mpi4py || echo "warning: mpi4py did not install; MPI tests will skip"
fi
# ---- end of the MPI block
# ---- PyTorch 2.13 (CPU), the reference of the f64 comparison tests, only from a wheel on this
# ---- machine's disk (pip's configured find-links): never a download of gigabytes
torch_dl=$(mktemp -d)
if $PY -c "import torch" >/dev/null 2>&1; then
    :
elif $PY -m pip download -q --disable-pip-version-check --no-deps --no-index -d "$torch_dl" torch==2.13.0 >/dev/null 2>&1; then
    $PY -m pip install -q --disable-pip-version-check torch==2.13.0 || echo "warning: torch did not install; the PyTorch comparisons will skip"
else
    echo "note: no local torch 2.13.0 wheel; the PyTorch comparisons will skip"
fi
rm -rf "$torch_dl"
# ---- the linters' C formatter (clang-format, from Debian); scripts/lint.sh fails without it
if ! command -v clang-format >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends clang-format >/dev/null
fi

if command -v R >/dev/null 2>&1; then
    # with R present the parity tier must run: a failed rpy2 install fails the run
    $PY -m pip install -q --disable-pip-version-check "rpy2>=3.5,<3.6"
    bash scripts/install-r-package.sh
fi
bash scripts/lint.sh   # after the R package's install: lintr resolves the package's own names

$PY -m pytest -q "$@"

# ---- sanitizers: the C core under ASan + LSan + UBSan (C driver, then the Python suite on a
# ---- sanitized copy of the extension); see scripts/sanitize.sh
bash scripts/sanitize.sh
# ---- end of the sanitizer step
if command -v Rscript >/dev/null 2>&1 && [ -d r/tests/testthat ]; then
    Rscript -e 'res <- testthat::test_dir("r/tests/testthat", package = "pyggmlr", load_package = "installed", reporter = "summary", stop_on_failure = TRUE)'
fi
if command -v R >/dev/null 2>&1; then
    # R CMD check of the built package (its testthat suite included): errors or warnings fail
    chk=$(mktemp -d)
    root=$PWD
    if ! (cd "$chk" && R CMD build --no-build-vignettes "$root/r" >build.log 2>&1 &&
          _R_CHECK_FORCE_SUGGESTS_=false R CMD check --no-manual --ignore-vignettes pyggmlr_*.tar.gz >check.log 2>&1) ||
       ! grep -Eq "^Status: (OK|[0-9]+ NOTEs?)$" "$chk/check.log"; then
        cat "$chk"/build.log "$chk"/check.log 2>/dev/null | tail -60
        echo "R CMD check failed"; exit 1
    fi
    grep "^Status:" "$chk/check.log" | sed 's/^/R CMD check: /'
    rm -rf "$chk"
    # R's own install tools from the clone (issue: no project script needed): remotes::install_local
    lib=$(mktemp -d)
    Rscript -e 'lib <- commandArgs(TRUE)[1]; remotes::install_local("r", lib = lib, upgrade = "never", dependencies = FALSE, quiet = TRUE, build_vignettes = FALSE, force = TRUE); library(pyggmlr, lib.loc = lib); stopifnot(identical(ag_tensor(matrix(1:4, 2))$data, matrix(c(1, 2, 3, 4), 2))); cat("remotes::install_local(\"r\"): ok\n")' "$lib"
    rm -rf "$lib"
fi
if command -v Rscript >/dev/null 2>&1 && [ -d r/vignettes ]; then
    # R vignettes are executed too: a chunk that errors fails the run
    for v in r/vignettes/*.Rmd; do
        Rscript -e 'knitr::opts_chunk$set(error = FALSE); invisible(knitr::knit(commandArgs(TRUE)[1], output = tempfile(fileext = ".md"), quiet = TRUE))' "$v"
        echo "R vignette ok: $v"
    done
fi
# the cross-language parity table (R through rpy2 vs Python) ran once, inside pytest
# (tests/parity/test_parity.py, every case in f32 and f64); `python -m pyggmlr parity` prints it by hand
