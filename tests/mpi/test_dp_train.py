"""dp_train: ggmlR's in-process data parallelism (pyggmlr/parallel/replicas.py): fields, history,
printed format, replicas kept equal, and the same trajectory as Adam on the combined batch."""

import os
import sys

import numpy as np
import pytest

import pyggmlr as pg

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import MLP, regression_data  # noqa: E402  (tests/mpi's shared models)


def _params(m):
    return {k: t.numpy() for k, t in m.parameters().items()}


def _regression_batches(n_batches, b, seed=0):
    X, Y = regression_data(n_batches * b, seed=seed)
    return [(X[:, i * b : (i + 1) * b], Y[:, i * b : (i + 1) * b]) for i in range(n_batches)]


def _fwd(m, s):
    return m.forward(pg.ag_tensor(s[0]))


def _tgt(s):
    return s[1]


def _dp(make, data, **kw):
    """dp_train on (x, y) batches with MSE, the default forward/target and no printing."""
    args = dict(loss_fn=pg.ag_mse_loss, forward_fn=_fwd, target_fn=_tgt, verbose=False)
    return pg.dp_train(make, data, **{**args, **kw})


# ---------------------------------------------------------------------------------------------
# dp_train: ggmlR's own checks (test-ag-training.R)


def _seq_model():
    return pg.ag_sequential(pg.ag_linear(4, 8, activation="tanh"), pg.ag_linear(8, 2))


def test_dp_train_fields_and_history_length(capsys):
    data = _regression_batches(4, 8)
    res = _dp(_seq_model, data, n_iter=7)
    assert list(res) == ["params", "loss_history", "model"]
    assert res["loss_history"].shape == (7,)
    assert np.all(np.isfinite(res["loss_history"]))
    assert list(res["params"]) == list(res["model"].parameters())
    for k, t in res["params"].items():
        assert t is res["model"].parameters()[k]
    assert capsys.readouterr().out == ""


def test_dp_train_converges_with_one_replica():
    pg.ggml_set_seed(1)
    data = _regression_batches(4, 16)
    res = _dp(_seq_model, data, n_iter=150, lr=0.02)
    h = res["loss_history"]
    assert h[-4:].mean() < 0.25 * h[:4].mean()


def test_dp_train_two_replicas_no_nan_and_replica_zero_trained():
    pg.ggml_set_seed(2)
    data = _regression_batches(5, 8)
    res = _dp(_seq_model, data, n_replicas=2, n_iter=40, lr=0.01)
    h = res["loss_history"]
    assert h.shape == (40,) and np.all(np.isfinite(h))
    assert h[-5:].mean() < h[:5].mean()


def test_dp_train_default_replicas_is_one_on_cpu():
    made = []

    def make():
        made.append(MLP(4, 3, 2, seed=0))
        return made[-1]

    _dp(make, _regression_batches(2, 4), n_iter=1)
    assert len(made) == 1


def test_dp_train_loss_fn_none_uses_forward_result_and_tensor_samples():
    class Quad:
        def __init__(self):
            self.w = pg.ag_param(np.array([[3.0], [-2.0]]))

        def forward(self, x):  # loss = mean((w - x)^2)
            return pg.ag_mean(pg.ag_pow(pg.ag_sub(self.w, x), 2))

        def parameters(self):
            return {"w": self.w}

    pg.ag_dtype("f64")
    data = [pg.ag_tensor(np.array([[1.0], [1.0]])), np.array([[1.0], [1.0]])]
    res = pg.dp_train(Quad, data, n_replicas=2, n_iter=300, lr=0.05, verbose=False)
    np.testing.assert_allclose(res["model"].w.numpy(), 1.0, atol=1e-2)
    assert res["loss_history"][0] == pytest.approx((4 + 9) / 2)


