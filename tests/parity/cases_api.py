"""Cases written once against a side (Case.fn): ops, losses, optimizers, schedulers, clipping,
layers, the dataloader and the tape memory report, on inputs drawn in Python."""

from __future__ import annotations

import numpy as np

from .core import CASES, Case, _u


def _add(name, group, steps=1, inputs=None, ggmlr=True):
    def deco(fn):
        CASES.append(Case(name, group, fn, steps, inputs, ggmlr=ggmlr))
        return fn

    return deco


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
_op(
    "chain tanh(W x + b)",
    [A, B, (3, 1)],
    lambda P, w, x, b: P.ag_tanh(P.ag_add(P.ag_matmul(w, x), b)),
)


def _loss_inputs(rng):
    logits = _u(rng, 4, 6, lo=-2, hi=2)
    ids = rng.integers(0, 4, size=6)
    onehot = np.zeros((4, 6))
    onehot[ids, np.arange(6)] = 1.0
    probs = rng.uniform(0.05, 1.0, size=(4, 6))
    probs /= probs.sum(axis=0, keepdims=True)
    masked = probs * np.array([0.0, 2.0, 1.0, 0.5, 1.0, 1.0])  # column sums 0, 2, 1, 0.5: issue 28
    return {
        "logits": logits,
        "ids": ids,
        "onehot": onehot,
        "probs": probs,
        "target": _u(rng, 4, 6),
        "masked": masked,
    }


def _loss_case(name, f, ggmlr=True):
    def fn(P, d, steps):
        x = P.ag_param(d["logits"])
        loss = P.tape(lambda: f(P, x, d))
        g = P.backward(loss)
        return [{"loss": P.np(loss), "grad": P.grad(g, x)}]

    CASES.append(Case(f"loss:{name}", "loss", fn, 1, _loss_inputs, ggmlr=ggmlr))


_loss_case("mse", lambda P, x, d: P.ag_mse_loss(x, d["target"]))
_loss_case("cross_entropy", lambda P, x, d: P.ag_cross_entropy_loss(P.ag_softmax(x), d["probs"]))
_loss_case("softmax_ce one-hot", lambda P, x, d: P.ag_softmax_cross_entropy_loss(x, d["onehot"]))
_loss_case("softmax_ce soft labels", lambda P, x, d: P.ag_softmax_cross_entropy_loss(x, d["probs"]))
_loss_case("softmax_ce ids", lambda P, x, d: P.ag_softmax_cross_entropy_loss(x, d["ids"]))
# issue 28, where ggmlR 0.8.6 differs: no 1e-7 cap on saturated logits (x 40: gaps up to 160),
# the gradient of unnormalised soft targets, and cross-entropy's gradient 0 where its clamp holds
_loss_case(
    "softmax_ce saturated",
    lambda P, x, d: P.ag_softmax_cross_entropy_loss(P.ag_scale(x, 40.0), d["ids"]),
    ggmlr=False,
)
_loss_case(
    "softmax_ce unnormalised soft labels",
    lambda P, x, d: P.ag_softmax_cross_entropy_loss(x, d["masked"]),
    ggmlr=False,
)
_loss_case(
    "cross_entropy clamped",
    lambda P, x, d: P.ag_cross_entropy_loss(P.ag_softmax(P.ag_scale(x, 40.0)), d["onehot"]),
    ggmlr=False,
)


# ---- optimizers, schedulers, clipping: a two-layer MLP trained for several steps -------------


def _mlp_inputs(rng):
    return {
        "W1": _u(rng, 5, 4),
        "b1": _u(rng, 5, 1, lo=-0.1, hi=0.1),
        "W2": _u(rng, 3, 5),
        "b2": _u(rng, 3, 1, lo=-0.1, hi=0.1),
        "x": _u(rng, 4, 8, lo=-2, hi=2),
        "y": rng.integers(0, 3, size=8),
    }


def _mlp_params(P, d):
    return {k: P.ag_param(d[k]) for k in ("W1", "b1", "W2", "b2")}


def _mlp_loss(P, p, d):
    h = P.ag_relu(P.ag_add(P.ag_matmul(p["W1"], d["x"]), p["b1"]))
    return P.ag_softmax_cross_entropy_loss(P.ag_add(P.ag_matmul(p["W2"], h), p["b2"]), d["y"])


def mlp_step(P, p, d, extra=None):
    """One forward/backward of the MLP: (gradient map, record of the loss, extra(g)'s values
    (a dict of arrays) and every parameter's gradient)."""
    loss = P.tape(lambda: _mlp_loss(P, p, d))
    g = P.backward(loss)
    rec = {"loss": P.np(loss)}
    if extra is not None:
        rec.update(extra(g))
    for k, t in p.items():
        rec[f"grad {k}"] = P.grad(g, t)
    return g, rec


