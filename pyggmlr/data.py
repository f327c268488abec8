"""Mini-batches (ag_dataloader) and the shipped data sets (iris, breast cancer, digits, letters,
sunspots).

Data are column-major like everything else: x is [features, n], y is [outputs, n] (or a vector
of n class ids). ``col_major=False`` takes row-major [n, features] data and transposes it."""

from __future__ import annotations

import csv
import gzip
import io
from importlib import resources
from typing import Any, List, Optional, Tuple

import numpy as np

from . import _core
from ._args import as_numeric, check_flag, check_int
from ._core import check, lib
from .errors import ShapeError, StateError
from .random import Generator, _seed_int
from .tensor import Tensor, ag_tensor

__all__ = [
    "ag_dataloader",
    "load_breast_cancer",
    "load_digits",
    "load_iris",
    "load_letters",
    "load_sunspots",
]


class Batch(dict):
    """One mini-batch: ``batch["x"]`` / ``batch.x`` (and ``y`` when the loader has targets)."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def _as_data(v, name, col_major):
    if isinstance(v, Tensor):
        dtype = v.dtype
        a = v.numpy()
    else:
        dtype = None
        a = as_numeric(v, "ag_dataloader", name)
    if a.ndim <= 1:  # a vector (a number too, as R's): one value (e.g. a class id) per sample
        a = a.reshape(1, -1)
    elif a.ndim == 2:
        if not col_major:
            a = a.T
    else:
        got = "x".join(map(str, a.shape))  # R's text: "got a 2x2x2 array"
        raise ShapeError(f"ag_dataloader: {name} must be a matrix or a vector, got a {got} array")
    return np.asfortranarray(a), dtype


class ag_dataloader:
    """Mini-batch iterator over the columns (samples) of x (and y).

    ggmlR's methods: has_next(), next_batch() (a dict-like with "x" and "y" tensors),
    reset() (reshuffles when shuffle), epoch() (reset, then the list of all batches),
    n_batches(). Iterating (``for b in loader``) is one epoch: it resets first.

    drop_last=True (ggmlR) yields only complete batches; False also yields the last partial one
    (the count is the core's pg_batch_count, as R's ag_dataloader(drop_last =)).
    Each reset() with shuffle draws R's sample(n) (ggmlR's draw) from the current random stream
    (seeded by ggml_set_seed, as set.seed in R), or from a stream of the loader's own seeded as
    set.seed(seed) would be when ``seed`` is given (the default stream is then left alone). Batches are non-grad tensors of the default dtype
    (or of x's dtype when x is a tensor).
    """

    def __init__(
        self,
        x: Any,
        y: Any = None,
        batch_size: int = 32,
        shuffle: bool = True,
        col_major: bool = True,
        drop_last: bool = True,
        seed: Optional[int] = None,
    ) -> None:
        col_major = check_flag(col_major, "ag_dataloader", "col_major")
        self.x, self._xdtype = _as_data(x, "x", col_major)
        self.y: Optional[np.ndarray] = None
        self._ydtype: Optional[str] = None
        if y is not None:
            self.y, self._ydtype = _as_data(y, "y", col_major)
        self.n = self.x.shape[1]
        if self.y is not None:  # the core's text and row-major hint, Python's spellings
            check(lib.pg_check_samples(b"ag_dataloader", *self.x.shape, *self.y.shape, b"x.T",
                                       b"y.T", b"col_major=False"))  # fmt: skip
        self.batch_size = check_int(batch_size, "ag_dataloader", "batch_size", 1)
        self.shuffle = check_flag(shuffle, "ag_dataloader", "shuffle")
        self.drop_last = check_flag(drop_last, "ag_dataloader", "drop_last")
        seed = None if seed is None else _seed_int(seed, "ag_dataloader")  # R's e$seed: the int
        self._gen = None if seed is None else Generator(seed)
        self.seed = seed  # ag_fit(loader) runs on it when it has no seed of its own (fit/data.py)
        self.order = np.arange(self.n)
        self.pos = 0
        self.reset()

    def _rng(self):
        if self._gen is not None:
            return self._gen
        return Generator.current()

    def reset(self):
        """Start a new epoch: a fresh permutation when shuffle (0-based here: R's sample(n) - 1),
        position back to the start."""
        self.order = self._rng().sample_int(self.n) - 1 if self.shuffle else np.arange(self.n)
        self.pos = 0
        return self

    def n_batches(self):
        """Batches per epoch: n // batch_size with drop_last, else ceil(n / batch_size) (the
        core's rule, pg_batch_count; R's loader calls it too)."""
        nb = lib.pg_batch_count(b"ag_dataloader", self.n, self.batch_size, self.drop_last)
        if nb < 0:
            _core.raise_last(-nb)
        return int(nb)

    def _end(self):
        """The samples an epoch covers: order[0 .. end - 1], batch_size at a time."""
        return min(self.n, self.n_batches() * self.batch_size)

    def has_next(self):
        """Whether next_batch() has another batch in this epoch."""
        return self.pos < self._end()

    def next_batch(self):
        """The next batch: a Batch with x [features, batch_size] (and y) tensors (fewer columns
        for the last one without drop_last); raises StateError when the epoch is exhausted
        (call reset())."""
        end = self._end()
        if self.pos >= end:
            raise StateError("ag_dataloader: No more batches. Call reset() to start a new epoch.")
        idx = self.order[self.pos : min(self.pos + self.batch_size, end)]
        self.pos += len(idx)
        b = Batch(x=ag_tensor(self.x[:, idx], dtype=self._xdtype))
        if self.y is not None:
            b["y"] = ag_tensor(self.y[:, idx], dtype=self._ydtype)
        return b

    def epoch(self):
        """reset(), then all batches of the epoch as a list."""
        return list(iter(self))

    def __iter__(self):
        self.reset()
        while self.has_next():
            yield self.next_batch()

    def __len__(self):
        return self.n_batches()

    def __repr__(self):
        return (
            f"ag_dataloader | n={self.n} | batch_size={self.batch_size} | n_batches={self.n_batches()} | "
            f"shuffle={'TRUE' if self.shuffle else 'FALSE'}"
        )

    __str__ = __repr__


def load_iris() -> Tuple[np.ndarray, np.ndarray, List[str]]:
    """Fisher's iris data (shipped with the package).

    Returns (x, y, classes): x a float64 [4, 150] matrix (sepal length, sepal width, petal
    length, petal width; one column per flower), y int64 0-based class ids (150,), classes the
    species names in id order ("setosa", "versicolor", "virginica")."""
    text = resources.files("pyggmlr").joinpath("data/iris.csv").read_text(encoding="utf-8")
    rows = list(csv.reader(io.StringIO(text)))
    body = [r for r in rows[1:] if r]
    classes = sorted({r[4] for r in body})
    x = np.asfortranarray(np.array([[float(v) for v in r[:4]] for r in body], dtype=np.float64).T)
    y = np.array([classes.index(r[4]) for r in body], dtype=np.int64)
    return x, y, classes


# The gzip CSVs in pyggmlr/data/ (R reads the same files: r/inst/extdata/ links to them): a
# header of feature names then "label", one sample a row. Sources and licences: data/README.md.
_CLASSES = {
    "breast_cancer": ["malignant", "benign"],  # scikit-learn's order: y matches its target
    "digits": [str(d) for d in range(10)],
    "letters": [chr(c) for c in range(ord("A"), ord("Z") + 1)],
}


def _load_shipped(name: str) -> Tuple[np.ndarray, np.ndarray, List[str], List[str]]:
    raw = resources.files("pyggmlr").joinpath(f"data/{name}.csv.gz").read_bytes()
    lines = gzip.decompress(raw).decode("ascii").splitlines()
    features = lines[0].split(",")[:-1]
    rows = [ln.split(",") for ln in lines[1:] if ln]
    classes = list(_CLASSES[name])
    ids = {c: i for i, c in enumerate(classes)}
    # float() of each text (numpy's str -> float64) is correctly rounded, like R's read.csv
    x = np.asfortranarray(np.array([r[:-1] for r in rows], dtype=np.float64).T)
    y = np.array([ids[r[-1]] for r in rows], dtype=np.int64)
    return x, y, classes, features


def load_breast_cancer() -> Tuple[np.ndarray, np.ndarray, List[str], List[str]]:
    """Breast cancer Wisconsin (diagnostic), UCI (CC BY 4.0), as scikit-learn ships it.

    Returns (x, y, classes, features): x a float64 [30, 569] matrix (one column per tumour),
    y int64 0-based class ids (569,), classes ["malignant", "benign"] (ids 0 and 1, as
    scikit-learn's target: 212 malignant, 357 benign), features the 30 feature names
    ("mean radius", ..., "worst fractal dimension")."""
    return _load_shipped("breast_cancer")


def load_digits() -> Tuple[np.ndarray, np.ndarray, List[str], List[str]]:
    """Handwritten digits, UCI optdigits' test set (CC BY 4.0), as scikit-learn ships it.

    Returns (x, y, classes, features): x a float64 [64, 1797] matrix of 8x8 images with
    pixels 0..16 (feature k is row k // 8, column k % 8: ``x[:, i].reshape(8, 8)``), y int64
    class ids (1797,) equal to the digit, classes ["0", ..., "9"], features "pixel_<row>_<col>"."""
    return _load_shipped("digits")


def load_letters() -> Tuple[np.ndarray, np.ndarray, List[str], List[str]]:
    """Letter recognition, UCI (CC BY 4.0), in UCI's row order.

    Returns (x, y, classes, features): x a float64 [16, 20000] matrix of integer features
    0..15 (one column per letter image), y int64 0-based class ids (20000,), classes
    ["A", ..., "Z"], features UCI's attribute names ("x-box", ..., "yegvx")."""
    return _load_shipped("letters")


def load_sunspots() -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Monthly mean sunspot numbers, January 1749 to September 2013 (WDC-SILSO, Royal
    Observatory of Belgium), the values of R's ``datasets::sunspot.month`` (R 4.2).

    Returns (x, year, month): x float64 (3177,) the monthly means (one decimal), year and
    month int64 (3177,) (month 1..12). Python only: R has ``sunspot.month``, the same numbers
    bit for bit. Licence and source: data/README.md."""
    text = resources.files("pyggmlr").joinpath("data/sunspot_month.csv").read_text("ascii")
    rows = [ln.split(",") for ln in text.splitlines()[1:] if ln]
    x = np.array([r[2] for r in rows], dtype=np.float64)  # correctly rounded, as R's scan
    year = np.array([int(r[0]) for r in rows], dtype=np.int64)
    month = np.array([int(r[1]) for r in rows], dtype=np.int64)
    return x, year, month
