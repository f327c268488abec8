"""Rules that were written in both front ends and now live once in the core (issue 29): the
schedules' counts (R's as.integer: truncated toward zero; NaN, Inf and past R's integers NA,
refused; pg_sched_init), ag_estimate_training_memory's input_shape (pg_mem_input_shape), whole-
number ids (pg_arg_whole_ids), ag_gather's index (pg_gather_f64) and dp_train's verbose
(pg_arg_clamp). Each case is the same call in both languages, with the same values kept or the
same refusal."""

import math

import numpy as np
import pytest

from pyggmlr import r

if not r.available():
    pytest.skip(f"R bridge unavailable: {r.unavailable_reason()}", allow_module_level=True)

pytestmark = pytest.mark.parity  # embeds R (rpy2): not in the sanitized run, which cannot host R

from _rclass import same_refusal  # noqa: E402

import pyggmlr as pg  # noqa: E402

_OPT = "o <- optimizer_sgd(list(ag_param(matrix(1, 2, 2))), lr = 0.1); "


def _opt():
    return pg.optimizer_sgd([pg.ag_param(np.ones((2, 2)))], lr=0.1)


# (constructor, its other arguments (Python, R), the count, its field, ggmlR's text)
_COUNTS = [
    ("lr_scheduler_step", {}, "", "step_size", "step_size must be >= 1"),
    ("lr_scheduler_cosine", {}, "", "T_max", "T_max must be >= 1"),
    ("lr_scheduler_cyclic", {"base_lr": 0.01, "max_lr": 0.1}, "0.01, 0.1, ", "step_size_up",
     "step_size_up must be >= 1"),
    ("lr_scheduler_onecycle", {"max_lr": 0.1}, "0.1, ", "total_steps",
     "total_steps must be >= 2"),
    ("lr_scheduler_warmup", {}, "", "warmup_steps", "warmup_steps must be >= 1"),
]  # fmt: skip
# (Python value, R's text of it)
_BAD = [(0.9, "0.9"), (1e12, "1e12"), (math.inf, "Inf"), (-math.inf, "-Inf"), (math.nan, "NaN"),
        (2.0**31, "2^31")]  # fmt: skip


def _kw(fn, kw, arg, v):
    return {**kw, arg: v}


@pytest.mark.parametrize("case", _COUNTS, ids=[c[0] for c in _COUNTS])
@pytest.mark.parametrize("bad", _BAD, ids=[b[1] for b in _BAD])
def test_count_refused_alike(case, bad):
    fn, kw, rargs, arg, text = case
    v, rv = bad
    same_refusal(
        lambda: getattr(pg, fn)(_opt(), **_kw(fn, kw, arg, v)),
        f"{fn}(o, {rargs}{arg} = {rv})",
        pg.PyggmlrValueError,
        f"{fn}: {text}",
        text,  # R's: ggmlR's stop() with the constructor's call
        setup=_OPT,
    )


# (value, R's text, as.integer's result): as.integer keeps everything below 2^31
_KEPT = [(7.9, "7.9", 7), (2147483647.5, "2147483647.5", 2147483647)]


@pytest.mark.parametrize("case", _COUNTS, ids=[c[0] for c in _COUNTS])
@pytest.mark.parametrize("kept", _KEPT, ids=[k[1] for k in _KEPT])
def test_count_truncated_alike(case, kept):
    fn, kw, rargs, arg, _ = case
    v, rv, want = kept
    s = getattr(pg, fn)(_opt(), **_kw(fn, kw, arg, v))
    got = r.run(_OPT + f"s <- {fn}(o, {rargs}{arg} = {rv}); list(s${arg}, is.integer(s${arg}))")
    assert getattr(s, arg) == want and type(getattr(s, arg)) is int
    assert got == [want, True]


def test_cyclic_down_truncated_alike():
    s = pg.lr_scheduler_cyclic(_opt(), 0.01, 0.1, step_size_up=3.7, step_size_down=-0.5 + 3)
    got = r.run(
        _OPT + "s <- lr_scheduler_cyclic(o, 0.01, 0.1, step_size_up = 3.7, step_size_down = 2.5);"
        " c(s$step_size_up, s$step_size_down)"
    )
    assert (s.step_size_up, s.step_size_down) == (3, 2) and list(got) == [3, 2]
    s = pg.lr_scheduler_warmup_cosine(_opt(), -0.5, 5.5)  # -0.5 is 0 (no warmup), as.integer's
    got = r.run(_OPT + "s <- lr_scheduler_warmup_cosine(o, -0.5, 5.5); c(s$warmup_steps, "
                "s$total_steps)")  # fmt: skip
    assert (s.warmup_steps, s.total_steps) == (0, 5) and list(got) == [0, 5]


