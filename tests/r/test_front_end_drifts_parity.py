"""Calls that gave different results in Python and R (found by reading the two front ends side by
side), now alike: one callback given alone as R's environment or named list of hooks (R refused an
environment; a named list's hooks each ran as on_epoch_end, so on_train_begin(fit) got (epoch,
logs)) and as Python's dict; a named list / dict of callbacks; a model with only ggmlR's params()
(R trained and saved a list of them, Python refused it, and R refused an environment); an optimizer state whose slot holds one bare matrix
for a one-parameter optimizer (Python took it, R split the matrix into numbers) or whose names
are a number (two texts); a History whose metric column is longer than its epochs (R refused to
print it, Python dropped the extra value)."""

from types import SimpleNamespace

import numpy as np
import pytest

from pyggmlr import r

if not r.available():
    pytest.skip(f"R bridge unavailable: {r.unavailable_reason()}", allow_module_level=True)

pytestmark = pytest.mark.parity  # embeds R (rpy2): not in the sanitized run, which cannot host R

from _rclass import R_CLASS  # noqa: E402

import pyggmlr as pg  # noqa: E402

_X = np.linspace(0, 1, 40).reshape(10, 4).T  # R's matrix(seq(0, 1, length.out = 40), 4)
_Y = np.array([0.0, 1] * 5)
_R_DATA = "x <- matrix(seq(0, 1, length.out = 40), 4); y <- rep(c(0, 1), 5)\n"


def _py_counts(make_callbacks):
    """(on_train_begin calls, on_epoch_end calls) of a 3-epoch fit with make_callbacks(count)."""
    n = {"begin": 0, "epoch": 0}

    def begin(fit):
        n["begin"] += 1

    def epoch(e, logs):
        n["epoch"] += 1

    pg.ag_fit(pg.ag_linear(4, 2), _X, _Y, nepoch=3, batch_size=5, silent=True,
              callbacks=make_callbacks(begin, epoch))  # fmt: skip
    return [n["begin"], n["epoch"]]


def _r_counts(callbacks):
    return [int(v) for v in r.run(
        _R_DATA + "n <- new.env(); n$begin <- 0; n$epoch <- 0\n"
        "begin <- function(fit) n$begin <- n$begin + 1\n"
        "epoch <- function(e, logs) n$epoch <- n$epoch + 1\n"
        f"ag_fit(ag_linear(4, 2), x, y, nepoch = 3, batch_size = 5, silent = TRUE, "
        f"callbacks = {callbacks})\nc(n$begin, n$epoch)"
    )]  # fmt: skip


@pytest.mark.parametrize(
    "py, rcode, want",
    [
        (lambda b, e: SimpleNamespace(on_train_begin=b, on_epoch_end=e),
         "local({cb <- new.env(); cb$on_train_begin <- begin; cb$on_epoch_end <- epoch; cb})",
         [1, 3]),
        (lambda b, e: {"on_epoch_end": e, "on_train_begin": b},
         "list(on_epoch_end = epoch, on_train_begin = begin)", [1, 3]),
        (lambda b, e: {"first": e, "second": {"on_epoch_end": e}},
         "list(first = epoch, second = list(on_epoch_end = epoch))", [0, 6]),
        (lambda b, e: [e, SimpleNamespace(on_epoch_end=e, on_train_begin=b)],
         "list(epoch, list(on_epoch_end = epoch, on_train_begin = begin))", [1, 6]),
    ],
    ids=["environment alone", "named list alone", "named list of callbacks", "list of both"],
)  # fmt: skip
def test_one_callback_alone_or_a_named_list_of_them(py, rcode, want):
    assert _py_counts(py) == want
    assert _r_counts(rcode) == want


