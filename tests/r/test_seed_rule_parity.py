"""The seed rule (R's as.integer(seed), then set.seed) is the core's (pg_seed_parse): ggml_set_seed,
ag_dataloader(seed =) and ag_fit(seed =) take and refuse the same seeds in Python and in R, with
the same class and text (each language shows the value its way: True / TRUE, None / NULL)."""

import numpy as np
import pytest

from pyggmlr import r

if not r.available():
    pytest.skip(f"R bridge unavailable: {r.unavailable_reason()}", allow_module_level=True)

pytestmark = pytest.mark.parity  # embeds R (rpy2): not in the sanitized run, which cannot host R

from _rclass import R_CLASS as _R_CLASS  # noqa: E402

import pyggmlr as pg  # noqa: E402

_X = np.linspace(-1, 1, 8).reshape(2, 4, order="F")
_CALLS = {  # Python call, R call
    "ggml_set_seed": (lambda s: pg.ggml_set_seed(s), "ggml_set_seed(s)"),
    "ag_dataloader": (lambda s: pg.ag_dataloader(_X, seed=s), "ag_dataloader(x, seed = s)"),
    "ag_fit": (
        lambda s: pg.ag_fit(
            pg.ag_linear(2, 2), _X, [0, 1, 0, 1], nepoch=1, batch_size=2, silent=True, seed=s
        ),
        "ag_fit(ag_linear(2, 2), x, c(0, 1, 0, 1), nepoch = 1L, batch_size = 2L, silent = TRUE, "
        "seed = s)",
    ),
}
_SEEDS = [  # Python value, R value
    (True, "TRUE"), (1.5e10, "1.5e10"), (float("inf"), "Inf"), (float("nan"), "NaN"),
    ("abc", '"abc"'), ([1, 2], "c(1, 2)"), (-(2.0**31), "-2^31"),
]  # fmt: skip
_OK = [
    (" 3.9", '" 3.9"', 3),
    ("42", '"42"', 42),
    (-5.7, "-5.7", -5),
    (2**31 - 1, "2^31 - 1", 2**31 - 1),
]


def _idiom(msg):  # R's words for Python's (the core's: inf / nan, R's Inf / NaN)
    return (msg.replace("(or None)", "(or NULL)").replace("Got True.", "Got TRUE.")
            .replace("Got [1, 2].", "Got c(1, 2).").replace("Got nan.", "Got NaN.")
            .replace("got inf", "got Inf"))  # fmt: skip


@pytest.mark.parametrize("fn", list(_CALLS))
@pytest.mark.parametrize("py, rv", _SEEDS, ids=[s[1] for s in _SEEDS])
def test_same_refusal(fn, py, rv):
    call, rcall = _CALLS[fn]
    with pytest.raises((pg.PyggmlrValueError, pg.ArgumentError)) as e:
        call(py)
    cls, msg = r.run(
        f"s <- {rv}; tryCatch({{ {rcall}; list('none', '') }}, "
        "error = function(e) list(class(e)[[1L]], conditionMessage(e)))",
        x=_X,
    )
    assert (cls, msg) == (_R_CLASS[type(e.value)], _idiom(str(e.value)))
    assert msg.startswith(fn + ": ")


@pytest.mark.parametrize("py, rv, want", _OK, ids=[s[1] for s in _OK])
def test_same_seed(py, rv, want):
    assert pg.ggml_set_seed(py) == want == r.run(f"ggml_set_seed({rv})")
