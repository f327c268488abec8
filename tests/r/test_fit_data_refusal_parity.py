"""ag_fit's data rules in Python and in R (through rpy2): validation_data's shapes and val_split
(pg_fit_val_join), non-finite x / y (pg_fit_new) and a loader with ag_fit's own batch_size /
shuffle give the same condition class and the same text; a refused fit leaves the model as it
was. The R arguments are the Python ones spelt in R."""

import numpy as np
import pytest

from pyggmlr import r

if not r.available():
    pytest.skip(f"R bridge unavailable: {r.unavailable_reason()}", allow_module_level=True)

pytestmark = pytest.mark.parity  # embeds R (rpy2): not in the sanitized run, which cannot host R

from _rclass import R_CLASS as _R_CLASS  # noqa: E402

import pyggmlr as pg  # noqa: E402

_X = np.linspace(-1, 1, 24).reshape(2, 12, order="F")
_Y = _X[:1] * 2.0
_XN, _YN = _X.copy(), _Y.copy()
_XN[1, 4], _XN[0, 9], _YN[0, 0] = np.nan, np.inf, np.nan
_XV, _YV = _X[:, :4].copy(), _Y[:, :4].copy()
_YVI = _YV.copy()
_YVI[0, 2] = -np.inf
_LD = "ag_dataloader(x, y, batch_size = 4L)"

_CASES = [  # (Python keyword arguments, R arguments, Python type)
    (dict(validation_data=(_XV, _YV), val_split=1e-10),
     "validation_data = list(xv, yv), val_split = 1e-10", pg.ArgumentError),
    (dict(validation_data=(_XV, _YV), val_split=0.25),
     "validation_data = list(xv, yv), val_split = 0.25", pg.ArgumentError),
    (dict(validation_data=(_XV[:1], _YV)), "validation_data = list(xv[1, , drop = FALSE], yv)",
     pg.ShapeError),
    (dict(validation_data=(_XV,)), "validation_data = list(xv)", pg.ArgumentError),
    (dict(validation_data=(_XV, _YV[:, :3])), "validation_data = list(xv, yv[, 1:3, drop = FALSE])",
     pg.ShapeError),
    (dict(validation_data=(_XV, np.vstack([_YV, _YV]))), "validation_data = list(xv, rbind(yv, yv))",
     pg.ShapeError),
    (dict(validation_data=(_XV[:, :0], _YV[:, :0])),
     "validation_data = list(xv[, 0, drop = FALSE], yv[, 0, drop = FALSE])", pg.PyggmlrValueError),
    (dict(validation_data=(_XV, _YVI)), "validation_data = list(xv, yvi)", pg.PyggmlrValueError),
    (dict(y=None, loss="huber"), 'y = NULL, loss = "huber"', pg.PyggmlrValueError),
    (dict(y=None), "y = NULL", pg.PyggmlrValueError),
    (dict(x=_XN), "x = xn", pg.PyggmlrValueError),
    (dict(y=_YN), "y = yn", pg.PyggmlrValueError),
    (dict(x="loader", batch_size=32.0000001), f"x = {_LD}, y = NULL, batch_size = 32.0000001",
     pg.ArgumentError),
    (dict(x="loader", batch_size=True), f"x = {_LD}, y = NULL, batch_size = TRUE",
     pg.ArgumentError),
    (dict(x="loader", batch_size="32"), f'x = {_LD}, y = NULL, batch_size = "32"',
     pg.ArgumentError),
    (dict(x="loader", shuffle="yes"), f'x = {_LD}, y = NULL, shuffle = "yes"', pg.ArgumentError),
    (dict(x="loader", shuffle=False), f"x = {_LD}, y = NULL, shuffle = FALSE", pg.ArgumentError),
    (dict(x="loader", y=_Y), f"x = {_LD}", pg.ArgumentError),
]  # fmt: skip

_R = """a <- list(x = x, y = y, loss = "mse", nepoch = 1L, silent = TRUE)
b <- list({a})
a[names(b)] <- b
ggml_set_seed(1)
m <- ag_linear(2, 1)
w <- m$W$data
out <- tryCatch({{ do.call(ag_fit, c(list(m), a)); list("none", "") }},
                error = function(e) list(class(e)[[1L]], conditionMessage(e)))
c(out, identical(w, m$W$data))"""


