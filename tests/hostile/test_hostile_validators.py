"""Hostile arguments, by property (issue 19): the shared validators (check_int, check_num) over
hypothesis' values, a small fuzzer that replaces every argument of many calls by each hostile
value in turn (only PyggmlrError subclasses may escape), message positions and the data-parallel
entry points' numbers. The table of refusals: test_hostile_args.py."""

import math
import re
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
from _hostile import INF, NAN
from hypothesis import given, settings
from hypothesis import strategies as st

import pyggmlr as pg
from pyggmlr._args import INT_MAX, check_int, check_num

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


def _schedulers(W):
    """Each lr scheduler with plausible arguments, on a fresh SGD optimizer of its own."""
    onecycle = dict(anneal_strategy="cos", cycle_momentum=True)  # the momentum-cycling options
    rows = [
        (pg.lr_scheduler_step, dict(step_size=2, gamma=0.5)),
        (pg.lr_scheduler_cosine, dict(T_max=4, lr_min=0.0, restart=False, T_mult=1)),
        (
            pg.lr_scheduler_cyclic,
            dict(base_lr=0.1, max_lr=1.0, step_size_up=2, mode="triangular", gamma=1),
        ),
        (pg.lr_scheduler_onecycle, dict(max_lr=0.1, total_steps=10, pct_start=0.3, **onecycle)),
        (pg.lr_scheduler_warmup_cosine, dict(warmup_steps=1, total_steps=4, lr_min=0.0)),
        (pg.lr_scheduler_warmup, dict(warmup_steps=2, start_factor=0.0)),
    ]
    return [(f, dict(optimizer=pg.optimizer_sgd([W]), **kw)) for f, kw in rows]


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
        *_schedulers(W),
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


def _plausible_more():
    """Public calls taking numbers that _plausible lacks (issue 29: conv, pooling, padding,
    resizing, recurrent layers, gradcheck, attention, dp_train), plausible arguments each."""
    pg.ggml_set_seed(1)
    t = lambda r: pg.ag_tensor(np.ones((r, 2)))  # noqa: E731
    conv = dict(stride=1, padding=0, dilation=1, groups=1)
    rnn = dict(input_size=2, hidden_size=3, num_layers=1, dropout=0.0)
    return [
        (
            pg.ag_conv2d,
            dict(in_channels=1, out_channels=2, kernel_size=3, input_shape=(1, 4, 4), **conv),
        ),  # fmt: skip
        (
            pg.ag_conv1d,
            dict(in_channels=1, out_channels=2, kernel_size=3, input_shape=(1, 4), **conv),
        ),  # fmt: skip
        (
            pg.ag_conv_transpose2d,
            dict(in_channels=1, out_channels=2, kernel_size=3, output_padding=0, **conv),
        ),  # fmt: skip
        (
            pg.ag_conv_transpose1d,
            dict(in_channels=1, out_channels=2, kernel_size=3, output_padding=0, **conv),
        ),  # fmt: skip
        (
            pg.ag_conv2d_op,
            dict(
                x=t(16),
                weight=pg.ag_tensor(np.ones((2, 9))),
                input_shape=(1, 4, 4),
                kernel_size=3,
                **conv,
            ),
        ),  # fmt: skip
        (
            pg.ag_conv1d_op,
            dict(
                x=t(16),
                weight=pg.ag_tensor(np.ones((2, 3))),
                input_shape=(1, 16),
                kernel_size=3,
                **conv,
            ),
        ),  # fmt: skip
        (pg.ag_max_pool2d, dict(kernel_size=2, stride=1, padding=0)),
        (pg.ag_avg_pool1d, dict(kernel_size=2, stride=1, padding=0)),
        (
            pg.ag_max_pool2d_op,
            dict(x=t(16), kernel_size=2, stride=1, padding=0, input_shape=(1, 4, 4)),
        ),  # fmt: skip
        (pg.ag_pad2d, dict(padding=1, value=0.0)),
        (pg.ag_pad1d_op, dict(x=t(16), padding=1, value=0.0, input_shape=(1, 16))),
        (pg.ag_upsample2d, dict(scale_factor=2)),
        (pg.ag_upsample1d_op, dict(x=t(16), scale_factor=2, input_shape=(1, 16))),
        (pg.ag_lstm, rnn),
        (pg.ag_gru, rnn),
        (pg.ag_rnn, rnn),
        (pg.ag_scale, dict(x=t(2), scalar=2.0)),
        (pg.ag_pow, dict(x=t(2), p=2.0)),
        (pg.ag_mean, dict(x=t(2), dim=1)),
        (pg.ag_set_threads, dict(n=1)),
        (pg.ggml_set_seed, dict(seed=1)),
        (
            pg.ag_estimate_training_memory,
            dict(
                model=pg.ag_sequential(pg.ag_linear(2, 3)), input_shape=2, batch_size=2, quiet=True
            ),
        ),  # fmt: skip
        (pg.ag_tape_memory, dict(top=10, quiet=True)),
        (pg.ag_normalization, dict(mean=[0.0, 0.0], variance=[1.0, 1.0], eps=1e-7)),
        (pg.ag_flash_attention, dict(q=t(4), k=t(4), v=t(4), n_heads=2, scale=0.5)),
        (
            pg.ag_gradcheck,
            dict(
                fn=lambda d: pg.ag_sum(d["w"]),
                inputs={"w": pg.ag_param(np.ones((2, 2)))},
                eps=1e-3,
                atol=1e-2,
                rtol=1e-2,
                quiet=True,
            ),
        ),  # fmt: skip
        (
            pg.lr_scheduler_cyclic,
            dict(
                optimizer=pg.optimizer_sgd([pg.ag_param(np.ones((2, 2)))]),
                base_lr=0.1,
                max_lr=1.0,
                step_size_up=2,
                step_size_down=2,
            ),
        ),  # fmt: skip
        (
            pg.lr_scheduler_onecycle,
            dict(
                optimizer=pg.optimizer_sgd([pg.ag_param(np.ones((2, 2)))]),
                max_lr=0.1,
                total_steps=10,
                div_factor=25,
                final_div_factor=1e4,
            ),
        ),  # fmt: skip
        (
            pg.dp_train,
            dict(
                make_model=lambda: pg.ag_sequential(pg.ag_linear(2, 2)),
                data=[(np.zeros((2, 1)), np.zeros((2, 1)))],
                n_replicas=1,
                n_iter=1,
                lr=0.01,
                max_norm=1.0,
                verbose=False,
            ),
        ),  # fmt: skip
    ]


