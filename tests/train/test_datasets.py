"""The shipped data sets (pyggmlr/data/*.csv.gz, read by load_breast_cancer, load_digits and
load_letters in both languages): shapes, layout, class counts, known values, and the same
numbers as scikit-learn's loaders (skipped with a reason where scikit-learn is absent). The R
package's copies are links to these files (one copy in the repository)."""

import gzip
import pathlib

import numpy as np
import pytest

import pyggmlr as pg

try:
    import sklearn.datasets as skd
except ImportError:  # the comparisons skip and say so; shapes, counts and known values run
    skd = None
needs_sklearn = pytest.mark.skipif(
    skd is None, reason="scikit-learn is not installed: the comparison with its loaders is skipped"
)

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = pathlib.Path(pg.__file__).resolve().parent / "data"
FILES = ("breast_cancer.csv.gz", "digits.csv.gz", "letters.csv.gz")

DIGIT_COUNTS = [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]
# table(mlbench's LetterRecognition$lettr), A..Z
LETTER_COUNTS = [
    789,
    766,
    736,
    805,
    768,
    775,
    773,
    734,
    755,
    747,
    739,
    761,
    792,
    783,
    753,
    803,
    783,
    758,
    748,
    796,
    813,
    764,
    752,
    787,
    786,
    734,
]


def _check_layout(x, y, classes, features, p, n):
    assert x.shape == (p, n) and x.dtype == np.float64 and x.flags.f_contiguous
    assert y.shape == (n,) and y.dtype == np.int64
    assert y.min() == 0 and y.max() == len(classes) - 1
    assert len(features) == p and len(set(features)) == p
    assert np.isfinite(x).all()


def test_breast_cancer_shape_counts_and_first_sample():
    x, y, classes, features = pg.load_breast_cancer()
    _check_layout(x, y, classes, features, 30, 569)
    assert classes == ["malignant", "benign"]
    assert np.bincount(y).tolist() == [212, 357]
    assert features[0] == "mean radius" and features[10] == "radius error"
    assert features[-1] == "worst fractal dimension"
    # wdbc.data's first tumour (ID 842302, M)
    assert y[0] == 0
    assert x[:4, 0].tolist() == [17.99, 10.38, 122.8, 1001.0]
    assert x[-1, 0] == 0.1189


def test_digits_shape_counts_and_first_image():
    x, y, classes, features = pg.load_digits()
    _check_layout(x, y, classes, features, 64, 1797)
    assert classes == [str(d) for d in range(10)]
    assert np.bincount(y).tolist() == DIGIT_COUNTS
    assert features[0] == "pixel_0_0" and features[9] == "pixel_1_1"
    assert set(np.unique(x)) <= set(range(17))
    img = x[:, 0].reshape(8, 8)  # feature k is row k // 8, column k % 8
    assert y[0] == 0
    assert img[0].tolist() == [0, 0, 5, 13, 9, 1, 0, 0]
    assert img[:, 0].sum() == 0  # a zero: its first column is empty


def test_letters_shape_counts_and_uci_order():
    x, y, classes, features = pg.load_letters()
    _check_layout(x, y, classes, features, 16, 20000)
    assert classes == [chr(c) for c in range(65, 91)]
    assert np.bincount(y).tolist() == LETTER_COUNTS
    assert features == [
        "x-box",
        "y-box",
        "width",
        "high",
        "onpix",
        "x-bar",
        "y-bar",
        "x2bar",
        "y2bar",
        "xybar",
        "x2ybr",
        "xy2br",
        "x-ege",
        "xegvy",
        "y-ege",
        "yegvx",
    ]
    assert set(np.unique(x)) <= set(range(16))
    # letter-recognition.data's first lines: T,2,8,3,5,1,8,13,0,6,6,10,8,0,8,0,8 then I, D, N, G
    assert "".join(classes[i] for i in y[:5]) == "TIDNG"
    assert x[:, 0].tolist() == [2, 8, 3, 5, 1, 8, 13, 0, 6, 6, 10, 8, 0, 8, 0, 8]
    assert x[:, 19999].tolist() == [4, 9, 6, 6, 2, 9, 5, 3, 1, 8, 1, 8, 2, 7, 2, 8]  # the last, A
    assert classes[y[19999]] == "A"


def test_each_call_returns_fresh_arrays():
    x, y, classes, _ = pg.load_digits()
    x[:] = -1
    y[:] = 3
    classes.append("junk")
    x2, y2, classes2, _ = pg.load_digits()
    assert x2.min() == 0 and np.bincount(y2).tolist() == DIGIT_COUNTS and len(classes2) == 10


@needs_sklearn
def test_breast_cancer_equals_scikit_learn():
    s = skd.load_breast_cancer()
    x, y, classes, features = pg.load_breast_cancer()
    assert np.array_equal(x, s.data.T) and np.array_equal(y, s.target)
    assert classes == list(s.target_names) and features == list(s.feature_names)


@needs_sklearn
def test_digits_equal_scikit_learn():
    s = skd.load_digits()
    x, y, classes, features = pg.load_digits()
    assert np.array_equal(x, s.data.T) and np.array_equal(y, s.target)
    assert classes == [str(t) for t in s.target_names] and features == list(s.feature_names)
    assert np.array_equal(x[:, 5].reshape(8, 8), s.images[5])


def test_files_are_reproducible_gzip_csv():
    """mtime 0 in each gzip header (scripts/make-datasets.py rebuilds them byte for byte) and a
    header naming the features and the label."""
    for name in FILES:
        raw = (DATA / name).read_bytes()
        assert raw[:2] == b"\x1f\x8b" and raw[4:8] == b"\0\0\0\0", name
        assert gzip.decompress(raw).split(b"\n", 1)[0].endswith(b",label"), name
    readme = (DATA / "README.md").read_text()
    for name in FILES:
        assert f"`{name}`" in readme
    assert "CC BY 4.0" in readme


@pytest.mark.skipif(not (ROOT / "r" / "inst").is_dir(), reason="not a checkout (no r/)")
def test_r_package_links_to_the_same_files():
    """One copy in the repository: r/inst/extdata/<file> is a link to pyggmlr/data/<file>
    (R CMD build and R CMD INSTALL copy its content)."""
    for name in FILES + ("README.md",):
        link = ROOT / "r" / "inst" / "extdata" / name
        assert link.is_symlink(), f"{link} must be a link to ../../../pyggmlr/data/{name}"
        assert str(link.readlink()) == f"../../../pyggmlr/data/{name}"
        assert link.read_bytes() == (ROOT / "pyggmlr" / "data" / name).read_bytes()
