"""The harness's parts: the two sides, a case, the shared input stream, the R halves' loader
and the comparison (see the package docstring for what a case is)."""

from __future__ import annotations

import math
import pathlib
import zlib
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
from numpy import ndarray  # for hints inside the sides, whose np() method shadows the module

DTYPES = ("f64", "f32")

#: One step's values of a case: name -> numpy array (compared value by value).
Record = Dict[str, np.ndarray]

HERE = pathlib.Path(__file__).resolve().parent

# the R halves, sourced in this order into one environment (helpers.R first: the others use it)
R_FILES = (
    "helpers.R",
    "models.R",
    "seed.R",
    "state.R",
    "checkpoint.R",
    "optim.R",
    "capture.R",
    "compile.R",
    "weights.R",
    "scaling.R",
    "metrics.R",
    "progress.R",
    "datasets.R",
    "predict.R",
    "pooling.R",
    "recurrent.R",
    "conv.R",
    "resize.R",
    "summary.R",
)

_R_ENV: Dict[str, Any] = {}


# ---------------------------------------------------------------------------------------------
# sides


class PySide:
    """The Python API as a side of a parity case: attributes are pyggmlr's functions, plus the
    helpers both sides share (set_dtype, np, tape, grad, set, items, memory, live). Never
    raises on construction (imports pyggmlr)."""

    name = "python"

    def __init__(self) -> None:
        import pyggmlr

        self._pg = pyggmlr

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pg, name)

    def set_dtype(self, dtype: str) -> str:
        """Set the default dtype ("f32" / "f64"); returns the previous one."""
        return self._pg.ag_dtype(dtype)

    def np(self, x: Any) -> ndarray:
        """A tensor's (or any array's) values as a numpy array [rows, cols]."""
        if isinstance(x, self._pg.Tensor):
            return x.numpy()
        return np.asarray(x)

    def tape(self, fn: Callable[[], Any]) -> Any:
        """Run fn() on a recording tape (with_grad_tape); returns fn's value."""
        return self._pg.with_grad_tape(fn)

    def grad(self, grads: Any, t: Any) -> Any:
        """The gradient of tensor t in the map grads (numpy, t's shape); raises
        GradientKeyError when t has none."""
        return grads[t]

    def set(self, t: Any, value: Any) -> None:
        """Overwrite tensor t's values (same shape [rows, cols])."""
        t.data = value

    def set_running(self, layer: Any, d: Dict[str, Any]) -> None:
        """Set a batch norm's running statistics (tensors in Python) to d["rm"], d["rv"]."""
        layer.running_mean.data = d["rm"]
        layer.running_var.data = d["rv"]

    def items(self, params: Any) -> List[Tuple[str, Any]]:
        """(name, tensor) pairs of a parameters() dict, in order."""
        return list(params.items())

    def memory(self) -> Record:
        """The tape memory report (after a garbage collection) as a comparable record."""
        import gc

        gc.collect()
        rep = self._pg.ag_tape_memory(quiet=True)
        by = rep["by_op"]
        return _mem_record(
            rep, [row["op"] for row in by], [row["nodes"] for row in by], [row["mb"] for row in by]
        )

    def live(self) -> int:
        """Live core objects of this side (after a garbage collection)."""
        import gc

        gc.collect()
        return self._pg.ag_live_objects()


