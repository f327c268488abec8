"""The R bridge: drive the R package ``pyggmlr`` (same C core) from Python through rpy2.

Imported on demand only (``import pyggmlr`` never imports rpy2). Needs R and
``rpy2>=3.5,<3.6`` (``pip install "pyggmlr[r]"``) and the R package (``bash
scripts/install-r-package.sh``)::

    from pyggmlr import r
    if r.available():
        r.start()                                   # embedded R, same BLAS as Python
        y = r.call("ag_matmul", W, x)               # an R ag_tensor (an RObject handle)
        r.from_r(y)                                 # -> a Python Tensor of the same dtype
        out = r.run("ag_relu(a)$data", a=np.eye(2)) # any R code, inputs bound locally

Conversions (all copies, never shared memory, so no handle can dangle):

* Python -> R (:func:`to_r`, arguments of :func:`call` / :func:`run`): numpy arrays become R
  vectors/matrices (a 2-D array keeps its [rows, cols] layout whatever its memory order;
  float32 becomes R double, exactly); a Python :class:`~pyggmlr.Tensor` given to ``call`` /
  ``run`` becomes an R ``ag_tensor`` of the same dtype (``ag_param`` if it requires grad), and
  :func:`to_r` of a tensor gives its values as an R matrix; ``None`` -> ``NULL``, str/bool/int/
  float -> length-1 vectors, lists -> R lists, dicts -> named R lists.
* R -> Python (:func:`from_r`, results of ``call`` / ``run``): an R matrix -> a Fortran-ordered
  numpy array (double -> float64, integer -> int32, logical -> bool); an R ``ag_tensor`` -> a
  Python Tensor with the same dtype and requires_grad; a length-1 vector -> a Python scalar;
  a named list -> dict, an unnamed one -> list; other objects (environments such as
  optimizers, layers and gradient maps, functions, data frames) stay in R as
  :class:`RObject` handles that can be passed back, indexed (``obj.W``, ``obj["lr"]``) and
  called.

numpy <-> R vector conversions run under ``localconverter(default_converter +
numpy2ri.converter)``; nothing is activated globally. R code runs inside ``local({...})`` in
a fresh environment (its parent is the global environment, read-only use), so nothing is
left in ``globalenv``. R errors raise :class:`RError` carrying R's message.

The Python cffi module and the R package each hold their own copy of the core: their tensor
ids, default dtype, tape and live-object counters are separate (``r.call("ag_live_objects")``
is R's). Embedded R is single-threaded: call this module from one thread only.
"""

from __future__ import annotations

import atexit
import gc
import importlib.util
import os
import sys
from typing import Any, Callable, Dict, List, Optional, Tuple, TypeVar, Union

import numpy as np

from . import _core
from .errors import PyggmlrError
from .tensor import Tensor, ag_param, ag_tensor

_T = TypeVar("_T")

__all__ = [
    "available",
    "unavailable_reason",
    "start",
    "sync_blas",
    "to_r",
    "to_r_tensor",
    "from_r",
    "call",
    "run",
    "tape",
    "package_installed",
    "RObject",
    "RError",
    "r_live_objects",
    "r_gc",
]


class RError(PyggmlrError, RuntimeError):
    """An error raised by R code (the message is R's condition message).

    Args: message: R's condition message (also ``r_message``); call: the R call that failed,
    deparsed (``r_call``), or None; r_class: the condition's class vector, e.g.
    ``("pyggmlr_shape_error", "pyggmlr_error", "simpleError", "error", "condition")``."""

    def __init__(
        self, message: str, call: Optional[str] = None, r_class: Tuple[str, ...] = ()
    ) -> None:
        super().__init__(message)
        self.r_message = message
        self.r_call = call
        self.r_class = tuple(r_class)


_st: Dict[str, Any] = {
    "started": False,
    "ri": None,
    "cv": None,
    "b": None,
    "reason": None,
    "host_mpi": False,
}

