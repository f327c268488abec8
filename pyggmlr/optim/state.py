"""Optimizer state()/load_state() in ggmlR 0.8.6's layout, and the layout this project's model
files store. The tables, checks, messages and the write are the C core's (native/optim_state.c,
shared with R); this module walks the dict, converts it and raises or warns in Python."""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, Callable, Dict, List, Tuple

import numpy as np

from .. import _core
from .._core import NULL, ffi, lib
from .._host import HostValues

__all__ = ["OptimizerHyperWarning"]

_GGMLR, _LEGACY = lib.PG_OPTIM_STATE_FORM_GGMLR, lib.PG_OPTIM_STATE_FORM_LEGACY


class OptimizerHyperWarning(UserWarning):
    """load_state(): the state's hyper-parameters differ from the optimizer's (they are not
    restored); ggmlR's condition class ggmlR_opt_hyper_warning. ``changed`` maps each name to
    {"current": ..., "state": ...}."""

    def __init__(self, message: str, changed: Dict[str, Dict[str, Any]]) -> None:
        super().__init__(message)
        self.changed = changed


def _names(table: int, kind: int) -> Tuple[str, ...]:
    ps = (lib.pg_optim_name(table, kind, j) for j in itertools.count())
    return tuple(ffi.string(p).decode() for p in itertools.takewhile(lambda p: p != NULL, ps))


def state(opt: Any) -> Dict[str, Any]:
    """Optimizer.state(): ggmlR 0.8.6's state list of optimizer opt (copies). Warns (UserWarning)
    when taken mid-accumulation. Returns a dict (format, version, type, t, accum_count, names,
    slots, hyper); all but the names and the slot values are the core's (pg_optim_state_of)."""
    s = ffi.new("pg_optim_state_out *")
    _core.check(lib.pg_optim_state_of(opt._o, s))
    if s.has_note:
        warnings.warn(ffi.string(s.note).decode(), UserWarning, stacklevel=3)
    text = lambda p: ffi.string(p).decode()  # noqa: E731
    out = {k: getattr(s, k) for k in ("format", "version", "type", "t", "accum_count")}
    out.update(format=text(s.format), type=text(s.type))  # in place: the key order stays
    out["names"] = list(opt.params) if opt._named else None
    out["slots"] = {text(s.slot[j]): list(opt._slot(j).values()) for j in range(s.n_slots)}
    flag = s.hyper_is_flag
    out["hyper"] = {
        text(s.hyper_name[k]): bool(v) if flag[k] else v
        for k, v in enumerate(s.hyper_value[0 : s.n_hyper])
    }
    return out


def warn_hyper(opt: Any, d: Any, state_value: Callable[[int], Any], stacklevel: int) -> None:
    """The core's hyper-parameter comparison d (pg_optim_hyper_diff) as OptimizerHyperWarning;
    state_value(j): the state's j-th hyper-parameter as the host has it; stacklevel as the
    caller's own warnings.warn would take it."""
    changed: Dict[str, Dict[str, Any]] = {}
    for k in range(d.n):
        nm = ffi.string(d.name[k]).decode()
        dflt = bool(d.default_value[k]) if d.is_flag[k] else d.default_value[k]
        sv = state_value(d.entry[k]) if d.entry[k] >= 0 else dflt
        changed[nm] = {"current": getattr(opt, nm), "state": sv}
    if changed:
        msg = ffi.string(d.message).decode("utf-8", "replace")
        warnings.warn(OptimizerHyperWarning(msg, changed), stacklevel=stacklevel + 1)


def _slot_list(v: Any) -> List[Any]:
    """One slot's per-parameter values as a list (a sequence, a mapping's values, one value)."""
    if isinstance(v, Sequence) and not isinstance(v, (str, bytes)):
        return list(v)
    if isinstance(v, Mapping):
        return list(v.values())
    return [] if v is None else [v]


def load_state(opt: Any, st: Any) -> bool:
    """Optimizer.load_state(st): ggmlR 0.8.6's eight checks in order (PyggmlrValueError with
    ggmlR's text on the first that fails, nothing written), the hyper-parameter comparison
    (OptimizerHyperWarning), then moments and counters written at once. Returns True."""
    is_map = isinstance(st, Mapping)
    get = st.get if is_map else (lambda k, d=None: d)
    # a state() of pyggmlr before ggmlR 0.8.6's layout (kind, params): the model files' layout
    # (the rule is the core's: a None value counts as absent, as R's NULL and a JSON null there)
    has = [is_map and st.get(k) is not None for k in ("type", "kind")]
    legacy = lib.pg_optim_state_form_of(*has, is_map and isinstance(st.get("params"), list))
    legacy = legacy == _LEGACY
    # the state as the core's pg_optim_state_in, in its form; h keeps the buffers alive
    h, c = HostValues(), ffi.new("pg_optim_state_in *", lib.pg_optim_state_in_default())
    c.form, c.is_map = _LEGACY if legacy else _GGMLR, int(is_map)
    for f in ("format", "type", "t", "accum_count") + (() if legacy else ("version",)):
        h.value(getattr(c, f), get("kind" if legacy and f == "type" else f), show=f == "type")
    sh = get("hyper") if isinstance(get("hyper"), Mapping) else {}
    keys = [k for k in sh if isinstance(k, str)]
    c.hyper = vals = ffi.new("pg_host_value[]", max(len(keys), 1))
    for dst, k in zip(vals, keys):
        h.value(dst, sh[k])
        if sh[k] is None:  # a None entry is a value here (shown as None), not "not there"
            dst.kind, dst.text = lib.PG_HOST_OTHER, h.text("None")
    c.hyper_names, c.n_hyper = h.strings(keys), len(keys)
    if legacy:  # parameter-major over the file slots
        fs = _names(lib.PG_OPTIM_NAMES_FILE_SLOTS, opt._kind)
        c.slot_len[0] = len(st["params"])
        vs = [e.get(n) if isinstance(e, Mapping) else None for e in st["params"] for n in fs]
    else:
        slots = get("slots")
        slots = slots if isinstance(slots, Mapping) else {}
        lists = [_slot_list(slots.get(nm)) for nm in _names(lib.PG_OPTIM_NAMES_SLOTS, opt._kind)]
        for j, lst in enumerate(lists):
            c.slot_len[j] = len(lst)
        sn = get("names")
        if isinstance(sn, str):  # one name (a JSON "names": "w", as R's length-1 character)
            sn = [sn]
        if isinstance(sn, (Sequence, np.ndarray)) and not isinstance(sn, (str, bytes, Mapping)):
            c.names_given, c.names, c.n_names = 1, h.strings([str(x) for x in sn]), len(sn)
        elif sn is not None:
            c.names_bad = h.text(type(sn).__name__)
        if opt._named:
            c.opt_names, c.n_opt_names = h.strings(list(opt.params)), len(opt.params)
        vs = [v for lst in lists for v in lst]
    # checked and compared (the core checks the counts first), warned, then written: all or
    # nothing
    c.slots, c.n_slots = h.matrices(vs), len(vs)
    d = ffi.new("pg_optim_hyper_diff *")
    _core.check(lib.pg_optim_state_check(opt._o, c, d))
    warn_hyper(opt, d, lambda j: sh[keys[j]], stacklevel=3)
    _core.check(lib.pg_optim_state_load(opt._o, c, 0))
    return True