_SHAPE = "ag_estimate_training_memory(): input_shape must be {} with positive whole numbers, got {}"
_PY, _R = "(features,) or (features, batch)", "c(features) or c(features, batch)"
_M = "m <- ag_sequential(ag_linear(2, 3)); "
# (Python's input_shape, R's text of it)
_SHAPES = [((2, 0.5), "c(2, 0.5)"), ((2, math.inf), "c(2, Inf)"), (math.nan, "NaN"),
           ((2, 2.0**31), "c(2, 2^31)"), ((2, 3, 4), "c(2, 3, 4)"), (True, "TRUE"),
           (("a", 2), 'c("a", "2")'), ((0,), "0")]  # fmt: skip


@pytest.mark.parametrize("case", _SHAPES, ids=[c[1] for c in _SHAPES])
def test_input_shape_refused_alike(case):
    v, rv = case
    m = pg.ag_sequential(pg.ag_linear(2, 3))
    shown = r.run(f"paste(deparse({rv}), collapse = ' ')")
    same_refusal(
        lambda: pg.ag_estimate_training_memory(model=m, input_shape=v, quiet=True),
        f"ag_estimate_training_memory(model = m, input_shape = {rv}, quiet = TRUE)",
        pg.PyggmlrValueError,
        _SHAPE.format(_PY, pg._args.show(v)),
        _SHAPE.format(_R, shown[0] if isinstance(shown, list) else shown),
        setup=_M,
    )


def test_input_shape_batch_alike():
    """One size: batch_size is the second (0: refused, as a size of 0)."""
    m = pg.ag_sequential(pg.ag_linear(2, 3))
    e = pg.ag_estimate_training_memory(model=m, input_shape=2, batch_size=5, quiet=True)
    got = r.run(_M + "ag_estimate_training_memory(model = m, input_shape = 2, batch_size = 5, "
                "quiet = TRUE)$activations")  # fmt: skip
    assert e["activations"] == 288 and got == 288  # a batch of 5, measured
    same_refusal(
        lambda: pg.ag_estimate_training_memory(model=m, input_shape=2, batch_size=0, quiet=True),
        "ag_estimate_training_memory(model = m, input_shape = 2, batch_size = 0, quiet = TRUE)",
        pg.PyggmlrValueError,
        _SHAPE.format(_PY, "2"),
        _SHAPE.format(_R, "2"),
        setup=_M,
    )


# counts as R's as.integer() takes them (pg_arg_count): (Python call, R call, type, Python's
# text, R's text or None: the same)
_ACC = "optimizer_adam: accumulate_steps must be a positive integer, got {}"
_LN = "ag_layer_norm: normalized_shape must be a single positive integer, got {}"
_P = "p <- list(ag_param(matrix(1, 2, 2))); "
_COUNT_REFUSALS = [
    ("accumulate_steps 0.5", lambda: pg.optimizer_adam(_ps(), accumulate_steps=0.5),
     "optimizer_adam(p, accumulate_steps = 0.5)", pg.PyggmlrValueError, _ACC.format("0.5"), None),
    ("accumulate_steps NaN", lambda: pg.optimizer_adam(_ps(), accumulate_steps=math.nan),
     "optimizer_adam(p, accumulate_steps = NaN)", pg.PyggmlrValueError, _ACC.format("nan"),
     _ACC.format("NaN")),
    ("accumulate_steps 2^31", lambda: pg.optimizer_adam(_ps(), accumulate_steps=2.0**31),
     "optimizer_adam(p, accumulate_steps = 2^31)", pg.PyggmlrValueError,
     _ACC.format("2147483648.0"), _ACC.format("2147483648")),
    ("accumulate_steps 'a'", lambda: pg.optimizer_adam(_ps(), accumulate_steps="a"),
     "optimizer_adam(p, accumulate_steps = 'a')", pg.ArgumentError, _ACC.format("'a'"),
     _ACC.format('"a"')),
    ("normalized_shape 0.5", lambda: pg.ag_layer_norm(0.5), "ag_layer_norm(0.5)",
     pg.PyggmlrValueError, _LN.format("0.5"), None),
    ("normalized_shape Inf", lambda: pg.ag_layer_norm(math.inf), "ag_layer_norm(Inf)",
     pg.PyggmlrValueError, _LN.format("inf"), _LN.format("Inf")),
    ("normalized_shape TRUE", lambda: pg.ag_layer_norm(True), "ag_layer_norm(TRUE)",
     pg.PyggmlrValueError, _LN.format("True"), _LN.format("TRUE")),
]  # fmt: skip


def _ps():
    return [pg.ag_param(np.ones((2, 2)))]


@pytest.mark.parametrize("case", _COUNT_REFUSALS, ids=[c[0] for c in _COUNT_REFUSALS])
def test_arg_count_refused_alike(case):
    _, call, rcall, exc, text, rtext = case
    same_refusal(call, rcall, exc, text, rtext, setup=_P)


