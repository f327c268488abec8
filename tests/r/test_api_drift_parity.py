"""Drifts between the Python and R front ends fixed in the core once (issue 29): each case is
the same call in both languages, with the same condition class and text (R's class name for
Python's type, R's display of a value for Python's) or the same value."""

import numpy as np
import pytest

from pyggmlr import r

if not r.available():
    pytest.skip(f"R bridge unavailable: {r.unavailable_reason()}", allow_module_level=True)

pytestmark = pytest.mark.parity  # embeds R (rpy2): not in the sanitized run, which cannot host R

from _rclass import same_refusal  # noqa: E402

import pyggmlr as pg  # noqa: E402

_X = np.array([[1.0, 2, 3, 4], [4, 3, 2, 1]])
_Y = np.array([[1.0, 0, 1, 0], [0, 1, 0, 1]])


class _NoForward:  # parameters but no forward(x): refused by the core's text (pg_fit_model_fail)
    def parameters(self):
        return {"W": pg.ag_param(np.ones((2, 2)))}


class _Cat:  # a pandas Categorical, duck-typed (fit/labels.py)
    def __init__(self, codes, categories):
        self.codes, self.categories = np.asarray(codes), list(categories)


_R_NO_FORWARD = "list(parameters = function() list(W = ag_param(matrix(1, 2, 2))))"

