"""Cases whose two sides are separate programs (ScriptCase; the R halves are models.R): a
hand-written training loop, ag_fit (the whole loop per epoch: history row, per-batch losses,
weights; then ag_predict and buffers; accumulation, validation split, SGD/AdamW, schedules)
and dp_train (2 replicas); the models they share."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from pyggmlr.fit.history import _KEYS

from .cases_api import _mlp_inputs
from .core import CASES, ScriptCase, _u, as_dtype, call_r, r_values, with_dtype

# ---- a training loop written in R vs the same loop in Python ---------------------------------

MLP = ("W1", "b1", "W2", "b2")


def r_record(dtype, rec):
    """An R record: length-1 values as 1-element arrays, the others in the dtype."""
    return {k: (np.array([v]) if np.ndim(v) == 0 else as_dtype(v, dtype)) for k, v in rec.items()}


def _script_mlp_py(d, steps, dtype):
    import pyggmlr as pg

    def run():
        p = {k: pg.ag_param(d[k]) for k in MLP}
        opt = pg.optimizer_adam(p, lr=0.01, weight_decay=0.05)
        sched = pg.lr_scheduler_step(opt, step_size=2, gamma=0.5)
        out = []
        for _ in range(steps):
            with pg.with_grad_tape():
                h = pg.ag_tanh(pg.ag_add(pg.ag_matmul(p["W1"], d["x"]), p["b1"]))
                loss = pg.ag_mse_loss(pg.ag_add(pg.ag_matmul(p["W2"], h), p["b2"]), d["ytarget"])
            g = pg.backward(loss)
            rec = {"loss": loss.numpy()}
            for k, t in p.items():
                rec[f"grad {k}"] = g[t]
            rec["norm"] = np.array([pg.clip_grad_norm(p, g, 0.5)])
            opt.step(g)
            opt.zero_grad()
            rec["lr"] = np.array([sched.step()])
            for k, t in p.items():
                rec[k] = t.numpy()
            out.append(rec)
        return out

    return with_dtype(dtype, run)


def mlp_script_r(fname, d, steps, dtype, y):
    """The records of R half `fname` of an MLP script: x, y and the MLP's initial weights."""
    res = call_r(fname, dtype=dtype, steps=steps, x=d["x"], y=y, **{f"{k}_0": d[k] for k in MLP})
    return [r_record(dtype, rec) for rec in res]


def _script_mlp_r(d, steps, dtype):
    return mlp_script_r("parity_script_mlp", d, steps, dtype, d["ytarget"])


CASES.append(
    ScriptCase(
        "script: R training loop (adamw, step lr, clipping)",
        _script_mlp_py,
        _script_mlp_r,
        5,
        lambda rng: {**_mlp_inputs(rng), "ytarget": _u(rng, 3, 8)},
    )
)


# ---- models shared by the ag_fit, dp_train and model-file cases -----------------------------
# An architecture is built by the same expression in each language; its weights (and batch-norm
# running statistics) are then set by name from values drawn in Python.


def linear_shapes(i, n_in, n_out):
    """The parameter shapes of ag_linear(n_in, n_out) as layer i."""
    return {f"layer{i}_W": (n_out, n_in), f"layer{i}_b": (n_out, 1)}


def _bn_shapes(i, n):
    return {f"layer{i}_gamma": (n, 1), f"layer{i}_beta": (n, 1)}


def _bn_running(i, n):
    return {f"layer{i}_running_mean": (n, 1), f"layer{i}_running_var": (n, 1)}


