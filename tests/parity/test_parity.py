"""Cross-language parity tier: every case of the parity harness's table (tests/parity: ops,
losses, optimizers, schedulers, clipping, layers, dataloader, memory report, an R-written
training loop, ag_fit, dp_train, model files crossing languages, ag_gradcheck) runs in Python
and in R through rpy2,
in f64 and f32, and must agree bit for bit at every step.

Skipped only when R or rpy2 is absent; the R package must be installed
(``bash scripts/install-r-package.sh``), otherwise these tests fail."""

import numpy as np
import pytest

from pyggmlr import r

if not r.available():
    pytest.skip(f"R bridge unavailable: {r.unavailable_reason()}", allow_module_level=True)

import parity  # noqa: E402  (tests/parity, on the path with the tests)
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
    ops = {
        "ag_mse_loss": "loss:mse",
        "ag_cross_entropy_loss": "loss:cross_entropy",
        "ag_softmax_cross_entropy_loss": "softmax_ce",
    }
    for op in pg.ops.__all__:
        assert ops.get(op, "op:" + op[3:]) in names, f"{op} has no parity case"
    for layer in (
        "linear",
        "batch_norm train",
        "batch_norm eval",
        "layer_norm",
        "embedding",
        "attention causal",
        "dropout",
        "sequential",
    ):
        assert "layer:" + layer in names, layer
    for other in (
        "sgd momentum",
        "sgd nesterov",
        "sgd weight_decay",
        "sgd accumulate",
        "adam",
        "adamw",
        "adam accumulate",
        "scheduler step",
        "scheduler cosine",
        "clip_grad_norm",
        "dataloader no shuffle",
        "ag_tape_memory",
        "script:",
        "ag_fit: sgd",
        "ag_fit: adamw",
        "val 0.",
        "accum",
        "dp_train: 2 replicas",
        "model file: R saves, Python loads",
        "model file: Python saves, R loads",
        "Python resumes",
        "R resumes",
        "ag_gradcheck:",
        "state dict: R -> Python",
        "state dict: Python -> R",
    ):
        assert other in names, other
    assert all(set(c.dtypes) == {"f64", "f32"} for c in parity.CASES)
    assert parity.NOT_COVERED == []
    assert max(len(c.name) for c in parity.CASES) <= 52  # the table's name column


def test_r_halves_are_r_files_that_run_alone():
    """The R halves are .R files (lintr: tests/parity/.lintr), each runnable alone with Rscript
    (it attaches pyggmlr and defines its functions); the harness's Python holds no R code but
    the one line that sources them."""
    import os
    import pathlib
    import subprocess

    here = pathlib.Path(parity.__file__).parent
    assert sorted(p.name for p in here.glob("*.R")) == sorted(parity.core.R_FILES)
    rscript = os.path.join(r.run("R.home('bin')"), "Rscript")
    for f in parity.core.R_FILES:
        res = subprocess.run([rscript, str(here / f)], capture_output=True, text=True, timeout=120)
        assert res.returncode == 0 and res.stdout == "", (f, res.stdout, res.stderr[-500:])
    harness = [p for p in here.glob("*.py") if not p.name.startswith("test_")]
    lines = [ln for p in harness for ln in p.read_text().splitlines() if "<-" in ln]
    assert len(lines) == 1 and "sys.source" in lines[0], lines


def test_multi_step_cases_compare_every_step(sides):
    case = next(c for c in parity.CASES if c.name == "adam accumulate=2")
    recs = parity.run_case(case, "f64", sides[1])
    assert len(recs) == case.steps == 6
    assert {"loss", "grad W1", "W1", "t"} <= set(recs[0])
    # accumulation: weights change on steps 2, 4, 6 only, as the optimizer's step counter says
    assert [int(rec["t"][0]) for rec in recs] == [0, 1, 1, 2, 2, 3]
    assert np.array_equal(recs[0]["W1"], case.inputs(parity._Draws(parity._seed(case.name)))["W1"])


def test_compare_names_step_and_value_of_a_one_ulp_change():
    a = [
        {"loss": np.array([[1.0]])},
        {"loss": np.array([[0.5]]), "W": np.array([[1.0, 2.0]], dtype=np.float32)},
    ]
    b = [
        {"loss": np.array([[1.0]])},
        {
            "loss": np.array([[0.5]]),
            "W": np.array([[1.0, np.nextafter(np.float32(2), np.float32(3))]], dtype=np.float32),
        },
    ]
    mabs, mulp, first = parity.compare(a, b)
    assert mulp == 1 and mabs == pytest.approx(2.0**-22)
    assert first is not None and first.startswith("step 2, W:")
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
    r.call("ag_set_blas", "r")  # R's own BLAS: neither the built-in kernel nor scipy's OpenBLAS
    assert r.call("ag_blas_name") != pg.ag_blas_name()
    try:
        bad = parity.check_case(case, "f64", *sides)
    finally:
        r.sync_blas(force=True)
    assert bad["status"] == "MISMATCH" and bad["detail"].startswith("step 1, ")
    assert r.call("ag_blas_name") == pg.ag_blas_name()
    assert parity.check_case(case, "f64", *sides)["status"] == "ok"


