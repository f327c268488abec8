"""Learning-rate schedules and gradient helpers of ggmlR 0.8.6 (pyggmlr/optim/sched.py on native/sched.c):
the spec's golden sequences (§8), its errors, momentum cycling, and clip_grad_value /
check_grad_anomaly (§7); then clip_grad_norm and lr_scheduler (step, cosine, restarts, warmup)."""

import math
import warnings

import numpy as np
import pytest

import pyggmlr as pg


def _opt(lr=0.1, kind="sgd", **kw):
    w = pg.ag_param(np.zeros((2, 2)))
    o = (pg.optimizer_sgd if kind == "sgd" else pg.optimizer_adam)([w], lr=lr, **kw)
    return o, w


def _run(s, n):
    return [s.step() for _ in range(n)]


def test_cosine_warm_restarts_with_t_mult():
    o, _ = _opt(0.1)
    s = pg.lr_scheduler_cosine(o, T_max=4, restart=True, T_mult=2)
    np.testing.assert_allclose(
        _run(s, 14),
        [
            0.1,
            0.0853553391,
            0.05,
            0.0146446609,
            0.1,
            0.0961939766,
            0.0853553391,
            0.0691341716,
            0.05,
            0.0308658284,
            0.0146446609,
            0.0038060234,
            0.1,
            0.0990392640,
        ],
        atol=1e-9,
    )
    o, _ = _opt(0.1)
    s = pg.lr_scheduler_cosine(
        o, T_max=2, restart=True, T_mult=1.5
    )  # periods 2, 3, 4 (R rounds 4.5 to 4), 6
    np.testing.assert_allclose(
        _run(s, 10),
        [0.1, 0.05, 0.1, 0.075, 0.025, 0.1, 0.0853553391, 0.05, 0.0146446609, 0.1],
        atol=1e-9,
    )
    o, _ = _opt(0.1)
    plain = pg.lr_scheduler_cosine(o, T_max=3)  # 0.8.2: stays at t = T_max - 1
    np.testing.assert_allclose(_run(plain, 5), [0.1, 0.075, 0.025, 0.025, 0.025], atol=1e-12)
    with pytest.raises(pg.PyggmlrValueError, match="T_mult must be a single number >= 1"):
        pg.lr_scheduler_cosine(o, T_max=3, T_mult=0.5)
    with pytest.raises(pg.PyggmlrValueError, match="T_max must be >= 1"):
        pg.lr_scheduler_cosine(o, T_max=0)


def test_cyclic_modes():
    o, _ = _opt()
    s = pg.lr_scheduler_cyclic(o, base_lr=0.001, max_lr=0.01, step_size_up=4)
    assert o.lr == 0.001  # construction sets base_lr
    np.testing.assert_allclose(
        _run(s, 10),
        [0.00325, 0.0055, 0.00775, 0.01, 0.00775, 0.0055, 0.00325, 0.001, 0.00325, 0.0055],
        atol=1e-12,
    )
    s = pg.lr_scheduler_cyclic(o, 0, 1, step_size_up=2, mode="triangular2")
    np.testing.assert_allclose(
        _run(s, 10), [0.5, 1, 0.5, 0, 0.25, 0.5, 0.25, 0, 0.125, 0.25], atol=1e-12
    )
    s = pg.lr_scheduler_cyclic(o, 0, 1, step_size_up=2, mode="exp_range", gamma=0.9)
    np.testing.assert_allclose(_run(s, 6), [0.45, 0.81, 0.3645, 0, 0.295245, 0.531441], atol=1e-12)
    s = pg.lr_scheduler_cyclic(o, 0, 1, step_size_up=3, step_size_down=1)
    np.testing.assert_allclose(_run(s, 5), [1 / 3, 2 / 3, 1, 0, 1 / 3], atol=1e-12)
    assert (
        "lr_scheduler_cyclic | mode=triangular | base_lr=0.000000 | max_lr=1.000000 | step=5"
        in repr(s)
    )
    for kw, msg in (
        ({"step_size_up": 0}, "step_size_up must be >= 1"),
        ({"step_size_down": 0}, "step_size_down must be >= 1"),
        ({"max_lr": -1}, "max_lr must be >= base_lr"),
        ({"mode": "tri"}, "should be one of"),
    ):
        with pytest.raises(pg.PyggmlrValueError, match=msg):
            pg.lr_scheduler_cyclic(o, **{"base_lr": 0, "max_lr": 1, **kw})


