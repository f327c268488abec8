"""ag_save_model / ag_load_model's argument rules in Python and in R (through rpy2): the rules and
texts are the C core's (native/modelfile_args.c), so each refusal has the same condition class
and the same text word for word in both languages."""

import os

import numpy as np
import pytest

from pyggmlr import r

if not r.available():
    pytest.skip(f"R bridge unavailable: {r.unavailable_reason()}", allow_module_level=True)

pytestmark = pytest.mark.parity  # embeds R (rpy2): not in the sanitized run, which cannot host R

from _parts import Parts  # noqa: E402
from _rclass import R_CLASS as _R_CLASS  # noqa: E402

import pyggmlr as pg  # noqa: E402


def _build():
    return pg.ag_sequential(pg.ag_linear(3, 4, "relu"), pg.ag_linear(4, 2))


def _build32():  # a builder that fixes its own dtype
    prev = pg.ag_dtype("f32")
    try:
        return _build()
    finally:
        pg.ag_dtype(prev)


_R_PRE = """build <- function() ag_sequential(ag_linear(3, 4, "relu"), ag_linear(4, 2))
build32 <- function() {{ prev <- ag_dtype("f32"); on.exit(ag_dtype(prev)); build() }}
m <- build()
tryCatch({{ {call}; list("none", "") }},
         error = function(e) list(class(e)[[1L]], conditionMessage(e)))"""

_CASES = [  # (id, Python call on (path, model), R call, Python type, text)
    ("save model_fn", lambda f, m: pg.ag_save_model(m, f, model_fn=3),
     "ag_save_model(m, f, model_fn = 3)", pg.ArgumentError,
     "ag_save_model(): `model_fn` must be a function or NULL."),
    ("load model_fn", lambda f, m: pg.ag_load_model(f, model_fn=3),
     "ag_load_model(f, model_fn = 3)", pg.ArgumentError,
     "ag_load_model(): `model_fn` must be a function or NULL."),
    ("not both", lambda f, m: pg.ag_load_model(f, model=m, model_fn=_build),
     "ag_load_model(f, model = m, model_fn = build)", pg.ArgumentError,
     "ag_load_model(): give `model` or `model_fn`, not both"),
    ("dtype f8", lambda f, m: pg.ag_load_model(f, dtype="f8"),
     'ag_load_model(f, dtype = "f8")', pg.PyggmlrValueError,
     "ag_load_model(): 'dtype' should be one of \"f32\", \"f64\", \"f16\", \"bf16\", got \"f8\""),
    ("dtype empty", lambda f, m: pg.ag_load_model(f, dtype=""),
     'ag_load_model(f, dtype = "")', pg.PyggmlrValueError,
     "ag_load_model(): 'dtype' should be one of \"f32\", \"f64\", \"f16\", \"bf16\", got \"\""),
    ("dtype 3", lambda f, m: pg.ag_load_model(f, dtype=3),
     "ag_load_model(f, dtype = 3)", pg.ArgumentError,
     "ag_load_model(): 'dtype' should be one of \"f32\", \"f64\", \"f16\", \"bf16\", got 3"),
    ("dtype f16", lambda f, m: pg.ag_load_model(f, dtype="f16"),
     'ag_load_model(f, dtype = "f16")', pg.PyggmlrValueError,
     'ag_load_model(): dtype "f16" is not supported by the CPU engine; use "f32" or "f64"'),
    ("dtype bf", lambda f, m: pg.ag_load_model(f, dtype="bf"),
     'ag_load_model(f, dtype = "bf")', pg.PyggmlrValueError,
     'ag_load_model(): dtype "bf16" is not supported by the CPU engine; use "f32" or "f64"'),
    ("built dtype", lambda f, m: pg.ag_load_model(f, _build32, dtype="f64"),
     'ag_load_model(f, build32, dtype = "f64")', pg.PyggmlrValueError,
     "ag_load_model(): dtype = \"f64\" was asked for, but the model's parameter 'layer1_W' is "
     "f32 (does model_fn fix its own dtype?)"),
]  # fmt: skip


def _saved(tmp_path):
    """a model file of _build()'s model, its path as a string"""
    f = str(tmp_path / "m.safetensors")
    pg.ag_save_model(_build(), f)
    return f


def _raised(exc, call, *args):
    with pytest.raises(exc) as e:
        call(*args)
    return e


@pytest.mark.parametrize("call, rcall, exc, text", [c[1:] for c in _CASES],
                         ids=[c[0] for c in _CASES])  # fmt: skip