def test_command_prints_table_and_fails_on_mismatch(capsys, monkeypatch):
    assert parity.main(["--case", "op:matmul", "--case", "layer:embedding"]) == 0
    out = capsys.readouterr().out
    for s in ("op:matmul", "layer:embedding", "f64", "f32", "max ULP", "4/4 case runs identical"):
        assert s in out
    assert "not covered" not in out

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


# ---- the ag_fit, dp_train, model-file and gradcheck cases check what they claim -----------------


def _case(prefix):
    return next(c for c in parity.CASES if c.name.startswith(prefix))


def _recs(prefix, side, dtype="f64"):
    return parity.run_case(_case(prefix), dtype, side)


def test_fit_cases_record_every_epoch_with_accumulation_and_validation(sides):
    py, rs = sides
    recs = _recs("ag_fit: adamw object", rs)
    assert len(recs) == 3 and [float(r["history epoch"][0]) for r in recs] == [1.0, 2.0, 3.0]
    # 28 samples, val 0.25 -> 7 held out; 21 train -> 2 logical batches of 8 = 4 micro-batches of 4
    assert all(r["batch losses"].shape == (4,) for r in recs)
    assert all(
        np.isfinite(r["history val_loss"]).all() and np.isfinite(r["history val_loss_unc"]).all()
        for r in recs
    )
    assert recs[-1]["ag_predict"].shape == (3, 28)
    # the weights move from epoch to epoch, and the training loss goes down
    assert not np.array_equal(recs[0]["weights layer1_W"], recs[1]["weights layer1_W"])
    assert recs[2]["history loss"][0] < recs[0]["history loss"][0]
    no_val = _recs("ag_fit: sgd", rs)
    assert all(np.isnan(r["history val_loss"]).all() for r in no_val)
    assert [float(r["history lr"][0]) for r in no_val] == [
        0.1,
        0.05,
        0.1 / 3,
    ]  # opt_params schedule
    bn = _recs("ag_fit: 'adamw', mse, batch_norm", py)
    assert np.isnan(bn[0]["history accuracy"]).all() and "buffer layer2_running_var" in bn[-1]


def test_fit_accumulation_is_one_step_per_logical_batch(sides):
    """SGD without momentum, 2 micro-batches per step: the R case's epoch-1 weights equal one
    plain SGD step per logical batch on the mean gradient of its 8 samples (computed here)."""
    py, rs = sides
    case = _case("ag_fit: sgd")
    d = case.inputs(parity._Draws(parity._seed(case.name)))
    prev = pg.ag_dtype("f64")
    try:
        m = parity._py_model("mlp", d["init"], d["binit"])
        opt = pg.optimizer_sgd(m.parameters(), lr=0.1)
        for b in range(3):  # 24 samples / 8 per logical batch
            idx = slice(8 * b, 8 * b + 8)
            with pg.with_grad_tape():
                loss = pg.ag_softmax_cross_entropy_loss(
                    m.forward(pg.ag_tensor(d["x"][:, idx])), d["y"][idx]
                )
            opt.step(pg.backward(loss))
            opt.zero_grad()
        want = {k: t.numpy() for k, t in m.parameters().items()}
    finally:
        pg.ag_dtype(prev)
    got = parity.run_case(case, "f64", rs)[0]
    for k, v in want.items():
        np.testing.assert_allclose(got[f"weights {k}"], v, rtol=0, atol=1e-12)


def test_dp_train_cases_average_two_replicas(sides):
    rs = sides[1]
    rec = _recs("dp_train: 2 replicas, mlp", rs)[0]
    assert rec["loss_history"].shape == (4,) and np.all(np.isfinite(rec["loss_history"]))
    assert {"replica 1 layer1_W", "replica 1 layer2_b"} <= set(rec)


def test_model_file_cases_cross_languages_with_optimizer_state(sides):
    py, rs = sides
    for prefix in ("model file: R: 2 Adam", "model file: Python: 2 Adam"):
        recs = _recs(prefix, rs, "f32")
        assert len(recs) == 2
        assert (
            recs[0]["optimizer t"][0] == 2.0
            and recs[0]["epoch"][0] == 2.0
            and recs[0]["dtype"][0] == 0.0
        )
        assert recs[0]["ag_predict"].shape == (3, 7)
        assert not np.array_equal(recs[0]["loaded layer1_W"], recs[1]["trained layer1_W"])
    recs = _recs("model file: R saves, Python loads", rs)
    assert recs[0]["dtype"][0] == 1.0 and {
        "loaded layer4_W",
        "loaded buffer layer2_running_var",
    } <= set(recs[0])


def test_gradcheck_case_sees_a_pass_and_a_fail(sides):
    for side in sides:
        rec = _recs("ag_gradcheck", side)[0]
        assert rec["passed"][0] == 0.0
        assert rec["PASS per line"].tolist() == [1.0, 0.0, 0.0]  # p passes, q fails, overall fails
        assert rec["max_err (printed)"][0] < 1e-3 < rec["max_err (printed)"][1]
        assert rec["grad unset"].tolist() == [1.0, 1.0]
