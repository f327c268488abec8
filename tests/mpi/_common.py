"""Shared pieces of the MPI test scripts (run under mpirun, not collected by pytest)."""

import json
import os
import sys

import numpy as np

import pyggmlr as pg


class MLP:
    """Test-local model: W2 tanh(W1 x + b1) + b2, parameters in a fixed order."""

    def __init__(self, n_in, n_hidden, n_out, seed):
        r = np.random.default_rng(seed)
        self.W1 = pg.ag_param(r.normal(scale=0.5, size=(n_hidden, n_in)))
        self.b1 = pg.ag_param(r.normal(scale=0.1, size=(n_hidden, 1)))
        self.W2 = pg.ag_param(r.normal(scale=0.5, size=(n_out, n_hidden)))
        self.b2 = pg.ag_param(r.normal(scale=0.1, size=(n_out, 1)))

    def forward(self, x):
        h = pg.ag_tanh(pg.ag_add(pg.ag_matmul(self.W1, x), self.b1))
        return pg.ag_add(pg.ag_matmul(self.W2, h), self.b2)

    def parameters(self):
        return {"W1": self.W1, "b1": self.b1, "W2": self.W2, "b2": self.b2}


def regression_data(n, n_in=4, n_out=2, seed=7):
    r = np.random.default_rng(seed)
    X = r.normal(size=(n_in, n))
    Y = np.tanh(r.normal(size=(n_out, n_in)) @ X) + 0.1 * r.normal(size=(n_out, n))
    return X, Y


def weights(model):
    return {k: t.numpy().tolist() for k, t in model.parameters().items()}


def write_json(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f)
    os.replace(tmp, path)


def out_path():
    return sys.argv[1] if len(sys.argv) > 1 else os.devnull