def test_same_refusal(tmp_path, call, rcall, exc, text):
    f = _saved(tmp_path)
    e = _raised(exc, call, f, _build())
    assert str(e.value) == text
    assert r.run(_R_PRE.format(call=rcall), f=f) == [_R_CLASS[exc], text]


def test_match_arg_prefix_alike(tmp_path):
    """match.arg's prefix in both: "f6" builds the model in f64"""
    f = _saved(tmp_path)
    assert pg.ag_load_model(f, dtype="f6").parameters()["layer1_W"].dtype == "f64"
    code = 'ag_state_dict(ag_load_model(f, dtype = "f6"))$param_dtypes[["layer1_W"]]'
    assert r.run(code, f=f) in ("f64", ["f64"])


# ---------------------------------------------------------------------------------------------
# drifts fixed (CHANGELOG "ag_save_model / ag_load_model agree ..."): each call refused with the
# same class and text in both languages, and nothing written


_R_PARTS = """parts <- function(p, b = list(), cfg = NULL, raises = NULL) {
  e <- new.env()
  e$parameters <- function() p
  e$buffers <- function() b
  e$forward <- function(x) x
  e$to_config <- function() if (is.null(raises)) cfg else if (is.function(raises)) raises()
                            else stop(raises)
  e
}
t1 <- ag_param(matrix(1, 1, 1))
"""

_PART_CASES = [  # (id, Python model or call on path, R call, Python type, text)
    ("builder as model=", lambda f: pg.ag_load_model(f, model=_build),
     "ag_load_model(f, model = build)", pg.ArgumentError,
     "ag_load_model(): `model` must be an ag_sequential or ag_* layer (an object with "
     "parameters()), got function"),
    ("model before model_fn", lambda f: pg.ag_save_model([], f + ".x", model_fn=5),
     'ag_save_model(list(), paste0(f, ".x"), model_fn = 5)', pg.ArgumentError,
     "ag_save_model(): `model` must be an ag_sequential or ag_* layer (an object with "
     "parameters()), got list"),
    ("empty parameter name",
     lambda f: pg.ag_save_model(Parts({"": pg.ag_param(np.ones((1, 1)))}), f + ".x"),
     'ag_save_model(parts(structure(list(t1), names = "")), paste0(f, ".x"))',
     pg.PyggmlrValueError, "ag_save_model(): every parameter needs a name"),
    ("unnamed parameters",
     lambda f: pg.ag_save_model(Parts([pg.ag_param(np.ones((1, 1)))]), f + ".x"),
     'ag_save_model(parts(list(t1)), paste0(f, ".x"))',
     pg.PyggmlrValueError, "ag_save_model(): every parameter needs a name"),
    ("empty buffer name",
     lambda f: pg.ag_save_model(Parts({"a": pg.ag_param(np.ones((1, 1)))},
                                       {"": pg.ag_tensor(np.ones((1, 1)))}), f + ".x"),
     'ag_save_model(parts(list(a = t1), structure(list(ag_tensor(matrix(1))), names = "")), '
     'paste0(f, ".x"))', pg.PyggmlrValueError, "ag_save_model(): every buffer needs a name"),
    ("not a tensor", lambda f: pg.ag_save_model(Parts({"a": 3}), f + ".x"),
     'ag_save_model(parts(list(a = "x")), paste0(f, ".x"))', pg.ArgumentError,
     None),  # the class's name is each language's: the text up to it
    ("both names before the config",
     lambda f: pg.ag_save_model(Parts({"a": pg.ag_param(np.ones((1, 1)))},
                                       {"a": pg.ag_tensor(np.ones((1, 1)))},
                                       cfg={"type": "no such layer"}), f + ".x"),
     'ag_save_model(parts(list(a = t1), list(a = ag_tensor(matrix(1))), '
     'cfg = list(type = "no such layer")), paste0(f, ".x"))', pg.PyggmlrValueError,
     "ag_save_model(): names used by both a parameter and a buffer: a"),
]  # fmt: skip


@pytest.mark.parametrize("call, rcall, exc, text", [c[1:] for c in _PART_CASES],
                         ids=[c[0] for c in _PART_CASES])  # fmt: skip
def test_same_refusal_of_model_parts(tmp_path, call, rcall, exc, text):
    f = _saved(tmp_path)
    e = _raised(exc, call, f)
    got = r.run(_R_PARTS + _R_PRE.format(call=rcall), f=f)
    if text is None:  # "model entry 'a' is a <class>, not an ag_tensor"
        assert str(e.value) == "ag_save_model(): model entry 'a' is a int, not an ag_tensor"
        assert got == [
            _R_CLASS[exc],
            "ag_save_model(): model entry 'a' is a character, not an ag_tensor",
        ]
    else:
        assert str(e.value) == text
        assert got == [_R_CLASS[exc], text]
    assert not (tmp_path / "m.safetensors.x").exists()


