"""ggmlR 0.8.6's gradient write-back, accumulation idiom, parameter lists and optimizer state
(spec ggmlr-ag-api-0.8.6.md 1.1-1.3, 6.1-6.5, 7.1): goldens, identities and exact texts."""

import pickle
import re
import warnings

import numpy as np
import pytest

import pyggmlr as pg

W22 = np.array([[1.0, 3.0], [2.0, 4.0]])  # matrix(c(1,2,3,4), 2, 2)


# ---- 1.1 backward(): each requires-grad input gets the map total once ----


def test_backward_writes_grad_once_per_tensor(f64):
    W = pg.ag_param(W22)
    x = pg.ag_tensor(np.ones((2, 1)))
    with pg.with_grad_tape():
        h = pg.ag_matmul(W, x)
        loss = pg.ag_sum(pg.ag_matmul(W, h))
    g = pg.backward(loss)
    np.testing.assert_array_equal(g[W], [[7, 9], [11, 13]])
    np.testing.assert_array_equal(W.grad, [[7, 9], [11, 13]])
    np.testing.assert_array_equal(h.grad, [[3], [7]])  # an intermediate that feeds a node: once
    pg.backward(loss)  # a second backward on the same tape adds once more
    np.testing.assert_array_equal(W.grad, [[14, 18], [22, 26]])
    np.testing.assert_array_equal(h.grad, [[6], [14]])
    assert loss.grad is None  # the loss is no node's input
    assert x.grad is None


def test_add_x_x_gives_2G_and_mul_A_A(f64):
    X = pg.ag_param(np.array([[1.0, 2], [3, 4]]))
    G = np.array([[1.0, -1], [2, 0.5]])
    with pg.with_grad_tape():
        loss = pg.ag_sum(pg.ag_mul(pg.ag_add(X, X), pg.ag_tensor(G)))
    pg.backward(loss)
    np.testing.assert_array_equal(X.grad, 2 * G)
    A = pg.ag_param(np.array([[1.0], [2], [3]]))
    with pg.with_grad_tape():
        loss = pg.ag_sum(pg.ag_mul(A, A))
    pg.backward(loss)
    np.testing.assert_array_equal(A.grad.ravel(), [2, 4, 6])


def test_ag_grad(f64):
    A = pg.ag_param(np.array([[1.0], [2]]))
    assert pg.ag_grad(A) is None
    with pg.with_grad_tape():
        loss = pg.ag_sum(pg.ag_mul(A, A))
    pg.backward(loss)
    np.testing.assert_array_equal(pg.ag_grad(A), [[2], [4]])
    with pytest.raises(pg.ArgumentError, match=re.escape("ag_grad(): `x` must be an ag_tensor")):
        pg.ag_grad(np.ones((1, 1)))


def test_clip_on_the_map_leaves_grad_untouched(f64):
    W = pg.ag_param(W22)
    with pg.with_grad_tape():
        loss = pg.ag_sum(pg.ag_mul(W, W))
    g = pg.backward(loss)
    pg.clip_grad_norm([W], g, 1.0)
    np.testing.assert_array_equal(W.grad, 2 * W22)  # spec 7.1: environment only
    assert np.linalg.norm(g[W]) == pytest.approx(1.0, rel=1e-6)
    pg.clip_grad_value([W], None, 1.0)  # .grad clipped: the map keeps its values
    np.testing.assert_array_equal(W.grad, np.ones((2, 2)))
    assert np.linalg.norm(g[W]) == pytest.approx(1.0, rel=1e-6)


# ---- 6.3 step(), the $grad idiom, the env trap ----


def _accum(avg, mode, k=2):
    W = pg.ag_param(W22)
    opt = pg.optimizer_sgd([W], lr=0.1, accumulate_steps=k, average=avg)
    y = pg.ag_tensor(np.zeros((2, 1)))
    res = []
    for x in (np.array([[1.0], [0]]), np.array([[0.0], [1]])):
        with pg.with_grad_tape():
            loss = pg.ag_mse_loss(pg.ag_matmul(W, pg.ag_tensor(x)), y)
        if mode == "idiom":
            pg.backward(loss)
            r = opt.step()
            if r:
                opt.zero_grad()
        else:
            r = opt.step(pg.backward(loss))
        res.append((r, W.numpy().copy()))
    return res


