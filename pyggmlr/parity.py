"""Cross-language parity: the same work in Python and in R (through rpy2) must give the same
numbers, bit for bit.

Both languages run one C core (the cffi module and the R package's .so are two compiled
copies of ``native/``), with the same GEMM (:func:`pyggmlr.r.sync_blas` hands R Python's
OpenBLAS, or both use the built-in kernel). Every case in :data:`CASES` is one Python function
``fn(P, d, steps)`` written once against a small *side* object ``P``: ``P.ag_matmul(...)``,
``P.optimizer_adam(...)``, ``layer.forward(x)``, ``opt.step(g)`` ... resolve to the Python
API on the Python side and to the R package's exported functions and objects (called through
rpy2) on the R side. Inputs, initial weights and hyper-parameters are generated once in Python
(numpy, fixed seed) and handed to both sides; neither side draws random numbers. A case returns
one record per step (losses, outputs, gradients, weights, optimizer/scheduler values); records
are compared value by value: max abs difference and max ULP difference in the tensor's dtype
(0 is required). A few cases (``script:*``) run a training loop written in R (``r.run``)
against the same loop written in Python.

Optional third column: when R has the reference package ``ggmlR`` installed, every case also
runs through ggmlR's ag_* API in f64 and its max abs / rel difference from pyggmlr is reported
(informational; ggmlR 0.8.2's known differences, spec section 11, are listed under the table).

``python -m pyggmlr parity [--dtype f64|f32] [--case SUBSTR] [--blas openblas|builtin]``
prints the table and exits 1 on any mismatch (2 when R/rpy2/the R package is unavailable).
"""
import argparse
import math
import sys
import zlib

import numpy as np

__all__ = ["CASES", "Case", "run_case", "compare", "max_ulp", "main", "NOT_COVERED", "KNOWN_GGMLR_DIFFERENCES"]

DTYPES = ("f64", "f32")

# rows printed for features the R package does not have (listed, not hidden)
NOT_COVERED = [
    ("ag_fit", "not covered: R has no ag_fit"),
]

KNOWN_GGMLR_DIFFERENCES = [
    "s11.1  ggmlR's $grad is scaled by the number of consumers (the returned map is correct)",
    "s11.4  ggmlR's ag_add/ag_sub broadcast only B; ag_mul reduces only size-1 dims",
    "s11.5  ggmlR reads any integer target of ag_softmax_cross_entropy_loss as class ids",
    "s11.7  ggmlR's batch-norm input gradient ignores the batch statistics (pyggmlr: exact)",
    "s11.14 ggmlR computes in R doubles whatever the dtype (compare with pyggmlr f64 only)",
    "layers: ggmlR's attention uses selector matrices (same values, other rounding order)",
]


# ---------------------------------------------------------------------------------------------
# sides

class PySide:
    """The Python API as a side of a parity case: attributes are pyggmlr's functions, plus the
    helpers both sides share (set_dtype, np, tape, grad, set, items, memory, live)."""

    name = "python"

    def __init__(self):
        import pyggmlr
        self._pg = pyggmlr

    def __getattr__(self, name):
        return getattr(self._pg, name)

    def set_dtype(self, dtype):
        return self._pg.ag_dtype(dtype)

    def np(self, x):
        if isinstance(x, self._pg.Tensor):
            return x.numpy()
        return np.asarray(x)

    def tape(self, fn):
        return self._pg.with_grad_tape(fn)

    def grad(self, grads, t):
        return grads[t]

    def set(self, t, value):
        t.data = value

    def items(self, params):
        return list(params.items())

    def memory(self):
        import gc
        gc.collect()
        rep = self._pg.ag_tape_memory(quiet=True)
        return _mem_record(rep, [row["op"] for row in rep["by_op"]], [row["nodes"] for row in rep["by_op"]],
                           [row["mb"] for row in rep["by_op"]])

    def live(self):
        import gc
        gc.collect()
        return self._pg.ag_live_objects()


