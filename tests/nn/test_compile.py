"""Fused kernels (ag_linear's one-node linear, softmax-CE on an ids tensor) and static graphs
(ag_compile): the same numbers as the eager ops, bit for bit. Every layer compiled,
ag_fit(static=True) and compiled graphs' memory reports: test_compile_layers.py."""

import numpy as np
import pytest

import pyggmlr as pg
from pyggmlr._core import lib
from pyggmlr.errors import PyggmlrValueError, ShapeError
from pyggmlr.ops import _linear


def _grads(loss, *ts):
    g = pg.backward(loss)
    return [g[t] for t in ts]


@pytest.mark.parametrize("act", [None, "relu", "sigmoid", "tanh"])
@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_fused_linear_equals_unfused_bitwise(act, dtype, rng):
    W0, b0, x0 = rng.normal(size=(7, 5)), rng.normal(size=(7, 1)), rng.normal(size=(5, 9))
    res = []
    for fused in (False, True):
        W, b, x = (
            pg.ag_param(W0, dtype=dtype),
            pg.ag_param(b0, dtype=dtype),
            pg.ag_param(x0, dtype=dtype),
        )
        with pg.with_grad_tape():
            if fused:
                h = _linear(
                    W,
                    x,
                    b,
                    {
                        None: -1,
                        "relu": lib.PG_UNARY_OP_RELU,
                        "sigmoid": lib.PG_UNARY_OP_SIGMOID,
                        "tanh": lib.PG_UNARY_OP_TANH,
                    }[act],
                )
            else:
                h = pg.ag_add(pg.ag_matmul(W, x), b)
                h = {
                    None: lambda z: z,
                    "relu": pg.ag_relu,
                    "sigmoid": pg.ag_sigmoid,
                    "tanh": pg.ag_tanh,
                }[act](h)
            loss = pg.ag_sum(pg.ag_mul(h, h))
        res.append([h.numpy()] + _grads(loss, W, b, x))
    for a, b in zip(*res):
        assert a.dtype == b.dtype and np.array_equal(a, b)


def test_fused_linear_gradcheck(f64, rng):
    W = pg.ag_param(rng.normal(size=(4, 3)))
    b = pg.ag_param(rng.normal(size=(4, 1)))
    x = pg.ag_param(rng.normal(size=(3, 5)))
    assert pg.ag_gradcheck(
        lambda d: pg.ag_sum(pg.ag_mul(_linear(d["W"], d["x"], d["b"], lib.PG_UNARY_OP_TANH), 1.5)),
        {"W": W, "x": x, "b": b},
        quiet=True,
    )


def test_fused_linear_shape_errors():
    W, x = pg.ag_param(np.ones((4, 3))), pg.ag_tensor(np.ones((2, 5)))
    with pytest.raises(ShapeError, match=r"ag_linear: W is \[4x3\] f32 and x is \[2x5\] f32"):
        _linear(W, x, None)
    with pytest.raises(ShapeError, match=r"b must be \[4x1\]"):
        _linear(W, pg.ag_tensor(np.ones((3, 5))), pg.ag_param(np.ones((3, 1))))


def test_ag_linear_layer_records_one_node(rng):
    lin = pg.ag_linear(3, 4, "relu")
    with pg.with_grad_tape():
        h = lin.forward(pg.ag_tensor(rng.normal(size=(3, 2))))
    assert h.op == "linear" and lib.pg_tape_nodes() == 1


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_softmax_ce_ids_tensor_equals_ids_array(dtype, rng):
    z0 = rng.normal(size=(4, 6))
    ids = np.array([0, 3, 1, 1, 2, 3])
    res = []
    for target in (
        ids,
        pg.ag_tensor(ids.reshape(1, -1), dtype=dtype),
        pg.ag_tensor(ids, dtype=dtype),
        pg.ag_tensor(np.eye(4)[:, ids], dtype=dtype),
    ):
        z = pg.ag_param(z0, dtype=dtype)
        with pg.with_grad_tape():
            loss = pg.ag_softmax_cross_entropy_loss(z, target)
        res.append((loss.numpy(), pg.backward(loss)[z]))
    for loss_value, g in res[1:]:
        assert np.array_equal(loss_value, res[0][0]) and np.array_equal(g, res[0][1])


