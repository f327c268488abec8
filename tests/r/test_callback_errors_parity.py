"""ag_early_stopping's refusals in Python and in R (through rpy2): the same condition class
(Python's exception type, R's pyggmlr_*_error) and the same text, word for word, since both
come from the core (native/fit_stop.c)."""

import numpy as np
import pytest

from pyggmlr import r

if not r.available():
    pytest.skip(f"R bridge unavailable: {r.unavailable_reason()}", allow_module_level=True)

pytestmark = pytest.mark.parity  # embeds R (rpy2): not in the sanitized run, which cannot host R

from _rclass import R_CLASS as _R_CLASS  # noqa: E402

import pyggmlr as pg  # noqa: E402

_CATCH = """tryCatch({{ {code}; list("none", "") }},
                     error = function(e) list(class(e)[[1L]], conditionMessage(e)))"""

_X = np.linspace(-1, 1, 40).reshape(4, 10, order="F")
_Y = np.array([0, 1, 2, 0, 1, 2, 0, 1, 2, 0], dtype=float)
_CASES = [  # (Python call, R code, Python type)
    (lambda: pg.ag_early_stopping(monitor="val_los"), 'ag_early_stopping(monitor = "val_los")',
     pg.PyggmlrValueError),
    (lambda: pg.ag_early_stopping(mode="up"), 'ag_early_stopping(mode = "up")',
     pg.PyggmlrValueError),
    (lambda: pg.ag_fit(pg.ag_linear(4, 3), _X, _Y, nepoch=1, silent=True,
                       callbacks=[pg.ag_early_stopping(monitor="val_accuracy")]),
     'ag_fit(ag_linear(4, 3), x, y, nepoch = 1, silent = TRUE, '
     'callbacks = list(ag_early_stopping(monitor = "val_accuracy")))',
     pg.PyggmlrValueError),
    (lambda: pg.ag_fit(pg.ag_linear(4, 3), _X, np.eye(3)[:, _Y.astype(int)], loss="mse",
                       val_split=0.2, nepoch=1, silent=True,
                       callbacks=[pg.ag_early_stopping(monitor="val_accuracy")]),
     'ag_fit(ag_linear(4, 3), x, diag(3)[, y + 1], loss = "mse", val_split = 0.2, nepoch = 1, '
     'silent = TRUE, callbacks = list(ag_early_stopping(monitor = "val_accuracy")))',
     pg.PyggmlrValueError),
]  # fmt: skip


@pytest.mark.parametrize("call, code, exc", _CASES, ids=range(len(_CASES)))
def test_same_class_and_text(call, code, exc):
    with pytest.raises(exc) as e:
        call()
    rclass, rmsg = r.run(_CATCH.format(code=code), x=_X, y=_Y)
    assert (rclass, rmsg) == (_R_CLASS[exc], str(e.value))


_STATES = [  # a checkpoint's callback state (pg_callback_state_parse): Python dict, R list
    ({"best": 0.5, "best_epoch": 2.5, "wait": 0}, "list(best = 0.5, best_epoch = 2.5, wait = 0)"),
    ({"best": 0.5, "best_epoch": -1, "wait": 0}, "list(best = 0.5, best_epoch = -1, wait = 0)"),
    ({"best": "a", "best_epoch": 1, "wait": 0}, 'list(best = "a", best_epoch = 1, wait = 0)'),
    ({"best": float("nan"), "best_epoch": 1}, "list(best = NaN, best_epoch = 1)"),
    ({"best": True, "wait": 1}, "list(best = TRUE, wait = 1)"),
    # a file's JSON array where the state's object goes: R had read [] / [1, 2] as a state
    ([], "jsonlite::parse_json('[]')"),
    ([1, 2], "jsonlite::parse_json('[1, 2]')"),
]  # fmt: skip


