"""Parity cases for convolution (native/ops_conv.c): a CNN drawn from the same seed in each
language (the layers' init through the core's generator), trained by ag_fit eager and compiled,
an ag_compile'd forward replayed on new data, saved, and each language's file read by the
other, bit for bit; "dims" 3 is a decoder with a transposed convolution, 4 its 1-d form. The R half is conv.R."""

from __future__ import annotations

import functools
import os
import tempfile
from typing import Any, Dict, List

import numpy as np

from .cases_models import HIST_KEYS, fit_py, fit_r_records, r_dict, tensor_values
from .core import CASES, ScriptCase, _u, call_r, r_values, with_dtype


def _path(side: str, dtype: str) -> str:
    return os.path.join(tempfile.gettempdir(), f"pg-parity-conv-{os.getpid()}-{side}-{dtype}.gguf")


def _py(d: Dict[str, Any], steps: int, dtype: str) -> List[Any]:
    import pyggmlr as pg

    def run():
        pg.ggml_set_seed(int(d["seed"]))
        if d["dims"] == 4:  # a 1-d decoder: back up from 5 to 10 (ag_conv_transpose1d)
            m = pg.ag_sequential(
                pg.ag_conv1d(2, 4, 3, stride=2, padding=1, input_shape=(2, 9)),
                pg.ag_conv_transpose1d(
                    4, 2, 3, stride=2, padding=1, output_padding=1, groups=2, activation="tanh"
                ),
                pg.ag_linear(2 * 10, 3),
            )
        elif d["dims"] == 3:  # a transposed convolution back up to 6x6 (ag_conv_transpose2d)
            m = pg.ag_sequential(
                pg.ag_conv2d(2, 4, 3, stride=2, padding=1, input_shape=(2, 6, 6)),
                pg.ag_conv_transpose2d(
                    4, 2, 3, stride=2, padding=1, output_padding=1, groups=2, dilation=(1, 1)
                ),
                pg.ag_linear(2 * 36, 3),
            )
        elif d["dims"] == 2:
            m = pg.ag_sequential(
                pg.ag_conv2d(2, 4, 3, stride=2, padding=1, input_shape=(2, 6, 6)),
                pg.ag_conv2d(4, 4, (2, 1), groups=2, dilation=(1, 2), padding="same"),
                pg.ag_linear(4 * 9, 3),
            )
        else:
            m = pg.ag_sequential(
                pg.ag_conv1d(2, 4, 3, stride=2, padding=1, input_shape=(2, 9)),
                pg.ag_conv1d(4, 4, 2, groups=2, dilation=2, padding="same"),
                pg.ag_linear(4 * 5, 3),
            )
        init = tensor_values(m.parameters())
        f = pg.ag_compile(lambda t: m(t), d["x"][:, :4], build="forward")
        out = f(d["x"][:, 4:8])
        assert isinstance(out, pg.Tensor)
        fwd = out.numpy()
        recs = fit_py(
            m,
            d["x"],
            d["y"],
            loss="mse",
            optimizer="adam",
            nepoch=steps,
            batch_size=4,
            lr=0.02,
            static=d["static"],
        )
        path = _path("py", dtype)
        pg.ag_save_model(m, path)
        return init, fwd, recs, path

    init, fwd, recs, path = with_dtype(dtype, run)
    recs[0].update({f"init {k}": v for k, v in init.items()})
    recs[0]["compiled forward"] = fwd
    res = call_r("parity_conv_read", path=path, x=d["x"])  # R reads Python's file
    os.remove(path)
    recs[-1]["other side's read: ag_predict"] = r_values(res)
    return recs


def _r(d: Dict[str, Any], steps: int, dtype: str) -> List[Any]:
    import pyggmlr as pg

    path = _path("r", dtype)
    res = call_r(
        "parity_conv_fit",
        dtype=dtype,
        dims=d["dims"],
        seed=d["seed"],
        x=d["x"],
        y=d["y"],
        nepoch=steps,
        static=d["static"],
        hist_keys=np.array(HIST_KEYS),
        path=path,
    )
    recs = fit_r_records(res["fit"])
    recs[0].update({f"init {k}": v for k, v in r_dict(res["init"]).items()})
    recs[0]["compiled forward"] = r_values(res["fwd"])
    m = pg.ag_load_model(path)  # Python reads R's file
    os.remove(path)
    recs[-1]["other side's read: ag_predict"] = np.asarray(pg.ag_predict(m, d["x"]), np.float64)
    return recs


def _case(name: str, dims: int, static: bool) -> None:
    def inputs(rng: Any) -> Dict[str, Any]:
        rows = 18 if dims in (1, 4) else 72
        return {
            "seed": 20301.0,
            "dims": dims,
            "x": _u(rng, rows, 12, lo=-2, hi=2),
            "y": _u(rng, 3, 12),
            "static": static,
        }

    CASES.append(ScriptCase(f"conv: {name}", _py, _r, 2, inputs, group="fit"))


_case("seeded 2-d CNN, ag_fit eager, files crossed", 2, False)
_case("seeded 2-d CNN, ag_fit static, files crossed", 2, True)
_case("seeded 1-d CNN, ag_fit static, files crossed", 1, True)
_case("transposed decoder, eager fit, files crossed", 3, False)
_case("transposed decoder, static fit, files crossed", 3, True)
_case("transposed 1-d decoder, static, files crossed", 4, True)


# init = (torch's default, keras' glorot_uniform and he_uniform): each layer kind drawn from one
# seed, its parameters and a forward, one record per init (the R half: parity_conv_init)
_INITS = ("torch", "glorot_uniform", "he_uniform")


def _init_py(d: Dict[str, Any], steps: int, dtype: str) -> List[Any]:
    import pyggmlr as pg

    def run(init: str) -> Dict[str, Any]:
        pg.ggml_set_seed(int(d["seed"]))
        c2 = pg.ag_conv2d(2, 4, (3, 2), groups=2, input_shape=(2, 6, 6), init=init)
        c1 = pg.ag_conv1d(3, 5, 4, init=init)
        ct = pg.ag_conv_transpose2d(4, 6, 3, groups=2, init=init)
        ct1 = pg.ag_conv_transpose1d(2, 6, 5, groups=2, init=init)
        rec = {}
        layers = (("conv2d", c2), ("conv1d", c1), ("conv_transpose2d", ct))
        for nm, layer in layers + (("conv_transpose1d", ct1),):
            rec.update({f"{nm} {k}": v for k, v in tensor_values(layer.parameters()).items()})
        rec["conv2d forward"] = c2(d["x"]).numpy()
        return rec

    return [with_dtype(dtype, functools.partial(run, i)) for i in _INITS]


def _init_r(d: Dict[str, Any], steps: int, dtype: str) -> List[Any]:
    res = call_r("parity_conv_init", dtype=dtype, seed=d["seed"], x=d["x"])
    return [r_dict(res[i]) for i in _INITS]


def _init_inputs(rng: Any) -> Dict[str, Any]:
    return {"seed": 20302.0, "x": _u(rng, 72, 5, lo=-2, hi=2)}


CASES.append(
    ScriptCase(
        "conv: init torch, glorot_uniform, he_uniform drawn",
        _init_py,
        _init_r,
        3,
        _init_inputs,
        group="fit",
    )
)
