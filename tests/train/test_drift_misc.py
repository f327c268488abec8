"""ag_predict / ag_evaluate / ag_accuracy, ag_tape_memory, the seed and the settings refuse hostile
input as R does (issue 29): the same class, the same words (R's display of a value for Python's)
and no bare Python exception. R's test-drift-misc.R has the same cases;
tests/r/test_misc_drift_parity.py runs them in both languages."""

import numpy as np
from _rclass import refused

import pyggmlr as pg
from pyggmlr.errors import ArgumentError, PyggmlrValueError, ShapeError

_X = np.ones((3, 4))
_Y = np.array([0, 1, 1, 0])
_ROWS = (
    "{}: the model returned 3 rows for the first batch but 1 for a later one (batch_size 3); "
    "its outputs must have the same rows for every batch"
)


def _model():
    pg.ggml_set_seed(1)
    return pg.ag_linear(3, 2)


def _square(x):
    """a model whose output rows follow the batch: 3 rows, then 1 for the last sample"""
    return pg.ag_tensor(np.ones((x.shape[1], x.shape[1])))


def test_predict_batches_keep_their_rows():
    """numpy's concatenate raised a bare ValueError (R: cbind's simpleError)"""
    refused(
        lambda: pg.ag_predict(_square, _X, batch_size=3), ShapeError, _ROWS.format("ag_predict")
    )
    refused(lambda: pg.ag_evaluate(_square, _X, _Y, batch_size=3, loss="mse"), ShapeError,
             _ROWS.format("ag_evaluate"))  # fmt: skip
    refused(lambda: pg.ag_accuracy(_square, _X, _Y, batch_size=3), ShapeError,
             _ROWS.format("ag_accuracy"))  # fmt: skip
    # one batch, or rows that do not change: predicted as before
    assert pg.ag_predict(_square, _X, batch_size=4).shape == (4, 4)
    assert pg.ag_predict(lambda x: x, _X, batch_size=3).shape == (3, 4)


def test_threshold_must_be_finite():
    """10**400 raised OverflowError; a NaN threshold read as "none" in ag_evaluate (R refused NaN
    as not a number)"""
    fin = "{}: threshold must be a finite number, got {}"
    refused(lambda: pg.ag_evaluate(_model(), _X, _Y, threshold=10**400, metrics="accuracy"),
             PyggmlrValueError, fin.format("ag_evaluate", "inf"))  # fmt: skip
    refused(lambda: pg.ag_evaluate(_model(), _X, _Y, threshold=np.nan, metrics="accuracy"),
             PyggmlrValueError, fin.format("ag_evaluate", "nan"))  # fmt: skip
    refused(lambda: pg.ag_accuracy(_model(), _X, _Y, threshold=-(10**400)), PyggmlrValueError,
             fin.format("ag_accuracy", "-inf"))  # fmt: skip
    refused(lambda: pg.ag_accuracy(_model(), _X, _Y, threshold=np.nan), PyggmlrValueError,
             fin.format("ag_accuracy", "nan"))  # fmt: skip
    refused(lambda: pg.ag_evaluate(_model(), _X, _Y, threshold=np.nan), ArgumentError,
             "ag_evaluate: give loss, metrics or both")  # fmt: skip
    onehot = np.eye(2)[:, _Y]  # a finite threshold reads each output: 0/1 targets of its shape
    assert pg.ag_evaluate(_model(), _X, onehot, threshold=0, metrics="accuracy") == {
        "accuracy": 0.5
    }
    assert pg.ag_accuracy(_model(), _X, onehot, threshold=0) == 0.5
    # a threshold with class ids: ag_evaluate's error named ag_accuracy
    refused(lambda: pg.ag_evaluate(_model(), _X, _Y, threshold=0, metrics="accuracy"), ShapeError,
             "ag_evaluate: the model's output is [2x4] but y has 1 rows: give 0/1 targets of the "
             "output's shape")  # fmt: skip