def test_accumulation_goldens(f64):
    (r1, w1), (r2, w2) = _accum(True, "idiom")
    assert (r1, r2) == (False, True)
    np.testing.assert_array_equal(w1, W22)
    np.testing.assert_allclose(w2, [[0.95, 2.85], [1.9, 3.8]], rtol=0, atol=1e-15)
    (_, _), (_, w2) = _accum(False, "idiom")
    np.testing.assert_allclose(w2, [[0.9, 2.7], [1.8, 3.6]], rtol=0, atol=1e-15)
    (_, _), (_, w2) = _accum(True, "env")  # the trap: only the last micro-batch / k
    np.testing.assert_allclose(w2, [[1, 2.85], [2, 3.8]], rtol=0, atol=1e-15)


def test_counting_calls_read_nothing(f64):
    W = pg.ag_param(W22)
    opt = pg.optimizer_sgd([W], lr=0.1, accumulate_steps=2)
    assert opt.step({W.id: "not a gradient"}) is False  # never read
    assert opt.accum_count == 1
    assert opt.step({W.id: np.ones((2, 2))}) is True
    np.testing.assert_allclose(W.numpy(), W22 - 0.05)


def test_adam_t_counts_applied_steps(f64):
    W = pg.ag_param(W22)
    opt = pg.optimizer_adam([W], accumulate_steps=3)
    ts = []
    for _ in range(6):
        W.grad = np.ones((2, 2))
        opt.step()
        ts.append(opt.t)
    assert ts == [0, 0, 1, 1, 1, 2]
    opt2 = pg.optimizer_adam([pg.ag_tensor(W22)])
    with pytest.raises(
        pg.StateError, match="optimizer_adam step"
    ):  # no gradient anywhere (ggmlR quirk 14.5: t advanced)
        opt2.step()
    assert opt2.t == 0


@pytest.mark.parametrize("key", ["tensor", "id", "str"])
def test_step_accepts_a_user_mapping(f64, key):
    W, b = pg.ag_param(W22), pg.ag_param(np.ones((2, 1)))
    G = np.array([[1.0, -2], [0.5, 4]])
    k = {"tensor": W, "id": W.id, "str": str(W.id)}[key]
    opt = pg.optimizer_sgd({"W": W, "b": b}, lr=0.5)
    assert opt.step({k: G}) is True
    np.testing.assert_array_equal(W.numpy(), W22 - 0.5 * G)
    np.testing.assert_array_equal(b.numpy(), np.ones((2, 1)))  # absent: skipped
    with pytest.raises(pg.ShapeError):
        opt.step({W.id: np.ones((3, 3))})


def _mlp(rng):
    return [
        rng.normal(size=(5, 3)),
        rng.normal(size=(5, 1)),
        rng.normal(size=(2, 5)),
        rng.normal(size=(2, 1)),
    ]


def _mlp_loss(P, x, y):
    h = pg.ag_tanh(pg.ag_add(pg.ag_matmul(P[0], x), P[1]))
    return pg.ag_mse_loss(pg.ag_add(pg.ag_matmul(P[2], h), P[3]), y)


@pytest.mark.parametrize("kind", ["sgd", "adam"])
@pytest.mark.parametrize("k", [2, 4])
def test_k_micro_batches_equal_one_batch(f64, rng, kind, k):
    P0 = _mlp(rng)
    X, Y = rng.normal(size=(3, 8 * 3)), rng.normal(size=(2, 8 * 3))

    def make(P, k):
        if kind == "sgd":
            return pg.optimizer_sgd(P, lr=0.1, momentum=0.9, accumulate_steps=k)
        return pg.optimizer_adam(P, lr=0.01, accumulate_steps=k)

    Pb, Pa = [pg.ag_param(p) for p in P0], [pg.ag_param(p) for p in P0]
    ob, oa = make(Pb, 1), make(Pa, k)
    for s in range(3):
        cols = np.arange(8 * s, 8 * (s + 1))
        with pg.with_grad_tape():
            loss = _mlp_loss(Pb, pg.ag_tensor(X[:, cols]), pg.ag_tensor(Y[:, cols]))
        pg.backward(loss)
        assert ob.step() is True
        ob.zero_grad()
        for c in np.array_split(cols, k):  # mse is a mean: k equal parts average to the batch
            with pg.with_grad_tape():
                loss = _mlp_loss(Pa, pg.ag_tensor(X[:, c]), pg.ag_tensor(Y[:, c]))
            pg.backward(loss)
            if oa.step():
                oa.zero_grad()
    for a, b in zip(Pa, Pb):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=0, atol=1e-12)
    if kind == "adam":
        assert oa.t == ob.t == 3