class RSide:
    """The R package (or ggmlR, for the optional column) as a side, through pyggmlr.r: an
    attribute ``P.f`` calls the R function ``pkg::f`` with converted arguments. The helpers
    mirror PySide's. Construction starts R: raises RuntimeError when R, rpy2 or the R package
    is missing; calls raise pyggmlr.r.RError when R fails."""

    def __init__(self, pkg: str = "pyggmlr") -> None:
        from pyggmlr import r

        self._r = r
        self.pkg = pkg
        self.name = "R" if pkg == "pyggmlr" else pkg
        r.start()

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("_"):
            raise AttributeError(name)
        r, pkg = self._r, self.pkg
        return lambda *a, **k: r._call_pkg(pkg, name, a, k)

    def set_dtype(self, dtype: str) -> str:
        """Set R's default dtype; returns the previous one."""
        return self._r._call_pkg(self.pkg, "ag_dtype", (dtype,), {})

    def np(self, x: Any) -> ndarray:
        """An R ag_tensor's values (in its dtype) or any value as a numpy array."""
        r = self._r
        if isinstance(x, r.RObject) and x.is_tensor():
            return as_dtype(x.data, x.dtype)
        return np.asarray(x)

    def tape(self, fn: Callable[[], Any]) -> Any:
        """Run fn() under R's with_grad_tape; returns fn's value."""
        return self._r.tape(fn, pkg=self.pkg)

    def grad(self, grads: Any, t: Any) -> Optional[ndarray]:
        """The gradient of R tensor t in R's gradient map (numpy, t's dtype), or None."""
        g = self._r.call("get0", str(int(t.id)), grads, inherits=False)
        return None if g is None else as_dtype(g, t.dtype)

    def set(self, t: Any, value: Any) -> None:
        """Overwrite R tensor t's values (same shape [rows, cols])."""
        t.data = value

    def set_running(self, layer: Any, d: Dict[str, Any]) -> None:
        """Set a batch norm's running statistics (R: active bindings over core tensors)."""
        layer.running_mean = d["rm"]
        layer.running_var = d["rv"]

    def items(self, params: Any) -> List[Tuple[str, Any]]:
        """(name, tensor) pairs of an R parameters() list, in order."""
        return [(n, params[n]) for n in params.names()]

    def memory(self) -> Record:
        """R's tape memory report (after an R garbage collection) as a comparable record."""
        # R frees dropped intermediates only when its GC runs finalizers: until then they count
        # as operands held elsewhere (bytes_inputs), not as tape-only activations
        self._r.r_gc()
        rep = self._r._call_pkg(self.pkg, "ag_tape_memory", (), {"quiet": True})
        by = rep["by_op"]
        ops = by["op"] if by is not None else []
        ops = [ops] if isinstance(ops, str) else list(ops)
        nodes, mb = list(np.atleast_1d(by["nodes"])), list(np.atleast_1d(by["mb"]))
        return _mem_record(rep, ops, nodes, mb)

    def live(self) -> int:
        """Live core objects of R's copy of the core (after an R garbage collection)."""
        return self._r.r_live_objects()


def as_dtype(a: Any, dtype: str) -> ndarray:
    """a as a numpy array of the dtype's float type (R hands f32 values over as doubles)."""
    a = np.asarray(a)
    return a.astype(np.float32) if dtype == "f32" else a.astype(np.float64)


def r_values(v: Any) -> ndarray:
    """An R result (scalar / vector / matrix) as a float64 numpy array with at least one dim."""
    return np.atleast_1d(np.asarray(v, dtype=np.float64))


def _mem_record(rep, ops, nodes, mb):
    keys = ("nodes", "bytes_total", "bytes_snapshots", "bytes_fields", "bytes_inputs")
    rec = {k: np.array([float(rep[k])]) for k in keys}
    rec["by_op.nodes"] = np.array([float(v) for v in nodes])
    rec["by_op.mb"] = np.array([float(v) for v in mb])
    rec["by_op.op"] = np.array([zlib.crc32(str(o).encode()) for o in ops], dtype=np.float64)
    return rec


def call_r(fname: str, **inputs: Any) -> Any:
    """Call the R half `fname` (a function of the .R files next to this module, sourced once
    into one environment) with `inputs` as named arguments; returns its value converted with
    pyggmlr.r.from_r. Raises pyggmlr.r.RError when R fails."""
    from pyggmlr import r

    env = _R_ENV.get("env")
    if env is None:
        files = np.array([str(HERE / f) for f in R_FILES])
        env = r.run(
            "e <- new.env(parent = globalenv()); for (f in files) sys.source(f, e); e", files=files
        )
        _R_ENV["env"] = env
    return r.from_r(r.call(env[fname], **inputs))


def train_steps(
    loss_fn: Callable[[Any, Any], Any],
    opt: Any,
    x: Any,
    y: Any,
    steps: int,
    compiled: bool,
    record: Callable[[float], Dict[str, Any]],
) -> List[Any]:
    """`steps` optimizer steps on loss_fn(x, y), eager (a tape, backward, step, zero_grad) or as
    one ag_compile step; record(loss) after each. R's twin: train_steps in helpers.R."""
    import pyggmlr as pg

    step = pg.ag_compile(loss_fn, x, y, optimizer=opt) if compiled else None
    recs = []
    for _ in range(steps):
        if step is not None:
            loss = step(x, y)  # the loss, a float (build "opt")
            assert isinstance(loss, float)
        else:
            with pg.with_grad_tape():
                lt = loss_fn(x, y)
            opt.step(pg.backward(lt))
            opt.zero_grad()
            loss = lt.item()
        recs.append(record(loss))
    return recs


