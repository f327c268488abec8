"""Cross-language parity tier: every case of pyggmlr.parity's table (ops, losses, optimizers,
schedulers, clipping, layers, dataloader, memory report, an R-written training loop) runs in
Python and in R through rpy2, in f64 and f32, and must agree bit for bit at every step.

Skipped only when R or rpy2 is absent; the R package must be installed
(``bash scripts/install-r-package.sh``), otherwise these tests fail."""
import numpy as np
import pytest

from pyggmlr import r

if not r.available():
    pytest.skip(f"R bridge unavailable: {r.unavailable_reason()}", allow_module_level=True)

from pyggmlr import parity  # noqa: E402
import pyggmlr as pg  # noqa: E402

pytestmark = pytest.mark.parity


@pytest.fixture(scope="module")
def sides():
    r.start()
    return parity.PySide(), parity.RSide()


PARAMS = [pytest.param(c, dt, id=f"{c.name}-{dt}") for c in parity.CASES for dt in c.dtypes]


@pytest.mark.parametrize("case,dtype", PARAMS)
def test_case_bit_identical(case, dtype, sides):
    res = parity.check_case(case, dtype, *sides)
    assert res["status"] == "ok", f"{case.name} [{dtype}]: {res['status']}: {res['detail']}"
    assert res["max_abs"] == 0.0 and res["max_ulp"] == 0


def test_table_covers_the_api():
    names = " ".join(c.name for c in parity.CASES)
    ops = {"ag_mse_loss": "loss:mse", "ag_cross_entropy_loss": "loss:cross_entropy",
           "ag_softmax_cross_entropy_loss": "softmax_ce"}
    for op in pg.ops.__all__:
        assert ops.get(op, "op:" + op[3:]) in names, f"{op} has no parity case"
    for layer in ("linear", "batch_norm train", "batch_norm eval", "layer_norm", "embedding",
                  "attention causal", "dropout", "sequential"):
        assert "layer:" + layer in names, layer
    for other in ("sgd momentum", "sgd nesterov", "sgd weight_decay", "sgd accumulate", "adam", "adamw",
                  "adam accumulate", "scheduler step", "scheduler cosine", "clip_grad_norm",
                  "dataloader no shuffle", "ag_tape_memory", "script:"):
        assert other in names, other
    assert all(set(c.dtypes) == {"f64", "f32"} for c in parity.CASES)
    assert ("ag_fit", "not covered: R has no ag_fit") in parity.NOT_COVERED


def test_multi_step_cases_compare_every_step(sides):
    case = next(c for c in parity.CASES if c.name == "adam accumulate=2")
    recs = parity.run_case(case, "f64", sides[1])
    assert len(recs) == case.steps == 6
    assert {"loss", "grad W1", "W1", "t"} <= set(recs[0])
    # accumulation: weights change on steps 2, 4, 6 only, as the optimizer's step counter says
    assert [int(rec["t"][0]) for rec in recs] == [0, 1, 1, 2, 2, 3]
    assert np.array_equal(recs[0]["W1"], case.inputs(np.random.default_rng(parity._seed(case.name)))["W1"])


def test_compare_names_step_and_value_of_a_one_ulp_change():
    a = [{"loss": np.array([[1.0]])}, {"loss": np.array([[0.5]]), "W": np.array([[1.0, 2.0]], dtype=np.float32)}]
    b = [{"loss": np.array([[1.0]])}, {"loss": np.array([[0.5]]),
                                       "W": np.array([[1.0, np.nextafter(np.float32(2), np.float32(3))]], dtype=np.float32)}]
    mabs, mulp, first = parity.compare(a, b)
    assert mulp == 1 and mabs == pytest.approx(2.0 ** -22)
    assert first.startswith("step 2, W:")
    assert parity.max_ulp(np.array([0.0]), np.array([-0.0])) == 0
    assert parity.max_ulp(np.array([np.nan]), np.array([1.0])) == float("inf")
    assert parity.compare(a, a) == (0.0, 0, None)


def test_a_different_gemm_is_detected(sides):
    """A GEMM other than Python's on the R side (R's reference dgemm against Python's OpenBLAS,
    or OpenBLAS against Python's built-in kernel) rounds differently: the harness must see it,
    and sync_blas() must restore bit-identity."""
    rng = np.random.default_rng(7)
    d = {"A": rng.uniform(-1, 1, (24, 256)), "B": rng.uniform(-1, 1, (256, 16))}

    def fn(P, d, steps):
        A, B = P.ag_param(d["A"]), P.ag_param(d["B"])
        loss = P.tape(lambda: P.ag_sum(P.ag_matmul(A, B)))
        g = P.backward(loss)
        return [{"y": P.np(P.ag_matmul(A, B)), "loss": P.np(loss), "grad A": P.grad(g, A)}]

    case = parity.Case("big matmul", "op", fn, 1, lambda rng: d)
    if pg.blas_name() == "builtin":
        import os
        import scipy_openblas32
        r.call("ag_use_openblas", os.path.join(scipy_openblas32.get_lib_dir(), "libscipy_openblas.so"))
    else:
        r.call("ag_set_blas", "r")
    assert r.call("ag_blas_name") != pg.blas_name()
    try:
        bad = parity.check_case(case, "f64", *sides)
    finally:
        r.sync_blas(force=True)
    assert bad["status"] == "MISMATCH" and bad["detail"].startswith("step 1, ")
    assert r.call("ag_blas_name") == pg.blas_name()
    assert parity.check_case(case, "f64", *sides)["status"] == "ok"


def test_command_prints_table_and_fails_on_mismatch(capsys, monkeypatch):
    assert parity.main(["--case", "op:matmul", "--case", "layer:embedding"]) == 0
    out = capsys.readouterr().out
    for s in ("op:matmul", "layer:embedding", "f64", "f32", "max ULP", "not covered: R has no ag_fit",
              "4/4 case runs identical"):
        assert s in out

    def fn(P, d, steps):  # the R side uses another learning rate: must be caught
        W = P.ag_param(np.eye(2))
        opt = P.optimizer_sgd({"W": W}, lr=0.1 if isinstance(P, parity.PySide) else 0.1000001)
        loss = P.tape(lambda: P.ag_sum(P.ag_mul(W, W)))
        opt.step(P.backward(loss))
        return [{"W": P.np(W)}]

    monkeypatch.setattr(parity, "CASES", [parity.Case("deliberate lr mismatch", "optim", fn)])
    assert parity.main(["--dtype", "f64"]) == 1
    out = capsys.readouterr().out
    assert "deliberate lr mismatch" in out and "MISMATCH" in out and "step 1, W:" in out
