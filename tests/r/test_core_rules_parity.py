"""Rules that were written in both front ends and now live once in the core (issue 29): the
schedules' counts (R's as.integer: truncated toward zero; NaN, Inf and past R's integers NA,
refused; pg_sched_init) and ag_estimate_training_memory's input_shape (pg_mem_input_shape). Each
case is the same call in both languages, with the same values kept or the same refusal."""

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
