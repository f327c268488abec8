"""The gradient tape: scopes, nesting, what is recorded, backward's map and .grad."""

import numpy as np
import pytest

import pyggmlr as pg
from pyggmlr._core import lib


def nodes():
    return lib.pg_tape_nodes()


def test_context_manager_records_and_stops(f64):
    w = pg.ag_param([[1.0, 2.0]])
    assert lib.pg_tape_depth() == 0
    with pg.with_grad_tape() as scope:
        assert scope is not None and lib.pg_tape_depth() == 1 and lib.pg_tape_enabled()
        loss = pg.ag_sum(pg.ag_scale(w, 3.0))
    assert nodes() == 2 and lib.pg_tape_depth() == 0 and not lib.pg_tape_enabled()
    assert loss.op == "sum" and loss.requires_grad and not loss.is_leaf
    np.testing.assert_array_equal(pg.backward(loss)[w], [[3.0, 3.0]])


def test_callable_form_returns_value(f64):
    w = pg.ag_param([[1.0, 2.0]])
    loss = pg.with_grad_tape(lambda a, k=1.0: pg.ag_sum(pg.ag_scale(a, k)), w, k=5.0)
    assert loss.item() == 15.0
    np.testing.assert_array_equal(pg.backward(loss)[w], [[5.0, 5.0]])
    with pytest.raises(TypeError):
        pg.with_grad_tape(3)


def test_scope_closes_on_exception(f64):
    w = pg.ag_param([[1.0]])
    with pytest.raises(RuntimeError):
        with pg.with_grad_tape():
            pg.ag_scale(w, 2.0)
            raise RuntimeError("boom")
    assert lib.pg_tape_depth() == 0 and not lib.pg_tape_enabled()
    assert nodes() == 1  # nodes stay for inspection until the next tape / zero_grad


def test_ops_outside_tape_not_recorded(f64):
    w = pg.ag_param([[1.0, 2.0]])
    out = pg.ag_sum(pg.ag_scale(w, 2.0))
    assert nodes() == 0
    assert out.requires_grad and out.is_leaf  # requires_grad follows the inputs, as in ggmlR
    # backward() on it would return a map with the loss alone: an error that says why (issue 20)
    with pytest.raises(
        pg.StateError,
        match=r"backward\(\): the loss \[1x1\] f64 is not on the current tape: compute it inside with_grad_tape\(\)",
    ):
        pg.backward(out)
    assert w.grad is None


def test_nested_tapes_keep_outer(f64):
    w = pg.ag_param([[1.0, 2.0]])
    v = pg.ag_param([[3.0, -1.0]])
    with pg.with_grad_tape():
        a = pg.ag_mul(w, v)
        with pg.with_grad_tape():
            assert lib.pg_tape_depth() == 2
            b = pg.ag_scale(a, 2.0)
            inner = pg.with_grad_tape(lambda: pg.ag_add(b, w))
        assert lib.pg_tape_enabled()  # recording continues after the inner scope
        loss = pg.ag_sum(pg.ag_mul(inner, v))
    assert nodes() == 5
    g = pg.backward(loss)
    # loss = sum((2 w v + w) v) -> dw = 2 v^2 + v, dv = 4 w v + w
    np.testing.assert_allclose(g[w], 2 * np.array([[9.0, 1.0]]) + [[3.0, -1.0]])
    np.testing.assert_allclose(g[v], 4 * np.array([[3.0, -2.0]]) + [[1.0, 2.0]])


def test_new_outermost_scope_clears_tape(f64):
    w = pg.ag_param([[1.0]])
    with pg.with_grad_tape():
        old = pg.ag_scale(w, 2.0)
    assert nodes() == 1
    with pg.with_grad_tape():
        assert nodes() == 0
        new = pg.ag_scale(w, 3.0)
    assert nodes() == 1
    assert old.is_leaf and not new.is_leaf
    # the cleared node is gone: backward through `old` does not reach w
    g = pg.backward(pg.with_grad_tape(lambda: pg.ag_sum(old)))
    assert w not in g and old in g


def test_ag_no_grad_inside_tape(f64):
    w = pg.ag_param([[1.0]])
    with pg.with_grad_tape():
        with pg.ag_no_grad():
            pg.ag_scale(w, 2.0)
        assert lib.pg_tape_enabled()
        pg.ag_scale(w, 2.0)
    assert nodes() == 1