ARCHS = {
    "mlp": (
        'ag_sequential(ag_linear(4, 6, "relu"), ag_linear(6, 3))',
        {**linear_shapes(1, 4, 6), **linear_shapes(2, 6, 3)},
        {},
    ),
    "bn": (
        'ag_sequential(ag_linear(4, 6, "tanh"), ag_batch_norm(6), ag_linear(6, 3))',
        {**linear_shapes(1, 4, 6), **_bn_shapes(2, 6), **linear_shapes(3, 6, 3)},
        _bn_running(2, 6),
    ),
    "norm": (
        'ag_sequential(ag_normalization(features = 4), ag_linear(4, 6, "relu"), ag_linear(6, 3))',
        {**linear_shapes(2, 4, 6), **linear_shapes(3, 6, 3)},
        {},
    ),
    "io": (
        'ag_sequential(ag_linear(4, 6, "relu"), ag_batch_norm(6), ag_dropout(0.25), '
        'ag_linear(6, 3, "tanh"))',
        {**linear_shapes(1, 4, 6), **_bn_shapes(2, 6), **linear_shapes(4, 6, 3)},
        _bn_running(2, 6),
    ),
    "mlp1": (  # one output: a binary (BCE) classifier (cases_predict.py)
        'ag_sequential(ag_linear(4, 6, "relu"), ag_linear(6, 1))',
        {**linear_shapes(1, 4, 6), **linear_shapes(2, 6, 1)},
        {},
    ),
}


def arch_data(rng, arch, n):
    """An architecture's initial parameters and buffers, x [4, n] uniform in [-2, 2] and
    y [3, n] uniform in [-1, 1], drawn in that order."""
    init, binit = arch_inputs(rng, arch)
    return {"init": init, "binit": binit, "x": _u(rng, 4, n, lo=-2, hi=2), "y": _u(rng, 3, n)}


def call_r_arch(fname, arch, d, **more):
    """call_r(fname, ...) with the architecture's R expression and d's init, binit, x and y."""
    init, binit, x, y = d["init"], d["binit"], d["x"], d["y"]
    return call_r(fname, arch=ARCHS[arch][0], init=init, binit=binit, x=x, y=y, **more)


def arch_inputs(rng, arch):
    """Initial parameters and buffers of an architecture, by name."""
    _, ps, bs = ARCHS[arch]
    init = {}
    for k, s in ps.items():
        init[k] = _u(rng, *s, lo=0.5, hi=1.5) if k.endswith("gamma") else _u(rng, *s)
    binit = {
        k: (_u(rng, *s, lo=0.5, hi=2.0) if k.endswith("var") else _u(rng, *s, lo=-0.3, hi=0.3))
        for k, s in bs.items()
    }
    return init, binit


def eval_arch(expr):
    """A model built from an architecture expression, ag_* names resolved in pyggmlr."""
    import pyggmlr as pg

    return eval(expr, {k: getattr(pg, k) for k in dir(pg) if k.startswith("ag_")})


def py_model(arch, init, binit):
    """The architecture built in Python with its values set."""
    m = eval_arch(ARCHS[arch][0])
    ps, bs = m.parameters(), m.buffers()
    for k, v in init.items():
        ps[k].data = v
    for k, v in binit.items():
        bs[k].data = v
    return m


def r_dict(lst):
    return {k: r_values(v) for k, v in (lst or {}).items()}


def tensor_values(ts):
    return {k: t.numpy() for k, t in ts.items()}


# ---- ag_fit: the whole training loop in each language ----------------------------------------
# shuffle = FALSE here: these cases pin the loop itself (accumulation, schedules, statistics)
# from given weights; shuffles, splits and dropout from the seed alone are the seed:* cases.

# the History columns of fit_history._KEYS but the timings (they differ from run to run)
HIST_KEYS = tuple(k for k in _KEYS if not k.startswith("time_"))


def fit_records(hist, weights, batches, pred, buffers):
    """Per-epoch records: the history row, that epoch's per-batch losses, the weights at the end
    of the epoch; the last one adds ag_predict's outputs, the buffers and the stopped and best
    epochs (0: none)."""
    out = []
    for e in range(len(weights)):
        rec = {f"history {k}": np.array([float(hist[k][e])]) for k in HIST_KEYS}
        rec["batch losses"] = np.array([lv for ep, lv in batches if ep == e + 1], dtype=np.float64)
        rec.update({f"weights {k}": v for k, v in weights[e].items()})
        out.append(rec)
    out[-1]["ag_predict"] = pred
    out[-1].update({f"buffer {k}": v for k, v in buffers.items()})
    for k in ("stopped_epoch", "best_epoch"):
        out[-1][k] = np.array([float(hist[k] or 0)])
    return out


