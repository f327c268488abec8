"""Gradient checkpointing: ``ag_checkpoint(fn, *args, **kwargs)`` (ggmlR 0.8.5).

Under a recording tape the segment ``fn(*args, **kwargs)`` runs without recording, so its
activations are freed at once; the tape keeps one node (the tensor arguments and the value).
When backward() reaches that node, the core opens a private tape and calls back here: the
random stream is set to the state the forward pass started from, fn runs again (recorded), and
the core walks the replay into backward()'s own gradients. The caller's inputs and the
segment's parameters get exactly the gradients a plain tape gives them, in backward()'s map and
in ``.grad``. Outside a tape, ``fn(*args)`` is returned as is.
"""

from __future__ import annotations

from typing import Any, Dict, Tuple

from . import _core
from ._core import NULL, ffi, lib
from .tape import _pending, _raise_pending
from .tensor import Tensor, _wrap

__all__ = ["ag_checkpoint"]

# segments (their replays) alive on some tape, by their handle's address: the core holds only
# the void *
_live: Dict[int, Tuple[Any, Any]] = {}


def _rng_state() -> Any:
    st = ffi.new("int32_t[]", lib.PG_RNG_STATE_LEN)
    _core.check(lib.pg_rng_get_state(lib.pg_rng_current(), st))
    return st


def _rng_load(st: Any) -> None:
    _core.check(lib.pg_rng_set_state(lib.pg_rng_current(), st, lib.PG_RNG_STATE_LEN))


@ffi.def_extern(name="pyggmlr_host_bw")
def _host_bw(ctx):
    try:
        ffi.from_handle(ctx)()  # ag_checkpoint's replay
        return 0
    except BaseException as e:  # the core must unwind first: raised again by backward()
        _pending.exc = e
        lib.pg_host_fail(
            lib.PG_STATUS_ERR_STATE,
            f"ag_checkpoint: the segment raised {type(e).__name__} when replayed in backward(): {e}".encode(
                "utf-8", "replace"
            ),
        )
        return -1


@ffi.def_extern(name="pyggmlr_host_free")
def _host_free(ctx):
    _live.pop(int(ffi.cast("uintptr_t", ctx)), None)


def ag_checkpoint(*args: Any, **kwargs: Any) -> Any:
    """Gradient checkpointing: ``ag_checkpoint(fn, *args, **kwargs)`` returns
    ``fn(*args, **kwargs)``; under a tape its activations are not kept but rebuilt in
    backward() by running fn again with the same random state (a dropout mask is the same).
    Gradients are the plain tape's, bit for bit, in backward()'s map and ``.grad`` alike; the
    random stream advances as a plain call would. Nests; raises ArgumentError when the first
    argument is not a function. fn must be reproducible (a replay runs it later). The ag_fit
    callback that saves checkpoints is ag_model_checkpoint(path, every)."""
    if not args or not callable(args[0]):  # the refusals' texts are the core's, R's too
        _core.check(lib.pg_ckpt_fail(NULL, 0))
    fn, args = args[0], args[1:]
    if not lib.pg_tape_enabled():
        return fn(*args, **kwargs)
    state = _rng_state()
    # the node's inputs: the tensor arguments, positional ones first; dead handles raise here
    handles = [a._handle() for a in (*args, *kwargs.values()) if isinstance(a, Tensor)]

    def replay() -> None:
        """Run fn again from the forward's random state, on the core's private tape; the
        caller's random state comes back afterwards, also on error."""
        caller = _rng_state()
        try:
            _rng_load(state)
            y = fn(*args, **kwargs)
            if not isinstance(y, Tensor):
                _core.check(lib.pg_ckpt_fail(type(y).__name__.encode(), 1))
            if lib.pg_host_replay(y._handle()) != 0:
                _raise_pending()  # a nested segment's exception goes on unchanged
                _core.raise_last()
        finally:
            _rng_load(caller)

    stashed = lib.pg_tape_stash_depth()
    try:  # a failed call leaves the random stream where it was
        try:
            _core.check(lib.pg_tape_stash())  # fn runs on an empty tape that does not record
            value = fn(*args, **kwargs)
        finally:
            lib.pg_tape_unstash_to(stashed)  # ours, if it was set aside, whatever way fn left
        if not isinstance(value, Tensor):
            _core.check(lib.pg_ckpt_fail(type(value).__name__.encode(), 0))
        vh = value._handle()
        h = ffi.new_handle(replay)
        _live[int(ffi.cast("uintptr_t", h))] = (h, replay)  # popped by pyggmlr_host_free
        ins = ffi.new("pg_tensor *[]", handles) if handles else NULL
        return _wrap(
            lib.pg_host_record(
                vh, ins, len(handles), b"checkpoint", lib.pyggmlr_host_bw, h, lib.pyggmlr_host_free
            )
        )
    except BaseException:
        _rng_load(state)
        raise
