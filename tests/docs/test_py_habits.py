"""Issue 20, Python habits: Module subclasses register their attributes (torch.nn.Module),
model.state_dict(), optimizers refuse an empty parameter list, __all__ / typed History and
Tensor.shape, tensor indexing as a differentiable op, ag_fit over a loader with
validation_data= and keras' verbose levels."""

import ast
import inspect
import math
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

import pyggmlr as pg
from pyggmlr.tensor_index import PyggmlrIndexError

ROOT = pathlib.Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------------------------------------
# Module registration


class Net(pg.Module):
    def __init__(self):
        pg.ggml_set_seed(3)
        self.fc1 = pg.ag_linear(4, 6, "relu")
        self.blocks = [pg.ag_linear(6, 6, "tanh"), pg.ag_dropout(0.2)]
        self.heads = {"a": pg.ag_linear(6, 3)}
        self.scale = pg.ag_param(np.full((3, 1), 2.0))
        self.const = pg.ag_tensor(np.ones((3, 1)))  # a constant: not a parameter
        self.norm = pg.ag_sequential(pg.ag_batch_norm(3))
        self.again = self.fc1  # a shared layer counts once

    def forward(self, x):
        h = self.blocks[1](self.blocks[0](self.fc1(x)))
        return self.norm(pg.ag_mul(self.heads["a"](h), self.scale))


NAMES = [
    "fc1.W",
    "fc1.b",
    "blocks.0.W",
    "blocks.0.b",
    "heads.a.W",
    "heads.a.b",
    "scale",
    "norm.layer1_gamma",
    "norm.layer1_beta",
]


def test_module_registers_attributes_in_assignment_order():
    m = Net()
    p = m.parameters()
    assert list(p) == NAMES
    assert p["fc1.W"] is m.fc1.W and p["scale"] is m.scale
    assert list(m.buffers()) == ["norm.layer1_running_mean", "norm.layer1_running_var"]
    assert m.children() == [m.fc1, m.blocks[0], m.blocks[1], m.heads["a"], m.norm]
    assert m._n_params() == 4 * 6 + 6 + 36 + 6 + 18 + 3 + 3 + 3 + 3


def test_train_eval_reach_children_and_repr_lists_them():
    m = Net()
    m.eval()
    assert not m.blocks[1].training and not m.norm.layers[0].training and not m.fc1.training
    pg.ag_train(m)
    assert m.blocks[1].training and m.norm.layers[0].training
    assert repr(m) == (
        "Net (102 parameters, train mode)\n"
        "  (fc1): linear(4, 6, relu)\n"
        "  (blocks.0): linear(6, 6, tanh)\n"
        "  (blocks.1): dropout(0.2)\n"
        "  (heads.a): linear(6, 3)\n"
        "  (norm): ag_sequential (1 layers, train mode)\n"
        "    [1] batch_norm(3)\n"
        "  (again): linear(4, 6, relu)"
    )


def test_state_dict_methods_round_trip():
    m = Net()
    sd = m.state_dict()
    assert list(sd["parameters"]) == NAMES and list(sd["buffers"]) == [
        "norm.layer1_running_mean",
        "norm.layer1_running_var",
    ]
    ref = pg.ag_state_dict(m)
    assert all(np.array_equal(sd["parameters"][k], ref["parameters"][k]) for k in NAMES)
    w0 = m.fc1.W.numpy()
    m.fc1.W.data = np.zeros((6, 4))
    assert m.load_state_dict(sd) is m
    assert np.array_equal(m.fc1.W.numpy(), w0)
    seq = pg.ag_sequential(pg.ag_linear(2, 3))
    assert list(seq.state_dict()["parameters"]) == ["layer1_W", "layer1_b"]
    with pytest.raises(pg.PyggmlrValueError):
        seq.load_state_dict({"parameters": {"x": np.zeros((3, 2))}})


