"""ag_fit's argument checks, its callback list and its validation pass (loop.py keeps the loop)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, List, Tuple

from .._args import check_flag, check_int, check_real
from .._core import lib
from .util import kind_fail

__all__: List[str] = []


def check_args(
    nepoch: Any, batch_size: Any, shuffle: Any, nbatch_logical: Any, val_split: Any, opt_params: Any
) -> Tuple[int, int, bool, int, float]:
    """(nepoch, batch_size, shuffle, nbatch_logical, val_split), or the error naming ag_fit and
    the argument (the micro-batches per logical batch: the set-up's accum)."""
    # R's .arg_int rule (ag_predict's and ag_dataloader's too): the wrong kind is an
    # ArgumentError, a fraction or a value out of range a PyggmlrValueError
    nepoch = check_int(nepoch, "ag_fit", "nepoch", 1)
    batch_size = check_int(batch_size, "ag_fit", "batch_size", 1)
    shuffle = check_flag(shuffle, "ag_fit", "shuffle")
    nbl = batch_size if nbatch_logical is None else nbatch_logical
    nbl = check_int(nbl, "ag_fit", "nbatch_logical", 1)
    # the rest of the rules (a multiple of batch_size, val_split in [0, 1)) are the core's
    # (pg_fit_new), one text in both languages
    val_split = check_real(val_split, "ag_fit", "val_split")
    if opt_params is not None and not callable(opt_params):
        kind_fail(lib.PG_FIT_KIND_OPT_PARAMS_FN, "")
    return nepoch, batch_size, shuffle, nbl, val_split


def make_callbacks(callbacks: Any) -> List[Any]:
    """Callback objects (anything with on_epoch_end) as they are, functions wrapped."""
    if callable(callbacks) or hasattr(callbacks, "on_epoch_end"):
        callbacks = (callbacks,)  # one callback, as R's ag_fit(callbacks = cb)
    try:
        callbacks = list(callbacks)
    except TypeError:
        kind_fail(lib.PG_FIT_KIND_CALLBACKS, type(callbacks).__name__)
    cbs = []
    for cb in callbacks:
        if hasattr(cb, "on_epoch_end") or callable(cb):  # a function: its on_epoch_end
            cbs.append(cb if hasattr(cb, "on_epoch_end") else SimpleNamespace(on_epoch_end=cb))
        else:
            kind_fail(lib.PG_FIT_KIND_CALLBACK, type(cb).__name__)
    return cbs
