"""ggmlR 0.8.6's selection and sampling ops (pyggmlr/ops_select.py, native/ops_select.c): the
spec's golden values, finite differences, ggmlR's error texts, the draws' count and order on the
R-compatible stream, and compiled replays."""

import numpy as np
import pytest

import pyggmlr as pg

M = np.array([1, 5, 5, -2, 0, 7, 4, 4, 4, -1e4, 3, -1e4], dtype=float).reshape((3, 4), order="F")


def test_argmax_ties_nan_inf_and_r_rule(f64):
    assert pg.ag_argmax(np.array([1, 3, 3, 5, 2, 5.0]).reshape((3, 2), order="F")).tolist() == [
        1,
        0,
    ]
    x = np.array(
        [[np.nan, -np.inf, np.inf, -np.inf], [1, -np.inf, 2, np.nan], [1, -np.inf, np.inf, -np.inf]]
    )
    assert pg.ag_argmax(x).tolist() == [1, 0, 0, 0]
    rng = np.random.default_rng(3)  # test data only
    for n in (1, 2, 17, 1000):
        v = rng.integers(-3, 3, size=(n, 7)).astype(float)
        v[rng.random((n, 7)) < 0.1] = np.nan
        ref = np.argmax(
            np.where(np.isnan(v), -np.inf, v), axis=0
        )  # numpy's argmax: first index too
        assert pg.ag_argmax(v).tolist() == ref.tolist()
    assert pg.ag_argmax(np.array([1.0, 3.0, 2.0])).tolist() == [1]  # a vector is one column


def test_log_softmax_golden_gradient_and_finite_differences(f64):
    x = pg.ag_param(np.array([1, 2, 3, 0, -1e4, 0.0]).reshape((3, 2), order="F"))
    W = np.array([1, 0, 0, 0, 0.5, 0.5]).reshape((3, 2), order="F")
    with pg.with_grad_tape():
        y = pg.ag_log_softmax(x)
        loss = pg.ag_sum(pg.ag_mul(W, y))
    np.testing.assert_allclose(
        y.numpy(),
        [
            [-2.4076059644, -0.6931471806],
            [-1.4076059644, -10000.6931471806],
            [-0.4076059644, -0.6931471806],
        ],
        rtol=0,
        atol=1e-9,
    )
    np.testing.assert_allclose(
        pg.backward(loss)[x],
        [[0.9099694268, -0.5], [-0.2447284711, 0.5], [-0.6652409558, 0]],
        rtol=0,
        atol=1e-9,
    )
    np.testing.assert_allclose(np.exp(y.numpy()).sum(axis=0), 1, atol=1e-12)
    rng = np.random.default_rng(1)
    x0, w = rng.normal(size=(4, 5)), rng.normal(size=(4, 5))
    xt = pg.ag_param(x0)
    with pg.with_grad_tape():
        loss = pg.ag_sum(pg.ag_mul(pg.ag_log_softmax(xt), w))
    g = pg.backward(loss)[xt]

    def f(v):
        z = v - v.max(axis=0)
        return float(np.sum(w * (z - np.log(np.exp(z).sum(axis=0)))))

    h, fd = 1e-6, np.zeros_like(x0)
    for i in np.ndindex(x0.shape):
        e = np.zeros_like(x0)
        e[i] = h
        fd[i] = (f(x0 + e) - f(x0 - e)) / (2 * h)
    np.testing.assert_allclose(g, fd, atol=1e-6)


def test_gather_and_max_golden_values_gradients_and_errors(f64):
    x = pg.ag_param(M)
    w = np.array([[0.5, -1, 2, 3]])
    with pg.with_grad_tape():
        out = pg.ag_gather(x, [2, 0, 1, 1])
        loss = pg.ag_sum(pg.ag_mul(out, w))
    assert out.numpy().tolist() == [[5, -2, 4, 3]]
    want = np.zeros((3, 4))
    want[[2, 0, 1, 1], [0, 1, 2, 3]] = w[0]
    np.testing.assert_array_equal(pg.backward(loss)[x], want)
    assert pg.ag_argmax(M).tolist() == [1, 2, 0, 1]
    with pg.with_grad_tape():
        mx = pg.ag_max(x)
        loss = pg.ag_sum(mx)
    assert mx.numpy().tolist() == [[5, 7, 4, 3]]
    want = np.zeros((3, 4))
    want[[1, 2, 0, 1], [0, 1, 2, 3]] = 1  # the whole gradient to the first maximum
    np.testing.assert_array_equal(pg.backward(loss)[x], want)
    x2 = np.zeros((3, 2))
    for bad, msg in (
        (["a", "b"], "index must be numeric"),
        ([True, False], "index must be numeric"),
        ([1], "index has length 1, x has 2 columns"),
        ([np.nan, 1], "index contains NA"),
        ([0.5, 1], "index must be whole numbers"),
        ([0, 3], r"index out of range 0\.\.2"),
        ([-1, 0], r"index out of range 0\.\.2"),
        ([1e300, 0], r"index out of range 0\.\.2"),
    ):
        with pytest.raises(pg.PyggmlrError, match="ag_gather: " + msg):
            pg.ag_gather(x2, bad)


