"""ag_fit(distributed=True) on 2 ranks, the same run as fit_parity.R (run under mpirun).

Data from R's stream (set.seed(11); rnorm), a model initialised under ggml_set_seed(1), dropout,
shuffles, a validation split and gradient accumulation; rank 0 writes the history and the
weights (exact doubles) to argv[1], which tests/test_distributed.py compares with R's."""

import json
import sys

import numpy as np

import pyggmlr as pg
from pyggmlr import distributed as dist

dist.init()
g = pg.random.Generator(11)
X = g.rnorm(4 * 96).reshape(4, 96, order="F")
ids = (np.floor(g.runif(96) * 3)).astype(np.int64)
pg.ggml_set_seed(1)
model = pg.ag_sequential(
    pg.ag_linear(4, 8, activation="relu"), pg.ag_dropout(0.25), pg.ag_linear(8, 3)
)
# fit_parity.R's settings: what is learned, and how the 96 samples are batched and shuffled
learn = dict(loss="cross_entropy", optimizer="adamw", lr=0.01, nepoch=3)
batches = dict(batch_size=8, nbatch_logical=16, val_split=0.25, shuffle=True, seed=5)
h = pg.ag_fit(model, X, ids, **learn, **batches, distributed=True, progress="none")
if dist.rank() == 0:
    keys = ("loss", "loss_unc", "accuracy", "accuracy_unc", "val_loss", "val_accuracy")
    rep = {k: [float(v) for v in getattr(h, k)] for k in keys}
    rep["weights"] = [
        float(v) for t in model.parameters().values() for v in t.numpy().ravel(order="F")
    ]
    rep["spread"] = dist.ag_parameters_spread(model)
    with open(sys.argv[1], "w") as f:
        json.dump(rep, f)
else:
    dist.ag_parameters_spread(model)
