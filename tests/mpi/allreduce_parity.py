"""ag_allreduce_gradients in a hand-written loop on 2 ranks, the same run as allreduce_parity.R
(run under mpirun): an f32 linear layer initialised under ggml_set_seed(3), each rank's own
batch and weight; rank 0 writes the averaged gradients (exact doubles) to argv[1]; argv[2]:
the buffer's dtype (absent: the default)."""

import json
import sys

import numpy as np

import pyggmlr as pg
from pyggmlr import distributed as dist

dist.init()
rank = dist.rank()
pg.ggml_set_seed(3)
m = pg.ag_linear(3, 4)
x = pg.ag_tensor(np.arange(6.0).reshape(3, 2, order="F") * (rank + 1.37) / 7)
with pg.with_grad_tape():
    loss = pg.ag_mse_loss(m.forward(x), np.ones((4, 2)) / 3)
g = pg.backward(loss)
dt = {"dtype": sys.argv[2]} if len(sys.argv) > 2 else {}
dist.ag_allreduce_gradients(m, g, weight=rank + 2.0, **dt)
if rank == 0:
    vals = [float(v) for t in m.parameters().values() for v in np.asarray(g[t]).ravel(order="F")]
    with open(sys.argv[1], "w") as f:
        json.dump(vals, f)
