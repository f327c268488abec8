"""Parity cases run from a seed alone: nothing but the data crosses between the languages.

Each case is one script written twice (Python here, R in seed.R) that seeds the package's
stream with ``ggml_set_seed`` (R: the same function, which is ``set.seed``) and then draws its
weights, masks and shuffles itself. Both languages draw through the C core's copy of R's
generator, so every record must agree bit for bit; the last records of the initialiser case
also check that R's own ``runif``/``sample`` after the package's draws see the stream the
Python module sees.
"""

from __future__ import annotations

from typing import Any, Dict, List

import numpy as np

from .core import CASES, Record, ScriptCase, _u, call_r, r_values, with_dtype

_SEED = 20261201


def _tensors(d: Dict[str, Any], prefix: str = "") -> Record:
    return {f"{prefix}{k}": np.asarray(v, dtype=np.float64) for k, v in d.items()}


def _r_rec(res, prefix=""):
    return {f"{prefix}{k}": r_values(v) for k, v in res.items()}


# ---- initialisers and the stream after them --------------------------------------------------


def _init_py(d, steps, dtype):
    import pyggmlr as pg

    def run():
        pg.ggml_set_seed(_SEED)
        l1 = pg.ag_linear(5, 3)
        l2 = pg.ag_linear(3, 5, init="orthogonal")
        l3 = pg.ag_linear(4, 2, init="orthogonal", gain=2)
        e = pg.ag_embedding(7, 3)
        a = pg.ag_multihead_attention(4, 2)
        w = {
            "l1_W": l1.W.numpy(),
            "l2_W": l2.W.numpy(),
            "l3_W": l3.W.numpy(),
            "emb": e.weight.numpy(),
            "W_q": a.W_q.numpy(),
            "W_k": a.W_k.numpy(),
            "W_v": a.W_v.numpy(),
            "W_o": a.W_o.numpy(),
            "after_runif": pg.random.runif(3),
            "after_sample": pg.random.sample(10).astype(np.float64),
            "after_rnorm": pg.random.rnorm(3),
        }
        return [_tensors(w)]

    return with_dtype(dtype, run)


def _init_r(d, steps, dtype):
    return [_r_rec(call_r("parity_seed_init", dtype=dtype, seed=_SEED))]


# ---- dataloader epochs: the default stream and a loader's own ---------------------------------


def _loader_py(d, steps, dtype):
    import pyggmlr as pg

    def run():
        pg.ggml_set_seed(_SEED)
        loaders = {
            "dl": pg.ag_dataloader(d["x"], d["y"], batch_size=4, shuffle=True),
            "own": pg.ag_dataloader(d["x"], d["y"], batch_size=4, shuffle=True, seed=7),
        }
        out: List[Record] = []
        for _ in range(steps):
            rec: Record = {}
            for which, dl in loaders.items():
                dl.reset()
                i = 0
                while dl.has_next():
                    b = dl.next_batch()
                    rec[f"{which} x{i}"], rec[f"{which} y{i}"] = b["x"].numpy(), b["y"].numpy()
                    i += 1
            out.append(_tensors(rec))
        return out

    return with_dtype(dtype, run)


def _loader_r(d, steps, dtype):
    res = call_r("parity_seed_loader", dtype=dtype, seed=_SEED, x=d["x"], y=d["y"], steps=steps)
    return [_r_rec(e) for e in res]


# ---- dropout in train mode: layers and attention, eager ----------------------------------------


def _dropout_py(d, steps, dtype):
    import pyggmlr as pg

    def run():
        pg.ggml_set_seed(_SEED)
        m = pg.ag_sequential(pg.ag_linear(4, 6, "relu"), pg.ag_dropout(0.4), pg.ag_linear(6, 3))
        a = pg.ag_multihead_attention(4, 2, dropout=0.3)
        return [
            _tensors(
                {
                    "seq": m.forward(pg.ag_tensor(d["x"])).numpy(),
                    "attn": a.forward(pg.ag_tensor(d["x"]), causal_mask=True).numpy(),
                }
            )
            for _ in range(steps)
        ]

    return with_dtype(dtype, run)


def _dropout_r(d, steps, dtype):
    res = call_r("parity_seed_dropout", dtype=dtype, seed=_SEED, x=d["x"], steps=steps)
    return [_r_rec(e) for e in res]


# ---- a whole ag_fit: shuffle, validation split, dropout; eager and compiled -------------------

_HIST = ("loss", "accuracy", "val_loss", "val_accuracy")


