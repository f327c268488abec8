"""ggmlR 0.8.3-0.8.6 layer changes (0.8.6 spec §5): layer norm without affine parameters, the
exact batch-norm training gradient, ag_linear's init/gain checks; golden values from the spec."""

import numpy as np
import pytest
from _goldens import GLOROT_5X3_SEED42, ORTHOGONAL_3X2_SEED1

import pyggmlr as pg
from pyggmlr.errors import PyggmlrValueError, ShapeError


def byrow(rows):
    return np.array(rows, dtype=np.float64)


def test_layer_norm_spec_golden(f64):
    ln = pg.ag_layer_norm(3)
    ln.gamma.data = np.array([[1.0], [2.0], [0.5]])
    ln.beta.data = np.array([[0.0], [0.1], [-0.1]])
    x = pg.ag_param(np.array([[1.0, 2.0], [2.0, 0.0], [4.0, 1.0]]))
    with pg.with_grad_tape():
        y = ln(x)
        loss = pg.ag_sum(pg.ag_mul(y, np.arange(1.0, 7.0).reshape(3, 2, order="F")))
    g = pg.backward(loss)
    np.testing.assert_allclose(
        y.numpy(),
        byrow(
            [[-1.0690415315, 1.2247356859], [-0.4345207657, -2.3494713718], [0.5681509572, -0.1]]
        ),
        atol=1e-9,
    )
    np.testing.assert_allclose(
        g[x],
        byrow(
            [
                [-0.9735911493, 1.6329258023],
                [1.4603871534, 1.6330360268],
                [-0.4867960042, -3.2659618291],
            ]
        ),
        atol=1e-9,
    )
    np.testing.assert_allclose(
        g[ln.gamma].ravel(), [3.8299012122, -6.6581991953, 4.0089057429], atol=1e-9
    )
    np.testing.assert_allclose(g[ln.beta].ravel(), [5, 7, 9], atol=1e-12)


def test_layer_norm_without_affine(f64):
    ln = pg.ag_layer_norm(3, elementwise_affine=False)
    assert ln.gamma is None and ln.beta is None and len(ln.parameters()) == 0
    assert repr(ln) == "ag_layer_norm(3) | eps=1e-05 | affine=FALSE"
    assert repr(pg.ag_layer_norm(16)) == "ag_layer_norm(16) | eps=1e-05 | affine=TRUE"
    x0 = np.array([[1.0, 2.0], [2.0, 0.0], [4.0, 1.0]])
    ref = (x0 - x0.mean(0)) / np.sqrt(x0.var(0) + 1e-5)
    x = pg.ag_param(x0)
    with pg.with_grad_tape():
        y = ln(x)
        loss = pg.ag_sum(pg.ag_mul(y, np.arange(1.0, 7.0).reshape(3, 2, order="F")))
    np.testing.assert_allclose(y.numpy(), ref, rtol=1e-12)
    gx = pg.backward(loss)[x]
    # the affine layer at gamma = 1, beta = 0 gives the same bits and the same input gradient
    aff = pg.ag_layer_norm(3)
    with pg.with_grad_tape():
        loss2 = pg.ag_sum(pg.ag_mul(aff(x), np.arange(1.0, 7.0).reshape(3, 2, order="F")))
    np.testing.assert_array_equal(gx, pg.backward(loss2)[x])
    ln.training = False  # no running statistics: eval gives the same numbers
    np.testing.assert_array_equal(ln(x).numpy(), y.numpy())


def test_layer_norm_errors_and_config():
    for bad in (0, -1, "a", None, [2, 3], float("nan"), True):
        with pytest.raises(
            PyggmlrValueError, match="normalized_shape must be a single positive integer"
        ):
            pg.ag_layer_norm(bad)
    assert pg.ag_layer_norm(4.9).normalized_shape == 4  # as.integer truncates, as ggmlR
    with pytest.raises(ShapeError, match="ag_layer_norm: expected 4 features, got 3"):
        pg.ag_layer_norm(4)(np.ones((3, 2)))
    m = pg.ag_sequential(
        pg.ag_layer_norm(5, eps=1e-3, elementwise_affine=False), pg.ag_layer_norm(5)
    )
    cfg = pg.ag_to_config(m)
    assert cfg["layers"][0] == {
        "type": "layer_norm",
        "normalized_shape": 5,
        "eps": 1e-3,
        "elementwise_affine": False,
    }
    back = pg.ag_module_from_config(cfg)
    assert not back.layers[0].elementwise_affine and back.layers[1].elementwise_affine
    old = pg.ag_module_from_config(
        {"type": "layer_norm", "num_features": 6, "eps": 1e-5}
    )  # older files
    assert old.normalized_shape == 6 and old.num_features == 6


