"""Optimizers and gradient helpers refuse hostile input as R does (issue 29): the same class,
the same words (R's display of a value for Python's), the same first error. R's
test-drift-optim.R has the same cases; tests/r/test_api_drift_parity.py runs some in both."""

import numpy as np
import pytest

import pyggmlr as pg
from pyggmlr.errors import ArgumentError, PyggmlrValueError


def _w():
    return pg.ag_param(np.ones((2, 2)))


@pytest.mark.parametrize("bad, exc, text", [
    ("0.5", ArgumentError, "optimizer_sgd: lr must be a single number, got '0.5'"),  # parsed
    (10**400, PyggmlrValueError, "optimizer_sgd: lr must be a finite number >= 0, got inf"),
])  # fmt: skip
def test_a_bad_lr_is_refused_and_changes_nothing(bad, exc, text):
    o = pg.optimizer_sgd([_w()], lr=0.5)
    with pytest.raises(exc) as e:
        o.lr = bad
    assert str(e.value) == text
    assert o.lr == 0.5
    with pytest.raises(ArgumentError, match="accumulate_steps must be a single number, got '2'"):
        o.accumulate_steps = "2"
    assert o.accumulate_steps == 1
    with pytest.raises(
        ArgumentError, match=r"^optimizer_sgd: lr must be a single number, got '1'$"
    ):
        pg.optimizer_sgd([_w()], lr="1")


@pytest.mark.parametrize("params, text", [
    ("a", "optimizer_adam: is.list(params) is not TRUE (params must be a list of ag_tensors or a "
          "model, got 'a')"),
    (3, "optimizer_adam: is.list(params) is not TRUE (params must be a list of ag_tensors or a "
        "model, got 3)"),
    ({"a": 3}, "optimizer_adam: parameter 1 is not an ag_tensor"),  # by position, as ggmlR
    ([_w(), pg.ag_linear(2, 2)], "optimizer_adam: parameter 2 is not an ag_tensor"),
])  # fmt: skip
def test_optimizer_params_are_refused_with_ggmlrs_texts(params, text):
    with pytest.raises(ArgumentError) as e:
        pg.optimizer_adam(params)
    assert str(e.value) == text


@pytest.mark.parametrize("call, exc, text", [
    (lambda: pg.clip_grad_norm("a", None, 1), ArgumentError,
     "clip_grad_norm: params must be a list of ag_tensors, got 'a'"),
    (lambda: pg.clip_grad_norm({"w": 3}, None, 1), ArgumentError,
     "clip_grad_norm: parameter 'w' is not an ag_tensor"),
    (lambda: pg.clip_grad_norm([_w()], 3, "a"), ArgumentError,  # max_norm before grads, as R
     "clip_grad_norm: max_norm must be a number, got str"),
    (lambda: pg.clip_grad_value([_w()], 3, 1), ArgumentError,  # R's names the class too
     "clip_grad_value: grads must be the map returned by backward() or None, got int"),
    (lambda: pg.clip_grad_value(3, None, "a"), PyggmlrValueError,  # clip_value before params
     "clip_grad_value: clip_value must be a single positive finite number, got 'a'"),
    (lambda: pg.check_grad_anomaly([3], None, max_abs="a"), ArgumentError,
     "check_grad_anomaly: max_abs must be None or a single number, got 'a'"),
    (lambda: pg.check_grad_anomaly([_w()], None, max_abs=float("nan")), PyggmlrValueError,
     "check_grad_anomaly: max_abs must be None or a single number, got nan"),
    (lambda: pg.check_grad_anomaly([_w()], None, action="x", max_abs="a"), PyggmlrValueError,
     "check_grad_anomaly: 'arg' should be one of \u201cwarn\u201d, \u201cstop\u201d, \u201csilent\u201d "
     "(action = 'x')"),  # action first
    (lambda: pg.check_grad_anomaly([_w()], None, action=3), ArgumentError,  # a wrong kind
     "check_grad_anomaly: 'arg' should be one of \u201cwarn\u201d, \u201cstop\u201d, \u201csilent\u201d "
     "(action = 3)"),
])  # fmt: skip
def test_gradient_helpers_refuse_as_r(call, exc, text):
    _refuses(call, exc, text)
    # an infinite bound is a number (it was refused as not finite)
    assert pg.check_grad_anomaly([_w()], None, max_abs=float("inf"))[0]["status"] == "missing"


def _refuses(call, exc, text):
    with pytest.raises(exc) as e:
        call()
    assert str(e.value) == text


def _sgd():
    return pg.optimizer_sgd([_w()], lr=0.1)


@pytest.mark.parametrize("call, exc, text", [
    (lambda: pg.lr_scheduler_step(3, 2), ArgumentError,  # R's words were "an environment ..."
     "lr_scheduler_step: optimizer must be an optimizer (optimizer_sgd() or optimizer_adam()), "
     "got int"),
    (lambda: pg.lr_scheduler_warmup(_w(), 2), ArgumentError,
     "lr_scheduler_warmup: optimizer must be an optimizer (optimizer_sgd() or optimizer_adam()), "
     "got an ag_tensor"),
    (lambda: pg.lr_scheduler_step(_sgd(), 1e12), PyggmlrValueError,  # R's as.integer: NA
     "lr_scheduler_step: step_size must be >= 1"),
    (lambda: pg.lr_scheduler_cyclic(_sgd(), 0.1, 0.2, mode="saw"), PyggmlrValueError,
     "lr_scheduler_cyclic: 'arg' should be one of \u201ctriangular\u201d, \u201ctriangular2\u201d, "
     "\u201cexp_range\u201d (mode = 'saw')"),  # R's match.arg text (Python: "mode must be one of")
    (lambda: pg.lr_scheduler_onecycle(_sgd(), 0.1, 10, anneal_strategy=1), ArgumentError,
     "lr_scheduler_onecycle: 'arg' should be one of \u201ccos\u201d, \u201clinear\u201d "
     "(anneal_strategy = 1)"),
    (lambda: pg.lr_scheduler_cosine(_sgd(), 4, T_mult="a"), PyggmlrValueError,  # ggmlR's text
     "lr_scheduler_cosine: T_mult must be a single number >= 1"),
])  # fmt: skip
def test_schedulers_refuse_as_r(call, exc, text):
    _refuses(call, exc, text)