def test_dp_train_prints_ggmlr_format(capsys):
    data = _regression_batches(2, 4)
    _dp(lambda: MLP(4, 3, 2, seed=0), data, n_iter=6, verbose=3)
    lines = capsys.readouterr().out.splitlines()
    assert [line[:25] for line in lines] == [
        "[dp_train] iter    1 / 6 ",
        "[dp_train] iter    3 / 6 ",
        "[dp_train] iter    6 / 6 ",
    ]
    import re

    assert all(
        re.fullmatch(r"\[dp_train\] iter +\d+ / 6  loss = \d+\.\d{6}", line) for line in lines
    )
    _dp(lambda: MLP(4, 3, 2, seed=0), data, n_iter=3, verbose=True)
    assert len(capsys.readouterr().out.splitlines()) == 3


# ---------------------------------------------------------------------------------------------
# dp_train: exact semantics (f64)


def test_dp_train_replicas_identical_before_every_step_and_grads_cleared(f64):
    made = []
    spreads = []

    def make():
        made.append(MLP(4, 5, 2, seed=len(made)))  # different inits: the copy must align them
        return made[-1]

    def fwd(m, s):
        if (
            m is made[0]
        ):  # first forward of an iteration: all replicas must hold replica 0's weights
            w0 = _params(made[0])
            spreads.append(
                max(float(np.max(np.abs(_params(r)[k] - w0[k]))) for r in made[1:] for k in w0)
            )
        return m.forward(pg.ag_tensor(s[0]))

    data = _regression_batches(6, 4)
    _dp(make, data, forward_fn=fwd, n_replicas=3, n_iter=5, lr=0.05)
    assert spreads == [0.0] * 5
    w0 = _params(made[0])
    assert all(np.array_equal(_params(r)[k], w0[k]) for r in made[1:] for k in w0)
    # ggmlR 0.8.2 leaves replicas 2..N's .grad growing; here every replica's is cleared
    assert all(t.grad is None for r in made for t in r.parameters().values())


def _adam_reference(data_pairs, lr, n_steps, max_norm=float("inf"), seed=0):
    """One model, one Adam step per step on the concatenation of the replicas' batches."""
    ref = MLP(4, 5, 2, seed=seed)
    opt = pg.optimizer_adam(ref, lr=lr)
    for s in range(n_steps):
        xs = np.concatenate([p[0] for p in data_pairs[s]], axis=1)
        ys = np.concatenate([p[1] for p in data_pairs[s]], axis=1)
        with pg.with_grad_tape():
            loss = pg.ag_mse_loss(ref.forward(pg.ag_tensor(xs)), pg.ag_tensor(ys))
        g = pg.backward(loss)
        if np.isfinite(max_norm):
            pg.clip_grad_norm(ref, g, max_norm)
        opt.step(g)
        opt.zero_grad()
    return ref


@pytest.mark.parametrize("max_norm", [float("inf"), 0.05])
def test_dp_train_equals_adam_on_the_combined_batch(f64, max_norm):
    n_rep, n_iter = 2, 4
    data = _regression_batches(3, 5)  # 3 samples, 2 replicas: data assignment wraps around
    made = []

    def make():
        made.append(MLP(4, 5, 2, seed=10 + len(made)))
        return made[-1]

    res = _dp(make, data, n_replicas=n_rep, n_iter=n_iter, lr=0.03, max_norm=max_norm)
    # ggmlR's assignment: base = ((it - 1) * n) % len(data), replica i gets data[(base + i) % len]
    pairs = [
        [data[(((it - 1) * n_rep) % 3 + i) % 3] for i in range(n_rep)]
        for it in range(1, n_iter + 1)
    ]
    assert [[d[0][0, 0] for d in p] for p in pairs] == [
        [data[0][0][0, 0], data[1][0][0, 0]],
        [data[2][0][0, 0], data[0][0][0, 0]],
        [data[1][0][0, 0], data[2][0][0, 0]],
        [data[0][0][0, 0], data[1][0][0, 0]],
    ]
    ref = _adam_reference(pairs, 0.03, n_iter, max_norm, seed=10)
    got = _params(res["model"])
    for k, v in _params(ref).items():
        np.testing.assert_allclose(got[k], v, rtol=0, atol=1e-12)
    start = _params(MLP(4, 5, 2, seed=10))
    assert max(float(np.max(np.abs(got[k] - start[k]))) for k in got) > 1e-3  # it did train