def test_seed_past_a_double_is_inf():
    """10**400 raised OverflowError; R's 1e400 is Inf, inf in Python's words (the core's)"""
    refused(lambda: pg.ggml_set_seed(10**400), PyggmlrValueError,
             "ggml_set_seed: supplied seed is not a valid integer, got inf")  # fmt: skip
    refused(lambda: pg.ggml_set_seed(-(10**400)), PyggmlrValueError,
             "ggml_set_seed: supplied seed is not a valid integer, got -inf")  # fmt: skip
    refused(lambda: pg.ag_dataloader(_X, seed=10**400), PyggmlrValueError,
             "ag_dataloader: supplied seed is not a valid integer, got inf")  # fmt: skip
    refused(lambda: pg.random.runif(10**400), PyggmlrValueError,
             "runif: n must be a count >= 0 (or a sequence, whose length is used), got inf")  # fmt: skip
    assert pg.ggml_set_seed(2**31 - 1) == 2**31 - 1


def test_tape_memory_checks_quiet_first():
    """quiet was never checked (R refused it), and compiled was checked before top"""
    refused(lambda: pg.ag_tape_memory(quiet="a"), ArgumentError,
             "ag_tape_memory: quiet must be True or False, got str 'a'")  # fmt: skip
    refused(lambda: pg.ag_tape_memory(top=-1, compiled=1), PyggmlrValueError,
             "ag_tape_memory: top must be an integer >= 0, got -1")  # fmt: skip
    refused(lambda: pg.ag_tape_memory(quiet=1, compiled=1), ArgumentError,
             "ag_tape_memory: quiet must be True or False, got int 1")  # fmt: skip
    assert pg.ag_tape_memory(quiet=True).nodes >= 0


def test_to_device_names_what_it_got():
    refused(lambda: pg.ag_to_device(1, "cpu"), ArgumentError,
             "ag_to_device(): tensor must be an ag_tensor, got int")  # fmt: skip
    refused(lambda: pg.ag_to_device(np.ones((1, 1)), "cpu"), ArgumentError,
             "ag_to_device(): tensor must be an ag_tensor, got ndarray")  # fmt: skip


def test_prints_write_numbers_as_r():
    """the optimizers' and early stopping's lines wrote numbers with Python's :g (0.0001,
    1.23457e+08) where ggmlR's cat() line writes 1e-04 and 123456789; ag_linear showed a mode
    R's list layer has not"""
    p = [pg.ag_param(np.ones((1, 1)))]
    assert repr(pg.optimizer_sgd(p, lr=1e-4, momentum=0.9)) == (
        "SGD optimizer | lr = 1e-04 | momentum = 0.9 | params: 1 "
    )
    assert repr(pg.optimizer_adam(p, lr=123456789, beta2=0.9999)) == (
        "Adam optimizer | lr = 123456789 | beta1 = 0.9 | beta2 = 0.9999 | step = 0 | params: 1 "
    )
    assert repr(pg.ag_early_stopping(min_delta=1e-4)) == (
        "ag_early_stopping | patience=5 | min_delta=1e-04 | restore_best=True | monitor=auto | "
        "mode=auto"
    )
    assert repr(pg.ag_linear(3, 2)) == "ag_linear: linear(3, 2) (8 parameters)"
    assert (
        repr(pg.ag_eval(pg.ag_linear(3, 2, "relu")))
        == "ag_linear: linear(3, 2, relu) (8 parameters)"
    )
    assert repr(pg.ag_dropout(0.5)) == "ag_dropout: dropout(0.5) (0 parameters, train mode)"


def test_batch_size_int_max_is_one_batch():
    """R's s0 + batch_size - 1L overflowed to NA (a warning, then an error); Python ran"""
    big = 2**31 - 1
    d = pg.ag_dataloader(np.arange(1.0, 4).reshape(1, 3), batch_size=big, drop_last=False,
                         shuffle=False)  # fmt: skip
    np.testing.assert_array_equal(d.next_batch()["x"].numpy(), [[1.0, 2.0, 3.0]])
    assert not d.has_next()
    m = _model()
    np.testing.assert_array_equal(pg.ag_predict(m, _X, batch_size=big), pg.ag_predict(m, _X))