def test_onecycle_lr_and_momentum():
    o, _ = _opt(0.5, momentum=0.0)
    s = pg.lr_scheduler_onecycle(o, max_lr=0.1, total_steps=10)
    assert (
        s.step_up == 3 and o.lr == pytest.approx(0.004) and o.momentum == 0.95
    )  # momentum switched on
    lrs, moms = [], []
    for _ in range(11):
        lrs.append(s.step())
        moms.append(o.momentum)
    np.testing.assert_allclose(
        lrs,
        [
            0.028,
            0.076,
            0.1,
            0.0950489386,
            0.0811763726,
            0.0611299341,
            0.0388800659,
            0.0188336274,
            0.0049610614,
            1e-5,
            1e-5,
        ],
        atol=1e-9,
    )
    np.testing.assert_allclose(
        moms[:10],
        [
            0.925,
            0.875,
            0.85,
            0.8549515566,
            0.8688255099,
            0.8888739533,
            0.9111260467,
            0.9311744901,
            0.9450484434,
            0.95,
        ],
        atol=1e-9,
    )
    o, _ = _opt(0.5)
    s = pg.lr_scheduler_onecycle(o, max_lr=0.1, total_steps=10, anneal_strategy="linear")
    lin = _run(s, 4)
    np.testing.assert_allclose(lin, [0.036, 0.068, 0.1, 0.0857157143], atol=1e-9)
    oa, _ = _opt(0.01, kind="adam")
    sa = pg.lr_scheduler_onecycle(oa, max_lr=0.1, total_steps=100)
    _run(sa, 6)
    assert oa.beta1 < 0.95
    ob, _ = _opt(0.01, kind="adam")
    pg.lr_scheduler_onecycle(ob, max_lr=0.1, total_steps=100, cycle_momentum=False).step()
    assert ob.beta1 == 0.9
    assert (
        pg.lr_scheduler_onecycle(_opt()[0], 0.1, 10, pct_start=0.25).step_up == 2
    )  # R rounds halves to even
    with pytest.raises(pg.PyggmlrValueError, match="total_steps must be >= 2"):
        pg.lr_scheduler_onecycle(o, 0.1, 1)
    with pytest.raises(pg.PyggmlrValueError, match=r"pct_start must be in \(0, 1\)"):
        pg.lr_scheduler_onecycle(o, 0.1, 10, pct_start=1)


def test_warmup_cosine():
    o, _ = _opt(0.1)
    s = pg.lr_scheduler_warmup_cosine(o, warmup_steps=2, total_steps=6)
    assert o.lr == 0
    np.testing.assert_allclose(
        _run(s, 7), [0.05, 0.1, 0.0853553391, 0.05, 0.0146446609, 0, 0], atol=1e-9
    )
    o, _ = _opt(0.1)
    np.testing.assert_allclose(
        _run(pg.lr_scheduler_warmup_cosine(o, 0, 4), 4),
        [0.0853553391, 0.05, 0.0146446609, 0],
        atol=1e-9,
    )
    o, _ = _opt(0.1)
    s = pg.lr_scheduler_warmup_cosine(o, 2, 6, lr_min=0.01, warmup_start_lr=0.02)
    np.testing.assert_allclose(
        _run(s, 6), [0.06, 0.1, 0.0868198052, 0.055, 0.0231801948, 0.01], atol=1e-9
    )
    with pytest.raises(pg.PyggmlrValueError, match="total_steps must be > warmup_steps"):
        pg.lr_scheduler_warmup_cosine(o, 3, 3)
    with pytest.raises(pg.PyggmlrValueError, match="warmup_steps must be >= 0"):
        pg.lr_scheduler_warmup_cosine(o, -1, 3)


