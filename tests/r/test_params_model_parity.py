"""A layer given where parameters go (optimizer_sgd / optimizer_adam, clip_grad_norm,
clip_grad_value, check_grad_anomaly): Python took an ag_linear, R refused its list form
("parameter 3 is not an ag_tensor", its forward function) though its text says "or a model".
Both now take it, with the same tensors and the same bits."""

import numpy as np
import pytest

from pyggmlr import r

if not r.available():
    pytest.skip(f"R bridge unavailable: {r.unavailable_reason()}", allow_module_level=True)

pytestmark = pytest.mark.parity  # embeds R (rpy2): not in the sanitized run, which cannot host R

import pyggmlr as pg  # noqa: E402

_X = np.arange(1, 9, dtype=np.float64).reshape(4, 2, order="F") / 5

_R = """
ggml_set_seed(1); l <- ag_linear(4, 3)
g <- with_grad_tape(backward(ag_sum(ag_tanh(l$forward(x)))))
norm <- clip_grad_norm(l, g, 0.5)
clip_grad_value(l, g, 0.1)
check_grad_anomaly(l, g, action = "stop")
o <- {opt}(l, lr = 0.1)
o$step(g)
list(n = length(o$params), norm = norm, W = l$W$data, b = l$b$data)
"""


@pytest.mark.parametrize("opt", ["optimizer_sgd", "optimizer_adam"])
def test_a_layer_is_its_parameters_alike(opt):
    pg.ggml_set_seed(1)
    lin = pg.ag_linear(4, 3)
    with pg.with_grad_tape():
        g = pg.backward(pg.ag_sum(pg.ag_tanh(lin.forward(_X))))
    norm = pg.clip_grad_norm(lin, g, 0.5)
    pg.clip_grad_value(lin, g, 0.1)
    pg.check_grad_anomaly(lin, g, action="stop")
    o = getattr(pg, opt)(lin, lr=0.1)
    o.step(g)
    got = r.run(_R.replace("{opt}", opt), x=_X)
    assert int(got["n"]) == len(o.params) == 2
    assert float(got["norm"]) == norm and norm > 0.5  # the norm before clipping
    np.testing.assert_array_equal(np.asarray(got["W"]), lin.W.numpy())
    np.testing.assert_array_equal(np.asarray(got["b"]), lin.b.numpy())
