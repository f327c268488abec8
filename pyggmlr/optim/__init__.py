"""Optimizers (layer 2, above nn/): SGD and Adam over the core's optimizer, their state in
ggmlR's and this project's file layout, the learning-rate schedules and gradient clipping.

- ``optimizer.py``: Optimizer, optimizer_sgd, optimizer_adam, clip_grad_norm;
- ``state.py``: state() / load_state() and the model-file layout (the core checks them);
- ``sched.py``: the lr schedulers, clip_grad_value, check_grad_anomaly.
"""

from .optimizer import (
    Optimizer,
    OptimizerHyperWarning,
    clip_grad_norm,
    optimizer_adam,
    optimizer_sgd,
)

__all__ = [
    "optimizer_sgd",
    "optimizer_adam",
    "Optimizer",
    "clip_grad_norm",
    "OptimizerHyperWarning",
]