def test_the_scheduled_lr_is_the_one_the_step_applies(f64):
    o, w = _opt(1.0)
    s = pg.lr_scheduler_cyclic(o, base_lr=0.001, max_lr=0.01, step_size_up=4)
    lr = s.step()
    with pg.with_grad_tape():
        loss = pg.ag_sum(pg.ag_mul(w, np.full((2, 2), 3.0)))
    o.step(pg.backward(loss))
    np.testing.assert_array_equal(w.numpy(), -lr * 3.0)


def _grads(values):
    """Parameters of the values' shapes whose gradients are exactly the values (loss = sum(p * v))."""
    p = {k: pg.ag_param(np.zeros(np.shape(v))) for k, v in values.items()}
    with pg.with_grad_tape():
        terms = [pg.ag_sum(pg.ag_mul(p[k], np.asarray(v, float))) for k, v in values.items()]
        loss = terms[0]
        for t in terms[1:]:
            loss = pg.ag_add(loss, t)
    return p, pg.backward(loss)


def test_clip_grad_value(f64):
    p, g = _grads({"a": [[3.0, -0.5], [np.nan, -np.inf]]})
    assert pg.clip_grad_value(p, g, 1.0) == 3.0
    got = g[p["a"]]
    assert (
        got.shape == (2, 2)
        and got[0, 0] == 1
        and got[0, 1] == -0.5
        and math.isnan(got[1, 0])
        and got[1, 1] == -1
    )
    for bad in (0, -1, float("inf"), "x", True):
        with pytest.raises(
            pg.PyggmlrValueError, match="clip_value must be a single positive finite number"
        ):
            pg.clip_grad_value(p, g, bad)
    q = pg.ag_param(np.zeros((1, 1)))
    assert pg.clip_grad_value([q], g, 1.0) == 0.0  # no gradient for q


def test_check_grad_anomaly(f64):
    p, g = _grads({"w": [[1.0, 2.0]], "b": [[np.nan, np.inf]]})
    missing = pg.ag_param(np.zeros((1, 1)))
    params = {**p, "m": missing}
    with pytest.warns(
        RuntimeWarning,
        match=r"gradient anomaly detected in 1 parameter\(s\):\n  b +status=nan\+inf",
    ):
        rows = pg.check_grad_anomaly(params, g)
    assert [r["status"] for r in rows] == ["ok", "nan+inf", "missing"]
    assert (
        rows[0]["max_abs"] == 2.0
        and rows[1]["n_nan"] == 1
        and rows[1]["n_inf"] == 1
        and rows[2]["n_nan"] is None
    )
    with pytest.raises(pg.PyggmlrValueError, match="gradient anomaly"):
        pg.check_grad_anomaly(params, g, action="stop")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pg.check_grad_anomaly(params, g, action="silent")
        assert (
            pg.check_grad_anomaly({"w": p["w"], "m": missing}, g)[1]["status"] == "missing"
        )  # no warning
    assert (
        pg.check_grad_anomaly({"w": p["w"]}, g, action="silent", max_abs=1.5)[0]["status"]
        == "large"
    )
    assert pg.check_grad_anomaly([], g) == []


def test_check_grad_anomaly_does_not_count_r_na_as_nan(f64):
    r_na = np.frombuffer(
        np.array([0x7FF00000000007A2], dtype=np.uint64).tobytes(), dtype=np.float64
    )[0]
    p, g = _grads({"w": [[r_na, 1.0, np.nan]]})
    row = pg.check_grad_anomaly(p, g, action="silent")[0]
    assert row["n_nan"] == 1 and row["max_abs"] == 1.0  # the plain NaN only, as ggmlR's is.nan()


# ---- clip_grad_norm ----


def _grads_for(params, coefs):
    with pg.with_grad_tape():
        terms = [
            pg.ag_sum(pg.ag_mul(p, pg.ag_tensor(c, dtype="f64"))) for p, c in zip(params, coefs)
        ]
        loss = terms[0]
        for t in terms[1:]:
            loss = pg.ag_add(loss, t)
    return pg.backward(loss)


