"""Utilities that gave different results, refusals or texts in Python and R (each confirmed by
running both languages), now alike: dp_train's loss history with 3+ replicas (numpy's mean differed
from R's mean() in the last bit), its progress line and ag_gradcheck's line for a non-finite
value (nan / inf against R's NaN / Inf), ag_gradcheck's and ag_compile's argument checks,
ag_capture's refusals and results (None read as NaN, a plain number refused, a "lossx" element
taken for "loss" by R's partial matching), a compiled step's input number, the distributed
helpers' refusals (R's distributed-error class; a string walked as a list) and a missing
argument of the gradient helpers (R's unclassed error)."""

import numpy as np
import pytest

from pyggmlr import r

if not r.available():
    pytest.skip(f"R bridge unavailable: {r.unavailable_reason()}", allow_module_level=True)

pytestmark = pytest.mark.parity  # embeds R (rpy2): not in the sanitized run, which cannot host R

from _rclass import R_CLASS, same_refusal  # noqa: E402

import pyggmlr as pg  # noqa: E402


def _r_err(code):
    """[class, message] of the error R's code raises (["none", ""] when it raises none)."""
    return list(r.run(
        f"tryCatch({{ {code}; c('none', '') }},\n"
        "         error = function(e) c(class(e)[[1L]], conditionMessage(e)))"
    ))  # fmt: skip


def _py_err(fn):
    with pytest.raises(pg.PyggmlrError) as e:
        fn()
    return [R_CLASS[type(e.value)], str(e.value)]


def _r_out(code):
    """What R's code prints (lines joined by newlines)."""
    return r.run(f"paste(capture.output({code}), collapse = '\\n')")


@pytest.fixture
def f64():
    old = pg.ag_dtype()
    pg.ag_dtype("f64")
    r.run("ag_dtype('f64')")
    yield
    pg.ag_dtype(old)
    r.run(f"ag_dtype('{old}')")


# ---- 1. dp_train's loss history with 3 replicas: R's mean() in both, bit for bit --------------


def test_dp_train_loss_history_with_three_replicas_is_r_mean_to_the_bit(f64):
    rs = np.random.RandomState(5)
    A = rs.standard_normal((21, 4))
    data = [A[3 * i : 3 * i + 3] for i in range(7)]
    pg.ggml_set_seed(11)
    res = pg.dp_train(lambda: pg.ag_linear(3, 1), data,
                      loss_fn=lambda o, s: pg.ag_mean(pg.ag_mul(o, o)), n_replicas=3,
                      n_iter=200, verbose=0, lr=0.001)  # fmt: skip
    got = np.asarray(r.run(
        "data <- lapply(1:7, function(i) A[((i - 1) * 3 + 1):(i * 3), , drop = FALSE])\n"
        "set.seed(11)\n"
        "dp_train(function() ag_linear(3, 1), data, loss_fn = function(o, s) ag_mean(ag_mul(o, o)),\n"
        "         n_replicas = 3, n_iter = 200, verbose = 0, lr = 0.001)$loss_history", A=A
    ))  # fmt: skip
    assert res["loss_history"].tobytes() == got.astype(np.float64).tobytes()


def test_the_core_mean_is_r_mean():
    from pyggmlr._core import ffi, lib

    for v in ([0.1, 0.2, 0.3], [1e16, 1.0, -1e16, 3.0], [0.7] * 3 + [1 / 3] * 4, [np.inf, 1.0],
              [np.inf, -np.inf], [5.0]):  # fmt: skip
        a = np.ascontiguousarray(v, dtype=np.float64)
        mine = lib.pg_mean_r(ffi.cast("const double *", ffi.from_buffer(a)), len(a))
        want = r.run("mean(v)", v=a)
        assert np.float64(mine).tobytes() == np.float64(want).tobytes(), v
    assert np.isnan(lib.pg_mean_r(ffi.NULL, 0))


# ---- 2, 3. NaN / Inf printed as R prints them -------------------------------------------------


def test_dp_train_progress_line_prints_nan_as_r(capsys):
    data = [np.full((2, 1), np.nan)]
    pg.dp_train(lambda: pg.ag_linear(2, 1), data, n_iter=1, verbose=1,
                loss_fn=lambda o, s: pg.ag_mean(o))  # fmt: skip
    py = capsys.readouterr().out.rstrip("\n")
    got = _r_out("invisible(dp_train(function() ag_linear(2, 1), list(matrix(NaN, 2, 1)), "
                 "n_iter = 1, verbose = 1, loss_fn = function(o, s) ag_mean(o)))")  # fmt: skip
    assert py == got == "[dp_train] iter    1 / 1  loss = NaN"


