"""ag_model_checkpoint's path rule is the core's (native/fit_ckpt_path.c): the same file names and
the same refusals in Python and in R. R substituted only "{epoch}" and kept "{{" as two braces,
while Python ran str.format; both now write "{epoch:03d}" zero-padded and "{{" as one brace."""

import os

import numpy as np
import pytest

from pyggmlr import r

if not r.available():
    pytest.skip(f"R bridge unavailable: {r.unavailable_reason()}", allow_module_level=True)

pytestmark = pytest.mark.parity  # embeds R (rpy2): not in the sanitized run, which cannot host R

import pyggmlr as pg  # noqa: E402

_X = np.linspace(-1, 1, 24).reshape(4, 6, order="F")
_Y = np.array([0.0, 1, 2, 0, 1, 2])


@pytest.mark.parametrize("pattern", ["m_{epoch}.st", "m_{epoch:03d}.st", "a{{b}}_{epoch:2d}.st"])
def test_same_file_names(tmp_path, pattern):
    py, rd = tmp_path / "py", tmp_path / "r"
    py.mkdir()
    rd.mkdir()
    cb = pg.ag_model_checkpoint(str(py / pattern))
    pg.ag_fit(pg.ag_linear(4, 3), _X, _Y, nepoch=2, batch_size=2, silent=True, callbacks=[cb])
    saved = r.run(
        "cb <- ag_model_checkpoint(p); ag_fit(ag_linear(4, 3), x, y, nepoch = 2L, batch_size = 2L, silent = TRUE, "
        "callbacks = list(cb)); cb$saved",
        p=str(rd / pattern),
        x=_X,
        y=_Y,
    )
    names = [os.path.basename(p) for p in cb.saved]
    assert names == [os.path.basename(p) for p in list(saved)]
    assert sorted(os.listdir(py)) == sorted(os.listdir(rd)) == sorted(names)
    assert names[0] == pattern.replace("{epoch}", "1").replace("{epoch:03d}", "001").replace(
        "{{", "{"
    ).replace("}}", "}").replace("{epoch:2d}", " 1")


@pytest.mark.parametrize("pattern", ["m_{ep}.st", "m_{}.st", "m_{0}.st", "m}.st", "m_{epoch:x}"])
def test_same_refusals(tmp_path, pattern):
    p = str(tmp_path / pattern)
    with pytest.raises(pg.PyggmlrValueError) as e:
        pg.ag_model_checkpoint(p)
    cls, msg = r.run(
        "tryCatch({ ag_model_checkpoint(p); list('none', '') }, "
        "error = function(e) list(class(e)[[1L]], conditionMessage(e)))",
        p=p,
    )
    assert (cls, msg) == ("pyggmlr_value_error", str(e.value))
    assert "has a placeholder other than {epoch} (write a literal brace as {{ or }})" in msg