class RSide:
    """The R package (or ggmlR, for the optional column) as a side, through pyggmlr.r."""

    def __init__(self, pkg="pyggmlr"):
        from . import r
        self._r = r
        self.pkg = pkg
        self.name = "R" if pkg == "pyggmlr" else pkg
        r.start()

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        r, pkg = self._r, self.pkg
        return lambda *a, **k: r._call_pkg(pkg, name, a, k)

    def set_dtype(self, dtype):
        return self._r._call_pkg(self.pkg, "ag_dtype", (dtype,), {})

    def np(self, x):
        r = self._r
        if isinstance(x, r.RObject) and x.is_tensor():
            return _as_dtype(x.data, x.dtype)
        return np.asarray(x)

    def tape(self, fn):
        return self._r.tape(fn, pkg=self.pkg)

    def grad(self, grads, t):
        g = self._r.call("get0", str(int(t.id)), grads, inherits=False)
        return None if g is None else _as_dtype(g, t.dtype)

    def set(self, t, value):
        t.data = value

    def items(self, params):
        return [(n, params[n]) for n in params.names()]

    def memory(self):
        # R frees dropped intermediates only when its GC runs finalizers: until then they count
        # as operands held elsewhere (bytes_inputs), not as tape-only activations
        self._r.r_gc()
        rep = self._r._call_pkg(self.pkg, "ag_tape_memory", (), {"quiet": True})
        by = rep["by_op"]
        ops = by["op"] if by is not None else []
        ops = [ops] if isinstance(ops, str) else list(ops)
        rec = _mem_record(rep, ops, list(np.atleast_1d(by["nodes"])), list(np.atleast_1d(by["mb"])))
        return rec

    def live(self):
        return self._r.r_live_objects()


def _as_dtype(a, dtype):
    a = np.asarray(a)
    return a.astype(np.float32) if dtype == "f32" else a.astype(np.float64)


def _mem_record(rep, ops, nodes, mb):
    rec = {k: np.array([float(rep[k])]) for k in ("nodes", "bytes_total", "bytes_snapshots", "bytes_fields",
                                                   "bytes_inputs")}
    rec["by_op.nodes"] = np.array([float(v) for v in nodes])
    rec["by_op.mb"] = np.array([float(v) for v in mb])
    rec["by_op.op"] = np.array([zlib.crc32(str(o).encode()) for o in ops], dtype=np.float64)
    return rec


# ---------------------------------------------------------------------------------------------
# the table of cases

class Case:
    """One parity case: fn(side, inputs, steps) runs on a side (PySide or RSide) and returns
    the records compared after each step; inputs(rng) builds the shared numpy inputs, dtypes
    are the dtypes it runs in, ggmlr says whether the optional ggmlR column applies."""

    def __init__(self, name, group, fn, steps=1, inputs=None, dtypes=DTYPES, ggmlr=True):
        self.name, self.group, self.fn, self.steps = name, group, fn, steps
        self.inputs = inputs or (lambda rng: {})
        self.dtypes, self.ggmlr = dtypes, ggmlr

    def __repr__(self):
        return f"Case({self.name!r}, {self.group!r}, steps={self.steps})"


CASES = []


def _seed(name):
    return zlib.crc32(name.encode())


def _add(name, group, steps=1, inputs=None, ggmlr=True):
    def deco(fn):
        CASES.append(Case(name, group, fn, steps, inputs, ggmlr=ggmlr))
        return fn
    return deco


def _u(rng, *shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, size=shape)


# ---- ops: forward value, a weighted-sum loss and every input's gradient ----------------------

def _op(name, shapes, f, positive=(), keep=None):
    """An op case: inputs x0, x1, ... (parameters) of the given shapes; loss = sum(f(...) * w)
    with a fixed random weight w of the output's shape."""

    def inputs(rng):
        d = {}
        for i, s in enumerate(shapes):
            d[f"x{i}"] = _u(rng, *s, lo=0.2, hi=2.0) if i in positive else _u(rng, *s)
        d["w"] = _u(rng, 64 * 64)
        return d

    def fn(P, d, steps):
        xs = [P.ag_param(d[f"x{i}"]) for i in range(len(shapes))]
        box = {}

        def fwd():
            y = f(P, *xs)
            box["y"] = y
            yv = P.np(y)
            w = d["w"][: yv.size].reshape(yv.shape, order="F")
            return P.ag_sum(P.ag_mul(y, w))

        loss = P.tape(fwd)
        g = P.backward(loss)
        rec = {"y": P.np(box["y"]), "loss": P.np(loss)}
        for i, x in enumerate(xs):
            rec[f"grad x{i}"] = P.grad(g, x)
        return [rec]

    CASES.append(Case(f"op:{name}", "op", fn, 1, inputs))


