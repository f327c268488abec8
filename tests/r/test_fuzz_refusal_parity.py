"""Python and R refuse bad input alike (issue 29, hostile use round 3): the fuzzer of
tests/hostile/test_hostile_validators.py across both languages. Each public call of the table gets
plausible arguments; each argument in turn is replaced by each hostile value (None/NULL, a string,
TRUE, 2.5, -1, NaN, +/-Inf, 1e19, 2^31, a nested list, a numeric vector, a named list/dict, an
opaque object); both languages must accept, or both refuse with the same class (R_CLASS) and the
same text after _norm's language idioms, and R's refusal comes without a warning (as.integer's
"NAs introduced by coercion to integer range" leaked before it: issue 29). Two exemptions, both where R has no such value: an OS error
(Python's FileNotFoundError, R's pyggmlr_io_error) compares the class only, and Python's
refusal of a 0-d value ("got a scalar") needs only some classed refusal in R, whose 2.5 is a
length-1 vector. The R calls of a row run in one r.run."""

import re

import numpy as np
import pytest

from pyggmlr import r

if not r.available():
    pytest.skip(f"R bridge unavailable: {r.unavailable_reason()}", allow_module_level=True)

pytestmark = pytest.mark.parity  # embeds R (rpy2): not in the sanitized run, which cannot host R

from _rclass import R_CLASS  # noqa: E402

import pyggmlr as pg  # noqa: E402

NAN, INF = float("nan"), float("inf")

# (Python value, the R values it is compared with: -1 as both an integer and a double)
HOSTILE = [
    (None, ["NULL"]),
    ("x", ['"x"']),
    (True, ["TRUE"]),
    (2.5, ["2.5"]),
    (-1, ["-1L", "-1"]),
    (NAN, ["NaN"]),
    (INF, ["Inf"]),
    (-INF, ["-Inf"]),
    (10**19, ["1e19"]),
    (2**31, ["2^31"]),  # one past R's integers (as.integer() warned there: issue 29)
    ([1, [2]], ["list(1, list(2))"]),
    (np.array([1, 2]), ["c(1, 2)"]),
    ({"a": 1}, ["list(a = 1)"]),
    (object(), ["new.env()"]),
]


def _w():
    return pg.ag_param(np.ones((2, 2)))


def _sgd():
    return pg.optimizer_sgd([_w()])


def _seq():
    pg.ggml_set_seed(1)
    return pg.ag_sequential(pg.ag_linear(2, 3))


_W = "ag_param(matrix(1, 2, 2))"
_T = "ag_tensor(matrix(1, 2, 2))"
_SGD = f"optimizer_sgd(list({_W}))"
_SEQ = "{ggml_set_seed(1); ag_sequential(ag_linear(2, 3))}"
_X = np.ones((2, 4))
_XR = "matrix(1, 2, 4)"


def _py_r(v):
    """Python's plausible value written in R (the simple kinds)."""
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, str):
        return f'"{v}"'
    return repr(v)


def A(py, val, rexpr=None, rname=None, rnested=None, fuzz=True):
    """One argument: its Python name and plausible value (a callable: built fresh per call), its
    R expression (default: the value written in R), R name (default: the Python name) and, where
    Python's [1, [2]] means something else there, its R form (rnested); fuzz=False: kept
    plausible (a row about the other arguments)."""
    rx = _py_r(val) if rexpr is None else rexpr
    return (py, val, rx, rname or py.rstrip("_"), rnested, fuzz)


def _sched(fn, rfn, *args):
    return (fn, rfn, [A("optimizer", _sgd, _SGD), *args])