@pytest.mark.parametrize("kw, code, exc", _CASES, ids=[c[1] for c in _CASES])
def test_same_class_and_text(kw, code, exc):
    args = dict(x=_X, y=_Y, loss="mse", nepoch=1, silent=True)
    args.update(kw)
    if isinstance(args["x"], str):
        args["x"] = pg.ag_dataloader(_X, _Y, batch_size=4)
        args["y"] = kw.get("y")
    pg.ggml_set_seed(1)
    m = pg.ag_linear(2, 1)
    w = m.W.numpy().copy()
    with pytest.raises(exc) as e:
        pg.ag_fit(m, **args)
    assert np.array_equal(m.W.numpy(), w)  # nothing trained, nothing changed
    got = r.run(_R.format(a=code), x=_X, y=_Y, xv=_XV, yv=_YV, yvi=_YVI, xn=_XN, yn=_YN)
    assert list(got) == [_R_CLASS[exc], str(e.value), True]
    assert str(e.value).startswith("ag_fit: ")


def test_the_texts_name_the_first_non_finite_value():
    with pytest.raises(pg.PyggmlrValueError) as e:
        pg.ag_fit(pg.ag_linear(2, 1), _XN, _Y, loss="mse", nepoch=1, silent=True)
    assert str(e.value) == (
        "ag_fit: x has 2 non-finite values (NaN or Inf), the first at row 2, column 5; give "
        "finite data (remove or impute those samples)"
    )
    with pytest.raises(pg.PyggmlrValueError, match=r"^ag_fit: validation_data y has 1 non-finite "
                       r"value \(NaN or Inf\), the first at row 1, column 3;"):  # fmt: skip
        pg.ag_fit(pg.ag_linear(2, 1), _X, _Y, loss="mse", nepoch=1, silent=True,
                  validation_data=(_XV, _YVI))  # fmt: skip


_LOADER = [  # x, y whose samples disagree: the core's text and row-major guess, each language's
    # spellings of the fixes (pg_check_samples)
    (np.zeros((150, 4)), np.zeros((1, 150)), "x looks row-major (150 rows"),
    (np.zeros((4, 150)), np.zeros((150, 1)), "y looks row-major (150 rows"),
    (np.zeros((3, 5)), np.zeros((3, 4)), "x and y look row-major (3 rows each"),
    (np.zeros((4, 10)), np.zeros((2, 9)), None),
]
_R_WORDS = (("col_major=False", "col_major = FALSE"), ("x.T", "t(x)"), ("y.T", "t(y)"))


@pytest.mark.parametrize("x, y, hint", _LOADER, ids=[str(c[2]) for c in _LOADER])
def test_loader_and_fit_row_major_hints(x, y, hint):
    py = {}
    with pytest.raises(pg.ShapeError) as e:
        pg.ag_dataloader(x, y)
    py["loader"] = str(e.value)
    with pytest.raises(pg.ShapeError) as e:
        pg.ag_fit(pg.ag_linear(x.shape[0], y.shape[0]), x, y, loss="mse", silent=True)
    py["fit"] = str(e.value)
    got = r.run(
        """f <- function(e) tryCatch({ e; "none" },
          error = function(c) c(class(c)[1], conditionMessage(c)))
        c(f(ag_dataloader(x, y)),
          f(ag_fit(ag_linear(nrow(x), nrow(y)), x, y, loss = "mse", silent = TRUE)))""",
        x=x, y=y,
    )  # fmt: skip
    rw = {"loader": list(got[0:2]), "fit": list(got[2:4])}
    for k, fn in (("loader", "ag_dataloader"), ("fit", "ag_fit")):
        assert py[k].startswith(
            f"{fn}: x has {x.shape[1]} samples (columns) but y has {y.shape[1]}"
        )
        assert (hint in py[k]) if hint else ("looks" not in py[k] and "look " not in py[k])
        words = py[k]
        for p_word, r_word in _R_WORDS:
            words = words.replace(p_word, r_word)
        assert rw[k] == [_R_CLASS[pg.ShapeError], words]  # one core text, R's spellings
    if hint and hint.startswith("x looks"):  # ag_dataloader offers its own argument first
        assert py["loader"].endswith(
            "so pass col_major=False (x and a 2-D y are transposed) or x.T"
        )
        assert py["fit"].endswith("so pass x.T")
