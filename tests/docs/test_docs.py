"""Documentation that can rot is checked here: every public name has a real docstring, README's
examples run as written (Python here, R through Rscript when the R package is installed), the
R blocks of the migration guide run, and the error messages a newcomer meets first say what
went wrong and how to fix it."""

import gc
import importlib
import inspect
import pathlib
import pkgutil
import re
import shutil
import subprocess

import numpy as np
import pytest

import pyggmlr as pg

ROOT = pathlib.Path(__file__).resolve().parents[2]
MIN_DOC = 30  # characters: more than a restatement of the name


def _public_modules():
    """The modules under pyggmlr/ (subpackages' too, as "fit.loop"), but private ones (a part
    of the path starting with "_")."""
    out = []
    for m in pkgutil.walk_packages(pg.__path__, "pyggmlr."):
        rel = m.name[len("pyggmlr.") :]
        if not any(part.startswith("_") for part in rel.split(".")):
            out.append(rel)
    return out


PUBLIC_MODULES = _public_modules()


def _public_objects():
    """Everything `from pyggmlr import *` gives, plus the public functions and classes defined
    at module level in every public pyggmlr module."""
    ns = {}
    exec("from pyggmlr import *", ns)
    objs = {
        f"pyggmlr.{k}": v
        for k, v in ns.items()
        if not k.startswith("_") and not inspect.ismodule(v)
    }
    for name in PUBLIC_MODULES:
        mod = importlib.import_module(f"pyggmlr.{name}")
        for k, v in vars(mod).items():
            if (
                not k.startswith("_")
                # bound methods too: pyggmlr.random's functions are the current stream's
                and (inspect.isfunction(v) or inspect.ismethod(v) or inspect.isclass(v))
                and v.__module__ == mod.__name__
            ):
                objs[f"{mod.__name__}.{k}"] = v
    return objs


OBJECTS = _public_objects()


def test_public_api_is_large_enough_to_mean_something():
    assert len(OBJECTS) > 150
    for name in ("pyggmlr.ag_fit", "pyggmlr.ag_tensor", "pyggmlr.Tensor", "pyggmlr.r.call"):
        assert name in OBJECTS


@pytest.mark.parametrize("name", sorted(n for n, o in OBJECTS.items() if callable(o)))
def test_public_callable_has_docstring(name):
    obj = OBJECTS[name]
    doc = inspect.getdoc(obj) or ""
    assert len(doc) >= MIN_DOC, (
        f"{name} needs a docstring (arguments, shapes, return, errors); has {doc!r}"
    )


def _methods():
    """Public methods and properties of the exported classes (those of `from pyggmlr import *`),
    as (class, attribute name) pairs."""
    out = {}
    ns = {}
    exec("from pyggmlr import *", ns)
    for cname, cls in ns.items():
        if (
            cname.startswith("_")
            or not inspect.isclass(cls)
            or not cls.__module__.startswith("pyggmlr")
        ):
            continue
        for klass in cls.__mro__:
            if not klass.__module__.startswith("pyggmlr"):
                continue
            for k, v in vars(klass).items():
                if k.startswith("_") or not (inspect.isfunction(v) or isinstance(v, property)):
                    continue
                out.setdefault(f"{cls.__name__}.{k}", (cls, k))
    return out


METHODS = _methods()


@pytest.mark.parametrize("name", sorted(METHODS))
def test_public_method_has_docstring(name):
    cls, attr = METHODS[name]
    doc = (
        inspect.getdoc(getattr(cls, attr)) or ""
    )  # an override inherits its base method's docstring
    assert len(doc) >= 12, f"{name} needs a docstring; has {doc!r}"


