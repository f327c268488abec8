"""ggmlR 0.8.6's ag_capture family on the CPU (spec §11): the same checks and outputs as R."""

import math

import numpy as np
import pytest

import pyggmlr as pg


def test_capture_named_arguments_and_outputs(f64):
    W = pg.ag_param(np.array([[1.0, 3.0, 5.0], [2.0, 4.0, 6.0]]))
    f = pg.ag_capture(lambda x: pg.ag_matmul(W, x), params=[W])
    assert f.captures == {}
    np.testing.assert_array_equal(f(x=[1, 0, 1]), [[6.0], [8.0]])  # a vector is one column
    with pytest.raises(
        pg.ArgumentError, match="ag_capture: call the captured function with named arguments"
    ):
        f([1, 0, 1])
    g = pg.ag_capture(lambda a, b: {"s": pg.ag_add(a, b), "d": pg.ag_sub(a, b)})
    out = g(a=[[3.0]], b=[[1.0]])
    assert list(out) == ["s", "d"] and out["s"][0, 0] == 4 and out["d"][0, 0] == 2
    with pytest.raises(pg.ArgumentError, match="params must be a list of ag_tensors"):
        pg.ag_capture(lambda: 0, params=[1])
    assert pg.ag_capture_free(f) is f
    with pytest.raises(pg.ArgumentError, match="ag_capture_free: not a captured function"):
        pg.ag_capture_free(len)


def test_capture_step_equals_plain_adam_and_checks(f64):
    mk = lambda: pg.ag_param(np.array([[0.5, 0.1, 0.9], [-0.2, 0.3, -1.0]]))  # noqa: E731
    x = np.linspace(-1, 1, 12).reshape(3, 4, order="F")
    y = np.array([[1.0, 0, 1, 0], [0, 1, 1, 0]])
    W1 = mk()
    o1 = pg.optimizer_adam({"W": W1}, lr=0.05)
    step = pg.ag_capture_step(lambda x, y: pg.ag_mse_loss(pg.ag_matmul(W1, x), y), optimizer=o1)
    W2 = mk()
    o2 = pg.optimizer_adam({"W": W2}, lr=0.05)
    for _ in range(3):
        l1 = step(x=x, y=y)
        with pg.with_grad_tape():
            l2 = pg.ag_mse_loss(pg.ag_matmul(W2, x), y)
        o2.step(pg.backward(l2))
        o2.zero_grad()
        np.testing.assert_array_equal(l1, l2.numpy())
        np.testing.assert_array_equal(W1.numpy(), W2.numpy())
    with pytest.raises(
        pg.ShapeError,
        match=r"ag_capture_step: inputs \(x:3x2, y:2x2\) differ from the first call "
        r"\(x:3x4, y:2x4\); shapes are fixed by the recording",
    ):
        step(x=x[:, :2], y=y[:, :2])
    W3 = mk()
    o3 = pg.optimizer_adam({"W": W3}, lr=0.05)
    cs = pg.ag_capture_step(
        lambda x, y: {"loss": pg.ag_mse_loss(pg.ag_matmul(W3, x), y), "out": pg.ag_matmul(W3, x)},
        optimizer=o3,
        max_grad_norm=0.01,
    )
    r = cs(x=x, y=y)
    assert list(r) == ["loss", "out", "grad_norm"] and r["grad_norm"][0, 0] > 0.01
    assert pg.ag_capture_set(cs, 5) is cs
    with pytest.raises(pg.StateError, match="^ag_capture_set: this step was created without"):
        pg.ag_capture_set(step, 1)
    with pytest.raises(pg.ArgumentError, match=r"not a function from ag_capture_step\(\)"):
        pg.ag_capture_set(len, 1)
    for bad in (-1, math.inf, True, "1"):
        with pytest.raises(
            pg.PyggmlrValueError,
            match="^ag_capture_step: max_grad_norm must be one positive finite number, got",
        ):
            pg.ag_capture_step(lambda x: x, optimizer=o3, max_grad_norm=bad)
    with pytest.raises(pg.ArgumentError, match=r"only optimizer_adam\(\) is supported"):
        pg.ag_capture_step(lambda x: x, optimizer=pg.optimizer_sgd([W3]))
    nl = pg.ag_capture_step(lambda x: {"out": pg.ag_matmul(W3, x)}, optimizer=o3)
    with pytest.raises(pg.PyggmlrValueError, match="fn must return the loss, or a named list"):
        nl(x=x)
    W4 = mk()
    o4 = pg.optimizer_adam({"W": W4}, lr=0.05)
    ns = pg.ag_capture_step(
        lambda x: pg.ag_sum(pg.ag_mul(pg.ag_matmul(W4, x), math.nan)), optimizer=o4, max_grad_norm=1
    )
    before = W4.numpy()
    with pytest.raises(
        pg.PyggmlrValueError, match="the gradient norm is NaN; the update was not applied"
    ):
        ns(x=x)
    np.testing.assert_array_equal(W4.numpy(), before)
    assert o4.t == 0