def test_existing_models_keep_their_names_and_order():
    pg.ggml_set_seed(1)
    seq = pg.ag_sequential(
        pg.ag_linear(4, 8, "relu"),
        pg.ag_dropout(0.1),
        pg.ag_batch_norm(8),
        pg.ag_multihead_attention(8, 2),
        pg.ag_layer_norm(8),
    )
    assert list(seq.parameters()) == [
        "layer1_W",
        "layer1_b",
        "layer3_gamma",
        "layer3_beta",
        "layer4_W_q",
        "layer4_W_k",
        "layer4_W_v",
        "layer4_W_o",
        "layer4_b_o",
        "layer5_gamma",
        "layer5_beta",
    ]
    assert repr(pg.ag_linear(2, 3)) == "ag_linear: linear(2, 3) (9 parameters)"

    class Own(pg.Module):  # a parameters() of its own wins over registration
        def __init__(self):
            self.a, self.b = pg.ag_param(np.ones((1, 1))), pg.ag_param(np.ones((2, 1)))

        def parameters(self):
            return {"second": self.b, "first": self.a}

    assert list(Own().parameters()) == ["second", "first"]


def test_custom_layer_objects_and_cycles():
    class Plain:  # not a Module: forward + parameters() is enough
        def __init__(self):
            self.w = pg.ag_param(np.ones((2, 2)))

        def forward(self, x):
            return pg.ag_matmul(self.w, x)

        def parameters(self):
            return {"w": self.w}

    class Holder(pg.Module):
        def __init__(self):
            self.inner = Plain()
            self.child = pg.Module()
            self.child.parent = self  # a cycle must not loop

    h = Holder()
    assert list(h.parameters()) == ["inner.w"]
    assert h.children() == [h.inner, h.child]


def test_module_subclass_trains_with_ag_fit_and_optimizers():
    class Two(pg.Module):
        def __init__(self):
            pg.ggml_set_seed(5)
            self.layers = [pg.ag_linear(4, 8, "relu"), pg.ag_linear(8, 3)]

        def forward(self, x):
            return self.layers[1](self.layers[0](x))

    x, y, _ = pg.load_iris()
    m = Two()
    w0 = m.layers[1].W.numpy()
    h = pg.ag_fit(m, x, y, nepoch=3, batch_size=30, seed=1, progress="none")
    assert len(h) == 3 and not np.array_equal(m.layers[1].W.numpy(), w0)
    assert len(pg.optimizer_adam(m.parameters()).params) == 4


@pytest.mark.parametrize("make", [pg.optimizer_sgd, pg.optimizer_adam])
def test_optimizer_without_parameters_raises(make):
    for empty in ([], {}, pg.Module(), pg.ag_sequential(pg.ag_dropout(0.5))):
        with pytest.raises(
            pg.PyggmlrValueError, match=rf"^{make.__name__}: got no parameters to optimize"
        ):
            make(empty)


# ---------------------------------------------------------------------------------------------
# __all__, History, Tensor.shape