def test_arg_count_truncated_alike():
    o = pg.optimizer_adam(_ps(), accumulate_steps=2.9)
    got = r.run(_P + "o <- optimizer_adam(p, accumulate_steps = 2.9); "
                "list(o$accumulate_steps, ag_layer_norm(4.9)$normalized_shape)")  # fmt: skip
    assert o.accumulate_steps == 2 and pg.ag_layer_norm(4.9).normalized_shape == 4
    assert got == [2, 4]


_MHA = "ag_multihead_attention: d_model ({}) must be divisible by n_heads ({})"
_MGN = "ag_capture_step: max_grad_norm must be one positive finite number, got {}"


@pytest.mark.parametrize("dh", [(10, 4), (6, 4)])
def test_mha_sizes_refused_alike(dh):
    d, h = dh
    same_refusal(lambda: pg.ag_multihead_attention(d, h), f"ag_multihead_attention({d}, {h})",
                 pg.PyggmlrValueError, _MHA.format(d, h))  # fmt: skip


@pytest.mark.parametrize("case", [(0, "0", "0"), (-1.5, "-1.5", "-1.5"),
                                  (math.inf, "inf", "Inf"), ("a", "'a'", '"a"')])  # fmt: skip
def test_max_grad_norm_refused_alike(case):
    v, shown, rshown = case
    rv = {"inf": "Inf", "'a'": "'a'"}.get(shown, shown)
    same_refusal(lambda: pg.ag_capture_step(len, max_grad_norm=v),
                 f"ag_capture_step(identity, max_grad_norm = {rv})", pg.PyggmlrValueError,
                 _MGN.format(shown), _MGN.format(rshown))  # fmt: skip


# whole-number ids (pg_arg_whole_ids): ag_embedding's ids, the same refusal for each
_IDS = "ag_embedding: ids must be whole numbers (0-based), got non-integer values"
_E = "set.seed(1); e <- ag_embedding(10, 4); "
_NOT_WHOLE = [(math.nan, "NaN"), (math.inf, "Inf"), (-math.inf, "-Inf"), (2.5, "2.5"),
              (-0.5, "-0.5")]  # fmt: skip


@pytest.mark.parametrize("case", _NOT_WHOLE, ids=[c[1] for c in _NOT_WHOLE])
def test_whole_ids_refused_alike(case):
    v, rv = case
    e = pg.ag_embedding(10, 4)
    same_refusal(lambda: e.forward([2.0, v]), f"e$forward(c(2, {rv}))", pg.PyggmlrValueError,
                 _IDS, setup=_E)  # fmt: skip


def test_whole_ids_kept_alike():
    pg.ggml_set_seed(1)
    e = pg.ag_embedding(10, 4)
    got = r.run(_E + "list(e$forward(c(2, 9, -0))$data, dim(e$forward(double())$data))")
    np.testing.assert_array_equal(np.asarray(got[0]), e.forward([2.0, 9.0, -0.0]).numpy())
    assert list(got[1]) == [4, 0] and e.forward(np.zeros(0)).shape == (4, 0)
    txt = (
        "ag_embedding: id 1e+300 at position {} is out of range [0, 10) for weight [4x10] f32 "
        "(ids are 0-based)"
    )  # positions as each language counts them
    same_refusal(lambda: e.forward([2.0, 1e300]), "e$forward(c(2, 1e300))", pg.PyggmlrValueError,
                 txt.format(1), txt.format(2), setup=_E)  # fmt: skip


# ag_gather's index (pg_gather_f64): the length, NA, whole numbers, the range, in that order
_GX = np.arange(1.0, 7).reshape((3, 2), order="F")
_G = "x <- matrix(1:6, 3, 2); "
_NA, _WHOLE = "ag_gather: index contains NA", "ag_gather: index must be whole numbers (0-based)"
_RANGE = "ag_gather: index out of range 0..2 (indices are 0-based)"
_GATHER = [
    ([0, 1, 2], "c(0, 1, 2)", pg.ShapeError, "ag_gather: index has length 3, x has 2 columns"),
    ([], "double()", pg.ShapeError, "ag_gather: index has length 0, x has 2 columns"),
    ([math.nan, 1e300], "c(NaN, 1e300)", pg.PyggmlrValueError, _NA),
    ([0.5, math.nan], "c(0.5, NA)", pg.PyggmlrValueError, _NA),
    ([math.inf, 2.5], "c(Inf, 2.5)", pg.PyggmlrValueError, _WHOLE),
    ([-0.5, 0], "c(-0.5, 0)", pg.PyggmlrValueError, _WHOLE),
    ([math.inf, 0], "c(Inf, 0)", pg.PyggmlrValueError, _RANGE),
    ([0, -math.inf], "c(0, -Inf)", pg.PyggmlrValueError, _RANGE),
    ([1e300, 0], "c(1e300, 0)", pg.PyggmlrValueError, _RANGE),
    ([2.0**31, 0], "c(2^31, 0)", pg.PyggmlrValueError, _RANGE),
    ([0, -1], "c(0L, -1L)", pg.PyggmlrValueError, _RANGE),
    ("a", '"a"', pg.ArgumentError, "ag_gather: index must be numeric (0-based integers)"),
]  # fmt: skip


