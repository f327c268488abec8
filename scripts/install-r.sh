#!/usr/bin/env bash
# Install R and the R packages the project uses, from Debian's packages, when R is missing.
set -euo pipefail
need=""
command -v R >/dev/null 2>&1 || need="r-base-core r-base-dev"
# Rmpi: R's side of ag_fit(distributed = TRUE) (it brings OpenMPI with it); lintr: scripts/lint-r.sh;
# mlbench: the reference copy of the shipped letter-recognition data in the R tests
for p in testthat jsonlite cli knitr rmarkdown remotes Rmpi lintr mlbench; do
    Rscript -e "quit(status = !requireNamespace('$p', quietly = TRUE))" >/dev/null 2>&1 || need="$need r-cran-$(echo $p | tr A-Z a-z)"
done
if [ -n "$need" ]; then
    if [ "$(id -u)" != 0 ]; then
        echo "R (or R packages) missing: $need; run as root or install them: apt-get install $need" >&2
        exit 0
    fi
    echo "installing from Debian: $need"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $need >/dev/null
fi
