"""Non-finite and huge user values in the core's texts, each language in its own words (issue 29):
Python's inf / -inf / nan, R's Inf / -Inf / NaN / NA (pg_fmt_num), huge whole numbers as their
digits in both; match.arg's unique prefix in both; the estimate's y and shapes refused alike."""

import numpy as np
import pytest

from pyggmlr import r

if not r.available():
    pytest.skip(f"R bridge unavailable: {r.unavailable_reason()}", allow_module_level=True)

pytestmark = pytest.mark.parity  # embeds R (rpy2): not in the sanitized run, which cannot host R

from _rclass import same_refusal  # noqa: E402

import pyggmlr as pg  # noqa: E402

_SETUP = "ggml_set_seed(1); m <- ag_linear(3, 4); x <- matrix(1, 3, 8); "
_X = np.ones((3, 8))
_KS = "ag_max_pool2d: kernel_size must be one or two (H, W) whole numbers >= 1, got {}"
_PAD = (
    "ag_pad2d: padding must be a whole number (negative: crop), a pair (H, W) or four (left, "
    "right, top, bottom) of them, got {}"
)
_THR = "ag_accuracy: threshold must be a finite number, got {}"
_CW = "ag_fit: class_weight must be finite and >= 0; class 1 has {}"
_EST = "ag_estimate_training_memory(): "


def _m():
    pg.ggml_set_seed(1)
    return pg.ag_linear(3, 4)


def _fit(**kw):
    return pg.ag_fit(_m(), _X, np.zeros(8), nepoch=1, verbose=0, batch_size=8, **kw)


