"""Model files written by one language and read by the other (with and without optimizer state,
then training resumed in the other language), and ag_gradcheck's report, verdicts and restored
inputs; the R halves are models.R."""

from __future__ import annotations

import zlib

import numpy as np

from .cases_models import arch_data, call_r_arch, py_model, r_dict, tensor_values
from .core import CASES, ScriptCase, _u, call_r, r_values, with_dtype

# ---- model files: written by one language, read by the other ---------------------------------
# The reference is always the Python model held in memory; the other side goes through a file
# written by one language and read by the other (architecture rebuilt from the file's config).


def adam_steps_py(m, d, steps, opt=None):
    """`steps` Adam steps of mse on d's (x, y), with a new optimizer unless one is given."""
    import pyggmlr as pg

    opt = opt or pg.optimizer_adam(m.parameters(), lr=0.01, weight_decay=0.05)
    for _ in range(steps):
        with pg.with_grad_tape():
            loss = pg.ag_mse_loss(m.forward(pg.ag_tensor(d["x"])), d["y"])
        opt.step(pg.backward(loss))
        opt.zero_grad()
    return opt


def _io_records(
    loaded,
    loaded_buffers,
    dtype,
    y,
    epoch,
    t=None,
    trained=None,
    trained_buffers=None,
    y_after=None,
):
    rec = {f"loaded {k}": v for k, v in loaded.items()}
    rec.update({f"loaded buffer {k}": v for k, v in loaded_buffers.items()})
    rec.update(
        {
            "dtype": np.array([float(dtype == "f64")]),
            "ag_predict": y,
            "epoch": np.array([float(epoch)]),
        }
    )
    out = [rec]
    if trained is not None:
        rec["optimizer t"] = np.array([float(t)])
        rec2 = {f"trained {k}": v for k, v in trained.items()}
        rec2.update({f"trained buffer {k}": v for k, v in trained_buffers.items()})
        rec2["ag_predict"] = y_after
        out.append(rec2)
    return out


def _loaded(m, d, dtype, epoch):
    import pyggmlr as pg

    return dict(
        loaded=tensor_values(m.parameters()),
        loaded_buffers=tensor_values(m.buffers()),
        dtype=dtype,
        y=pg.ag_predict(m, d["x"]),
        epoch=epoch,
    )


def _resume(m, d, n_more, opt, args):
    """Train m n_more further steps with opt (its step count recorded first), then record."""
    import pyggmlr as pg

    args["t"] = opt.t
    pg.ag_train(m)
    adam_steps_py(m, d, n_more, opt)
    args.update(trained=tensor_values(m.parameters()), trained_buffers=tensor_values(m.buffers()))
    return args


def _io_reference(d, n_train, n_more):
    """The Python model trained n_train Adam steps (the saved state), then n_more further steps."""
    import pyggmlr as pg

    s = d["settings"]
    m = py_model(s["arch"], d["init"], d["binit"])
    opt = adam_steps_py(m, d, n_train) if n_train else None
    pg.ag_eval(m)
    args = _loaded(m, d, pg.ag_default_dtype(), n_train)
    if n_more:
        _resume(m, d, n_more, opt, args)
        pg.ag_eval(m)
        args["y_after"] = pg.ag_predict(m, d["x"])
    return _io_records(**args)


def _io_tmp():
    import os
    import tempfile

    fd, path = tempfile.mkstemp(prefix="pyggmlr-parity-", suffix=".safetensors")
    os.close(fd)
    return path


def _io_r_to_py(d, steps, dtype):
    """R builds, trains and saves; Python loads (and continues training)."""
    import os

    import pyggmlr as pg

    s = d["settings"]
    n_more = s["n_more"]
    path = _io_tmp()
    try:
        call_r_arch(
            "parity_io_save",
            s["arch"],
            d,
            dtype=dtype,
            n_train=s["n_train"],
            path=path,
        )

        def load():
            m = pg.ag_load_model(path)
            args = _loaded(
                m, d, next(iter(m.parameters().values())).dtype, pg.ag_model_info(path)["epoch"]
            )
            if n_more:
                opt = pg.optimizer_adam(m.parameters(), lr=0.01, weight_decay=0.05)
                pg.ag_load_model(path, model=m, optimizer=opt)
                _resume(m, d, n_more, opt, args)
                args["y_after"] = pg.ag_predict(m, d["x"])
            return _io_records(**args)

        return with_dtype(dtype, load)
    finally:
        os.unlink(path)


def _io_py_to_r(d, steps, dtype):
    """Python builds, trains and saves; R loads (and continues training)."""
    import os

    import pyggmlr as pg

    s = d["settings"]
    n_train, n_more = s["n_train"], s["n_more"]
    path = _io_tmp()
    try:

        def save():
            m = py_model(s["arch"], d["init"], d["binit"])
            opt = adam_steps_py(m, d, n_train) if n_train else None
            pg.ag_save_model(m, path, optimizer=opt, epoch=n_train)

        with_dtype(dtype, save)
        res = call_r(
            "parity_io_load", dtype=dtype, x=d["x"], y_target=d["y"], n_more=n_more, path=path
        )
    finally:
        os.unlink(path)
    args = dict(
        loaded=r_dict(res["loaded"]),
        loaded_buffers=r_dict(res["loaded_buffers"]),
        dtype=res["dtype"],
        y=r_values(res["y"]),
        epoch=res["epoch"],
    )
    if n_more:
        args.update(
            t=res["t"],
            trained=r_dict(res["trained"]),
            trained_buffers=r_dict(res["trained_buffers"]),
            y_after=r_values(res["y_after"]),
        )
    return _io_records(**args)


