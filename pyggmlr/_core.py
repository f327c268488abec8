"""The only module that touches the compiled cffi extension: loads it, hands it a BLAS, and
turns C status codes into Python exceptions."""

from __future__ import annotations

import ctypes
import os
from typing import Optional

from ._args import check_int, plain
from ._native import ffi, lib
from .errors import ArgumentError, PyggmlrValueError, error_for_status

F32, F64 = lib.PG_DTYPE_F32, lib.PG_DTYPE_F64
DTYPE_CODE = {"f32": F32, "f64": F64}
DTYPE_NAME = {F32: "f32", F64: "f64"}
NULL = ffi.NULL

_blas_dll = None  # keep the library loaded for the life of the process
_blas_path = None


def last_message() -> str:
    """The core's last error message, then cleared (for a text the caller raises itself)."""
    m = ffi.string(lib.pg_last_error()).decode("utf-8", "replace")
    lib.pg_clear_error()
    return m


def raise_last(default_status=0):
    status = lib.pg_last_status() or default_status
    msg = ffi.string(lib.pg_last_error()).decode("utf-8", "replace") or "pyggmlr: unknown error"
    lib.pg_clear_error()
    raise error_for_status(status, msg)


def check(rc):
    """Raise for a negative or non-zero C status; return rc otherwise."""
    if rc != 0:
        raise_last(rc if rc > 0 else -rc)
    return rc


def text(fn, *args) -> str:
    """A text the core writes with fn(*args, out, cap): measured, then written (a path's bytes
    that are no UTF-8 as os.fsdecode keeps them)."""
    n = fn(*args, NULL, 0)
    if n < 0:
        check(n)
    buf = ffi.new("char[]", n + 1)
    fn(*args, buf, n + 1)
    return ffi.string(buf).decode("utf-8", "surrogateescape")


def _load_openblas():
    """Hand OpenBLAS from the scipy-openblas32 wheel to the core, one thread by default.

    Symbols are resolved at run time (not linked at build time): an isolated build
    environment's copy of the wheel is not the one installed next to us."""
    global _blas_dll, _blas_path
    try:
        import scipy_openblas32
    except ImportError:
        return False
    path = os.path.join(scipy_openblas32.get_lib_dir(), "libscipy_openblas.so")
    if not os.path.exists(path):
        return False
    try:
        dll = ctypes.CDLL(path)
        sgemm = ctypes.cast(dll.scipy_cblas_sgemm, ctypes.c_void_p).value
        dgemm = ctypes.cast(dll.scipy_cblas_dgemm, ctypes.c_void_p).value
        threads = ctypes.cast(dll.scipy_openblas_set_num_threads, ctypes.c_void_p).value
    except (OSError, AttributeError):
        return False
    _blas_dll, _blas_path = dll, path
    lib.pg_set_blas(
        ffi.cast("void *", sgemm),
        ffi.cast("void *", dgemm),
        ffi.cast("void *", threads),
        b"OpenBLAS (scipy-openblas32)",
    )
    return True


def ag_set_blas(name: str = "default") -> str:
    """Select the GEMM backend (R has the same name): "builtin" or "default" (the default, in R
    too: the core's blocked kernel, AVX-512, AVX2+FMA or portable micro-kernels picked by CPU,
    threaded by ag_set_threads with the same bits for every thread count) or "openblas" (the
    scipy-openblas32 wheel; it rounds differently, so R must use it too for equal bits: pyggmlr.r
    does that). Returns ag_blas_name()."""
    if not isinstance(name, str):  # `in` on an array raised numpy's "truth value is ambiguous"
        raise ArgumentError(
            f"ag_set_blas(): name must be one of 'default', 'builtin', 'openblas', got "
            f"{type(plain(name)).__name__} {plain(name)!r}"[:300]
        )
    if name in ("builtin", "default"):
        lib.pg_set_blas(NULL, NULL, NULL, b"builtin")
    elif name == "openblas":
        if not _load_openblas():
            raise RuntimeError("OpenBLAS is not available: pip install scipy-openblas32")
    else:
        raise PyggmlrValueError(
            f"ag_set_blas(): name must be one of 'default', 'builtin', 'openblas', got {plain(name)!r}"
        )
    return ag_blas_name()


def ag_blas_name() -> str:
    """Name of the GEMM the core uses now: "OpenBLAS (scipy-openblas32)" or "builtin"."""
    return ffi.string(lib.pg_blas_name()).decode()


def blas_library_path() -> Optional[str]:
    """Path of the OpenBLAS library in use (None for the built-in kernel); the R bridge hands
    the same library to the R package so both languages run identical GEMM code."""
    return _blas_path if ag_blas_name() != "builtin" else None


# The built-in kernel is the default in Python and R alike, so one script gives the same bits in
# both; PYGGMLR_BLAS=openblas (or ag_set_blas("openblas")) opts into OpenBLAS.
if os.environ.get("PYGGMLR_BLAS", "").lower() == "openblas":
    _load_openblas()


def ag_set_threads(n: int) -> int:
    """Threads for the core's large loops; 1 by default. OpenBLAS gets n threads; the built-in
    kernel splits products of at least 2 (f64) / 4 (f32) MFLOP per thread over a pool of n - 1
    workers, and the same pool runs large optimizer updates, vectorised math, layer norm columns
    and attention heads, with the same bits for every n. While other processes keep the cores
    busy, the pool runs single-threaded for a while (never much slower than one thread).
    Returns the previous value."""
    prev = lib.pg_get_threads()
    n = check_int(n, "ag_set_threads()", "n", 1, lib.PG_MAX_THREADS)  # the core's bound
    check(lib.pg_set_threads(n))
    return prev


def ag_get_threads() -> int:
    """Number of threads the core's kernels use (see ag_set_threads)."""
    return lib.pg_get_threads()