# Python's own kinds of number (issue 29): an int past a double (R's 1e400), numpy scalars, a 0-d
# array, complex, bytes, Decimal and Fraction (one past a double too)
NUMBERS = [
    10**400,
    -(10**400),
    np.float64("inf"),
    np.float64("nan"),
    np.int64(3),
    np.float32(2),
    np.bool_(True),
    np.uint64(2**64 - 1),
    np.array(3),
    np.array(2.5),
    1j,
    b"x",
    Decimal("2"),
    Fraction(5, 2),
    Fraction(10**400, 3),
]


def _numpy_shown(msg):
    """A numpy scalar shown by its repr (np.float64(inf), np.True_) in an error text."""
    return re.search(r"\bnp\.(?:[a-z]+\d*\(|True_|False_)", msg)


def test_fuzz_python_numbers_only_typed_errors_escape():
    """Each argument of every call of both tables replaced by each of NUMBERS: a PyggmlrError
    or a result, never OverflowError (float(10**400)), TypeError (len() of a 0-d array) or
    another builtin; no text shows a numpy scalar by its repr (R's text shows the value)."""
    n, bad = 0, []
    rows = _plausible() + _plausible_more()
    for i, (fn, kw) in enumerate(rows):
        for arg in list(kw):
            for v in NUMBERS:
                call = dict((_plausible() + _plausible_more())[i][1], **{arg: v})
                try:
                    with np.errstate(all="ignore"):
                        fn(**call)
                except pg.PyggmlrError as e:
                    if _numpy_shown(str(e)):
                        bad.append(f"{fn.__name__}({arg}={v!r}): {e}")
                except Exception as e:  # noqa: BLE001  (the defect this test looks for)
                    bad.append(f"{fn.__name__}({arg}={v!r}): {type(e).__name__}: {e}")
                finally:
                    pg.ag_device("cpu")
                    pg.ag_matmul_precision("default")
                n += 1
    assert not bad, f"{len(bad)} of {n}:\n" + "\n".join(bad)
    assert n > 3000


