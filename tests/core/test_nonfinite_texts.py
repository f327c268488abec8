"""Non-finite and huge user values in the core's texts, in Python's words (issue 29): inf / -inf /
nan (pg_fmt_num, R's are Inf / -Inf / NaN / NA: tests/r/test_nonfinite_parity.py), huge whole
numbers as their digits; match.arg's unique prefix; "prob" in the model's dtype; the estimate's
y and shapes refused up front."""

import numpy as np
import pytest
from _rclass import refused

import pyggmlr as pg
from pyggmlr.errors import ArgumentError, PyggmlrValueError, ShapeError

_X = np.ones((3, 8))
_EST = "ag_estimate_training_memory(): "


def _m():
    pg.ggml_set_seed(1)
    return pg.ag_linear(3, 4)


@pytest.mark.parametrize(
    "call, text",
    [
        (lambda: pg.ag_max_pool2d(kernel_size=(np.inf, np.nan)),
         "ag_max_pool2d: kernel_size must be one or two (H, W) whole numbers >= 1, got (inf, nan)"),
        (lambda: pg.ag_upsample2d(scale_factor=2**70),
         "ag_upsample2d: scale_factor must be one or two (H, W) whole numbers >= 1, got "
         "(1180591620717411303424, 1180591620717411303424)"),
        (lambda: pg.ag_accuracy(_m(), _X, np.zeros(8), threshold=-np.inf),
         "ag_accuracy: threshold must be a finite number, got -inf"),
        (lambda: pg.ag_batch_norm(4, eps=10**400),
         "ag_batch_norm: eps must be a finite number >= 0, got inf"),
        # 10**400 is R's 1e400, Inf: R's text for it (not the range's, as for a huge double)
        (lambda: pg.ag_early_stopping(patience=10**400),
         "ag_early_stopping: patience must be an integer >= 1, got inf"),
        (lambda: pg.ggml_set_seed(-(10**400)),
         "ggml_set_seed: supplied seed is not a valid integer, got -inf"),
        (lambda: pg.ag_fit(_m(), _X, np.zeros(8), nepoch=1, verbose=0, batch_size=8,
                           class_weight={2**24 + 1: 1}),
         "ag_fit: class_weight's class id 16777217 is above 16777216"),
        (lambda: pg.ag_fit(_m(), _X, np.zeros(8), nepoch=1, verbose=0, val_split=np.nan),
         "ag_fit: val_split must be in [0, 1), got nan"),
    ],
)  # fmt: skip
def test_nonfinite_in_pythons_words(call, text):
    refused(call, PyggmlrValueError, text)


def test_match_arg_unique_prefix():
    """R's match.arg (ggmlR's): an exact name, else the one choice a prefix begins"""
    o = pg.optimizer_sgd([pg.ag_param(np.ones((2, 2)))])
    assert pg.lr_scheduler_cyclic(o, 0, 1, mode="triangular").mode == "triangular"
    assert pg.lr_scheduler_cyclic(o, 0, 1, mode="triangular2").mode == "triangular2"
    assert pg.lr_scheduler_cyclic(o, 0, 1, mode="exp").mode == "exp_range"
    assert pg.lr_scheduler_onecycle(o, 1, total_steps=4, anneal_strategy="l").anneal_strategy == (
        "linear"
    )
    prev = pg.ag_matmul_precision("f")  # "f32": the only choice it begins
    try:
        assert pg.ag_matmul_precision("d") == "f32" and pg.ag_matmul_precision() == "default"
    finally:
        pg.ag_matmul_precision(prev)
    refused(lambda: pg.lr_scheduler_cyclic(o, 0, 1, mode="tri"), PyggmlrValueError,
            "lr_scheduler_cyclic: 'arg' should be one of \u201ctriangular\u201d, "
            "\u201ctriangular2\u201d, \u201cexp_range\u201d (mode = 'tri')")  # fmt: skip
    refused(lambda: pg.ag_matmul_precision(""), PyggmlrValueError,
            "ag_matmul_precision: 'arg' should be one of \u201cdefault\u201d, \u201cf32\u201d "
            "(precision = '')")  # fmt: skip


def test_predict_prob_keeps_the_models_dtype():
    m = _m()
    x = np.arange(24.0).reshape(3, 8) / 10
    p = pg.ag_predict(m, x, type="prob", loss="cross_entropy")
    assert p.dtype == np.float32 == pg.ag_predict(m, x).dtype
    np.testing.assert_allclose(p.sum(axis=0), np.ones(8), rtol=1e-6)
    prev = pg.ag_dtype("f64")
    try:
        m64 = _m()
    finally:
        pg.ag_dtype(prev)
    assert pg.ag_predict(m64, x, type="prob", loss="cross_entropy").dtype == np.float64


def test_estimate_refuses_y_and_shapes_up_front():
    refused(lambda: pg.ag_estimate_training_memory(model=_m(), x=_X, y=np.ones((2, 8))),
            ShapeError, _EST + "y is [2x8] but the model's output is [4x8]; with the default "
            "loss_fn (ag_mse_loss) y must have the output's shape [outputs, batch]")  # fmt: skip
    refused(lambda: pg.ag_estimate_training_memory(shapes=[(3, 4)], model=_m(), x=_X),
            ArgumentError,
            _EST + "with model=, the parameters are the model's; leave shapes= out")  # fmt: skip
    # a loss_fn of the caller's: y is its business
    est = pg.ag_estimate_training_memory(
        model=_m(), x=_X, y=np.ones((2, 8)), quiet=True,
        loss_fn=lambda out, y: pg.ag_mean(out),
    )  # fmt: skip
    assert est["params"] == 16