def test_gradcheck_line_of_an_unused_input_prints_inf_as_r(capsys):
    a, b = pg.ag_param(np.ones((1, 1))), pg.ag_param(np.ones((1, 1)))
    pg.ag_gradcheck(lambda i: pg.ag_sum(i["a"]), {"a": a, "b": b})
    py = capsys.readouterr().out.rstrip("\n")
    got = _r_out("invisible(ag_gradcheck(function(i) ag_sum(i$a), list(a = ag_param(matrix(1)), "
                 "b = ag_param(matrix(1)))))")  # fmt: skip
    assert py == got
    assert "[gradcheck] 'b': max_err = Inf  FAIL" in py.splitlines()


# ---- 4, 11. ag_gradcheck's and ag_compile's argument checks: fn first, one text ---------------


@pytest.mark.parametrize(
    "py, rcode, want_py, want_r",
    [
        (lambda: pg.ag_gradcheck(1, 2), "ag_gradcheck(1, 2)",
         "ag_gradcheck(): fn must be a function, got int",
         "ag_gradcheck(): fn must be a function, got numeric"),
        (lambda: pg.ag_gradcheck(lambda i: i, 2), "ag_gradcheck(function(i) i, 2)",
         "ag_gradcheck(): inputs must be a named list, got int",
         "ag_gradcheck(): inputs must be a named list, got numeric"),
        (lambda: pg.ag_compile(1), "ag_compile(1)",
         "ag_compile(): fn must be a function, got int",
         "ag_compile(): fn must be a function, got numeric"),
        (lambda: pg.ag_compile(lambda x: x, build="x"), "ag_compile(function(x) x, build = 'x')",
         "ag_compile(): build must be \"opt\", \"grad\" or \"forward\", got 'x'",
         "ag_compile(): build must be \"opt\", \"grad\" or \"forward\", got \"x\""),
    ],
    ids=["gradcheck fn", "gradcheck inputs", "compile fn", "compile build"],
)  # fmt: skip
def test_gradcheck_and_compile_refusals(py, rcode, want_py, want_r):
    got_py, got_r = _py_err(py), _r_err(rcode)
    assert got_py[1] == want_py and got_r[1] == want_r
    assert got_py[0] == got_r[0]


# ---- 5-9. ag_capture and ag_capture_step ------------------------------------------------------


def test_capture_of_a_non_function_is_ggmlrs_stopifnot_text():
    want = "ag_capture: is.function(fn) is not TRUE (got 1)"
    assert (
        _py_err(lambda: pg.ag_capture(1))
        == _r_err("ag_capture(1)")
        == [R_CLASS[pg.ArgumentError], want]
    )


def test_captured_function_refuses_none_up_front():
    calls = []
    f = pg.ag_capture(lambda x: calls.append(x) or x)
    py = _py_err(lambda: f(x=None))
    got = _r_err("f <- ag_capture(function(x) x); f(x = NULL)")
    assert calls == []  # fn never ran (None was a NaN tensor)
    assert py == [
        R_CLASS[pg.ArgumentError],
        "ag_capture: argument 'x' must be numeric (a matrix or a vector), got NoneType",
    ]
    assert got == [
        R_CLASS[pg.ArgumentError],
        "ag_capture: argument 'x' must be numeric (a matrix or a vector), got NULL",
    ]
    # a string is no number either (Python read "1" as 1.0)
    assert _py_err(lambda: f(x="1"))[1].endswith("got str")


def test_captured_function_returning_a_plain_number_gives_a_1x1_matrix():
    out = pg.ag_capture(lambda x: 3.0)(x=np.ones((2, 1)))  # Python: TypeError (not iterable)
    assert isinstance(out, np.ndarray) and out.shape == (1, 1) and out[0, 0] == 3.0
    got = list(
        r.run("out <- ag_capture(function(x) 3)(x = c(1, 1)); c(is.matrix(out), dim(out), out)")
    )
    assert got == [1.0, 1.0, 1.0, 3.0]  # R: list(3)
    # a list of outputs stays a list in both
    assert pg.ag_capture(lambda x: [x])(x=np.ones((2, 1)))[0].shape == (2, 1)
    assert r.run("is.list(ag_capture(function(x) list(x))(x = c(1, 1)))") is True


def test_capture_step_takes_the_element_named_loss_exactly():
    w = pg.ag_param(np.ones((2, 1)))
    step = pg.ag_capture_step(lambda x: {"lossx": pg.ag_sum(pg.ag_mul(w, x))},
                              optimizer=pg.optimizer_adam([w]))  # fmt: skip
    want = "ag_capture_step: fn must return the loss, or a named list with an element 'loss'"
    assert _py_err(lambda: step(x=np.ones((2, 1)))) == [R_CLASS[pg.PyggmlrValueError], want]
    got = r.run(
        "w <- ag_param(matrix(1, 2, 1))\n"
        "s <- ag_capture_step(function(x) list(lossx = ag_sum(ag_mul(w, x))),\n"
        "                     optimizer = optimizer_adam(list(w)))\n"
        "e <- tryCatch({ s(x = c(1, 1)); c('none', '') },\n"
        "              error = function(e) c(class(e)[[1L]], conditionMessage(e)))\n"
        "c(e, as.vector(w$data))"
    )  # R's res$loss took lossx and trained
    assert list(got) == [R_CLASS[pg.PyggmlrValueError], want, "1", "1"]


