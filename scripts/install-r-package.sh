#!/usr/bin/env bash
# Install the R package the way a user's R tools do: R CMD build (the tarball carries the C core
# through r/src's links to native/, and the built vignette), then R CMD INSTALL of the tarball.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d r ] || exit 0
bash scripts/sync-native.sh   # a clean clone has the links already; this repairs a stale tree
root=$PWD
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && R CMD build "$root/r" >build.log 2>&1) || { cat "$tmp/build.log"; exit 1; }
# One install at a time (demo and tests may overlap); under that lock a 00LOCK-pyggmlr left by an
# install that was killed is stale, and R would refuse every later install until it is removed.
exec 9>"${TMPDIR:-/tmp}/pyggmlr-r-install.lock"
flock 9
lib=$(Rscript -e 'cat(.libPaths()[1])')
rm -rf "$lib/00LOCK-pyggmlr"
R CMD INSTALL "$tmp"/pyggmlr_*.tar.gz >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; exit 1; }
