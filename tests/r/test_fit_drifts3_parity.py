"""ag_fit's and its callbacks' drifts between the Python and R front ends (found by reading the
two side by side, issue 29), now alike: the order of ag_fit's first checks (Python coded labels
before the flags and validation_data's x), the callbacks argument's rule (a string was a list of
characters in Python; an on_epoch_end that is no function), ag_model_checkpoint's argument order,
a hand-written run object's None has_val / has_accuracy (Python's int(None)) and an epoch's logs
that hold None or a string (Python's float()), a user callback's plain state() through a
checkpoint (R saved nothing, Python unpacked it), a resume with other metrics (R dropped the
columns, Python kept them), a forward that is no function (Python called it) and an emptied
ag_sequential (built-in in Python). Each case: the same class and text, or the same value."""

from types import SimpleNamespace

import numpy as np
import pytest

from pyggmlr import r

if not r.available():
    pytest.skip(f"R bridge unavailable: {r.unavailable_reason()}", allow_module_level=True)

pytestmark = pytest.mark.parity  # embeds R (rpy2): not in the sanitized run, which cannot host R

from _rclass import same_refusal  # noqa: E402

import pyggmlr as pg  # noqa: E402
from pyggmlr.fit.util import _builtin_model  # noqa: E402

_X = np.array([[1.0, 2, 3, 4], [4, 3, 2, 1]])
_Y = np.array([0.0, 1, 0, 1])
_KW = dict(nepoch=1, batch_size=2, silent=True)
_RKW = "nepoch = 1L, batch_size = 2L, silent = TRUE"


def _fit(**kw):
    return lambda: pg.ag_fit(pg.ag_linear(2, 2), _X, **{"y": _Y, **_KW, **kw})


# D1: the flags, then validation_data's x, before labels y are coded (R's order)
def test_flags_before_labels():
    same_refusal(_fit(y=np.array([["a", "b"], ["c", "d"]]), static="x"),
                 f'ag_fit(ag_linear(2, 2), x, matrix(c("a", "b", "c", "d"), 2), static = "x", {_RKW})',
                 pg.ArgumentError, "ag_fit: static must be True, False or None",
                 "ag_fit: static must be TRUE, FALSE or NULL", x=_X)  # fmt: skip


def test_validation_x_before_its_labels():
    same_refusal(_fit(y=np.array(["a", "b", "a", "b"]), validation_data=(["p", "q"], ["zz"])),
                 f'ag_fit(ag_linear(2, 2), x, c("a", "b", "a", "b"), '
                 f'validation_data = list(c("p", "q"), "zz"), {_RKW})',
                 pg.ArgumentError, "ag_fit: validation_data must be numeric, got dtype <U1",
                 "ag_fit: validation_data must be numeric, got character", x=_X)  # fmt: skip


# D2: the callbacks argument: the core's rule (pg_fit_callback_plan)
class _NotAHook:
    on_epoch_end = 5  # not callable: no hook, as R's is.function


def test_callbacks_string_is_no_list():
    same_refusal(_fit(callbacks="abc"), f'ag_fit(ag_linear(2, 2), x, y, callbacks = "abc", {_RKW})',
                 pg.ArgumentError, "ag_fit: callbacks must be a list of callbacks or functions, "
                 "got str", "ag_fit: callbacks must be a list of callbacks or functions, got "
                 "character", x=_X, y=_Y)  # fmt: skip


def test_callbacks_on_epoch_end_not_a_function():
    same_refusal(_fit(callbacks=_NotAHook()),
                 "cb <- new.env(); cb$on_epoch_end <- 5; "
                 f"ag_fit(ag_linear(2, 2), x, y, callbacks = cb, {_RKW})",
                 pg.ArgumentError, "ag_fit: callbacks must be a list of callbacks or functions, "
                 "got _NotAHook", "ag_fit: callbacks must be a list of callbacks or functions, "
                 "got environment", x=_X, y=_Y)  # fmt: skip


# D3: ag_model_checkpoint's arguments in the signature's order (path first)
@pytest.mark.parametrize("bad", [("mode", '"bogus"', "'bogus'"), ("every", '"a"', "'a'")])
def test_checkpoint_path_first(bad):
    name, rv, pv = bad
    text = ("ag_model_checkpoint: directory 'no_such_dir' of path 'no_such_dir/ck.st' does not "
            "exist")  # fmt: skip
    same_refusal(lambda: pg.ag_model_checkpoint("no_such_dir/ck.st", **{name: eval(pv)}),
                 f'ag_model_checkpoint("no_such_dir/ck.st", {name} = {rv})',
                 pg.PyggmlrValueError, text)  # fmt: skip


