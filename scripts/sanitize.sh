#!/usr/bin/env bash
# The C core under AddressSanitizer + LeakSanitizer + UndefinedBehaviorSanitizer, in two steps
# (after the C driver's plain build, step 0):
#
#  1. The C driver (tests/c: the runner main.c, check.c and one test_<topic>.c a topic: every
#     op forward/backward with gradient checks, optimizers, gradient maps, tape, layer ops,
#     memory reports, data-parallel helpers, threads, error paths) linked against native/*.c
#     built with -fsanitize=address,undefined; leaks detected; any report stops it with a
#     non-zero status.
#  2. The Python test suite against a copy of the extension built with the same flags in a
#     temporary directory (the installed extension is not touched), libasan preloaded. Python
#     itself is not instrumented, so leak detection is off here (step 1 and the core's own
#     counters, tests/core/test_leaks.py, cover leaks); memory errors and undefined behaviour in
#     the core stop the run. Tests that embed R (rpy2: the demo's parity line, the R bridge and parity
#     tests, the R vignette) are left out: R's own stack checks do not run under ASan.
#
# Usage: scripts/sanitize.sh [--driver-only] [extra pytest args]. Needs gcc and libasan
# (Debian: libasan8, installed with gcc); exits 0 with a message if the compiler cannot build
# with the sanitizers.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
CC=${CC:-gcc}
driver_only=0
if [ "${1:-}" = "--driver-only" ]; then driver_only=1; shift; fi

SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/pyggmlr-san.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

probe() { echo 'int main(void){return 0;}' | $CC $SAN -x c - -o "$tmp/probe" 2>/dev/null && "$tmp/probe"; }
if ! probe && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libasan8 libubsan1 >/dev/null 2>&1 || true
fi
if ! probe; then
    echo "sanitize: SKIPPED: $CC cannot build with $SAN (install libasan8 / libubsan1)"
    exit 0
fi

# The driver once without sanitizers first: the cases ASan cannot host run here (fork() while
# another thread allocates can hang inside GCC 12's libasan, whose allocator has no fork handler)
echo "== sanitize 0/2: C driver, plain build"
$CC -std=gnu11 -O1 -Wall -Wno-unused-function -Inative native/*.c tests/c/*.c -lm -lpthread \
    -o "$tmp/driver-plain"
"$tmp/driver-plain"

echo "== sanitize 1/2: C driver (ASan + LSan + UBSan)"
$CC -std=gnu11 -g -O1 $SAN -Wall -Wno-unused-function -Inative native/*.c tests/c/*.c \
    -lm -lpthread -o "$tmp/driver"
"$tmp/driver"

[ "$driver_only" = 1 ] && exit 0

echo "== sanitize 2/2: Python suite on an ASan + UBSan build of the extension"
$PY - "$tmp" <<'EOF'
import glob, os, shutil, sys
from cffi import FFI
tmp = sys.argv[1]
here = os.path.abspath("native")
ffi = FFI()
for h in ["pg_api.h"] + sorted(os.path.basename(p) for p in glob.glob(os.path.join(here, "pg_api_*.h"))):
    with open(os.path.join(here, h)) as f:
        ffi.cdef(f.read())
with open(os.path.join(here, "ffi_callbacks.cdef")) as f:  # ag_checkpoint's Python callbacks
    ffi.cdef(f.read())
san = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-fno-sanitize-recover=undefined"]
ffi.set_source("pyggmlr._native", '#include "pg.h"\n', sources=sorted(glob.glob(os.path.join(here, "*.c"))),
               include_dirs=[here], extra_compile_args=["-O1", "-g", "-std=gnu11", "-Wno-unused-function"] + san,
               extra_link_args=san, libraries=["m"])
so = ffi.compile(tmpdir=os.path.join(tmp, "build"))
pkg = os.path.join(tmp, "pkg", "pyggmlr")
shutil.copytree("pyggmlr", pkg, ignore=shutil.ignore_patterns("_native*.so", "__pycache__"))
shutil.copy(so, pkg)
EOF
root=$(pwd)
preload="$($CC -print-file-name=libasan.so) $($CC -print-file-name=libubsan.so)"
# from outside the tree, so the sanitized copy is the pyggmlr that gets imported
cd "$tmp"
PYTHONPATH="$tmp/pkg" LD_PRELOAD="$preload" ASAN_OPTIONS="${ASAN_OPTIONS/detect_leaks=1/detect_leaks=0}" "$PY" -c \
    "import pyggmlr, sys; f = pyggmlr._native.__file__; sys.exit(0 if f.startswith('$tmp') else 'not the sanitized build: ' + f)"
PYTHONPATH="$tmp/pkg" LD_PRELOAD="$preload" ASAN_OPTIONS="${ASAN_OPTIONS/detect_leaks=1/detect_leaks=0}:allocator_may_return_null=1:max_allocation_size_mb=2048" \
    PYGGMLR_SANITIZED=1 "$PY" -m pytest -q -p no:cacheprovider --rootdir "$root" -c "$root/pyproject.toml" \
    "$root/tests" --ignore="$root/tests/docs/test_demo.py" --ignore="$root/tests/parity" \
    --ignore="$root/tests/r/test_rbridge.py" -k "not r-interop and not test_demo_command" -m "not parity" "$@"
echo "sanitize: clean"