def test_sum_grads_matches_the_idiom_bit_for_bit(f64, rng):
    P0 = _mlp(rng)
    X, Y = rng.normal(size=(3, 12)), rng.normal(size=(2, 12))
    Pi, Ps = [pg.ag_param(p) for p in P0], [pg.ag_param(p) for p in P0]
    oi, os_ = (
        pg.optimizer_adam(Pi, lr=0.01, accumulate_steps=3),
        pg.optimizer_adam(Ps, lr=0.01, accumulate_steps=3),
    )
    for c in np.array_split(np.arange(12), 6):
        with pg.with_grad_tape():
            li = _mlp_loss(Pi, pg.ag_tensor(X[:, c]), pg.ag_tensor(Y[:, c]))
        pg.backward(li)
        if oi.step():
            oi.zero_grad()
        with pg.with_grad_tape():
            ls = _mlp_loss(Ps, pg.ag_tensor(X[:, c]), pg.ag_tensor(Y[:, c]))
        os_.step(pg.backward(ls), sum_grads=True)
        os_.zero_grad()
    for a, b in zip(Pi, Ps):
        assert a.numpy().tobytes() == b.numpy().tobytes()


def test_zero_grad_clears_grad_and_tape(f64):
    W = pg.ag_param(W22)
    opt = pg.optimizer_sgd([W])
    with pg.with_grad_tape():
        loss = pg.ag_sum(pg.ag_mul(W, W))
    pg.backward(loss)
    assert W.grad is not None and pg.ag_tape_memory().nodes > 0
    opt.zero_grad()
    assert W.grad is None and pg.ag_tape_memory().nodes == 0


# ---- 6.1 / 6.2 fields and parameter lists ----


def test_fields_and_positions(f64):
    W, b = pg.ag_param(W22), pg.ag_param(np.ones((2, 1)))
    sgd = pg.optimizer_sgd({"W": W, "b": b}, momentum=0.9)
    assert (
        list(sgd.velocity) == ["W", "b"]
        and np.all(sgd.velocity["W"] == 0)
        and sgd.velocity["W"].shape == (2, 2)
    )
    assert sgd.accum_count == 0 and sgd.accumulate_steps == 1 and sgd.average is True
    adam = pg.optimizer_adam([W, b])
    assert adam.t == 0 and adam.resident is False and list(adam.m) == ["1", "2"]
    assert adam.v["2"].dtype == np.float64
    assert pg.optimizer_sgd([W], average=1).average is False  # isTRUE()
    with pytest.raises(
        pg.PyggmlrValueError, match="^optimizer_adam: accumulate_steps must be a positive integer"
    ):
        pg.optimizer_adam([W], accumulate_steps=0)


def test_duplicate_tensor_kept_once_with_ggmlr_warning(f64):
    W = pg.ag_param(W22)
    with pytest.warns(UserWarning) as rec:
        opt = pg.optimizer_sgd([W, W], lr=0.1)
    assert [str(w.message) for w in rec] == [
        "optimizer: 1 parameter(s) listed more than once (same tensor); keeping the first occurrence of each."
    ]
    assert len(opt.params) == 1
    b = pg.ag_param(np.ones((2, 1)))
    with pytest.warns(UserWarning, match="listed more than once"):
        assert list(pg.optimizer_sgd([W, W, b]).params) == ["1", "2"]  # positions of the kept list
    W.grad = np.ones((2, 2))
    opt.step()
    np.testing.assert_allclose(W.numpy(), W22 - 0.1)  # stepped once


def test_unnamed_list_equals_named(f64, rng):
    P0 = _mlp(rng)
    x, y = rng.normal(size=(3, 4)), rng.normal(size=(2, 4))
    out = []
    for named in (True, False):
        P = [pg.ag_param(p) for p in P0]
        opt = pg.optimizer_adam({f"p{i}": p for i, p in enumerate(P)} if named else P, lr=0.05)
        for _ in range(3):
            with pg.with_grad_tape():
                loss = _mlp_loss(P, pg.ag_tensor(x), pg.ag_tensor(y))
            pg.backward(loss)
            opt.step()
            opt.zero_grad()
        out.append([p.numpy().tobytes() for p in P])
    assert out[0] == out[1]


# ---- 6.5 state() / load_state() ----