def test_clip_noop_below_threshold(f64):
    w = pg.ag_param([[1.0, 1.0]])
    g = _grads_for([w], [np.array([[0.3, 0.4]])])
    norm = pg.clip_grad_norm([w], g, max_norm=1.0)
    assert norm == pytest.approx(0.5, abs=1e-15)
    np.testing.assert_array_equal(g[w], [[0.3, 0.4]])


def test_clip_scales_above_threshold(f64):
    w = pg.ag_param([[1.0, 1.0]])
    g = _grads_for([w], [np.array([[3.0, 4.0]])])
    norm = pg.clip_grad_norm({"w": w}, g, max_norm=1.0)
    assert norm == pytest.approx(5.0, abs=1e-14)
    clipped = g.get_tensor(w).numpy()
    np.testing.assert_allclose(np.linalg.norm(clipped), 1.0 * 5.0 / (5.0 + 1e-6), rtol=1e-14)
    np.testing.assert_allclose(np.linalg.norm(clipped), 1.0, atol=1e-5)
    # the optimizer sees the clipped gradient
    opt = pg.optimizer_sgd([w], lr=1.0)
    opt.step(g)
    np.testing.assert_allclose(w.numpy(), 1 - np.array([[3.0, 4.0]]) / (5 + 1e-6), rtol=1e-14)


def test_clip_joint_norm_of_two_params(f64):
    a, b = pg.ag_param([[1.0]]), pg.ag_param([[1.0]])
    g = _grads_for([a, b], [np.array([[0.3]]), np.array([[0.4]])])
    assert pg.clip_grad_norm([a, b], g, max_norm=10) == pytest.approx(0.5, abs=1e-15)
    assert pg.clip_grad_norm([a, b], g, max_norm=0.25) == pytest.approx(0.5, abs=1e-15)
    f = 0.25 / (0.5 + 1e-6)
    assert g.get_tensor(a).item() == pytest.approx(0.3 * f, rel=1e-14)
    assert g.get_tensor(b).item() == pytest.approx(0.4 * f, rel=1e-14)


def test_clip_on_grad_without_map(f64):
    w = pg.ag_param([[1.0, 1.0]])
    w.grad = [[6.0, 8.0]]
    assert pg.clip_grad_norm([w, w], max_norm=2.0) == pytest.approx(10.0)
    np.testing.assert_allclose(np.linalg.norm(w.grad), 2 * 10 / (10 + 1e-6), rtol=1e-14)


# ---- schedulers ----


def test_lr_scheduler_step():
    opt = pg.optimizer_sgd([pg.ag_param([[1.0]])], lr=1.0)
    s = pg.lr_scheduler_step(opt, step_size=2, gamma=0.5)
    lrs = [s.step() for _ in range(8)]
    assert lrs == [1.0, 0.5, 0.5, 0.25, 0.25, 0.125, 0.125, 0.0625]
    assert s.get_lr() == opt.lr == 0.0625
    s2 = pg.lr_scheduler_step(
        pg.optimizer_sgd([pg.ag_param([[1.0]])], lr=1.0), step_size=4, gamma=0.5
    )
    assert [s2.step() for _ in range(4)] == [1.0, 1.0, 1.0, 0.5]
    assert repr(s) == "lr_scheduler_step | step_size=2 | gamma=0.5000 | epoch=8 | lr=0.062500"
    with pytest.raises(ValueError):
        pg.lr_scheduler_step(opt, step_size=0)


def test_lr_scheduler_cosine_spec_values():
    opt = pg.optimizer_sgd([pg.ag_param([[1.0]])], lr=0.1)
    s = pg.lr_scheduler_cosine(opt, T_max=5, lr_min=0.01)
    lrs = [s.step() for _ in range(7)]
    np.testing.assert_allclose(
        lrs,
        [0.1, 0.09140576, 0.06890576, 0.04109424, 0.01859424, 0.01859424, 0.01859424],
        atol=5e-9,
    )
    assert opt.lr == lrs[-1]
    assert (
        repr(s)
        == "lr_scheduler_cosine | T_max=5 | lr_max=0.100000 | lr_min=0.010000 | epoch=7 | lr=0.018594"
    )