def test_a_model_with_only_params_trains_saves_and_estimates_alike(tmp_path):
    """ggmlR's list model (params() and forward): Python refused it in ag_fit, ag_save_model and
    ag_estimate_training_memory; now both train it to the same bits."""
    W = pg.ag_param(np.full((2, 4), 0.1))
    b = pg.ag_param(np.zeros((2, 1)))
    m = SimpleNamespace(params=lambda: {"W": W, "b": b},
                        forward=lambda x: pg.ag_add(pg.ag_matmul(W, x), b))  # fmt: skip
    h = pg.ag_fit(m, _X, _Y, nepoch=2, batch_size=5, silent=True, seed=1, shuffle=False)
    p = str(tmp_path / "m.safetensors")
    pg.ag_save_model(m, p)
    total = pg.ag_estimate_training_memory(model=m, x=_X, quiet=True)["total"]
    got = r.run(
        _R_DATA + "W <- ag_param(matrix(0.1, 2, 4)); b <- ag_param(matrix(0, 2, 1))\n"
        "m <- list(params = function() list(W = W, b = b),\n"
        "          forward = function(x) ag_add(ag_matmul(W, x), b))\n"
        "h <- ag_fit(m, x, y, nepoch = 2, batch_size = 5, silent = TRUE, seed = 1, shuffle = FALSE)\n"
        "f <- tempfile(fileext = '.safetensors'); ag_save_model(m, f)\n"
        "e <- new.env(); W2 <- ag_param(matrix(0.1, 2, 4)); b2 <- ag_param(matrix(0, 2, 1))\n"
        "e$params <- function() list(W = W2, b = b2)  # an environment: as Python's object\n"
        "e$forward <- function(x) ag_add(ag_matmul(W2, x), b2)\n"
        "h2 <- ag_fit(e, x, y, nepoch = 2, batch_size = 5, silent = TRUE, seed = 1, shuffle = FALSE)\n"
        "list(h$loss, sort(names(ag_model_info(f)$parameters), method = 'radix'),\n"
        "     ag_estimate_training_memory(model = m, x = x, quiet = TRUE)$total, h2$loss)"
    )
    assert list(np.asarray(got[0])) == h.loss  # bit for bit
    assert list(got[1]) == sorted(pg.ag_model_info(p)["parameters"]) == ["W", "b"]
    assert float(np.ravel(got[2])[0]) == total
    assert list(np.asarray(got[3])) == h.loss


def test_optimizer_state_slot_of_one_matrix_and_names_of_the_wrong_kind():
    """A one-parameter Adam state whose slots hold the matrix itself (not a list of one) loads in
    both; names of the wrong kind are refused in both, naming the kind."""
    st = pg.optimizer_adam([pg.ag_param(np.ones((2, 2)))]).state()
    m1 = np.full((2, 2), 0.5)
    st["slots"] = {"m": m1, "v": np.full((2, 2), 0.25)}
    o = pg.optimizer_adam([pg.ag_param(np.ones((2, 2)))])
    assert o.load_state(st) is True
    assert np.array_equal(o.state()["slots"]["m"][0], m1)
    st["names"] = 5
    with pytest.raises(pg.PyggmlrValueError) as e:
        o.load_state(st)
    assert str(e.value).endswith("names must be NULL or one name per parameter, got int")
    got = r.run(
        "o <- optimizer_adam(list(ag_param(matrix(1, 2, 2))))\n"
        "st <- o$state(); st$slots <- list(m = matrix(0.5, 2, 2), v = matrix(0.25, 2, 2))\n"
        "ok <- o$load_state(st)\n"
        "st$names <- 5\n"
        "err <- tryCatch(o$load_state(st), error = function(e) c(class(e)[[1L]], conditionMessage(e)))\n"
        "list(ok, o$state()$slots$m[[1L]], err)"
    )
    assert got[0] is True
    assert np.array_equal(np.asarray(got[1]), m1)
    assert got[2][0] == R_CLASS[pg.PyggmlrValueError]
    assert got[2][1].endswith("names must be NULL or one name per parameter, got numeric")


def test_history_with_a_metric_column_longer_than_its_epochs_is_refused_in_both():
    d = pg.ag_fit(pg.ag_linear(4, 2), _X, _Y, nepoch=1, batch_size=5, silent=True,
                  metrics=["auc"]).as_dict()  # fmt: skip
    d["auc"].append(0.8)
    h = pg.History.from_dict(d)
    with pytest.raises(pg.ArgumentError, match="metric columns are not numeric lists of one"):
        repr(h)
    got = r.run(
        _R_DATA + "h <- ag_fit(ag_linear(4, 2), x, y, nepoch = 1, batch_size = 5, silent = TRUE,\n"
        "            metrics = 'auc')\n"
        "h$auc <- c(h$auc, 0.8)\n"
        "tryCatch({ print(h); 'printed' }, error = function(e) class(e)[[1L]])"
    )
    assert got == R_CLASS[pg.ArgumentError]


