"""ag_embedding against PyTorch 2.13 in f64 (issue 29 passes array ids to the core as doubles):
the forward gather and the weight's gradient (a scatter-add over repeated ids), for ids given as
floats, ints, a list and a tensor, at both ends of the vocabulary."""

import numpy as np
import pytest
from _nnref import F, needs_torch, rel, torch

import pyggmlr as pg

pytestmark = needs_torch

_IDS = [0, 6, 3, 3, 0, 5, 6, 6, 1]  # repeats (their gradients add up) and both ends of [0, 7)


@pytest.mark.parametrize("form", ["float", "int", "list", "tensor"])
def test_embedding_matches_torch_f64(f64, rng, form):
    V, D = 7, 5
    e = pg.ag_embedding(V, D)
    w = rng.normal(size=(D, V)) * 10.0 ** rng.integers(-100, 100, size=(D, V))
    e.weight = pg.ag_param(w)
    ids = {
        "float": np.array(_IDS, dtype=np.float64),
        "int": np.array(_IDS, dtype=np.int64),
        "list": list(_IDS),
        "tensor": pg.ag_tensor(np.array([_IDS], dtype=np.float64)),
    }[form]
    G = rng.normal(size=(D, len(_IDS)))  # a non-uniform upstream gradient
    with pg.with_grad_tape():
        out = e.forward(ids)
        loss = pg.ag_sum(pg.ag_mul(out, pg.ag_tensor(G)))
    g = np.asarray(pg.backward(loss)[e.weight])
    wt = torch.tensor(w.T.copy(), requires_grad=True)  # torch's rows are our columns
    ot = F.embedding(torch.tensor(_IDS), wt)
    (ot * torch.tensor(G.T)).sum().backward()
    np.testing.assert_array_equal(out.numpy(), ot.detach().numpy().T)  # a gather: exact
    assert rel(g, wt.grad.numpy().T) < 1e-12
    np.testing.assert_array_equal(g[:, 2], 0.0)  # an id never used gets no gradient, as torch's
    np.testing.assert_array_equal(wt.grad.numpy()[2], 0.0)
