"""Memory you can trust: the C core's counters and the memory report of a tape or a compiled step.

Every number comes from the C core's allocator, which counts each tensor storage it allocates
(by category) with current and peak bytes, and counts live objects:
:func:`ag_memory_stats`, :func:`ag_memory_peak`, :func:`ag_memory_reset_peak`,
:func:`ag_live_objects`, :func:`ag_memory_trim` - the raw counters; :class:`MemoryReport`, the
report ag_tape_memory and CompiledStep.memory() return (estimate.py, compile.py: above this).
"""

from __future__ import annotations

from typing import Any, Dict

from .. import _core
from .._core import NULL, ffi, lib

__all__ = [
    "ag_memory_stats",
    "ag_memory_peak",
    "ag_memory_reset_peak",
    "ag_live_objects",
    "ag_memory_trim",
    "MemoryReport",
]

_MB = 1024.0**2
_CATEGORIES = ("param", "grad", "optim", "saved", "other")  # enum pg_mem_category order


class MemoryReport(dict):
    """A dict whose keys are also attributes (``r.bytes_total`` == ``r["bytes_total"]``),
    the Python form of ggmlR's returned list. ``str()`` gives the printed report."""

    __slots__ = ("_text",)
    _text: str

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __str__(self):
        return self._text

    def by_op_table(self, top=None):
        """The per-op table as text (``op nodes MB`` columns), all rows unless top is given."""
        rows = self.get("by_op")
        if rows is None:
            raise AttributeError("by_op_table(): this report has no per-op table")
        rows = rows if top is None else rows[:top]
        lines = ["    op                     nodes        MB"]
        lines += [f"    {r['op']:<20s} {r['nodes']:7d}  {r['mb']:8.2f}" for r in rows]
        return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# raw counters


def _raw_stats():
    out = ffi.new("pg_memory_counts *")
    _core.check(lib.pg_memory_stats(out))
    return out


def ag_memory_stats() -> Dict[str, Any]:
    """The allocator's counters: for each category (``param``, ``grad``, ``optim``, ``saved``,
    ``other``) and for the ``total``, ``{"current": bytes, "peak": bytes}`` (a category's peak is
    its own maximum since the last :func:`ag_memory_reset_peak`; the total's peak is the
    maximum of the sum); plus ``live_tensors``, ``live_gradmaps``, ``live_optimizers`` and
    ``tape_nodes`` (this thread's tape), and ``cached``: freed buffers (and the core's small
    tensor and node structs) kept for reuse by requests of the same size (not held by any tensor, so not in the totals; see
    :func:`ag_memory_trim`). Bytes are tensor storage; node structs are not counted."""
    v = _raw_stats()
    peaks = ffi.new("int64_t[5]")
    _core.check(lib.pg_memory_category_peaks(peaks, 5))
    res = {name: {"current": v.current[i], "peak": peaks[i]} for i, name in enumerate(_CATEGORIES)}
    res["total"] = {"current": v.total, "peak": v.peak}
    res["live_tensors"], res["live_gradmaps"] = v.live_tensors, v.live_gradmaps
    res["live_optimizers"], res["tape_nodes"] = v.live_optims, v.tape_nodes
    res["cached"] = lib.pg_memory_cached()
    return res


def ag_memory_trim() -> int:
    """Give the core's cache of freed buffers back to the system (training loops reuse them
    step after step, so this is only worth it when a large model is gone). Returns the bytes
    released."""
    n = lib.pg_memory_cached()
    lib.pg_memory_trim()
    return n


def ag_memory_peak() -> int:
    """Peak bytes held by the core (all tensor storage) since the last ag_memory_reset_peak()."""
    return _raw_stats().peak


def ag_memory_reset_peak() -> int:
    """Start a new peak window: the peak becomes the bytes held now. Returns that value."""
    lib.pg_memory_reset_peak()
    return _raw_stats().peak


def ag_live_objects() -> int:
    """Live objects of the core: tensors + gradient maps + optimizers (a leak check: the count
    returns to its starting value once everything is deleted and garbage-collected)."""
    return lib.pg_live_objects()


# ---------------------------------------------------------------------------------------------
# ag_tape_memory


def _memory_report(fill, cap, top, quiet, compiled=None, buffers=None, ndropout=0):
    """The report of a tape or (compiled: its build) a compiled graph: fill(totals, labels,
    nodes, nbytes, cap) is the core's walk (returns the op rows, < 0 an error); buffers() adds
    the graph's planned-buffer fields after by_op; ndropout: the graph's dropout nodes."""
    totals = ffi.new("pg_memory_totals *")
    labels = ffi.new("const char *[]", cap)
    nodes = ffi.new("int64_t[]", cap)
    nbytes = ffi.new("int64_t[]", cap)
    nrows = fill(totals, labels, nodes, nbytes, cap)
    if nrows < 0:
        _core.raise_last(-nrows)
    rep = MemoryReport(
        nodes=totals.nodes,
        bytes_total=totals.bytes_total,
        bytes_snapshots=totals.bytes_snapshots,
        bytes_fields=totals.bytes_fields,
        bytes_inputs=totals.bytes_inputs,
    )
    if compiled is not None:
        rep["bytes_gradients"] = totals.bytes_gradients
    rep["by_op"] = [
        {
            "op": ffi.string(labels[i]).decode(),
            "nodes": nodes[i],
            "mb": nbytes[i] / _MB,
            "bytes": nbytes[i],
        }
        for i in range(nrows)
    ]
    if buffers is not None:
        rep.update(buffers())
    # the printed text is the core's (R prints the same)
    build = NULL if compiled is None else compiled.encode()
    args = (totals, build, ndropout, labels, nodes, nbytes, nrows, top)
    rep._text = _core.text(lib.pg_memory_report_text, *args)
    if not quiet:
        print(rep._text)
    return rep