def test_capture_set_refuses_none_naming_what_was_given():
    w = pg.ag_param(np.ones((2, 1)))
    step = pg.ag_capture_step(lambda x: pg.ag_sum(pg.ag_mul(w, x)),
                              optimizer=pg.optimizer_adam([w]), max_grad_norm=1.0)  # fmt: skip
    py = _py_err(lambda: pg.ag_capture_set(step, None))
    got = _r_err("w <- ag_param(matrix(1, 2, 1))\n"
                 "s <- ag_capture_step(function(x) ag_sum(ag_mul(w, x)), "
                 "optimizer = optimizer_adam(list(w)), max_grad_norm = 1)\n"
                 "ag_capture_set(s, NULL)")  # fmt: skip
    text = "ag_capture_set: max_grad_norm must be one positive finite number, got "
    assert py == [R_CLASS[pg.PyggmlrValueError], text + "None"]
    assert got == [R_CLASS[pg.PyggmlrValueError], text + "NULL"]


# ---- 10. a compiled step names the input it refuses -------------------------------------------


@pytest.mark.parametrize("py_v, r_v", [("a", '"a"'), (None, "NULL")], ids=["string", "null"])
def test_compiled_step_names_the_refused_input(py_v, r_v):
    step = pg.ag_compile(lambda x: pg.ag_sum(x), np.ones((2, 1)), build="forward")
    py = _py_err(lambda: step(py_v))
    got = _r_err(f"s <- ag_compile(function(x) ag_sum(x), matrix(1, 2, 1), build = 'forward'); "
                 f"s({r_v})")  # fmt: skip
    head = "compiled step: input 1: expected a numeric matrix, vector or ag_tensor, got "
    assert py[1].startswith(head) and got[1].startswith(head), (py, got)
    assert py[0] == got[0]


# ---- 12. the distributed helpers' refusals ----------------------------------------------------


@pytest.mark.parametrize(
    "py, rcode, want_py, want_r",
    [
        (lambda: pg.ag_parameters_spread(1), "ag_parameters_spread(1)",
         "ag_parameters_spread: expected a model, a list of ag_tensors or an ag_tensor, got int",
         "ag_parameters_spread: expected a model, a list of ag_tensors or an ag_tensor, got numeric"),
        (lambda: pg.ag_parameters_spread("a"), "ag_parameters_spread('a')",
         "ag_parameters_spread: expected a model, a list of ag_tensors or an ag_tensor, got str",
         "ag_parameters_spread: expected a model, a list of ag_tensors or an ag_tensor, got character"),
        (lambda: pg.ag_parameters_spread([pg.ag_param(np.ones((1, 1))), 2]),
         "ag_parameters_spread(list(ag_param(matrix(1)), 2))",
         "ag_parameters_spread: parameter 2 is not an ag_tensor",
         "ag_parameters_spread: parameter 2 is not an ag_tensor"),
        (lambda: pg.ag_allreduce_gradients(1), "ag_allreduce_gradients(1)",
         "ag_allreduce_gradients: expected a model, a list of ag_tensors or an ag_tensor, got int",
         "ag_allreduce_gradients: expected a model, a list of ag_tensors or an ag_tensor, got "
         "numeric"),
        (lambda: pg.ag_allreduce_gradients(pg.ag_linear(2, 1), 5),
         "ag_allreduce_gradients(ag_linear(2, 1), 5)",
         "ag_allreduce_gradients: grads must be the map returned by backward() or None, got int",
         "ag_allreduce_gradients: grads must be the environment returned by backward() or NULL, "
         "got numeric"),
    ],
    ids=["spread number", "spread string", "spread entry", "allreduce number", "allreduce grads"],
)  # fmt: skip
def test_distributed_refusals_are_argument_errors(py, rcode, want_py, want_r):
    pytest.importorskip("mpi4py")
    got_py, got_r = _py_err(py), _r_err(rcode)
    assert got_py == [R_CLASS[pg.ArgumentError], want_py]
    assert got_r == [R_CLASS[pg.ArgumentError], want_r]


# ---- 13. a missing argument of the gradient helpers -------------------------------------------


