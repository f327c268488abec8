"""Optimizer state()/load_state() in ggmlR 0.8.6's layout, with its checks and messages (the
same texts as the R front end), plus the layout this project's model files store."""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, Dict, List, NoReturn, Optional

import numpy as np

from . import _core
from ._core import NULL, ffi, lib
from .errors import PyggmlrValueError

__all__ = ["OptimizerHyperWarning"]

FORMAT = "ggmlR.ag_opt_state"
_SLOTS = {"sgd": ("velocity",), "adam": ("m", "v")}
_HYPER = {"sgd": ("lr", "momentum"), "adam": ("lr", "beta1", "beta2", "eps")}
# this project's extra hyper-parameters: in the state only when not at their default
_EXTRA = {"sgd": (("nesterov", False), ("weight_decay", 0.0)), "adam": (("weight_decay", 0.0),)}
_LEGACY_SLOTS = {"sgd": ("velocity", "accum"), "adam": ("m", "v", "accum")}
_LEGACY_HYPER = {
    "sgd": ("lr", "momentum", "nesterov", "weight_decay", "accumulate_steps", "average"),
    "adam": ("lr", "beta1", "beta2", "eps", "weight_decay", "accumulate_steps", "average"),
}


class OptimizerHyperWarning(UserWarning):
    """load_state(): the state's hyper-parameters differ from the optimizer's (they are not
    restored); ggmlR's condition class ggmlR_opt_hyper_warning. ``changed`` maps each name to
    {"current": ..., "state": ...}."""

    def __init__(self, message: str, changed: Dict[str, Dict[str, Any]]) -> None:
        super().__init__(message)
        self.changed = changed


def _type(opt) -> str:
    return "adam" if opt._kind == 1 else "sgd"


def r_format(x: Any) -> str:
    """A number as R's format() writes it (7 significant digits, fixed unless scientific is
    narrower); TRUE / FALSE for booleans."""
    if isinstance(x, (bool, np.bool_)):
        return "TRUE" if x else "FALSE"
    if not isinstance(x, numbers.Real):
        return str(x)
    x = float(x)
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Inf" if x > 0 else "-Inf"
    if x == 0:
        return "0"
    ref = float(f"{x:.6e}")
    d = next(d for d in range(1, 8) if float(f"{x:.{d - 1}e}") == ref)
    sci = f"{x:.{d - 1}e}"
    mant, ex = sci.split("e")
    e = int(ex)
    sci = f"{mant}e{'-' if e < 0 else '+'}{abs(e):02d}"
    fixed = f"{ref:.{max(0, d - 1 - e)}f}"
    return fixed if len(fixed) <= len(sci) else sci


def _hyper(opt) -> Dict[str, Any]:
    t = _type(opt)
    h: Dict[str, Any] = {k: getattr(opt, k) for k in _HYPER[t]}
    for k, default in _EXTRA[t]:
        v = getattr(opt, k)
        if v != default:
            h[k] = v
    return h


def state(opt: Any) -> Dict[str, Any]:
    """Optimizer.state(): ggmlR 0.8.6's state list of optimizer opt (copies). Warns (UserWarning)
    when taken mid-accumulation. Returns a dict (format, version, type, t, accum_count, names,
    slots, hyper)."""
    t = _type(opt)
    ac = opt.accum_count
    if ac > 0:
        warnings.warn(
            f"optimizer state(): taken mid-accumulation ({ac} of {opt.accumulate_steps} backward passes); "
            "the accumulated gradients live in the parameters' $grad and are not part of the state",
            UserWarning,
            stacklevel=3,
        )
    slots = {nm: list(opt._slot(s).values()) for s, nm in enumerate(_SLOTS[t])}
    return {
        "format": FORMAT,
        "version": 1,
        "type": t,
        "t": opt.t if t == "adam" else 0,
        "accum_count": ac,
        "names": list(opt.params) if opt._named else None,
        "slots": slots,
        "hyper": _hyper(opt),
    }


def _fail(msg: str) -> NoReturn:
    raise PyggmlrValueError("optimizer load_state(): " + msg)


def _is_count(v) -> bool:
    return (
        isinstance(v, numbers.Real)
        and not isinstance(v, (bool, np.bool_))
        and math.isfinite(float(v))
        and float(v) >= 0
        and float(v) == math.floor(float(v))
    )


def _shape(v) -> str:
    try:
        return "x".join(str(d) for d in np.shape(v))
    except Exception:  # noqa: BLE001 - an unshapeable object: no dims, as R's dim(NULL)
        return ""