def _literal_all():
    tree = ast.parse((ROOT / "pyggmlr" / "__init__.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            getattr(t, "id", None) == "__all__" for t in node.targets
        ):
            return ast.literal_eval(node.value)
    raise AssertionError("pyggmlr/__init__.py has no literal __all__")


def test_all_lists_the_public_api():
    names = _literal_all()
    assert len(names) == len(set(names)) and names == sorted(names)
    public = {k for k, v in vars(pg).items() if not k.startswith("_") and not inspect.ismodule(v)}
    assert set(names) == public, (
        f"add to pyggmlr.__all__: {sorted(public - set(names))}; "
        f"remove: {sorted(set(names) - public)}"
    )
    ns = {}
    exec("from pyggmlr import *", ns)
    assert set(ns) - {"__builtins__"} == set(pg.__all__)
    assert {"ag_fit", "Module", "Tensor", "History", "PyggmlrIndexError"} <= set(names)


def test_history_attributes_are_declared():
    ann = inspect.get_annotations(pg.History, eval_str=True)
    for k in (
        "epoch",
        "loss",
        "accuracy",
        "val_loss",
        "val_accuracy",
        "lr",
        "time_train",
        "stopped_epoch",
    ):
        assert k in ann
    assert ann["val_accuracy"] == list[float] or str(ann["val_accuracy"]) == "typing.List[float]"
    hints = inspect.get_annotations(pg.Tensor.shape.fget, eval_str=True)
    assert str(hints["return"]) == "typing.Tuple[int, int]"


@pytest.mark.skipif(
    shutil.which("mypy") is None
    and subprocess.run([sys.executable, "-m", "mypy", "--version"], capture_output=True).returncode
    != 0,
    reason="mypy is not installed",
)
def test_mypy_sees_history_and_shape(tmp_path):
    good = tmp_path / "good.py"
    good.write_text(
        "import pyggmlr as pg\n"
        "from pyggmlr import Tensor, optimizer_adam, with_grad_tape  # explicit re-exports: __all__\n"
        "from typing import Tuple\n"
        "g = (Tensor, optimizer_adam, with_grad_tape)\n"
        "def f(h: pg.History, t: pg.Tensor) -> Tuple[float, Tuple[int, int], int]:\n"
        "    return h.val_accuracy[-1], t.shape, t.shape[0]\n"
    )
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import pyggmlr as pg\ndef f(h: pg.History) -> str:\n    return h.val_accuracy\n"
    )
    cmd = [
        sys.executable,
        "-m",
        "mypy",
        "--strict",
        "--follow-imports=silent",
        "--no-error-summary",
        "--cache-dir",
        str(tmp_path / "cache"),
    ]
    env = {"MYPYPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    r = subprocess.run(
        cmd + [str(good)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600
    )
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run(
        cmd + [str(bad)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600
    )
    assert r.returncode == 1 and "List[float]" in r.stdout.replace("list[float]", "List[float]"), (
        r.stdout
    )


# ---------------------------------------------------------------------------------------------
# indexing

A = np.arange(1.0, 21.0).reshape(4, 5, order="F")  # A[i, j] = 1 + i + 4 j


def _as_ours(a, key):
    """numpy's result in pyggmlr's 2-D shapes: an int keeps a row, a column stays a column, two
    index arrays give a column."""
    a = np.asarray(a)
    if a.ndim == 2:
        return a
    if a.ndim == 0:
        return a.reshape(1, 1)
    if not isinstance(key, tuple):
        return a.reshape(1, -1)
    if isinstance(key[0], int):  # a scalar row
        return a.reshape(1, -1)
    return a.reshape(-1, 1)  # a scalar column, or two paired index arrays


@pytest.mark.parametrize(
    "key",
    [
        (1, 2),
        (-1, -2),
        0,
        -1,
        (slice(None), slice(2, 5)),
        (slice(1, 3), 4),
        ([2, 0, 2], slice(None)),
        (slice(None), np.array([4, 0])),
        ([0, 3, 3], [1, 1, 4]),
        (np.array([True, False, True, True]), 1),
        (slice(None, None, -2), slice(None, None, 2)),
        [3, 1],
        (slice(None), [-1]),
    ],
)
def test_indexing_values_and_gradient_scatter(key):
    t = pg.ag_param(A)
    want = _as_ours(A[key], key)
    pos = _as_ours(np.arange(A.size).reshape(A.shape, order="F")[key], key)
    with pg.with_grad_tape():
        out = t[key]
        assert out.shape == want.shape
        assert np.array_equal(out.numpy(), want)
        w = np.arange(1.0, out.size + 1).reshape(out.shape, order="F")
        loss = pg.ag_sum(pg.ag_mul(out, pg.ag_tensor(w)))
    g = pg.backward(loss)[t]
    expect = np.zeros(A.size)
    np.add.at(expect, pos.ravel(order="F"), w.ravel(order="F"))  # repeated entries add up
    assert np.array_equal(np.asarray(g), expect.reshape(A.shape, order="F"))


def test_indexing_mask_is_column_major_and_differentiable():
    t = pg.ag_param(A)
    m = A % 3 == 0
    out = t[m]
    assert out.shape == (int(m.sum()), 1)
    assert np.array_equal(
        out.numpy()[:, 0], A.ravel(order="F")[m.ravel(order="F")]
    )  # R's x[m] order
    r = pg.ag_gradcheck(
        lambda d: pg.ag_sum(pg.ag_mul(d["t"][m], d["t"][m])),
        {"t": pg.ag_param(A, dtype="f64")},
        quiet=True,
    )
    assert r.passed


def test_indexing_finite_differences_f64():
    x = pg.ag_param(np.sin(np.arange(20.0)).reshape(4, 5), dtype="f64")
    r = pg.ag_gradcheck(
        lambda d: (
            pg.ag_sum(pg.ag_tanh(d["x"][[0, 2, 2], 1:4])) * 3.0
            + pg.ag_sum(d["x"][-1, 1:] * (d["x"][:, 0].T @ d["x"][:, 1:]))
        ),
        {"x": x},
        quiet=True,
    )
    assert r.passed, r.errors


def test_indexing_errors_and_iteration():
    t = pg.ag_tensor(A)
    with pytest.raises(
        PyggmlrIndexError, match=r"row index 4 is out of range for a \[4x5\] tensor"
    ):
        t[4]
    with pytest.raises(IndexError):
        t[0, [1, 5]]
    with pytest.raises(PyggmlrIndexError, match="boolean row mask needs 4 entries"):
        t[np.array([True, False])]
    with pytest.raises(pg.ArgumentError, match="2-D"):
        t[0, 1, 2]
    with pytest.raises(pg.ArgumentError):
        t[None]
    rows = [r.numpy() for r in t]  # the old sequence protocol: stops at IndexError
    assert len(rows) == 4 and np.array_equal(rows[2], A[2:3])


# ---------------------------------------------------------------------------------------------
# ag_fit: loaders, validation_data, verbose


def _model(seed=7):
    pg.ggml_set_seed(seed)
    return pg.ag_sequential(pg.ag_linear(4, 8, "relu"), pg.ag_linear(8, 3))


def _h(h):
    return [h.loss, h.accuracy, h.val_loss, h.val_accuracy]


def test_fit_on_a_loader_equals_fit_on_its_arrays():
    x, y, _ = pg.load_iris()
    ld = pg.ag_dataloader(x, y, batch_size=16, shuffle=True, seed=11)
    a, b = _model(), _model()
    ha = pg.ag_fit(a, ld, nepoch=2, progress="none")
    hb = pg.ag_fit(b, x, y, nepoch=2, batch_size=16, shuffle=True, seed=11, progress="none")
    assert _h(ha) == _h(hb) or np.array_equal(np.array(_h(ha)), np.array(_h(hb)), equal_nan=True)
    assert np.array_equal(a[1].W.numpy(), b[1].W.numpy())
    with pytest.raises(pg.ArgumentError, match="pass y to ag_dataloader"):
        pg.ag_fit(_model(), ld, y)
    with pytest.raises(pg.ArgumentError, match="set them on ag_dataloader"):
        pg.ag_fit(_model(), ld, batch_size=8)
    # ag_fit's defaults exactly, spelt otherwise: the loader's settings stay
    pg.ag_fit(_model(), ld, batch_size=32.0, shuffle=np.True_, nepoch=1, progress="none")


def test_validation_data_is_the_held_out_part():
    x, y, _ = pg.load_iris()
    tr, va = np.arange(150) % 5 != 0, np.arange(150) % 5 == 0
    xt, yt, xv, yv = x[:, tr], y[tr], x[:, va], y[va]
    # unshuffled: the same run as val_split over the concatenation
    a, b = _model(), _model()
    ha = pg.ag_fit(
        a, xt, yt, validation_data=(xv, yv), nepoch=2, batch_size=20, shuffle=False, progress="none"
    )
    hb = pg.ag_fit(
        b,
        np.concatenate([xt, xv], axis=1),
        np.concatenate([yt, yv]),
        val_split=30 / 150,
        nepoch=2,
        batch_size=20,
        shuffle=False,
        progress="none",
    )
    assert np.array_equal(np.array(_h(ha)), np.array(_h(hb)), equal_nan=True)
    # shuffled: validation columns never reach training (other values give the same weights), and
    # the last val_loss is the trained model's loss on them
    c, d = _model(), _model()
    hc = pg.ag_fit(
        c, xt, yt, validation_data=(xv, yv), nepoch=3, batch_size=20, seed=2, progress="none"
    )
    pg.ag_fit(
        d,
        xt,
        yt,
        validation_data=pg.ag_dataloader(xv * 100, (yv + 1) % 3, shuffle=False),
        nepoch=3,
        batch_size=20,
        seed=2,
        progress="none",
    )
    assert np.array_equal(c[0].W.numpy(), d[0].W.numpy())
    out = pg.ag_predict(c, xv).astype(np.float64)
    lse = np.log(np.exp(out - out.max(0)).sum(0)) + out.max(0)
    ce = np.mean(lse - out[yv, np.arange(yv.size)])
    assert math.isclose(hc.val_loss[-1], ce, rel_tol=1e-5)
    assert hc.val_accuracy[-1] == pytest.approx(pg.ag_accuracy(c, xv, yv))
    with pytest.raises(pg.ArgumentError, match="either val_split or validation_data"):
        pg.ag_fit(_model(), xt, yt, validation_data=(xv, yv), val_split=0.2)
    with pytest.raises(pg.ArgumentError, match="must be a tuple"):
        pg.ag_fit(_model(), xt, yt, validation_data=[xv, yv])
    with pytest.raises(pg.ShapeError, match="validation_data x has 3 features"):
        pg.ag_fit(_model(), xt, yt, validation_data=(xv[:3], yv))


def test_verbose_levels(capsys):
    x, y, _ = pg.load_iris()
    pg.ag_fit(_model(), x, y, nepoch=2, batch_size=50, verbose=2)
    err = capsys.readouterr().err.strip().splitlines()
    assert (
        len(err) == 2
        and err[0].startswith("epoch    1/2  loss=")
        and err[1].startswith("epoch    2/2  ")
    )
    pg.ag_fit(_model(), x, y, nepoch=2, batch_size=50, verbose=0, progress="bar")
    assert capsys.readouterr().err == ""
    pg.ag_fit(_model(), x, y, nepoch=2, batch_size=50, verbose=1)
    err = capsys.readouterr().err  # no terminal here: the lines, as keras (test_fit_progress.py)
    assert "epoch    2/2  loss=" in err and "\r" not in err
    with pytest.raises(pg.PyggmlrValueError, match="verbose must be 0"):
        pg.ag_fit(_model(), x, y, verbose=3)


def test_indexing_replays_in_a_compiled_graph():
    x = pg.ag_param(np.ones((2, 3)))
    step = pg.ag_compile(lambda v: pg.ag_sum(v[0:1, [2, 0, 2]]), x, build="forward")
    y = np.arange(6.0).reshape(2, 3)
    assert (
        step(pg.ag_tensor(y)).item() == y[0, [2, 0, 2]].sum()
    )  # the positions are saved with the node


def test_indexing_matches_numpy_on_random_keys():
    rs = np.random.default_rng(4)

    def part(n):
        k = rs.integers(4)
        if k == 0:
            return int(rs.integers(-n, n))
        if k == 1:
            lo, hi = sorted(rs.integers(-n, n + 1, size=2))
            return slice(int(lo), int(hi), int(rs.choice([1, 2, -1])))
        if k == 2:
            return [int(i) for i in rs.integers(-n, n, size=rs.integers(1, 4))]
        return rs.random(n) < 0.5

    t = pg.ag_param(A)
    for _ in range(200):
        key = (part(4), part(5))
        if not isinstance(key[0], (int, slice)) and not isinstance(key[1], (int, slice)):
            rows = (
                np.flatnonzero(key[0]) if np.asarray(key[0]).dtype == bool else np.asarray(key[0])
            )
            cols = (
                np.flatnonzero(key[1]) if np.asarray(key[1]).dtype == bool else np.asarray(key[1])
            )
            if rows.size != cols.size:
                with pytest.raises(PyggmlrIndexError, match="pair up"):
                    t[key]
                continue
        assert np.array_equal(t[key].numpy(), _as_ours(A[key], key)), key