TYPED_MODULES = (
    "tensor",
    "tape",
    "fit.loop",
    "data",
    "graph.memory",
    "graph.estimate",
    "io.modelfile",
    "io.save",
    "random",
    "gradcheck",
    "optim.optimizer",
    "_core",
    "ops",
    "ops_select",
    "optim.sched",
    "gpu",
    "nn.modules",
    "distributed",
    "parallel.mpi",
    "r",
    "graph.compile",
    "graph.capture",
    "nn.state",
    "fit.plan",
    "attention",
    "optim.state",
)
TYPED_MODULES += ("ops_loss",)
TYPED_MODULES += ("checkpoint", "nn.layers")
TYPED_MODULES += ("fit.progress", "fit.util", "fit.history", "fit.callbacks", "fit.resume")
TYPED_MODULES += ("parallel.sync", "fit.predict", "fit.evaluate", "parallel.replicas")
TYPED_MODULES += ("io.check", "nn.scaling")
TYPED_MODULES += ("nn.recurrent",)
TYPED_MODULES += ("nn.module", "tensor_index", "fit.data")
TYPED_MODULES += ("nn.base",)
TYPED_MODULES += ("fit.weights",)
TYPED_MODULES += ("fit.labels",)
TYPED_MODULES += ("nn.pooling",)
TYPED_MODULES += ("conv", "nn.conv")
TYPED_MODULES += ("nn.resize",)
TYPED_MODULES += ("nn.summary",)


def _module_of(o):
    """The module that defines o, relative to the package ("fit.loop"; "" outside it)."""
    m = getattr(o, "__module__", "") or ""
    return m[len("pyggmlr.") :] if m.startswith("pyggmlr.") else ""


def _typed_objects():
    """Public callables of the typed modules, each once (``pyggmlr.ag_fit`` rather than
    ``pyggmlr.fit.ag_fit``; module-only names such as ``pyggmlr.r.call`` included)."""
    out = {}
    for n in sorted(OBJECTS, key=lambda n: (n.count("."), n)):
        o = OBJECTS[n]
        if callable(o) and _module_of(o) in TYPED_MODULES and all(o is not v for v in out.values()):
            out[n] = o
    return out


TYPED = _typed_objects()
METHOD_TYPED_MODULES = (
    "ops",
    "nn.modules",
    "nn.base",
    "distributed",
    "parallel.mpi",
    "parallel.sync",
    "parallel.replicas",
    "r",
    "graph.compile",
)


def _missing_hints(fn):
    sig = inspect.signature(fn)
    return [
        p
        for p, v in sig.parameters.items()
        if p not in ("self", "cls")
        and v.annotation is inspect.Parameter.empty
        and v.kind not in (v.VAR_POSITIONAL, v.VAR_KEYWORD)
    ]


def test_typed_list_covers_every_public_module():
    pkgs = {
        m.name[len("pyggmlr.") :] for m in pkgutil.walk_packages(pg.__path__, "pyggmlr.") if m.ispkg
    }
    mods = set(PUBLIC_MODULES) - pkgs  # a subpackage's __init__ only re-exports
    untyped = mods - set(TYPED_MODULES) - {"errors"}  # exception classes only
    assert not untyped, f"public modules without type hints: {sorted(untyped)}"
    assert {
        "pyggmlr.ag_matmul",
        "pyggmlr.ag_relu",
        "pyggmlr.ag_linear",
        "pyggmlr.r.call",
        "pyggmlr.ag_compile",
        "pyggmlr.dp_train",
    } <= set(TYPED)


@pytest.mark.parametrize("name", sorted(TYPED))
def test_public_signature_has_type_hints(name):
    obj = TYPED[name]
    fn = obj.__init__ if inspect.isclass(obj) else getattr(obj, "__func__", obj)
    if not inspect.isfunction(fn):  # a class without its own __init__
        return
    missing = _missing_hints(fn)
    assert not missing, f"{name}: parameters without type hints: {missing}"
    if not inspect.isclass(obj):
        assert inspect.signature(fn).return_annotation is not inspect.Signature.empty, (
            f"{name}: no return type hint"
        )


def _typed_methods():
    """Public methods and properties written in the class bodies of the modules typed down to
    their methods (the older typed modules have hints on their functions and constructors)."""
    out = {}
    for n, cls in TYPED.items():
        if not inspect.isclass(cls) or _module_of(cls) not in METHOD_TYPED_MODULES:
            continue
        for k, v in vars(cls).items():
            if k.startswith("_") and k not in ("__init__", "__call__"):
                continue
            fn = v.fget if isinstance(v, property) else v
            if inspect.isfunction(fn) and fn.__qualname__.startswith(cls.__qualname__ + "."):
                out[f"{n}.{k}"] = fn
    return out


TYPED_METHODS = _typed_methods()


