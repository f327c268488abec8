"""Rebuild the shipped data sets in pyggmlr/data/ (run once by a maintainer, never at run time).

Sources (read locally, nothing is downloaded): scikit-learn's copies of UCI's breast cancer
(Wisconsin diagnostic) and optdigits test set, and R's mlbench copy of UCI's letter recognition
data (`Rscript` with mlbench installed), and R's own `datasets::sunspot.month` (a plain CSV of
year, month and the value to one decimal, as R prints it). Each file is a gzip CSV: a header of feature names and
`label`, one sample a row, the label last; gzip with mtime 0 so a rebuild is byte-identical.
Usage: python scripts/make-datasets.py   (from the repository root)"""

from __future__ import annotations

import csv
import gzip
import io
import os
import pathlib
import subprocess

import sklearn

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "pyggmlr" / "data"
SK = pathlib.Path(os.path.dirname(sklearn.__file__)) / "datasets" / "data"

# scikit-learn's feature names (sklearn.datasets.load_breast_cancer().feature_names)
_BC_BASE = [
    "radius",
    "texture",
    "perimeter",
    "area",
    "smoothness",
    "compactness",
    "concavity",
    "concave points",
    "symmetry",
    "fractal dimension",
]
BC_FEATURES = (
    [f"mean {b}" for b in _BC_BASE]
    + [f"{b} error" for b in _BC_BASE]
    + [f"worst {b}" for b in _BC_BASE]
)
DIGIT_FEATURES = [f"pixel_{r}_{c}" for r in range(8) for c in range(8)]
# UCI's attribute names for letter-recognition.data (mlbench writes '.' for '-')
LETTER_FEATURES = [
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


def write(name: str, header, rows) -> None:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    with (
        open(OUT / name, "wb") as f,
        gzip.GzipFile(filename="", mode="wb", fileobj=f, mtime=0, compresslevel=9) as g,
    ):
        g.write(buf.getvalue().encode("ascii"))


def breast_cancer() -> None:
    lines = (SK / "breast_cancer.csv").read_text().splitlines()
    n, p, *names = lines[0].split(",")  # "569,30,malignant,benign": target 0 = malignant
    rows = []
    for ln in lines[1:]:
        v = ln.split(",")
        assert len(v) == int(p) + 1
        rows.append(v[:-1] + [names[int(v[-1])]])  # the values' text exactly as UCI wrote them
    assert len(rows) == int(n)
    write("breast_cancer.csv.gz", BC_FEATURES + ["label"], rows)


def digits() -> None:
    with gzip.open(SK / "digits.csv.gz", "rt") as f:
        rows = [[str(int(float(t))) for t in ln.split(",")] for ln in f.read().splitlines()]
    assert len(rows) == 1797 and all(len(r) == 65 for r in rows)
    write("digits.csv.gz", DIGIT_FEATURES + ["label"], rows)


def letters() -> None:
    r = (
        "data(LetterRecognition, package = 'mlbench'); d <- LetterRecognition; "
        "write.table(cbind(d[, -1], label = as.character(d$lettr)), stdout(), sep = ',', "
        "quote = FALSE, row.names = FALSE, col.names = FALSE)"
    )
    text = subprocess.run(["Rscript", "-e", r], check=True, capture_output=True, text=True).stdout
    rows = [ln.split(",") for ln in text.splitlines()]
    assert len(rows) == 20000 and all(len(v) == 17 for v in rows)
    # UCI's own order: letter-recognition.data begins T, I, D, N, G
    assert [v[-1] for v in rows[:5]] == ["T", "I", "D", "N", "G"]
    write("letters.csv.gz", LETTER_FEATURES + ["label"], rows)


def sunspots() -> None:
    r = (
        "x <- sunspot.month; stopifnot(all(x == round(x, 1))); "
        "write.table(data.frame(year = floor(time(x) + 1e-9), month = cycle(x), "
        "sunspots = sprintf('%.1f', as.numeric(x))), stdout(), sep = ',', quote = FALSE, "
        "row.names = FALSE)"
    )
    text = subprocess.run(["Rscript", "-e", r], check=True, capture_output=True, text=True).stdout
    assert text.startswith("year,month,sunspots\n1749,1,58.0\n") and text.count("\n") == 3178
    (OUT / "sunspot_month.csv").write_text(text, encoding="ascii")


if __name__ == "__main__":
    breast_cancer()
    digits()
    letters()
    sunspots()
