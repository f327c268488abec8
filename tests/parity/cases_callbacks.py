"""ag_fit with ag_early_stopping and ag_model_checkpoint(save_best_only), R vs Python (the R half
is parity_fit_es in models.R): the monitored value, its direction (mode), the stop, the restored
weights, one callback object reused for a second fit (each fit starts afresh), and the epochs a
best-only checkpoint saves, all to the bit."""

from __future__ import annotations

import os
import re
import tempfile
from typing import Any, List

import numpy as np

from .cases_models import HIST_KEYS, arch_inputs, call_r_arch, fit_py, fit_r_records, py_model
from .core import CASES, ScriptCase, _u, with_dtype


def _inputs(settings, n=32):
    """x [4, n] uniform in [-2, 2]; y the arg-max of a random linear map of x (learnable, so
    the validation accuracy climbs); the architecture's initial values."""

    def inputs(rng):
        init, binit = arch_inputs(rng, settings["arch"])
        x = _u(rng, 4, n, lo=-2, hi=2)
        y = np.argmax(_u(rng, 3, 4) @ x, axis=0).astype(np.float64)
        return {"init": init, "binit": binit, "x": x, "y": y, "settings": settings}

    return inputs


def _fit_args(s, steps):
    return {"nepoch": steps, "batch_size": 4, "val_split": 0.25, "lr": s["lr"]}


def _es_py(d, steps, dtype):
    import pyggmlr as pg

    s = d["settings"]

    def run():
        cbs: List[Any] = [pg.ag_early_stopping(**s["es"])] if s["es"] is not None else []
        with tempfile.TemporaryDirectory() as tmp:
            if s["ckpt"] is not None:
                path = os.path.join(tmp, "e{epoch}.safetensors")
                cbs.append(pg.ag_model_checkpoint(path, **s["ckpt"]))
            for _ in range(2 if s["refit"] else 1):  # the second fit's records are compared
                m = py_model(s["arch"], d["init"], d["binit"])
                out = fit_py(m, d["x"], d["y"], callbacks=cbs, **_fit_args(s, steps))
        if s["ckpt"] is not None:  # the epochs saved, from the file names
            out[-1]["saved epochs"] = _epochs(cbs[-1].saved)
        return out

    return with_dtype(dtype, run)


def _epochs(paths):
    """The epochs in e{epoch}.safetensors file names."""
    return np.array([float(re.sub(r"^.*e(\d+)\.safetensors$", r"\1", p)) for p in paths])


def _es_r(d, steps, dtype):
    s = d["settings"]
    res = call_r_arch(
        "parity_fit_es", s["arch"], d, dtype=dtype, es=s["es"], ckpt=s["ckpt"], refit=s["refit"],
        hist_keys=np.array(HIST_KEYS), **_fit_args(s, steps),
    )  # fmt: skip
    out = fit_r_records(res)
    if s["ckpt"] is not None:
        out[-1]["saved epochs"] = _epochs([str(p) for p in res["saved"]])
    return out


def _es_case(name, epochs, refit=False, lr=0.05, ckpt=None, **es):
    settings = {"arch": "mlp", "es": es or None, "refit": refit, "lr": lr, "ckpt": ckpt}
    CASES.append(
        ScriptCase(f"{'checkpoint' if ckpt else 'early stop'}: {name}", _es_py, _es_r, epochs, _inputs(settings),
                   group="fit")
    )  # fmt: skip


_es_case("val_accuracy, mode auto (max)", 12, patience=2, monitor="val_accuracy")
_es_case("val_accuracy, mode min", 12, patience=2, monitor="val_accuracy", mode="min")
_es_case("val_loss, min_delta 0.01, no restore", 12, patience=2, min_delta=0.01,
         restore_best=False)  # fmt: skip
_es_case("one object reused for a second fit", 12, refit=True, patience=2, monitor="accuracy")
_es_case("save_best_only on val_accuracy", 10,
         ckpt={"save_best_only": True, "monitor": "val_accuracy"})  # fmt: skip
_es_case("best val_loss every 2, with stopping", 12, patience=3,
         ckpt={"save_best_only": True, "every": 2})  # fmt: skip
