"""ag_fit's class labels (issue 31): y given as labels (an array of strings, or a pandas
Categorical / category Series, duck-typed: pandas is never imported) becomes 0-based class ids
and the labels' list, as R's factor y does: the labels are the categories in their order, else
the sorted distinct strings (code-point order; R's factor levels follow the locale's collation).
With "binary_cross_entropy" / "bce_with_logits" two labels are 0 and 1 (the second is 1, as
glm's)."""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

import numpy as np

from .._core import check, ffi, lib
from .._host import HostValues, dims
from ..errors import PyggmlrValueError

__all__: List[str] = []


def _categorical(y: Any) -> Optional[Tuple[np.ndarray, List[str]]]:
    """(codes, categories as str) of a pandas Categorical or category Series, else None."""
    cat = getattr(y, "cat", None)  # a Series of dtype "category"
    src = cat if cat is not None and hasattr(cat, "categories") else y
    if not (hasattr(src, "categories") and hasattr(src, "codes")):
        return None
    return np.asarray(src.codes, dtype=np.int64).ravel(), [_r_str(c) for c in src.categories]


def _r_str(c: Any) -> str:
    """A category as R's as.character writes a factor level (issue 29: 1.0 is "1", 1e5 "1e+05"):
    a float with 15 significant digits, fixed unless the scientific form is narrower (the
    core's pg_format_r rule, which R's texts use)."""
    if not isinstance(c, (float, np.floating)):
        return str(c)
    buf = ffi.new("char[]", 400)
    return ffi.string(lib.pg_format_r_digits(buf, 400, float(c), 15)).decode()


def _strings(y: Any) -> Optional[np.ndarray]:
    """y as a 1-D object array when it holds labels (str values; None / NaN missing), else None."""
    a: np.ndarray
    if isinstance(y, (list, tuple)):
        if not y or not any(isinstance(v, str) for v in y):
            return None
        a = np.empty(len(y), dtype=object)
        a[:] = list(y)
    else:
        if not (isinstance(y, (np.ndarray, str)) or hasattr(y, "__array__")):
            return None
        a = np.asarray(y)
        if a.dtype.kind not in "USO":
            return None
        if a.dtype.kind == "O" and not any(isinstance(v, str) for v in a.ravel()):
            return None
        check(lib.pg_labels_shape(*dims(a)))  # one label a sample: the core's rule, as R's
        a = a.ravel().astype(object)
    for v in a:
        if not (isinstance(v, str) or v is None or (isinstance(v, float) and np.isnan(v))):
            raise PyggmlrValueError(
                f"ag_fit: labels y mix strings with {type(v).__name__} values ({v!r:.40}); give "
                "all labels as strings, or 0-based class ids"
            )
    return a


def category_ids(y: Any) -> Any:
    """A Categorical / category Series as its codes, float64 0-based ids (missing: NaN), as R's
    as.integer(factor) - 1 (ag_accuracy; ag_evaluate on a model without classes_); else y."""
    cat = _categorical(y)
    if cat is None:
        return y
    ids = cat[0].astype(np.float64)
    ids[ids < 0] = np.nan
    return ids


def encode_labels(y: Any) -> Tuple[Any, Optional[List[str]]]:
    """(y, classes): labels as 0-based ids (float64, one per sample; -1 missing) and their list;
    anything else as given with classes None. validation_data's labels are coded with y's
    (code_labels, fit/data.py); check_labels checks them later, where R does."""
    cat = _categorical(y)
    if cat is not None:
        codes, classes = cat
    else:
        a = _strings(y)
        if a is None:
            return y, None
        h = HostValues()  # keeps the strings alive while the core reads them
        arr = h.strings(a)  # the classes in code-point order: the core's (as R's)
        buf = np.empty((2, a.size), dtype=np.int64)  # each label's class id, each class's first
        p = ffi.cast("int64_t *", buf.ctypes.data)
        k = lib.pg_labels_classes(arr, a.size, p, p + a.size)
        check(-k if k < 0 else 0)
        codes, classes = buf[0], [a[i] for i in buf[1, :k]]
    return codes.astype(np.float64), classes  # -1: missing


def check_labels(ids: np.ndarray, classes: List[str], loss: str) -> None:
    """Missing labels, then the loss: the core's rules and texts, at R's place (its .fit_targets:
    after the loss name, the metrics and the weights are checked; issue 29)."""
    p_ids = ffi.cast("double *", ids.ctypes.data)
    check(
        lib.pg_fit_labels_check(loss.encode("utf-8", "replace"), len(classes), p_ids, ids.size, 0)
    )


def code_labels(
    y: Any, classes: List[str], fn: str, what: str, whose: str, validation: bool = False
) -> Optional[np.ndarray]:
    """Labels y (strings or a Categorical) as float64 0-based ids in classes (known labels: y's in
    ag_fit, the model's classes_ in ag_evaluate); None when y holds no labels. validation:
    ag_fit's validation_data y, whose missing labels are the core's text (as R's)."""
    cv = _categorical(y)
    av = None if cv is not None else _strings(y)
    if cv is None and av is None:
        return None
    vals: List[Any] = (
        [cv[1][c] if c >= 0 else None for c in cv[0]] if cv is not None else list(av)  # type: ignore[arg-type]
    )
    # missing labels (validation), then unknown ones: the core's rules and texts, as R's
    h = HostValues()
    arr, enc = h.strings(vals), h.strings(classes)
    ids = np.empty(len(vals), dtype=np.float64)
    check(
        lib.pg_labels_code(
            fn.encode(), what.encode(), whose.encode(), arr, len(vals), enc, len(classes),
            int(validation), ffi.cast("double *", ids.ctypes.data),
        )
    )  # fmt: skip
    return ids