# fmt: off
ROWS = [  # (Python function, R function name, arguments)
    (pg.ag_linear, "ag_linear", [A("in_features", 2), A("out_features", 3), A("activation", None),
                                 A("init", "glorot_uniform"), A("gain", 1)]),
    (pg.ag_batch_norm, "ag_batch_norm", [A("num_features", 2), A("eps", 1e-5),
                                         A("momentum", 0.1)]),
    (pg.ag_layer_norm, "ag_layer_norm", [A("normalized_shape", 2), A("eps", 1e-5)]),
    (pg.ag_embedding, "ag_embedding", [A("vocab_size", 4), A("dim", 2)]),
    (pg.ag_multihead_attention, "ag_multihead_attention",
     [A("d_model", 4), A("n_heads", 2), A("dropout", 0.0)]),
    (pg.ag_dropout, "ag_dropout", [A("rate", 0.1)]),
    (pg.ag_slice_rows, "ag_slice_rows",
     [A("x", lambda: pg.ag_tensor(np.ones((2, 2))), _T), A("from_", 0), A("n", 1)]),
    (pg.ag_reshape, "ag_reshape",
     [A("x", lambda: pg.ag_tensor(np.ones((2, 2))), _T), A("nrow", 4), A("ncol", 1)]),
    (pg.ag_clamp, "ag_clamp",
     [A("x", lambda: pg.ag_tensor(np.ones((2, 2))), _T), A("lo", 0.0), A("hi", 1.0)]),
    (pg.ag_sum, "ag_sum", [A("x", lambda: pg.ag_tensor(np.ones((2, 2))), _T), A("dim", 1)]),
    (pg.ag_gather, "ag_gather", [A("x", lambda: pg.ag_tensor(np.ones((2, 2))), _T),
                                 A("index", lambda: np.array([0, 1]), "c(0, 1)")]),
    (pg.optimizer_sgd, "optimizer_sgd",
     [A("params", lambda: [_w()], f"list({_W})"), A("lr", 0.1), A("momentum", 0.5),
      A("accumulate_steps", 1), A("weight_decay", 0.0)]),
    (pg.optimizer_adam, "optimizer_adam",
     [A("params", lambda: [_w()], f"list({_W})"), A("lr", 0.1), A("beta1", 0.9),
      A("beta2", 0.99), A("eps", 1e-8), A("weight_decay", 0.0)]),
    (pg.clip_grad_norm, "clip_grad_norm",
     [A("params", lambda: [_w()], f"list({_W})"), A("max_norm", 1.0)]),
    (pg.clip_grad_value, "clip_grad_value",
     [A("params", lambda: [_w()], f"list({_W})"), A("clip_value", 1.0)]),
    (pg.check_grad_anomaly, "check_grad_anomaly",
     [A("params", lambda: [_w()], f"list({_W})"), A("action", "silent"), A("max_abs", 1.0)]),
    _sched(pg.lr_scheduler_step, "lr_scheduler_step", A("step_size", 2), A("gamma", 0.5)),
    _sched(pg.lr_scheduler_cosine, "lr_scheduler_cosine", A("T_max", 4), A("lr_min", 0.0),
           A("restart", False), A("T_mult", 1)),
    _sched(pg.lr_scheduler_cyclic, "lr_scheduler_cyclic", A("base_lr", 0.1), A("max_lr", 1.0),
           A("step_size_up", 2), A("mode", "triangular"), A("gamma", 1)),
    _sched(pg.lr_scheduler_onecycle, "lr_scheduler_onecycle", A("max_lr", 0.1),
           A("total_steps", 10), A("pct_start", 0.3), A("anneal_strategy", "cos"),
           A("cycle_momentum", True)),
    _sched(pg.lr_scheduler_warmup_cosine, "lr_scheduler_warmup_cosine", A("warmup_steps", 1),
           A("total_steps", 4), A("lr_min", 0.0)),
    _sched(pg.lr_scheduler_warmup, "lr_scheduler_warmup", A("warmup_steps", 2),
           A("start_factor", 0.0)),
    (pg.ag_early_stopping, "ag_early_stopping",
     [A("patience", 2), A("min_delta", 0.0), A("restore_best", True), A("monitor", None)]),
    (pg.ag_model_checkpoint, "ag_model_checkpoint", [A("path", "m.st"), A("every", 1)]),
    (pg.ag_dataloader, "ag_dataloader",
     [A("x", lambda: _X, _XR), A("batch_size", 2), A("shuffle", False), A("col_major", True),
      A("drop_last", True)]),
    (pg.ag_predict, "ag_predict",
     [A("model", _seq, _SEQ), A("x", lambda: _X, _XR), A("batch_size", 2)]),
    (pg.ag_accuracy, "ag_accuracy",
     [A("model", _seq, _SEQ), A("x", lambda: _X, _XR), A("y", lambda: [0, 1, 2, 0], "c(0, 1, 2, 0)")]),
    (pg.ag_estimate_training_memory, "ag_estimate_training_memory",
     [A("shapes", lambda: [(2, 2)], "list(c(2, 2))", rnested="list(1, 2)"),  # two shapes
      A("batch_size", 2),
      A("activation_frac", 0.01), A("quiet", True)]),
    (pg.ag_device, "ag_device", [A("device", "cpu")]),
    (pg.ag_matmul_precision, "ag_matmul_precision", [A("precision", "default")]),
    (pg.ag_tensor, "ag_tensor", [A("data", lambda: np.ones((2, 2)), "matrix(1, 2, 2)"),
                                 A("device", "cpu")]),
    # calls the Python-only fuzzer lacks
    (pg.ag_conv2d, "ag_conv2d",
     [A("in_channels", 1), A("out_channels", 2), A("kernel_size", 3), A("stride", 1),
      A("padding", 0), A("dilation", 1), A("groups", 1), A("bias", True)]),
    (pg.ag_conv1d, "ag_conv1d",
     [A("in_channels", 1), A("out_channels", 2), A("kernel_size", 3), A("stride", 1),
      A("padding", 0)]),
    (pg.ag_max_pool2d, "ag_max_pool2d", [A("kernel_size", 2), A("stride", None), A("padding", 0)]),
    (pg.ag_avg_pool2d, "ag_avg_pool2d", [A("kernel_size", 2), A("stride", None), A("padding", 0)]),
    (pg.ag_lstm, "ag_lstm",
     [A("input_size", 2), A("hidden_size", 3), A("num_layers", 1), A("bias", True),
      A("dropout", 0.0), A("bidirectional", False), A("return_sequences", False)]),
    (pg.ag_gru, "ag_gru",
     [A("input_size", 2), A("hidden_size", 3), A("num_layers", 1), A("dropout", 0.0)]),
    (pg.ag_set_threads, "ag_set_threads", [A("n", 1)]),
    (pg.ggml_set_seed, "ggml_set_seed", [A("seed", 1)]),
    (pg.ag_fit, "ag_fit",
     [A("model", _seq, _SEQ), A("x", lambda: _X, _XR), A("y", lambda: [0, 1, 2, 0], "c(0, 1, 2, 0)"),
      A("loss", "cross_entropy"), A("optimizer", "sgd"), A("nepoch", 1), A("batch_size", 2),
      A("nbatch_logical", None), A("val_split", 0.0), A("shuffle", False), A("silent", True),
      A("seed", 1), A("lr", 0.01), A("progress", "none"), A("verbose", None)]),
    (pg.ag_evaluate, "ag_evaluate",
     [A("model", _seq, _SEQ), A("x", lambda: _X, _XR), A("y", lambda: [0, 1, 2, 0], "c(0, 1, 2, 0)"),
      A("batch_size", 2), A("loss", "cross_entropy")]),
    (pg.ag_save_model, "ag_save_model",  # in a fresh working directory (the fixture below)
     [A("model", _seq, _SEQ), A("path", "m.safetensors"), A("epoch", None)]),
    (pg.ag_load_model, "ag_load_model",  # m0.safetensors: saved by the fixture
     [A("path", "m0.safetensors"), A("model", _seq, _SEQ), A("device", None), A("dtype", None)]),
    # issue 29, round 4: the numbers of the remaining layers, schedulers, gradcheck, dp_train
    (pg.ag_conv_transpose2d, "ag_conv_transpose2d",
     [A("in_channels", 1), A("out_channels", 2), A("kernel_size", 3), A("stride", 1),
      A("padding", 0), A("output_padding", 0), A("groups", 1), A("dilation", 1)]),
    (pg.ag_conv_transpose1d, "ag_conv_transpose1d",
     [A("in_channels", 1), A("out_channels", 2), A("kernel_size", 3), A("stride", 1),
      A("padding", 0), A("output_padding", 0)]),
    (pg.ag_max_pool1d, "ag_max_pool1d", [A("kernel_size", 2), A("stride", None), A("padding", 0)]),
    (pg.ag_avg_pool1d, "ag_avg_pool1d", [A("kernel_size", 2), A("stride", None), A("padding", 0)]),
    (pg.ag_pad2d, "ag_pad2d", [A("padding", 1), A("value", 0.0), A("mode", "constant")]),
    (pg.ag_pad1d, "ag_pad1d", [A("padding", 1), A("value", 0.0), A("mode", "constant")]),
    (pg.ag_upsample2d, "ag_upsample2d", [A("scale_factor", 2), A("mode", "nearest")]),
    (pg.ag_upsample1d, "ag_upsample1d", [A("scale_factor", 2), A("mode", "nearest")]),
    (pg.ag_rnn, "ag_rnn",
     [A("input_size", 2), A("hidden_size", 3), A("num_layers", 1), A("dropout", 0.0),
      A("nonlinearity", "tanh")]),
    _sched(pg.lr_scheduler_cyclic, "lr_scheduler_cyclic", A("base_lr", 0.1), A("max_lr", 1.0),
           A("step_size_up", 2), A("step_size_down", 2)),
    _sched(pg.lr_scheduler_onecycle, "lr_scheduler_onecycle", A("max_lr", 0.1),
           A("total_steps", 10), A("div_factor", 25), A("final_div_factor", 1e4)),
    (pg.ag_gradcheck, "ag_gradcheck",
     [A("fn", lambda: (lambda d: pg.ag_sum(d["w"])), "function(d) ag_sum(d$w)", fuzz=False),
      A("inputs", lambda: {"w": pg.ag_param(np.ones((2, 2)))},
        "list(w = ag_param(matrix(1, 2, 2)))", fuzz=False),
      A("eps", 1e-3), A("atol", 1e-2), A("rtol", 1e-2), A("quiet", True)]),
    (pg.ag_estimate_training_memory, "ag_estimate_training_memory",
     [A("model", _seq, _SEQ), A("input_shape", 2), A("batch_size", 2), A("quiet", True)]),
    (pg.dp_train, "dp_train",
     [A("make_model", lambda: (lambda: pg.ag_sequential(pg.ag_linear(2, 2))),
        "function() ag_sequential(ag_linear(2, 2))", fuzz=False),
      A("data", lambda: [np.zeros((2, 1))], "list(matrix(0, 2, 1))", fuzz=False),
      A("loss_fn", lambda: (lambda o, s: pg.ag_sum(o)), "function(o, s) ag_sum(o)"),
      A("n_replicas", 1), A("n_iter", 1), A("lr", 0.01), A("max_norm", 1.0),
      A("verbose", False)]),
]
# fmt: on


