"""The ops this project re-implemented in issue 32 against PyTorch 2.13 in f64: GELU on the
vectorised erfc (forward and gradient) and ag_multihead_attention, whose heads are one core op
(pg_mha_heads): output and every gradient (W_q, W_k, W_v, W_o, b_o and the inputs), self and
cross attention, causal or not, one head or several; dropout is off (eval) since torch draws
its own masks."""

import numpy as np
import pytest
from _nnref import F, needs_torch, rel, torch

import pyggmlr as pg

pytestmark = needs_torch


def test_gelu_matches_torch_f64(f64):
    # x >= -5: below it torch's 0.5 x (1 + erf(x / sqrt2)) cancels (ours uses erfc: no
    # cancellation; tests/core/test_vmath.py checks that range against mpmath)
    x = np.concatenate([np.linspace(-5, 10, 3001), [0.0, -0.0, 1e-300, -1e-8, 7e-4, 40.0]])
    xp = pg.ag_param(x[None, :])
    w = np.cos(np.arange(x.size))[None, :]  # a non-uniform upstream gradient
    with pg.with_grad_tape():
        y = pg.ag_gelu(xp)
        loss = pg.ag_sum(pg.ag_mul(y, pg.ag_tensor(w)))
    g = pg.backward(loss)[xp]
    xt = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    yt = F.gelu(xt)
    (yt * torch.tensor(w[0])).sum().backward()
    assert rel(y.numpy()[0], yt.detach().numpy()) < 1e-12
    assert rel(np.asarray(g)[0], xt.grad.numpy()) < 1e-12


@pytest.mark.parametrize("H,Sq,Skv,causal", [(1, 6, 6, False), (4, 7, 7, True), (2, 5, 9, False)])
def test_multihead_attention_matches_torch_f64(f64, rng, H, Sq, Skv, causal):
    D = 8
    pg.ggml_set_seed(3)
    att = pg.ag_multihead_attention(D, H)
    att.eval()
    att.b_o = pg.ag_param(rng.normal(size=(D, 1)))  # a non-zero bias, so its gradient counts
    q = pg.ag_param(rng.normal(size=(D, Sq)))
    kv = pg.ag_param(rng.normal(size=(D, Skv))) if Skv != Sq else q
    w = rng.normal(size=(D, Sq))
    with pg.with_grad_tape():
        out = att.forward(q, kv, kv, causal_mask=causal)
        loss = pg.ag_sum(pg.ag_mul(out, pg.ag_tensor(w)))
    grads = pg.backward(loss)

    P = {
        k: torch.tensor(np.asarray(v.numpy()), requires_grad=True)
        for k, v in att.parameters().items()
    }
    qt = torch.tensor(q.numpy().T[None], requires_grad=True)  # (1, Sq, D)
    kt = qt if kv is q else torch.tensor(kv.numpy().T[None], requires_grad=True)
    mask = torch.triu(torch.ones(Sq, Skv, dtype=torch.bool), 1) if causal else None
    ot, _ = F.multi_head_attention_forward(
        qt.transpose(0, 1), kt.transpose(0, 1), kt.transpose(0, 1), D, H,
        in_proj_weight=torch.cat([P["W_q"], P["W_k"], P["W_v"]]),
        in_proj_bias=torch.zeros(3 * D, dtype=torch.float64),
        bias_k=None, bias_v=None, add_zero_attn=False, dropout_p=0.0,
        out_proj_weight=P["W_o"], out_proj_bias=P["b_o"][:, 0],
        training=False, need_weights=False, attn_mask=mask,
    )  # fmt: skip
    ot = ot[:, 0, :].T  # (Sq, 1, D) -> [D, Sq]
    (ot * torch.tensor(w)).sum().backward()
    assert rel(out.numpy(), ot.detach().numpy()) < 1e-10
    for k, t in att.parameters().items():
        assert rel(np.asarray(grads[t]), P[k].grad.numpy()) < 1e-10, k
    assert rel(np.asarray(grads[q]), qt.grad[0].numpy().T) < 1e-10
    if kv is not q:
        assert rel(np.asarray(grads[kv]), kt.grad[0].numpy().T) < 1e-10