def _train(P, d, steps, make_opt, sched=None, clip=None):
    p = _mlp_params(P, d)
    opt = make_opt(P, p)
    sch = sched(P, opt) if sched else None
    out = []
    for _ in range(steps):
        norm = (
            None if clip is None else (lambda g: {"norm": np.array([P.clip_grad_norm(p, g, clip)])})
        )
        g, rec = mlp_step(P, p, d, norm)
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
    CASES.append(
        Case(
            name,
            "optim",
            lambda P, d, s: _train(P, d, s, make_opt, sched, clip),
            steps,
            _mlp_inputs,
        )
    )


_opt_case("sgd", lambda P, p: P.optimizer_sgd(p, lr=0.1))
_opt_case("sgd momentum", lambda P, p: P.optimizer_sgd(p, lr=0.1, momentum=0.9))
_opt_case("sgd nesterov", lambda P, p: P.optimizer_sgd(p, lr=0.1, momentum=0.9, nesterov=True))
_opt_case(
    "sgd weight_decay", lambda P, p: P.optimizer_sgd(p, lr=0.1, momentum=0.5, weight_decay=0.01)
)
_opt_case(
    "sgd accumulate=2",
    lambda P, p: P.optimizer_sgd(p, lr=0.1, momentum=0.9, accumulate_steps=2),
    steps=6,
)
_opt_case(
    "sgd accumulate=3 sum",
    lambda P, p: P.optimizer_sgd(p, lr=0.05, accumulate_steps=3, average=False),
    steps=6,
)
_opt_case("adam", lambda P, p: P.optimizer_adam(p, lr=0.01))
_opt_case("adamw", lambda P, p: P.optimizer_adam(p, lr=0.01, weight_decay=0.1))
_opt_case(
    "adam betas eps", lambda P, p: P.optimizer_adam(p, lr=0.02, beta1=0.8, beta2=0.99, eps=1e-6)
)
_opt_case(
    "adam accumulate=2", lambda P, p: P.optimizer_adam(p, lr=0.01, accumulate_steps=2), steps=6
)
_opt_case(
    "scheduler step",
    lambda P, p: P.optimizer_sgd(p, lr=0.2, momentum=0.9),
    steps=6,
    sched=lambda P, o: P.lr_scheduler_step(o, 2, gamma=0.5),
)
_opt_case(
    "scheduler cosine",
    lambda P, p: P.optimizer_adam(p, lr=0.05),
    steps=6,
    sched=lambda P, o: P.lr_scheduler_cosine(o, 4, lr_min=0.001),
)
_opt_case(
    "scheduler cosine restart",
    lambda P, p: P.optimizer_sgd(p, lr=0.1),
    steps=7,
    sched=lambda P, o: P.lr_scheduler_cosine(o, 3, lr_min=0.01, restart=True),
)
_opt_case("clip_grad_norm", lambda P, p: P.optimizer_sgd(p, lr=0.5, momentum=0.9), clip=0.25)


# ---- layers --------------------------------------------------------------------------------


def _layer_run(P, d, steps, build, forward, lr=0.05):
    """Build a layer (weights set from d), then `steps` SGD steps of loss = sum(out * w)."""
    layer, params = build(P, d)
    opt = P.optimizer_sgd(params, lr=lr, momentum=0.9)
    out = []
    for _ in range(steps):
        box: dict = {}

        def fwd(box=box):  # called at once, in this step
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
    CASES.append(
        Case(
            f"layer:{name}",
            "layer",
            lambda P, d, s: _layer_run(P, d, s, build, forward),
            steps,
            inputs,
        )
    )


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


_lin_in = _with_w(
    lambda rng: {"W": _u(rng, 3, 4), "b": _u(rng, 3, 1), "x": _u(rng, 4, 6, lo=-2, hi=2)}
)
_layer_case("linear", _build_linear(None), lambda P, m, d: m.forward(d["x"]), _lin_in)
_layer_case("linear relu", _build_linear("relu"), lambda P, m, d: m.forward(d["x"]), _lin_in)
_layer_case("linear gelu", _build_linear("gelu"), lambda P, m, d: m.forward(d["x"]), _lin_in)


def _norm_build(kind, eval_mode=False):
    def build(P, d):
        layer = getattr(P, kind)(4)
        P.set(layer.gamma, d["gamma"])
        P.set(layer.beta, d["beta"])
        if eval_mode:
            P.set_running(layer, d)  # R: active bindings over core tensors
            P.ag_eval(layer)
        return layer, layer.parameters()

    return build


def _bn_inputs(rng):
    return {
        "gamma": _u(rng, 4, 1, lo=0.5, hi=1.5),
        "beta": _u(rng, 4, 1),
        "x": _u(rng, 4, 7, lo=-2, hi=3),
        "rm": _u(rng, 4, 1),
        "rv": _u(rng, 4, 1, lo=0.5, hi=2.0),
        "bn": ("running_mean", "running_var"),
    }


