"""The sdist carries everything `pip install pyggmlr-x.tar.gz` needs: the C core (sources and
the cdef headers), the build script, the shipped data sets with their licence note
(pyggmlr/data/) and py.typed. Neither it nor the wheel
carries the tests, the parity harness (tests/parity) among them."""

import pathlib
import subprocess
import sys
import tarfile
import zipfile

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _modules():
    """Every .py file under pyggmlr/, as a path in the archive."""
    return {p.relative_to(ROOT).as_posix() for p in (ROOT / "pyggmlr").rglob("*.py")}


def _build(kind, out):
    cmd = [sys.executable, "-m", "build", f"--{kind}", "--no-isolation", "-o", str(out), str(ROOT)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]


def _data_files():
    """Every shipped data file (iris, the three gzip CSVs, their README), as a path in the
    archive."""
    files = {p.relative_to(ROOT).as_posix() for p in (ROOT / "pyggmlr" / "data").iterdir()}
    assert {"pyggmlr/data/letters.csv.gz", "pyggmlr/data/README.md"} <= files
    return files


def _no_harness(names):
    found = sorted(n for n in names if "parity" in n.lower() or n.startswith("tests/"))
    assert not found, found


def test_sdist_ships_the_core_and_package_data(tmp_path):
    _build("sdist", tmp_path)
    (sdist,) = tmp_path.glob("pyggmlr-*.tar.gz")
    with tarfile.open(sdist) as tf:
        names = {n.split("/", 1)[1] for n in tf.getnames() if "/" in n}
    core = {
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "native").iterdir()
        if p.suffix in (".c", ".h", ".py")
    }
    assert core and core <= names, sorted(core - names)
    for f in (
        "pyproject.toml",
        "setup.py",
        "pyggmlr/data/iris.csv",
        "pyggmlr/py.typed",
        "pyggmlr/__init__.py",
    ):
        assert f in names, f
    assert _modules() <= names, sorted(_modules() - names)  # the subpackages' too
    assert _data_files() <= names, sorted(_data_files() - names)
    _no_harness(names)


def test_wheel_holds_the_package_without_the_parity_harness(tmp_path):
    _build("wheel", tmp_path)
    (wheel,) = tmp_path.glob("pyggmlr-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for f in ("pyggmlr/__init__.py", "pyggmlr/__main__.py", "pyggmlr/data/iris.csv"):
        assert f in names, f
    assert any(n.startswith("pyggmlr/_native") for n in names)
    assert _modules() <= set(names), sorted(_modules() - set(names))  # the subpackages' too
    assert _data_files() <= set(names), sorted(_data_files() - set(names))
    _no_harness(names)
    # installed (here: unpacked) without a checkout, `python -m pyggmlr parity` says where the
    # harness lives, in one line, and fails
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(site)}
    r = subprocess.run(
        [sys.executable, "-m", "pyggmlr", "parity"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2 and r.stdout == "", (r.returncode, r.stdout, r.stderr)
    assert r.stderr.count("\n") == 1 and "tests/parity of the source checkout" in r.stderr, r.stderr
    # the loaders read the shipped data from the installed package, not from a checkout
    r = subprocess.run(
        [sys.executable, "-c", "import pyggmlr as p; print(p.load_letters()[0].shape, "
         "p.load_digits()[0].shape, p.load_breast_cancer()[0].shape)"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )  # fmt: skip
    assert r.stdout == "(16, 20000) (64, 1797) (30, 569)\n", (r.stdout, r.stderr)