# D4: a run object's has_val / has_accuracy: None unknown, a string refused (the core's rule)
_MAKE = [
    ("ag_early_stopping", lambda p: pg.ag_early_stopping(), "ag_early_stopping()"),
    (
        "ag_model_checkpoint",
        lambda p: pg.ag_model_checkpoint(p, save_best_only=True),
        "ag_model_checkpoint(p, save_best_only = TRUE)",
    ),
]  # best_only: best is counted


def _run(**kw):
    return SimpleNamespace(model=pg.ag_linear(2, 2), nepoch=2,
                           save_checkpoint=lambda p, e: None, **kw)  # fmt: skip


_RRUN = "list(model = ag_linear(2, 2), nepoch = 2L, save_checkpoint = function(p, e) 0, {})"


@pytest.mark.parametrize("make", _MAKE, ids=[m[0] for m in _MAKE])
def test_run_none_is_unknown(make, tmp_path):
    fn, py, rmake = make
    p = str(tmp_path / "c.st")
    cb = py(p)
    cb.on_train_begin(_run(has_val=None, has_accuracy=None))
    assert cb.on_epoch_end(1, {"loss": 0.5, "val_loss": 0.25}) is None
    best = r.run(f"cb <- {rmake}; cb$on_train_begin({_RRUN.format('has_val = NULL, has_accuracy = NULL')}); "
                 "cb$on_epoch_end(1L, list(loss = 0.5, val_loss = 0.25)); cb$best", p=p)  # fmt: skip
    assert cb.best == best == 0.25  # validation counted as measured: val_loss watched


@pytest.mark.parametrize("make", _MAKE, ids=[m[0] for m in _MAKE])
@pytest.mark.parametrize("field", ["has_val", "has_accuracy"])
def test_run_field_of_wrong_kind(make, field, tmp_path):
    fn, py, rmake = make
    p = str(tmp_path / "c.st")
    rule = {"has_val": ("True, False or None", "TRUE, FALSE or NULL"),
            "has_accuracy": ("a whole number (the monitor mask, -1: unknown) or None",
                             "a whole number (the monitor mask, -1: unknown) or NULL")}[field]  # fmt: skip
    head = f"{fn}: on_train_begin(fit): fit's {field} must be "
    rrun = _RRUN.format(field + ' = "a"')
    same_refusal(lambda: py(p).on_train_begin(_run(**{field: "a"})),
                 f"{rmake}$on_train_begin({rrun})", pg.ArgumentError,
                 head + rule[0] + ", got str 'a'", head + rule[1] + ', got "a"', p=p)  # fmt: skip


# D5: an epoch's logs: None not measured, a string or a list refused naming the key
@pytest.mark.parametrize("make", _MAKE, ids=[m[0] for m in _MAKE])
def test_logs_none_and_non_numbers(make, tmp_path):
    fn, py, rmake = make
    p = str(tmp_path / "c.st")
    cb = py(p)
    cb.on_train_begin(_run(has_val=False))
    assert cb.on_epoch_end(1, {"loss": 0.5, "val_loss": None}) is None
    code = (f"cb <- {rmake}; cb$on_train_begin({_RRUN.format('has_val = FALSE')}); "
            "cb$on_epoch_end(1L, list(loss = 0.5, val_loss = NULL)); cb$best")  # fmt: skip
    assert cb.best == r.run(code, p=p) == 0.5
    head = f'{fn}: logs\' "loss" must be a number '
    for pv, rv, shown, rshown in (("x", '"x"', "str 'x'", '"x"'), ([1], "list(1)", "list [1]",
                                                                  "list(1)")):  # fmt: skip
        cb = py(p)
        cb.on_train_begin(_run(has_val=False))
        same_refusal(lambda cb=cb, pv=pv: cb.on_epoch_end(1, {"loss": pv}),
                     f"cb$on_epoch_end(1L, list(loss = {rv}))", pg.ArgumentError,
                     head + f"(None: not measured), got {shown}",
                     head + f"(NULL: not measured), got {rshown}",
                     setup=f"cb <- {rmake}; cb$on_train_begin({_RRUN.format('has_val = FALSE')}); ",
                     p=p)  # fmt: skip


# D6: a user callback's state() as a plain dict / named list, through a checkpoint
class _Counter(pg.Callback):
    def __init__(self):
        self.seen, self.loaded = 0, None

    def on_epoch_end(self, epoch, logs):
        self.seen += 1

    def state(self):
        return {"seen": self.seen, "tag": "n"}

    def load_state(self, st):  # one argument: no tensors saved
        self.loaded, self.seen = st, st["seen"]


_R_COUNTER = """counter <- function() {
  e <- new.env(); e$seen <- 0; e$loaded <- NULL
  e$on_epoch_end <- function(epoch, logs) e$seen <- e$seen + 1
  e$state <- function() list(seen = e$seen, tag = "n")
  e$load_state <- function(st) { e$loaded <- st; e$seen <- st$seen }
  e
}
"""