def _num_matrix(v, shape) -> Optional[np.ndarray]:
    """v as a float64 Fortran matrix when it is numeric with exactly this shape, else None."""
    if isinstance(v, (bool, str, bytes)) or v is None:
        return None
    try:
        a = np.asarray(v)
    except Exception:  # noqa: BLE001
        return None
    if a.dtype.kind not in "iuf" or a.shape != tuple(shape):
        return None
    return np.asfortranarray(a, dtype=np.float64)


def _all_equal(cur, st) -> bool:
    """R's all.equal(cur, st) on single numbers: mean relative difference <= 1.5e-8."""
    if isinstance(cur, (bool, np.bool_)) != isinstance(st, (bool, np.bool_)):
        return False
    if not (isinstance(st, numbers.Real) and isinstance(cur, numbers.Real)):
        return cur == st
    c, s = float(cur), float(st)
    if math.isnan(c) or math.isnan(s):
        return math.isnan(c) and math.isnan(s)
    diff = abs(c - s)
    return (diff / abs(c) if c != 0 else diff) <= 1.5e-8


def _hyper_warn(opt: Any, sh: Any, stacklevel: int = 4) -> None:
    t = _type(opt)
    sh = sh if isinstance(sh, Mapping) else {}
    changed: Dict[str, Dict[str, Any]] = {}
    for k in _HYPER[t]:
        if k in sh and not _all_equal(getattr(opt, k), sh[k]):
            changed[k] = {"current": getattr(opt, k), "state": sh[k]}
    for k, default in _EXTRA[t]:
        cur, sv = getattr(opt, k), sh.get(k, default)
        if not _all_equal(cur, sv):
            changed[k] = {"current": cur, "state": sv}
    if changed:
        parts = [
            f"{k} = {r_format(v['current'])} (state {r_format(v['state'])})"
            for k, v in changed.items()
        ]
        warnings.warn(
            OptimizerHyperWarning(
                "optimizer load_state(): hyperparameters differ from the state's and are "
                "NOT restored: " + ", ".join(parts),
                changed,
            ),
            stacklevel=stacklevel,
        )


def load_state(opt: Any, st: Any) -> bool:
    """Optimizer.load_state(st): ggmlR 0.8.6's eight checks in order (PyggmlrValueError with
    ggmlR's text on the first that fails, nothing written), the hyper-parameter comparison
    (OptimizerHyperWarning), then moments and counters written at once. Returns True."""
    t = _type(opt)
    # 1-3: what it is
    if not isinstance(st, Mapping) or not (
        isinstance(st.get("format"), str) and st.get("format") == FORMAT
    ):
        _fail("not an optimizer state (from opt$state())")
    if "type" not in st and "kind" in st and isinstance(st.get("params"), list):
        load_file_state(
            opt, _check_legacy(opt, st)
        )  # a state() of pyggmlr before ggmlR 0.8.6's layout
        return True
    ver = st.get("version")
    if not (
        isinstance(ver, numbers.Integral) and not isinstance(ver, (bool, np.bool_)) and ver == 1
    ):
        _fail(
            f"unsupported state version {'NULL' if ver is None else r_format(ver)} (this ggmlR reads version 1)"
        )
    if not isinstance(st.get("type"), str) or st.get("type") != t:
        _fail(f"state is for a '{st.get('type')}' optimizer, this one is '{t}'")
    # 4: one entry per parameter in every slot
    slots = st.get("slots")
    slots = slots if isinstance(slots, Mapping) else {}
    params = list(opt.params.values())
    lists = {}
    for nm in _SLOTS[t]:
        v = slots.get(nm)
        lst = (
            list(v)
            if isinstance(v, Sequence) and not isinstance(v, (str, bytes))
            else list(v.values())
            if isinstance(v, Mapping)
            else ([] if v is None else [v])
        )
        if len(lst) != len(params):
            _fail(f"state has {len(lst)} parameters, optimizer has {len(params)}")
        lists[nm] = lst
    # 5: names, when both sides have them
    sn = st.get("names")
    if sn is not None and (
        isinstance(sn, (str, bytes, Mapping)) or not isinstance(sn, (Sequence, np.ndarray))
    ):
        _fail(f"names must be NULL or one name per parameter, got {type(sn).__name__}")
    if opt._named and sn is not None and [str(x) for x in sn] != list(opt.params):
        _fail(
            "parameter names differ from the state's (position is the key, names are the check)"
            f"\n  optimizer: {', '.join(opt.params)}\n  state:     {', '.join(str(x) for x in sn)}"
        )
    # 6: shapes and values
    vals: List[np.ndarray] = []
    for nm in _SLOTS[t]:
        for i, (p, v) in enumerate(zip(params, lists[nm])):
            a = _num_matrix(v, p.shape)
            if a is None:
                _fail(
                    f"slot '{nm}' of parameter {i + 1} has shape {_shape(v)}, expected {p.shape[0]}x{p.shape[1]}"
                )
            if not np.isfinite(a).all():
                _fail(f"slot '{nm}' of parameter {i + 1} is not finite")
            vals.append(a)
    # 7: counters
    if not (_is_count(st.get("t")) and _is_count(st.get("accum_count"))):
        _fail("t / accum_count are not counts")
    # 8: hyper-parameters are compared, never restored; the load goes on after the warning
    _hyper_warn(opt, st.get("hyper"))
    ptrs = ffi.new("double *[]", [ffi.cast("double *", a.ctypes.data) for a in vals] or 1)
    _core.check(
        lib.pg_optim_load(opt._o, ptrs, len(vals), float(st["t"]), float(st["accum_count"]))
    )
    return True


