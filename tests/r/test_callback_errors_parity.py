"""ag_early_stopping's refusals in Python and in R (through rpy2): the same condition class
(Python's exception type, R's pyggmlr_*_error) and the same text, word for word, since both
come from the core (native/fit_stop.c)."""

import numpy as np
import pytest

from pyggmlr import r

if not r.available():
    pytest.skip(f"R bridge unavailable: {r.unavailable_reason()}", allow_module_level=True)

pytestmark = pytest.mark.parity  # embeds R (rpy2): not in the sanitized run, which cannot host R

import pyggmlr as pg  # noqa: E402

_R_CLASS = {pg.PyggmlrValueError: "pyggmlr_value_error", pg.ArgumentError: "pyggmlr_argument_error"}

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
