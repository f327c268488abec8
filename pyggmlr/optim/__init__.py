"""Optimizers (layer 2, above nn/): SGD and Adam over the core's optimizer, their state in
ggmlR's and this project's file layout, the learning-rate schedules and gradient clipping.

- ``optimizer.py``: Optimizer, optimizer_sgd, optimizer_adam, clip_grad_norm;
- ``state.py``: state() / load_state() and the model-file layout (the core checks them);
- ``sched.py``: the lr schedulers, clip_grad_value, check_grad_anomaly.
"""

from . import optimizer as _optimizer
from .optimizer import (  # noqa: F401  (the names of optimizer.py's __all__)
    Optimizer,
    OptimizerHyperWarning,
    clip_grad_norm,
    optimizer_adam,
    optimizer_sgd,
)

__all__ = list(_optimizer.__all__)  # the schedulers are pyggmlr.optim.sched's