# R helpers, evaluated once into a private environment (never globalenv)
_BRIDGE_R = r"""
local({
  e <- new.env(parent = globalenv())
  err <- function(c) structure(list(message = conditionMessage(c),
                                    call = paste(deparse(conditionCall(c)), collapse = " "),
                                    class = class(c)),
                               class = "pyggmlr_bridge_error")
  e$call <- function(f, args) tryCatch(do.call(f, args, quote = TRUE), error = err)
  e$run <- function(code, inputs) {
    env <- list2env(inputs, parent = globalenv())
    tryCatch(eval(parse(text = paste0("local({\n", code, "\n})")), envir = env), error = err)
  }
  e$fn <- function(name, pkg) tryCatch({
    if (grepl("::", name, fixed = TRUE)) {
      p <- strsplit(name, ":::?")[[1L]]
      getExportedValue(p[1L], p[2L])
    } else if (name %in% getNamespaceExports(pkg)) getExportedValue(pkg, name)
    else match.fun(name)
  }, error = err)
  e$installed <- function(pkg) suppressWarnings(requireNamespace(pkg, quietly = TRUE))
  e$get <- function(o, name) tryCatch(o[[name]], error = err)
  # o[[name]] <- value: classed environments (ag_tensor's data/grad fields) dispatch to their method
  e$set <- function(o, name, value) tryCatch({ o[[name]] <- value; invisible(NULL) }, error = err)
  e$names <- function(o) if (is.environment(o) && !inherits(o, "ag_tensor")) ls(o, all.names = FALSE) else names(o)
  e$tensor_info <- function(t) list(t$data, t$dtype, isTRUE(t$requires_grad))
  e$tensor <- function(x, dtype, param) {
    if (param) pyggmlr::ag_param(x, dtype = dtype) else pyggmlr::ag_tensor(x, dtype = dtype)
  }
  e$tape <- function(f, pkg) getExportedValue(pkg, "with_grad_tape")(f())
  e$gc <- function() { gc(verbose = FALSE, full = TRUE); invisible(NULL) }
  e
})
"""


def available() -> bool:
    """True when rpy2 is importable and an R installation is found (starts nothing; never
    raises). The R package itself is checked by start()."""
    return unavailable_reason() is None


def unavailable_reason() -> Optional[str]:
    """Why the bridge cannot run (a message naming the missing piece and how to install it), or
    None when R and rpy2 are present. Never raises."""
    if _st["started"]:
        return None
    if importlib.util.find_spec("rpy2") is None:
        return 'rpy2 is not installed (pip install "rpy2>=3.5,<3.6")'
    try:
        from rpy2 import situation

        home = situation.get_r_home()
    except Exception as e:  # a broken rpy2 install
        return f"rpy2 cannot locate R: {type(e).__name__}: {e}"
    if not home:
        return "R is not installed (rpy2 found no R_HOME)"
    return None


def start() -> None:
    """Start embedded R (once; later calls do nothing), load the R package pyggmlr and give it
    Python's BLAS. Every other function of this module starts R on demand.

    Raises RuntimeError when R, rpy2 or the R package is missing."""
    if _st["started"]:
        return
    why = unavailable_reason()
    if why:
        raise RuntimeError(f"pyggmlr.r: {why}")
    ld = os.environ.get("LD_LIBRARY_PATH")
    import rpy2.rinterface as ri
    import rpy2.robjects  # noqa: F401  (initialises embedded R)

    # rpy2 prepends R's library directories to LD_LIBRARY_PATH; the loader of this process
    # read it at start-up already, so it only leaks into child processes (where a system
    # libpython can shadow this interpreter's): restore it
    if ld is None:
        os.environ.pop("LD_LIBRARY_PATH", None)
    else:
        os.environ["LD_LIBRARY_PATH"] = ld
    from rpy2.robjects import default_converter, numpy2ri

    ok = ri.evalr('suppressWarnings(requireNamespace("pyggmlr", quietly = TRUE))')
    if not ok[0]:
        raise RuntimeError(
            "pyggmlr.r: the R package 'pyggmlr' is not installed in R; "
            "run: bash scripts/install-r-package.sh"
        )
    ri.evalr("suppressPackageStartupMessages(library(pyggmlr))")  # attach: run() code sees ag_*
    _st.update(
        ri=ri,
        cv=default_converter + numpy2ri.converter,
        b=ri.evalr(_BRIDGE_R),
        started=True,
        blas=None,
    )
    atexit.register(_drop_bridge)
    sync_blas()


