"""cffi build script (API, out-of-line mode): compiles native/*.c into pyggmlr._native.

cffi execs this file rather than importing it, so paths are built from this file's location
and nothing from the package is imported here.
"""

import glob
import os
import sys

from cffi import FFI

HERE = os.path.dirname(os.path.abspath(__file__))

# the core uses pthreads (per-thread tapes, the GEMM thread pool): glibc 2.34+ and macOS have
# them in libc, older glibc needs -pthread; MSVC has no such flag
PTHREAD = [] if sys.platform == "win32" else ["-pthread"]

ffibuilder = FFI()
# pg_api.h is the core; pg_api_<area>.h add one area each (all cdef-clean, see pg_api.h)
for header in ["pg_api.h"] + sorted(glob.glob(os.path.join(HERE, "pg_api_*.h"))):
    with open(os.path.join(HERE, header)) as f:
        ffibuilder.cdef(f.read())
# host-node callbacks implemented in Python (pyggmlr/checkpoint.py, @ffi.def_extern)
with open(os.path.join(HERE, "ffi_callbacks.cdef")) as f:
    ffibuilder.cdef(f.read())

sources = sorted(glob.glob(os.path.join(HERE, "*.c")))
# a changed header rebuilds every source (setuptools tracks only the sources otherwise)
headers = sorted(glob.glob(os.path.join(HERE, "*.h")))
rel = os.getcwd() == os.path.dirname(HERE)
ffibuilder.set_source(
    "pyggmlr._native",
    '#include "pg.h"\n',
    sources=[os.path.relpath(s) for s in sources] if rel else sources,
    depends=[os.path.relpath(h) for h in headers] if rel else headers,
    include_dirs=[HERE],
    extra_compile_args=["-O3", "-std=gnu11", "-fvisibility=hidden", "-Wall", "-Wno-unused-function"]
    + PTHREAD,
    extra_link_args=PTHREAD,
    libraries=["m"],
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