# ---------------------------------------------------------------------------------------------
# running a row in both languages

# a refused call's warnings come back too ("NAs introduced by coercion to integer range" before
# the refusal: issue 29); an accepted call's are muffled
_R_ONE = """{{ .w <- character(); tryCatch(withCallingHandlers({{ {call}; c("none", "", "") }},
  warning = function(w) {{ .w <<- c(.w, conditionMessage(w)); invokeRestart("muffleWarning") }}),
  error = function(e) c(class(e)[[1L]], .called(e, "{rfn}"), paste(.w, collapse = " | "))) }}"""
# an error raised with the user-facing call (ggmlR's stop() in a scheduler: "Error in
# lr_scheduler_step(...) : step_size must be >= 1") names the function as Python's "fn: " does
_R_CALLED = """.called <- function(e, fn) {
  m <- conditionMessage(e); cl <- conditionCall(e)
  if (is.call(cl) && identical(deparse(cl[[1L]]), fn) && !startsWith(m, fn)) paste0(fn, ": ", m)
  else m
}
"""
_RESET = 'ag_device("cpu"); ag_matmul_precision("default"); '


def _py_outcome(fn, kw):
    try:
        with np.errstate(all="ignore"):
            fn(**kw)
    except OSError:  # R's pyggmlr_io_error; each language words the OS's reason its own way
        return ("pyggmlr_io_error", None)
    except Exception as e:  # noqa: BLE001  (anything not typed is itself a drift)
        return (R_CLASS.get(type(e), type(e).__name__), str(e))
    finally:
        pg.ag_device("cpu")
        pg.ag_matmul_precision("default")
    return ("none", "")