@pytest.mark.parametrize("case", _GATHER, ids=[c[1] for c in _GATHER])
def test_gather_index_refused_alike(case):
    v, rv, exc, text = case
    same_refusal(lambda: pg.ag_gather(_GX, v), f"ag_gather(x, {rv})", exc, text, setup=_G)


def test_gather_index_kept_alike():
    got = r.run(_G + "list(ag_gather(x, c(2, -0))$data, dim(ag_gather(matrix(0, 3, 0), "
                "double())$data))")  # fmt: skip
    assert pg.ag_gather(_GX, [2.0, -0.0]).numpy().tolist() == [[3.0, 4.0]]
    assert np.asarray(got[0]).tolist() == [[3.0, 4.0]]
    assert pg.ag_gather(np.zeros((3, 0)), []).shape == (1, 0) and list(got[1]) == [1, 0]


# dp_train's verbose (pg_arg_clamp): clamped to [0, INT_MAX], truncated; NaN and +/-Inf refused
_V = "dp_train: verbose must be TRUE/FALSE or an integer, got {}"
_VERBOSE_KEPT = [(None, "NULL"), (False, "FALSE"), (True, "TRUE"), (10, "10L"), (2.9, "2.9"),
                 (-0.5, "-0.5"), (1e300, "1e300"), (2.0**31, "2^31")]  # fmt: skip


def test_verbose_kept_alike():
    from pyggmlr.parallel.replicas import _verbose_every

    py = [_verbose_every(v) for v, _ in _VERBOSE_KEPT]
    rs = ", ".join(f"pyggmlr:::.dp_every({rv})" for _, rv in _VERBOSE_KEPT)
    got = r.run(f"c({rs})")
    assert py == [0, 0, 1, 10, 2, 0, 2**31 - 1, 2**31 - 1] and list(got) == py


_DP = "make <- function() ag_linear(2, 2); d <- list(matrix(0, 2, 1)); "
_VERBOSE_BAD = [(math.nan, "NaN", pg.PyggmlrValueError, "nan", "NaN"),
                (math.inf, "Inf", pg.PyggmlrValueError, "inf", "Inf"),
                (-math.inf, "-Inf", pg.PyggmlrValueError, "-inf", "-Inf"),
                ("x", '"x"', pg.ArgumentError, "'x'", '"x"')]  # fmt: skip


@pytest.mark.parametrize("case", _VERBOSE_BAD, ids=[c[1] for c in _VERBOSE_BAD])
def test_verbose_refused_alike(case):
    v, rv, exc, shown, rshown = case
    same_refusal(
        lambda: pg.dp_train(lambda: pg.ag_linear(2, 2), [np.zeros((2, 1))],
                            loss_fn=lambda o, s: pg.ag_sum(o), n_iter=1, verbose=v),
        f"dp_train(make, d, loss_fn = function(o, s) ag_sum(o), n_iter = 1L, verbose = {rv})",
        exc, _V.format(shown), _V.format(rshown), setup=_DP,
    )  # fmt: skip


# ag_linear's gain (pg_arg_gain): one finite number; ggmlR's text, a bad value for any kind
_GAIN = "ag_linear: gain must be a single finite number"
_GAINS = [(math.nan, "NaN"), (math.inf, "Inf"), (-math.inf, "-Inf"), (True, "TRUE"), ("a", '"a"'),
          (None, "NULL"), ([1, 2], "c(1, 2)")]  # fmt: skip


@pytest.mark.parametrize("case", _GAINS, ids=[c[1] for c in _GAINS])
def test_gain_refused_alike(case):
    g, rg = case
    same_refusal(lambda: pg.ag_linear(2, 3, gain=g), f"ag_linear(2, 3, gain = {rg})",
                 pg.PyggmlrValueError, _GAIN)  # fmt: skip


@pytest.mark.parametrize("g", [2.5, -0.5, 1e300, 0.0])
def test_gain_kept_alike(g):
    pg.ggml_set_seed(1)
    w = pg.ag_linear(2, 3, gain=g).W.numpy()
    got = r.run(f"set.seed(1); l <- ag_linear(2, 3, gain = {g!r}); list(l$W$data, "
                "l$to_config()$gain)")  # fmt: skip
    np.testing.assert_array_equal(np.asarray(got[0]), w)
    assert got[1] == g
