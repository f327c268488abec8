"""Flags that R read with isTRUE and Python with bool() (issue 29's drift class): "yes" or 1 gave
a causal mask in Python and none in R. Now both refuse anything but TRUE / FALSE, with the same
condition class and text, before any work; TRUE and FALSE still give the same bits."""

import numpy as np
import pytest

from pyggmlr import r

if not r.available():
    pytest.skip(f"R bridge unavailable: {r.unavailable_reason()}", allow_module_level=True)

pytestmark = pytest.mark.parity  # embeds R (rpy2): not in the sanitized run, which cannot host R

from _rclass import same_refusal  # noqa: E402

import pyggmlr as pg  # noqa: E402

_SETUP = "ggml_set_seed(1); q <- ag_tensor(matrix((1:12) / 7, 4, 3)); m <- ag_multihead_attention(4, 2); "
_Q = np.arange(1, 13, dtype=np.float64).reshape(4, 3, order="F") / 7
_FLASH = "ag_flash_attention: causal must be {} or {}, got {}"
_MHA = "ag_multihead_attention: causal_mask must be {} or {}, got {}"


def _mha():
    pg.ggml_set_seed(1)
    return pg.ag_multihead_attention(4, 2)


_CASES = [  # (id, Python call, R call, Python text, R text)
    ("flash yes", lambda: pg.ag_flash_attention(_Q, _Q, _Q, 2, causal="yes"),
     'ag_flash_attention(q, q, q, 2, causal = "yes")',
     _FLASH.format("True", "False", "str 'yes'"), _FLASH.format("TRUE", "FALSE", '"yes"')),
    ("flash 1", lambda: pg.ag_flash_attention(_Q, _Q, _Q, 2, causal=1),
     "ag_flash_attention(q, q, q, 2, causal = 1)",
     _FLASH.format("True", "False", "int 1"), _FLASH.format("TRUE", "FALSE", "1")),
    ("flash None", lambda: pg.ag_flash_attention(_Q, _Q, _Q, 2, causal=None),
     "ag_flash_attention(q, q, q, 2, causal = NA)",
     _FLASH.format("True", "False", "NoneType None"), _FLASH.format("TRUE", "FALSE", "NA")),
    ("mha no", lambda: _mha().forward(pg.ag_tensor(_Q), causal_mask="no"),
     'm$forward(q, causal_mask = "no")',
     _MHA.format("True", "False", "str 'no'"), _MHA.format("TRUE", "FALSE", '"no"')),
    ("mha pair", lambda: _mha().forward(pg.ag_tensor(_Q), causal_mask=[True, True]),
     "m$forward(q, causal_mask = c(TRUE, TRUE))",
     _MHA.format("True", "False", "list [True, True]"),
     _MHA.format("TRUE", "FALSE", "c(TRUE, TRUE)")),
    # the GPU switches: Python raised PyggmlrValueError, R an argument error (the same text)
    ("graph_mode on", lambda: pg.ag_graph_mode(1), "ag_graph_mode(1)",
     "ag_graph_mode(): `on` must be TRUE or FALSE", None),
    ("graph_mode check", lambda: pg.ag_graph_mode(False, check="x"),
     'ag_graph_mode(FALSE, check = "x")', "ag_graph_mode(): `check` must be TRUE, FALSE or NULL",
     None),
]  # fmt: skip


@pytest.mark.parametrize("case", _CASES, ids=[c[0] for c in _CASES])
def test_flag_refused_alike(case):
    _, call, rcall, text, rtext = case
    graph = pg.ag_graph_mode()
    same_refusal(call, rcall, pg.ArgumentError, text, rtext, setup=_SETUP)
    assert pg.ag_graph_mode() is graph  # a refused call sets nothing


@pytest.mark.parametrize("causal", [True, False])
def test_flags_still_give_the_same_bits(causal):
    py = pg.ag_flash_attention(_Q, _Q, _Q, 2, causal=np.bool_(causal)).numpy()
    mha = _mha().forward(pg.ag_tensor(_Q), causal_mask=causal).numpy()
    flag = "TRUE" if causal else "FALSE"
    rr = r.run(_SETUP + f"list(a = ag_flash_attention(q, q, q, 2, causal = {flag})$data, "
               f"b = m$forward(q, causal_mask = {flag})$data)")  # fmt: skip
    np.testing.assert_array_equal(np.asarray(rr["a"]), py)
    np.testing.assert_array_equal(np.asarray(rr["b"]), mha)
    if causal:  # the mask did something
        assert not np.array_equal(py, pg.ag_flash_attention(_Q, _Q, _Q, 2).numpy())