def _plausible(args):
    return {py: (v() if callable(v) else v) for py, v, *_ in args}


def _r_calls(rfn, args):
    """Each (argument index, hostile index, R expression) and the R call text."""
    out = []
    for i, (_, _, _, _, rnested, fuzz) in enumerate(args):
        for h, (_, rvals) in enumerate(HOSTILE if fuzz else []):
            for rv in rvals:
                rv = rnested if rnested and rv == "list(1, list(2))" else rv
                parts = [f"{a[3]} = {rv if j == i else a[2]}" for j, a in enumerate(args)]
                out.append((i, h, rv, f"{rfn}({', '.join(parts)})"))
    return out


def _r_outcomes(rfn, calls):
    body = ",\n".join(_R_ONE.format(call=c, rfn=rfn) for *_, c in calls)
    got = r.run(f"{_R_CALLED}on.exit({{{_RESET}}}); unlist(list({body}))")
    got = list(got)
    return [(got[3 * k], got[3 * k + 1], got[3 * k + 2]) for k in range(len(calls))]


# ---------------------------------------------------------------------------------------------
# the language idioms a message may differ by (and nothing else)

# Python names the type, or numpy's dtype of what np.asarray made of the value (None, a dict, an
# object: dtype object; "x": <U1), where R names the class
_PY_TYPES = "NoneType|str|bool|float|int|list|ndarray|dict|object|dtype object|dtype <U1"
_R_TYPES = "NULL|character|logical|numeric|double|integer|list|environment"
_IDIOMS = [("None", "NULL"), ("True", "TRUE"), ("False", "FALSE"), ("inf", "Inf"), ("nan", "NaN")]