def test_softmax_ce_ids_tensor_errors():
    z = pg.ag_param(np.zeros((3, 2)))
    with pytest.raises(PyggmlrValueError, match=r"class id 3 at position 1 .* \[0, 3\)"):
        pg.ag_softmax_cross_entropy_loss(z, pg.ag_tensor([[0, 3]]))
    with pytest.raises(PyggmlrValueError, match="whole number"):
        pg.ag_softmax_cross_entropy_loss(z, pg.ag_tensor([[0, 1.5]]))


# ---- static graphs: ag_compile ----


def _mlp(rng, sizes, dtype):
    return [
        pg.ag_param(a, dtype=dtype)
        for i, o in zip(sizes[:-1], sizes[1:])
        for a in (rng.normal(size=(o, i)) * 0.5, rng.normal(size=(o, 1)) * 0.1)
    ]


def _batches(rng, n, k, b, classes):
    return [(rng.normal(size=(k, b)), rng.integers(0, classes, (1, b))) for _ in range(n)]


MODELS = {
    "linear-relu-sce": lambda P, x, y: pg.ag_softmax_cross_entropy_loss(
        pg.ops._linear(P[2], pg.ops._linear(P[0], x, P[1], lib.PG_UNARY_OP_RELU), P[3]), y
    ),
    "ops-tanh-sigmoid-mse": lambda P, x, y: pg.ag_mse_loss(
        pg.ag_mean(
            pg.ag_sigmoid(
                pg.ag_add(
                    pg.ag_matmul(P[2], pg.ag_tanh(pg.ag_add(pg.ag_matmul(P[0], x), P[1]))), P[3]
                )
            ),
            2,
        ),
        pg.ag_scale(pg.ag_reshape(pg.ag_transpose(pg.ag_transpose(y)), 1, -1), 0.5),
    ),
    "gelu-softmax-ce-mean": lambda P, x, y: pg.ag_add(
        pg.ag_cross_entropy_loss(
            pg.ag_softmax(
                pg.ag_add(
                    pg.ag_matmul(P[2], pg.ag_gelu(pg.ag_add(pg.ag_matmul(P[0], x), P[1]))), P[3]
                )
            ),
            pg.ag_tensor(np.eye(3)[:, [0, 1, 2, 0, 1, 2, 0, 1]], dtype=P[0].dtype),
        ),
        pg.ag_scale(pg.ag_mean(pg.ag_pow(pg.ag_clamp(P[0], -0.8, 0.8), 2.0)), 0.1),
    ),
    "div-exp-log-sub-sum": lambda P, x, y: pg.ag_sum(
        pg.ag_log(
            pg.ag_add(
                pg.ag_exp(
                    pg.ag_neg(
                        pg.ag_div(
                            pg.ag_sub(pg.ag_matmul(P[0], x), P[1]),
                            pg.ag_add(pg.ag_mul(P[1], P[1]), 1.0),
                        )
                    )
                ),
                1.0,
            )
        ),
        2,
    ),
}