def test_sample_categorical_goldens_and_its_one_runif():
    pg.ggml_set_seed(1)
    x = np.array([0, 0, -1e4, 5, 0, 0.0]).reshape((3, 2), order="F")
    assert pg.ag_sample_categorical(x).tolist() == [1, 0]
    pg.ggml_set_seed(1)
    pg.random.runif(6)
    after = pg.random.get_state()
    pg.ggml_set_seed(1)
    pg.ag_sample_categorical(x)
    np.testing.assert_array_equal(pg.random.get_state(), after)  # exactly one runif(n * batch)
    pg.ggml_set_seed(42)
    assert pg.ag_sample_categorical(np.tile([[1.0], [0], [-1], [2]], (1, 5))).tolist() == [
        3,
        0,
        3,
        3,
        0,
    ]


def test_sample_categorical_frequencies_and_masks():
    logits = np.array([0.5, -1.0, 1.5, 0.0])
    p = np.exp(logits) / np.exp(logits).sum()
    pg.ggml_set_seed(42)
    draws = pg.ag_sample_categorical(np.tile(logits[:, None], (1, 20000)))
    freq = np.bincount(draws, minlength=4) / draws.size
    assert np.all(np.abs(freq - p) < 4 * np.sqrt(p * (1 - p) / draws.size)), (freq, p)
    masked = np.tile(np.array([[0.0], [-1e4], [0.3], [-1e4]]), (1, 5000))
    assert set(pg.ag_sample_categorical(masked).tolist()) == {0, 2}


def test_sample_normal_golden_gradients_and_shape_check(f64):
    pg.ggml_set_seed(1)
    out = pg.ag_sample_normal(np.zeros((2, 3)), np.full((2, 1), np.log(0.5)))
    np.testing.assert_allclose(
        out.numpy(),
        [[-0.3132269054, -0.4178143062, 0.1647538859], [0.0918216621, 0.7976404011, -0.4102341921]],
        atol=1e-9,
    )
    mu, ls = pg.ag_param(np.zeros((2, 3))), pg.ag_param(np.zeros((2, 1)))
    pg.ggml_set_seed(1)
    with pg.with_grad_tape():
        loss = pg.ag_sum(pg.ag_sample_normal(mu, ls))
    g = pg.backward(loss)
    pg.ggml_set_seed(1)
    eps = pg.random.rnorm(6).reshape((2, 3), order="F")
    np.testing.assert_array_equal(g[mu], np.ones((2, 3)))
    np.testing.assert_allclose(g[ls], eps.sum(axis=1, keepdims=True), rtol=0, atol=1e-15)
    st = pg.random.get_state()
    with pytest.raises(
        pg.ShapeError, match=r"ag_sample_normal: log_std is \[3, 1\], expected \[2, 3\] or \[2, 1\]"
    ):
        pg.ag_sample_normal(np.zeros((2, 3)), np.zeros((3, 1)))
    np.testing.assert_array_equal(pg.random.get_state(), st)  # the check comes before the draw
    pg.ag_dtype("f32")
    assert pg.ag_sample_normal(np.zeros((2, 3)), np.zeros((2, 3))).dtype == "f32"


def test_compiled_graphs_redraw_eps_and_retake_the_argmax():
    mu = pg.ag_param(np.zeros((2, 3)))
    ls = pg.ag_param(np.zeros((2, 1)))
    pg.ggml_set_seed(4)
    eager = [pg.ag_sample_normal(mu, ls).numpy() for _ in range(3)]
    pg.ggml_set_seed(4)
    x = pg.ag_tensor(np.zeros((2, 3)))
    step = pg.ag_compile(lambda v: pg.ag_add(pg.ag_sample_normal(mu, ls), v), x, build="forward")
    comp = [step(np.zeros((2, 3))).numpy() for _ in range(3)]
    assert all(np.array_equal(a, b) for a, b in zip(eager, comp)) and not np.array_equal(
        comp[0], comp[1]
    )
    fm = pg.ag_compile(lambda v: pg.ag_max(v), pg.ag_tensor(M), build="forward")
    assert fm(M[::-1].copy()).numpy().tolist() == [[5, 7, 4, 3]]
    assert fm(-M).numpy().tolist() == [[-1, 2, -4, 1e4]]


def test_plain_data_of_integer_results_is_read_as_f64_and_plain_operands_take_the_other_dtype():
    near_tie = np.array([[1.0], [1.0 + 1e-12]])  # equal in f32, distinct in R's doubles
    assert pg.ag_argmax(near_tie).tolist() == [1]
    ls = pg.ag_tensor(np.zeros((2, 1)), dtype="f64")
    assert (
        pg.ag_sample_normal(np.zeros((2, 3)), ls).dtype == "f64"
    )  # default f32: mu follows log_std