def _trained_adam(names=("W", "b"), steps=3):
    W, b = pg.ag_param(W22), pg.ag_param(np.array([[0.5], [-1.0]]))
    opt = pg.optimizer_adam(dict(zip(names, (W, b))), lr=0.01)
    for _ in range(steps):
        with pg.with_grad_tape():
            loss = pg.ag_sum(pg.ag_mul(pg.ag_add(pg.ag_matmul(W, W), b), pg.ag_matmul(W, W)))
        pg.backward(loss)
        opt.step()
        opt.zero_grad()
    return opt, W, b


def test_state_layout(f64):
    opt, W, b = _trained_adam()
    st = opt.state()
    assert list(st) == ["format", "version", "type", "t", "accum_count", "names", "slots", "hyper"]
    assert (st["format"], st["version"], st["type"], st["t"], st["accum_count"]) == (
        "ggmlR.ag_opt_state",
        1,
        "adam",
        3,
        0,
    )
    assert st["names"] == ["W", "b"] and list(st["slots"]) == ["m", "v"]
    assert st["hyper"] == {"lr": 0.01, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8}
    m0 = st["slots"]["m"][0].copy()
    opt.step({W.id: np.ones((2, 2))})
    np.testing.assert_array_equal(st["slots"]["m"][0], m0)  # a copy
    sgd = pg.optimizer_sgd([W], momentum=0.5, weight_decay=0.1)
    s2 = sgd.state()
    assert s2["names"] is None and s2["t"] == 0 and list(s2["slots"]) == ["velocity"]
    assert s2["hyper"] == {"lr": 0.01, "momentum": 0.5, "weight_decay": 0.1}  # extras only when set


def test_state_mid_accumulation_warns(f64):
    W = pg.ag_param(W22)
    opt = pg.optimizer_sgd([W], accumulate_steps=4)
    opt.step()
    with pytest.warns(UserWarning) as rec:
        st = opt.state()
    assert str(rec[0].message) == (
        "optimizer state(): taken mid-accumulation (1 of 4 backward passes); the "
        "accumulated gradients live in the parameters' $grad and are not part of the state"
    )
    assert st["accum_count"] == 1


def _err(opt, st, text):
    with pytest.raises(pg.PyggmlrValueError) as ei:
        opt.load_state(st)
    assert str(ei.value) == "optimizer load_state(): " + text


def test_load_state_checks_in_order(f64):
    opt, W, b = _trained_adam()
    st = opt.state()
    good = pickle.loads(pickle.dumps(st))
    before = opt.state()

    def mod(**kw):
        s = pickle.loads(pickle.dumps(good))
        s.update(kw)
        return s

    _err(opt, [1], "not an optimizer state (from opt$state())")
    _err(opt, mod(format="x"), "not an optimizer state (from opt$state())")
    _err(opt, mod(version=99), "unsupported state version 99 (this ggmlR reads version 1)")
    _err(opt, mod(version=1.0), "unsupported state version 1 (this ggmlR reads version 1)")
    _err(pg.optimizer_sgd([W, b]), good, "state is for a 'adam' optimizer, this one is 'sgd'")
    _err(
        pg.optimizer_adam({"W": W, "b": b, "c": pg.ag_param(np.ones((1, 1)))}),
        good,
        "state has 2 parameters, optimizer has 3",
    )
    _err(
        pg.optimizer_adam({"a": W, "b": b}),
        good,
        "parameter names differ from the state's (position is the key, names are the check)"
        "\n  optimizer: a, b\n  state:     W, b",
    )
    bad = mod()
    bad["slots"]["m"][0] = np.zeros((1, 1))
    _err(opt, bad, "slot 'm' of parameter 1 has shape 1x1, expected 2x2")
    bad = mod()
    bad["slots"]["v"][1] = np.array([[np.nan], [0.0]])
    _err(opt, bad, "slot 'v' of parameter 2 is not finite")
    _err(opt, mod(t=-1), "t / accum_count are not counts")
    _err(opt, mod(accum_count=1.5), "t / accum_count are not counts")
    after = opt.state()  # nothing was written by the failed loads
    for k in ("m", "v"):
        for a, c in zip(before["slots"][k], after["slots"][k]):
            assert a.tobytes() == c.tobytes()
    # an unnamed side skips the names check
    assert pg.optimizer_adam([W, b], lr=0.01).load_state(good) is True