def test_python_numbers_refused_with_the_value_as_r_shows_it():
    """Whole texts: 10**400 is R's 1e400 (inf), a numpy scalar its Python value."""
    sgd = lambda: pg.optimizer_sgd([pg.ag_param(np.ones((2, 2)))], lr=0.1)  # noqa: E731
    cases = [
        (lambda: pg.ag_conv2d(10**400, 2, 3), pg.PyggmlrValueError,
         "ag_conv2d: in_channels must be an integer >= 1, got inf"),
        (lambda: pg.ag_conv1d(2, 10**400, 3), pg.PyggmlrValueError,
         "ag_conv1d: out_channels must be an integer >= 1, got inf"),
        (lambda: pg.ag_conv2d(2, 2, 3, stride=-(10**400)), pg.PyggmlrValueError,
         "ag_conv2d: stride must be an integer >= 1, got -inf"),
        (lambda: pg.lr_scheduler_step(sgd(), step_size=10**400), pg.PyggmlrValueError,
         "lr_scheduler_step: step_size must be >= 1"),
        (lambda: pg.ag_linear(2, 3, gain=10**400), pg.PyggmlrValueError,
         "ag_linear: gain must be a single finite number"),
        (lambda: pg.clip_grad_value([pg.ag_param(np.ones((2, 2)))], clip_value=10**400),
         pg.PyggmlrValueError,
         "clip_grad_value: clip_value must be a single positive finite number, got inf"),
        (lambda: pg.ag_linear(np.float64("inf"), 2), pg.PyggmlrValueError,
         "ag_linear: in_features must be an integer >= 1, got inf"),
        (lambda: pg.ag_lstm(2, 3, dropout=np.float32(2)), pg.PyggmlrValueError,
         "ag_lstm: dropout must be a finite number in [0, 1), got 2.0"),
        (lambda: pg.ag_fit(pg.ag_linear(2, 3), np.ones((2, 4)), nepoch=np.bool_(True)),
         pg.ArgumentError, "ag_fit: nepoch must be an integer >= 1, got bool True"),
        (lambda: pg.check_grad_anomaly([pg.ag_param(np.ones((2, 2)))], max_abs=np.bool_(True)),
         pg.ArgumentError, "check_grad_anomaly: max_abs must be None or a single number, got True"),
        (lambda: pg.optimizer_sgd(np.float64(2)), pg.ArgumentError,
         "optimizer_sgd: is.list(params) is not TRUE (params must be a list of ag_tensors or a "
         "model, got 2.0)"),
        (lambda: pg.dp_train(lambda: pg.ag_linear(2, 2), [(np.zeros((2, 1)), np.zeros((2, 1)))],
                             verbose=INF),
         pg.PyggmlrValueError, "dp_train: verbose must be TRUE/FALSE or an integer, got inf"),
        (lambda: pg.ag_conv2d_op(pg.ag_tensor(np.ones((16, 2))), pg.ag_tensor(np.ones((2, 9))),
                                 input_shape=np.array(3)),
         pg.ArgumentError, "ag_conv2d_op: input_shape must be (C, H, W), got array(3)"),
    ]  # fmt: skip
    dp = dict(data=[np.zeros((2, 1))], loss_fn=lambda o, s: pg.ag_sum(o), n_iter=1)
    est = (
        "ag_estimate_training_memory(): input_shape must be (features,) or (features, batch) "
        "with positive whole numbers, got "
    )
    x = pg.ag_tensor(np.ones((2, 2)))
    cases += [
        # R's integer range at both ends (-2**70 raised OverflowError: int too big to convert)
        (lambda: pg.ag_slice_rows(x, -(2**70), 1), pg.PyggmlrValueError,
         "ag_slice_rows: from must be an integer >= -2147483647, got -1180591620717411303424"),
        (lambda: pg.ag_slice_rows(x, 0, -1e300), pg.PyggmlrValueError,
         "ag_slice_rows: n must be an integer >= -2147483647, got -1e+300"),
        (lambda: pg.dp_train(lambda: pg.ag_linear(2, 2), max_norm=-1, **dp), pg.PyggmlrValueError,
         "dp_train: max_norm must be >= 0 (Inf: no clipping), got -1"),
        (lambda: pg.dp_train(lambda: pg.ag_linear(2, 2), verbose="x", **dp), pg.ArgumentError,
         "dp_train: verbose must be TRUE/FALSE or an integer, got 'x'"),
        (lambda: pg.dp_train(None, **dp), pg.ArgumentError,
         "dp_train: make_model must be a function returning a model, got NoneType"),
        # the callbacks' kind names what came, as R's does (R said no more than "or NULL")
        (lambda: pg.dp_train(lambda: pg.ag_linear(2, 2), forward_fn="x", **dp), pg.ArgumentError,
         "dp_train: forward_fn must be a function or None, got str"),
        (lambda: pg.ag_gradcheck(lambda d: pg.ag_sum(d["w"]), {"w": pg.ag_param(np.ones((2, 2)))},
                                 quiet=np.array([1, 2])),
         pg.ArgumentError, "ag_gradcheck(): quiet must be True or False, got ndarray array([1, 2])"),
        (lambda: pg.ag_gradcheck(lambda d: pg.ag_sum(d["w"]), {"w": pg.ag_param(np.ones((2, 2)))},
                                 eps="x"),
         pg.ArgumentError, "ag_gradcheck(): eps must be a single number or None, got str"),
        (lambda: pg.ag_rnn(2, 3, nonlinearity=np.array([1, 2])), pg.PyggmlrValueError,
         "ag_rnn: nonlinearity must be 'tanh' or 'relu', got array([1, 2])"),
        (lambda: pg.ag_estimate_training_memory(model=pg.ag_linear(2, 3), input_shape=10**400,
                                                quiet=True),
         pg.PyggmlrValueError, est + "inf"),
        (lambda: pg.ag_estimate_training_memory(model=pg.ag_linear(2, 3), input_shape=(2, 2**31),
                                                quiet=True),
         pg.PyggmlrValueError, est + "(2, 2147483648)"),
    ]  # fmt: skip
    for f, cls, text in cases:
        with pytest.raises(cls) as e:
            f()
        assert str(e.value) == text


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

        def Get_rank(self):
            return 0

    with pytest.raises(pg.PyggmlrValueError, match="ag_broadcast_parameters: root"):
        dist.ag_broadcast_parameters(pg.ag_sequential(pg.ag_linear(2, 2)), root=3, comm=OneRank())