@pytest.mark.parametrize("name", sorted(TYPED_METHODS))
def test_public_method_has_type_hints(name):
    fn = TYPED_METHODS[name]
    assert not _missing_hints(fn), f"{name}: parameters without type hints: {_missing_hints(fn)}"
    assert inspect.signature(fn).return_annotation is not inspect.Signature.empty, (
        f"{name}: no return type hint"
    )


def test_hinted_signatures_resolve():
    """The hints are real types, not strings that name nothing: typing.get_type_hints evaluates
    every annotation of the newly typed modules (``from __future__ import annotations`` keeps
    them as strings until then)."""
    import typing

    for obj in {**TYPED, **TYPED_METHODS}.values():
        if _module_of(obj) in METHOD_TYPED_MODULES:
            fn = obj.__init__ if inspect.isclass(obj) else obj
            if inspect.isfunction(fn):
                typing.get_type_hints(fn)  # raises NameError for an unresolvable hint


def test_py_typed_ships():
    assert (ROOT / "pyggmlr" / "py.typed").is_file()
    assert "py.typed" in (ROOT / "pyproject.toml").read_text()


# ---------------------------------------------------------------------------------------------
# README and the migration guide's R code run as written


def _fenced(path, lang):
    return re.findall(rf"^```{lang}[ \t]*\n(.*?)^```", path.read_text(), re.S | re.M)


def test_readme_python_example_runs(tmp_path, monkeypatch, capsys):
    blocks = _fenced(ROOT / "README.md", "python")
    assert len(blocks) == 1
    monkeypatch.chdir(tmp_path)
    ns = {}
    exec(compile(blocks[0], "README.md", "exec"), ns)
    out = capsys.readouterr().out.split()
    assert float(out[0]) >= 0.9  # the validation accuracy it prints
    assert int(out[1]) > 4 * 131 * 4  # estimate: weights, gradients, Adam moments, ...
    loaded = pg.ag_load_model(tmp_path / "iris.safetensors")
    x = ns["x"]
    assert np.array_equal(pg.ag_predict(loaded, x), pg.ag_predict(ns["model"], x))


def _rscript_with_package():
    if shutil.which("Rscript") is None:
        return None, "Rscript is not installed"
    p = subprocess.run(
        ["Rscript", "-e", "library(pyggmlr)"], capture_output=True, text=True, timeout=120
    )
    if p.returncode != 0:
        return None, "the R package pyggmlr is not installed (bash scripts/install-r-package.sh)"
    return "Rscript", None


