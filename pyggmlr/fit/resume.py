"""ag_fit's checkpoints: what ag_model_checkpoint writes and ag_fit(resume_from=) reads, in the
layout R's fit_resume.R uses too (a model file whose extra holds the run's settings, history,
random state and callback states), so either language resumes the other's run."""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Tuple

from .._core import check, lib
from ..io.modelfile import _load_checkpoint, _save, ag_model_info

__all__: List[str] = []

# resumed alike; "weighted": True for a run with sample / class weights, else None (as before)
_SETTINGS = ("n", "batch_size", "nbatch_logical", "val_split", "shuffle", "loss", "weighted")


def save_checkpoint(fit: Any, path: str, epoch: int) -> None:
    """Model, optimizer, epoch and the run's state (fit: ag_fit's _Fit) to path."""
    cb_states: List[Any] = []
    cb_arrays: Dict[str, Any] = {}
    for i, cb in enumerate(fit.callbacks):
        st = getattr(cb, "state", None)
        if not callable(st):
            cb_states.append(None)
            continue
        js, arrays = st()
        cb_states.append(js)
        if arrays is not None:
            ps, bs = arrays
            cb_arrays.update({f"callback{i}.param.{k}": v for k, v in ps.items()})
            cb_arrays.update({f"callback{i}.buffer.{k}": v for k, v in bs.items()})
    extra = {
        "fit": {
            "settings": fit.settings,
            "history": fit.history.as_dict(),
            "rng_state": fit.stream.get_state().tolist(),
            "callbacks": cb_states,
        }
    }
    _save(fit.model, path, optimizer=fit.optimizer, epoch=epoch, extra=extra, more=cb_arrays)


def read_checkpoint(path: Any, settings: Dict[str, Any]) -> Tuple[int, Dict[str, Any]]:
    """The checkpoint's run state, checked against this run's settings by the core (its epoch,
    history and random state too). Writes nothing (the weights come later, from load_weights,
    once the run is set up: a refused checkpoint changes nothing). Returns (epoch, fit state)."""
    info = ag_model_info(path)  # a model file, checked as one
    text = json.dumps({k: settings[k] for k in _SETTINGS}).encode()
    check(lib.pg_fit_resume_check(os.fsencode(path), text, len(text)))
    return int(info["epoch"]), info["extra"]["fit"]


def load_weights(path: Any, model: Any, opt: Any) -> Dict[str, Any]:
    """The checkpoint's weights and optimizer state (all checked before the first write)."""
    return _load_checkpoint(path, model, opt)
