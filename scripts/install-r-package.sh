#!/usr/bin/env bash
# Copy the shared C core into the R package and install it.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d r ] || exit 0
bash scripts/sync-native.sh
R CMD INSTALL --preclean --no-test-load r >/tmp/pyggmlr-r-install.log 2>&1 || { cat /tmp/pyggmlr-r-install.log; exit 1; }