def _run_r(code, tmp_path):
    rscript, why = _rscript_with_package()
    if rscript is None:
        pytest.skip(why)
    script = tmp_path / "block.R"
    script.write_text(code)
    p = subprocess.run(
        [rscript, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout


def test_readme_r_example_runs(tmp_path):
    blocks = _fenced(ROOT / "README.md", "r")
    assert len(blocks) == 1
    out = _run_r(blocks[0], tmp_path)  # Rscript prints the last line's value: the accuracy
    m = re.search(r"^\[1\] (\S+)\s*$", out, re.M)
    assert m, out
    assert float(m.group(1)) > 0.95


def test_migration_guide_r_blocks_run(tmp_path):
    blocks = _fenced(ROOT / "vignettes" / "05-migrating-from-ggmlR.md", "r")
    ggmlr = [b for b in blocks if "library(ggmlR)" in b]
    ours = [b for b in blocks if "library(pyggmlr)" in b]
    assert len(ggmlr) == 1 and len(ours) == 1
    # the pyggmlr script is the ggmlR script with only the library line changed
    assert ours[0].replace("library(pyggmlr)", "library(ggmlR)") == ggmlr[0]
    _run_r(ours[0] + '\ncat("ok", accuracy, "\\n")\n', tmp_path)


# ---------------------------------------------------------------------------------------------
# errors a newcomer meets first


def test_matmul_error_names_both_shapes_and_the_dimensions():
    a, b = pg.ag_tensor(np.ones((2, 3))), pg.ag_tensor(np.ones((4, 5)))
    with pytest.raises(pg.ShapeError) as e:
        pg.ag_matmul(a, b)
    msg = str(e.value)
    assert "ag_matmul" in msg and "[2x3]" in msg and "[4x5]" in msg
    assert "ncol(A) = 3 must equal nrow(B) = 4" in msg


def test_matmul_error_suggests_the_transpose_that_fits():
    with pytest.raises(pg.ShapeError, match=r"did you mean ag_matmul\(ag_transpose\(A\), B\)"):
        pg.ag_matmul(pg.ag_tensor(np.ones((2, 3))), pg.ag_tensor(np.ones((2, 3))))


def _model():
    pg.ggml_set_seed(0)
    return pg.ag_sequential(pg.ag_linear(4, 16, "relu"), pg.ag_linear(16, 3))


def test_linear_layer_hints_at_row_major_input():
    x, _, _ = pg.load_iris()
    model = _model()
    with pytest.raises(pg.ShapeError) as e:
        model.forward(pg.ag_tensor(x.T))  # [150, 4]: one row per flower
    msg = str(e.value)
    # the core's text, R's too (issue 29: Python's layer had its own)
    assert msg.startswith("ag_linear: W is [16x4] f32 and x is [150x4] f32: ncol(W) = 4 must")
    assert msg.endswith(
        "; x looks row-major [batch, features]: pass ag_transpose(x), samples are columns"
    )
    # a plain wrong size gets no row-major hint
    with pytest.raises(pg.ShapeError) as e:
        model.forward(np.ones((5, 7)))
    assert "[5x7]" in str(e.value) and "row-major" not in str(e.value)
    # and the right layout works
    assert model.forward(pg.ag_tensor(x)).shape == (3, 150)


def test_ag_fit_hints_at_row_major_data():
    x, y, _ = pg.load_iris()
    with pytest.raises(
        pg.ShapeError,
        match=r"x has 4 samples \(columns\) but y has 150; x looks row-major "
        r"\(150 rows, one per sample\).*pass x\.T",
    ):
        pg.ag_fit(_model(), x.T, y, nepoch=1, silent=True)
    onehot = np.eye(3)[y]  # [150, 3]: row-major one-hot
    with pytest.raises(pg.ShapeError, match=r"y looks row-major \(150 rows.*pass y\.T"):
        pg.ag_fit(_model(), x, onehot, nepoch=1, silent=True)
    with pytest.raises(
        pg.ShapeError, match=r"x and y look row-major \(150 rows each.*pass x\.T and y\.T"
    ):
        pg.ag_fit(_model(), x.T, onehot, nepoch=1, silent=True)
    with pytest.raises(pg.ShapeError) as e:  # a plain mismatch: no hint
        pg.ag_fit(_model(), x, y[:100], nepoch=1, silent=True)
    assert "row-major" not in str(e.value)
    h = pg.ag_fit(_model(), x, onehot.T, nepoch=1, silent=True)  # the fix works
    assert len(h) == 1


def test_dataloader_hints_at_row_major_data():
    x, y, _ = pg.load_iris()
    with pytest.raises(
        pg.ShapeError,
        match=r"x has 4 samples \(columns\) but y has 150; x looks row-major .*col_major=False",
    ):
        pg.ag_dataloader(x.T, y)
    with pytest.raises(pg.ShapeError, match=r"y looks row-major \(150 rows.*y\.T"):
        pg.ag_dataloader(x, np.eye(3)[y])
    with pytest.raises(pg.ShapeError, match=r"x and y look row-major .*col_major=False"):
        pg.ag_dataloader(x.T, np.eye(3)[y])
    dl = pg.ag_dataloader(x.T, np.eye(3)[y], batch_size=50, col_major=False)  # the suggested fix
    b = dl.next_batch()
    assert b.x.shape == (4, 50) and b.y.shape == (3, 50)
    del dl, b
    gc.collect()


def test_package_type_checks_with_mypy():
    """The type hints are checked, not decorative: mypy (config in pyproject.toml) finds no
    errors in the package."""
    import shutil
    import subprocess
    import sys

    root = pathlib.Path(__file__).resolve().parents[2]
    if (
        shutil.which("mypy") is None
        and subprocess.run([sys.executable, "-c", "import mypy"]).returncode
    ):
        pytest.fail("mypy is a test dependency (pip install -e '.[test]')")
    r = subprocess.run(
        [sys.executable, "-m", "mypy"], cwd=root, capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stdout + r.stderr
