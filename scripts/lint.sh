#!/usr/bin/env bash
# The linters and formatters, enforced: any violation fails (CI runs this from scripts/test.sh).
#   Python: ruff check + ruff format --check (pyproject.toml), mypy (bodies included)
#   C:      clang-format --dry-run -Werror (.clang-format) on native/, the R glue, tests/c
#   R:      lintr (scripts/lint-r.sh, .lintr)
# `scripts/lint.sh --fix` rewrites what the formatters can fix instead of failing on it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
fix=0
[ "${1:-}" = "--fix" ] && fix=1
status=0
fail() { echo "lint: $1"; status=1; }

py_paths=(pyggmlr tests bench setup.py native/build_ffi.py scripts)
c_files=$(git ls-files 'native/*.c' 'native/*.h' 'r/src/*.c' 'r/src/*.h' 'tests/c/*.c' 'tests/c/*.h' |
          while read -r f; do [ -L "$f" ] || echo "$f"; done)   # r/src's links to native/ once

command -v ruff >/dev/null 2>&1 || { echo "lint: ruff missing (pip install -e '.[test]')"; exit 1; }
command -v clang-format >/dev/null 2>&1 || { echo "lint: clang-format missing (apt-get install clang-format)"; exit 1; }
if [ "$fix" = 1 ]; then
    ruff check --fix -q "${py_paths[@]}" || true
    ruff format -q "${py_paths[@]}"
    # shellcheck disable=SC2086
    clang-format -i $c_files
fi
ruff check -q "${py_paths[@]}" || fail "ruff check found violations"
ruff format --check -q "${py_paths[@]}" || fail "ruff format: files above need 'scripts/lint.sh --fix'"
# shellcheck disable=SC2086
clang-format --dry-run -Werror $c_files || fail "clang-format: files above need 'scripts/lint.sh --fix'"
$PY -m mypy || fail "mypy found errors"
if [ -f scripts/lint-r.sh ] && command -v Rscript >/dev/null 2>&1; then
    bash scripts/lint-r.sh || fail "lintr found violations"
fi
[ "$status" = 0 ] && echo "lint: ruff, ruff format, clang-format, mypy, lintr clean"
exit "$status"