def _io_case(name, other, **settings):
    def inputs(rng):
        return {**arch_data(rng, settings["arch"], 7), "settings": settings}

    def py(d, steps, dtype):
        return with_dtype(dtype, lambda: _io_reference(d, settings["n_train"], settings["n_more"]))

    steps = 1 + (settings["n_more"] > 0)
    CASES.append(ScriptCase(f"model file: {name}", py, other, steps, inputs, group="io"))


_io_case("R saves, Python loads", _io_r_to_py, arch="io", n_train=0, n_more=0)
_io_case("Python saves, R loads", _io_py_to_r, arch="io", n_train=0, n_more=0)
_io_case("R: 2 Adam steps + state, Python resumes", _io_r_to_py, arch="bn", n_train=2, n_more=1)
_io_case("Python: 2 Adam steps + state, R resumes", _io_py_to_r, arch="bn", n_train=2, n_more=1)


# ---- ag_gradcheck: report, verdicts and restored inputs ---------------------------------------
# R's ag_gradcheck returns only the overall logical (as ggmlR); the per-input max_err values
# are compared as printed by both (%.2e), together with the verdicts, the whole report's text
# and the inputs' values afterwards (restored bit for bit, $grad untouched). Input q gets a
# wrong analytical gradient (its second factor is computed without gradient): it must FAIL.


def _gradcheck_record(ok, text, p, q, grads_unset):
    import re

    lines = text.strip().splitlines()
    errs = [float(m.group(1)) for m in (re.search(r"max_err = (\S+)", ln) for ln in lines) if m]
    verdicts = [float(ln.rstrip().endswith("PASS")) for ln in lines]
    return [
        {
            "passed": np.array([float(bool(ok))]),
            "max_err (printed)": np.array(errs),
            "PASS per line": np.array(verdicts),
            "report text crc32": np.array([float(zlib.crc32(text.encode()))]),
            "p after": p,
            "q after": q,
            "grad unset": np.array([float(v) for v in grads_unset]),
        }
    ]


def _gradcheck_py(d, steps, dtype):
    import contextlib
    import io

    import pyggmlr as pg

    def run():
        p, q, c = pg.ag_param(d["p0"]), pg.ag_param(d["q0"]), pg.ag_tensor(d["c0"])

        def fn(i):
            a = pg.ag_sum(pg.ag_mul(pg.ag_tanh(pg.ag_matmul(i["p"], i["c"])), d["w"]))
            with pg.ag_no_grad():
                s = pg.ag_scale(i["q"], 1)
            return pg.ag_add(a, pg.ag_sum(pg.ag_mul(i["q"], s)))

        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            res = pg.ag_gradcheck(fn, {"p": p, "q": q, "c": c}, eps=1e-3, atol=1e-3)
        return _gradcheck_record(
            res.passed, buf.getvalue(), p.numpy(), q.numpy(), (p.grad is None, q.grad is None)
        )

    return with_dtype(dtype, run)


def _gradcheck_r(d, steps, dtype):
    res = call_r("parity_gradcheck", dtype=dtype, **{k: d[k] for k in ("p0", "q0", "c0", "w")})
    out = res["out"]
    text = "\n".join([out] if isinstance(out, str) else out) + "\n"
    return _gradcheck_record(
        res["ok"],
        text,
        r_values(res["p"]),
        r_values(res["q"]),
        list(np.atleast_1d(res["grads_unset"])),
    )


CASES.append(
    ScriptCase(
        "ag_gradcheck: report, verdicts, restored inputs",
        _gradcheck_py,
        _gradcheck_r,
        1,
        lambda rng: {
            "p0": _u(rng, 3, 4),
            "q0": _u(rng, 2, 3, lo=0.5, hi=1.5),
            "c0": _u(rng, 4, 5),
            "w": _u(rng, 3, 5),
        },
        group="gradcheck",
    )
)


# ---- ag_save_model's config check: one core text in both languages (issue 29) ---------------
# A model whose config does not rebuild it (another width; buffers the config does not make):
# the core compares the rebuilt names and shapes and words the refusal for both.

_SAVE_PROBES = {
    "parameters: out_features 4, the model's 3": (4, {}),
    "buffers: none, the model's 'rm'": (3, {"rm": np.zeros((3, 1))}),
}


def _save_config_py(d, steps, dtype):
    import os
    import tempfile

    import pyggmlr as pg

    from .cases_errors import refusal

    class _Model:
        def __init__(self, out, bufs):
            self.lin = pg.ag_linear(2, 3)
            self.out, self.bufs = out, {k: pg.ag_tensor(v) for k, v in bufs.items()}

        def parameters(self):
            return self.lin.parameters()

        def buffers(self):
            return self.bufs

        def to_config(self):
            return {"type": "linear", "in_features": 2, "out_features": self.out}

    path = os.path.join(tempfile.gettempdir(), "pg_parity_save_config.st")

    def probe(out, bufs):
        m = with_dtype(dtype, lambda: _Model(out, bufs))
        return refusal(None, lambda: pg.ag_save_model(m, path))

    return [{k: probe(*v) for k, v in _SAVE_PROBES.items()}]


def _save_config_r(d, steps, dtype):
    from .cases_errors import _KINDS, _r_kind

    def probe(out, bufs):
        res = call_r("parity_save_config_refusal", dtype=dtype, out=out, bufs=bufs)
        kind = _r_kind((str(res["cls"]),))
        code = _KINDS.index(kind) if kind else 99
        return np.array([float(code), float(zlib.crc32(str(res["msg"]).encode()))])

    return [{k: probe(*v) for k, v in _SAVE_PROBES.items()}]


CASES.append(
    ScriptCase(
        "ag_save_model: config not rebuilding the model",
        _save_config_py,
        _save_config_r,
        1,
        lambda rng: {},
        group="io",
    )
)
