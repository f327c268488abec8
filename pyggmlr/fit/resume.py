"""ag_fit's checkpoints: what ag_model_checkpoint writes and ag_fit(resume_from=) reads. The
layout (a model file whose extra holds the run's settings, history, random state and callback
states, and the callbacks' tensors) is the core's (native/fit_ckpt.c, fit_resume.c), R's too, so
either language resumes the other's run; this converts and calls the callbacks' own code."""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List

import numpy as np

from .._core import check, ffi, lib, text
from .._host import HostValues
from ..io.check import to_json
from ..io.modelfile import _load, _save, model_info
from .history import _KEYS, History, _doubles, _num

__all__: List[str] = []


def save_checkpoint(fit: Any, path: str, epoch: int) -> None:
    """Model, optimizer, epoch and the run's state (fit: ag_fit's _Fit) to path."""
    states, arrays = [], {}
    for i, cb in enumerate(fit.callbacks):
        js, arr = _state_form(cb.state() if callable(getattr(cb, "state", None)) else None)
        states.append(None if js is None else to_json(js, "extra"))  # refused in the core's words
        for kind, d in zip((lib.PG_FIT_CKPT_PARAM, lib.PG_FIT_CKPT_BUFFER), arr or ()):
            arrays.update(
                {text(lib.pg_fit_ckpt_tensor_name, i, kind, k.encode()): v for k, v in d.items()}
            )
    h, hv = fit.history, HostValues()  # hv keeps the texts (ASCII: JSON's, the core's names)
    extra = text(
        lib.pg_fit_ckpt_extra,
        text(lib.pg_fit_setup_settings, fit.setup._p).encode(),
        _doubles([getattr(h, k) for k in _KEYS + tuple(h.metrics)]),
        len(h.epoch),
        len(h.metrics),
        hv.strings(h.metrics),
        _num(h.stopped_epoch),
        _num(h.best_epoch),
        ffi.new("int32_t[]", fit.stream.get_state().tolist()),
        len(states),
        hv.strings(states),
    )
    _save(fit.model, path, optimizer=fit.optimizer, epoch=epoch, extra_text=extra, more=arrays)


def _state_form(st: Any) -> Any:
    """A callback's state() as a checkpoint keeps it: (json, arrays): the built-ins' tuple as it
    is, any other value (a JSON-able dict) the state itself without tensors (R's the same)."""
    pair = isinstance(st, tuple) and len(st) == 2 and isinstance(st[1], (tuple, type(None)))
    return st if pair else (st, None)  # a user's (3, 4) is a state, not (json, arrays)


class Checkpoint:
    """A checkpoint's run state as the core hands it out (checked against this run and by the
    callbacks' check_state, nothing written): epoch, rng_state, history and the callbacks'
    states."""

    def __init__(self, path: Any, setup: Any, callbacks: List[Any]):
        self.path, h = path, ffi.new("pg_fit_ckpt **")
        model_info(path, "ag_fit: resume_from")  # a model file, checked as one
        # checked against the run's settings; the run takes its seed and split state (the core's)
        check(lib.pg_fit_setup_resume(setup._p, os.fsencode(path), h))
        setup._get()
        d = json.loads(text(lib.pg_fit_ckpt_state_json, ffi.gc(h[0], lib.pg_fit_ckpt_free)))
        self.epoch, self.rng_state, self.states = d["epoch"], d["rng_state"], d["callbacks"]
        self.history = History.from_dict(d["history"])
        for cb, st in zip(callbacks, self.states):  # the callbacks' saved states too
            if st is not None and callable(getattr(cb, "check_state", None)):
                cb.check_state(st)

    def load_weights(self, model: Any, opt: Any) -> Dict[int, Any]:
        """The checkpoint's weights and optimizer state (all checked before the first write);
        returns the callbacks' arrays: {callback index: (params, buffers)}."""
        _, arrays = _load(self.path, model=model, optimizer=opt, quiet_hyper=True, need_epoch=True)
        more: Dict[int, Any] = {}
        i, kind, rest = ffi.new("int64_t *"), ffi.new("int *"), ffi.new("int64_t *")
        for k, a in arrays.items():
            if lib.pg_fit_ckpt_tensor_parse(k.encode(), i, kind, rest):
                name = k.encode()[rest[0] :].decode()
                more.setdefault(i[0], ({}, {}))[kind[0]][name] = np.asfortranarray(a)
        return more

    def load_callbacks(self, callbacks: List[Any], arrays: Dict[int, Any]) -> None:
        for i, (cb, st) in enumerate(zip(callbacks, self.states)):
            if st is not None and callable(getattr(cb, "load_state", None)):  # R's is.function
                a = arrays.get(i)  # the callback's tensors too when the checkpoint has some
                cb.load_state(st) if a is None else cb.load_state(st, a)
