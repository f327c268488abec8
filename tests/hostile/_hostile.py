"""Shared by the test_hostile_args / _steps / _validators files: the special numbers and small
fresh objects (a parameter, an optimizer, a model, a batch) the refusals are tried on."""

import numpy as np

import pyggmlr as pg

NAN, INF = float("nan"), float("inf")
X4 = np.ones((2, 4))


def _w():
    return pg.ag_param(np.ones((2, 2)))


def _opt():
    return pg.optimizer_sgd([_w()])


def _model():
    pg.ggml_set_seed(1)
    return pg.ag_sequential(pg.ag_linear(2, 3))
