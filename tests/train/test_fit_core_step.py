"""ag_fit's eager micro-batch runs backward, the optimizer's step, zero grad and the record in one
core call (pg_fit_train_step) when the optimizer's step is the package's; a user's step() (or
MPI's all-reduce) keeps the gradients in Python. Both paths give the same bits."""

import numpy as np
import pytest
from _fit_models import _iris, _mlp, _weights

import pyggmlr as pg


class _CountingAdam(pg.optimizer_adam):
    """An optimizer whose step() is the user's: ag_fit hands it every micro-batch's gradients."""

    calls = 0

    def step(self, grads=None, sum_grads=False):
        """Count, then step as the package does."""
        type(self).calls += 1
        return super().step(grads, sum_grads=sum_grads)


@pytest.mark.parametrize("nbatch_logical", [16, 32])
def test_core_step_equals_the_host_step(f64, nbatch_logical):
    x, y = _iris()
    runs = []
    for host in (False, True):
        model = _mlp(seed=0, hidden=8)
        opt = (_CountingAdam if host else pg.optimizer_adam)(model.parameters(), lr=0.01)
        h = pg.ag_fit(model, x, y, optimizer=opt, nepoch=3, batch_size=16, static=False,
                      nbatch_logical=nbatch_logical, val_split=0.2, seed=2, silent=True)  # fmt: skip
        assert opt.accumulate_steps == nbatch_logical // 16  # the set-up's accum
        runs.append((h, _weights(model), opt.t))
    (h0, w0, t0), (h1, w1, t1) = runs
    assert _CountingAdam.calls > 0 and t0 == t1 > 0
    assert h0.loss == h1.loss and h0.accuracy == h1.accuracy and h0.val_loss == h1.val_loss
    for k in w0:
        np.testing.assert_array_equal(w0[k], w1[k])


def test_a_loss_that_is_not_a_tensor_or_not_1x1():
    x, y = _iris()
    with pytest.raises(pg.PyggmlrValueError, match="the loss must be a 1x1 ag_tensor, got float"):
        pg.ag_fit(_mlp(), x, y, loss=lambda out, yb: 1.0, nepoch=1, silent=True)
    m = _mlp()  # the host's step (a user's step()): the core's text too
    opt = _CountingAdam(m.parameters())
    with pytest.raises(
        pg.PyggmlrValueError, match=r"^ag_fit: the loss must be a 1x1 ag_tensor, got int$"
    ):
        pg.ag_fit(m, x, y, loss=lambda o, yb: 1, optimizer=opt, nepoch=1, static=False, silent=True)
    with pytest.raises(pg.ShapeError, match=r"ag_fit: the loss must be a 1x1 tensor, got \[3x"):
        pg.ag_fit(_mlp(), x, y, loss=lambda out, yb: out, nepoch=1, silent=True)


class _NumberModel:
    """parameters() of a layer, but forward() gives a number: refused before any loss sees it"""

    def __init__(self):
        self.lin = pg.ag_linear(4, 3)

    def parameters(self):
        return self.lin.parameters()

    def forward(self, x):
        return 3.0


@pytest.mark.parametrize("loss", ["mse", lambda out, yb: pg.ag_sum(out)])
@pytest.mark.parametrize("static", [False, True])
def test_a_forward_that_returns_no_tensor(loss, static):
    x, _ = _iris()
    y = np.zeros((3, x.shape[1]))
    m = _NumberModel()
    w0 = m.lin.W.numpy().copy()
    with pytest.raises(
        pg.ArgumentError, match=r"^ag_fit: model forward returned a float, not a tensor$"
    ):
        pg.ag_fit(m, x, y, loss=loss, nepoch=1, silent=True, static=static)
    np.testing.assert_array_equal(m.lin.W.numpy(), w0)
    with pytest.raises(pg.ArgumentError, match=r"^ag_predict: model forward returned a float"):
        pg.ag_predict(m, x)
    with pytest.raises(pg.ArgumentError, match=r"^ag_accuracy: model forward returned a float"):
        pg.ag_accuracy(m, x, np.zeros(x.shape[1]))


@pytest.mark.parametrize("kw, text", [
    ({"distributed": "a"}, "ag_fit: distributed must be True or False"),
    ({"static": "a"}, "ag_fit: static must be True, False or None"),
    ({"static": np.array([True, False])}, "ag_fit: static must be True, False or None"),
])  # fmt: skip
def test_static_and_distributed_are_flags(kw, text):
    """As R's ag_fit: a truthy string must not start MPI or the compiler; a wrong kind is an
    ArgumentError, as the other flags' (issue 29)."""
    x, y = _iris()
    with pytest.raises(pg.ArgumentError, match=text):
        pg.ag_fit(_mlp(), x, y, nepoch=1, silent=True, **kw)


def test_no_forward_is_the_cores_text():
    """R's text too (issue 29: R said "must have a forward(x) function")"""
    x, _ = _iris()
    with pytest.raises(
        pg.ArgumentError, match=r"^ag_predict: model must have forward\(x\), got int$"
    ):
        pg.ag_predict(3, x)


@pytest.mark.parametrize("kw, best", [
    ({"monitor": "val_accuracy"}, -np.inf), ({"mode": "max"}, -np.inf), ({}, np.inf),
])  # fmt: skip
def test_best_before_any_fit(kw, best):
    """the max mode's start as soon as the mode is known (it read inf), as R's"""
    assert pg.ag_early_stopping(**kw).best == best
    assert pg.ag_model_checkpoint("unused.safetensors", **kw).best == best


def test_load_checks_arguments_before_the_file(tmp_path):
    """a missing file with a bad model= names the model (the file was read first), as R's"""
    f = str(tmp_path / "missing.safetensors")
    with pytest.raises(pg.ArgumentError, match=r"^ag_load_model\(\): `model` must be .* got int$"):
        pg.ag_load_model(f, model=3)
