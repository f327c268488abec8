"""Hostile values that R and Python refused in different words, or not at all (issue 29): a model
with more output columns than samples in ag_predict / ag_evaluate / ag_accuracy, a dtype other
than the model's in ag_estimate_training_memory, ids beyond int64, and non-finite numbers in the
core's texts. R's test-drift-values.R has the same cases; tests/r/test_values_drift_parity.py
runs them in both languages."""

import numpy as np
from _rclass import refused

import pyggmlr as pg
from pyggmlr.errors import ArgumentError, DTypeError, PyggmlrValueError, ShapeError

_X = np.ones((4, 5))
_COLS = (
    "{}: the model returned [2x10] for a batch of 5 samples (batch_size 256); it must return one "
    "column per sample ([outputs x 5]); reshape per-step or per-token outputs to one column per "
    "sample first"
)


def _wide(x):
    """two columns a sample: the outputs of 5 samples as [2x10]"""
    return pg.ag_reshape(x, 2, 2 * x.shape[1])


def test_predict_one_column_per_sample():
    """a [2x10] output for 5 samples was returned as ag_predict's result"""
    refused(lambda: pg.ag_predict(_wide, _X), ShapeError, _COLS.format("ag_predict"))
    refused(lambda: pg.ag_evaluate(_wide, _X, np.ones((2, 5)), loss="mse"), ShapeError,
            _COLS.format("ag_evaluate"))  # fmt: skip
    refused(lambda: pg.ag_accuracy(_wide, _X, np.zeros(5)), ShapeError,
            _COLS.format("ag_accuracy"))  # fmt: skip
    # fewer columns than samples too (a reduction over the batch)
    refused(lambda: pg.ag_predict(lambda x: pg.ag_sum(x), _X, batch_size=2), ShapeError,
            "ag_predict: the model returned [1x1] for a batch of 2 samples (batch_size 2); it "
            "must return one column per sample ([outputs x 2]); reshape per-step or per-token "
            "outputs to one column per sample first")  # fmt: skip
    # recurrent layers' sequences are rows: [hidden*T, n], predicted as before
    pg.ggml_set_seed(1)
    rnn = pg.ag_gru(2, 3, return_sequences=True)
    assert pg.ag_predict(rnn, np.ones((4, 5))).shape == (6, 5)


_EST = "ag_estimate_training_memory(): "
_MODEL = "the model's parameters are f32; give {0} in f32 (or as numbers: converted to the model's dtype)"


def test_estimate_dtype_is_the_models():
    """an f64 dtype, x or y with an f32 model failed in ag_linear's / ag_mse_loss's words"""
    pg.ggml_set_seed(1)
    m, x = pg.ag_linear(3, 4), np.ones((3, 8))
    est = pg.ag_estimate_training_memory
    refused(lambda: est(model=m, x=x, dtype="f64", quiet=True), DTypeError,
            _EST + 'dtype is "f64" but the model\'s parameters are f32; with a model, leave '
            'dtype out (the model\'s) or give "f32"')  # fmt: skip
    refused(lambda: est(model=m, x=pg.ag_tensor(x, dtype="f64"), quiet=True), DTypeError,
            _EST + "x is an f64 tensor but " + _MODEL.format("x"))  # fmt: skip
    y = pg.ag_tensor(np.ones((4, 8)), dtype="f64")
    refused(lambda: est(model=m, x=x, y=y, quiet=True, static=True), DTypeError,
            _EST + "y is an f64 tensor but " + _MODEL.format("y"))  # fmt: skip
    refused(lambda: est(model=m, x=x, input_shape=(5,), quiet=True), ArgumentError,
            _EST + "with model=, give x= (a batch) or input_shape=, not both")  # fmt: skip
    # the model's dtype, named or not, and y as numbers: measured as before
    a = est(model=m, x=x, quiet=True)
    assert est(model=m, x=x, dtype="f32", y=np.ones((4, 8)), quiet=True).total == a.total
    assert a.bytes_per_scalar == 4


_BIG = 1180591620717411303424  # 2**70: past int64, a double exactly