A, B = (3, 4), (4, 5)
_op("matmul", [A, B], lambda P, a, b: P.ag_matmul(a, b))
_op("add", [A, A], lambda P, a, b: P.ag_add(a, b))
_op("add bcast col", [A, (3, 1)], lambda P, a, b: P.ag_add(a, b))
_op("add bcast row", [(1, 4), A], lambda P, a, b: P.ag_add(a, b))
_op("add scalar", [A, (1, 1)], lambda P, a, b: P.ag_add(a, b))
_op("sub", [A, A], lambda P, a, b: P.ag_sub(a, b))
_op("sub bcast col", [A, (3, 1)], lambda P, a, b: P.ag_sub(a, b))
_op("sub bcast row", [(1, 4), A], lambda P, a, b: P.ag_sub(a, b))
_op("mul", [A, A], lambda P, a, b: P.ag_mul(a, b))
_op("mul bcast col", [(3, 1), A], lambda P, a, b: P.ag_mul(a, b))
_op("mul bcast row", [A, (1, 4)], lambda P, a, b: P.ag_mul(a, b))
_op("div", [A, A], lambda P, a, b: P.ag_div(a, b), positive=(1,))
_op("div bcast col", [A, (3, 1)], lambda P, a, b: P.ag_div(a, b), positive=(1,))
_op("div bcast row", [(1, 4), A], lambda P, a, b: P.ag_div(a, b), positive=(1,))
_op("scale", [A], lambda P, a: P.ag_scale(a, -0.37))
_op("neg", [A], lambda P, a: P.ag_neg(a))
_op("relu", [A], lambda P, a: P.ag_relu(a))
_op("sigmoid", [A], lambda P, a: P.ag_sigmoid(a))
_op("tanh", [A], lambda P, a: P.ag_tanh(a))
_op("gelu", [A], lambda P, a: P.ag_gelu(a))
_op("softmax", [A], lambda P, a: P.ag_softmax(a))
_op("log", [A], lambda P, a: P.ag_log(a), positive=(0,))
_op("exp", [A], lambda P, a: P.ag_exp(a))
_op("pow", [A], lambda P, a: P.ag_pow(a, 2.5), positive=(0,))
_op("clamp", [A], lambda P, a: P.ag_clamp(a, -0.3, 0.4))
_op("sum", [A], lambda P, a: P.ag_sum(a))
_op("sum dim=1", [A], lambda P, a: P.ag_sum(a, dim=1))
_op("sum dim=2", [A], lambda P, a: P.ag_sum(a, dim=2))
_op("mean", [A], lambda P, a: P.ag_mean(a))
_op("mean dim=1", [A], lambda P, a: P.ag_mean(a, dim=1))
_op("mean dim=2", [A], lambda P, a: P.ag_mean(a, dim=2))
_op("transpose", [A], lambda P, a: P.ag_transpose(a))
_op("reshape", [A], lambda P, a: P.ag_reshape(a, 2, 6))
_op("slice_rows", [(5, 3)], lambda P, a: P.ag_slice_rows(a, 1, 3))
_op("concat_rows", [A, (2, 4)], lambda P, a, b: P.ag_concat_rows(a, b))
_op("chain tanh(W x + b)", [A, B, (3, 1)], lambda P, w, x, b: P.ag_tanh(P.ag_add(P.ag_matmul(w, x), b)))


def _loss_inputs(rng):
    logits = _u(rng, 4, 6, lo=-2, hi=2)
    ids = rng.integers(0, 4, size=6)
    onehot = np.zeros((4, 6))
    onehot[ids, np.arange(6)] = 1.0
    probs = rng.uniform(0.05, 1.0, size=(4, 6))
    probs /= probs.sum(axis=0, keepdims=True)
    return {"logits": logits, "ids": ids, "onehot": onehot, "probs": probs, "target": _u(rng, 4, 6)}


def _loss_case(name, f):
    def fn(P, d, steps):
        x = P.ag_param(d["logits"])
        loss = P.tape(lambda: f(P, x, d))
        g = P.backward(loss)
        return [{"loss": P.np(loss), "grad": P.grad(g, x)}]
    CASES.append(Case(f"loss:{name}", "loss", fn, 1, _loss_inputs))


_loss_case("mse", lambda P, x, d: P.ag_mse_loss(x, d["target"]))
_loss_case("cross_entropy", lambda P, x, d: P.ag_cross_entropy_loss(P.ag_softmax(x), d["probs"]))
_loss_case("softmax_ce one-hot", lambda P, x, d: P.ag_softmax_cross_entropy_loss(x, d["onehot"]))
_loss_case("softmax_ce soft labels", lambda P, x, d: P.ag_softmax_cross_entropy_loss(x, d["probs"]))
_loss_case("softmax_ce ids", lambda P, x, d: P.ag_softmax_cross_entropy_loss(x, d["ids"]))


# ---- optimizers, schedulers, clipping: a two-layer MLP trained for several steps -------------

def _mlp_inputs(rng):
    return {"W1": _u(rng, 5, 4), "b1": _u(rng, 5, 1, lo=-0.1, hi=0.1), "W2": _u(rng, 3, 5),
            "b2": _u(rng, 3, 1, lo=-0.1, hi=0.1), "x": _u(rng, 4, 8, lo=-2, hi=2),
            "y": rng.integers(0, 3, size=8)}