def _fit_case(static, fit_seed):
    def py(d, steps, dtype):
        import pyggmlr as pg

        def run():
            pg.ggml_set_seed(_SEED)
            m = pg.ag_sequential(
                pg.ag_linear(4, 8, "relu"), pg.ag_dropout(0.25), pg.ag_linear(8, 3)
            )
            h = pg.ag_fit(
                m,
                d["x"],
                d["y"],
                loss="cross_entropy",
                optimizer="adamw",
                lr=0.02,
                nepoch=steps,
                batch_size=5,
                val_split=0.25,
                shuffle=True,
                seed=fit_seed,
                silent=True,
                static=static,
            )
            rec = {k: np.asarray(getattr(h, k), dtype=np.float64) for k in _HIST}
            rec.update({k: t.numpy() for k, t in m.parameters().items()})
            rec["pred"] = pg.ag_predict(m, d["x"])
            rec["after"] = pg.random.runif(2)
            return [_tensors(rec)]

        return with_dtype(dtype, run)

    def rr(d, steps, dtype):
        res = call_r(
            "parity_seed_fit",
            dtype=dtype,
            seed=_SEED,
            x=d["x"],
            y=d["y"],
            nepoch=steps,
            fit_seed=fit_seed,
            static=static,
            hist_keys=np.array(_HIST),
        )
        return [_r_rec(res)]

    name = f"seed: ag_fit shuffle/val/dropout {'static' if static else 'eager'} seed={fit_seed}"
    return ScriptCase(name, py, rr, 3, _fit_inputs, group="seed")


def _fit_inputs(rng):
    return {"x": _u(rng, 4, 26, lo=-2, hi=2), "y": rng.integers(0, 3, size=26)}


# ---- dp_train: replicas made from the stream ---------------------------------------------------


def _dp_py(d, steps, dtype):
    import pyggmlr as pg

    def run():
        pg.ggml_set_seed(_SEED)
        data = [
            {"x": d["x"][:, 3 * j : 3 * j + 3], "y": d["y"][:, 3 * j : 3 * j + 3]} for j in range(4)
        ]
        res = pg.dp_train(
            lambda: pg.ag_sequential(pg.ag_linear(4, 5, "tanh"), pg.ag_linear(5, 3)),
            data,
            loss_fn=pg.ag_mse_loss,
            forward_fn=lambda m, s: m.forward(pg.ag_tensor(s["x"])),
            target_fn=lambda s: s["y"],
            n_replicas=2,
            n_iter=steps,
            lr=0.01,
            verbose=False,
        )
        params = res["params"]
        params = params.items() if isinstance(params, dict) else res["model"].parameters().items()
        rec = {"loss_history": np.asarray(res["loss_history"], dtype=np.float64)}
        rec.update({k: t.numpy() for k, t in params})
        return [_tensors(rec)]

    return with_dtype(dtype, run)


def _dp_r(d, steps, dtype):
    return [
        _r_rec(call_r("parity_seed_dp", dtype=dtype, seed=_SEED, x=d["x"], y=d["y"], n_iter=steps))
    ]


# ---- the 0.8.6 selection and sampling ops -----------------------------------------------------


def _sample_py(d, steps, dtype):
    import pyggmlr as pg

    def run():
        pg.ggml_set_seed(_SEED)
        out: List[Record] = []
        for _ in range(steps):
            cat1 = pg.ag_sample_categorical(d["x"])
            mu, ls = pg.ag_param(d["x"]), pg.ag_param(d["x"][:, :1] / 4)
            with pg.with_grad_tape():
                loss = pg.ag_sum(pg.ag_mul(pg.ag_sample_normal(mu, ls), d["x"]))
            pg.backward(loss)
            out.append(
                _tensors(
                    {
                        "categorical": cat1,
                        "argmax": pg.ag_argmax(d["x"]),
                        "normal_grad_mu": mu.grad,
                        "normal_grad_ls": ls.grad,
                        "loss": loss.numpy(),
                    }
                )
            )
        return out

    return with_dtype(dtype, run)


def _sample_r(d, steps, dtype):
    res = call_r("parity_seed_sample", dtype=dtype, seed=_SEED, x=d["x"], steps=steps)
    return [_r_rec(e) for e in res]


CASES.extend(
    [
        ScriptCase(
            "seed: sampling (categorical, normal + gradients)",
            _sample_py,
            _sample_r,
            3,
            lambda rng: {"x": _u(rng, 4, 6, lo=-2, hi=2)},
            group="seed",
        ),
        ScriptCase(
            "seed: initialisers, then R's own draws",
            _init_py,
            _init_r,
            1,
            lambda rng: {},
            group="seed",
        ),
        ScriptCase(
            "seed: dataloader epochs (stream; seed = 7)",
            _loader_py,
            _loader_r,
            2,
            lambda rng: {"x": _u(rng, 3, 10), "y": _u(rng, 2, 10)},
            group="seed",
        ),
        ScriptCase(
            "seed: dropout train mode (layer, attention)",
            _dropout_py,
            _dropout_r,
            2,
            lambda rng: {"x": _u(rng, 4, 5)},
            group="seed",
        ),
        _fit_case(False, None),
        _fit_case(False, 11),
        _fit_case(True, 11),
        ScriptCase(
            "seed: dp_train (replicas from the stream)",
            _dp_py,
            _dp_r,
            4,
            lambda rng: {"x": _u(rng, 4, 12, lo=-2, hi=2), "y": _u(rng, 3, 12)},
            group="seed",
        ),
    ]
)