def test_layers_take_plain_data_in_their_own_dtype():
    """Layers built in f64 while the default is f32 take plain data in their dtype (R refused them
    in batch norm, layer norm, attention and the recurrent layers; its linear and convolutions
    converted); ag_concat_rows takes the tensor operand's dtype; dropout's name is %.15g in both
    (R's followed options(digits))."""
    x = np.arange(1, 7).reshape(3, 2).T / 10  # R's matrix(1:6 / 10, 2)
    pg.ggml_set_seed(1)
    pg.ag_dtype("f64")
    try:
        layers = [pg.ag_batch_norm(2), pg.ag_layer_norm(2), pg.ag_multihead_attention(2, 1),
                  pg.ag_lstm(2, 3)]  # fmt: skip
    finally:
        pg.ag_dtype("f32")
    outs = []
    for layer in layers:
        o = layer(x)
        assert o.dtype == "f64"
        outs.append(o.numpy())
    cat = pg.ag_concat_rows(np.ones((1, 3)), pg.ag_tensor(np.full((2, 3), 2.0), dtype="f64"))
    got = r.run(
        "x <- matrix(1:6 / 10, 2); ggml_set_seed(1); ag_dtype('f64')\n"
        "ls <- list(ag_batch_norm(2), ag_layer_norm(2), ag_multihead_attention(2, 1), ag_lstm(2, 3))\n"
        "ag_dtype('f32')\n"
        "outs <- lapply(ls, function(l) { o <- l$forward(x); list(o$dtype, o$data) })\n"
        "cat <- ag_concat_rows(matrix(1, 1, 3), ag_tensor(matrix(2, 2, 3), dtype = 'f64'))\n"
        "old <- options(digits = 3); nm <- ag_dropout(0.123456789)$name; options(old)\n"
        "list(outs, cat$dtype, nm)"
    )
    for (dt, data), want in zip(got[0], outs):
        assert dt == "f64" and np.array_equal(np.asarray(data), want)  # bit for bit
    assert got[1] == cat.dtype == "f64"
    assert got[2] == pg.ag_dropout(0.123456789).name == "dropout(0.123456789)"


def test_training_utilities_alike():
    """length(loader) is its batches (R counted the environment's fields); ag_dataloader's and
    ag_gradcheck's arguments are in one order (R had seed before drop_last, Python rtol before
    verbose: ggmlR's order, rtol last); logical weights are refused in both (Python trained on
    them); ag_capture_step checks fn when made (R failed at the first step, unclassed); the
    probabilities of ag_predict(type = "prob") are the model's f32 values in both (R's were
    unrounded doubles)."""
    x = np.arange(1, 21).reshape(10, 2).T  # R's matrix(1:20, 2)
    dl = pg.ag_dataloader(x, None, 3, True, True, False, 7)
    assert len(dl) == 4 and dl.drop_last is False

    def fn(p):
        return pg.ag_sum(pg.ag_mul(p["a"], p["a"]))

    res = pg.ag_gradcheck(fn, {"a": pg.ag_param(np.ones((2, 2)))}, 1e-3, 1e-6, False, True, 0.01)
    assert bool(res) is True
    m = pg.ag_linear(4, 3)
    y = np.array([0.0, 1, 2, 0, 1])
    for kw in ({"sample_weight": [True, False, True, True, True]}, {"class_weight": [True, True, False]},
               {"class_weight": [[1.0, 2.0, 3.0]]}):  # fmt: skip
        with pytest.raises(pg.ArgumentError, match="must be numeric, got dtype bool|got shape"):
            pg.ag_fit(m, np.ones((4, 5)), y, nepoch=1, batch_size=5, silent=True, **kw)
    with pytest.raises(pg.ArgumentError, match="^ag_capture_step: fn must be a function$"):
        pg.ag_capture_step(3, optimizer=pg.optimizer_adam(m.parameters()))
    pg.ggml_set_seed(1)
    m = pg.ag_linear(3, 2)
    xp = np.arange(1, 16).reshape(5, 3).T / 10
    prob = pg.ag_predict(m, xp, type="prob", loss="cross_entropy")
    got = r.run(
        "dl <- ag_dataloader(matrix(1:20, 2), NULL, 3, TRUE, TRUE, FALSE, 7)\n"
        "g <- ag_gradcheck(function(p) ag_sum(ag_mul(p$a, p$a)), list(a = ag_param(matrix(1, 2, 2))),\n"
        "                  1e-3, 1e-6, FALSE, TRUE, 0.01)\n"
        "m <- ag_linear(4, 3); y <- c(0, 1, 2, 0, 1)\n"
        "cls <- function(e) tryCatch({ e; 'ok' }, error = function(e) class(e)[[1L]])\n"
        "w <- c(cls(ag_fit(m, matrix(1, 4, 5), y, nepoch = 1, batch_size = 5, silent = TRUE,\n"
        "                  sample_weight = c(TRUE, FALSE, TRUE, TRUE, TRUE))),\n"
        "       cls(ag_fit(m, matrix(1, 4, 5), y, nepoch = 1, batch_size = 5, silent = TRUE,\n"
        "                  class_weight = c(TRUE, TRUE, FALSE))),\n"
        "       cls(ag_fit(m, matrix(1, 4, 5), y, nepoch = 1, batch_size = 5, silent = TRUE,\n"
        "                  class_weight = matrix(c(1, 2, 3), 1))),\n"
        "       cls(ag_capture_step(3, optimizer = optimizer_adam(m))))\n"
        "ggml_set_seed(1); m2 <- ag_linear(3, 2)\n"
        "p <- ag_predict(m2, matrix(1:15, 3) / 10, type = 'prob', loss = 'cross_entropy')\n"
        "list(length(dl), dl$drop_last, g, w, p)"
    )
    assert got[0] == len(dl) and got[1] is False and got[2] is True
    assert list(got[3]) == [R_CLASS[pg.ArgumentError]] * 4
    assert np.array_equal(np.asarray(got[4]), prob.astype(np.float64))  # bit for bit


