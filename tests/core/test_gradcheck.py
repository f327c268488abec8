"""ag_gradcheck: verdicts, exact restoration of inputs, the result object, printed lines."""

import math

import numpy as np
import pytest

import pyggmlr as pg


def _mlp_loss(d):
    h = pg.ag_tanh(pg.ag_add(pg.ag_matmul(d["W"], d["x"]), d["b"]))
    return pg.ag_mean(pg.ag_mul(h, h))


def _inputs(rng):
    return {
        "W": pg.ag_param(rng.normal(size=(3, 4))),
        "b": pg.ag_param(rng.normal(size=(3, 1))),
        "x": pg.ag_tensor(rng.normal(size=(4, 5))),
    }


def test_passes_on_correct_ops(f64, rng, capsys):
    r = pg.ag_gradcheck(_mlp_loss, _inputs(rng))
    assert r and r.passed
    assert set(r.errors) == {"W", "b"}  # x does not require grad: skipped
    assert r.max_err < 1e-8
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("[gradcheck] 'W': max_err = ") and out[0].endswith("  PASS")
    assert out[-1] == "[gradcheck] Overall: PASS"


def test_numerical_matches_closed_form(f64, rng):
    # d/dW sum(W x) = 1 x^T
    W, x = pg.ag_param(rng.normal(size=(2, 3))), rng.normal(size=(3, 4))
    r = pg.ag_gradcheck(lambda d: pg.ag_sum(pg.ag_matmul(d["W"], x)), {"W": W}, quiet=True)
    np.testing.assert_allclose(r.numerical["W"], np.ones((2, 4)) @ x.T, atol=1e-8)
    np.testing.assert_allclose(r.analytical["W"], np.ones((2, 4)) @ x.T, atol=1e-12)


def test_fails_on_wrong_gradient(f64, rng, capsys):
    """The numpy-constant trick: part of f is computed from the input's values outside the
    tape, so backward misses that term while finite differences see it."""
    W = pg.ag_param(rng.normal(size=(2, 2)))

    def fn(d):
        hidden = float(np.sum(d["W"].numpy() ** 2))  # invisible to the tape
        return pg.ag_add(pg.ag_sum(d["W"]), hidden)

    r = pg.ag_gradcheck(fn, {"W": W})
    assert not r and r.passed is False
    # the missing term is 2 W
    np.testing.assert_allclose(r.numerical["W"] - r.analytical["W"], 2 * W.numpy(), atol=1e-7)
    assert r.errors["W"] == pytest.approx(np.max(np.abs(2 * W.numpy())), rel=1e-6)
    out = capsys.readouterr().out
    assert "FAIL" in out and "[gradcheck] Overall: FAIL" in out


def test_missing_gradient_fails(f64, rng):
    A, B = pg.ag_param(rng.normal(size=(2, 2))), pg.ag_param(rng.normal(size=(2, 2)))
    r = pg.ag_gradcheck(lambda d: pg.ag_sum(d["A"]), {"A": A, "B": B}, quiet=True)
    assert not r
    assert r.errors["A"] < 1e-8 and math.isinf(r.errors["B"])
    assert r.per_input == {"A": True, "B": False}


def test_inputs_restored_bit_exactly(f64, rng):
    # values whose +eps -2eps +eps arithmetic would drift by an ulp
    vals = np.array([[0.1, 1e-300, 3.3333333333333335], [123456.789, -0.7, 1 / 3]])
    W = pg.ag_param(vals)
    W.grad = np.full((2, 3), 5.0)
    before = W.numpy().copy()
    pg.ag_gradcheck(
        lambda d: pg.ag_sum(pg.ag_exp(pg.ag_scale(d["W"], 1e-3))), {"W": W}, eps=1e-3, quiet=True
    )
    assert W.numpy().tobytes() == before.tobytes()
    np.testing.assert_array_equal(W.grad, np.full((2, 3), 5.0))  # .grad left as it was


def test_inputs_restored_after_fn_error(f64, rng):
    W = pg.ag_param(rng.normal(size=(2, 2)))
    before = W.numpy().copy()
    calls = []

    def fn(d):
        calls.append(1)
        if len(calls) == 4:
            raise RuntimeError("boom")
        return pg.ag_sum(d["W"])

    with pytest.raises(RuntimeError, match="boom"):
        pg.ag_gradcheck(fn, {"W": W}, quiet=True)
    assert W.numpy().tobytes() == before.tobytes()


def test_f32_input_restored_exactly(rng):
    W = pg.ag_param(rng.normal(size=(3, 3)))
    assert W.dtype == "f32"
    before = W.numpy().copy()
    pg.ag_gradcheck(
        lambda d: pg.ag_sum(pg.ag_mul(d["W"], d["W"])), {"W": W}, eps=1e-2, atol=1e-2, quiet=True
    )
    assert W.numpy().tobytes() == before.tobytes()