def test_no_grad_survives_nested_tape(f64):
    w = pg.ag_param([[1.0]])
    with pg.with_grad_tape():
        with pg.ag_no_grad():
            with pg.with_grad_tape():
                pg.ag_scale(w, 2.0)  # an explicit tape records
            pg.ag_scale(w, 2.0)  # back under no_grad: not recorded
        pg.ag_scale(w, 2.0)
    assert nodes() == 2
    assert not lib.pg_tape_enabled()


def test_backward_on_empty_tape(f64):
    pg.ag_tape_clear()
    w = pg.ag_param([[2.0]])
    with pytest.raises(
        pg.StateError, match="is not on the current tape"
    ):  # a leaf: no recorded op produced it
        pg.backward(w)
    with pytest.raises(
        pg.StateError,
        match=r"the loss \[1x1\] f64 does not require grad: nothing it was computed from",
    ):
        pg.backward(pg.ag_tensor([[2.0]]))
    assert w.grad is None


def test_backward_after_the_tape_was_cleared_or_in_another_thread(f64):
    import threading

    w = pg.ag_param([[1.0, 2.0]])
    with pg.with_grad_tape():
        loss = pg.ag_sum(pg.ag_pow(w, 2))
    pg.ag_tape_clear()
    with pytest.raises(pg.StateError, match="is not on the current tape"):
        loss.backward()
    with pg.with_grad_tape():
        loss = pg.ag_sum(pg.ag_pow(w, 2))
    with pg.with_grad_tape():  # the next tape scope empties the tape
        pass
    with pytest.raises(pg.StateError, match="is not on the current tape"):
        pg.backward(loss)
    with pg.with_grad_tape():
        loss = pg.ag_sum(pg.ag_pow(w, 2))
    errs = []

    def other():
        try:
            pg.backward(loss)
        except pg.StateError as e:
            errs.append(str(e))

    th = threading.Thread(target=other)
    th.start()
    th.join()
    assert errs and "recorded on another thread's tape" in errs[0]
    g = pg.backward(loss)  # its own thread still can
    np.testing.assert_array_equal(g[w], [[2.0, 4.0]])


def test_pytorch_order_zero_grad_before_backward_trains(f64):
    """loss = f(); opt.zero_grad(); loss.backward(); opt.step(): zero_grad keeps a tape that no
    backward() has used yet, and empties a used one (ggmlR's order) as before."""
    w = pg.ag_param([[1.0, -2.0]])
    opt = pg.optimizer_sgd([w], lr=0.1)
    for _ in range(3):
        with pg.with_grad_tape():
            loss = pg.ag_sum(pg.ag_pow(w, 2))
        opt.zero_grad()
        loss.backward()
        assert opt.step()
    np.testing.assert_allclose(w.numpy(), [[1.0 * 0.8**3, -2.0 * 0.8**3]], rtol=1e-15)
    assert nodes() > 0
    opt.zero_grad()  # after the backward: empties the tape, as ggmlR's zero_grad
    assert nodes() == 0


def test_backward_twice_accumulates_grad(f64):
    w = pg.ag_param([[1.0, -2.0]])
    with pg.with_grad_tape():
        loss = pg.ag_sum(pg.ag_pow(w, 2))
    g1 = pg.backward(loss)
    np.testing.assert_array_equal(w.grad, [[2.0, -4.0]])
    g2 = loss.backward()
    np.testing.assert_array_equal(g2[w], [[2.0, -4.0]])
    np.testing.assert_array_equal(w.grad, [[4.0, -8.0]])
    np.testing.assert_array_equal(g1[w], [[2.0, -4.0]])
    w.zero_grad()
    pg.backward(loss)
    np.testing.assert_array_equal(w.grad, [[2.0, -4.0]])


