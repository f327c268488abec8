"""ag_fit's History prints alike in Python (repr, table()) and in R (print.ag_history): the core
formats it (native/fit_history.c). Fixed histories, so the times are the same too."""

import math

import pytest

from pyggmlr import r

if not r.available():
    pytest.skip(f"R bridge unavailable: {r.unavailable_reason()}", allow_module_level=True)

pytestmark = pytest.mark.parity  # embeds R (rpy2): not in the sanitized run, which cannot host R

from pyggmlr.fit.history import _KEYS, History  # noqa: E402

_NAN = math.nan
_RUNS = {
    "classification with validation, stopped": dict(
        loss=[0.63103, 0.5909612], loss_unc=[0.04772, 0.0709], accuracy=[0.65, 0.7],
        accuracy_unc=[0.0764, 0.0734], val_loss=[0.84748, 0.83805], val_loss_unc=[0.06323, _NAN],
        val_accuracy=[1 / 3, 0.5], val_accuracy_unc=[0.126, _NAN], time_train=[0.25, 1.5],
        time_val=[0.004, 0.0], stopped_epoch=2, best_epoch=1),
    "regression, no validation": dict(
        loss=[12.5, 3.25, 1.125], loss_unc=[_NAN, 0.5, 0.25], accuracy=[_NAN] * 3,
        accuracy_unc=[_NAN] * 3, val_loss=[_NAN] * 3, val_loss_unc=[_NAN] * 3,
        val_accuracy=[_NAN] * 3, val_accuracy_unc=[_NAN] * 3, time_train=[0.1, 0.2, 0.3],
        time_val=[0.0] * 3, stopped_epoch=None, best_epoch=None),
    "no epochs": dict(stopped_epoch=None, best_epoch=None),
    "ag_fit(metrics =) columns below the table": dict(
        loss=[0.5, 0.25], accuracy=[0.7, 0.8], time_train=[0.1, 0.2], time_val=[0.0] * 2,
        auc=[0.8125, 0.9], val_f1_macro=[_NAN, 1 / 3], stopped_epoch=None, best_epoch=None),
}  # fmt: skip


def _extra(d):
    """ag_fit(metrics =)'s columns of a run"""
    return tuple(k for k in d if k not in _KEYS and k not in ("stopped_epoch", "best_epoch"))


def _history(d):
    n = len(d.get("loss", []))
    full = {k: d.get(k, [_NAN] * n) for k in _KEYS + _extra(d)}
    full["epoch"] = list(range(1, n + 1))
    full["stopped_epoch"], full["best_epoch"] = d["stopped_epoch"], d["best_epoch"]
    return History.from_dict(full)


_R_PRINT = """{
  h <- lapply(list(%s), as.double)
  h$epoch <- as.integer(h$epoch)
  h$stopped_epoch <- stopped; h$best_epoch <- best
  class(h) <- "ag_history"
  paste(capture.output(print(h)), collapse = "\\n")
}"""


@pytest.mark.parametrize("name", list(_RUNS))
def test_history_prints_alike(name):
    h = _history(_RUNS[name])
    keys = _KEYS + _extra(_RUNS[name])
    cols = ", ".join(f"{k} = h_{k}" for k in keys)
    out = r.run(
        "Sys.setlocale('LC_CTYPE', 'C.UTF-8'); " + _R_PRINT % cols,
        stopped=h.stopped_epoch, best=h.best_epoch,
        **{f"h_{k}": [float(v) for v in getattr(h, k)] for k in keys},
    )  # fmt: skip
    text = out[0] if isinstance(out, (list, tuple)) else str(out)
    assert text == repr(h).replace("<History:", "<ag_history:")
    if h.epoch:
        assert repr(h).splitlines()[1:][: len(h) + 1] == h.table().splitlines()[: len(h) + 1]
        if h.stopped_epoch:
            assert repr(h).splitlines()[0] == f"<History: {len(h)} epochs, stopped at epoch 2>"
            assert repr(h).splitlines()[-1] == "best epoch: 1"


_LOGS = [  # an epoch's logs: with validation and accuracy, without, with a NaN loss
    dict(epoch=3, loss=0.123456789, accuracy=0.95, val_loss=0.25, val_accuracy=0.875,
         time_train=0.0125, time_val=0.004),
    dict(epoch=12, loss=1.5, accuracy=float("nan"), val_loss=float("nan"),
         val_accuracy=float("nan"), time_train=2.5, time_val=0.0),
    dict(epoch=1, loss=float("nan"), accuracy=0.5, val_loss=float("inf"),
         val_accuracy=float("nan"), time_train=0.0, time_val=0.0),
]  # fmt: skip


@pytest.mark.parametrize("logs", _LOGS, ids=["val", "plain", "nonfinite"])
def test_same_progress_lines(logs):
    """ag_fit's per-epoch line and the bar's status are the core's (pg_fit_epoch_line,
    pg_fit_status_line) in both languages (Python wrote single spaces, R aligned the epoch)."""
    from pyggmlr._core import lib, text
    from pyggmlr.fit.callbacks import _log_values
    from pyggmlr.fit.progress import epoch_line

    py = (
        epoch_line(logs, 20),
        text(lib.pg_fit_status_line, 0.5, 0.25, _log_values(logs)),
    )
    rl = r.run(
        "l <- as.list(unlist(lg)); l$epoch <- as.integer(l$epoch); "
        "c(pyggmlr:::.fit_epoch_line(l, 20L), .Call(pyggmlr:::R_pg_fit_status_line, c(0.5, 0.25), l))",
        lg={k: float(v) for k, v in logs.items()},
    )
    assert tuple(rl) == py
    assert py[0].startswith(f"epoch {logs['epoch']:4d}/20  loss=")
