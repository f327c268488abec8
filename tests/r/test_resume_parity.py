"""ag_fit(resume_from =) with settings that are not short decimals: R refused its own checkpoint
when val_split was 1/3 (it wrote the run's settings with 15 digits, the checkpoint holds them to
the last bit). Each language resumes its own and the other's checkpoint, to the same weights."""

import numpy as np
import pytest

from pyggmlr import r

if not r.available():
    pytest.skip(f"R bridge unavailable: {r.unavailable_reason()}", allow_module_level=True)

pytestmark = pytest.mark.parity  # embeds R (rpy2): not in the sanitized run, which cannot host R

from _files import HISTORY_EDITS, edit_meta  # noqa: E402
from _rclass import R_CLASS  # noqa: E402

import pyggmlr as pg  # noqa: E402

_X = np.linspace(-1, 1, 36).reshape(4, 9, order="F")
_Y = np.array([0.0, 1, 2] * 3)
_ARGS = dict(batch_size=2, val_split=1 / 3, silent=True, seed=3)
_R_FIT = "ag_fit(m, x, y, nepoch = {n}L, batch_size = 2L, val_split = 1/3, silent = TRUE, seed = 3L{more})"


def _py_checkpoint(path):
    pg.ggml_set_seed(1)
    cb = pg.ag_model_checkpoint(str(path))
    pg.ag_fit(pg.ag_linear(4, 3), _X, _Y, nepoch=2, callbacks=[cb], **_ARGS)
    return cb.saved[-1]


def _r_checkpoint(path):
    return r.run(
        "ggml_set_seed(1L); m <- ag_linear(4, 3); cb <- ag_model_checkpoint(p); "
        + _R_FIT.format(n=2, more=", callbacks = list(cb)")
        + "; cb$saved[[length(cb$saved)]]",
        p=str(path),
        x=_X,
        y=_Y,
    )


def _py_resume(ckpt):
    m = pg.ag_linear(4, 3)
    pg.ag_fit(m, _X, _Y, nepoch=3, resume_from=ckpt, **_ARGS)
    return [t.numpy() for t in m.parameters().values()]


def _r_resume_code(then):
    """R code: a fresh model resumed from the checkpoint p for 3 epochs, then `then`."""
    return "m <- ag_linear(4, 3); " + _R_FIT.format(n=3, more=", resume_from = p") + "; " + then


def _r_resume(ckpt):
    out = r.run(_r_resume_code("lapply(m$params(), function(t) t$data)"), p=ckpt, x=_X, y=_Y)
    return [np.asarray(v) for v in (out.values() if isinstance(out, dict) else out)]


@pytest.mark.parametrize("writer", ["python", "r"])
def test_each_resumes_each(tmp_path, writer):
    ckpt = (_py_checkpoint if writer == "python" else _r_checkpoint)(tmp_path / "m_{epoch}.st")
    py, rr = _py_resume(ckpt), _r_resume(ckpt)
    assert len(py) == len(rr) == 2
    for a, b in zip(py, rr):
        assert a.shape == b.shape and a.tobytes() == np.asarray(b, dtype=a.dtype).tobytes()


@pytest.mark.parametrize("writer", ["python", "r"])
def test_metric_columns_cross(tmp_path, writer):
    """A checkpoint's metrics= columns come back in either language (the core's layout): the
    resumed histories agree, the checkpointed epochs included."""
    p = str(tmp_path / "m.st")
    if writer == "python":
        pg.ggml_set_seed(1)
        cb = pg.ag_model_checkpoint(p)
        pg.ag_fit(pg.ag_linear(4, 3), _X, _Y, nepoch=2, callbacks=[cb], metrics=["f1"], **_ARGS)
    else:
        r.run(
            "ggml_set_seed(1L); m <- ag_linear(4, 3); cb <- ag_model_checkpoint(p); "
            + _R_FIT.format(n=2, more=", callbacks = list(cb), metrics = 'f1'"),
            p=p,
            x=_X,
            y=_Y,
        )
    py = pg.ag_fit(pg.ag_linear(4, 3), _X, _Y, nepoch=3, resume_from=p, metrics=["f1"], **_ARGS)
    rr = r.run(
        "m <- ag_linear(4, 3); h <- "
        + _R_FIT.format(n=3, more=", resume_from = p, metrics = 'f1'")
        + "; c(h$f1, h$val_f1)",
        p=p,
        x=_X,
        y=_Y,
    )
    got = np.asarray(rr, dtype=np.float64)
    assert not np.isnan(py.f1[0]) and np.array_equal(py.f1 + py.val_f1, got, equal_nan=True)


def test_a_split_state_the_generator_refuses_is_one_refusal(tmp_path):
    """626 integers that are no state of R's default generator: the core's resume check refuses
    them in both languages with one class and text (R used to fail later, in the plan, with the
    generator's own words), the model untouched."""
    import json

    from _files import edit_meta
    from _rclass import R_CLASS

    ckpt = _py_checkpoint(tmp_path / "m_{epoch}.st")

    def bad(meta):
        ex = json.loads(meta["extra"])
        ex["fit"]["settings"]["split_state"] = [1] * 626
        meta["extra"] = json.dumps(ex)

    edit_meta(ckpt, bad)
    m = pg.ag_linear(4, 3)
    before = [t.numpy().copy() for t in m.parameters().values()]
    with pytest.raises(pg.PyggmlrValueError) as e:
        pg.ag_fit(m, _X, _Y, nepoch=3, resume_from=ckpt, **_ARGS)
    assert all(np.array_equal(a, t.numpy()) for a, t in zip(before, m.parameters().values()))
    got = r.run(
        "m <- ag_linear(4, 3); tryCatch({ "
        + _R_FIT.format(n=3, more=", resume_from = p")
        + "; 'none' }, error = function(e) c(class(e)[[1L]], conditionMessage(e)))",
        p=ckpt,
        x=_X,
        y=_Y,
    )
    assert list(got) == [R_CLASS[pg.PyggmlrValueError], str(e.value)]
    assert "holds an unusable random-stream state" in str(e.value)


def test_a_history_that_is_not_the_epochs_done_is_refused_alike(tmp_path):
    # a hand-edited history (shortened, renumbered, a best epoch past it, the epoch bumped): the
    # core's one text and class in both languages
    src = _py_checkpoint(tmp_path / "ck.st")
    for case, (edit, text) in sorted(HISTORY_EDITS.items()):
        g = str(tmp_path / f"{case}.st")
        edit_meta(src, edit, g)
        with pytest.raises(pg.PyggmlrError) as e:
            _py_resume(g)
        why = "error = function(e) list(class(e)[[1L]], conditionMessage(e))"
        code = "tryCatch({" + _r_resume_code("'ok'") + "}, " + why + ")"
        got = r.run(code, p=g, x=_X, y=_Y)
        assert list(got) == [R_CLASS[type(e.value)], str(e.value)], case
        assert text in str(e.value)