def _drop_bridge():
    # release our R handles while rpy2 is still intact (interpreter teardown clears modules)
    _st["b"] = None
    _st["started"] = False
    gc.collect()


def _ri():
    if not _st["started"]:
        start()
    if not _st["host_mpi"]:  # MPI started by this Python process (mpi4py): R's Rmpi would crash
        mpi = sys.modules.get("mpi4py.MPI")  # on it, so R's MPI functions refuse (distributed.R)
        if mpi is not None and mpi.Is_initialized():
            _st["ri"].evalr("options(pyggmlr.host_mpi = TRUE)")
            _st["host_mpi"] = True
    return _st["ri"]


def _bridge(name):
    _ri()
    return _st["b"].find(name)


def sync_blas(force: bool = False) -> Any:
    """Make R's copy of the core use the GEMM Python uses now (OpenBLAS from
    scipy-openblas32 via ``ag_set_blas("openblas", path)``, or the built-in kernel), so both languages
    produce bit-identical products. Returns R's ag_blas_name(). Done again only when Python's
    choice changed since the last call (or when `force`, e.g. after R code switched it).
    Raises RuntimeError when R is not available, RError when R fails to load the library."""
    _ri()
    want = (_core.ag_blas_name(), _core.blas_library_path())
    if force or _st.get("blas") != want:  # dyn.load once per change, not per call
        if want[1]:
            call("ag_set_blas", "openblas", want[1])
        else:
            call("ag_set_blas", "builtin")
        _st["blas"] = want
    return call("ag_blas_name")


# ---------------------------------------------------------------------------------------------
# conversions


class RObject:
    """A handle on an R object that has no natural Python form (environments, functions,
    data frames, lists of handles). ``obj.name`` / ``obj["name"]`` read ``obj[[name]]``
    (converted); ``obj.name = v`` assigns into an environment (active bindings included);
    calling the handle calls the R function. Keeps the R object alive while referenced.

    Reading a missing element gives None (R's NULL); assigning into a non-environment raises
    TypeError; R errors raise RError."""

    __slots__ = ("_sexp", "__weakref__")

    def __init__(self, sexp: Any) -> None:
        object.__setattr__(self, "_sexp", sexp)

    @property
    def sexp(self) -> Any:
        """The underlying rpy2.rinterface object."""
        return self._sexp

    @property
    def rclass(self) -> Tuple[str, ...]:
        """R's class(obj) as a tuple of strings, e.g. ('ag_tensor',)."""
        return tuple(self._sexp.rclass)

    def is_tensor(self) -> bool:
        """True when the object is an R ag_tensor (from_r() turns it into a Python Tensor)."""
        return "ag_tensor" in self._sexp.rclass

    def names(self) -> List[str]:
        """R's names(obj) as a list of strings ([] when the object has none)."""
        n = _bridge("names")(self._sexp)
        return [] if n.typeof == _ri().RTYPES.NILSXP else [str(v) for v in n]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return self[name]

    def __getitem__(self, key: Union[int, str]) -> Any:
        ri = _ri()
        if isinstance(key, int):
            key = ri.IntSexpVector([key + 1])  # 0-based from Python
        else:
            key = ri.StrSexpVector([str(key)])
        return _result(_bridge("get")(self._sexp, key))

    def __setattr__(self, name: str, value: Any) -> None:
        if self._sexp.typeof != _ri().RTYPES.ENVSXP:
            raise TypeError("only R environments can be assigned into (R lists are values)")
        _result(_bridge("set")(self._sexp, _ri().StrSexpVector([name]), _to_sexp(value)))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _call_sexp(self._sexp, args, kwargs)

    def __len__(self) -> int:
        return len(self._sexp)

    def __repr__(self) -> str:
        return f"<RObject {'/'.join(self.rclass)}>"


