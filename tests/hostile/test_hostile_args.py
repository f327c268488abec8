"""Hostile and careless arguments (issue 19, "Silent acceptance" and the argument items of
"Unclear errors"): each is refused with a typed error whose message names the function and the
argument, or is documented behaviour asserted here (docs/reliability.md, "## Arguments")."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyggmlr as pg
from pyggmlr.errors import INT_MAX, check_int, check_num

NAN, INF = float("nan"), float("inf")


def _w():
    return pg.ag_param(np.ones((2, 2)))


def _opt():
    return pg.optimizer_sgd([_w()])


def _model():
    pg.ggml_set_seed(1)
    return pg.ag_sequential(pg.ag_linear(2, 3))


def _register_42():
    pg.ag_register_layer("hostile_42", lambda cfg: 42)
    return pg.ag_module_from_config({"type": "hostile_42"})


X4 = np.ones((2, 4))
V, A, S = pg.PyggmlrValueError, pg.ArgumentError, pg.ShapeError

# (label, call, exception type, function named, argument named)
CASES = [
    ("adam lr Inf", lambda: pg.optimizer_adam([_w()], lr=INF), V, "optimizer_adam", "lr"),
    ("adam lr NaN", lambda: pg.optimizer_adam([_w()], lr=NAN), V, "optimizer_adam", "lr"),
    ("adam lr < 0", lambda: pg.optimizer_adam([_w()], lr=-1), V, "optimizer_adam", "lr"),
    ("adam beta1 1", lambda: pg.optimizer_adam([_w()], beta1=1), V, "optimizer_adam", "beta1"),
    (
        "adam beta2 -0.1",
        lambda: pg.optimizer_adam([_w()], beta2=-0.1),
        V,
        "optimizer_adam",
        "beta2",
    ),
    ("adam eps 0", lambda: pg.optimizer_adam([_w()], eps=0), V, "optimizer_adam", "eps"),
    ("adam eps Inf", lambda: pg.optimizer_adam([_w()], eps=INF), V, "optimizer_adam", "eps"),
    (
        "adam weight_decay < 0",
        lambda: pg.optimizer_adam([_w()], weight_decay=-1),
        V,
        "optimizer_adam",
        "weight_decay",
    ),
    (
        "sgd momentum 2",
        lambda: pg.optimizer_sgd([_w()], momentum=2),
        V,
        "optimizer_sgd",
        "momentum",
    ),
    (
        "sgd momentum Inf",
        lambda: pg.optimizer_sgd([_w()], momentum=INF),
        V,
        "optimizer_sgd",
        "momentum",
    ),
    ("sgd lr True", lambda: pg.optimizer_sgd([_w()], lr=True), A, "optimizer_sgd", "lr"),
    ("opt.lr = Inf", lambda: setattr(_opt(), "lr", INF), V, "optimizer_sgd", "lr"),
    ("ag_clamp lo NaN", lambda: pg.ag_clamp(pg.ag_tensor([1.0]), NAN, 1), V, "ag_clamp", "lo"),
    ("ag_clamp hi NaN", lambda: pg.ag_clamp(pg.ag_tensor([1.0]), 0, NAN), V, "ag_clamp", "hi"),
    ("ag_clamp lo > hi", lambda: pg.ag_clamp(pg.ag_tensor([1.0]), 2, 1), V, "ag_clamp", "lo"),
    ("dropout -1", lambda: pg.ag_dropout(-1), V, "ag_dropout", "rate"),
    (
        "mha dropout 1",
        lambda: pg.ag_multihead_attention(4, 2, dropout=1),
        V,
        "ag_multihead_attention",
        "dropout",
    ),
    (
        "mha dropout 'x'",
        lambda: pg.ag_multihead_attention(4, 2, dropout="x"),
        A,
        "ag_multihead_attention",
        "dropout",
    ),
    (
        "activation_frac -1",
        lambda: pg.ag_estimate_training_memory((4, 4), activation_frac=-1, quiet=True),
        V,
        "ag_estimate_training_memory",
        "activation_frac",
    ),
    (
        "estimate batch_size 2.5",
        lambda: pg.ag_estimate_training_memory((4, 4), batch_size=2.5, quiet=True),
        V,
        "ag_estimate_training_memory",
        "batch_size",
    ),
    (
        "patience 1e12",
        lambda: pg.ag_early_stopping(patience=1e12),
        V,
        "ag_early_stopping",
        "patience",
    ),
    ("patience -1", lambda: pg.ag_early_stopping(patience=-1), V, "ag_early_stopping", "patience"),
    (
        "patience 'a'",
        lambda: pg.ag_early_stopping(patience="a"),
        A,
        "ag_early_stopping",
        "patience",
    ),
    (
        "min_delta NaN",
        lambda: pg.ag_early_stopping(min_delta=NAN),
        V,
        "ag_early_stopping",
        "min_delta",
    ),
    (
        "min_delta < 0",
        lambda: pg.ag_early_stopping(min_delta=-1),
        V,
        "ag_early_stopping",
        "min_delta",
    ),
    ("monitor 3", lambda: pg.ag_early_stopping(monitor=3), A, "ag_early_stopping", "monitor"),
    (
        "checkpoint every 'a'",
        lambda: pg.ag_model_checkpoint("m.st", every="a"),
        A,
        "ag_model_checkpoint",
        "every",
    ),
    (
        "step_size 0",
        lambda: pg.lr_scheduler_step(_opt(), step_size=0),
        V,
        "lr_scheduler_step",
        "step_size",
    ),
    (
        "step gamma 0",
        lambda: pg.lr_scheduler_step(_opt(), 2, gamma=0),
        V,
        "lr_scheduler_step",
        "gamma",
    ),
    (
        "step gamma Inf",
        lambda: pg.lr_scheduler_step(_opt(), 2, gamma=INF),
        V,
        "lr_scheduler_step",
        "gamma",
    ),
    (
        "cosine T_max 0",
        lambda: pg.lr_scheduler_cosine(_opt(), T_max=0),
        V,
        "lr_scheduler_cosine",
        "T_max",
    ),
    (
        "cosine lr_min < 0",
        lambda: pg.lr_scheduler_cosine(_opt(), 4, lr_min=-1),
        V,
        "lr_scheduler_cosine",
        "lr_min",
    ),
    (
        "cyclic base_lr < 0",
        lambda: pg.lr_scheduler_cyclic(_opt(), -1, 1),
        V,
        "lr_scheduler_cyclic",
        "base_lr",
    ),
    (
        "onecycle div_factor 0",
        lambda: pg.lr_scheduler_onecycle(_opt(), 0.1, 10, div_factor=0),
        V,
        "lr_scheduler_onecycle",
        "div_factor",
    ),
    (
        "onecycle max_momentum 1",
        lambda: pg.lr_scheduler_onecycle(_opt(), 0.1, 10, max_momentum=1),
        V,
        "lr_scheduler_onecycle",
        "max_momentum",
    ),
    (
        "warmup_cosine lr_min Inf",
        lambda: pg.lr_scheduler_warmup_cosine(_opt(), 1, 4, lr_min=INF),
        V,
        "lr_scheduler_warmup_cosine",
        "lr_min",
    ),
    (
        "scheduler on a tensor",
        lambda: pg.lr_scheduler_step(_w(), 2),
        V,
        "lr_scheduler_step",
        "optimizer",
    ),
    (
        "clip max_norm NaN",
        lambda: pg.clip_grad_norm([_w()], max_norm=NAN),
        V,
        "clip_grad_norm",
        "max_norm",
    ),
    (
        "gradcheck eps 0",
        lambda: pg.ag_gradcheck(lambda i: pg.ag_sum(i["W"]), {"W": _w()}, eps=0, quiet=True),
        V,
        "ag_gradcheck",
        "eps",
    ),
    (
        "gradcheck eps < 0",
        lambda: pg.ag_gradcheck(lambda i: pg.ag_sum(i["W"]), {"W": _w()}, eps=-1, quiet=True),
        V,
        "ag_gradcheck",
        "eps",
    ),
    ("linear gain NaN", lambda: pg.ag_linear(2, 3, gain=NAN), V, "ag_linear", "gain"),
    ("batch_norm eps Inf", lambda: pg.ag_batch_norm(3, eps=INF), V, "ag_batch_norm", "eps"),
    (
        "batch_norm momentum 2",
        lambda: pg.ag_batch_norm(3, momentum=2),
        V,
        "ag_batch_norm",
        "momentum",
    ),
    ("layer_norm eps NaN", lambda: pg.ag_layer_norm(3, eps=NAN), V, "ag_layer_norm", "eps"),
    (
        "predict batch_size 0",
        lambda: pg.ag_predict(_model(), X4, batch_size=0),
        V,
        "ag_predict",
        "batch_size",
    ),
    (
        "predict batch_size 2.7",
        lambda: pg.ag_predict(_model(), X4, batch_size=2.7),
        V,
        "ag_predict",
        "batch_size",
    ),
    (
        "fit batch_size 2.7",
        lambda: pg.ag_fit(_model(), X4, np.ones((3, 4)), loss="mse", batch_size=2.7, silent=True),
        V,
        "ag_fit",
        "batch_size",
    ),
    (
        "fit nepoch 2.5",
        lambda: pg.ag_fit(_model(), X4, np.ones((3, 4)), loss="mse", nepoch=2.5, silent=True),
        V,
        "ag_fit",
        "nepoch",
    ),
    (
        "fit val_split 'a'",
        lambda: pg.ag_fit(_model(), X4, np.ones((3, 4)), loss="mse", val_split="a", silent=True),
        A,
        "ag_fit",
        "val_split",
    ),
    (
        "reshape 2.5",
        lambda: pg.ag_reshape(pg.ag_tensor(np.ones((2, 2))), 2.5, -1),
        V,
        "ag_reshape",
        "nrow",
    ),
    ("linear 2.5", lambda: pg.ag_linear(2.5, 3), A, "ag_linear", "in_features"),
    ("linear array size", lambda: pg.ag_linear(np.array([2, 3]), 3), A, "ag_linear", "in_features"),
    (
        "embedding ids 1.5",
        lambda: pg.ag_embedding(5, 3).forward(np.array([1.5])),
        V,
        "ag_embedding",
        "ids",
    ),
    ("embedding ids True", lambda: pg.ag_embedding(5, 3).forward(True), A, "ag_embedding", "ids"),
    ("embedding ids 0.9", lambda: pg.ag_embedding(5, 3).forward([0.9]), V, "ag_embedding", "ids"),
    (
        "CE boolean ids",
        lambda: pg.ag_softmax_cross_entropy_loss(
            pg.ag_tensor(np.ones((3, 2))), np.array([True, False])
        ),
        A,
        "ag_softmax_cross_entropy_loss",
        "class ids",
    ),
    (
        "CE negative ids",
        lambda: pg.ag_softmax_cross_entropy_loss(pg.ag_tensor(np.ones((3, 2))), [-1, 0]),
        V,
        "ag_softmax_cross_entropy_loss",
        "class id",
    ),
    (
        "dataloader col_major 'no'",
        lambda: pg.ag_dataloader(X4, batch_size=2, col_major="no"),
        A,
        "ag_dataloader",
        "col_major",
    ),
    (
        "dataloader shuffle 'no'",
        lambda: pg.ag_dataloader(X4, batch_size=2, shuffle="no"),
        A,
        "ag_dataloader",
        "shuffle",
    ),
    (
        "dataloader 3-D",
        lambda: pg.ag_dataloader(np.ones((2, 4, 3)), batch_size=2),
        S,
        "ag_dataloader",
        "x",
    ),
    (
        "dataloader batch_size 2.7",
        lambda: pg.ag_dataloader(X4, batch_size=2.7),
        V,
        "ag_dataloader",
        "batch_size",
    ),
    (
        "dataloader batch_size 'a'",
        lambda: pg.ag_dataloader(X4, batch_size="a"),
        A,
        "ag_dataloader",
        "batch_size",
    ),
    (
        "dataloader ragged",
        lambda: pg.ag_dataloader([[1, 2], [3]], batch_size=1),
        A,
        "ag_dataloader",
        "x",
    ),
    (
        "fit ragged x",
        lambda: pg.ag_fit(_model(), [[1, 2], [3]], None, loss="mean", silent=True),
        A,
        "ag_fit",
        "x",
    ),
    (
        "mha 5 heads 2",
        lambda: pg.ag_multihead_attention(5, 2),
        V,
        "ag_multihead_attention",
        "n_heads",
    ),
    ("empty sequential", lambda: pg.ag_sequential(), A, "ag_sequential", "layer"),
    ("builder returns 42", _register_42, A, "ag_module_from_config", "builder"),
    (
        "accuracy id 7 of 3",
        lambda: pg.ag_accuracy(_model(), X4, [0, 1, 7, 2]),
        V,
        "ag_accuracy",
        "y",
    ),
    ("accuracy id -1", lambda: pg.ag_accuracy(_model(), X4, [0, 1, -1, 2]), V, "ag_accuracy", "y"),
    (
        "accuracy id 0.5",
        lambda: pg.ag_accuracy(_model(), X4, [0, 1, 0.5, 2]),
        V,
        "ag_accuracy",
        "y",
    ),
    (
        "accuracy boolean ids",
        lambda: pg.ag_accuracy(_model(), X4, np.array([True] * 4)),
        A,
        "ag_accuracy",
        "y",
    ),
    (
        "load_state not a state",
        lambda: pg.optimizer_adam([_w()]).load_state([1, 2]),
        V,
        "load_state",
        "state",
    ),
]


@pytest.mark.parametrize("label,call,exc,fn,arg", CASES, ids=[c[0] for c in CASES])
def test_refused_with_function_and_argument(label, call, exc, fn, arg):
    with pytest.raises(exc) as ei:
        call()
    msg = str(ei.value)
    assert isinstance(ei.value, pg.PyggmlrError)
    assert fn in msg and arg in msg, msg


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
    with pytest.raises(pg.StateError, match="no gradient for any"):
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


# ---------------------------------------------------------------------------------------------
# the shared validators, by property


@settings(max_examples=200, deadline=None)
@given(
    v=st.one_of(
        st.integers(-(2**40), 2**40),
        st.floats(allow_nan=True, allow_infinity=True),
        st.booleans(),
        st.text(max_size=3),
        st.none(),
    )
)
def test_check_int_accepts_exactly_whole_numbers_in_range(v):
    lo = 1
    whole = (
        not isinstance(v, (bool, str, type(None))) and math.isfinite(v) and float(v).is_integer()
    )
    try:
        got = check_int(v, "f", "n", lo)
    except pg.ArgumentError as e:
        assert isinstance(v, (bool, str, type(None))) and "f: n must be" in str(e)
    except pg.PyggmlrValueError as e:
        assert not (whole and lo <= v <= INT_MAX) and "f: n must be" in str(e)
    else:
        assert whole and lo <= v <= INT_MAX and got == v and type(got) is int


@settings(max_examples=200, deadline=None)
@given(
    v=st.one_of(
        st.floats(allow_nan=True, allow_infinity=True), st.integers(-5, 5), st.booleans(), st.none()
    )
)
def test_check_num_accepts_exactly_finite_numbers_in_range(v):
    try:
        got = check_num(v, "f", "x", 0, 1, hi_open=True)
    except pg.ArgumentError:
        assert isinstance(v, (bool, type(None)))
    except pg.PyggmlrValueError as e:
        assert not (
            math.isfinite(v) and 0 <= v < 1
        ) and "f: x must be a finite number in [0, 1)" in str(e)
    else:
        assert 0 <= got < 1 and got == v


# ---------------------------------------------------------------------------------------------
# a small fuzzer: every argument of these calls replaced by each hostile value in turn; only
# PyggmlrError subclasses may escape (no numpy "truth value is ambiguous", int(), float(), range())

HOSTILE = [
    None,
    "x",
    True,
    2.5,
    -1,
    NAN,
    INF,
    10**19,
    [1, [2]],
    np.array([1, 2]),
    {"a": 1},
    object(),
]


def _plausible():
    pg.ggml_set_seed(1)
    W = pg.ag_param(np.ones((2, 2)))
    t = pg.ag_tensor(np.ones((2, 2)))
    return [
        (
            pg.ag_linear,
            dict(in_features=2, out_features=3, activation=None, init="glorot_uniform", gain=1),
        ),
        (pg.ag_batch_norm, dict(num_features=2, eps=1e-5, momentum=0.1)),
        (pg.ag_layer_norm, dict(normalized_shape=2, eps=1e-5)),
        (pg.ag_embedding, dict(vocab_size=4, dim=2)),
        (pg.ag_multihead_attention, dict(d_model=4, n_heads=2, dropout=0.0)),
        (pg.ag_dropout, dict(rate=0.1)),
        (pg.ag_slice_rows, dict(x=t, from_=0, n=1)),
        (pg.ag_reshape, dict(x=t, nrow=4, ncol=1)),
        (pg.ag_clamp, dict(x=t, lo=0.0, hi=1.0)),
        (pg.ag_sum, dict(x=t, dim=1)),
        (pg.ag_gather, dict(x=t, index=np.array([0, 1]))),
        (
            pg.optimizer_sgd,
            dict(params=[W], lr=0.1, momentum=0.5, accumulate_steps=1, weight_decay=0.0),
        ),
        (
            pg.optimizer_adam,
            dict(params=[W], lr=0.1, beta1=0.9, beta2=0.99, eps=1e-8, weight_decay=0.0),
        ),
        (pg.clip_grad_norm, dict(params=[W], max_norm=1.0)),
        (pg.clip_grad_value, dict(params=[W], clip_value=1.0)),
        (pg.check_grad_anomaly, dict(params=[W], action="silent", max_abs=1.0)),
        (pg.lr_scheduler_step, dict(optimizer=pg.optimizer_sgd([W]), step_size=2, gamma=0.5)),
        (
            pg.lr_scheduler_cosine,
            dict(optimizer=pg.optimizer_sgd([W]), T_max=4, lr_min=0.0, restart=False, T_mult=1),
        ),
        (
            pg.lr_scheduler_cyclic,
            dict(
                optimizer=pg.optimizer_sgd([W]),
                base_lr=0.1,
                max_lr=1.0,
                step_size_up=2,
                mode="triangular",
                gamma=1,
            ),
        ),
        (
            pg.lr_scheduler_onecycle,
            dict(
                optimizer=pg.optimizer_sgd([W]),
                max_lr=0.1,
                total_steps=10,
                pct_start=0.3,
                anneal_strategy="cos",
                cycle_momentum=True,
            ),
        ),
        (
            pg.lr_scheduler_warmup_cosine,
            dict(optimizer=pg.optimizer_sgd([W]), warmup_steps=1, total_steps=4, lr_min=0.0),
        ),
        (
            pg.lr_scheduler_warmup,
            dict(optimizer=pg.optimizer_sgd([W]), warmup_steps=2, start_factor=0.0),
        ),
        (pg.ag_early_stopping, dict(patience=2, min_delta=0.0, restore_best=True, monitor=None)),
        (pg.ag_model_checkpoint, dict(path="m.st", every=1)),
        (
            pg.ag_dataloader,
            dict(x=np.ones((2, 4)), batch_size=2, shuffle=False, col_major=True, drop_last=True),
        ),
        (
            pg.ag_predict,
            dict(model=pg.ag_sequential(pg.ag_linear(2, 3)), x=np.ones((2, 4)), batch_size=2),
        ),
        (
            pg.ag_accuracy,
            dict(model=pg.ag_sequential(pg.ag_linear(2, 3)), x=np.ones((2, 4)), y=[0, 1, 2, 0]),
        ),
        (
            pg.ag_estimate_training_memory,
            dict(shapes=[(2, 2)], batch_size=2, activation_frac=0.01, quiet=True),
        ),
        (pg.ag_device, dict(device="cpu")),
        (pg.ag_matmul_precision, dict(precision="default")),
        (pg.ag_tensor, dict(data=np.ones((2, 2)), device="cpu")),
    ]


def test_fuzz_arguments_only_typed_errors_escape():
    n = 0
    for i, (fn, kw) in enumerate(_plausible()):
        for arg in list(kw):
            for bad in HOSTILE:
                call = dict(_plausible()[i][1], **{arg: bad})
                try:
                    with np.errstate(all="ignore"):
                        fn(**call)
                except pg.PyggmlrError:
                    pass
                n += 1
    pg.ag_device("cpu")
    pg.ag_matmul_precision("default")
    assert n > 800


def test_core_messages_count_positions_from_0_in_python():
    """R's copy of the core counts from 1 (test-hostile-args.R); Python's from 0."""
    with pytest.raises(
        pg.PyggmlrValueError, match=r"class id 3 at position 1 is out of range \[0, 3\)"
    ):
        pg.ag_softmax_cross_entropy_loss(pg.ag_tensor(np.zeros((3, 2))), [0, 3])
    m = pg.ag_sequential(pg.ag_linear(2, 3))
    with pytest.raises(pg.PyggmlrValueError, match="got 5 at position 1"):
        pg.ag_accuracy(m, np.zeros((2, 2)), [0, 5])


def test_distributed_numbers_of_the_wrong_kind_are_typed_errors():
    from pyggmlr import distributed as dist

    m = pg.ag_sequential(pg.ag_linear(2, 2))
    with pytest.raises(pg.ArgumentError, match="dp_train: max_norm must be a number, got NoneType"):
        pg.dp_train(
            lambda: pg.ag_sequential(pg.ag_linear(2, 2)),
            [(np.zeros((2, 1)), np.zeros((2, 1)))],
            max_norm=None,
        )
    with pytest.raises(pg.ArgumentError, match="DistributedOptimizer: max_norm must be a number"):
        dist.DistributedOptimizer(pg.optimizer_sgd(m, lr=0.1), comm=object(), max_norm="big")


def test_broadcast_root_out_of_range_is_refused_before_mpi():
    from pyggmlr import distributed as dist

    class OneRank:  # a stand-in communicator: the check must happen before any collective
        def Get_size(self):
            return 1

    with pytest.raises(pg.PyggmlrValueError, match="ag_broadcast_parameters: root"):
        dist.ag_broadcast_parameters(pg.ag_sequential(pg.ag_linear(2, 2)), root=3, comm=OneRank())