def test_dp_train_parameters_as_unnamed_list(f64):
    """ggmlR iterates by name (an unnamed list is a silent no-op); here position/identity counts."""

    class ListModel(MLP):
        def parameters(self):
            return [self.W1, self.b1, self.W2, self.b2]

    data = _regression_batches(2, 4)
    a = _dp(lambda: ListModel(4, 5, 2, seed=3), data, n_replicas=2, n_iter=3)
    b = _dp(lambda: MLP(4, 5, 2, seed=3), data, n_replicas=2, n_iter=3)
    assert not np.array_equal(a["model"].W1.numpy(), MLP(4, 5, 2, seed=3).W1.numpy())
    for x, y in zip(a["params"], b["params"].values()):
        np.testing.assert_array_equal(x.numpy(), y.numpy())


def test_dp_train_errors():
    data = _regression_batches(2, 4)
    shared = MLP(4, 3, 2, seed=0)
    with pytest.raises(ValueError, match="share a parameter tensor"):
        _dp(lambda: shared, data, n_replicas=2)
    with pytest.raises(ValueError, match="data is empty"):
        pg.dp_train(lambda: MLP(4, 3, 2, seed=0), [], verbose=False)
    with pytest.raises(ValueError, match="n_replicas"):
        pg.dp_train(lambda: MLP(4, 3, 2, seed=0), data, n_replicas=0, verbose=False)
    with pytest.raises(TypeError, match="parameters"):
        pg.dp_train(lambda: object(), data, forward_fn=_fwd, verbose=False)
    sizes = iter([3, 4])
    with pytest.raises(ValueError, match="same architecture|parameter 0"):
        _dp(lambda: MLP(4, next(sizes), 2, seed=0), data, n_replicas=2)


# ---------------------------------------------------------------------------------------------
# the C helpers


def test_dp_train_refuses_an_array_as_data_and_prints_nan_as_r(capsys):
    """A numpy array is no list of samples (its rows were taken as samples, then a ShapeError);
    a NaN loss prints as R's NaN (was nan)."""
    with pytest.raises(pg.ArgumentError,
                       match="^dp_train: data must be a list of samples, got ndarray$"):  # fmt: skip
        pg.dp_train(lambda: pg.ag_linear(2, 1), np.ones((4, 2)), verbose=False)
    pg.dp_train(lambda: pg.ag_linear(2, 1), [np.full((2, 1), np.nan)], n_iter=1, verbose=1,
                loss_fn=lambda o, s: pg.ag_mean(o))  # fmt: skip
    assert capsys.readouterr().out == "[dp_train] iter    1 / 1  loss = NaN\n"


def test_dp_train_loss_history_is_r_mean_of_the_replicas():
    """Three replicas: each entry is R's mean() of their losses (the core's pg_mean_r: a
    long-double sum and a correction pass), not numpy's pairwise mean."""
    from pyggmlr._core import ffi, lib

    x = ["0x1.473547e47dc0ep+0", "0x1.5eb91dbbd7c14p+0", "0x1.7a86bb4f27cc0p+0"]
    a = np.ascontiguousarray([float.fromhex(v) for v in x])
    m = lib.pg_mean_r(ffi.cast("const double *", ffi.from_buffer(a)), 3)
    assert m.hex() == "0x1.60270afa7f1a1p+0"  # R's mean(x), sprintf("%a")
    assert float(np.mean(a)).hex() == "0x1.60270afa7f1a0p+0"  # numpy's, one ulp off