def _py_shows(v):
    """How Python's messages show the hostile value v."""
    shows = [repr(v)] if isinstance(v, str) else [repr(v), str(v)]
    if isinstance(v, np.ndarray):
        shows += ["[1 2]", "[1, 2]"]  # (its str; its tolist())
    if isinstance(v, int) and abs(v) > 2**53:  # the core shows a double
        shows += [f"{v:.0e}"]  # 1e+19
    if type(v) is object:  # (a regular expression: the address differs per run)
        shows += [re.escape("<object object at ") + "0x[0-9a-f]+>"]
    return shows


def _r_shows(rv):
    """How R's messages show the R value rv (its deparse)."""
    shows = {"-1L": ["-1L", "-1"], "1e19": ["1e+19"], "2^31": ["2147483648"]}
    return {**shows, "new.env()": ["<environment>"]}.get(rv, [rv])


def _positions(msg):
    """R's 1-based positions and shape numbers as Python's 0-based ones."""
    return re.sub(r"\b(position|shape) (\d+)\b", lambda m: f"{m[1]} {int(m[2]) - 1}", msg)


def _norm(msg, shows, types):
    """msg with only the languages' idioms made alike (everything else must match):
    - the hostile value's display (shows: Python's repr, R's deparse) as <v>, and the type or
      class a message names before or instead of it ("got str 'x'", "got character") too;
    - a quoted name ('cpu' / "cpu"), None / NULL, True / TRUE, False / FALSE, inf / Inf,
      nan / NaN (_IDIOMS);
    - a pair (H, W) / c(H, W), a transpose x.T / t(x), a callable( / a function(, a file name
      (str, bytes or os.PathLike) / (a single string).
    R's positions and shape numbers count from 1 (_positions), and an R condition raised with
    the user-facing call names the function as Python's "fn: " prefix does (_R_CALLED)."""

    def idioms(t):
        t = re.sub(r"'(\w*)'", r'"\1"', t)  # a name in quotes: Python's 'cpu', R's "cpu"
        t = re.sub(r"\bc\(([A-Z](?:, [A-Z])*)\)", r"(\1)", t)  # a pair: R's c(H, W)
        # a shape's names: R's c(left, right), c(features); Python's (left, right), (features,)
        t = re.sub(r"\bc\(([a-z]+(?:, [a-z]+)*)\)", r"(\1)", t)
        t = re.sub(r"\(([a-z]+),\)", r"(\1)", t)
        t = re.sub(r" ?= ?", "=", t)  # an argument given: Python's x=, R's x =
        t = re.sub(r"\bt\((\w)\)", r"\1.T", t)  # a transpose: R's t(x), Python's x.T
        t = t.replace("a function(", "a callable(")  # what can be called
        # what a file name is: R's one string, Python's str / bytes / os.PathLike
        t = t.replace("(a single string)", "(str, bytes or os.PathLike)")
        for py, rr in _IDIOMS:
            t = re.sub(rf"\b{py}\b", rr, t)
        return t

    msg, shows = idioms(msg), [idioms(s) for s in shows]
    for s in sorted(set(shows), key=len, reverse=True):
        pat = s if s.startswith(re.escape("<object")) else re.escape(s)
        msg = re.sub(r"(?<![\w.])" + pat + r"(?![\w(])", "<v>", msg)
    return re.sub(rf"\bgot (?:an? )?(?:{types})(?: <v>)?(?![\w(])", "got <v>", msg)