def _mlp_params(P, d):
    return {k: P.ag_param(d[k]) for k in ("W1", "b1", "W2", "b2")}


def _mlp_loss(P, p, d):
    h = P.ag_relu(P.ag_add(P.ag_matmul(p["W1"], d["x"]), p["b1"]))
    return P.ag_softmax_cross_entropy_loss(P.ag_add(P.ag_matmul(p["W2"], h), p["b2"]), d["y"])


def _train(P, d, steps, make_opt, sched=None, clip=None):
    p = _mlp_params(P, d)
    opt = make_opt(P, p)
    sch = sched(P, opt) if sched else None
    out = []
    for _ in range(steps):
        loss = P.tape(lambda: _mlp_loss(P, p, d))
        g = P.backward(loss)
        rec = {"loss": P.np(loss)}
        if clip is not None:
            rec["norm"] = np.array([P.clip_grad_norm(p, g, clip)])
        for k, t in p.items():
            rec[f"grad {k}"] = P.grad(g, t)
        if sch is not None:
            rec["lr"] = np.array([sch.step()])
        opt.step(g)
        opt.zero_grad()
        for k, t in p.items():
            rec[k] = P.np(t)
        rec["t"] = np.array([float(opt.t)])
        out.append(rec)
    return out


def _opt_case(name, make_opt, steps=5, sched=None, clip=None):
    CASES.append(Case(name, "optim", lambda P, d, s: _train(P, d, s, make_opt, sched, clip), steps, _mlp_inputs))


_opt_case("sgd", lambda P, p: P.optimizer_sgd(p, lr=0.1))
_opt_case("sgd momentum", lambda P, p: P.optimizer_sgd(p, lr=0.1, momentum=0.9))
_opt_case("sgd nesterov", lambda P, p: P.optimizer_sgd(p, lr=0.1, momentum=0.9, nesterov=True))
_opt_case("sgd weight_decay", lambda P, p: P.optimizer_sgd(p, lr=0.1, momentum=0.5, weight_decay=0.01))
_opt_case("sgd accumulate=2", lambda P, p: P.optimizer_sgd(p, lr=0.1, momentum=0.9, accumulate_steps=2), steps=6)
_opt_case("sgd accumulate=3 sum", lambda P, p: P.optimizer_sgd(p, lr=0.05, accumulate_steps=3, average=False), steps=6)
_opt_case("adam", lambda P, p: P.optimizer_adam(p, lr=0.01))
_opt_case("adamw", lambda P, p: P.optimizer_adam(p, lr=0.01, weight_decay=0.1))
_opt_case("adam betas eps", lambda P, p: P.optimizer_adam(p, lr=0.02, beta1=0.8, beta2=0.99, eps=1e-6))
_opt_case("adam accumulate=2", lambda P, p: P.optimizer_adam(p, lr=0.01, accumulate_steps=2), steps=6)
_opt_case("scheduler step", lambda P, p: P.optimizer_sgd(p, lr=0.2, momentum=0.9), steps=6,
          sched=lambda P, o: P.lr_scheduler_step(o, 2, gamma=0.5))
_opt_case("scheduler cosine", lambda P, p: P.optimizer_adam(p, lr=0.05), steps=6,
          sched=lambda P, o: P.lr_scheduler_cosine(o, 4, lr_min=0.001))
_opt_case("scheduler cosine restart", lambda P, p: P.optimizer_sgd(p, lr=0.1), steps=7,
          sched=lambda P, o: P.lr_scheduler_cosine(o, 3, lr_min=0.01, restart=True))
_opt_case("clip_grad_norm", lambda P, p: P.optimizer_sgd(p, lr=0.5, momentum=0.9), clip=0.25)


# ---- layers --------------------------------------------------------------------------------

def _layer_run(P, d, steps, build, forward, lr=0.05):
    """Build a layer (weights set from d), then `steps` SGD steps of loss = sum(out * w)."""
    layer, params = build(P, d)
    opt = P.optimizer_sgd(params, lr=lr, momentum=0.9)
    out = []
    for _ in range(steps):
        box = {}

        def fwd():
            y = forward(P, layer, d)
            box["y"] = y
            yv = P.np(y)
            return P.ag_sum(P.ag_mul(y, d["w"][: yv.size].reshape(yv.shape, order="F")))

        loss = P.tape(fwd)
        g = P.backward(loss)
        rec = {"y": P.np(box["y"]), "loss": P.np(loss)}
        for k, t in P.items(params):
            rec[f"grad {k}"] = P.grad(g, t)
        opt.step(g)
        opt.zero_grad()
        for k, t in P.items(params):
            rec[k] = P.np(t)
        for k in ("running_mean", "running_var"):
            if d.get("bn") and k in d["bn"]:
                rec[k] = P.np(getattr(layer, k))
        out.append(rec)
    return out


