#!/usr/bin/env bash
# The R package compiles the same C core as Python: r/src/<file> is a symlink to
# ../../native/<file> for every native/*.{c,h}, tracked in git, so `R CMD INSTALL r`,
# `R CMD build r` (which copies the files the links point to into the tarball) and
# remotes::install_local("r") work from a clean clone and the C sources exist once.
# This script (re)creates missing links and removes stale ones; `--check` only reports
# (CI and tests/test_r_sources.py fail on any difference).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d r/src ] || exit 0
status=0
for f in native/*.c native/*.h; do
    b=$(basename "$f")
    dst="r/src/$b"
    if [ -L "$dst" ] && [ "$(readlink "$dst")" = "../../native/$b" ]; then continue; fi
    if [ "${1:-}" = "--check" ]; then
        echo "not a link to ../../native/$b: $dst (run scripts/sync-native.sh)"; status=1
    else
        rm -f "$dst"; ln -s "../../native/$b" "$dst"
    fi
done
# links (or copies) of files that left native/ must not linger in the package
for dst in r/src/*.c r/src/*.h; do
    b=$(basename "$dst")
    case "$b" in r_*|init.c) continue ;; esac
    if [ ! -e "native/$b" ]; then
        if [ "${1:-}" = "--check" ]; then echo "stale: $dst"; status=1; else rm -f "$dst"; fi
    fi
done
exit $status