def fit_py(m, x, y, callbacks=(), **kwargs):
    """Python's ag_fit(m, x, y, shuffle=False, **kwargs) recorded as fit_records (callbacks
    after the recorder's)."""
    import pyggmlr as pg

    weights, batches = [], []

    class Rec(pg.Callback):
        def on_epoch_end(self, epoch, logs):
            weights.append(tensor_values(m.parameters()))

        def on_batch_end(self, step, logs):
            batches.append((logs["epoch"], logs["loss"]))

    h = pg.ag_fit(m, x, y, shuffle=False, callbacks=[Rec(), *callbacks], silent=True, **kwargs)
    hist = {k: getattr(h, k) for k in (*HIST_KEYS, "stopped_epoch", "best_epoch")}
    return fit_records(hist, weights, batches, pg.ag_predict(m, x), tensor_values(m.buffers()))


def fit_r_records(res):
    """R's fit_records() list as fit_records."""
    b = np.asarray(res["b"], dtype=np.float64).reshape(-1, 2)
    h = r_dict(res["h"])
    h["stopped_epoch"], h["best_epoch"] = (float(v) for v in r_values(res["se"]))
    return fit_records(
        h,
        [r_dict(w) for w in res["w"]],
        [(int(ep), lv) for ep, lv in b],
        r_values(res["pred"]),
        r_dict(res["buffers"]),
    )


def _fit_py(d, steps, dtype):
    import pyggmlr as pg

    def run():
        s = d["settings"]
        m = py_model(s["arch"], d["init"], d["binit"])
        opt: Any = {"sgd": "sgd", "adamw_str": "adamw"}.get(s["opt_kind"])
        if s["opt_kind"] == "adamw":
            opt = pg.optimizer_adam(m.parameters(), lr=s["lr"], weight_decay=s["wd"])
        lr = s["lr"]
        return fit_py(
            m,
            d["x"],
            d["y"],
            loss=s["loss"],
            optimizer=opt,
            opt_params=(lambda e: {"lr": lr / e}) if s["schedule"] else None,
            nepoch=steps,
            batch_size=s["batch_size"],
            nbatch_logical=s["nbatch_logical"],
            val_split=s["val_split"],
            lr=lr,
        )

    return with_dtype(dtype, run)


def _fit_r(d, steps, dtype):
    s = d["settings"]
    res = call_r_arch(
        "parity_fit",
        s["arch"],
        d,
        dtype=dtype,
        opt_kind=s["opt_kind"],
        lr=s["lr"],
        wd=s.get("wd", 0.0),
        schedule=s["schedule"],
        loss=s["loss"],
        nepoch=steps,
        batch_size=s["batch_size"],
        nbatch_logical=s["nbatch_logical"],
        val_split=s["val_split"],
        hist_keys=np.array(HIST_KEYS),
    )
    return fit_r_records(res)


def fit_case(name, epochs, inputs):
    """An ag_fit case (history per epoch) on inputs(rng) -> init, binit, x, y, settings."""
    CASES.append(ScriptCase(f"ag_fit: {name}", _fit_py, _fit_r, epochs, inputs, group="fit"))


def _class_ids_or_uniform(rng, n, loss):
    return rng.integers(0, 3, size=n) if loss == "cross_entropy" else _u(rng, 3, n)


def fit_case_on(name, epochs, n, target=_class_ids_or_uniform, **settings):
    """An ag_fit case on n samples: x uniform in [-2, 2] (4 rows), y = target(rng, n, loss)."""

    def inputs(rng):
        init, binit = arch_inputs(rng, settings["arch"])
        x = _u(rng, 4, n, lo=-2, hi=2)
        y = target(rng, n, settings["loss"])
        return {"init": init, "binit": binit, "x": x, "y": y, "settings": settings}

    fit_case(name, epochs, inputs)


# one row per case: name, n, arch, opt_kind, lr, wd (None: no key), schedule, loss, batch_size,
# nbatch_logical, val_split; 3 epochs each
FIT_COLUMNS = ("arch", "opt_kind", "lr", "wd", "schedule", "loss")
FIT_BATCHING = ("batch_size", "nbatch_logical", "val_split")