def _layer_case(name, build, forward, inputs, steps=3):
    CASES.append(Case(f"layer:{name}", "layer", lambda P, d, s: _layer_run(P, d, s, build, forward), steps, inputs))


def _with_w(f):
    def inputs(rng):
        d = f(rng)
        d["w"] = _u(rng, 64 * 64)
        return d
    return inputs


def _build_linear(act):
    def build(P, d):
        lin = P.ag_linear(4, 3, act)
        P.set(lin.W, d["W"])
        P.set(lin.b, d["b"])
        return lin, lin.params()
    return build


_lin_in = _with_w(lambda rng: {"W": _u(rng, 3, 4), "b": _u(rng, 3, 1), "x": _u(rng, 4, 6, lo=-2, hi=2)})
_layer_case("linear", _build_linear(None), lambda P, m, d: m.forward(d["x"]), _lin_in)
_layer_case("linear relu", _build_linear("relu"), lambda P, m, d: m.forward(d["x"]), _lin_in)
_layer_case("linear gelu", _build_linear("gelu"), lambda P, m, d: m.forward(d["x"]), _lin_in)


def _norm_build(kind, eval_mode=False):
    def build(P, d):
        layer = getattr(P, kind)(4)
        P.set(layer.gamma, d["gamma"])
        P.set(layer.beta, d["beta"])
        if eval_mode:
            P.set_running(layer, d)
            P.ag_eval(layer)
        return layer, layer.parameters()
    return build


def _bn_inputs(rng):
    return {"gamma": _u(rng, 4, 1, lo=0.5, hi=1.5), "beta": _u(rng, 4, 1), "x": _u(rng, 4, 7, lo=-2, hi=3),
            "rm": _u(rng, 4, 1), "rv": _u(rng, 4, 1, lo=0.5, hi=2.0), "bn": ("running_mean", "running_var")}


def _set_running(P, layer, d):
    # R's running stats are active bindings over core tensors; Python's are tensors
    if isinstance(P, PySide):
        layer.running_mean.data = d["rm"]
        layer.running_var.data = d["rv"]
    else:
        layer.running_mean = d["rm"]
        layer.running_var = d["rv"]


PySide.set_running = lambda self, layer, d: _set_running(self, layer, d)
RSide.set_running = lambda self, layer, d: _set_running(self, layer, d)

_layer_case("batch_norm train", _norm_build("ag_batch_norm"), lambda P, m, d: m.forward(d["x"]), _with_w(_bn_inputs), steps=4)
_layer_case("batch_norm eval", _norm_build("ag_batch_norm", eval_mode=True), lambda P, m, d: m.forward(d["x"]),
            _with_w(_bn_inputs), steps=3)
_layer_case("layer_norm", _norm_build("ag_layer_norm"), lambda P, m, d: m.forward(d["x"]),
            _with_w(lambda rng: {k: v for k, v in _bn_inputs(rng).items() if k != "bn"}))


def _build_emb(P, d):
    e = P.ag_embedding(6, 3)
    P.set(e.weight, d["E"])
    return e, e.parameters()


_layer_case("embedding", _build_emb, lambda P, m, d: m.forward(d["ids"]),
            _with_w(lambda rng: {"E": _u(rng, 3, 6), "ids": np.array([0, 3, 3, 5, 1, 0, 3])}))


def _build_mha(P, d):
    m = P.ag_multihead_attention(4, 2)
    for k in ("W_q", "W_k", "W_v", "W_o", "b_o"):
        P.set(getattr(m, k), d[k])
    return m, m.parameters()


_mha_in = _with_w(lambda rng: {"W_q": _u(rng, 4, 4), "W_k": _u(rng, 4, 4), "W_v": _u(rng, 4, 4),
                               "W_o": _u(rng, 4, 4), "b_o": _u(rng, 4, 1), "x": _u(rng, 4, 5)})
_layer_case("attention", _build_mha, lambda P, m, d: m.forward(d["x"]), _mha_in)
_layer_case("attention causal", _build_mha, lambda P, m, d: m.forward(d["x"], causal_mask=True), _mha_in)
_layer_case("attention cross", _build_mha, lambda P, m, d: m.forward(d["x"], d["kv"], d["kv"]),
            _with_w(lambda rng: {**_mha_in(rng), "kv": _u(rng, 4, 3)}))