_CASES = [  # (id, Python call, R call, Python type, Python text, R text or None: the same)
    ("predict", lambda: pg.ag_predict(3, _X), "ag_predict(3, x)", pg.ArgumentError,
     "ag_predict: model must have forward(x), got int",
     "ag_predict: model must have forward(x), got numeric"),
    ("accuracy", lambda: pg.ag_accuracy("a", _X, _Y), 'ag_accuracy("a", x, y)',
     pg.ArgumentError, "ag_accuracy: model must have forward(x), got str",
     "ag_accuracy: model must have forward(x), got character"),
    ("fit", lambda: pg.ag_fit(_NoForward(), _X, _Y, nepoch=1, batch_size=2, silent=True),
     f"ag_fit({_R_NO_FORWARD}, x, y, nepoch = 1L, batch_size = 2L, silent = TRUE)", pg.ArgumentError,
     "ag_fit: model must have forward(x), got _NoForward",
     "ag_fit: model must have forward(x), got list"),
    ("evaluate", lambda: pg.ag_evaluate(_NoForward(), _X, _Y, loss="mse"),
     f'ag_evaluate({_R_NO_FORWARD}, x, y, loss = "mse")', pg.ArgumentError,
     "ag_evaluate: model must have forward(x), got _NoForward",
     "ag_evaluate: model must have forward(x), got list"),
    # the hunt's drifts (issue 29)
    ("estimate model", lambda: pg.ag_estimate_training_memory(model=3, x=_X),
     "ag_estimate_training_memory(model = 3, x = x)", pg.ArgumentError,
     "ag_estimate_training_memory(): model must have parameters(), got int",
     "ag_estimate_training_memory(): model must have parameters(), got numeric"),
    ("estimate static", lambda: pg.ag_estimate_training_memory([[2, 2]], static="a"),
     'ag_estimate_training_memory(list(c(2, 2)), static = "a")', pg.ArgumentError,
     "ag_estimate_training_memory(): static must be True or False, got str 'a'",
     'ag_estimate_training_memory(): static must be TRUE or FALSE, got "a"'),
    ("estimate batch_size", lambda: pg.ag_estimate_training_memory([[2, 2]], batch_size=-1),
     "ag_estimate_training_memory(list(c(2, 2)), batch_size = -1)", pg.PyggmlrValueError,
     "ag_estimate_training_memory(): batch_size must be an integer >= 0, got -1", None),
    ("lr kind", lambda: pg.ag_fit(pg.ag_linear(2, 2), _X, _Y, batch_size=2, lr="a", silent=True),
     'ag_fit(ag_linear(2, 2), x, y, batch_size = 2L, lr = "a", silent = TRUE)',
     pg.ArgumentError, "optimizer_adam: lr must be a single number, got 'a'",
     'optimizer_adam: lr must be a single number, got "a"'),
    ("lr flag", lambda: pg.optimizer_adam(pg.ag_linear(2, 2).parameters(), lr=True),
     "optimizer_adam(ag_linear(2, 2)$params(), lr = TRUE)", pg.ArgumentError,
     "optimizer_adam: lr must be a single number, got True",
     "optimizer_adam: lr must be a single number, got TRUE"),
    ("verbose", lambda: pg.ag_fit(pg.ag_linear(2, 2), _X, _Y, batch_size=2, verbose="a"),
     'ag_fit(ag_linear(2, 2), x, y, batch_size = 2L, verbose = "a")', pg.PyggmlrValueError,
     'ag_fit: verbose must be 0 (silent), 1 (progress bar), 2 (one line per epoch), "auto" or '
     "None, got 'a'",
     'ag_fit: verbose must be 0 (silent), 1 (progress bar), 2 (one line per epoch), "auto" or '
     'NULL, got "a"'),
    ("x kind", lambda: pg.ag_predict(pg.ag_linear(2, 2), None),
     "ag_predict(ag_linear(2, 2), NULL)", pg.ArgumentError,
     "ag_predict: x must be numeric, got dtype object", "ag_predict: x must be numeric, got NULL"),
    ("linear shape", lambda: pg.ag_predict(pg.ag_linear(2, 3), np.ones((4, 2))),
     "ag_predict(ag_linear(2, 3), matrix(1, 4, 2))", pg.ShapeError,
     "ag_predict: x has 4 rows but the model's first layer (linear) takes 2 inputs per sample; "
     "x looks row-major (4 rows, one per sample): pyggmlr data are [features, samples] with one "
     "column per sample, so pass x.T",
     "ag_predict: x has 4 rows but the model's first layer (linear) takes 2 inputs per sample; "
     "x looks row-major (4 rows, one per sample): pyggmlr data are [features, samples] with one "
     "column per sample, so pass t(x)"),
    ("sample_weight kind",
     lambda: pg.ag_fit(pg.ag_linear(2, 2), _X, _Y, batch_size=2, sample_weight="a", silent=True),
     'ag_fit(ag_linear(2, 2), x, y, batch_size = 2L, sample_weight = "a", silent = TRUE)',
     pg.ArgumentError, "ag_fit: sample_weight must be numeric, got dtype <U1",
     "ag_fit: sample_weight must be numeric, got character"),
    ("loader 3-d", lambda: pg.ag_dataloader(np.ones((2, 2, 2))),
     "ag_dataloader(array(1, c(2, 2, 2)))", pg.ShapeError,
     "ag_dataloader: x must be a matrix or a vector, got a 2x2x2 array", None),
    ("labels callable loss",  # Python refused y as not numeric (issue 29)
     lambda: pg.ag_fit(pg.ag_linear(2, 2), _X, np.array(["a", "b"] * 2),
                       loss=lambda o, t: pg.ag_mse_loss(o, t), batch_size=2, silent=True),
     'ag_fit(ag_linear(2, 2), x, rep(c("a", "b"), 2), loss = function(o, t) ag_mse_loss(o, t), '
     "batch_size = 2L, silent = TRUE)", pg.PyggmlrValueError,
     'ag_fit: labels y (strings or a Categorical) need loss = "cross_entropy" (or, with 2 labels, '
     '"binary_cross_entropy" / "bce_with_logits")',
     'ag_fit: a factor or character y needs loss = "cross_entropy" (or, with 2 levels, '
     '"binary_cross_entropy" / "bce_with_logits")'),
    ("labels order",  # Python checked labels first, R after the other arguments (issue 29)
     lambda: pg.ag_fit(pg.ag_linear(2, 2), _X, np.array(["a", None, "b", "a"], dtype=object),
                       nepoch=0, batch_size=2, silent=True),
     'ag_fit(ag_linear(2, 2), x, c("a", NA, "b", "a"), nepoch = 0, batch_size = 2L, silent = TRUE)',
     pg.PyggmlrValueError, "ag_fit: nepoch must be an integer >= 1, got 0", None),
    ("numeric categories",  # Python named the classes "1.0", "2.0" (issue 29)
     lambda: pg.ag_fit(pg.ag_linear(2, 2), _X, _Cat([0, 1, 1, 0], [1.0, 2.0]), batch_size=2,
                       silent=True, class_weight={2.0: -1}),
     "ag_fit(ag_linear(2, 2), x, factor(c(1, 2, 2, 1)), batch_size = 2L, silent = TRUE, "
     'class_weight = c("2" = -1))', pg.PyggmlrValueError,
     "ag_fit: class_weight must be finite and >= 0; class '2' has -1", None),
    ("lr string", lambda: setattr(pg.optimizer_sgd([pg.ag_param(_X)]), "lr", "0.5"),
     'o <- optimizer_sgd(list(ag_param(x))); o$lr <- "0.5"', pg.ArgumentError,
     "optimizer_sgd: lr must be a single number, got '0.5'",
     'optimizer_sgd: lr must be a single number, got "0.5"'),
    ("optimizer params", lambda: pg.optimizer_sgd({"a": 3}), "optimizer_sgd(list(a = 3))",
     pg.ArgumentError, "optimizer_sgd: parameter 1 is not an ag_tensor", None),
    ("clip params", lambda: pg.clip_grad_value({"w": 3}, None, 1),
     "clip_grad_value(list(w = 3), NULL, 1)", pg.ArgumentError,
     "clip_grad_value: parameter 'w' is not an ag_tensor", None),
    ("clip_value first", lambda: pg.clip_grad_value(3, None, None),
     "clip_grad_value(3, NULL, NULL)", pg.PyggmlrValueError,
     "clip_grad_value: clip_value must be a single positive finite number, got None",
     "clip_grad_value: clip_value must be a single positive finite number, got NULL"),
    ("max_norm first", lambda: pg.clip_grad_norm([pg.ag_param(_X)], 3, None),
     "clip_grad_norm(list(ag_param(x)), 3, NULL)", pg.ArgumentError,
     "clip_grad_norm: max_norm must be a number, got NoneType",
     "clip_grad_norm: max_norm must be a number, got NULL"),
    ("max_abs kind", lambda: pg.check_grad_anomaly([pg.ag_param(_X)], None, max_abs=True),
     "check_grad_anomaly(list(ag_param(x)), NULL, max_abs = TRUE)", pg.ArgumentError,
     "check_grad_anomaly: max_abs must be None or a single number, got True",
     "check_grad_anomaly: max_abs must be NULL or a single number, got TRUE"),
    ("sched optimizer", lambda: pg.lr_scheduler_step(3, 2), "lr_scheduler_step(3, 2)",
     pg.ArgumentError, "lr_scheduler_step: optimizer must be an optimizer (optimizer_sgd() or "
     "optimizer_adam()), got int",  # R: the function is the condition's call, as ggmlR's
     "optimizer must be an optimizer (optimizer_sgd() or optimizer_adam()), got numeric"),
    ("sched kind", lambda: pg.lr_scheduler_step(3, "a"), 'lr_scheduler_step(3, "a")',
     pg.PyggmlrValueError, "lr_scheduler_step: step_size must be a single number, got 'a'",
     'step_size must be a single number, got "a"'),
    ("compile fn", lambda: pg.ag_compile(3, _X), "ag_compile(3, x)", pg.ArgumentError,
     "ag_compile(): fn must be a function, got int",  # R's words; Python said "callable"
     "ag_compile(): fn must be a function, got numeric"),
    ("sched mode", lambda: pg.lr_scheduler_cyclic(3, 0.1, 0.2, mode="saw"),
     'lr_scheduler_cyclic(3, 0.1, 0.2, mode = "saw")', pg.PyggmlrValueError,
     "lr_scheduler_cyclic: 'arg' should be one of \u201ctriangular\u201d, \u201ctriangular2\u201d, "
     "\u201cexp_range\u201d (mode = 'saw')",  # Python said "mode must be one of (...)"
     "lr_scheduler_cyclic: 'arg' should be one of \u201ctriangular\u201d, \u201ctriangular2\u201d, "
     '\u201cexp_range\u201d (mode = "saw")'),
    ("device", lambda: pg.ag_device("xx"), 'ag_device("xx")', pg.PyggmlrValueError,
     "ag_device(): device must be 'cpu' or 'gpu', got 'xx'",
     'ag_device(): device must be "cpu" or "gpu", got "xx"'),
]  # fmt: skip


@pytest.mark.parametrize("call, rcall, exc, text, rtext", [c[1:] for c in _CASES],
                         ids=[c[0] for c in _CASES])  # fmt: skip
def test_same_refusal(call, rcall, exc, text, rtext):
    same_refusal(call, rcall, exc, text, rtext, x=_X, y=_Y)


@pytest.mark.parametrize("kw, rkw, best", [
    ({"monitor": "val_accuracy"}, 'monitor = "val_accuracy"', -np.inf),
    ({"mode": "max"}, 'mode = "max"', -np.inf),
    ({"monitor": "val_loss"}, 'monitor = "val_loss"', np.inf),
    ({}, "", np.inf),  # auto without a monitor: resolved when a fit begins (loss or val_loss)
])  # fmt: skip
def test_best_before_any_fit(kw, rkw, best):
    """best is the direction's start as soon as the mode is known (it read inf for max)"""
    assert pg.ag_early_stopping(**kw).best == best
    assert r.run(f"ag_early_stopping({rkw})$best") == best
    ck = pg.ag_model_checkpoint("unused.safetensors", **kw)
    assert ck.best == best
    assert r.run(f'ag_model_checkpoint("unused.safetensors", {rkw})$best') == best