def test_hyper_warning_class_and_changed(f64):
    opt, W, b = _trained_adam()
    st = opt.state()
    o2 = pg.optimizer_adam({"W": W, "b": b}, lr=0.5, eps=1e-6)
    with pytest.warns(pg.OptimizerHyperWarning) as rec:
        assert o2.load_state(st) is True
    w = rec[0].message
    assert str(w) == (
        "optimizer load_state(): hyperparameters differ from the state's and are NOT restored: "
        "lr = 0.5 (state 0.01), eps = 1e-06 (state 1e-08)"
    )
    assert w.changed == {
        "lr": {"current": 0.5, "state": 0.01},
        "eps": {"current": 1e-6, "state": 1e-8},
    }
    assert o2.lr == 0.5 and o2.t == 3  # loaded, hyper-parameters kept
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pg.optimizer_adam({"W": W, "b": b}, lr=0.01).load_state(st)  # equal: silent
    with pytest.warns(pg.OptimizerHyperWarning, match=r"weight_decay = 0.1 \(state 0\)"):
        pg.optimizer_adam({"W": W, "b": b}, lr=0.01, weight_decay=0.1).load_state(st)


def test_fresh_state_loads_and_twice_is_idempotent(f64):
    W = pg.ag_param(W22)
    fresh = pg.optimizer_adam([W]).state()
    opt, _, _ = _trained_adam(names=("W", "b"))
    o2 = pg.optimizer_adam([W])
    assert o2.load_state(fresh) and o2.t == 0
    st = opt.state()
    o3 = pg.optimizer_adam(list(opt.params.values()), lr=0.01)
    o3.load_state(st)
    s1 = o3.state()
    o3.load_state(st)
    assert pickle.dumps(o3.state()) == pickle.dumps(s1)


@pytest.mark.parametrize("kind", ["sgd", "adam"])
def test_state_through_pickle_continues_identically(f64, rng, kind):
    P0 = _mlp(rng)
    X, Y = rng.normal(size=(3, 30)), rng.normal(size=(2, 30))

    def make(P):
        d = {f"p{i}": p for i, p in enumerate(P)}
        return (
            pg.optimizer_sgd(d, lr=0.05, momentum=0.9)
            if kind == "sgd"
            else pg.optimizer_adam(d, lr=0.01)
        )

    def train(P, opt, steps):
        for s in steps:
            c = np.arange(5 * s, 5 * s + 5)
            with pg.with_grad_tape():
                loss = _mlp_loss(P, pg.ag_tensor(X[:, c]), pg.ag_tensor(Y[:, c]))
            pg.backward(loss)
            opt.step()
            opt.zero_grad()

    P = [pg.ag_param(p) for p in P0]
    opt = make(P)
    train(P, opt, range(3))
    blob = pickle.dumps(([p.numpy() for p in P], opt.state()))
    train(P, opt, range(3, 6))
    weights, st = pickle.loads(blob)
    P2 = [pg.ag_param(rng.normal(size=p.shape)) for p in P0]  # other weights, then restored
    opt2 = make(P2)
    for p, w in zip(P2, weights):
        p.data = w
    opt2.load_state(st)
    train(P2, opt2, range(3, 6))
    for a, b in zip(P, P2):
        assert a.numpy().tobytes() == b.numpy().tobytes()


def test_earlier_pyggmlr_state_layout_still_loads(f64):
    opt, W, b = _trained_adam()
    new = opt.state()  # as the layout state() had before ggmlR 0.8.6's: per parameter, "kind"
    old = {
        "format": new["format"],
        "version": 1,
        "kind": "adam",
        "t": new["t"],
        "accum_count": 0,
        "hyper": {"lr": opt.lr, "beta1": opt.beta1, "beta2": opt.beta2, "eps": opt.eps},
        "params": [
            {"m": m, "v": v, "accum": None} for m, v in zip(new["slots"]["m"], new["slots"]["v"])
        ],
    }
    assert old["kind"] == "adam" and "type" not in old
    o2 = pg.optimizer_adam({"W": W, "b": b}, lr=0.01)
    assert o2.load_state(old) is True
    assert pickle.dumps(o2.state()) == pickle.dumps(opt.state())
    _err(pg.optimizer_sgd([W, b]), old, "state is for a 'adam' optimizer, this one is 'sgd'")
    old["hyper"]["lr"] = 0.5  # the earlier layout warns as the current one, at the caller's line
    with pytest.warns(pg.OptimizerHyperWarning, match="lr = 0.01 \\(state 0.5\\)") as w:
        assert o2.load_state(old) is True
    assert w[0].filename == __file__ and w[0].message.changed == {
        "lr": {"current": 0.01, "state": 0.5}
    }
