"""ag_early_stopping's refusals in Python and in R (through rpy2): the same condition class
(Python's exception type, R's pyggmlr_*_error) and the same text, word for word, since both
come from the core (native/fit_stop.c)."""

from types import SimpleNamespace

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
    has_val, has_accuracy, nepoch = False, -1, 3

    def __init__(self):
        self.model = pg.ag_linear(2, 1)

    def save_checkpoint(self, path, epoch):
        pass


_RUN_R = "list(has_val = FALSE, nepoch = 3L, model = ag_linear(2, 1), save_checkpoint = function(p, e) 0)"


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
    code = (f"cb <- {rmake}; cb$on_train_begin({_RUN_R}); "
            f"cb$on_epoch_end({repoch}, {rlogs})")  # fmt: skip
    rclass, rmsg = r.run(_CATCH.format(code=code), p=str(tmp_path / "c.st"))
    assert (rclass, rmsg) == (_R_CLASS[exc], (rtext or text).format(fn))


_NO_RUN = [("2.5", "2.5", "float"), ("None", "NULL", "NULL"), ("{'nepoch': 3}", "c(nepoch = 3)", "atomic"),
           ("pg.ag_linear(4, 3)", "ag_linear(4, 3)", "a layer")]  # fmt: skip
_HOOKS = [  # (maker index, hook, the field named, the fields listed in Python, in R)
    (0, "on_train_begin", "model", "model", "model"),
    (0, "on_train_end", "model", "model, history", "model, logs"),
    (1, "on_train_begin", "nepoch", "nepoch, save_checkpoint", "nepoch, save_checkpoint"),
]  # fmt: skip


@pytest.mark.parametrize("hook", _HOOKS, ids=[f"{h[0]}-{h[1]}" for h in _HOOKS])
@pytest.mark.parametrize("run", _NO_RUN, ids=[n[2] for n in _NO_RUN])
def test_run_object_refused_alike(hook, run, tmp_path):
    """A hook given something that is not a run object (a hand-written loop's mistake) is
    refused by name before anything is counted, in both languages (was Python's AttributeError,
    R's `$` error, or silently accepted)."""
    k, name, field, py_fields, r_fields = hook
    pmake, rmake, fn = _MAKERS[k]
    cb = pmake(tmp_path)
    cb.on_train_begin(_Run())
    cb.on_epoch_end(1, {"loss": 0.5})
    before = cb.state()[0]
    text = f"{fn}: {name}(fit): fit has no {field} (ag_fit's run object has {{}})"
    with pytest.raises(pg.ArgumentError) as e:
        getattr(cb, name)(eval(run[0]))
    assert str(e.value) == text.format(py_fields)
    assert cb.state()[0] == before and cb._fit is not None  # the run begun is untouched
    rclass, rmsg = r.run(_CATCH.format(code=f"cb <- {rmake}; cb${name}({run[1]})"),
                         p=str(tmp_path / "c.st"))  # fmt: skip
    assert (rclass, rmsg) == ("pyggmlr_argument_error", text.format(r_fields))


def test_run_object_nepoch_and_hooks_alike(tmp_path):
    """ag_model_checkpoint reads the run's nepoch under the one integer rule in both languages;
    both callbacks have every hook (the built-ins' unused ones do nothing), so a hand-written
    loop may call each on each callback."""
    run = _Run()
    run.nepoch = 2.5
    cb = pg.ag_model_checkpoint(str(tmp_path / "c.st"))
    with pytest.raises(pg.PyggmlrValueError) as e:  # a number, not a whole one: a value error
        cb.on_train_begin(run)
    code = _CATCH.format(code=f"cb <- ag_model_checkpoint(p); r <- {_RUN_R}; r$nepoch <- 2.5; "
                              "cb$on_train_begin(r)")  # fmt: skip
    assert list(r.run(code, p=str(tmp_path / "c.st"))) == ["pyggmlr_value_error", str(e.value)]
    assert "nepoch" in str(e.value)
    for py, rmake, _ in _MAKERS:
        cb = py(tmp_path)
        hooks = [
            h
            for h in ("on_train_begin", "on_batch_end", "on_epoch_end", "on_train_end")
            if callable(getattr(cb, h, None))
        ]
        rhooks = r.run(f"cb <- {rmake}; Filter(function(h) is.function(cb[[h]]), "
                       "c('on_train_begin', 'on_batch_end', 'on_epoch_end', 'on_train_end'))",
                       p=str(tmp_path / "c.st"))  # fmt: skip
        assert (
            hooks
            == list(rhooks)
            == ["on_train_begin", "on_batch_end", "on_epoch_end", "on_train_end"]
        )
        assert cb.on_batch_end(1, {"loss": 1.0}) is None
        code = f"cb <- {rmake}; is.null(cb$on_batch_end(1L, list(loss = 1)))"
        assert r.run(code, p=str(tmp_path / "c.st")) is True


def test_hooks_that_are_not_functions_alike():
    """A callback's hook is a function (R's is.function): an on_epoch_end that is not one is
    refused before training in both languages (Python had accepted it and failed after the
    first epoch), and other hooks that are not functions are absent hooks in both (Python had
    called them: TypeError)."""
    pg.ggml_set_seed(3)
    m = pg.ag_linear(4, 3)
    w0 = [p.numpy().copy() for p in m.parameters().values()]
    with pytest.raises(pg.ArgumentError) as e:
        pg.ag_fit(
            m,
            _X,
            _Y,
            nepoch=2,
            batch_size=5,
            silent=True,
            callbacks=[SimpleNamespace(on_epoch_end=5)],
        )
    assert (
        str(e.value)
        == "ag_fit: callbacks must be Callback objects or functions, got SimpleNamespace"
    )
    assert all(
        np.array_equal(p.numpy(), q) for p, q in zip(m.parameters().values(), w0)
    )  # untrained
    code = (
        "ggml_set_seed(3); m <- ag_linear(4, 3); "
        "ag_fit(m, x, y, nepoch = 2, batch_size = 5, silent = TRUE, "
        "callbacks = list(list(on_epoch_end = 5)))"
    )
    rclass, _ = r.run(_CATCH.format(code=code), x=_X, y=_Y)
    assert rclass == "pyggmlr_argument_error"
    seen = []
    cb = SimpleNamespace(on_epoch_end=lambda ep, logs: seen.append(ep), on_train_begin=5,
                         on_batch_end="x", on_train_end=None)  # fmt: skip
    pg.ggml_set_seed(3)
    h = pg.ag_fit(
        pg.ag_linear(4, 3), _X, _Y, nepoch=2, batch_size=5, silent=True, seed=1, callbacks=[cb]
    )
    assert seen == [1, 2]
    code = ("seen <- integer(0); cb <- list(on_epoch_end = function(ep, logs) "
            "seen <<- c(seen, ep), on_train_begin = 5, on_batch_end = \"x\", on_train_end = NA); "
            "ggml_set_seed(3); h <- ag_fit(ag_linear(4, 3), x, y, nepoch = 2, batch_size = 5, "
            "silent = TRUE, seed = 1L, callbacks = list(cb)); list(seen, h$loss)")  # fmt: skip
    rseen, rloss = r.run(code, x=_X, y=_Y)
    assert list(np.atleast_1d(rseen)) == [1, 2] and list(np.atleast_1d(rloss)) == h.loss
