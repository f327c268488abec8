"""N ranks with per-rank batch b against one rank with batch N*b (run under mpirun).

Writes a JSON report (argv[1]) on rank 0; tests/test_distributed.py asserts on it."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np  # noqa: E402
from _common import MLP, out_path, regression_data, write_json  # noqa: E402

import pyggmlr as pg  # noqa: E402
from pyggmlr import distributed as dist  # noqa: E402
from pyggmlr.parallel import mpi  # noqa: E402

comm = dist.init()
R, W = comm.Get_rank(), comm.Get_size()
pg.ag_dtype("f64")
b = 4
report = {"world_size": W}

# A: ag_fit_distributed is ag_fit(distributed=True) with the mapped arguments, to the bit; and
# it follows one rank with the global batch. 51 samples: 51 % 8 = 3 left out per epoch (ggml's rule)
X, Y = regression_data(51)
alias_args = dict(loss="mse", lr=0.01, nepoch=4, batch_size=b, seed=3)
model = MLP(4, 6, 2, seed=100 + R)  # different start on each rank: the broadcast must fix it
before = dist.ag_mpi_stats()["allreduce_bytes"]
hist = dist.ag_fit_distributed(model, X, Y, optimizer="adam", verbose=False, **alias_args)
report["A_bytes"] = dist.ag_mpi_stats()["allreduce_bytes"] - before
report["A_type"] = type(hist).__name__
report["A_spread"] = dist.ag_parameters_spread(model)
same = MLP(4, 6, 2, seed=100 + R)
hsame = pg.ag_fit(same, X, Y, optimizer="adamw", verbose=0, distributed=True, **alias_args)
report["A_bit_identical"] = comm.allreduce(
    int(
        (hist.loss, hist.loss_unc) == (hsame.loss, hsame.loss_unc)
        and all(
            np.array_equal(t.numpy(), same.parameters()[k].numpy())
            for k, t in model.parameters().items()
        )
    ),
    op=mpi._import_mpi().MIN,
)
allw = comm.gather({k: t.numpy() for k, t in model.parameters().items()}, root=0)
if R == 0:
    try:  # refused before any collective, so one rank may call it alone
        dist.ag_fit_distributed(model, X, Y, comm=mpi._import_mpi().COMM_SELF)
    except pg.PyggmlrValueError as e:
        report["A_comm_refused"] = str(e)
    ref = MLP(4, 6, 2, seed=100)
    href = pg.ag_fit(ref, X, Y, optimizer="adamw", verbose=0, **dict(alias_args, batch_size=b * W))
    report["A_max_weight_diff"] = max(
        float(np.max(np.abs(t.numpy() - model.parameters()[k].numpy())))
        for k, t in ref.parameters().items()
    )
    report["A_max_loss_diff"] = float(np.max(np.abs(np.subtract(href.loss, hist.loss))))
    report["A_loss_first_last"] = [float(hist.loss[0]), float(hist.loss[-1])]
    report["A_rank_weights_identical"] = all(
        np.array_equal(w[k], allw[0][k]) for w in allw for k in allw[0]
    )

# B: hand-written loop, DistributedOptimizer over SGD with momentum, gradient maps, softmax
# cross-entropy, clipping of the averaged gradient; reference: a plain single-process loop.
r = np.random.default_rng(11)
XB = r.normal(size=(4, 48))
ids = r.integers(0, 3, size=48)
model = MLP(4, 5, 3, seed=200 + R)
dist.ag_broadcast_parameters(model)
opt = dist.DistributedOptimizer(pg.optimizer_sgd(model, lr=0.1, momentum=0.9), max_norm=0.5)
n_steps, B = 6, b * W
for s in range(n_steps):
    gidx = np.arange(s * B, (s + 1) * B) % 48
    mine = dist.ag_rank_slice(gidx)
    with pg.with_grad_tape():
        loss = pg.ag_softmax_cross_entropy_loss(model.forward(pg.ag_tensor(XB[:, mine])), ids[mine])
    grads = pg.backward(loss)
    opt.step(grads, weight=len(mine))
    opt.zero_grad()
    del grads
report["B_spread"] = dist.ag_parameters_spread(model)

# D: ag_fit(distributed=True): per-rank batch b, logical 2b, against ag_fit on one rank with 2W b / 4W b
XD, YD = regression_data(64, seed=5)
model_d = MLP(4, 6, 2, seed=400 + R)


def _fit_d(model, batch, **kw):
    """ag_fit of section D: MSE, SGD, 3 epochs, logical batch 2 * batch."""
    pg.ag_fit(
        model,
        XD,
        YD,
        loss="mse",
        optimizer="sgd",
        lr=0.05,
        nepoch=3,
        batch_size=batch,
        nbatch_logical=2 * batch,
        seed=9,
        silent=True,
        **kw,
    )


_fit_d(model_d, b, distributed=True)
report["D_spread"] = dist.ag_parameters_spread(model_d)
if R == 0:
    ref = MLP(4, 6, 2, seed=400)
    _fit_d(ref, b * W)
    report["D_max_weight_diff"] = max(
        float(np.max(np.abs(t.numpy() - model_d.parameters()[k].numpy())))
        for k, t in ref.parameters().items()
    )

# C: the ag_fit hook: global sizes and this rank's part of a global batch
o, gb, gnl, take = dist.ag_distributed_setup(
    MLP(4, 5, 3, seed=300 + R), pg.optimizer_adam(model), 4, 8
)
report["C_sizes"] = [gb, gnl]
report["C_parts"] = comm.gather(take(np.arange(gb)).tolist(), root=0)
report["C_wrapped"] = type(o).__name__
if R == 0:
    ref = MLP(4, 5, 3, seed=200)
    ropt = pg.optimizer_sgd(ref, lr=0.1, momentum=0.9)
    for s in range(n_steps):
        gidx = np.arange(s * B, (s + 1) * B) % 48
        with pg.with_grad_tape():
            loss = pg.ag_softmax_cross_entropy_loss(
                ref.forward(pg.ag_tensor(XB[:, gidx])), ids[gidx]
            )
        grads = pg.backward(loss)
        pg.clip_grad_norm(ref, grads, 0.5)
        ropt.step(grads)
        ropt.zero_grad()
        del grads
    report["B_max_weight_diff"] = max(
        float(np.max(np.abs(t.numpy() - model.parameters()[k].numpy())))
        for k, t in ref.parameters().items()
    )
    report["B_moved"] = float(np.max(np.abs(ref.W1.numpy() - MLP(4, 5, 3, seed=200).W1.numpy())))
    report["stats"] = dist.ag_mpi_stats()
    write_json(out_path(), report)