def test_lr_scheduler_cosine_restart():
    opt = pg.optimizer_sgd([pg.ag_param([[1.0]])], lr=0.1)
    s = pg.lr_scheduler_cosine(opt, T_max=5, restart=True)
    lrs = [s.step() for _ in range(7)]
    np.testing.assert_allclose(
        lrs, [0.1, 0.09045085, 0.06545085, 0.03454915, 0.00954915, 0.1, 0.09045085], atol=5e-9
    )
    assert lrs[5] > lrs[4]


def test_lr_scheduler_warmup_then_cosine():
    opt = pg.optimizer_sgd([pg.ag_param([[1.0]])], lr=0.1)
    cos = pg.lr_scheduler_cosine(opt, T_max=5, lr_min=0.01)
    s = pg.lr_scheduler_warmup(opt, warmup_steps=4, after=cos)
    assert opt.lr == 0.0
    lrs = [s.step() for _ in range(6)]
    np.testing.assert_allclose(lrs[:4], [0.025, 0.05, 0.075, 0.1], rtol=1e-15)
    np.testing.assert_allclose(lrs[4:], [0.1, 0.09140576], atol=5e-9)
    assert "lr_scheduler_warmup | warmup_steps=4 | epoch=6" in repr(s)


def test_lr_scheduler_warmup_alone_holds_base():
    opt = pg.optimizer_adam([pg.ag_param([[1.0]])], lr=0.2)
    s = pg.lr_scheduler_warmup(opt, warmup_steps=2, start_factor=0.5)
    assert opt.lr == pytest.approx(0.1)
    assert [s.step() for _ in range(4)] == pytest.approx([0.15, 0.2, 0.2, 0.2])


def test_scheduler_drives_optimizer_updates(f64):
    w = pg.ag_param([[0.0]])
    opt = pg.optimizer_sgd([w], lr=1.0)
    s = pg.lr_scheduler_step(opt, step_size=1, gamma=0.5)
    for _ in range(3):
        w.grad = [[1.0]]
        opt.step()
        s.step()
    assert w.item() == -(1.0 + 0.5 + 0.25)


def test_counts_truncated_by_the_core():
    """The counts as R's as.integer (pg_sched_init, once for both languages: issue 29)."""
    o, _ = _opt(0.1)
    assert pg.lr_scheduler_step(o, 2.9).step_size == 2
    assert pg.lr_scheduler_step(o, 2.0**31 - 0.5).step_size == 2**31 - 1  # below 2^31: kept
    s = pg.lr_scheduler_cyclic(o, 0.01, 0.1, step_size_up=3.7)
    assert (s.step_size_up, s.step_size_down) == (3, 3) and type(s.step_size_down) is int
    s = pg.lr_scheduler_warmup_cosine(o, -0.5, 5.5)  # -0.5 is 0: no warmup
    assert (s.warmup_steps, s.total_steps) == (0, 5)
    for bad in (0.9, 1e12, math.inf, math.nan, 2.0**31):
        with pytest.raises(pg.PyggmlrValueError) as e:
            pg.lr_scheduler_onecycle(o, 0.1, bad)
        assert str(e.value) == "lr_scheduler_onecycle: total_steps must be >= 2"


def test_count_args_truncated_by_the_core():
    """accumulate_steps and ag_layer_norm's size: as.integer in the core (pg_arg_count)."""
    w = pg.ag_param(np.zeros((2, 2)))
    assert pg.optimizer_adam([w], accumulate_steps=2.9).accumulate_steps == 2
    assert pg.ag_layer_norm(4.9).normalized_shape == 4
    with pytest.raises(pg.PyggmlrValueError) as e:
        pg.optimizer_sgd([w], accumulate_steps=2.0**31)
    assert str(e.value) == (
        "optimizer_sgd: accumulate_steps must be a positive integer, got 2147483648.0"
    )
    with pytest.raises(pg.PyggmlrValueError) as e:
        pg.ag_layer_norm("3")
    assert (
        str(e.value) == "ag_layer_norm: normalized_shape must be a single positive integer, got '3'"
    )
