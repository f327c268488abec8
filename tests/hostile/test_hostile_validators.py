"""Hostile arguments, by property (issue 19): the shared validators (check_int, check_num) over
hypothesis' values, a small fuzzer that replaces every argument of many calls by each hostile
value in turn (only PyggmlrError subclasses may escape), message positions and the data-parallel
entry points' numbers. The table of refusals: test_hostile_args.py."""

import math

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
