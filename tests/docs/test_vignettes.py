"""Every Python vignette is executable documentation: its ```python blocks run in order in one
namespace, and a broken vignette fails the suite. Blocks fenced as ```python no-run are shown
but not executed (e.g. commands that need MPI)."""

import gc
import pathlib
import re

import matplotlib
import pytest

matplotlib.use("Agg")

VIGNETTES = sorted(pathlib.Path(__file__).resolve().parents[2].joinpath("vignettes").glob("*.md"))
FENCE = re.compile(r"^```python[ \t]*(\S*)[ \t]*\n(.*?)^```", re.S | re.M)


def blocks(path):
    return [
        (m.group(2), path.read_text()[: m.start()].count("\n") + 1)
        for m in FENCE.finditer(path.read_text())
        if m.group(1) != "no-run"
    ]


@pytest.mark.parametrize("path", VIGNETTES, ids=[p.stem for p in VIGNETTES])
def test_vignette_runs(path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # files a vignette writes land in a temp dir
    gc.collect()  # an earlier vignette's namespace (a cycle through its functions) is freed first
    ns = {"__name__": f"vignette_{path.stem}"}
    code = blocks(path)
    assert code, f"{path.name} has no python blocks"
    for src, line in code:
        try:
            exec(compile(src, f"{path.name}:{line}", "exec"), ns)
        except Exception as e:  # name the block that broke
            raise AssertionError(
                f"{path.name}, block at line {line} failed: {type(e).__name__}: {e}"
            ) from e
