"""ggmlR's GPU-only switches and probes (0.8.6 spec §11), so ggmlR-style code runs unchanged: the
same names, checks and return values; this engine computes on the CPU, where the switches change
nothing and the probes answer "no GPU"."""

from __future__ import annotations

import contextlib
import os
from typing import Any, Dict, Iterator, Optional

from ._args import match_arg
from .errors import ArgumentError

__all__ = [
    "ag_graph_mode",
    "ag_matmul_precision",
    "ag_local_mode",
    "ggml_vulkan_available",
    "ggml_vulkan_device_count",
    "ggml_backend_dev_count",
    "ggml_vulkan_status",
]

_state: Dict[str, Any] = {
    "graph": os.environ.get("GGMLR_AG_DEFER", "").upper() in ("1", "TRUE"),
    "precision": "default",
}
_UNSET = object()
_PRECISIONS = ("default", "f32")


def _flag(x: Any) -> bool:
    return isinstance(x, bool)


def ag_graph_mode(on: Any = _UNSET, check: Optional[bool] = None) -> bool:
    """Deferred fused graphs (a GPU feature; no effect here). No argument: the current setting;
    True / False: set it and return the previous one."""
    if check is not None and not _flag(check):
        raise ArgumentError("ag_graph_mode(): `check` must be TRUE, FALSE or NULL")  # R's class
    if on is _UNSET:
        return bool(_state["graph"])
    if not _flag(on):
        raise ArgumentError("ag_graph_mode(): `on` must be TRUE or FALSE")
    prev, _state["graph"] = _state["graph"], on
    return bool(prev)


def _precision(p: Any, fn: str, arg: str) -> str:
    # match.arg's text and classes, as R's (ggmlR 0.8.6; issue 29)
    return str(match_arg(p, _PRECISIONS, fn, arg))


def ag_matmul_precision(precision: Any = _UNSET) -> str:
    """GPU matmul precision, "default" or "f32" (no effect here). No argument: the current one;
    otherwise set it and return the previous one."""
    if precision is _UNSET:
        return str(_state["precision"])
    p = _precision(precision, "ag_matmul_precision", "precision")
    prev, _state["precision"] = _state["precision"], p
    return str(prev)


def ag_local_mode(
    graph: Optional[bool] = None, matmul_precision: Optional[str] = None
) -> "contextlib.AbstractContextManager[Dict[str, Any]]":
    """``with ag_local_mode(graph=True):`` sets the modes inside the block and restores them on
    exit, normal or by an exception (R: until the calling function returns). Yields the previous
    values of those set. The arguments are checked at the call, as R's."""
    if graph is not None and not _flag(graph):
        raise ArgumentError("ag_local_mode(): `graph` must be TRUE, FALSE or NULL")
    if matmul_precision is not None:
        _precision(matmul_precision, "ag_local_mode", "matmul_precision")
    return _local_mode(graph, matmul_precision)


@contextlib.contextmanager
def _local_mode(graph: Optional[bool], matmul_precision: Optional[str]) -> Iterator[Dict[str, Any]]:
    """ag_local_mode's block, its arguments checked."""
    prev: Dict[str, Any] = {}
    if matmul_precision is not None:
        prev["matmul_precision"] = ag_matmul_precision(matmul_precision)
    if graph is not None:
        prev["graph"] = ag_graph_mode(graph)
    try:
        yield prev
    finally:
        if "matmul_precision" in prev:
            _state["precision"] = prev["matmul_precision"]
        if "graph" in prev:
            _state["graph"] = prev["graph"]


def ggml_vulkan_available() -> bool:
    """Returns False: there is no Vulkan device (pyggmlr computes on the CPU)."""
    return False


def ggml_vulkan_device_count() -> int:
    """Returns 0, the number of Vulkan devices (pyggmlr computes on the CPU)."""
    return 0


def ggml_backend_dev_count() -> int:
    """Returns 0, the number of ggml backend devices ggmlR would count (CPU-only here)."""
    return 0


def ggml_vulkan_status() -> Dict[str, Any]:
    """Prints a one-line note and returns {"available": False, "n_devices": 0, "devices": []}."""
    print("Vulkan: not available (pyggmlr computes on the CPU)")
    return {"available": False, "n_devices": 0, "devices": []}