_FIT = "ag_fit(m, x, rep(0, 8), nepoch = 1, verbose = 0, batch_size = 8, "
_CASES = [  # (id, Python call, R call, Python type, Python text, R text or None: the same)
    ("pool inf", lambda: pg.ag_max_pool2d(kernel_size=np.inf), "ag_max_pool2d(kernel_size = Inf)",
     pg.PyggmlrValueError, _KS.format("(inf, inf)"), _KS.format("(Inf, Inf)")),
    ("pool pair nan", lambda: pg.ag_max_pool2d(kernel_size=(2, np.nan)),
     "ag_max_pool2d(kernel_size = c(2, NA))", pg.PyggmlrValueError, _KS.format("(2, nan)"),
     _KS.format("(2, NA)")),
    ("pool huge", lambda: pg.ag_max_pool2d(kernel_size=2**70),
     "ag_max_pool2d(kernel_size = 2^70)", pg.PyggmlrValueError,
     _KS.format("(1180591620717411303424, 1180591620717411303424)"), None),
    ("avg pool stride -inf", lambda: pg.ag_avg_pool1d(kernel_size=2, stride=-np.inf),
     "ag_avg_pool1d(kernel_size = 2, stride = -Inf)", pg.PyggmlrValueError,
     "ag_avg_pool1d: stride must be a whole number >= 1, got -inf",
     "ag_avg_pool1d: stride must be a whole number >= 1, got -Inf"),
    ("pad NaN", lambda: pg.ag_pad2d(padding=np.nan), "ag_pad2d(padding = NaN)",
     pg.PyggmlrValueError, _PAD.format("nan"), _PAD.format("NaN")),
    ("accuracy threshold -inf",  # R said -inf (the core's %g)
     lambda: pg.ag_accuracy(_m(), _X, np.zeros(8), threshold=-np.inf),
     "ag_accuracy(m, x, rep(0, 8), threshold = -Inf)", pg.PyggmlrValueError, _THR.format("-inf"),
     _THR.format("-Inf")),
    ("accuracy threshold nan", lambda: pg.ag_accuracy(_m(), _X, np.zeros(8), threshold=np.nan),
     "ag_accuracy(m, x, rep(0, 8), threshold = NaN)", pg.PyggmlrValueError, _THR.format("nan"),
     _THR.format("NaN")),
    ("class_weight NA",  # R said NaN
     lambda: _fit(class_weight=[1, np.nan, 1, 1]), _FIT + "class_weight = c(1, NA, 1, 1))",
     pg.PyggmlrValueError, _CW.format("nan"), _CW.format("NA")),
    ("class_weight NaN", lambda: _fit(class_weight=[1, np.nan, 1, 1]),
     _FIT + "class_weight = c(1, NaN, 1, 1))", pg.PyggmlrValueError, _CW.format("nan"),
     _CW.format("NaN")),
    ("class_weight huge id",  # Python said 1e+20 (%.15g)
     lambda: _fit(class_weight={2**24 + 1: 1}), _FIT + "class_weight = c(`16777217` = 1))",
     pg.PyggmlrValueError,
     "ag_fit: class_weight's class id 16777217 is above 16777216", None),
    ("bce target nan",  # R said nan (the core's %g)
     lambda: pg.ag_binary_cross_entropy_loss(pg.ag_tensor(np.full((2, 2), 0.5)),
                                             np.array([[np.nan, 0], [0, 0]])),
     "ag_binary_cross_entropy_loss(ag_tensor(matrix(0.5, 2, 2)), matrix(c(NaN, 0, 0, 0), 2))",
     pg.PyggmlrValueError, "ag_binary_cross_entropy_loss: target must lie in [0, 1], got nan at "
     "[0, 0] (0-based) of [2x2] f32", "ag_binary_cross_entropy_loss: target must lie in [0, 1], "
     "got NaN at [0, 0] (0-based) of [2x2] f32"),
    ("batch_norm eps 10**400",  # Python said Inf (its own display)
     lambda: pg.ag_batch_norm(4, eps=10**400), "ag_batch_norm(4, eps = 1e400)",
     pg.PyggmlrValueError, "ag_batch_norm: eps must be a finite number >= 0, got inf",
     "ag_batch_norm: eps must be a finite number >= 0, got Inf"),
    ("seed 10**400", lambda: pg.ggml_set_seed(10**400), "ggml_set_seed(1e400)",
     pg.PyggmlrValueError, "ggml_set_seed: supplied seed is not a valid integer, got inf",
     "ggml_set_seed: supplied seed is not a valid integer, got Inf"),
    ("config huge whole",  # both said 1.18059162071741e+21 (%.15g)
     lambda: pg.ag_module_from_config({"type": "linear", "in_features": 2**70, "out_features": 2}),
     'ag_module_from_config(list(type = "linear", in_features = 2^70, out_features = 2))',
     pg.PyggmlrValueError, "ag_module_from_config: bad arguments for a 'linear' layer: "
     "in_features must be a whole number in [1, 2147483647], got 1180591620717411303424", None),
    ("precision empty", lambda: pg.ag_matmul_precision(""), 'ag_matmul_precision("")',
     pg.PyggmlrValueError, "ag_matmul_precision: 'arg' should be one of \u201cdefault\u201d, "
     "\u201cf32\u201d (precision = '')", "ag_matmul_precision: 'arg' should be one of "
     '\u201cdefault\u201d, \u201cf32\u201d (precision = "")'),
    ("cyclic mode ambiguous",  # "tri" begins triangular and triangular2
     lambda: pg.lr_scheduler_cyclic(pg.optimizer_sgd([pg.ag_param(np.ones((2, 2)))]), 0, 1,
                                    mode="tri"),
     'lr_scheduler_cyclic(optimizer_sgd(list(ag_param(matrix(1, 2, 2)))), 0, 1, mode = "tri")',
     pg.PyggmlrValueError, "lr_scheduler_cyclic: 'arg' should be one of \u201ctriangular\u201d, "
     "\u201ctriangular2\u201d, \u201cexp_range\u201d (mode = 'tri')", "lr_scheduler_cyclic: 'arg' "
     "should be one of \u201ctriangular\u201d, \u201ctriangular2\u201d, \u201cexp_range\u201d "
     '(mode = "tri")'),
    ("estimate y shape",  # both failed in ag_mse_loss's words
     lambda: pg.ag_estimate_training_memory(model=_m(), x=_X, y=np.ones((2, 8)), quiet=True),
     "ag_estimate_training_memory(model = m, x = x, y = matrix(1, 2, 8), quiet = TRUE)",
     pg.ShapeError, _EST + "y is [2x8] but the model's output is [4x8]; with the default loss_fn "
     "(ag_mse_loss) y must have the output's shape [outputs, batch]", None),
    ("estimate y shape static",
     lambda: pg.ag_estimate_training_memory(model=_m(), x=_X, y=np.ones((4, 3)), quiet=True,
                                            static=True),
     "ag_estimate_training_memory(model = m, x = x, y = matrix(1, 4, 3), quiet = TRUE, "
     "static = TRUE)",
     pg.ShapeError, _EST + "y is [4x3] but the model's output is [4x8]; with the default loss_fn "
     "(ag_mse_loss) y must have the output's shape [outputs, batch]", None),
    ("estimate shapes with model",  # shapes were ignored
     lambda: pg.ag_estimate_training_memory(shapes=[(3, 4)], model=_m(), x=_X),
     "ag_estimate_training_memory(shapes = list(c(3, 4)), model = m, x = x)", pg.ArgumentError,
     _EST + "with model=, the parameters are the model's; leave shapes= out",
     _EST + "with model =, the parameters are the model's; leave shapes = out"),
]  # fmt: skip