# ---- the layout of this project's model files (ag_save_model(optimizer =), ag_fit checkpoints) ----


def file_state(opt: Any) -> Dict[str, Any]:
    """The optimizer state in this project's model-file layout (kind, t, accum_count, every
    hyper-parameter, per-parameter dicts of slot arrays incl. the sum_grads accumulator, None
    when unused), for io.py."""
    t = _type(opt)
    per = []
    for i in range(lib.pg_optim_nparams(opt._o)):
        entry = {}
        for s, nm in enumerate(_LEGACY_SLOTS[t]):
            p = lib.pg_optim_state(opt._o, i, s)
            entry[nm] = None if p == NULL else _core_read(p)
        per.append(entry)
    return {
        "format": FORMAT,
        "version": 1,
        "kind": t,
        "t": opt.t,
        "accum_count": opt.accum_count,
        "hyper": {k: getattr(opt, k) for k in _LEGACY_HYPER[t]},
        "params": per,
    }


def _core_read(p):
    from .tensor import _read

    return _read(p)


def _check_legacy(opt: Any, st: Any) -> Dict[str, Any]:
    """The earlier state() layout, checked before anything is written."""
    t = _type(opt)
    if st.get("kind") != t:
        _fail(f"state is for a '{st.get('kind')}' optimizer, this one is '{t}'")
    params = list(opt.params.values())
    if len(st["params"]) != len(params):
        _fail(f"state has {len(st['params'])} parameters, optimizer has {len(params)}")
    for i, (p, entry) in enumerate(zip(params, st["params"])):
        for nm in _LEGACY_SLOTS[t]:
            v = entry.get(nm) if isinstance(entry, Mapping) else None
            if v is not None and _num_matrix(v, p.shape) is None:
                _fail(
                    f"slot '{nm}' of parameter {i + 1} has shape {_shape(v)}, expected {p.shape[0]}x{p.shape[1]}"
                )
    if not (_is_count(st.get("t", 0)) and _is_count(st.get("accum_count", 0))):
        _fail("t / accum_count are not counts")
    return st


def load_file_state(opt: Any, st: Dict[str, Any], check_only: bool = False) -> None:
    """Moments, accumulators and counters from a model file (shapes checked by io.py first):
    the core checks every value (finite, within the dtype's range, Adam's v >= 0) and the
    counters, then swaps all the slots in at once; check_only: the checks alone, nothing
    written (io.py runs them before it writes any weight)."""
    t = _type(opt)
    keep, ptrs = [], []
    for entry in st["params"]:
        for nm in _LEGACY_SLOTS[t]:
            v = entry.get(nm) if isinstance(entry, Mapping) else None
            if v is None:
                ptrs.append(NULL)
                continue
            a = np.asfortranarray(v, dtype=np.float64)  # kept alive across the C call
            keep.append(a)
            ptrs.append(ffi.cast("double *", a.ctypes.data))
    cnt = [st.get("t", 0), st.get("accum_count", 0)]
    if not all(_is_count(c) for c in cnt):
        _fail("t / accum_count are not counts")
    arr = ffi.new("double *[]", ptrs or [NULL])
    if not check_only:
        _core.check(lib.pg_optim_load_file(opt._o, arr, len(ptrs), float(cnt[0]), float(cnt[1]), 1))
        _hyper_warn(
            opt,
            {
                k: v
                for k, v in st.get("hyper", {}).items()
                if k in _HYPER[t] or k in dict(_EXTRA[t])
            },
            stacklevel=5,
        )
    _core.check(
        lib.pg_optim_load_file(
            opt._o, arr, len(ptrs), float(cnt[0]), float(cnt[1]), int(check_only)
        )
    )
