"""ag_fit(static=None) on models that are not all built-in: compiled when ag_compile records the
step and the probe's replay equals the eager step (the numbers of static=True, bit for bit);
otherwise eager (the numbers of static=False) with exactly one StaticFallbackWarning giving the
reason. R: test-fit-static-auto.R."""

import warnings

import numpy as np
import pytest

import pyggmlr as pg


class Custom(pg.Module):
    """A custom layer: forward(self, x) given as fw(self, x); counts its calls."""

    def __init__(self, fw):
        self.lin = pg.ag_linear(4, 3)
        self.lin.W.data = np.linspace(-0.5, 0.6, 12).reshape(3, 4, order="F")
        self.lin.b.data = np.array([[0.1], [-0.2], [0.05]])
        self.fw, self.calls = fw, 0

    def forward(self, x):
        self.calls += 1
        return self.fw(self, x)

    def parameters(self):
        return self.lin.parameters()


def replayable(m, x):  # ag ops only
    return pg.ag_tanh(m.lin(x)) * 2


def host_read(m, x):  # reads the batch's values: a recorded graph would keep the first batch
    return m.lin(pg.ag_tensor(x.numpy() * 1.0))


def ckpt(m, x):
    return pg.ag_checkpoint(m.lin, x)


def fit_auto(fw, static, val_split=0.25):
    rng = np.random.default_rng(4)
    x, y = rng.normal(size=(4, 48)), rng.normal(size=(3, 48))
    m = Custom(fw)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        h = pg.ag_fit(
            m,
            x,
            y,
            loss="mse",
            nepoch=2,
            batch_size=6,
            shuffle=False,
            val_split=val_split,
            static=static,
            silent=True,
        )
    notes = [str(i.message) for i in w if issubclass(i.category, pg.StaticFallbackWarning)]
    return (list(h.loss), list(h.val_loss)), m.lin.W.numpy(), m.calls, notes


def test_custom_layer_of_ag_ops_is_compiled_as_static_true():
    a, b, e = fit_auto(replayable, None), fit_auto(replayable, True), fit_auto(replayable, False)
    assert a[3] == []
    assert a[0] == b[0] and a[0] == e[0]
    np.testing.assert_array_equal(a[1], b[1])
    assert a[2] < 8 and e[2] > 12  # compiled: forward ran for the recordings and the probe only


def test_host_read_falls_back_with_one_warning_as_static_false():
    a, f, t = fit_auto(host_read, None), fit_auto(host_read, False), fit_auto(host_read, True)
    assert len(a[3]) == 1
    assert a[3][0].startswith("ag_fit: static=None runs this model eagerly")
    assert "a replay of the recorded step gives loss" in a[3][0]
    assert a[3][0].endswith("static=False silences this notice")
    assert a[0] == f[0]
    np.testing.assert_array_equal(a[1], f[1])
    assert t[0] != f[0]  # what static=True does wrong, silently
    assert f[3] == []


def test_refused_step_falls_back_with_the_cores_reason():
    a, f = fit_auto(ckpt, None, 0), fit_auto(ckpt, False, 0)
    assert len(a[3]) == 1
    assert "fn calls ag_checkpoint(), whose segment a compiled graph cannot replay" in a[3][0]
    assert a[0][0] == f[0][0] and f[3] == []  # no validation: val_loss is NaN
    with pytest.raises(pg.PyggmlrValueError, match="ag_checkpoint"):
        fit_auto(ckpt, True, 0)


def test_callable_loss_is_compiled_after_the_probe():
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(4, 40)), rng.integers(0, 3, size=40)

    def run(static):
        m = pg.ag_sequential([pg.ag_linear(4, 8, "tanh"), pg.ag_linear(8, 3)])
        for t in m.parameters().values():
            t.data = np.full(t.shape, 0.05) + np.arange(t.size).reshape(t.shape) * 0.01
        with warnings.catch_warnings():
            warnings.simplefilter("error", pg.StaticFallbackWarning)
            h = pg.ag_fit(
                m,
                x,
                y,
                loss=lambda o, t: pg.ag_softmax_cross_entropy_loss(o, t),
                nepoch=2,
                batch_size=8,
                shuffle=False,
                silent=True,
                static=static,
            )
        return list(h.loss)

    assert run(None) == run(True) == run(False)


def test_builtin_layers_with_a_loss_function_are_probed():
    # the model alone would compile unprobed; a loss that reads y on the host falls back (R too)
    rng = np.random.default_rng(4)
    x, y = rng.normal(size=(4, 48)), rng.normal(size=(3, 48))

    def run(static):
        m = pg.ag_linear(4, 3)
        m.W.data = np.linspace(-0.5, 0.6, 12).reshape(3, 4, order="F")
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            h = pg.ag_fit(
                m,
                x,
                y,
                loss=lambda o, t: pg.ag_mse_loss(o, pg.ag_tensor(t.numpy() * 1.0)),
                nepoch=1,
                batch_size=6,
                shuffle=False,
                silent=True,
                static=static,
            )
        return list(h.loss), [str(i.message) for i in w if i.category is pg.StaticFallbackWarning]

    (a, wa), (f, wf) = run(None), run(False)
    assert len(wa) == 1 and wf == []
    assert wa[0].startswith("ag_fit: static=None runs this model eagerly")
    assert "a replay of the recorded step" in wa[0]
    assert a == f


def eval_ckpt(m, x):  # ag_checkpoint in eval mode only: the training step compiles, validation not
    return pg.ag_checkpoint(m.lin, x) if not getattr(m, "training", True) else m.lin(x)


def test_validation_that_cannot_be_compiled_falls_back_with_one_warning():
    a, f = fit_auto(eval_ckpt, None), fit_auto(eval_ckpt, False)
    assert a[0] == f[0] and np.array_equal(a[1], f[1]) and f[3] == []
    assert len(a[3]) == 1 and "fn calls ag_checkpoint()" in a[3][0] and a[2] < f[2]
    with pytest.raises(pg.PyggmlrValueError, match="ag_checkpoint"):
        fit_auto(eval_ckpt, True)
