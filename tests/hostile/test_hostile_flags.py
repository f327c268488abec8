"""Argument refusals of issue 28 on the Python side: a bare tensor given to step(), a list or an
array for requires_grad, an array for ag_set_blas, accumulate_steps and reshape sizes
under the one integer rule (R's .accum_steps / .reshape_size: the same rules and texts)."""

import numpy as np
import pytest

import pyggmlr as pg


def _w():
    return pg.ag_param(np.ones((2, 2)))


@pytest.mark.parametrize("accum", [1, 2])
def test_step_with_a_tensor_names_what_grads_must_be(accum):
    W = _w()
    W.grad = np.ones((2, 2))
    o = pg.optimizer_sgd([W], accumulate_steps=accum)
    with pytest.raises(pg.ArgumentError, match=r"optimizer_sgd step\(\): grads must be") as e:
        o.step(W)
    assert "backward(loss)" in str(e.value) and "no gradient" not in str(e.value)
    assert (o.t, o.accum_count) == (0, 0)  # a refused call counts nothing
    np.testing.assert_array_equal(W.numpy(), np.ones((2, 2)))


@pytest.mark.parametrize("bad", [[True], np.array([True, False]), np.array(True), 1, "yes", None])
def test_requires_grad_takes_a_bool_only(bad):
    t = pg.ag_tensor(np.ones((2, 2)))
    with pytest.raises(pg.ArgumentError, match="requires_grad must be True or False"):
        t.requires_grad = bad
    assert t.requires_grad is False
    t.requires_grad = np.True_  # numpy's bool is a bool
    assert t.requires_grad is True


def test_set_blas_with_an_array_is_a_typed_error():
    before = pg.ag_blas_name()
    for bad in (np.array(["builtin", "default"]), np.array(["builtin"]), ["builtin"], 1, None):
        with pytest.raises(pg.ArgumentError, match=r"^ag_set_blas\(\): name must be one of"):
            pg.ag_set_blas(bad)
    assert pg.ag_blas_name() == before


@pytest.mark.parametrize("bad", [0, -1, float("nan"), 1e10, "a", [2], True])
def test_accumulate_steps_names_the_optimizer(bad):
    with pytest.raises(pg.PyggmlrError, match="^optimizer_adam: accumulate_steps must be"):
        pg.optimizer_adam([_w()], accumulate_steps=bad)
    assert pg.optimizer_adam([_w()], accumulate_steps=1.9).accumulate_steps == 1


def test_reshape_sizes_stay_in_r_integer_range():
    x = pg.ag_tensor(np.zeros((0, 2)))
    for args in ((3e9, 0), (0, -(2**31))):
        with pytest.raises(
            pg.PyggmlrValueError,
            match=r"^ag_reshape: n(row|col) must be an integer within \+/-2147483647 \(-1: inferred",
        ):
            pg.ag_reshape(x, *args)
    with pytest.raises(pg.ArgumentError, match="^ag_reshape: nrow must be an integer within"):
        pg.ag_reshape(x, "a")  # the one integer rule: the wrong kind is an ArgumentError
    assert pg.ag_reshape(pg.ag_tensor(np.ones((2, 3))), 3, -1).shape == (3, 2)


def test_ag_accuracy_names_itself_not_ag_predict():
    m = pg.ag_linear(2, 3)
    with pytest.raises(pg.PyggmlrError, match="^ag_accuracy: batch_size"):
        pg.ag_accuracy(m, np.zeros((2, 4)), np.zeros(4, dtype=int), batch_size=0)
    with pytest.raises(pg.ShapeError, match="^ag_accuracy: x has no samples"):
        pg.ag_accuracy(m, np.zeros((2, 0)), np.zeros(0, dtype=int))
    with pytest.raises(pg.ShapeError, match="^ag_predict: x has no samples"):
        pg.ag_predict(m, np.zeros((2, 0)))


def test_a_conversion_error_names_the_function_called():
    for f, name in (
        (lambda: pg.ag_param("a"), "ag_param"),
        (lambda: pg.ag_tensor([[1, "a"]]), "ag_tensor"),
        (lambda: pg.ag_concat_rows("a", [[1.0]]), "ag_concat_rows"),
    ):
        with pytest.raises(pg.PyggmlrError, match=f"^{name}: "):
            f()


def test_refusals_classed_as_r_names_the_function(tmp_path):
    """Issue 29: the R side raised these with plain stop(); both languages now agree on the
    class (and the text where the languages allow)."""
    x = pg.ag_tensor(np.ones((2, 2)))
    with pytest.raises(
        pg.ArgumentError, match=r"^lr_scheduler_step: optimizer must be .*got ndarray"
    ):
        pg.lr_scheduler_step(np.ones(2), 2)
    with pytest.raises(
        pg.ArgumentError, match=r"^ag_compile\(\): fn must return an ag_tensor, got"
    ):
        pg.ag_compile(lambda x: 1.0, x, build="forward")
    with pytest.raises(
        pg.ArgumentError, match=r"^ag_gradcheck\(\): fn must return a 1x1 ag_tensor"
    ):
        pg.ag_gradcheck(lambda p: 1.0, {"W": _w()}, quiet=True)

    class Custom(pg.ag_sequential):
        def to_config(self):
            return {"type": "linear", "f": len}

    with pytest.raises(
        pg.ArgumentError, match=r"^ag_save_model\(\): the model's architecture config must be JSON"
    ):
        pg.ag_save_model(Custom(pg.ag_linear(2, 2)), tmp_path / "m.st")
    assert not (tmp_path / "m.st").exists()