def test_ids_past_int64_reach_the_core():
    """[2**70, 1] was a numpy object array: "ids must be numeric, got dtype object" (R: the
    core's range text, with 1.18059e+21 for the value)"""
    pg.ggml_set_seed(1)
    m, x = pg.ag_linear(3, 2), np.ones((3, 2))
    refused(lambda: pg.ag_embedding(5, 3)([2**70, 1]), PyggmlrValueError,
            f"ag_embedding: id {_BIG} at position 0 is out of range [0, 5) for weight [3x5] f32 "
            "(ids are 0-based)")  # fmt: skip
    refused(lambda: pg.ag_softmax_cross_entropy_loss(pg.ag_tensor(np.ones((3, 2))), [1, 2**70]),
            PyggmlrValueError, f"ag_softmax_cross_entropy_loss: class id {_BIG} at position 1 is "
            "out of range [0, 3) for logits [3x2] f32")  # fmt: skip
    refused(lambda: pg.ag_fit(m, x, [2**70, 1], nepoch=1, verbose=0), PyggmlrValueError,
            f"ag_fit: y holds class ids up to {_BIG} but the model has 2 outputs; ids are 0-based, "
            "in [0, 2)")  # fmt: skip
    refused(lambda: pg.ag_accuracy(m, x, [2**70, 1]), PyggmlrValueError,
            "ag_accuracy: y must be 0-based class ids in [0, 2) (the model has 2 outputs), got "
            f"{_BIG} at position 0")  # fmt: skip
    refused(lambda: pg.ag_evaluate(m, x, [2**70, 1], loss="cross_entropy"), PyggmlrValueError,
            f"ag_evaluate: y must be 0-based class ids in [0, 2), sample 1 has {_BIG}")  # fmt: skip
    refused(lambda: pg.ag_gather(pg.ag_tensor(np.ones((3, 2))), [2**70, 1]), PyggmlrValueError,
            "ag_gather: index out of range 0..2 (indices are 0-based)")  # fmt: skip
    # a huge whole number %g rounded keeps its digits; others print as before
    refused(lambda: pg.ag_embedding(5, 3)([1234567, 1e300]), PyggmlrValueError,
            "ag_embedding: id 1234567 at position 0 is out of range [0, 5) for weight [3x5] f32 "
            "(ids are 0-based)")  # fmt: skip
    refused(lambda: pg.ag_embedding(5, 3)([1e300]), PyggmlrValueError,
            "ag_embedding: id 1e+300 at position 0 is out of range [0, 5) for weight [3x5] f32 "
            "(ids are 0-based)")  # fmt: skip
    # plain Python numbers past int64 read as R reads them: doubles (10**400: inf)
    np.testing.assert_array_equal(pg.ag_tensor([2**70, 10**400]).numpy(),
                                  [[float(2**70)], [np.inf]])  # fmt: skip


def test_non_finite_numbers_are_pythons():
    """the core's texts printed some numbers with %g (inf, nan) and others as R (Inf, NaN); Python
    now reads inf / -inf / nan in every one (R: Inf / -Inf / NaN / NA)"""
    x = pg.ag_tensor(np.ones((2, 2)))
    refused(lambda: pg.ag_huber_loss(x, x, delta=np.inf), PyggmlrValueError,
            "ag_huber_loss: delta must be a finite number > 0, got inf")  # fmt: skip
    refused(lambda: pg.ag_clamp(x, np.inf, 0), PyggmlrValueError,
            "ag_clamp: lo (inf) must be <= hi (0)")  # fmt: skip
    refused(lambda: pg.ag_bce_with_logits_loss(x, x, pos_weight=np.nan), PyggmlrValueError,
            "ag_bce_with_logits_loss: pos_weight must be finite and >= 0, got nan at position 0 "
            "of [1x1] f32")  # fmt: skip
    refused(lambda: pg.ag_dropout(np.inf), PyggmlrValueError,
            "ag_dropout: rate must be a finite number in [0, 1), got inf")  # fmt: skip
    opt = pg.optimizer_adam([pg.ag_param(np.ones((1, 1)))])
    refused(lambda: pg.lr_scheduler_step(opt, step_size=1, gamma=np.nan), PyggmlrValueError,
            "lr_scheduler_step: gamma must be a single finite number > 0, got nan")  # fmt: skip
