"""Attribute registration for Module subclasses, as torch.nn.Module does it: a subclass that
holds layers, parameter tensors, or lists / tuples / dicts of them as attributes gets them in
parameters(), buffers(), children() (train/eval), state_dict() and repr without declaring them.

Built-in layers and ag_sequential override parameters() with ggmlR's names, so their order and
names are unchanged; a user class with its own parameters() keeps it. The walk is over the
instance's ``__dict__``, which Python keeps in first-assignment order (torch's order too).
Names are torch's dotted paths: ``fc1.W``, ``blocks.0.b``, ``heads.key.W_q``.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Dict, List, Mapping, Tuple

from .._walk import items as _items
from ..tensor import Tensor
from .state import ag_load_state_dict, ag_state_dict

__all__: List[str] = []


_ACTIVE: set = set()  # ids of the modules being walked (cycle guard)


def _layer_name(layer):
    name = getattr(layer, "name", None)
    if isinstance(name, str) and name:
        return name
    return type(layer).__name__


def _is_param(v: Any) -> bool:
    """A registered parameter: a leaf tensor that requires grad (ag_param), not an
    intermediate result or a constant the module happens to keep."""
    return isinstance(v, Tensor) and v._p is not None and v.requires_grad and v.is_leaf


def _is_layer(v: Any) -> bool:
    if isinstance(v, StateMethods):  # a Module (nn/base.py): the one class deriving from it
        return True
    if isinstance(v, (type, Tensor)):
        return False
    return callable(getattr(v, "forward", None)) and (
        callable(getattr(v, "parameters", None)) or callable(getattr(v, "params", None))
    )


def _walk(prefix: str, v: Any, out: List[Tuple[str, str, Any]], depth: int) -> None:
    """Collect ("param", name, tensor) and ("layer", name, layer) rows below value v."""
    if depth > 32:
        return
    if _is_param(v):
        out.append(("param", prefix, v))
    elif _is_layer(v):
        out.append(("layer", prefix, v))
    elif isinstance(v, (list, tuple)):
        for i, e in enumerate(v):
            _walk(f"{prefix}.{i}", e, out, depth + 1)
    elif isinstance(v, Mapping):
        for k, e in v.items():
            _walk(f"{prefix}.{k}", e, out, depth + 1)


def registered(obj: Any) -> List[Tuple[str, str, Any]]:
    """(kind, name, value) rows of obj's attributes: kind "param" or "layer"."""
    out: List[Tuple[str, str, Any]] = []
    for k, v in vars(obj).items():  # first-assignment order
        _walk(k, v, out, 0)
    return out


def _layer_items(layer: Any, what: str) -> List[Tuple[str, Tensor]]:
    """A layer's parameters (parameters(), else ggmlR's params()) or buffers, (name, tensor)."""
    return _items(layer, what, alt="params" if what == "parameters" else None, own=False)


def collect(obj: Any, what: str) -> "OrderedDict[str, Tensor]":
    """Every registered parameter (what="parameters") or buffer ("buffers") of obj in
    assignment order, a child's named ``<attr>.<its name>``; a tensor reached twice (a shared
    layer) is kept once, at its first place, as torch does."""
    out: OrderedDict[str, Tensor] = OrderedDict()
    if id(obj) in _ACTIVE:  # a layer that holds its parent: do not loop
        return out
    ids = set()
    _ACTIVE.add(id(obj))
    try:
        rows = registered(obj)
        for kind, name, v in rows:
            if kind == "param":
                items = [(name, v)] if what == "parameters" else []
            else:
                items = [(f"{name}.{n}", t) for n, t in _layer_items(v, what)]
            for n, t in items:
                if id(t) not in ids:
                    ids.add(id(t))
                    out[n] = t
    finally:
        _ACTIVE.discard(id(obj))
    return out


def children(obj: Any) -> List[Any]:
    """The registered sub-layers of obj (each once), in assignment order."""
    seen, out = set(), []
    for kind, _, v in registered(obj):
        if kind == "layer" and id(v) not in seen and v is not obj:
            seen.add(id(v))
            out.append(v)
    return out


def named_children(obj: Any) -> List[Tuple[str, Any]]:
    """(name, layer) pairs of the registered sub-layers, in assignment order."""
    return [(n, v) for kind, n, v in registered(obj) if kind == "layer" and v is not obj]


def describe(obj: Any, head: str) -> str:
    """head, then one indented line per registered child: ``  (fc1): linear(4, 16, relu)``;
    a child's own multi-line repr is indented below its name."""
    kids = named_children(obj)
    if not kids:
        return head
    lines = [head]
    for n, v in kids:
        sub = repr(v).split("\n") if _has_children(v) else [_layer_name(v)]
        lines.append(f"  ({n}): {sub[0]}")
        lines += ["  " + s for s in sub[1:]]
    return "\n".join(lines)


def _has_children(v: Any) -> bool:
    fn = getattr(v, "children", None)
    try:
        return bool(fn()) if callable(fn) else False
    except Exception:  # a custom layer's children() failing must not break print(model)
        return False


class StateMethods:
    """state_dict() / load_state_dict() of every Module (torch's method names over ggmlR's
    functions)."""

    def state_dict(self) -> Dict[str, Any]:
        """A copy of the weights as plain data: ag_state_dict(self) (ggmlR 0.8.6's format)."""
        return ag_state_dict(self)

    def load_state_dict(self, state: Any, strict: bool = True) -> Any:
        """Write a state dict into this module in place: ag_load_state_dict(self, state,
        strict). Returns self (torch returns the missing / unexpected keys; here strict=True
        raises on any difference instead). Raises what ag_load_state_dict raises."""
        return ag_load_state_dict(self, state, strict=strict)