def test_gradient_map_keys(f64):
    w = pg.ag_param([[1.0, 2.0]])
    b = pg.ag_param([[0.5]])
    c = pg.ag_tensor([[4.0, 4.0]])
    with pg.with_grad_tape():
        h = pg.ag_add(pg.ag_mul(w, c), b)
        loss = pg.ag_sum(h)
    g = pg.backward(loss)
    expect = np.array([[4.0, 4.0]])
    np.testing.assert_array_equal(g[w], expect)
    np.testing.assert_array_equal(g[w.id], expect)
    np.testing.assert_array_equal(g[str(w.id)], expect)
    np.testing.assert_array_equal(g[b], [[2.0]])
    assert w in g and w.id in g and str(w.id) in g
    assert c not in g and c.id not in g and "nope" not in g and 3.5 not in g
    with pytest.raises(KeyError):
        g[c]
    with pytest.raises(KeyError):
        g[str(c.id)]
    keys = list(g)
    assert len(g) == len(keys) == 5  # loss, h, the mul, w, b
    assert set(keys) >= {loss.id, h.id, w.id, b.id}
    assert all(isinstance(k, int) for k in keys)
    assert dict(g.items())[w.id].shape == (1, 2)
    assert g.get(c) is None
    assert "Gradients" in repr(g)
    gt = g.get_tensor(w)
    assert isinstance(gt, pg.Tensor)
    np.testing.assert_array_equal(gt.numpy(), expect)


def test_map_values_are_copies(f64):
    w = pg.ag_param([[1.0]])
    with pg.with_grad_tape():
        loss = pg.ag_sum(pg.ag_scale(w, 2.0))
    g = pg.backward(loss)
    a = g[w]
    a[0, 0] = 99
    assert w.grad[0, 0] == 2.0


def test_loss_must_be_1x1(f64):
    w = pg.ag_param([[1.0, 2.0]])
    with pg.with_grad_tape():
        out = pg.ag_scale(w, 2.0)
    with pytest.raises(pg.ShapeError, match=r"1x1"):
        pg.backward(out)
    with pytest.raises(pg.ShapeError):
        out.backward()


def test_deep_chain_backward(f64):
    w = pg.ag_param([[1.0]])
    n = 5000
    with pg.with_grad_tape():
        h = w
        for _ in range(n):
            h = pg.ag_add(h, w)  # h = (n + 1) w, each step uses w again
        loss = pg.ag_sum(h)
    assert nodes() == n + 1
    g = pg.backward(loss)
    assert g[w][0, 0] == n + 1
    assert w.grad[0, 0] == n + 1


def test_deep_chain_of_unary_ops(f64):
    x = pg.ag_param([[0.3]])
    with pg.with_grad_tape():
        h = x
        for _ in range(5000):
            h = pg.ag_scale(h, 1.0001)
        loss = pg.ag_sum(h)
    assert pg.backward(loss)[x][0, 0] == pytest.approx(1.0001**5000, rel=1e-10)


def test_zero_grad_clears_tape_and_grads(f64):
    w = pg.ag_param([[1.0]])
    opt = pg.optimizer_sgd([w], lr=0.1)
    with pg.with_grad_tape():
        loss = pg.ag_sum(pg.ag_scale(w, 2.0))
    pg.backward(loss)
    assert nodes() == 2 and w.grad is not None
    opt.zero_grad()
    assert nodes() == 0 and w.grad is None


def test_tape_clear_inside_scope_keeps_recording(f64):
    w = pg.ag_param([[1.0]])
    with pg.with_grad_tape():
        pg.ag_scale(w, 2.0)
        pg.ag_tape_clear()
        loss = pg.ag_sum(pg.ag_scale(w, 3.0))
    assert nodes() == 2
    assert pg.backward(loss)[w][0, 0] == 3.0


def test_backward_does_not_record(f64):
    w = pg.ag_param([[1.0, 2.0]])
    with pg.with_grad_tape():
        loss = pg.ag_sum(pg.ag_matmul(w, pg.ag_tensor([[1.0], [1.0]])))
        before = nodes()
        pg.backward(loss)
        assert nodes() == before


def test_tensors_kept_alive_by_tape(f64):
    w = pg.ag_param([[1.0, 2.0]])
    with pg.with_grad_tape():
        loss = pg.ag_sum(pg.ag_exp(pg.ag_scale(w, 1.0)))  # intermediates have no Python handle
    np.testing.assert_allclose(pg.backward(loss)[w], np.exp([[1.0, 2.0]]))


def test_backward_requires_tensor():
    with pytest.raises(TypeError, match="backward"):
        pg.backward(1.0)
    with pytest.raises(pg.PyggmlrError):
        pg.backward(np.ones((1, 1)))
