"""One walk over a model's tensors: its parameters or its buffers, in order, with their names.

A model is anything with parameters() (or ggmlR's params()) and optionally buffers(); where
parameters are asked for, a dict name -> tensor, a list of tensors or one tensor also serve.
The order is the container's, and results depend on it (flat buffers, MPI packing, files).
Identity is the core's tensor id: two Python handles on one tensor are the same parameter."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable, Iterable, List, Optional, Tuple, TypeVar, cast

import numpy as np

from ._args import show
from .errors import ArgumentError
from .tensor import Tensor

__all__: List[str] = []

T = TypeVar("T")


def source(obj: Any, what: str = "parameters", alt: Optional[str] = None, own: bool = True) -> Any:
    """What obj.<what>() returns (obj.<alt>() when obj has no <what> method); without either,
    obj itself (own=True: a dict or list passed in place of a model) or None."""
    fn = getattr(obj, what, None)
    if not callable(fn) and alt is not None:
        fn = getattr(obj, alt, None)
    if callable(fn):
        return fn()
    return obj if own else None


def is_model(obj: Any) -> bool:
    """A model: parameters(), or ggmlR's params() (R's list models, an ag_linear of ggmlR)."""
    return callable(getattr(obj, "parameters", None)) or callable(getattr(obj, "params", None))


def pairs(c: Any) -> List[Tuple[Any, Any]]:
    """The (key, value) entries of a container, in order: a mapping's items (keys as given), a
    tensor as ("1", t), None as nothing, any other iterable as ("1", v1), ("2", v2), ...
    Raises TypeError when c is not iterable."""
    if c is None:
        return []
    if isinstance(c, Tensor):
        return [("1", c)]
    if isinstance(c, Mapping):
        return list(c.items())
    return [(str(i + 1), v) for i, v in enumerate(c)]


def items(
    obj: Any, what: str = "parameters", alt: Optional[str] = None, own: bool = True
) -> List[Tuple[Any, Any]]:
    """pairs(source(obj, what, alt, own)): a model's parameters or buffers as (name, value)."""
    return pairs(source(obj, what, alt, own))


def unique(seq: Iterable[T], tensor: Optional[Callable[[T], Tensor]] = None) -> List[T]:
    """seq without its repeats (the same core tensor, by id; tensor(x) picks an entry's tensor),
    the first of each kept in place."""
    out: List[T] = []
    seen = set()
    for x in seq:
        k = (cast(Tensor, x) if tensor is None else tensor(x)).id
        if k not in seen:
            seen.add(k)
            out.append(x)
    return out


def tensors(obj: Any, name: str) -> List[Tensor]:
    """The tensors of a model (parameters()), a dict or an iterable, de-duplicated by identity
    (first occurrence kept), in order. ArgumentError (naming `name`) for anything else."""
    c = source(obj, alt="params")
    try:
        # a string or an array is no list (R's is.list): refused whole, not walked entry by entry
        if c is None or isinstance(c, (str, bytes, np.ndarray)):
            raise TypeError
        vals = [v for _, v in pairs(c)]
    except TypeError:
        raise ArgumentError(  # R's words (.mpi_tensors), a dict being Python's named list
            f"{name}: expected a model, a list of ag_tensors or an ag_tensor, got {type(c).__name__}"
        ) from None
    for i, t in enumerate(vals):
        if not isinstance(t, Tensor):
            raise ArgumentError(f"{name}: parameter {i + 1} is not an ag_tensor")  # as R's
    return unique(vals)


def named(obj: Any, name: str, optimizer: bool = False) -> Tuple[List[str], List[Tensor], bool]:
    """(names, tensors, named) of a model's parameters(), a dict name -> tensor (named) or any
    iterable of tensors (names "1", "2", ...), walked by position as ggmlR 0.8.6; repeats kept.
    The refusals are R's texts (issue 29), an optimizer's ggmlR's (positions, is.list's text)."""
    c = source(obj, alt="params")
    try:
        # a string or an array is no list (R's is.list: c(1, 2) is refused whole; issue 29)
        if c is None or isinstance(c, (str, bytes, np.ndarray)):
            raise TypeError
        kv = pairs(c)
    except TypeError:
        shown = show(c)  # R's .arg_show (np.float64(2) as 2.0)
        raise ArgumentError(
            f"{name}: is.list(params) is not TRUE (params must be a list of ag_tensors or a "
            f"model, got {shown})"
            if optimizer
            else f"{name}: params must be a list of ag_tensors, got {shown}"
        ) from None
    names, vals = [str(k) for k, _ in kv], [v for _, v in kv]
    for i, (n, t) in enumerate(zip(names, vals)):
        if not isinstance(t, Tensor):
            where = str(i + 1) if optimizer else repr(n)
            raise ArgumentError(f"{name}: parameter {where} is not an ag_tensor")
    return names, vals, isinstance(c, Mapping)