def _numpy_to_sexp(a):
    from rpy2.robjects.conversion import localconverter

    a = np.asarray(a)
    if a.dtype.kind == "f":
        a = a.astype(np.float64)
    elif a.dtype.kind in "iu":
        if a.size and (a.max() > 2**31 - 1 or a.min() < -(2**31 - 1)):
            a = a.astype(np.float64)  # R integers are 32-bit
        else:
            a = a.astype(np.int32)
    elif a.dtype.kind not in "bU":
        raise TypeError(f"pyggmlr.r: cannot convert a numpy array of dtype {a.dtype} to R")
    if a.ndim <= 1:  # a plain R vector (numpy2ri would make a 1-d array, with a dim attribute)
        ri = _st["ri"]
        vals = a.reshape(-1).tolist()
        kind = a.dtype.kind
        if kind == "f":
            return ri.FloatSexpVector(vals)
        if kind == "b":
            return ri.BoolSexpVector(vals)
        if kind == "U":
            return ri.StrSexpVector(vals)
        return ri.IntSexpVector(vals)
    with localconverter(_st["cv"]) as cv:
        return cv.py2rpy(a)


def _to_sexp(x, tensors=True):
    """Python -> rinterface Sexp (tensors -> R ag_tensor when `tensors`, else R matrix)."""
    ri = _ri()
    from rpy2.rinterface_lib.sexp import Sexp

    if isinstance(x, RObject):
        return x._sexp
    if isinstance(x, Sexp):
        return x
    if hasattr(x, "__sexp__"):  # an rpy2.robjects object
        return x.__sexp__
    if x is None:
        return ri.NULL
    if isinstance(x, Tensor):
        if tensors:
            return _bridge("tensor")(
                _numpy_to_sexp(x.numpy()),
                ri.StrSexpVector([x.dtype]),
                ri.BoolSexpVector([bool(x.requires_grad)]),
            )
        return _numpy_to_sexp(x.numpy())
    if isinstance(x, (bool, np.bool_)):
        return ri.BoolSexpVector([bool(x)])
    if isinstance(x, (int, np.integer)):
        return ri.IntSexpVector([int(x)]) if abs(int(x)) < 2**31 else ri.FloatSexpVector([float(x)])
    if isinstance(x, (float, np.floating)):
        return ri.FloatSexpVector([float(x)])
    if isinstance(x, str):
        return ri.StrSexpVector([x])
    if isinstance(x, np.ndarray):
        return _numpy_to_sexp(x)
    if isinstance(x, dict):
        vals = [_to_sexp(v, tensors) for v in x.values()]
        out = ri.ListSexpVector(vals)
        out.do_slot_assign("names", ri.StrSexpVector([str(k) for k in x]))
        return out
    if isinstance(x, (list, tuple)):
        return ri.ListSexpVector([_to_sexp(v, tensors) for v in x])
    raise TypeError(f"pyggmlr.r: cannot convert a {type(x).__name__} to R")


def _atomic(s):
    """An R atomic vector -> numpy (with its dim) or a Python scalar."""
    ri = _st["ri"]
    t = s.typeof
    try:
        dim = list(s.do_slot("dim"))
    except LookupError:
        dim = None
    if t == ri.RTYPES.STRSXP:
        vals = [None if v is ri.NA_Character else str(v) for v in s]
        return vals[0] if (len(vals) == 1 and dim is None) else vals
    from rpy2.robjects.conversion import localconverter

    with localconverter(_st["cv"]) as cv:
        a = np.array(cv.rpy2py(s), copy=True)
    if t == ri.RTYPES.LGLSXP:
        a = a.astype(bool)
    if dim is not None:
        a = np.asfortranarray(a.reshape(dim, order="F") if a.ndim == 1 else a)
        return a
    if a.size == 1:
        return a.reshape(()).item()
    return a