def _drifts(fn, rfn, args):
    calls = _r_calls(rfn, args)
    rgot = _r_outcomes(rfn, calls)
    out = []
    cache = {}
    for (i, h, rv, rcall), (rcls, rmsg, rwarn) in zip(calls, rgot):
        if rwarn:  # a refusal is the classed condition alone
            out.append(f"{rcall}\n    R warned before refusing ({rcls}): {rwarn}")
        if (i, h) not in cache:
            kw = _plausible(args)
            kw[args[i][0]] = HOSTILE[h][0]
            cache[(i, h)] = _py_outcome(fn, kw)
        pcls, pmsg = cache[(i, h)]
        if pmsg is None and pcls == rcls:
            continue  # an OS error: the class is compared, each language words the OS's reason
        if pmsg is not None and pmsg.endswith(", got a scalar") and rcls.startswith("pyggmlr_"):
            # a 0-d value (2.5, "x"), which R lacks: its 2.5 is a length-1 vector, a 1x1 matrix,
            # its "x" one label, so a later check refuses it there
            continue
        pn = _norm(pmsg, _py_shows(HOSTILE[h][0]), _PY_TYPES)
        rn = _norm(_positions(rmsg), _r_shows(rv), _R_TYPES)
        if pcls != rcls or pn != rn:
            out.append(f"{rcall}\n    Python: {pcls}: {pmsg}\n    R:      {rcls}: {rmsg}")
    return out


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    """A fresh working directory (R's too: one process) holding a saved model m0.safetensors."""
    monkeypatch.chdir(tmp_path)
    pg.ag_save_model(_seq(), "m0.safetensors")


@pytest.mark.parametrize("row", ROWS, ids=[r_ for _, r_, _ in ROWS])
def test_hostile_arguments_are_refused_alike(row, in_tmp):
    fn, rfn, args = row
    drifts = _drifts(fn, rfn, args)
    assert not drifts, f"{len(drifts)} drift(s):\n" + "\n".join(drifts)