def fit_cases_on(rows, target=_class_ids_or_uniform, epochs=3):
    """fit_case_on for each row of a table (columns above), in order."""
    for name, n, *values in rows:
        settings = dict(zip(FIT_COLUMNS + FIT_BATCHING, values))
        if settings["wd"] is None:
            del settings["wd"]
        fit_case_on(name, epochs, n, target=target, **settings)


# fmt: off
fit_cases_on([
    ("sgd, class ids, accum 2x4, lr schedule", 24,
     "mlp", "sgd", 0.1, None, True, "cross_entropy", 4, 8, 0.0),
    # 28 samples, val_split 0.25: 7 held out (batches of 4 + 3, weighted), 21 train -> 2
    # logical batches of 8 (5 samples left out, as ggml)
    ("adamw object, class ids, accum 2x4, val 0.25", 28,
     "mlp", "adamw", 0.01, 0.05, False, "cross_entropy", 4, 8, 0.25),
    ("'adamw', mse, batch_norm, accum 3x2, val 0.2", 30,
     "bn", "adamw_str", 0.02, None, False, "mse", 2, 6, 0.2),
])
# fmt: on

# ---- dp_train: 2 replicas in one process, gradients averaged in C ----------------------------


def dp_record(hist, params, buffers):
    rec = {"loss_history": np.asarray(hist, dtype=np.float64)}
    rec.update({f"replica 1 {k}": v for k, v in params.items()})
    rec.update({f"replica 1 buffer {k}": v for k, v in buffers.items()})
    return [rec]


def dp_py(d, steps, n_samples, **kwargs):
    """Python's dp_train on d's model and n_samples column blocks of x, y, as dp_record."""
    import pyggmlr as pg

    per = d["x"].shape[1] // n_samples
    data = [
        {"x": d["x"][:, j * per : (j + 1) * per], "y": d["y"][:, j * per : (j + 1) * per]}
        for j in range(n_samples)
    ]
    res = pg.dp_train(
        lambda: py_model(d["arch"], d["init"], d["binit"]),
        data,
        loss_fn=pg.ag_mse_loss,
        forward_fn=lambda m, smp: m.forward(pg.ag_tensor(smp["x"])),
        target_fn=lambda smp: smp["y"],
        n_iter=steps,
        verbose=False,
        **kwargs,
    )
    params = res["params"]
    params = params.items() if isinstance(params, dict) else res["model"].parameters().items()
    return dp_record(
        res["loss_history"],
        {k: t.numpy() for k, t in params},
        tensor_values(res["model"].buffers()),
    )


def dp_r(d, steps, n_samples, **kwargs):
    """R's parity_dp_train on the same inputs, as dp_record."""
    res = call_r_arch(
        "parity_dp_train",
        d["arch"],
        d,
        n_samples=n_samples,
        per=d["x"].shape[1] // n_samples,
        n_iter=steps,
        **kwargs,
    )
    return dp_record(r_values(res["loss_history"]), r_dict(res["params"]), r_dict(res["buffers"]))


def _dp_py(d, steps, dtype):
    s = d["settings"]
    return with_dtype(
        dtype,
        lambda: dp_py(d, steps, s["n_samples"], n_replicas=2, lr=s["lr"], max_norm=s["max_norm"]),
    )


def _dp_r(d, steps, dtype):
    s = d["settings"]
    return dp_r(d, steps, s["n_samples"], dtype=dtype, lr=s["lr"], max_norm=s["max_norm"])


def _dp_case(name, n_iter, **settings):
    def inputs(rng):
        d = arch_data(rng, settings["arch"], 3 * settings["n_samples"])
        return {**d, "arch": settings["arch"], "settings": settings}

    CASES.append(ScriptCase(f"dp_train: {name}", _dp_py, _dp_r, n_iter, inputs, group="dp"))


# 5 samples of 3 columns, 2 replicas: iterations see samples (1,2), (3,4), (5,1), ...
_dp_case("2 replicas, mlp, mse", 4, arch="mlp", n_samples=5, lr=0.01, max_norm=math.inf)
_dp_case("2 replicas, batch_norm, max_norm 0.5", 4, arch="bn", n_samples=4, lr=0.02, max_norm=0.5)