def _is_atomic(s):
    ri = _st["ri"]
    return s.typeof in (ri.RTYPES.REALSXP, ri.RTYPES.INTSXP, ri.RTYPES.LGLSXP, ri.RTYPES.STRSXP)


def _result(s):
    """Bridge result -> Python: raise R errors; atomic values converted, the rest as RObject."""
    ri = _st["ri"]
    if s is ri.NULL or s.typeof == ri.RTYPES.NILSXP:
        return None
    if s.typeof == ri.RTYPES.VECSXP and "pyggmlr_bridge_error" in s.rclass:
        msg, rcall = str(s[0][0]), str(s[1][0])
        raise RError(msg, rcall, tuple(str(c) for c in s[2]) if len(s) > 2 else ())
    if _is_atomic(s):
        return _atomic(s)
    return RObject(s)


def from_r(obj: Any) -> Any:
    """Convert an R value (an RObject or an rpy2 object) to Python, as a copy.

    R matrix -> Fortran-ordered numpy array; R ag_tensor -> Python Tensor (same dtype,
    requires_grad kept); lists -> dict (named) / list, recursively; length-1 vectors ->
    scalars; NULL -> None; anything else (environments, functions) -> RObject. A plain
    Python value is returned as given. Raises RuntimeError when R is not available."""
    ri = _ri()
    from rpy2.rinterface_lib.sexp import Sexp

    if isinstance(obj, RObject):
        s = obj._sexp
    elif isinstance(obj, Sexp):
        s = obj
    elif hasattr(obj, "__sexp__"):
        s = obj.__sexp__
    else:
        return obj  # already a Python value
    if s is ri.NULL or s.typeof == ri.RTYPES.NILSXP:
        return None
    if _is_atomic(s):
        return _atomic(s)
    if s.typeof == ri.RTYPES.ENVSXP and "ag_tensor" in s.rclass:
        info = _bridge("tensor_info")(s)
        data, dtype, rg = _atomic(info[0]), str(info[1][0]), bool(info[2][0])
        data = np.asarray(data, dtype=np.float64).reshape(np.shape(data) or (1, 1), order="F")
        return (ag_param if rg else ag_tensor)(data, dtype=dtype)
    if s.typeof == ri.RTYPES.VECSXP and "data.frame" not in s.rclass:
        items = [from_r(v) for v in s]
        try:
            names = [str(n) for n in s.do_slot("names")]
        except LookupError:
            return items
        return {(n if n else str(i + 1)): v for i, (n, v) in enumerate(zip(names, items))}
    return RObject(s)


def to_r(x: Any) -> RObject:
    """Python -> R as an RObject (or a converted scalar when trivially round-trippable).

    A Tensor gives its values as an R double matrix ([rows, cols] as in Python); use
    to_r_tensor() for an R ag_tensor. Raises RuntimeError when R is not available,
    TypeError for a Python value with no R form."""
    return RObject(_to_sexp(x, tensors=False))


def to_r_tensor(
    x: Any, dtype: Optional[str] = None, requires_grad: Optional[bool] = None
) -> RObject:
    """A Python Tensor or array -> an R ag_tensor (a copy). dtype defaults to the tensor's own
    dtype (for arrays: float32 -> "f32", anything else -> "f64"); requires_grad defaults to
    the tensor's flag (False for arrays). 0-D / 1-D data becomes an [n, 1] column; 2-D data
    keeps [rows, cols]. Returns an RObject handle. Raises RuntimeError when R is not available,
    RError when R rejects the values (e.g. an unknown dtype)."""
    ri = _ri()
    if isinstance(x, Tensor):
        a = x.numpy()
        dtype = dtype or x.dtype
        rg = x.requires_grad if requires_grad is None else requires_grad
    else:
        a = np.asarray(x)
        dtype = dtype or ("f32" if a.dtype == np.float32 else "f64")
        rg = bool(requires_grad)
    if a.ndim < 2:
        a = a.reshape(-1, 1)
    return RObject(
        _bridge("tensor")(
            _numpy_to_sexp(a), ri.StrSexpVector([dtype]), ri.BoolSexpVector([bool(rg)])
        )
    )


