"""ag_fit's checkpoints: what ag_model_checkpoint writes and ag_fit(resume_from=) reads, in the
layout R's fit_resume.R uses too (a model file whose extra holds the run's settings, history,
random state and callback states), so either language resumes the other's run."""
from __future__ import annotations

from typing import Any, Dict, List, Tuple

from .errors import PyggmlrValueError

__all__: List[str] = []

_SETTINGS = ("n", "batch_size", "nbatch_logical", "val_split", "shuffle", "loss")


def save_checkpoint(fit: Any, path: str, epoch: int) -> None:
    """Model, optimizer, epoch and the run's state (fit: ag_fit's _Fit) to path."""
    from .io import _save
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
    extra = {"fit": {"settings": fit.settings, "history": fit.history.as_dict(),
                     "rng_state": fit.stream.get_state().tolist(), "callbacks": cb_states}}
    _save(fit.model, path, optimizer=fit.optimizer, epoch=epoch, extra=extra, more=cb_arrays)


def load_checkpoint(path: Any, model: Any, opt: Any, settings: Dict[str, Any]) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """The checkpoint's run state, checked against this run's settings before the weights and
    the optimizer are loaded (a refused checkpoint changes nothing). Returns (the loaded
    checkpoint, its fit state)."""
    from .io import _load_checkpoint, ag_model_info
    extra = ag_model_info(path)["extra"]
    fs = extra.get("fit") if isinstance(extra, dict) else None
    if not isinstance(fs, dict) or not isinstance(fs.get("settings"), dict):
        raise PyggmlrValueError(f"ag_fit: {path!r} is not an ag_fit checkpoint (no training state)")
    saved = fs["settings"]
    for k in _SETTINGS:
        if saved.get(k) != settings[k]:
            raise PyggmlrValueError(f"ag_fit: cannot resume: {k} was {saved.get(k)!r} in the checkpoint, now {settings[k]!r}")
    return _load_checkpoint(path, model, opt), fs
