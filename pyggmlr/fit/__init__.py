"""Training (layer 6, the top of the library's layers): ag_fit and what it runs on.

- ``loop.py``: ag_fit, answering the core's training session's events;
- ``args.py``, ``data.py``, ``util.py``: its arguments, data (arrays, loaders, validation) and
  helpers (the model's parameters, mode and dtype, the optimizer, the compiled steps);
- ``plan.py``: the data plan and the session; ``progress.py``: the progress bar;
- ``callbacks.py``, ``history.py``: callbacks, early stopping, checkpoints, the History;
- ``resume.py``: checkpoints written and read for ag_fit(resume_from=);
- ``predict.py``: ag_predict, ag_accuracy; ``evaluate.py``: ag_evaluate and the metric names.
"""

from .callbacks import Callback, ag_early_stopping, ag_model_checkpoint
from .evaluate import ag_evaluate
from .history import History
from .loop import ag_fit
from .predict import ag_accuracy, ag_predict

__all__ = [
    "ag_fit",
    "ag_predict",
    "ag_accuracy",
    "ag_evaluate",
    "History",
    "Callback",
    "ag_early_stopping",
    "ag_model_checkpoint",
]
