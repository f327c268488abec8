"""summary(model): R's keras-style table (layer, output shape, parameters, totals). Each layer's
output shape ([rows x batch], image layers' (C, H, W) by torch's formulas) and the printed table
are the core's (native/layer_shape.c), so ``str(summary(model))`` is the text R's
``print(summary(model))`` writes, byte for byte."""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

from .. import _walk
from .._core import check, ffi, lib, text
from ..errors import ArgumentError
from .module import _layer_name

__all__ = ["Summary", "summary"]


def _target_lines(model: Any) -> List[str]:
    """The lines print(model) and summary(model) add: what ag_fit recorded (R's .target_line)."""
    lines = []
    loss, classes = getattr(model, "loss_", None), getattr(model, "classes_", None)
    if isinstance(loss, str):
        lines.append(f"  loss: {loss}")
    if classes is not None:
        cl = [str(c) for c in classes]
        lines.append(
            f"  classes ({len(cl)}): " + ", ".join(cl[:10] + (["..."] if len(cl) > 10 else []))
        )
    return lines


def _print_text(layer: Any) -> str:
    """A built-in layer printed alone (the core's text, R's print): "ag_gru: gru(1, 32) (3360
    parameters, train mode)", then what ag_fit recorded."""
    kind, name = str(layer.kind).encode(), _layer_name(layer).encode()
    n = float(_count(layer, "parameters"))
    # ag_linear shows no mode (it has none to act on, and R's is a list without one)
    mode = -1 if kind == b"linear" else int(bool(layer.training))
    shown = text(lib.pg_layer_print_text, kind, name, n, mode)
    return "\n".join([shown, *_target_lines(layer)])


def _is_sequential(layer: Any) -> bool:
    return getattr(type(layer), "kind", None) == "sequential" and isinstance(
        getattr(layer, "layers", None), list
    )


def _config_json(layer: Any) -> Optional[bytes]:
    """layer.to_config() as JSON for the core; None for a layer without a (readable) one."""
    fn = getattr(layer, "to_config", None)
    if not callable(fn):
        return None
    try:
        return json.dumps(fn(), allow_nan=False).encode()
    except Exception:  # a custom layer's to_config failing must not break summary()
        return None


def _layer_state(layer: Any, st: Any) -> None:
    """st (int64_t[4]: rows, C, H, W; -1 unknown) after layer, in place (the core's rules);
    sequentials are walked here, as their layers may be custom."""
    if _is_sequential(layer):
        for sub in layer.layers:
            _layer_state(sub, st)
        return
    text = _config_json(layer)
    if text is None:
        st[0] = st[1] = st[2] = st[3] = -1
        return
    check(lib.pg_layer_shape(text, len(text), st))


def _shape_label(st: Any) -> str:
    buf = ffi.new("char[]", 160)
    n = lib.pg_layer_shape_label(st, buf, len(buf))
    check(n if n < 0 else 0)
    return ffi.string(buf).decode()


def _count(layer: Any, what: str, alt: Optional[str] = None) -> int:
    try:
        return sum(int(t.size) for _, t in _walk.items(layer, what, alt=alt, own=False))
    except Exception:  # a custom layer's parameters() failing counts nothing, as in R
        return 0


class Summary:
    """What summary(model) returns (R's summary.ag_sequential): ``title``; ``layers``, one dict
    per layer with ``layer`` (its name), ``type`` (its class), ``output_shape`` (the label:
    ``[10 x batch]``, ``[1024 x batch] (16, 8, 8)``, ``?`` where unknown), ``params`` and
    ``buffers`` (counts); ``total`` (trainable parameters), ``non_trainable`` (buffers) and
    ``model``. ``str()`` is the table R prints (print() prints it)."""

    def __init__(self, title: str, layers: List[Dict[str, Any]], model: Any) -> None:
        self.title = title
        self.layers = layers
        self.total = sum(r["params"] for r in layers)
        self.non_trainable = sum(r["buffers"] for r in layers)
        self.model = model

    def __str__(self) -> str:
        n = len(self.layers)
        keep = [ffi.new("char[]", str(r[k]).encode()) for r in self.layers for k in _COLS]
        cols = [ffi.new("const char *[]", keep[i :: len(_COLS)] or [ffi.NULL]) for i in range(3)]
        params = ffi.new("double[]", [float(r["params"]) for r in self.layers] or [0.0])
        args = (
            self.title.encode(),
            n,
            cols[0],
            cols[1],
            cols[2],
            params,
            float(self.total),
            float(self.non_trainable),
        )
        shown = text(lib.pg_summary_text, *args).rstrip("\n")
        return "\n".join([shown, *_target_lines(self.model)])

    __repr__ = __str__


_COLS = ("layer", "type", "output_shape")


def summary(model: Any) -> Summary:
    """R's summary(model): the layers of an ag_sequential (or the one layer given) with their
    output shapes, parameter counts and totals.

    Args: model: an ag_sequential, a layer, or a custom object with forward().
    Returns: a Summary; print(it) prints the table, as R's print(summary(model)) does:
    a layer's output shape is ``[rows x batch]``, with the image shape (C, H, W) after image
    layers, and ``?`` where the layer does not say (a custom layer, a convolution given no
    input_shape and no image) and after it until a layer sets the size. A model ag_fit trained
    adds its loss and class labels under the table.
    Raises: ArgumentError when model is not a model (no forward() and not callable: a number,
    a tensor, None); custom layers that fail count as unknown."""
    if not (hasattr(model, "forward") or callable(model)):
        raise ArgumentError(
            "summary: model must be an ag_sequential, a layer or an object with forward(x), "
            f"got {type(model).__name__}"
        )
    if _is_sequential(model):
        mode = "train" if getattr(model, "training", False) else "eval"
        layers = list(model.layers)
        title = f"ag_sequential ({len(layers)} layers, {mode} mode)"
    else:
        layers, title = [model], type(model).__name__
    st = ffi.new("int64_t[4]", [-1, -1, -1, -1])
    rows = []
    for layer in layers:
        _layer_state(layer, st)
        rows.append(
            {
                "layer": _layer_name(layer),
                "type": type(layer).__name__,
                "output_shape": _shape_label(st),
                "params": _count(layer, "parameters", "params"),
                "buffers": _count(layer, "buffers"),
            }
        )
    return Summary(title, rows, model)