def _build_seq_dropout(rate, eval_mode):
    def build(P, d):
        lin = P.ag_linear(4, 3, "tanh")
        P.set(lin.W, d["W"])
        P.set(lin.b, d["b"])
        m = P.ag_sequential(lin, P.ag_dropout(rate))
        if eval_mode:
            P.ag_eval(m)
        return m, m.parameters()
    return build


_layer_case("dropout rate 0", _build_seq_dropout(0.0, False), lambda P, m, d: m.forward(d["x"]), _lin_in)
_layer_case("dropout eval", _build_seq_dropout(0.5, True), lambda P, m, d: m.forward(d["x"]), _lin_in)
# a dropout mask drawn once in Python and given to both sides: x * (u > rate) / (1 - rate)
_layer_case("dropout given mask", _build_linear("relu"),
            lambda P, m, d: P.ag_mul(m.forward(d["x"]), d["mask"]),
            _with_w(lambda rng: {**_lin_in(rng), "mask": (rng.uniform(size=(3, 6)) > 0.3) / 0.7}))


def _build_seq(P, d):
    l1 = P.ag_linear(4, 5, "relu")
    l2 = P.ag_linear(5, 3)
    for l, (w, b) in ((l1, ("W1", "b1")), (l2, ("W2", "b2"))):
        P.set(l.W, d[w])
        P.set(l.b, d[b])
    m = P.ag_sequential(l1, l2)
    return m, m.parameters()


_layer_case("sequential", _build_seq, lambda P, m, d: m.forward(d["x"]), _with_w(_mlp_inputs), steps=4)


# ---- data, memory --------------------------------------------------------------------------

@_add("dataloader no shuffle", "data", steps=2,
      inputs=lambda rng: {"x": _u(rng, 3, 10), "y": _u(rng, 2, 10)})
def _case_dataloader(P, d, steps):
    dl = P.ag_dataloader(d["x"], d["y"], batch_size=4, shuffle=False)
    out = []
    for _ in range(steps):  # epochs: 10 samples, batch 4 -> 2 full batches (last partial dropped)
        dl.reset()
        rec, i = {}, 0
        while dl.has_next():
            b = dl.next_batch()
            rec[f"x{i}"], rec[f"y{i}"] = P.np(b["x"]), P.np(b["y"])
            i += 1
        rec["n_batches"] = np.array([float(i), float(dl.n_batches())])
        out.append(rec)
    return out


@_add("ag_tape_memory", "memory", steps=2, inputs=_mlp_inputs, ggmlr=False)
def _case_memory(P, d, steps):
    p = _mlp_params(P, d)
    opt = P.optimizer_adam(p, lr=0.01)
    out = []
    for _ in range(steps):
        loss = P.tape(lambda: _mlp_loss(P, p, d))
        g = P.backward(loss)
        rec = P.memory()
        opt.step(g)
        opt.zero_grad()
        rec["after zero_grad nodes"] = P.memory()["nodes"]
        out.append(rec)
    return out


# ---- training loops written in R (r.run) vs the same loop in Python --------------------------

_R_MLP_LOOP = """
prev <- ag_dtype(dtype)
W1 <- ag_param(W1_0); b1 <- ag_param(b1_0); W2 <- ag_param(W2_0); b2 <- ag_param(b2_0)
opt <- optimizer_adam(list(W1 = W1, b1 = b1, W2 = W2, b2 = b2), lr = 0.01, weight_decay = 0.05)
sched <- lr_scheduler_step(opt, step_size = 2, gamma = 0.5)
out <- list()
for (s in seq_len(steps)) {
  loss <- with_grad_tape({
    h <- ag_tanh(ag_add(ag_matmul(W1, x), b1))
    ag_mse_loss(ag_add(ag_matmul(W2, h), b2), y)
  })
  g <- backward(loss)
  rec <- list(loss = loss$data)
  for (nm in c("W1", "b1", "W2", "b2")) rec[[paste("grad", nm)]] <- get0(as.character(get(nm)$id), envir = g)
  rec$norm <- clip_grad_norm(list(W1, b1, W2, b2), g, 0.5)
  opt$step(g)
  opt$zero_grad()
  rec$lr <- sched$step()
  for (nm in c("W1", "b1", "W2", "b2")) rec[[nm]] <- get(nm)$data
  out[[s]] <- rec
}
ag_dtype(prev)
out
"""


def _script_mlp_py(d, steps, dtype):
    import pyggmlr as pg
    prev = pg.ag_dtype(dtype)
    try:
        p = {k: pg.ag_param(d[k]) for k in ("W1", "b1", "W2", "b2")}
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
    finally:
        pg.ag_dtype(prev)


