"""One rank raises while the other waits in the gradient all-reduce (run under mpirun).

argv[2] picks the failure: "raise" (an uncaught exception on rank 1) or "layout" (rank 1 built a
different model). Either way the job must end with a non-zero exit and a clear message on
stderr, not hang."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np  # noqa: E402
from _common import MLP  # noqa: E402

import pyggmlr as pg  # noqa: E402
from pyggmlr import distributed as dist  # noqa: E402

mode = sys.argv[2] if len(sys.argv) > 2 else "raise"
comm = dist.init()
R = comm.Get_rank()
pg.ag_dtype("f64")
model = MLP(3, 4 if (mode != "layout" or R == 0) else 5, 1, seed=1)
x = pg.ag_tensor(np.ones((3, 2)))
for step in range(3):
    with pg.with_grad_tape():
        loss = pg.ag_mean(model.forward(x))
    grads = pg.backward(loss)
    if mode == "raise" and R == 1 and step == 1:
        raise RuntimeError("rank 1 failed on purpose at step 1")
    dist.ag_allreduce_gradients(model, grads)
print(f"rank {R}: finished (should not happen)", flush=True)