_layer_case(
    "batch_norm train",
    _norm_build("ag_batch_norm"),
    lambda P, m, d: m.forward(d["x"]),
    _with_w(_bn_inputs),
    steps=4,
)
_layer_case(
    "batch_norm eval",
    _norm_build("ag_batch_norm", eval_mode=True),
    lambda P, m, d: m.forward(d["x"]),
    _with_w(_bn_inputs),
    steps=3,
)
_layer_case(
    "layer_norm",
    _norm_build("ag_layer_norm"),
    lambda P, m, d: m.forward(d["x"]),
    _with_w(lambda rng: {k: v for k, v in _bn_inputs(rng).items() if k != "bn"}),
)


def _build_emb(P, d):
    e = P.ag_embedding(6, 3)
    P.set(e.weight, d["E"])
    return e, e.parameters()


_layer_case(
    "embedding",
    _build_emb,
    lambda P, m, d: m.forward(d["ids"]),
    _with_w(lambda rng: {"E": _u(rng, 3, 6), "ids": np.array([0, 3, 3, 5, 1, 0, 3])}),
)


def _build_mha(P, d):
    m = P.ag_multihead_attention(4, 2)
    for k in ("W_q", "W_k", "W_v", "W_o", "b_o"):
        P.set(getattr(m, k), d[k])
    return m, m.parameters()


_mha_in = _with_w(
    lambda rng: {
        "W_q": _u(rng, 4, 4),
        "W_k": _u(rng, 4, 4),
        "W_v": _u(rng, 4, 4),
        "W_o": _u(rng, 4, 4),
        "b_o": _u(rng, 4, 1),
        "x": _u(rng, 4, 5),
    }
)
_layer_case("attention", _build_mha, lambda P, m, d: m.forward(d["x"]), _mha_in)
_layer_case(
    "attention causal", _build_mha, lambda P, m, d: m.forward(d["x"], causal_mask=True), _mha_in
)
_layer_case(
    "attention cross",
    _build_mha,
    lambda P, m, d: m.forward(d["x"], d["kv"], d["kv"]),
    _with_w(lambda rng: {**_mha_in(rng), "kv": _u(rng, 4, 3)}),
)


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


_layer_case(
    "dropout rate 0", _build_seq_dropout(0.0, False), lambda P, m, d: m.forward(d["x"]), _lin_in
)
_layer_case(
    "dropout eval", _build_seq_dropout(0.5, True), lambda P, m, d: m.forward(d["x"]), _lin_in
)
# a dropout mask drawn once in Python and given to both sides: x * (u > rate) / (1 - rate)
_layer_case(
    "dropout given mask",
    _build_linear("relu"),
    lambda P, m, d: P.ag_mul(m.forward(d["x"]), d["mask"]),
    _with_w(lambda rng: {**_lin_in(rng), "mask": (rng.uniform(size=(3, 6)) > 0.3) / 0.7}),
)


def _build_seq(P, d):
    l1 = P.ag_linear(4, 5, "relu")
    l2 = P.ag_linear(5, 3)
    for lin, (w, b) in ((l1, ("W1", "b1")), (l2, ("W2", "b2"))):
        P.set(lin.W, d[w])
        P.set(lin.b, d[b])
    m = P.ag_sequential(l1, l2)
    return m, m.parameters()


_layer_case(
    "sequential", _build_seq, lambda P, m, d: m.forward(d["x"]), _with_w(_mlp_inputs), steps=4
)


# ---- data, memory --------------------------------------------------------------------------


def _loader_epochs(P, dl, steps):
    """Per epoch (reset() first): every batch's x and y and the batch counts."""
    out = []
    for _ in range(steps):
        dl.reset()
        rec, i = {}, 0
        while dl.has_next():
            b = dl.next_batch()
            rec[f"x{i}"], rec[f"y{i}"] = P.np(b["x"]), P.np(b["y"])
            i += 1
        rec["n_batches"] = np.array([float(i), float(dl.n_batches())])
        out.append(rec)
    return out


@_add(
    "dataloader no shuffle",
    "data",
    steps=2,
    inputs=lambda rng: {"x": _u(rng, 3, 10), "y": _u(rng, 2, 10)},
)
def _case_dataloader(P, d, steps):
    # 10 samples, batch 4 -> 2 full batches per epoch (last partial dropped)
    return _loader_epochs(P, P.ag_dataloader(d["x"], d["y"], batch_size=4, shuffle=False), steps)


@_add(
    "dataloader drop_last=FALSE, seed, vector y",
    "data",
    steps=2,
    inputs=lambda rng: {"x": _u(rng, 3, 10), "ids": rng.integers(0, 3, size=10) * 1.0},
    ggmlr=False,
)
def _case_dataloader_partial(P, d, steps):
    # the loader's own stream (seed): the same permutations in both languages; 10 samples in
    # batches of 4 -> 4, 4 and the partial 2 (the core's pg_batch_count); a vector y is one
    # value per sample (a [1, n] row) in both
    dl = P.ag_dataloader(d["x"], d["ids"], batch_size=4, seed=7, drop_last=False)
    return _loader_epochs(P, dl, steps)


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