@pytest.mark.parametrize("case", _CASES, ids=[c[0] for c in _CASES])
def test_refused_alike(case):
    _, call, rcall, exc, text, rtext = case
    same_refusal(call, rcall, exc, text, rtext, setup=_SETUP)


def test_unique_prefix_alike():
    """match.arg's partial matching (ggmlR's), in both: a unique prefix names the choice"""
    o = pg.optimizer_sgd([pg.ag_param(np.ones((2, 2)))])
    prev = pg.ag_matmul_precision("def")
    try:
        got = (
            pg.ag_matmul_precision("f3"),
            pg.ag_matmul_precision(),
            pg.lr_scheduler_cyclic(o, 0, 1, mode="exp").mode,
            pg.lr_scheduler_cyclic(o, 0, 1, mode="triangular").mode,
            pg.lr_scheduler_onecycle(o, 1, total_steps=4, anneal_strategy="lin").anneal_strategy,
        )
    finally:
        pg.ag_matmul_precision(prev)
    assert got == ("default", "f32", "exp_range", "triangular", "linear")
    rgot = r.run(
        'o <- optimizer_sgd(list(ag_param(matrix(1, 2, 2)))); prev <- ag_matmul_precision("def");'
        'res <- list(ag_matmul_precision("f3"), ag_matmul_precision(),'
        ' lr_scheduler_cyclic(o, 0, 1, mode = "exp")$mode,'
        ' lr_scheduler_cyclic(o, 0, 1, mode = "triangular")$mode,'
        ' lr_scheduler_onecycle(o, 1, total_steps = 4, anneal_strategy = "lin")$anneal_strategy);'
        "ag_matmul_precision(prev); res"
    )
    assert tuple(rgot) == got


def test_predict_prob_values_alike():
    """ "prob" in the model's dtype in Python (float32 for f32, as "response"), R's doubles; the
    same numbers"""
    pg.ggml_set_seed(1)
    m = pg.ag_linear(3, 4)
    x = np.arange(24.0).reshape(3, 8) / 10
    p = pg.ag_predict(m, x, type="prob", loss="cross_entropy")
    assert p.dtype == np.float32 and pg.ag_predict(m, x).dtype == np.float32
    rp = r.run(
        'ggml_set_seed(1); m <- ag_linear(3, 4); ag_predict(m, x, type = "prob", '
        'loss = "cross_entropy")',
        x=x,
    )
    np.testing.assert_allclose(np.asarray(rp), p, rtol=1e-6)
