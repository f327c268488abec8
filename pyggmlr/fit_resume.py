"""ag_fit's checkpoints: what ag_model_checkpoint writes and ag_fit(resume_from=) reads, in the
layout R's fit_resume.R uses too (a model file whose extra holds the run's settings, history,
random state and callback states), so either language resumes the other's run."""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

from ._core import lib
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
    """The checkpoint's run state, checked against this run's settings; its history and random
    state are checked too. Writes nothing (the weights come later, from load_weights, once the
    run is set up: a refused checkpoint changes nothing). Returns (epoch, fit state)."""
    from .fit_history import History
    from .io import ag_model_info
    from .random import Generator

    info = ag_model_info(path)
    extra = info["extra"]
    fs = extra.get("fit") if isinstance(extra, dict) else None
    if (
        not isinstance(fs, dict)
        or not isinstance(fs.get("settings"), dict)
        or info["epoch"] is None
    ):
        raise PyggmlrValueError(f"ag_fit: {path!r} is not an ag_fit checkpoint (no training state)")
    saved = fs["settings"]
    for k in _SETTINGS:
        if saved.get(k) != settings[k]:
            raise PyggmlrValueError(
                f"ag_fit: cannot resume: {k} was {saved.get(k)!r} in the checkpoint, now {settings[k]!r}"
            )
    if not (_seed_ok(saved.get("seed")) and _state_ok(saved.get("split_state"))):
        raise PyggmlrValueError(
            f"ag_fit: {path!r} holds an unusable random-stream state (settings 'seed' / "
            f"'split_state': None, or an integer / {lib.PG_RNG_STATE_LEN} 32-bit integers)"
        )
    h = fs.get("history")
    ok = isinstance(h, dict) and all(
        isinstance(v, list)
        and all(x is None or (isinstance(x, (int, float)) and not isinstance(x, bool)) for x in v)
        for k, v in h.items()
        if k not in ("stopped_epoch", "best_epoch")
    )
    try:
        History.from_dict(h) if ok else None
        Generator(0).set_state(fs["rng_state"])  # a throwaway stream: the check alone
    except (TypeError, ValueError, KeyError):
        ok = False
    if not ok:
        raise PyggmlrValueError(
            f"ag_fit: {path!r} holds an unusable training state (history or random stream)"
        )
    return int(info["epoch"]), fs


def _is_int32(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and -(2**31) <= v < 2**31


def _seed_ok(v: Any) -> bool:
    return v is None or _is_int32(v)


def _state_ok(v: Any) -> bool:
    """None, or a whole stream state (the core reads PG_RNG_STATE_LEN values from it)."""
    return v is None or (
        isinstance(v, list) and len(v) == lib.PG_RNG_STATE_LEN and all(map(_is_int32, v))
    )


def load_weights(path: Any, model: Any, opt: Any) -> Dict[str, Any]:
    """The checkpoint's weights and optimizer state (all checked before the first write)."""
    from .io import _load_checkpoint

    return _load_checkpoint(path, model, opt)
