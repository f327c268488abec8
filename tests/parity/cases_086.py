"""Parity cases for what ggmlR 0.8.3-0.8.6 added (the 0.8.6 spec): the selection ops and the
learning-rate schedules and gradient helpers, R against Python on the same inputs."""

from __future__ import annotations

import numpy as np

from .cases_api import _layer_case, _mlp_inputs, _mlp_params, _op, _opt_case, _with_w, mlp_step
from .core import CASES, Case, _u

_op("log_softmax", [(3, 4)], lambda P, a: P.ag_log_softmax(a))
_op("gather", [(3, 4)], lambda P, a: P.ag_gather(a, np.array([2.0, 0.0, 1.0, 1.0])))
_op("max", [(3, 4)], lambda P, a: P.ag_max(a))


def _sgd(P, p):
    return P.optimizer_sgd(p, lr=0.1)


def _adam(P, p):
    return P.optimizer_adam(p, lr=0.1)


# the schedules: name, optimizer, steps, scheduler on that optimizer
# fmt: off
_SCHEDULES = [
    ("cosine restart T_mult 2", _sgd, 9,
     lambda P, o: P.lr_scheduler_cosine(o, 2, lr_min=0.01, restart=True, T_mult=2)),
    ("cyclic triangular2", _sgd, 7,
     lambda P, o: P.lr_scheduler_cyclic(o, 0.01, 0.2, step_size_up=2, mode="triangular2")),
    ("cyclic exp_range", _adam, 6,
     lambda P, o: P.lr_scheduler_cyclic(
         o, 0.001, 0.05, step_size_up=2, step_size_down=1, mode="exp_range", gamma=0.9)),
    ("onecycle sgd (momentum cycled)", _sgd, 8,
     lambda P, o: P.lr_scheduler_onecycle(o, 0.2, 7)),
    ("onecycle adam linear (beta1 cycled)", _adam, 6,
     lambda P, o: P.lr_scheduler_onecycle(o, 0.05, 5, pct_start=0.4, anneal_strategy="linear")),
    ("warmup then cosine", lambda P, p: P.optimizer_sgd(p, lr=0.1, momentum=0.5), 7,
     lambda P, o: P.lr_scheduler_warmup(
         o, 3, after=P.lr_scheduler_cosine(o, 4, lr_min=0.01), start_factor=0.2)),
    ("warmup_cosine", lambda P, p: P.optimizer_adam(p, lr=0.05), 7,
     lambda P, o: P.lr_scheduler_warmup_cosine(o, 2, 6, lr_min=0.001, warmup_start_lr=0.01)),
]
# fmt: on
for name, make_opt, steps, sched in _SCHEDULES:
    _opt_case(f"scheduler {name}", make_opt, steps=steps, sched=sched)


def _clip_value(P, d, steps):
    p = _mlp_params(P, d)
    opt = P.optimizer_sgd(p, lr=0.3)
    out = []
    for _ in range(steps):
        g, rec = mlp_step(
            P, p, d, lambda g: {"max_abs": np.array([float(P.clip_grad_value(p, g, 0.05))])}
        )
        opt.step(g)
        opt.zero_grad()
        out.append(rec)
    return out


CASES.append(Case("clip_grad_value", "optim", _clip_value, 4, _mlp_inputs))


def _ln_plain_build(P, d):
    """A linear layer into a layer norm without affine parameters (0.8.3's elementwise_affine)."""
    lin = P.ag_linear(4, 5, "tanh")
    P.set(lin.W, d["W"])
    P.set(lin.b, d["b"])
    return (lin, P.ag_layer_norm(5, eps=1e-3, elementwise_affine=False)), lin.params()


_layer_case(
    "layer_norm no affine",
    _ln_plain_build,
    lambda P, m, d: m[1].forward(m[0].forward(d["x"])),
    _with_w(lambda rng: {"W": _u(rng, 5, 4), "b": _u(rng, 5, 1), "x": _u(rng, 4, 6, lo=-2, hi=2)}),
)


def _lin_gain_build(init):
    def build(P, d):
        P.ggml_set_seed(11)  # the weights themselves are the case: drawn in both languages
        lin = P.ag_linear(4, 3, init=init, gain=1.7)
        return lin, lin.params()

    return build


for _init in ("glorot_uniform", "orthogonal"):
    _layer_case(
        f"linear {_init} gain",
        _lin_gain_build(_init),
        lambda P, m, d: m.forward(d["x"]),
        _with_w(lambda rng: {"x": _u(rng, 4, 6, lo=-2, hi=2)}),
    )