def test_batch_norm_exact_training_gradient(f64):
    bn = pg.ag_batch_norm(2)
    x = pg.ag_param(np.array([[1.0, 3.0, 6.0], [2.0, 5.0, 11.0]]))
    with pg.with_grad_tape():
        loss = pg.ag_sum(pg.ag_mul(bn(x), np.arange(1.0, 7.0).reshape(2, 3, order="F")))
    g = pg.backward(loss)
    np.testing.assert_allclose(
        g[x],
        byrow(
            [
                [-0.0768437581, 0.1280690880, -0.0512253300],
                [-0.0763606548, 0.1145404095, -0.0381797547],
            ]
        ),
        atol=1e-9,
    )


def test_linear_glorot_golden_and_gain():
    pg.ggml_set_seed(42)
    w = pg.ag_linear(5, 3).W.numpy().ravel(order="F")
    np.testing.assert_allclose(w[:4], GLOROT_5X3_SEED42, rtol=0, atol=1e-7)  # f32 weights
    pg.ggml_set_seed(42)
    w2 = pg.ag_linear(5, 3, gain=2).W.numpy().ravel(order="F")
    np.testing.assert_array_equal(w2, (w * 2).astype(w.dtype))  # gain scales after the draw


def test_linear_orthogonal_golden(f64):
    pg.ggml_set_seed(1)
    w = pg.ag_linear(3, 2, init="orthogonal").W.numpy()
    np.testing.assert_allclose(w, byrow(ORTHOGONAL_3X2_SEED1), atol=1e-9)
    pg.ggml_set_seed(1)
    np.testing.assert_allclose(
        pg.ag_linear(2, 3, init="orth").W.numpy(), w.T, atol=1e-15
    )  # match.arg prefix


def test_linear_init_checks_before_any_draw():
    cases = [
        (dict(gain=float("nan")), "gain must be a single finite number"),
        (dict(gain=True), "gain must be a single finite number"),
        (dict(gain=[1, 2]), "gain must be a single finite number"),
        (dict(gain=float("inf")), "gain must be a single finite number"),
        (
            dict(init="xavier"),
            "'arg' should be one of \u201cglorot_uniform\u201d, \u201corthogonal\u201d",
        ),
        (dict(init=np.ones((3, 2)), gain=2), "gain applies to string inits only"),
        (dict(init=lambda o, i: np.ones((o, i)), gain=0.5), "gain applies to string inits only"),
        (dict(init=lambda o, i: "x"), "a function\\(out, in\\) or a numeric matrix"),
        (dict(init=np.ones((3, 2))), "init matrix is 3x2, expected 2x3 \\(out x in\\)"),
        (dict(init=np.array([[1.0, np.nan, 0], [0, 1, 0]])), "init matrix contains NA, NaN or Inf"),
    ]
    for kw, msg in cases:
        pg.ggml_set_seed(7)
        before = pg.random.get_state()
        with pytest.raises((PyggmlrValueError, ShapeError), match=msg):
            pg.ag_linear(3, 2, **kw)
        assert np.array_equal(pg.random.get_state(), before), kw  # refused before drawing
    seen = []
    pg.ggml_set_seed(7)
    before = pg.random.get_state()
    lin = pg.ag_linear(3, 2, init=lambda o, i: seen.append((o, i)) or np.arange(6).reshape(o, i))
    assert seen == [(2, 3)] and np.array_equal(pg.random.get_state(), before)  # out first; no draw
    np.testing.assert_array_equal(lin.W.numpy(), np.arange(6.0).reshape(2, 3))
