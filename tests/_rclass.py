"""The R condition class of each Python exception type (the parity tier compares both), and the
drift tests' checks that a call is refused with exactly one type and text (refused), alike in
both languages (same_refusal)."""

import pytest

import pyggmlr as pg

R_CLASS = {
    pg.ShapeError: "pyggmlr_shape_error",
    pg.DTypeError: "pyggmlr_dtype_error",
    pg.PyggmlrValueError: "pyggmlr_value_error",
    pg.PyggmlrMemoryError: "pyggmlr_memory_error",
    pg.StateError: "pyggmlr_state_error",
    pg.ArgumentError: "pyggmlr_argument_error",
}


_R_RUN = """tryCatch({{ {setup}{call}; list("none", "") }},
         error = function(e) list(class(e)[[1L]], conditionMessage(e)))"""


def refused(call, exc, text):
    """call() raises exactly exc (not a subclass) with text."""
    with pytest.raises(exc) as e:
        call()
    assert type(e.value) is exc and str(e.value) == text


def same_refusal(call, rcall, exc, text, rtext=None, setup="", **inputs):
    """call() raises exactly exc with text; R's rcall (after the R code setup, with inputs bound)
    raises exc's R class with rtext (None: the same text)."""
    from pyggmlr import r

    refused(call, exc, text)
    got = r.run(_R_RUN.format(setup=setup, call=rcall), **inputs)
    assert got == [R_CLASS[exc], rtext or text]