@pytest.mark.parametrize(
    "py, rcode, want_py, want_r",
    [
        (lambda w: pg.clip_grad_norm([w]), "clip_grad_norm(list(w))",
         [pg.ArgumentError, "clip_grad_norm: max_norm must be a number, got NoneType"],
         [pg.ArgumentError, "clip_grad_norm: max_norm must be a number, got NULL"]),
        (lambda w: pg.clip_grad_value([w]), "clip_grad_value(list(w))",
         [pg.PyggmlrValueError,
          "clip_grad_value: clip_value must be a single positive finite number, got None"],
         [pg.PyggmlrValueError,
          "clip_grad_value: clip_value must be a single positive finite number, got NULL"]),
        (None, "clip_grad_norm(max_norm = 1)", None,
         [pg.ArgumentError, 'clip_grad_norm: argument "params" is missing, with no default']),
        (None, "clip_grad_value(clip_value = 1)", None,
         [pg.ArgumentError, 'clip_grad_value: argument "params" is missing, with no default']),
        (None, "check_grad_anomaly()", None,
         [pg.ArgumentError, 'check_grad_anomaly: argument "params" is missing, with no default']),
    ],
    ids=["norm max_norm", "value clip_value", "norm params", "value params", "anomaly params"],
)  # fmt: skip
def test_a_missing_argument_is_a_classed_refusal(py, rcode, want_py, want_r):
    got = _r_err("w <- ag_param(matrix(1)); " + rcode)
    assert got == [R_CLASS[want_r[0]], want_r[1]]  # R: an unclassed "argument ... is missing"
    if py is not None:
        assert _py_err(lambda: py(pg.ag_param(np.ones((1, 1))))) == [
            R_CLASS[want_py[0]],
            want_py[1],
        ]


# ---- 14. dp_train refuses an array as its data up front ---------------------------------------


def test_dp_train_refuses_an_array_as_data():
    calls = []

    def make():
        calls.append(1)
        return pg.ag_linear(2, 1)

    py = _py_err(lambda: pg.dp_train(make, np.ones((4, 2)), verbose=0))
    got = _r_err("dp_train(function() ag_linear(2, 1), matrix(1, 4, 2), verbose = 0)")
    assert calls == []  # Python read the rows as samples and failed in the forward pass
    assert py == [
        R_CLASS[pg.ArgumentError],
        "dp_train: data must be a list of samples, got ndarray",
    ]
    assert got == [
        R_CLASS[pg.ArgumentError],
        "dp_train: data must be a list of samples, got matrix",
    ]


@pytest.mark.parametrize(
    "py_kw, r_args",
    [
        ({"min": None}, "min = NULL"),
        ({"max": "2"}, 'max = "2"'),
        ({"mean": [1, None]}, "mean = list(1, NULL)"),
        ({"sd": None}, "sd = NULL"),
    ],
)
def test_draw_parameters_that_are_not_numbers_are_refused_as_r(py_kw, r_args):
    """R's runif / rnorm refuse NULL and text parameters ("invalid arguments"); Python read None
    as NaN (with an "NAs produced" warning) and "2" as 2. Both refuse now, before any draw."""
    fn = "runif" if {"min", "max"} & set(py_kw) else "rnorm"
    g = pg.random.Generator(5)
    with pytest.raises(pg.PyggmlrValueError, match=f"^{fn}: {next(iter(py_kw))} must be numbers"):
        getattr(g, fn)(3, **py_kw)
    after = float(g.runif(1)[0])
    assert after == float(pg.random.Generator(5).runif(1)[0])  # no draw was made
    got = r.run(
        f"set.seed(5); e <- tryCatch({fn}(3, {r_args}), error = function(e) conditionMessage(e));"
        ' c(e, sprintf("%.17g", runif(1)))'
    )
    assert got[0] == "invalid arguments" and float(got[1]) == after


@pytest.mark.parametrize(
    "py_v, r_v, py_got, r_got",
    [
        (np.ones((2, 2)), "matrix(1, 2, 2)", "a [2x2] matrix", None),
        (np.ones((2, 2, 2)), "array(1, c(2, 2, 2))", "a [2x2x2] array", None),
        ("a", '"a"', "str 'a'", '"a"'),
    ],
)
def test_normalization_refusal_shows_a_matrix_by_its_shape(py_v, r_v, py_got, r_got):
    """ag_normalization's refused mean: a matrix is shown by its shape in both languages (Python
    showed the shape as a list, R deparsed every value); a scalar as each language shows it."""
    text = "ag_normalization: mean must be a non-empty numeric vector (one value per feature), got "
    same_refusal(
        lambda: pg.ag_normalization(mean=py_v, variance=[1.0]),
        f"ag_normalization(mean = {r_v}, variance = 1)",
        pg.ArgumentError,
        text + py_got,
        text + (r_got or py_got),
    )