def _run_pair(model, opt_cls, dtype, steps=12, accumulate=1, **hyper):
    rng = np.random.default_rng(5)
    P0 = [p.numpy() for p in _mlp(rng, (4, 6, 3), "f64")]
    data = _batches(rng, steps, 4, 8, 3)
    if model == "div-exp-log-sub-sum":

        def loss_of(P, x, y):
            return pg.ag_sum(MODELS[model](P, x, y))

    else:
        loss_of = MODELS[model]
    Pe = [pg.ag_param(p, dtype=dtype) for p in P0]
    Pc = [pg.ag_param(p, dtype=dtype) for p in P0]
    oe = opt_cls(Pe, accumulate_steps=accumulate, **hyper)
    oc = opt_cls(Pc, accumulate_steps=accumulate, **hyper)
    x0, y0 = data[0]
    step = pg.ag_compile(
        lambda x, y: loss_of(Pc, x, y),
        pg.ag_tensor(x0, dtype=dtype),
        pg.ag_tensor(y0, dtype=dtype),
        optimizer=oc,
    )
    for x, y in data:
        with pg.with_grad_tape():
            le = loss_of(Pe, pg.ag_tensor(x, dtype=dtype), pg.ag_tensor(y, dtype=dtype))
        pg.backward(le)  # ggmlR's idiom: .grad sums the micro-batches, step() reads it
        if oe.step():
            oe.zero_grad()
        lc = step(x, y)
        assert np.float64(le.item()) == np.float64(lc)
    for a, b in zip(Pe, Pc):
        assert np.array_equal(a.numpy(), b.numpy())
    assert oe.t == oc.t if opt_cls is pg.optimizer_adam else True
    return Pc


@pytest.mark.parametrize("model", sorted(MODELS))
@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("opt", ["adam", "sgd"])
def test_compiled_trajectory_bit_identical(model, dtype, opt):
    if opt == "adam":
        _run_pair(model, pg.optimizer_adam, dtype, lr=0.01, weight_decay=0.01)
    else:
        _run_pair(model, pg.optimizer_sgd, dtype, lr=0.05, momentum=0.9, nesterov=True)


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_compiled_accumulation_matches_eager(dtype):
    # 10 micro-steps with accumulate_steps 3: three applied updates, every period from zero
    P = _run_pair("linear-relu-sce", pg.optimizer_adam, dtype, steps=10, accumulate=3, lr=0.01)
    assert len(P) == 4


def test_compiled_grad_build_equals_backward(rng):
    P = _mlp(rng, (4, 5, 3), "f64")
    x, y = rng.normal(size=(4, 7)), rng.integers(0, 3, (1, 7))
    f = MODELS["linear-relu-sce"]
    step = pg.ag_compile(
        lambda x, y: f(P, x, y),
        pg.ag_tensor(x, dtype="f64"),
        pg.ag_tensor(y, dtype="f64"),
        build="grad",
    )
    for _ in range(2):
        x, y = rng.normal(size=(4, 7)), rng.integers(0, 3, (1, 7))
        loss, grads = step(x, y)
        with pg.with_grad_tape():
            le = f(P, pg.ag_tensor(x, dtype="f64"), pg.ag_tensor(y, dtype="f64"))
        g = pg.backward(le)
        pg.ag_tape_clear()
        assert loss == le.item()
        assert sorted(grads) == sorted(p.id for p in P)
        for p in P:
            assert np.array_equal(grads[p.id], g[p])
            p.grad = None


def test_compiled_forward_build(rng):
    W = pg.ag_param(rng.normal(size=(3, 4)))
    f = pg.ag_compile(lambda x: pg.ag_relu(pg.ag_matmul(W, x)), np.zeros((4, 2)), build="forward")
    x = rng.normal(size=(4, 2))
    assert np.array_equal(
        f(x).numpy(), np.maximum(W.numpy().astype(np.float32) @ x.astype(np.float32), 0)
    )
    assert f.ops == ["matmul", "relu"] and f.memory()["outputs"] == 2 * 3 * 2 * 4


