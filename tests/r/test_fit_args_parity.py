"""ag_fit's argument refusals in Python and in R (through rpy2): the same condition class and the
same text. Where the rule is the core's (pg_fit_new: nbatch_logical, val_split; the loss and
optimizer names: native/fit_loss.c) the text is the same word for word; the front ends' own
type checks differ only in how each language shows a value (True / TRUE, 'a' / "a")."""

import numpy as np
import pytest

from pyggmlr import r

if not r.available():
    pytest.skip(f"R bridge unavailable: {r.unavailable_reason()}", allow_module_level=True)

pytestmark = pytest.mark.parity  # embeds R (rpy2): not in the sanitized run, which cannot host R

from _rclass import R_CLASS as _R_CLASS  # noqa: E402

import pyggmlr as pg  # noqa: E402

_X = np.linspace(-1, 1, 16).reshape(2, 8, order="F")
_Y = np.array([0.0, 1] * 4)
_NAN = float("nan")

_CASES = [  # (Python keyword arguments, R arguments, Python type)
    (dict(nepoch=0), "nepoch = 0", pg.PyggmlrValueError),
    (dict(nepoch=2.5), "nepoch = 2.5", pg.PyggmlrValueError),
    (dict(batch_size=0), "batch_size = 0", pg.PyggmlrValueError),
    (dict(nbatch_logical=3), "nbatch_logical = 3", pg.PyggmlrValueError),
    (dict(nbatch_logical=0), "nbatch_logical = 0", pg.PyggmlrValueError),
    (dict(val_split=1.0), "val_split = 1", pg.PyggmlrValueError),
    (dict(val_split=-0.5), "val_split = -0.5", pg.PyggmlrValueError),
    (dict(val_split=_NAN), "val_split = NaN", pg.PyggmlrValueError),
    (dict(val_split=0.999), "val_split = 0.999", pg.PyggmlrValueError),
    (dict(loss="hinge"), 'loss = "hinge"', pg.PyggmlrValueError),
    (dict(optimizer="bogus"), 'optimizer = "bogus"', pg.PyggmlrValueError),
    (dict(optimizer=5), "optimizer = 5", pg.PyggmlrValueError),
    (dict(lr=-1), "lr = -1", pg.PyggmlrValueError),
    (dict(progress="bogus"), 'progress = "bogus"', pg.PyggmlrValueError),
    (dict(verbose=5), "verbose = 5", pg.PyggmlrValueError),
    (dict(resume_from=5), "resume_from = 5", pg.ArgumentError),
    (dict(silent="a"), 'silent = "a"', pg.ArgumentError),
    # two bad arguments: both languages check in one order and name the same first one
    (dict(nepoch=0, distributed=5), "nepoch = 0, distributed = 5", pg.ArgumentError),
    (dict(loss="hinge", progress="bogus"), 'loss = "hinge", progress = "bogus"',
     pg.PyggmlrValueError),
    (dict(nbatch_logical=0, shuffle="a"), 'nbatch_logical = 0, shuffle = "a"', pg.ArgumentError),
    (dict(val_split=2, validation_data=5), "val_split = 2, validation_data = 5", pg.ArgumentError),
    (dict(optimizer="bogus", callbacks=5), 'optimizer = "bogus", callbacks = 5',
     pg.PyggmlrValueError),
    (dict(callbacks=5, static=True, resume_from=5), "callbacks = 5, resume_from = 5",
     pg.ArgumentError),
    # seed is checked before resume_from in both (Python skipped it when resuming)
    (dict(seed="abc", resume_from=5), 'seed = "abc", resume_from = 5', pg.PyggmlrValueError),
    # a flag of the wrong kind: ArgumentError / pyggmlr_argument_error, as shuffle's (issue 29)
    (dict(distributed="a"), 'distributed = "a"', pg.ArgumentError),
    (dict(static="a"), 'static = "a"', pg.ArgumentError),
    (dict(static=1), "static = 1", pg.ArgumentError),
    # the core's rule (native/fit_setup.c), refused before MPI starts in both languages
    (dict(static=True, distributed=True), "static = TRUE, distributed = TRUE",
     pg.PyggmlrValueError),
]  # fmt: skip

_R = """a <- list(nepoch = 1L, batch_size = 2L, silent = TRUE)
b <- list({a})
a[names(b)] <- b
tryCatch({{ do.call(ag_fit, c(list(ag_linear(2, 2), x, y), a)); list("none", "") }},
         error = function(e) list(class(e)[[1L]], conditionMessage(e)))"""


def _idiom(msg):
    """Python's way of showing a value, as R shows it (the texts are otherwise the same)."""
    msg = msg[: -len("got int")] + "got numeric" if msg.endswith("got int") else msg
    return (msg.replace("got int 5", "got 5").replace("or None,", "or NULL,")
            .replace("must be True or False, got str 'a'", 'must be TRUE or FALSE, got "a"')
            .replace("distributed must be True or False", "distributed must be TRUE or FALSE")
            .replace("static must be True, False or None", "static must be TRUE, FALSE or NULL")
            .replace("(x_val,) or an", "(x_val) or an")
            .replace("a tuple (x_val", "a list (x_val")
            .replace("val_split must be in [0, 1), got nan", "val_split must be in [0, 1), got NaN"))  # fmt: skip