def _call_sexp(fn, args, kwargs):
    ri = _ri()
    vals = [_to_sexp(a) for a in args] + [_to_sexp(v) for v in kwargs.values()]
    lst = ri.ListSexpVector(vals) if vals else ri.ListSexpVector([])
    if vals:
        lst.do_slot_assign("names", ri.StrSexpVector([""] * len(args) + list(kwargs)))
    return _result(_bridge("call")(fn, lst))


def _call_pkg(pkg, fname, args, kwargs):
    ri = _ri()
    fn = _result(_bridge("fn")(ri.StrSexpVector([fname]), ri.StrSexpVector([pkg])))
    return _call_sexp(_to_sexp(fn), args, kwargs)


def package_installed(pkg: str) -> bool:
    """Whether R can load the package `pkg` (e.g. the reference ``ggmlR``). Starts R; raises
    RuntimeError when R is not available."""
    return bool(_bridge("installed")(_ri().StrSexpVector([pkg]))[0])


def call(fname: Union[str, RObject], *args: Any, **kwargs: Any) -> Any:
    """Call an exported function of the R package (``ag_matmul``, ``optimizer_adam``,
    ``backward``, ...; other names are looked up from R's global environment, e.g. ``"get0"``;
    an RObject function works too) with converted arguments; returns the converted result (an R ag_tensor
    stays an RObject handle: from_r() copies it into a Python Tensor). Raises RError with R's
    message when the R function fails (or does not exist), RuntimeError when R is not
    available."""
    if isinstance(fname, str):
        return _call_pkg("pyggmlr", fname, args, kwargs)
    return _call_sexp(_to_sexp(fname), args, kwargs)


def run(code: str, **inputs: Any) -> Any:
    """Evaluate R code (an expression or a script; the value of its last expression is
    returned, converted with from_r) with `inputs` bound as R variables in a fresh local
    environment. Python tensors arrive as R ag_tensors of the same dtype, numpy arrays as R
    matrices/vectors. The package's ag_* functions are in scope. Raises RError with R's
    message when the code fails (parse or run time), RuntimeError when R is not available."""
    ri = _ri()
    env = _to_sexp(inputs) if inputs else ri.ListSexpVector([])
    if not inputs:
        env.do_slot_assign("names", ri.StrSexpVector([]))
    out = _result(_bridge("run")(ri.StrSexpVector([code]), env))
    return from_r(out) if isinstance(out, RObject) else out


def tape(fn: Callable[[], _T], pkg: str = "pyggmlr") -> _T:
    """Run the Python callable fn under R's ``with_grad_tape()`` (fn typically calls R ops
    through call()); returns fn's value (as given, not converted). pkg: the R package whose
    with_grad_tape is used ("pyggmlr" or "ggmlR"). Re-raises what fn raised (after R closed
    the tape scope); RError when R fails."""
    ri = _ri()
    box: Dict[str, Any] = {"fn": fn}

    @ri.rternalize
    def cb():
        try:
            box["value"] = box["fn"]()
        except BaseException as e:  # re-raised below, after R has closed the scope
            box["error"] = e
        return ri.BoolSexpVector([True])

    try:
        _result(_bridge("call")(_bridge("tape"), ri.ListSexpVector([cb, ri.StrSexpVector([pkg])])))
    finally:
        # rpy2 keeps the callback until R collects it: hold no result through it
        err, value = box.pop("error", None), box.pop("value", None)
        box.clear()
    if err is not None:
        raise err
    return value


def r_live_objects() -> int:
    """Live-object counter of R's copy of the core (after an R garbage collection), an int.
    Raises RuntimeError when R is not available."""
    r_gc()
    return call("ag_live_objects")


def r_gc() -> None:
    """Run R's garbage collector (finalizers release R-held core tensors). Raises RuntimeError
    when R is not available."""
    _bridge("gc")()