def test_user_state_saved_and_restored(tmp_path):
    p = str(tmp_path / "ck.st")
    kw = dict(loss="mse", batch_size=2, silent=True, seed=1)
    y = np.array([[0.0, 1, 0, 1], [1, 0, 1, 0]])
    pg.ag_fit(pg.ag_linear(2, 2), _X, y, nepoch=2, callbacks=[_Counter(), pg.ag_model_checkpoint(p)], **kw)  # fmt: skip
    c = _Counter()
    pg.ag_fit(pg.ag_linear(2, 2), _X, y, nepoch=3, callbacks=[c, pg.ag_model_checkpoint(p)],
              resume_from=p, **kw)  # fmt: skip
    assert c.loaded == {"seen": 2, "tag": "n"} and c.seen == 3
    rp = str(tmp_path / "rck.st")
    got = r.run(_R_COUNTER + """
      ag_fit(ag_linear(2, 2), x, y, nepoch = 2L, callbacks = list(counter(), ag_model_checkpoint(p)),
             loss = "mse", batch_size = 2L, silent = TRUE, seed = 1L)
      c <- counter()
      ag_fit(ag_linear(2, 2), x, y, nepoch = 3L, callbacks = list(c, ag_model_checkpoint(p)),
             resume_from = p, loss = "mse", batch_size = 2L, silent = TRUE, seed = 1L)
      list(c$loaded$seen, c$loaded$tag, c$seen)""", x=_X, y=y, p=rp)  # fmt: skip
    assert [float(v) if not isinstance(v, str) else v for v in got] == [2.0, "n", 3.0]


# D7: a resume with other metrics than the checkpoint's is refused (the core's text)
def test_resume_with_other_metrics_refused(tmp_path):
    p = str(tmp_path / "ck.st")
    y = np.array([[0.0, 1, 0, 1], [1, 0, 1, 0]])
    kw = dict(loss="mse", batch_size=2, silent=True, seed=1)
    pg.ag_fit(pg.ag_linear(2, 2), _X, y, nepoch=1, metrics=["mae"],
              callbacks=[pg.ag_model_checkpoint(p)], **kw)  # fmt: skip
    same_refusal(lambda: pg.ag_fit(pg.ag_linear(2, 2), _X, y, nepoch=2, resume_from=p, **kw),
                 'ag_fit(ag_linear(2, 2), x, y, nepoch = 2L, resume_from = p, loss = "mse", '
                 "batch_size = 2L, silent = TRUE, seed = 1L)", pg.PyggmlrValueError,
                 'ag_fit: cannot resume: metrics were ["mae"] in the checkpoint, now [] (resume '
                 "with the checkpoint's metrics)", x=_X, y=y, p=p)  # fmt: skip
    h = pg.ag_fit(pg.ag_linear(2, 2), _X, y, nepoch=2, resume_from=p, metrics=["mae"], **kw)
    rmae = r.run('h <- ag_fit(ag_linear(2, 2), x, y, nepoch = 2L, resume_from = p, metrics = "mae", '
                 'loss = "mse", batch_size = 2L, silent = TRUE, seed = 1L); h$mae', x=_X, y=y, p=p)  # fmt: skip
    assert np.array_equal(np.asarray(h.mae), np.asarray(rmae))


# D9: a forward that is no function is no forward (R's is.function rule)
class _NoneForward:
    def __init__(self):
        self.forward, self._l = None, pg.ag_linear(2, 2)

    def parameters(self):
        return self._l.parameters()


def test_forward_none_refused():
    same_refusal(lambda: pg.ag_fit(_NoneForward(), _X, _Y, static=False, **_KW),
                 "m <- new.env(); m$forward <- NULL; l <- ag_linear(2, 2); "
                 f"m$parameters <- function() l$params(); ag_fit(m, x, y, static = FALSE, {_RKW})",
                 pg.ArgumentError, "ag_fit: model must have forward(x), got _NoneForward",
                 "ag_fit: model must have forward(x), got environment", x=_X, y=_Y)  # fmt: skip


# D17: an ag_sequential whose layers were emptied is not built-in (static=None probes it)
def test_emptied_sequential_not_builtin():
    s = pg.ag_sequential(pg.ag_linear(2, 2), pg.ag_sequential(pg.ag_linear(2, 2)))
    s.layers[1].layers = []
    got = r.run("s <- ag_sequential(ag_linear(2, 2), ag_sequential(ag_linear(2, 2))); "
                "s$layers[[2]]$layers <- list(); pyggmlr:::.builtin_model(s)")  # fmt: skip
    assert _builtin_model(s) is False and got is False
