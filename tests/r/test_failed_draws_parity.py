"""A call that fails draws nothing (found by calling every function and method with hostile values
and comparing all state before and after each refusal): ag_fit drew its split and first shuffle
before checking class_weight and the resume's weights, ag_load_model built the model (drawing its
initial weights) before checking the file's optimizer state and names against it, and
ag_module_from_config built the layers before a later one's refusal. In both languages the stream
now ends where it began, so the next draw is the one the script would make without the failed
call, and the two languages refuse alike. ag_fit also checks before training what it refused only
once training had begun: x's rows against the model's built-in layers, y's rows against the
model's outputs for a built-in loss or a metric
that compares element by element, validation_data's class ids, a binary model's per-class
metrics with more than one output, nbatch_logical below batch_size (which reached the optimizer
as 0 steps to accumulate) and an optimizer object that updates none of the model's parameters
(its first step found no gradient)."""

import numpy as np
import pytest

from pyggmlr import r

if not r.available():
    pytest.skip(f"R bridge unavailable: {r.unavailable_reason()}", allow_module_level=True)

pytestmark = pytest.mark.parity  # embeds R (rpy2): not in the sanitized run, which cannot host R

from _rclass import R_CLASS  # noqa: E402

import pyggmlr as pg  # noqa: E402

_X = (np.arange(40, dtype=float).reshape(10, 4).T + 1) / 40
_Y = np.array([0, 1, 2, 0, 1, 2, 0, 1, 2, 0], dtype=float)
_MODEL_R = 'ag_sequential(ag_linear(4, 8, activation = "relu"), ag_linear(8, 3))'


def _model():
    return pg.ag_sequential(pg.ag_linear(4, 8, activation="relu"), pg.ag_linear(8, 3))


def _fit(y=_Y, **kw):
    m = _model()
    return lambda: pg.ag_fit(m, _X, y, nepoch=1, batch_size=4, silent=True, **kw)


def _fit_layers(layers, x=_X):
    """ag_fit of a sequential of layers() on x (the layers built before the seed is set)."""
    m = pg.ag_sequential(*layers())
    return lambda: pg.ag_fit(m, x, _Y, nepoch=1, batch_size=4, silent=True)


def _load(**kw):
    return lambda: pg.ag_load_model(kw.pop("path"), **kw)


def _bad_config():
    cfg = _model().to_config()
    cfg["layers"][1]["in_features"] = -3
    return lambda: pg.ag_module_from_config(cfg)


_FIT_R = "ag_fit(m, x, y, nepoch = 1, batch_size = 4, silent = TRUE, {})"
_CASES = [  # (id, Python set-up of the file's path -> the call, R set-up, R call; `path` bound)
    (
        "fit class id out of range",
        lambda p: _fit(class_weight=[1, 1, 1, 1]),
        f"m <- {_MODEL_R}",
        _FIT_R.format("class_weight = c(1, 1, 1, 1)"),
    ),
    (
        "fit negative class weight",
        lambda p: _fit(class_weight=[-1, 1, 1]),
        f"m <- {_MODEL_R}",
        _FIT_R.format("class_weight = c(-1, 1, 1)"),
    ),
    (
        "fit mse y of 1 row for 3 outputs",  # was the first batch's ag_mse_loss error
        lambda p: _fit(loss="mse"),
        f"m <- {_MODEL_R}",
        _FIT_R.format('loss = "mse"'),
    ),
    (
        "fit cross_entropy y of 2 rows",
        lambda p: _fit(y=np.ones((2, 10))),
        f"m <- {_MODEL_R}",
        "ag_fit(m, x, matrix(1, 2, 10), nepoch = 1, batch_size = 4, silent = TRUE)",
    ),
    (
        "fit metric mse of class ids for 3 outputs",  # was refused after the first epoch
        lambda p: _fit(metrics="mse"),
        f"m <- {_MODEL_R}",
        _FIT_R.format('metrics = "mse"'),
    ),
    (
        "fit validation ids past the outputs",  # was the first validation batch's loss error
        lambda p: _fit(validation_data=(_X, _Y + 3)),
        f"m <- {_MODEL_R}",
        _FIT_R.format("validation_data = list(x, y + 3)"),
    ),
    (
        "fit precision of a 2-output binary model",  # was refused after the first epoch
        lambda p: _fit(y=np.zeros((3, 10)), loss="bce_with_logits", metrics="precision"),
        f"m <- {_MODEL_R}",
        'ag_fit(m, x, matrix(0, 3, 10), loss = "bce_with_logits", metrics = "precision", '
        "nepoch = 1, batch_size = 4, silent = TRUE)",
    ),
    (
        "fit nbatch_logical below batch_size",  # was optimizer_adam's accumulate_steps text
        lambda p: _fit(nbatch_logical=3),
        f"m <- {_MODEL_R}",
        _FIT_R.format("nbatch_logical = 3"),
    ),
    (
        "fit with another model's optimizer",  # was the first step's "no gradient" StateError
        lambda p: _fit(optimizer=pg.optimizer_adam(pg.ag_linear(4, 3).parameters())),
        f"m <- {_MODEL_R}; o <- optimizer_adam(ag_linear(4, 3))",
        _FIT_R.format("optimizer = o"),
    ),
    (
        "fit x of 5 rows for a 4-input model",  # was the first batch's ag_linear error
        lambda p: _fit_layers(lambda: _model().layers, np.vstack([_X, _X[:1]])),
        f"m <- {_MODEL_R}",
        "ag_fit(m, rbind(x, x[1, ]), y, nepoch = 1, batch_size = 4, silent = TRUE)",
    ),
    (
        "fit dropout then a batch norm of other rows",  # dropout drew, then batch norm refused
        lambda p: _fit_layers(
            lambda: [pg.ag_dropout(0.5), pg.ag_batch_norm(5), pg.ag_linear(5, 3)]
        ),
        "m <- ag_sequential(ag_dropout(0.5), ag_batch_norm(5), ag_linear(5, 3))",
        "ag_fit(m, x, y, nepoch = 1, batch_size = 4, silent = TRUE)",
    ),
    (
        "fit lstm rows not a multiple of input_size",
        lambda p: _fit_layers(lambda: [pg.ag_lstm(3, 5), pg.ag_linear(5, 3)]),
        "m <- ag_sequential(ag_lstm(3, 5), ag_linear(5, 3))",
        "ag_fit(m, x, y, nepoch = 1, batch_size = 4, silent = TRUE)",
    ),
    (
        "load: another optimizer",  # rebuilt from the config, then the optimizer refused
        lambda p: _load(path=p, optimizer=pg.optimizer_sgd(_model().parameters(), lr=0.1)),
        f"o <- optimizer_sgd({_MODEL_R}$parameters(), lr = 0.1)",
        "ag_load_model(path, optimizer = o)",
    ),
    (
        "load: a builder of other names",  # model_fn built, then its names refused
        lambda p: _load(path=p, model_fn=lambda: pg.ag_linear(4, 3)),
        "",
        "ag_load_model(path, model_fn = function() ag_linear(4, 3))",
    ),
    (
        "config refused part-way",
        lambda p: _bad_config(),
        f"cfg <- {_MODEL_R}$to_config(); cfg$layers[[2]]$in_features <- -3",
        "ag_module_from_config(cfg)",
    ),
]


