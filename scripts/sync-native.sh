#!/usr/bin/env bash
# The R package compiles the same C core as Python: copy native/*.{c,h} into r/src/.
# The copies are not tracked (see .gitignore); every install syncs first.
# `scripts/sync-native.sh --check` fails if the copies differ.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d r/src ] || exit 0
status=0
for f in native/*.c native/*.h; do
    dst="r/src/$(basename "$f")"
    if [ "${1:-}" = "--check" ]; then
        cmp -s "$f" "$dst" || { echo "out of date: $dst (run scripts/sync-native.sh)"; status=1; }
    else
        cmp -s "$f" "$dst" || cp "$f" "$dst"
    fi
done
# copies of files that left native/ must not linger in the package
for dst in r/src/*.c r/src/*.h; do
    b=$(basename "$dst")
    case "$b" in r_*|init.c) continue ;; esac
    if [ ! -e "native/$b" ]; then
        if [ "${1:-}" = "--check" ]; then echo "stale copy: $dst"; status=1; else rm -f "$dst"; fi
    fi
done
exit $status