@pytest.mark.parametrize("st, code", _STATES, ids=[c[1] for c in _STATES])
@pytest.mark.parametrize("cb", ["ag_early_stopping()", "ag_model_checkpoint(p)"])
def test_same_callback_state_refusals(tmp_path, st, code, cb):
    p = str(tmp_path / "m.st")
    made = pg.ag_early_stopping() if cb.startswith("ag_early") else pg.ag_model_checkpoint(p)
    with pytest.raises(pg.PyggmlrValueError) as e:
        made.check_state(st)
    rclass, rmsg = r.run(_CATCH.format(code=f"{cb}$check_state({code})"), p=p)
    assert (rclass, rmsg) == ("pyggmlr_value_error", str(e.value).replace("True", "TRUE"))


def test_same_callback_state_accepted():
    """A whole float count (3.0: JSON written by another tool) is taken in both."""
    es = pg.ag_early_stopping()
    es.load_state({"best": 0.25, "best_epoch": 3.0, "wait": 1})
    got = r.run(
        "e <- ag_early_stopping(); e$load_state(list(best = 0.25, best_epoch = 3, wait = 1L)); "
        "c(e$best, e$best_epoch, e$wait)"
    )
    assert list(got) == [es.best, es.best_epoch, es.wait] == [0.25, 3, 1]


# a hand-written loop's on_epoch_end(epoch, logs): Python raised int()'s ValueError / TypeError or
# 'list' object has no attribute 'get', R read a bad epoch as -1 and a bad logs as no values
_EPOCH = "{}: epoch must be an integer >= 1, got {}"
_LOGS_PY = "{}: logs must be a dict of the epoch's values, got {}"
_LOGS_R = "{}: logs must be a named list of the epoch's values, got {}"
_HAND = [  # (epoch, logs) in Python, the same in R, Python type, Python text, R text (fn formatted)
    ("x", {"loss": 1.0}, '"x"', "list(loss = 1)", pg.ArgumentError,
     _EPOCH.format("{}", "str 'x'"), _EPOCH.format("{}", '"x"')),
    (1.5, {"loss": 1.0}, "1.5", "list(loss = 1)", pg.PyggmlrValueError,
     _EPOCH.format("{}", "1.5"), None),
    (0, {"loss": 1.0}, "0", "list(loss = 1)", pg.PyggmlrValueError, _EPOCH.format("{}", "0"), None),
    (1, [1.0], "1", "1", pg.ArgumentError, _LOGS_PY.format("{}", "list"), _LOGS_R.format("{}", "1")),
    (1, "loss", "1", '"loss"', pg.ArgumentError, _LOGS_PY.format("{}", "str"),
     _LOGS_R.format("{}", '"loss"')),
]  # fmt: skip
_MAKERS = [  # (Python callback, R constructor, the name the texts give)
    (lambda p: pg.ag_early_stopping(), "ag_early_stopping()", "ag_early_stopping"),
    (lambda p: pg.ag_model_checkpoint(str(p / "c.st")), "ag_model_checkpoint(p)",
     "ag_model_checkpoint"),
]  # fmt: skip


class _Run:  # what ag_fit hands on_train_begin, as a hand-written loop would
    has_val, has_accuracy, nepoch, model = False, -1, 3, None


@pytest.mark.parametrize("make", _MAKERS, ids=[m[2] for m in _MAKERS])
@pytest.mark.parametrize("case", _HAND, ids=range(len(_HAND)))
def test_on_epoch_end_arguments_refused_alike(make, case, tmp_path):
    epoch, logs, repoch, rlogs, exc, text, rtext = case
    pmake, rmake, fn = make
    cb = pmake(tmp_path)
    cb.on_train_begin(_Run())
    with pytest.raises(exc) as e:
        cb.on_epoch_end(epoch, logs)
    assert str(e.value) == text.format(fn)
    assert cb.best == np.inf  # nothing counted (the loss is minimised: no best yet)
    code = (f"cb <- {rmake}; cb$on_train_begin(list(has_val = FALSE, nepoch = 3L)); "
            f"cb$on_epoch_end({repoch}, {rlogs})")  # fmt: skip
    rclass, rmsg = r.run(_CATCH.format(code=code), p=str(tmp_path / "c.st"))
    assert (rclass, rmsg) == (_R_CLASS[exc], (rtext or text).format(fn))