def _script_mlp_r(d, steps, dtype):
    from . import r
    res = r.run(_R_MLP_LOOP, dtype=dtype, steps=steps, x=d["x"], y=d["ytarget"],
                **{f"{k}_0": d[k] for k in ("W1", "b1", "W2", "b2")})
    out = []
    for rec in res:
        out.append({k: (np.array([v]) if np.ndim(v) == 0 else _as_dtype(v, dtype)) for k, v in rec.items()})
    return out


class ScriptCase(Case):
    """A case whose Python and R sides are separate programs (R code run with r.run)."""

    def __init__(self, name, py, rr, steps, inputs):
        super().__init__(name, "script", None, steps, inputs, ggmlr=False)
        self.py, self.rr = py, rr


CASES.append(ScriptCase("script: R training loop (adamw, step lr, clipping)", _script_mlp_py, _script_mlp_r, 5,
                        lambda rng: {**_mlp_inputs(rng), "ytarget": _u(rng, 3, 8)}))


# ---------------------------------------------------------------------------------------------
# comparison

def max_ulp(a, b):
    """Max distance in units in the last place between two float arrays of one dtype (0 when
    identical; NaNs in the same places count as equal; a NaN against a number is inf)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.size == 0:
        return 0
    if a.dtype == np.float32:
        ia, ib = a.view(np.int32).astype(np.int64), b.view(np.int32).astype(np.int64)
        lo = np.int64(np.iinfo(np.int32).min)
    else:
        a, b = a.astype(np.float64), b.astype(np.float64)
        ia, ib = a.view(np.int64).astype(object), b.view(np.int64).astype(object)
        lo = int(np.iinfo(np.int64).min)
    ia = np.where(ia < 0, lo - ia, ia)
    ib = np.where(ib < 0, lo - ib, ib)
    na, nb = np.isnan(a), np.isnan(b)
    if np.any(na != nb):
        return math.inf
    d = np.abs(ia - ib)[~na]
    return int(d.max()) if d.size else 0


def compare(ref, got):
    """Compare two lists of step records. Returns (max_abs, max_ulp, first_mismatch) where
    first_mismatch is None or a message naming the step and the value."""
    if len(ref) != len(got):
        return math.inf, math.inf, f"{len(ref)} steps on the Python side, {len(got)} on the other"
    worst_abs, worst_ulp, first = 0.0, 0, None
    for step, (ra, rb) in enumerate(zip(ref, got), 1):
        if set(ra) != set(rb):
            return math.inf, math.inf, f"step {step}: values {sorted(set(ra) ^ set(rb))} exist on one side only"
        for key in ra:
            a, b = np.asarray(ra[key]), rb[key]
            if b is None:
                return math.inf, math.inf, f"step {step}, {key}: missing on the other side"
            b = np.asarray(b)
            if a.dtype.kind == "f" and b.dtype != a.dtype:
                b = b.astype(a.dtype)  # R hands f32 values over as (exact) doubles
            if a.shape != b.shape:
                return math.inf, math.inf, f"step {step}, {key}: shape {a.shape} vs {b.shape}"
            with np.errstate(invalid="ignore"):
                diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
            both_nan = np.isnan(a) & np.isnan(b) if a.dtype.kind == "f" else np.zeros(a.shape, bool)
            diff = np.where(both_nan, 0.0, diff)
            mabs = float(np.nanmax(np.where(np.isnan(diff), np.inf, diff))) if diff.size else 0.0
            mulp = max_ulp(a, b) if a.dtype.kind == "f" else (0 if mabs == 0 else math.inf)
            worst_abs, worst_ulp = max(worst_abs, mabs), max(worst_ulp, mulp)
            if first is None and (mulp != 0 or mabs != 0):
                first = f"step {step}, {key}: max abs diff {mabs:.3g}, max ULP {mulp}"
    return worst_abs, worst_ulp, first


def run_case(case, dtype, side):
    """Run one case on one side (PySide / RSide) in `dtype`; returns its step records."""
    d = case.inputs(np.random.default_rng(_seed(case.name)))
    if isinstance(case, ScriptCase):
        return case.py(d, case.steps, dtype) if isinstance(side, PySide) else case.rr(d, case.steps, dtype)
    prev = side.set_dtype(dtype)
    try:
        return case.fn(side, d, case.steps)
    finally:
        side.set_dtype(prev)
        side.ag_tape_clear()


def check_case(case, dtype, py=None, rside=None):
    """Run a case on both sides; returns a result dict (case, dtype, steps, max_abs, max_ulp,
    status, detail)."""
    py = py or PySide()
    rside = rside or RSide()
    rside._r.sync_blas()
    res = {"case": case.name, "group": case.group, "dtype": dtype, "steps": case.steps}
    try:
        a = run_case(case, dtype, py)
        b = run_case(case, dtype, rside)
    except Exception as e:  # a side failed: report it as a mismatch naming the error
        res.update(max_abs=math.inf, max_ulp=math.inf, status="ERROR", detail=f"{type(e).__name__}: {e}")
        return res
    mabs, mulp, first = compare(a, b)
    res.update(max_abs=mabs, max_ulp=mulp, status="ok" if first is None else "MISMATCH", detail=first)
    return res


def _ggmlr_column(case, dtype, py, gside):
    if gside is None or dtype != "f64" or not case.ggmlr or isinstance(case, ScriptCase):
        return ""
    try:
        a = run_case(case, dtype, py)
        b = run_case(case, dtype, gside)
    except Exception as e:
        return f"error: {type(e).__name__}: {str(e)[:40]}"
    worst_abs, worst_rel = 0.0, 0.0
    for ra, rb in zip(a, b):
        for k in ra:
            if k not in rb or rb[k] is None or np.shape(ra[k]) != np.shape(rb[k]):
                return f"differs: {k}"
            x, y = np.asarray(ra[k], float), np.asarray(rb[k], float)
            d = np.abs(x - y)
            worst_abs = max(worst_abs, float(d.max()) if d.size else 0.0)
            worst_rel = max(worst_rel, float((d / np.maximum(np.abs(x), 1e-12)).max()) if d.size else 0.0)
    return f"abs {worst_abs:.2e} rel {worst_rel:.2e}"


def _fmt(v):
    if v == math.inf:
        return "inf"
    return f"{v:.3g}" if isinstance(v, float) else str(v)


def main(argv=None):
    """Command line of ``python -m pyggmlr parity``: run every case (or those matching --case)
    in Python and in R, print the comparison table and return 0 when all agree bit for bit,
    1 on any mismatch, 2 when R, rpy2 or the R package is missing."""
    ap = argparse.ArgumentParser(prog="python -m pyggmlr parity",
                                 description="Run every parity case in Python and in R (rpy2) and compare them.")
    ap.add_argument("--dtype", choices=DTYPES, action="append", help="dtype(s) to run (default: both)")
    ap.add_argument("--case", action="append", default=[], help="only cases whose name contains this")
    ap.add_argument("--blas", choices=("openblas", "builtin"), default=None,
                    help="GEMM both languages use (default: Python's current one)")
    ap.add_argument("--verbose", "-v", action="store_true", help="print the first differing value of each case")
    args = ap.parse_args(argv)

    from . import r
    why = r.unavailable_reason()
    if why:
        print(f"parity: cannot run: {why}")
        return 2
    try:
        r.start()
    except RuntimeError as e:
        print(f"parity: cannot run: {e}")
        return 2
    import pyggmlr as pg
    if args.blas:
        pg.use_blas(args.blas)
    r.sync_blas()
    py, rside = PySide(), RSide()
    gside = RSide("ggmlR") if r.package_installed("ggmlR") else None
    dtypes = args.dtype or list(DTYPES)
    cases = [c for c in CASES if not args.case or any(s in c.name for s in args.case)]
    print(f"pyggmlr parity: Python vs R (rpy2), GEMM: Python {pg.blas_name()} / R {r.call('ag_blas_name')}")
    hdr = f"{'case':<52} {'dtype':<5} {'steps':>5} {'max abs diff':>12} {'max ULP':>8}  status"
    if gside is not None:
        hdr += "   ggmlR (f64)"
    print(hdr)
    print("-" * len(hdr))
    bad = 0
    for c in cases:
        for dt in dtypes:
            res = check_case(c, dt, py, rside)
            line = (f"{c.name:<52} {dt:<5} {c.steps:>5} {_fmt(res['max_abs']):>12} {_fmt(res['max_ulp']):>8}  "
                    f"{res['status']}")
            if gside is not None:
                line += "   " + _ggmlr_column(c, dt, py, gside)
            print(line)
            if res["status"] != "ok":
                bad += 1
                print(f"    {res['detail']}")
            elif args.verbose and res["detail"]:
                print(f"    {res['detail']}")
    for name, why in NOT_COVERED:
        print(f"{name:<52} {'-':<5} {'-':>5} {'-':>12} {'-':>8}  {why}")
    if gside is None:
        print("\nggmlR column: not shown (the R package ggmlR is not installed)")
    else:
        print("\nggmlR column (informational): known ggmlR 0.8.2 differences (spec section 11):")
        for line in KNOWN_GGMLR_DIFFERENCES:
            print(f"  {line}")
    n = len(cases) * len(dtypes)
    print(f"\n{n - bad}/{n} case runs identical" + (f", {bad} MISMATCH" if bad else " (max ULP 0 everywhere)"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