def _saved(tmp_path):
    """An Adam model file both languages read (written here: the same bits as R's)."""
    p = str(tmp_path / "adam.safetensors")
    pg.ggml_set_seed(3)
    m = _model()
    pg.ag_save_model(m, p, optimizer=pg.optimizer_adam(m.parameters(), lr=0.01))
    return p


@pytest.mark.parametrize("case", _CASES, ids=[c[0] for c in _CASES])
def test_a_refused_call_draws_nothing(tmp_path, case):
    _, setup, rsetup, rcall = case
    path = _saved(tmp_path)
    call = setup(path)
    pg.ggml_set_seed(11)
    clean = pg.random.runif(4)  # what the script draws next without the failed call
    pg.ggml_set_seed(11)
    with pytest.raises(pg.PyggmlrError) as e:
        call()
    assert np.array_equal(pg.random.runif(4), clean)
    got = r.run(
        f"{rsetup}; set.seed(11); clean <- runif(4); set.seed(11)\n"
        f"err <- tryCatch({{ {rcall}; NULL }}, error = function(e) list(class(e)[[1L]], "
        "conditionMessage(e)))\nlist(err, identical(runif(4), clean), clean)",
        path=path,
        x=_X,
        y=_Y,
    )
    assert got[0] == [R_CLASS[type(e.value)], str(e.value)]  # the same refusal
    assert got[1] is True  # R's stream too
    np.testing.assert_array_equal(np.asarray(got[2]), clean)  # the same stream in both


def test_a_refused_load_names_the_file(tmp_path):
    """The optimizer-state refusals name the file, as the loader's other file refusals do."""
    path = _saved(tmp_path)
    m = _model()
    with pytest.raises(pg.PyggmlrValueError) as e:
        pg.ag_load_model(path, model=m, optimizer=pg.optimizer_sgd(m.parameters(), lr=0.1))
    assert str(e.value) == (
        f"{path}: optimizer state mismatch: the file's state is for adam, this optimizer is sgd"
    )
    w = m.parameters()
    first = dict(list(w.items())[:2]) if isinstance(w, dict) else w[:2]
    with pytest.raises(pg.PyggmlrValueError) as e:
        pg.ag_load_model(path, model=m, optimizer=pg.optimizer_adam(first))
    assert str(e.value).startswith(f"{path}: optimizer state mismatch: the optimizer's parameters")


def test_successful_calls_still_draw(tmp_path):
    """The stream is put back only on failure: a load that rebuilds, and a fit, draw as before."""
    path = _saved(tmp_path)
    pg.ggml_set_seed(11)
    clean = pg.random.runif(4)
    pg.ggml_set_seed(11)
    pg.ag_load_model(path)
    assert not np.array_equal(pg.random.runif(4), clean)
    fit = _fit()
    pg.ggml_set_seed(11)
    fit()
    assert not np.array_equal(pg.random.runif(4), clean)
