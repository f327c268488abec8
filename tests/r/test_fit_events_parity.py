"""ag_fit's loop is the core's training session (native/fit_session.c): what each language's
callbacks see is the same, bit for bit, in every path of the loop (eager with the package's
optimizer, whose batches R answers in C; eager with an on_batch_end callback; static replay;
static with per-batch events) and with a callback that stops the run."""

import math

import numpy as np
import pytest

from pyggmlr import r

if not r.available():
    pytest.skip(f"R bridge unavailable: {r.unavailable_reason()}", allow_module_level=True)

pytestmark = pytest.mark.parity  # embeds R (rpy2): not in the sanitized run, which cannot host R

import pyggmlr as pg  # noqa: E402

_TIMES = ("time_train", "time_val")

_R = """
names_seen <- NULL; ep <- c(); bt <- c()
cb <- list(
  on_epoch_end = function(epoch, logs) {
    names_seen <<- names(logs)
    ep <<- c(ep, epoch, unlist(logs[!names(logs) %in% c("epoch", "time_train", "time_val")]))
    if (epoch >= stop_at) FALSE else NULL
  },
  on_batch_end = if (per_batch) function(step, logs) bt <<- c(bt, step, logs$epoch, logs$batch,
                                                             logs$loss))
ggml_set_seed(5)
m <- ag_sequential(ag_linear(4, 8, activation = "relu"), ag_dropout(0.25), ag_linear(8, 3))
h <- ag_fit(m, x, y, nepoch = 4L, batch_size = 6L, val_split = 0.3, seed = 2L, silent = TRUE,
            static = static, callbacks = list(cb))
list(names_seen, ep, if (is.null(bt)) numeric(0) else bt,
     if (is.null(h$stopped_epoch)) 0 else h$stopped_epoch,
     unlist(lapply(m$parameters(), function(t) as.vector(t$data))))
"""


class _Rec(pg.Callback):
    def __init__(self, stop_at, per_batch):
        self.stop_at, self.per_batch, self.names, self.ep, self.bt = stop_at, per_batch, [], [], []

    def on_epoch_end(self, epoch, logs):
        self.names = list(logs)
        self.ep += [epoch] + [v for k, v in logs.items() if k not in _TIMES and k != "epoch"]
        return False if epoch >= self.stop_at else None


class _RecBatch(_Rec):
    def on_batch_end(self, step, logs):
        self.bt += [step, logs["epoch"], logs["batch"], logs["loss"]]


def _same(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return a.shape == b.shape and all(
        x == y or (math.isnan(x) and math.isnan(y)) for x, y in zip(a, b)
    )


@pytest.mark.parametrize("static", [False, True])
@pytest.mark.parametrize("per_batch", [False, True])
@pytest.mark.parametrize("stop_at", [99, 2])
def test_callbacks_see_the_same_run(static, per_batch, stop_at):
    g = pg.random.Generator(3)
    x = g.rnorm(4 * 40).reshape(4, 40, order="F")
    y = np.floor(g.runif(40) * 3)
    cb = _RecBatch(stop_at, True) if per_batch else _Rec(stop_at, False)
    pg.ggml_set_seed(5)
    m = pg.ag_sequential(
        pg.ag_linear(4, 8, activation="relu"), pg.ag_dropout(0.25), pg.ag_linear(8, 3)
    )
    h = pg.ag_fit(
        m,
        x,
        y,
        nepoch=4,
        batch_size=6,
        val_split=0.3,
        seed=2,
        silent=True,
        static=static,
        callbacks=[cb],
    )
    w = [v for t in m.parameters().values() for v in t.numpy().ravel(order="F")]
    names, ep, bt, stopped, rw = r.run(
        _R, x=x, y=y, static=static, per_batch=per_batch, stop_at=stop_at
    )
    assert (
        list(names)
        == cb.names
        == [
            "epoch",
            "lr",
            "time_train",
            "loss",
            "loss_unc",
            "accuracy",
            "accuracy_unc",
            "val_loss",
            "val_loss_unc",
            "val_accuracy",
            "val_accuracy_unc",
            "time_val",
        ]
    )
    assert len(cb.ep) == min(4, stop_at) * 10 and _same(ep, cb.ep)
    # 28 training samples: 4 batches of 6 per epoch
    assert len(cb.bt) == (min(4, stop_at) * 4 * 4 if per_batch else 0) and _same(bt, cb.bt)
    assert stopped == (h.stopped_epoch or 0) == (2 if stop_at == 2 else 0)
    assert _same(rw, w)