def with_dtype(dtype: str, f: Callable[[], Any]) -> Any:
    """f() with Python's default dtype set to `dtype` (restored afterwards)."""
    import pyggmlr as pg

    prev = pg.ag_dtype(dtype)
    try:
        return f()
    finally:
        pg.ag_dtype(prev)


# ---------------------------------------------------------------------------------------------
# a case


class Case:
    """One parity case: fn(side, inputs, steps) runs on a side (PySide or RSide) and returns
    the records compared after each step; inputs(rng) builds the shared numpy inputs, dtypes
    are the dtypes it runs in, ggmlr says whether the optional ggmlR column applies.

    Args: name: unique, shown in the table; group: a heading ("ops", "layers", ...); fn:
    ``fn(side, inputs, steps) -> list of records`` (None for a ScriptCase); steps: >= 1;
    inputs: ``inputs(rng) -> dict of numpy arrays`` (rng: uniform / integers on the core's
    stream) (default: no inputs); dtypes: a tuple of "f64" / "f32"; ggmlr: bool."""

    def __init__(
        self,
        name: str,
        group: str,
        fn: Optional[Callable[[Any, Dict[str, Any], int], List[Record]]],
        steps: int = 1,
        inputs: Optional[Callable[[Any], Dict[str, Any]]] = None,
        dtypes: Sequence[str] = DTYPES,
        ggmlr: bool = True,
    ) -> None:
        self.name, self.group, self.fn, self.steps = name, group, fn, steps
        self.inputs = inputs or (lambda rng: {})
        self.dtypes, self.ggmlr = dtypes, ggmlr

    def __repr__(self):
        return f"Case({self.name!r}, {self.group!r}, steps={self.steps})"


class ScriptCase(Case):
    """A case whose Python and R sides are separate programs (the R one a function of an .R
    file, called through call_r).

    Args: name, steps, inputs, group: as Case; py, rr: ``f(inputs, steps, dtype) -> list of
    records``, the Python program and the R one. Never runs in the ggmlR column."""

    def __init__(
        self,
        name: str,
        py: Callable[[Dict[str, Any], int, str], List[Record]],
        rr: Callable[[Dict[str, Any], int, str], List[Record]],
        steps: int,
        inputs: Callable[[Any], Dict[str, Any]],
        group: str = "script",
    ) -> None:
        super().__init__(name, group, None, steps, inputs, ggmlr=False)
        self.py, self.rr = py, rr


#: Every case, in table order (the cases_* modules append to it when imported).
CASES: List[Case] = []


def _seed(name):
    return zlib.crc32(name.encode()) % 2**31


class _Draws:
    """The two numpy-Generator calls the inputs use, on the core's R-compatible stream (R's
    runif and sample.int), so no draw of the package bypasses it."""

    def __init__(self, seed: int) -> None:
        from pyggmlr.random import Generator

        self._g = Generator(seed)

    def uniform(self, low=0.0, high=1.0, size=None):
        if size is None:
            shape: tuple = ()
        else:
            shape = tuple(size) if isinstance(size, (tuple, list)) else (size,)
        v = self._g.runif(int(np.prod(shape)), low, high)
        return v.reshape(shape, order="F") if shape else float(v[0])

    def integers(self, low, high, size=None):
        n = 1 if size is None else int(np.prod(size))
        v = self._g.sample_int(high - low, n, replace=True) - 1 + low
        return v.reshape(size, order="F") if size is not None else int(v[0])


def _u(rng, *shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, size=shape)


# ---------------------------------------------------------------------------------------------
# comparison

Num = Union[int, float]


def max_ulp(
    a: Union[np.ndarray, Sequence[float], float], b: Union[np.ndarray, Sequence[float], float]
) -> Num:
    """Max distance in units in the last place between two float arrays of one dtype and shape
    (0 when identical; NaNs in the same places count as equal; a NaN against a number is inf).
    Returns an int, or math.inf. Raises ValueError when the shapes do not broadcast."""
    a, b = np.asarray(a), np.asarray(b)
    if a.size == 0:
        return 0
    lo: Union[int, np.int64]
    if a.dtype == np.float32:
        ia, ib = a.view(np.int32).astype(np.int64), b.view(np.int32).astype(np.int64)
        lo = np.int64(np.iinfo(np.int32).min)
    else:
        a, b = a.astype(np.float64), b.astype(np.float64)
        ia, ib = a.view(np.int64).astype(object), b.view(np.int64).astype(object)
        lo = int(np.iinfo(np.int64).min)
    ia = np.where(ia < 0, lo - ia, ia)
    ib = np.where(ib < 0, lo - ib, ib)
    na, nb = np.isnan(a), np.isnan(b)
    if np.any(na != nb):
        return math.inf
    d = np.abs(ia - ib)[~na]
    return int(d.max()) if d.size else 0


