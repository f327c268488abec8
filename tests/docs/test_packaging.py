"""The sdist carries everything `pip install pyggmlr-x.tar.gz` needs: the C core (sources and
the cdef headers), the build script, the iris data and py.typed."""
import pathlib
import subprocess
import sys
import tarfile

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_sdist_ships_the_core_and_package_data(tmp_path):
    r = subprocess.run([sys.executable, "-m", "build", "--sdist", "--no-isolation", "-o", str(tmp_path), str(ROOT)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    (sdist,) = tmp_path.glob("pyggmlr-*.tar.gz")
    with tarfile.open(sdist) as tf:
        names = {n.split("/", 1)[1] for n in tf.getnames() if "/" in n}
    core = {p.relative_to(ROOT).as_posix() for p in (ROOT / "native").iterdir() if p.suffix in (".c", ".h", ".py")}
    assert core and core <= names, sorted(core - names)
    for f in ("pyproject.toml", "setup.py", "pyggmlr/data/iris.csv", "pyggmlr/py.typed", "pyggmlr/__init__.py"):
        assert f in names, f