@pytest.mark.parametrize("kw, code, exc", _CASES, ids=[c[1] for c in _CASES])
def test_same_class_and_text(kw, code, exc):
    args = dict(nepoch=1, batch_size=2, silent=True)
    args.update(kw)
    with pytest.raises(exc) as e:
        pg.ag_fit(pg.ag_linear(2, 2), _X, _Y, **args)
    rclass, rmsg = r.run(_R.format(a=code), x=_X, y=_Y)
    assert (rclass, rmsg) == (_R_CLASS[exc], _idiom(str(e.value)))
    assert rmsg.startswith("ag_fit: ") or rmsg.startswith("optimizer_adam: ")


_HP = [  # opt_params(epoch)'s result (pg_fit_opt_params): Python dict, R list, Python type
    ({"bogus": 1}, "list(bogus = 1)", pg.PyggmlrValueError),
    ({"t": 5}, "list(t = 5)", pg.PyggmlrValueError),  # a counter, not a hyper-parameter
    ({"momentum": 0.5}, "list(momentum = 0.5)", pg.PyggmlrValueError),  # SGD's, not Adam's
    ({"lr": -1}, "list(lr = -1)", pg.PyggmlrValueError),
    ({"alpha": 0.5, "wd": -1}, "list(alpha = 0.5, wd = -1)", pg.PyggmlrValueError),
    ({"lr": "a"}, 'list(lr = "a")', pg.ArgumentError),
    ({"lr": True}, "list(lr = TRUE)", pg.ArgumentError),
]  # fmt: skip


@pytest.mark.parametrize("hp, code, exc", _HP, ids=[c[1] for c in _HP])
def test_same_opt_params_refusals(hp, code, exc):
    with pytest.raises(exc) as e:
        pg.ag_fit(
            pg.ag_linear(2, 2),
            _X,
            _Y,
            nepoch=1,
            batch_size=2,
            silent=True,
            opt_params=lambda ep: hp,
        )
    rclass, rmsg = r.run(
        f"tryCatch({{ ag_fit(ag_linear(2, 2), x, y, nepoch = 1L, batch_size = 2L, silent = TRUE, "
        f"opt_params = function(e) {code}); list('none', '') }}, "
        "error = function(e) list(class(e)[[1L]], conditionMessage(e)))",
        x=_X,
        y=_Y,
    )
    assert (rclass, rmsg) == (_R_CLASS[exc], str(e.value).replace("True", "TRUE"))
    assert rmsg.startswith("ag_fit: opt_params")


def test_opt_params_all_or_nothing():
    """A refused entry leaves every hyper-parameter as it was, in both languages."""
    opt = pg.optimizer_adam(pg.ag_linear(2, 2).parameters(), lr=0.01)
    from pyggmlr.fit.util import _apply_hyper

    with pytest.raises(pg.PyggmlrValueError):
        _apply_hyper(opt, {"lr": 0.5, "weight_decay": -1}, 3)
    _apply_hyper(opt, {"alpha": 0.25, "wd": 0.1}, 4)
    got = r.run(
        "o <- optimizer_adam(ag_linear(2, 2)$params(), lr = 0.01); "
        "r <- tryCatch(pyggmlr:::.apply_hyper(o, list(lr = 0.5, weight_decay = -1), 3L), "
        "error = function(e) o$lr); pyggmlr:::.apply_hyper(o, list(alpha = 0.25, wd = 0.1), 4L); "
        "c(r, o$lr, o$weight_decay)"
    )
    assert list(got) == [0.01, opt.lr, opt.weight_decay] == [0.01, 0.25, 0.1]


_REG = [  # ag_register_layer: one argument name (type) and the same texts in both languages
    (("", "f"), 'ag_register_layer("", f)', pg.ArgumentError),
    ((5, "f"), "ag_register_layer(5, f)", pg.ArgumentError),
    (("linear", "f"), 'ag_register_layer(type = "linear", builder = f)', pg.PyggmlrValueError),
    (("my_layer", 5), 'ag_register_layer("my_layer", 5)', pg.ArgumentError),
]  # fmt: skip


@pytest.mark.parametrize("args, code, exc", _REG, ids=[c[1] for c in _REG])
def test_same_register_layer_refusals(args, code, exc):
    with pytest.raises(exc) as e:
        pg.ag_register_layer(type=args[0], builder=(lambda cfg: cfg) if args[1] == "f" else args[1])
    rclass, rmsg = r.run(
        f"f <- function(cfg) cfg; tryCatch({{ {code}; list('none', '') }}, "
        "error = function(e) list(class(e)[[1L]], conditionMessage(e)))"
    )
    assert (rclass, rmsg) == (_R_CLASS[exc], str(e.value))