def test_to_config_fault_propagates_alike(tmp_path):
    """to_config() raising anything but a pyggmlr value error is a fault: it propagates and
    nothing is written, in both languages; a value error saves the weights with the core's note."""
    f = str(tmp_path / "m.safetensors")
    with pytest.raises(RuntimeError, match="^boom$"):
        pg.ag_save_model(Parts({"a": pg.ag_param(np.ones((1, 1)))}, raises=RuntimeError("boom")), f)
    call = 'ag_save_model(parts(list(a = t1), raises = "boom"), f)'
    assert r.run(_R_PARTS + _R_PRE.format(call=call), f=f) == ["simpleError", "boom"]
    assert not (tmp_path / "m.safetensors").exists()
    with pytest.warns(
        UserWarning,
        match=r"^ag_save_model\(\): saving the weights without the "
        r"architecture \(no config\); load with ag_load_model\(path, model=\.\.\.\)$",
    ):
        pg.ag_save_model(
            Parts({"a": pg.ag_param(np.ones((1, 1)))}, raises=pg.PyggmlrValueError("no config")), f
        )
    code = (
        _R_PARTS
        + """w <- NULL
withCallingHandlers(
  ag_save_model(parts(list(a = t1), raises = function() pyggmlr:::.pg_stop("value", "no config")), f),
  warning = function(c) { w <<- conditionMessage(c); invokeRestart("muffleWarning") })
w"""
    )
    assert r.run(code, f=f + "2") == (
        "ag_save_model(): saving the weights without the architecture (no config); load with "
        "ag_load_model(path, model = ...)"
    )


_MODEL_TEXT = (
    "ag_load_model(): `model` must be an ag_sequential or ag_* layer (an object with "
    "parameters()), got "
)
_BEFORE_FILE = [  # (id, Python call on a missing path, R call, Python type, Python text, R's)
    ("model", lambda f: pg.ag_load_model(f, model=3), "ag_load_model(f, model = 3)",
     pg.ArgumentError, _MODEL_TEXT + "int", _MODEL_TEXT + "numeric"),
    ("builder as model=", lambda f: pg.ag_load_model(f, model=_build),
     "ag_load_model(f, model = build)", pg.ArgumentError, _MODEL_TEXT + "function", None),
    ("model before model_fn", lambda f: pg.ag_load_model(f, model=_build, model_fn=3),
     "ag_load_model(f, model = build, model_fn = 3)", pg.ArgumentError,
     _MODEL_TEXT + "function", None),
    ("model_fn before dtype", lambda f: pg.ag_load_model(f, model_fn=3, dtype="f8"),
     'ag_load_model(f, model_fn = 3, dtype = "f8")', pg.ArgumentError,
     "ag_load_model(): `model_fn` must be a function or NULL.", None),
    ("dtype before optimizer", lambda f: pg.ag_load_model(f, dtype="f8", optimizer=3),
     'ag_load_model(f, dtype = "f8", optimizer = 3)', pg.PyggmlrValueError,
     "ag_load_model(): 'dtype' should be one of \"f32\", \"f64\", \"f16\", \"bf16\", got \"f8\"",
     None),
    ("optimizer", lambda f: pg.ag_load_model(f, optimizer=3), "ag_load_model(f, optimizer = 3)",
     pg.ArgumentError, "ag_load_model(): optimizer must be an optimizer object, got int",
     "ag_load_model(): optimizer must be an optimizer object, got numeric"),
]  # fmt: skip


@pytest.mark.parametrize("call, rcall, exc, text, rtext", [c[1:] for c in _BEFORE_FILE],
                         ids=[c[0] for c in _BEFORE_FILE])  # fmt: skip
def test_load_arguments_before_the_file(tmp_path, call, rcall, exc, text, rtext):
    """ag_load_model checks path, model, model_fn (ag_save_model's order), dtype, device and
    optimizer before the file, in both languages: a missing file reports the argument (it read
    the file first, issue 29)."""
    f = str(tmp_path / "missing.safetensors")
    e = _raised(exc, call, f)
    assert str(e.value) == text
    assert r.run(_R_PRE.format(call=rcall), f=f) == [_R_CLASS[exc], rtext or text]
    assert not os.listdir(tmp_path)
