"""ag_save_model / ag_load_model's argument rules in Python and in R (through rpy2): the rules and
texts are the C core's (native/modelfile_args.c), so each refusal has the same condition class
and the same text word for word in both languages."""

import pytest

from pyggmlr import r

if not r.available():
    pytest.skip(f"R bridge unavailable: {r.unavailable_reason()}", allow_module_level=True)

pytestmark = pytest.mark.parity  # embeds R (rpy2): not in the sanitized run, which cannot host R

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


@pytest.mark.parametrize("call, rcall, exc, text", [c[1:] for c in _CASES],
                         ids=[c[0] for c in _CASES])  # fmt: skip
def test_same_refusal(tmp_path, call, rcall, exc, text):
    f = str(tmp_path / "m.safetensors")
    pg.ag_save_model(_build(), f)
    with pytest.raises(exc) as e:
        call(f, _build())
    assert str(e.value) == text
    assert r.run(_R_PRE.format(call=rcall), f=f) == [_R_CLASS[exc], text]


def test_match_arg_prefix_alike(tmp_path):
    """match.arg's prefix in both: "f6" builds the model in f64"""
    f = str(tmp_path / "m.safetensors")
    pg.ag_save_model(_build(), f)
    assert pg.ag_load_model(f, dtype="f6").parameters()["layer1_W"].dtype == "f64"
    code = 'ag_state_dict(ag_load_model(f, dtype = "f6"))$param_dtypes[["layer1_W"]]'
    assert r.run(code, f=f) in ("f64", ["f64"])
