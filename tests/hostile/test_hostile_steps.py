"""Hostile arguments (issue 19): optimizer steps that would change nothing are errors, and the
coercions the ggmlR spec documents (truncated counts and seeds, isTRUE flags) are asserted, not
refused (docs/reliability.md, "## Arguments"). The table of refusals: test_hostile_args.py."""

import numpy as np
import pytest
from _hostile import X4, _model, _opt, _w

import pyggmlr as pg

# ---------------------------------------------------------------------------------------------
# optimizer steps that would change nothing


def test_step_without_any_gradient_is_an_error_and_counts_nothing():
    W = _w()
    for opt in (pg.optimizer_adam([W]), pg.optimizer_sgd([W], momentum=0.9)):
        with pytest.raises(
            pg.StateError, match=r"step\(\): no gradient for any of its 1 parameter"
        ):
            opt.step()
        assert opt.t == 0 and opt.accum_count == 0
        np.testing.assert_array_equal(W.numpy(), np.ones((2, 2)))


def test_step_with_an_off_tape_loss_is_an_error():
    W = _w()
    opt = pg.optimizer_adam([W])
    loss = pg.ag_sum(pg.ag_mul(W, W))  # no tape: nothing recorded, no .grad
    try:
        pg.backward(loss)
    except pg.PyggmlrError:
        pass  # the tape side may refuse first (another issue item); the optimizer must too
    with pytest.raises(pg.StateError, match="no gradient for any"):
        opt.step()
    assert opt.t == 0


def test_step_with_another_models_map_is_an_error():
    W, other = _w(), pg.ag_param(np.ones((3, 1)))
    with pg.with_grad_tape():
        loss = pg.ag_sum(other)
    g = pg.backward(loss)
    opt = pg.optimizer_sgd([W])
    for kw in ({}, {"sum_grads": True}):
        with pytest.raises(pg.StateError, match="optimizer_sgd step"):
            opt.step(g, **kw)
    assert opt.accum_count == 0


@pytest.mark.parametrize("static", [None, False])
@pytest.mark.parametrize("nbatch_logical", [2, 4])
def test_fit_with_another_models_optimizer_is_an_error(static, nbatch_logical):
    m, other = _model(), pg.ag_linear(2, 3)
    before = {k: t.numpy() for k, t in m.parameters().items()}
    opt = pg.optimizer_adam(other.parameters())
    # refused before training (it was the first step's StateError "no gradient for any ...")
    with pytest.raises(pg.PyggmlrValueError, match="the optimizer updates none of the model's"):
        pg.ag_fit(
            m,
            X4,
            np.ones((3, 4)),
            loss="mse",
            optimizer=opt,
            batch_size=2,
            nbatch_logical=nbatch_logical,
            nepoch=1,
            silent=True,
            static=static,
        )
    assert opt.t == 0
    for k, t in m.parameters().items():
        np.testing.assert_array_equal(t.numpy(), before[k])


def test_gradients_for_some_parameters_are_a_step():
    W, b = _w(), pg.ag_param(np.ones((2, 1)))
    opt = pg.optimizer_sgd({"W": W, "b": b}, lr=0.5)
    W.grad = np.full((2, 2), 2.0)
    assert opt.step() is True
    np.testing.assert_array_equal(W.numpy(), np.zeros((2, 2)))
    np.testing.assert_array_equal(b.numpy(), np.ones((2, 1)))  # no gradient: unchanged


def test_counting_calls_of_an_accumulating_step_read_nothing():
    W = _w()
    opt = pg.optimizer_adam([W], accumulate_steps=2)
    assert opt.step() is False  # ggmlR: counts only, nothing read
    with pytest.raises(pg.StateError):
        opt.step()  # the applying call has nothing to apply
    assert opt.t == 0 and opt.accum_count == 1


def test_negative_second_moments_are_refused_and_nothing_is_written():
    W = _w()
    opt = pg.optimizer_adam([W])
    W.grad = np.ones((2, 2))
    opt.step()
    st = opt.state()
    m_before, v_before = opt.m, opt.v
    st["slots"]["v"][0] = -np.ones((2, 2))  # slots by position
    with pytest.raises(pg.PyggmlrValueError, match="slot 'v' of parameter 1 has a negative entry"):
        opt.load_state(st)
    for a, b in ((opt.m, m_before), (opt.v, v_before)):
        np.testing.assert_array_equal(a["1"], b["1"])


# ---------------------------------------------------------------------------------------------
# documented coercions (the ggmlR spec gives them): asserted, not refused


def test_seed_is_truncated_as_r_does():
    assert pg.ggml_set_seed(1.5) == 1
    a = pg.random.runif(3)
    pg.ggml_set_seed(1)
    np.testing.assert_array_equal(a, pg.random.runif(3))


def test_accumulate_steps_is_truncated_as_r_does():
    assert pg.optimizer_sgd([_w()], accumulate_steps=1.9).accumulate_steps == 1


def test_spec_flags_go_through_istrue():
    # ggmlR's isTRUE flags (layer norm's elementwise_affine, attention's bias, the optimizers'
    # average): only True is true, in both languages
    assert pg.ag_layer_norm(3, elementwise_affine="no").elementwise_affine is False
    assert pg.ag_multihead_attention(4, 2, bias="yes").b_o is None
    assert pg.optimizer_adam([_w()], average="no").average is False


def test_r_counts_are_truncated_as_r_does():
    pg.ggml_set_seed(3)
    a = pg.random.runif(2.5)  # R's runif(2.5) draws 2
    pg.ggml_set_seed(3)
    np.testing.assert_array_equal(a, pg.random.runif(2))


def test_flags_and_names_of_the_wrong_kind():
    for call, fn, arg in (
        (
            lambda: pg.ag_fit(_model(), X4, np.ones((3, 4)), loss="mse", shuffle="no", silent=True),
            "ag_fit",
            "shuffle",
        ),
        (lambda: pg.check_grad_anomaly([_w()], max_abs="x"), "check_grad_anomaly", "max_abs"),
        (
            lambda: pg.check_grad_anomaly([_w()], action=np.array(["warn"])),
            "check_grad_anomaly",
            "action",
        ),
        (
            lambda: pg.lr_scheduler_cyclic(_opt(), 0.1, 1, mode=["triangular"]),
            "lr_scheduler_cyclic",
            "mode",
        ),
        (lambda: pg.ag_linear(2, 3, activation=np.array(["relu"])), "ag_linear", "activation"),
        (lambda: pg.ag_sum(pg.ag_tensor(np.ones((3, 2))), dim=np.array([1])), "ag_sum", "dim"),
    ):
        with pytest.raises(pg.PyggmlrError) as ei:
            call()
        assert fn in str(ei.value) and arg in str(ei.value), str(ei.value)


def test_malformed_optimizer_states_are_refused():
    o = pg.optimizer_adam({"W": _w()})
    for key, val, pat in (
        ("names", 42, "names must be NULL"),
        ("type", np.array(["adam"]), "state is for"),
        ("t", 1.5, "not counts"),
        ("slots", None, "state has 0 parameters"),
    ):
        st = o.state()
        st[key] = val
        with pytest.raises(pg.PyggmlrValueError, match=pat):
            o.load_state(st)