def test_compiled_shape_change_raises(rng):
    W = pg.ag_param(rng.normal(size=(3, 4)))
    opt = pg.optimizer_sgd([W])
    step = pg.ag_compile(lambda x: pg.ag_sum(pg.ag_matmul(W, x)), np.zeros((4, 5)), optimizer=opt)
    with pytest.raises(
        ShapeError,
        match=r"^compiled graph: input 1 was recorded as \[4x5\] f\d\d but the new value is \[4x6\]",
    ):
        step(np.zeros((4, 6)))
    before = W.numpy().copy()
    # an input that is not numbers names the step and the input (as R's "compiled step: ...")
    with pytest.raises(
        pg.DTypeError,
        match=r"^compiled step: input 1: expected a numeric matrix, vector or ag_tensor",
    ):
        step("a")
    with pytest.raises(ShapeError, match=r"^compiled step: input 1: tensors are 2-D"):
        step(np.zeros((4, 5, 1)))
    assert np.array_equal(W.numpy(), before)  # refused calls changed nothing
    step(np.ones((4, 5)))  # the recorded shape still works


def test_compile_refuses_a_checkpoint_and_a_missing_optimizer(rng):
    W = pg.ag_param(rng.normal(size=(3, 1)))
    with pytest.raises(PyggmlrValueError, match="fn calls ag_checkpoint"):
        pg.ag_compile(
            lambda x: pg.ag_sum(pg.ag_checkpoint(lambda a: a * W, x)), np.ones((1, 2)), build="grad"
        )
    assert lib.pg_tape_nodes() == 0 and lib.pg_tape_depth() == 0
    with pytest.raises(ArgumentErrorType):
        pg.ag_compile(lambda x: x, np.zeros((1, 1)), build="opt")


from pyggmlr.errors import ArgumentError as ArgumentErrorType  # noqa: E402


def test_compiled_dropout_draws_new_masks_as_eager(rng):
    P0 = [p.numpy() for p in _mlp(rng, (4, 6, 3), "f64")]
    data = _batches(rng, 6, 4, 8, 3)
    drop = pg.ag_dropout(0.4)

    def f(P, x, y):
        h = drop.forward(pg.ops._linear(P[0], x, P[1], lib.PG_UNARY_OP_RELU))
        return pg.ag_softmax_cross_entropy_loss(pg.ops._linear(P[2], h, P[3]), y)

    Pe, Pc = [pg.ag_param(p) for p in P0], [pg.ag_param(p) for p in P0]
    oe, oc = pg.optimizer_adam(Pe, lr=0.01), pg.optimizer_adam(Pc, lr=0.01)
    pg.ggml_set_seed(11)
    eager = []
    for x, y in data:
        with pg.with_grad_tape():
            le = f(Pe, pg.ag_tensor(x), pg.ag_tensor(y))
        oe.step(pg.backward(le))
        oe.zero_grad()
        eager.append(le.item())
    pg.ggml_set_seed(11)
    step = pg.ag_compile(
        lambda x, y: f(Pc, x, y), pg.ag_tensor(data[0][0]), pg.ag_tensor(data[0][1]), optimizer=oc
    )
    comp = [step(x, y) for x, y in data]
    assert np.float32(eager).tolist() == np.float32(comp).tolist() and len(set(comp)) > 1
    for a, b in zip(Pe, Pc):
        assert np.array_equal(a.numpy(), b.numpy())


def test_a_fn_that_is_not_callable_is_named_by_its_type():
    """R's text names the class too now (issue 29: it said only "fn must be a function")"""
    with pytest.raises(pg.ArgumentError, match=r"^ag_compile\(\): fn must be a function, got int$"):
        pg.ag_compile(3, np.ones((2, 2)))


def test_repr_is_the_graph_summary_and_never_raises():
    from pyggmlr.graph.compile import CompiledStep

    m = pg.ag_linear(2, 1)
    step = pg.ag_compile(lambda a, b: pg.ag_mse_loss(m(a), b), np.ones((2, 3)), np.ones((1, 3)),
                         optimizer=pg.optimizer_sgd(m.parameters(), lr=0.1))  # fmt: skip
    assert repr(step) == str(step.memory(top=0)) and repr(step).startswith("Compiled graph (opt)")
    bare = CompiledStep.__new__(CompiledStep)  # as after a failed construction: no graph
    assert repr(bare).startswith("<pyggmlr.graph.compile.CompiledStep object")