def test_none_is_the_default_for_attention_keys_and_layer_norm_size():
    x = np.arange(1, 7).reshape(3, 2).T / 10
    pg.ggml_set_seed(1)
    mha = pg.ag_multihead_attention(2, 1)
    want = mha(x, None).numpy()
    assert np.array_equal(want, mha(x).numpy())
    assert pg.ag_layer_norm(None, num_features=3).normalized_shape == 3
    got = r.run(
        "ggml_set_seed(1); m <- ag_multihead_attention(2, 1); x <- matrix(1:6 / 10, 2)\n"
        "list(m$forward(x, NULL)$data, ag_layer_norm(NULL, num_features = 3)$normalized_shape)"
    )
    assert np.array_equal(np.asarray(got[0]), want) and got[1] == 3


def test_loader_seed_and_anomaly_text_alike():
    """A loader's seed is the integer it seeds with; check_grad_anomaly writes each max_abs with
    4 significant digits (R's format() gave the column common digits)."""
    dl = pg.ag_dataloader(np.ones((2, 6)), seed=42.9)
    a, b = pg.ag_param(np.ones((1, 2))), pg.ag_param(np.ones((1, 2)))
    a.grad = np.array([[0.17702, np.inf]])
    b.grad = np.array([[0.02849, np.nan]])
    with pytest.raises(pg.PyggmlrValueError) as e:
        pg.check_grad_anomaly({"a": a, "b": b}, action="stop", max_abs=0.01)
    got = r.run(
        "dl <- ag_dataloader(matrix(1, 2, 6), seed = 42.9)\n"
        "a <- ag_param(matrix(1, 1, 2)); b <- ag_param(matrix(1, 1, 2))\n"
        "a$grad <- matrix(c(0.17702, Inf), 1); b$grad <- matrix(c(0.02849, NaN), 1)\n"
        "err <- tryCatch(check_grad_anomaly(list(a = a, b = b), action = 'stop', max_abs = 0.01),\n"
        "                error = function(e) conditionMessage(e))\n"
        "list(dl$seed, err)"
    )
    assert got[0] == dl.seed == 42
    assert "max_abs=0.177" in str(e.value) and got[1] == str(e.value)


def test_a_convolutions_bias_flag_has_one_name():
    """The flag a convolution keeps for its bias argument is use_bias in both languages (Python
    called it bias_flag)."""
    py = [pg.ag_conv2d(1, 2, 3, bias=b).use_bias for b in (True, False)]
    py += [pg.ag_conv_transpose2d(1, 2, 3, bias=b).use_bias for b in (True, False)]
    got = r.run(
        "c(sapply(c(TRUE, FALSE), function(b) ag_conv2d(1, 2, 3, bias = b)$use_bias),\n"
        "  sapply(c(TRUE, FALSE), function(b) ag_conv_transpose2d(1, 2, 3, bias = b)$use_bias))"
    )
    assert py == [True, False, True, False] == [bool(v) for v in got]


def test_a_compiled_step_prints_its_graph_summary_in_both():
    """repr() of a compiled step is the memory summary R's print() shows (Python printed the
    default object repr)."""
    x, y = np.linspace(0, 1, 12).reshape(3, 4).T, np.ones((1, 3))
    m = pg.ag_linear(4, 1)
    step = pg.ag_compile(lambda a, b: pg.ag_mse_loss(m(a), b), x, y,
                         optimizer=pg.optimizer_sgd(m.parameters(), lr=0.1))  # fmt: skip
    got = r.run(
        "m <- ag_linear(4, 1); x <- t(matrix(seq(0, 1, length.out = 12), 3, 4, byrow = TRUE))\n"
        "s <- ag_compile(function(a, b) ag_mse_loss(m$forward(a), b), x, matrix(1, 1, 3),\n"
        "                optimizer = optimizer_sgd(m$params(), lr = 0.1))\n"
        "paste(capture.output(print(s)), collapse = '\\n')"
    )
    assert repr(step).startswith("Compiled graph (opt): ") and repr(step) == got