def test_tolerances(f64):
    W = pg.ag_param(np.array([[2.0]]))

    def fn(d):
        return pg.ag_add(pg.ag_sum(d["W"]), float(d["W"].numpy()[0, 0]) * 1e-3)  # hidden slope 1e-3

    assert not pg.ag_gradcheck(fn, {"W": W}, atol=1e-4, quiet=True)
    assert pg.ag_gradcheck(fn, {"W": W}, atol=2e-3, quiet=True)
    assert pg.ag_gradcheck(fn, {"W": W}, atol=0.0, rtol=2e-3, quiet=True)  # |a - n| <= rtol |n|


def test_verbose_prints_matrices(f64, capsys):
    W = pg.ag_param(np.array([[1.5, -2.0]]))
    pg.ag_gradcheck(lambda d: pg.ag_sum(pg.ag_mul(d["W"], d["W"])), {"W": W}, verbose=True)
    out = capsys.readouterr().out
    assert "analytical" in out and "numerical" in out and "3." in out and "-4." in out


def test_quiet_prints_nothing(f64, capsys):
    pg.ag_gradcheck(lambda d: pg.ag_sum(d["W"]), {"W": pg.ag_param(np.ones((2, 2)))}, quiet=True)
    assert capsys.readouterr().out == ""


def test_bad_arguments():
    with pytest.raises(pg.ArgumentError):
        pg.ag_gradcheck(lambda d: d, [pg.ag_param(np.ones((1, 1)))])
    with pytest.raises(pg.ArgumentError):
        pg.ag_gradcheck(lambda d: 1.0, {"W": pg.ag_param(np.ones((1, 1)))}, quiet=True)


# ---- f32 models with the default arguments (the core's dtype-aware defaults) -------------------


def _f32_inputs(shape, seed):
    pg.ggml_set_seed(seed)
    return pg.ag_param(pg.random.rnorm(shape[0] * shape[1]).reshape(shape, order="F"))


def test_gradcheck_f32_defaults_pass_on_correct_gradients():
    W = _f32_inputs((4, 3), 1)
    assert W.dtype == "f32"
    assert pg.ag_gradcheck(lambda i: pg.ag_sum(pg.ag_relu(i["W"])), {"W": W}, quiet=True)
    W1, W2 = _f32_inputs((6, 4), 2), _f32_inputs((3, 6), 3)
    x = np.linspace(-1, 1, 20).reshape(4, 5)
    y = np.array([0, 2, 1, 1, 0])

    def mlp(i):
        return pg.ag_softmax_cross_entropy_loss(
            pg.ag_matmul(i["W2"], pg.ag_tanh(pg.ag_matmul(i["W1"], x))), y
        )

    res = pg.ag_gradcheck(mlp, {"W1": W1, "W2": W2}, quiet=True)
    assert res and res.max_err < 1e-3
    big = _f32_inputs(
        (6, 6), 4
    )  # a loss in the thousands: the rounding-noise term keeps it passing
    assert pg.ag_gradcheck(
        lambda i: pg.ag_sum(pg.ag_exp(pg.ag_mul(i["B"], 3.0))), {"B": big}, quiet=True
    )


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_gradcheck_defaults_fail_on_a_wrong_gradient(dtype):
    pg.ag_dtype(dtype)
    try:
        W = _f32_inputs((3, 3), 5)
        # f(W) = sum(W * W) but the second factor is a constant copy: backward gives W, not 2W
        res = pg.ag_gradcheck(
            lambda i: pg.ag_sum(pg.ag_mul(i["W"], pg.ag_tensor(i["W"].data))), {"W": W}, quiet=True
        )
        assert not res and res.max_err > 0.1
        half = pg.ag_gradcheck(
            lambda i: pg.ag_sum(pg.ag_mul(pg.ag_mul(i["W"], i["W"]), 1.02)), {"W": W}, quiet=True
        )
        assert half  # a correct gradient next to it passes
    finally:
        pg.ag_dtype("f32")


def test_gradcheck_defaults_by_dtype_and_bad_eps():
    d = pg._core.ffi.new("double[3]")
    lib = pg._core.lib
    assert lib.pg_gradcheck_defaults(lib.PG_DTYPE_F64, d, d + 1, d + 2) == 0 and list(d) == [
        1e-5,
        1e-4,
        0.0,
    ]
    assert lib.pg_gradcheck_defaults(lib.PG_DTYPE_F32, d, d + 1, d + 2) == 0 and list(d) == [
        5e-3,
        1e-3,
        1e-2,
    ]
    W = _f32_inputs((2, 2), 6)
    with pytest.raises(pg.PyggmlrValueError, match="eps must be a finite number > 0"):
        pg.ag_gradcheck(lambda i: pg.ag_sum(i["W"]), {"W": W}, eps=0, quiet=True)
    with pytest.raises(pg.PyggmlrValueError, match="below the resolution of f32"):
        pg.ag_gradcheck(lambda i: pg.ag_sum(i["W"]), {"W": W}, eps=1e-12, quiet=True)
    np.testing.assert_array_equal(W.data, _f32_inputs((2, 2), 6).data)  # restored after the refusal
