"""ag_load_state_dict in Python and in R (through rpy2): the rules and the write are the C core's
(native/state_dict.c), so each refusal has the same condition class and the same text word for
word, and leaves the model as it was in both; a good load (strict and not, integer and tensor
values) gives the same weights bit for bit."""

import numpy as np
import pytest

from pyggmlr import r

if not r.available():
    pytest.skip(f"R bridge unavailable: {r.unavailable_reason()}", allow_module_level=True)

pytestmark = pytest.mark.parity  # embeds R (rpy2): not in the sanitized run, which cannot host R

from _rclass import R_CLASS as _R_CLASS  # noqa: E402

import pyggmlr as pg  # noqa: E402


def _build():
    return pg.ag_sequential(pg.ag_linear(4, 8, "relu"), pg.ag_batch_norm(8), pg.ag_linear(8, 2))


_R_BUILD = 'ag_sequential(ag_linear(4, 8, "relu"), ag_batch_norm(8), ag_linear(8, 2))'

_R = """m <- {build}
before <- ag_state_dict(m)
res <- tryCatch({{ ag_load_state_dict(m, state, strict = {strict}); list("none", "") }},
                error = function(e) list(class(e)[[1L]], conditionMessage(e)))
c(res, identical(ag_state_dict(m), before))"""


def _state():
    pg.ggml_set_seed(5)
    sd = pg.ag_state_dict(_build())
    return {"parameters": dict(sd["parameters"]), "buffers": dict(sd["buffers"])}


def _set(kind, name, value):
    def edit(sd):
        sd[kind][name] = value

    return edit


def _drop(kind, name):
    def edit(sd):
        del sd[kind][name]

    return edit


def _nan_in(name):
    def edit(sd):
        sd["parameters"][name] = sd["parameters"][name].astype(np.float64)
        sd["parameters"][name][1, 0] = np.nan

    return edit


def _buffers(value):
    def edit(sd):
        sd["buffers"] = value

    return edit


_CASES = [  # (id, edit of a good state, strict, Python type)
    ("buffers not a list", _buffers(3.0), True, pg.ArgumentError),
    ("shape", _set("parameters", "layer1_b", np.zeros((3, 3))), True, pg.ShapeError),
    ("vector", _set("parameters", "layer3_b", np.array([1.0, 2.0])), True, pg.ShapeError),
    ("3-d", _set("parameters", "layer3_W", np.zeros((2, 2, 2))), True, pg.ShapeError),
    ("text", _set("buffers", "layer2_running_mean", np.array([["a"]] * 8)), True, pg.ShapeError),
    ("nan", _nan_in("layer1_W"), True, pg.PyggmlrValueError),
    ("inf buffer", _set("buffers", "layer2_running_var", np.full((8, 1), np.inf)), True,
     pg.PyggmlrValueError),
    ("f32 range", _set("parameters", "layer3_W", np.full((2, 8), 1e300)), True,
     pg.PyggmlrValueError),
    ("extra", _set("parameters", "extra_W", np.zeros((1, 1))), True, pg.PyggmlrValueError),
    ("missing", _drop("parameters", "layer1_W"), True, pg.PyggmlrValueError),
    ("buffer missing", _drop("buffers", "layer2_running_var"), True, pg.PyggmlrValueError),
    ("not strict, shared shape", _set("parameters", "layer1_W", np.zeros((2, 2))), False,
     pg.ShapeError),
    ("not strict, last value NaN", _set("buffers", "layer2_running_var", np.full((8, 1), np.nan)),
     False, pg.PyggmlrValueError),
]  # fmt: skip


@pytest.mark.parametrize("edit, strict, exc", [c[1:] for c in _CASES], ids=[c[0] for c in _CASES])
def test_same_refusal_and_nothing_written(edit, strict, exc):
    sd = _state()
    edit(sd)
    m = _build()
    before = pg.ag_state_dict(m)
    with pytest.raises(exc) as e:
        pg.ag_load_state_dict(m, sd, strict=strict)
    after = pg.ag_state_dict(m)
    for kind in ("parameters", "buffers"):
        assert all(np.array_equal(before[kind][k], after[kind][k]) for k in before[kind])
    rclass, rmsg, kept = r.run(_R.format(build=_R_BUILD, strict=str(strict).upper()), state=sd)
    assert (rclass, rmsg, kept) == (_R_CLASS[exc], str(e.value), True)
    assert rmsg.startswith("ag_load_state_dict(): ")


class _Named:
    """a model whose parameters() names are given (an empty one, two that read the same)"""

    def __init__(self, names):
        self.p = {k: pg.ag_param(np.ones((2, 2))) for k in names}

    def parameters(self):
        return self.p


@pytest.mark.parametrize("keys, rnames", [(["", "b"], '"", "b"'), ([1, "1"], '"1", "1"')])
def test_model_names_refused_alike(keys, rnames):
    with pytest.raises(pg.PyggmlrValueError) as e:
        pg.ag_load_state_dict(_Named(keys), {"parameters": {}}, strict=False)
    code = f"""m <- list(parameters = function()
  setNames(list(ag_param(matrix(1, 2, 2)), ag_param(matrix(1, 2, 2))), c({rnames})))
tryCatch({{ ag_load_state_dict(m, list(parameters = list()), strict = FALSE); list("none", "") }},
         error = function(e) list(class(e)[[1L]], conditionMessage(e)))"""
    assert r.run(code) == ["pyggmlr_value_error", str(e.value)]
    assert "need distinct names to be matched with a state" in str(e.value)


def _as64(sd):
    return {kind: {k: np.asarray(v, dtype=np.float64) for k, v in sd[kind].items()}
            for kind in ("parameters", "buffers")}  # fmt: skip


@pytest.mark.parametrize("strict", [True, False])
def test_good_load_same_bits(strict):
    sd = _state()
    if not strict:  # a part: an integer matrix, a tensor, a name the model lacks
        sd = {
            "parameters": {
                "layer1_b": np.arange(8).reshape(8, 1),
                "layer3_W": pg.ag_tensor(sd["parameters"]["layer3_W"].astype(np.float64) / 3),
                "extra": np.zeros((1, 1)),
            },
            "buffers": {"layer2_running_var": sd["buffers"]["layer2_running_var"] + 1},
        }
    pg.ggml_set_seed(9)
    m = _build()
    pg.ag_load_state_dict(m, sd, strict=strict)
    py = _as64(pg.ag_state_dict(m))
    code = f"""ggml_set_seed(9L)
m <- {_R_BUILD}
ag_load_state_dict(m, state, strict = {str(strict).upper()})
ag_state_dict(m)"""
    rs = _as64(r.run(code, state=sd))
    for kind in ("parameters", "buffers"):
        assert list(rs[kind]) == list(py[kind])
        for k in py[kind] if strict else set(py[kind]) & set(sd[kind]):  # the loaded ones
            assert py[kind][k].tobytes(order="F") == rs[kind][k].tobytes(order="F"), (kind, k)