def compare(
    ref: Sequence[Dict[str, Any]], got: Sequence[Dict[str, Any]]
) -> Tuple[float, Num, Optional[str]]:
    """Compare two lists of step records (dicts name -> array, one per step). Returns
    (max_abs, max_ulp, first_mismatch) where first_mismatch is None or a message naming the
    step and the value; a different number of steps, a missing value or a shape difference
    gives inf, inf and a message. Never raises for mismatches."""
    if len(ref) != len(got):
        return math.inf, math.inf, f"{len(ref)} steps on the Python side, {len(got)} on the other"
    worst_ulp: Num
    first: Optional[str]
    worst_abs, worst_ulp, first = 0.0, 0, None
    for step, (ra, rb) in enumerate(zip(ref, got), 1):
        if set(ra) != set(rb):
            only = sorted(set(ra) ^ set(rb))
            return math.inf, math.inf, f"step {step}: values {only} exist on one side only"
        for key in ra:
            a, b = np.asarray(ra[key]), rb[key]
            if b is None:
                return math.inf, math.inf, f"step {step}, {key}: missing on the other side"
            b = np.asarray(b)
            if a.dtype.kind == "f" and b.dtype != a.dtype:
                b = b.astype(a.dtype)  # R hands f32 values over as (exact) doubles
            if a.shape != b.shape:
                return math.inf, math.inf, f"step {step}, {key}: shape {a.shape} vs {b.shape}"
            with np.errstate(invalid="ignore"):
                diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
            is_f = a.dtype.kind == "f"
            both_nan = np.isnan(a) & np.isnan(b) if is_f else np.zeros(a.shape, bool)
            diff = np.where(both_nan, 0.0, diff)
            mabs = float(np.nanmax(np.where(np.isnan(diff), np.inf, diff))) if diff.size else 0.0
            mulp = max_ulp(a, b) if is_f else (0 if mabs == 0 else math.inf)
            worst_abs, worst_ulp = max(worst_abs, mabs), max(worst_ulp, mulp)
            if first is None and (mulp != 0 or mabs != 0):
                first = f"step {step}, {key}: max abs diff {mabs:.3g}, max ULP {mulp}"
    return worst_abs, worst_ulp, first


def run_case(case: Case, dtype: str, side: Union[PySide, RSide]) -> List[Record]:
    """Run one case on one side (PySide / RSide) in `dtype` ("f64" / "f32"); returns its step
    records (dicts name -> numpy array). The side's default dtype and tape are restored
    afterwards. Raises what the case raises (RError from R)."""
    d = case.inputs(_Draws(_seed(case.name)))
    if isinstance(case, ScriptCase):
        run = case.py if isinstance(side, PySide) else case.rr
        return run(d, case.steps, dtype)
    prev = side.set_dtype(dtype)
    try:
        return case.fn(side, d, case.steps)  # type: ignore[misc]  # only a ScriptCase has no fn
    finally:
        side.set_dtype(prev)
        side.ag_tape_clear()


def check_case(
    case: Case, dtype: str, py: Optional[PySide] = None, rside: Optional[RSide] = None
) -> Dict[str, Any]:
    """Run a case on both sides; returns a result dict (case, group, dtype, steps, max_abs,
    max_ulp, status "ok" / "MISMATCH" / "ERROR", detail). A side that raises is reported as
    status "ERROR" (not raised); RSide() raises RuntimeError when R is missing."""
    py = py or PySide()
    rside = rside or RSide()
    rside._r.sync_blas()
    res = {"case": case.name, "group": case.group, "dtype": dtype, "steps": case.steps}
    try:
        a = run_case(case, dtype, py)
        b = run_case(case, dtype, rside)
    except Exception as e:  # a side failed: report it as a mismatch naming the error
        res.update(
            max_abs=math.inf, max_ulp=math.inf, status="ERROR", detail=f"{type(e).__name__}: {e}"
        )
        return res
    mabs, mulp, first = compare(a, b)
    res.update(
        max_abs=mabs, max_ulp=mulp, status="ok" if first is None else "MISMATCH", detail=first
    )
    return res