def test_capture_step_failed_call_fixes_no_shape_and_bad_arguments_are_typed():
    W = pg.ag_param(np.ones((3, 4)))
    opt = pg.optimizer_adam([W], lr=0.1)
    st = pg.ag_capture_step(lambda x: pg.ag_sum(pg.ag_matmul(W, x)), optimizer=opt)
    with pytest.raises(pg.ShapeError, match="ag_matmul"):
        st(x=np.ones((5, 2)))  # fails inside fn: records no shape
    st(x=np.ones((4, 2)))  # so this is the first call
    with pytest.raises(pg.ShapeError, match=r"differ from the first call \(x:4x2\)"):
        st(x=np.ones((4, 3)))
    with pytest.raises(pg.ArgumentError, match="argument 'x' must be numeric"):
        st(x="abc")


def test_gradcheck_negative_tolerance_is_refused():
    W = pg.ag_param(np.ones((2, 2)))
    with pytest.raises(pg.PyggmlrValueError, match="atol and rtol must be >= 0"):
        pg.ag_gradcheck(lambda i: pg.ag_sum(i["W"]), {"W": W}, atol=-1, quiet=True)


def test_capture_refusals_and_plain_number_results_are_rs():
    """ag_capture(1): ggmlR's stopifnot text; None or a string refused before fn runs (None was
    a NaN tensor, "1" the number 1); a plain number result is a 1x1 matrix (was a TypeError)."""
    with pytest.raises(
        pg.ArgumentError, match=r"^ag_capture: is\.function\(fn\) is not TRUE \(got 1\)$"
    ):
        pg.ag_capture(1)
    calls = []
    f = pg.ag_capture(lambda x: calls.append(1) or x)
    for v, kind in ((None, "NoneType"), ("1", "str")):
        with pytest.raises(pg.ArgumentError, match=f"^ag_capture: argument 'x' must be numeric "
                           fr"\(a matrix or a vector\), got {kind}$"):  # fmt: skip
            f(x=v)
    assert calls == []
    out = pg.ag_capture(lambda x: 3.0)(x=np.ones((2, 1)))
    assert out.shape == (1, 1) and out[0, 0] == 3.0
    assert pg.ag_capture(lambda x: np.array([1.0, 2.0]))(x=1.0).shape == (2, 1)


def test_gradcheck_checks_fn_first_and_prints_inf_as_r(capsys):
    with pytest.raises(
        pg.ArgumentError, match=r"^ag_gradcheck\(\): fn must be a function, got int$"
    ):
        pg.ag_gradcheck(1, 2)  # inputs was checked first
    with pytest.raises(pg.ArgumentError,
                       match=r"^ag_gradcheck\(\): inputs must be a named list, got int$"):  # fmt: skip
        pg.ag_gradcheck(lambda i: i, 2)
    a, b = pg.ag_param(np.ones((1, 1))), pg.ag_param(np.ones((1, 1)))
    pg.ag_gradcheck(lambda i: pg.ag_sum(i["a"]), {"a": a, "b": b})
    assert "[gradcheck] 'b': max_err = Inf  FAIL" in capsys.readouterr().out.splitlines()
