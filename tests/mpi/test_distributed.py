"""Data parallelism's C helpers (gradient averaging, packing) and the MPI backend (run under
mpirun in subprocesses); dp_train's own tests: test_dp_train.py."""

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest

import pyggmlr as pg
from pyggmlr import distributed as dist
from pyggmlr._core import NULL
from pyggmlr.parallel import mpi, replicas

HERE = os.path.dirname(os.path.abspath(__file__))  # tests/mpi: this test and the scripts it runs
sys.path.insert(0, HERE)
from _common import MLP, regression_data  # noqa: E402


def _params(m):
    return {k: t.numpy() for k, t in m.parameters().items()}


def _g(grads, t):
    """The live gradient in a map (Gradients[...] caches its first read)."""
    return grads.get_tensor(t).numpy()


def _grads_of(model, x, y):
    with pg.with_grad_tape():
        loss = pg.ag_mse_loss(model.forward(pg.ag_tensor(x)), pg.ag_tensor(y))
    return pg.backward(loss)


def test_averaged_gradient_equals_gradient_of_combined_batch(f64):
    X, Y = regression_data(12)
    m0, m1, m2, full = (MLP(4, 6, 2, seed=s) for s in (1, 2, 3, 4))
    for m in (m1, m2, full):
        replicas.ag_copy_parameters(m, m0)
    g0 = _grads_of(m0, X[:, :4], Y[:, :4])
    g1 = _grads_of(m1, X[:, 4:8], Y[:, 4:8])
    g2 = _grads_of(m2, X[:, 8:], Y[:, 8:])
    gf = _grads_of(full, X, Y)
    replicas.ag_average_gradients([m0, m1, m2], [g0, g1, g2])
    for k, t in m0.parameters().items():
        ref = gf[full.parameters()[k]]
        np.testing.assert_allclose(_g(g0, t), ref, rtol=0, atol=1e-12)
        assert np.max(np.abs(ref)) > 1e-3
    # .grad mode (each replica's .grad): same result, and the maps handed out are not changed
    for m in (m0, m1, m2):
        replicas.ag_copy_parameters(m, full)
        for t in m.parameters().values():
            t.grad = None
    h0 = _grads_of(m0, X[:, :4], Y[:, :4])
    before = h0[m0.W1].copy()
    _grads_of(m1, X[:, 4:8], Y[:, 4:8])
    _grads_of(m2, X[:, 8:], Y[:, 8:])
    replicas.ag_average_gradients([m0, m1, m2], [None, None, None])
    for k, t in m0.parameters().items():
        np.testing.assert_allclose(t.grad, gf[full.parameters()[k]], rtol=0, atol=1e-12)
    np.testing.assert_array_equal(h0.get_tensor(m0.W1).numpy(), before)


def test_average_gradients_missing_and_mismatch(f64):
    m0, m1 = MLP(2, 3, 1, seed=0), MLP(2, 3, 1, seed=0)
    x = np.ones((2, 3))
    # replica 1 only uses b2: its W1 gradient counts as zeros
    with pg.with_grad_tape():
        l1 = pg.ag_sum(m1.b2)
    g1 = pg.backward(l1)
    g0 = _grads_of(m0, x, np.zeros((1, 3)))
    w1 = g0[m0.W1].copy()
    b2 = g0[m0.b2].copy()
    replicas.ag_average_gradients([m0, m1], [g0, g1])
    np.testing.assert_allclose(_g(g0, m0.W1), w1 / 2, rtol=0, atol=1e-15)
    np.testing.assert_allclose(_g(g0, m0.b2), (b2 + 1) / 2, rtol=0, atol=1e-15)
    # replica 0's map lacks a gradient another replica has: a map cannot grow -> clear error
    with pg.with_grad_tape():
        l0 = pg.ag_sum(m0.b2)
    h0 = pg.backward(l0)
    h1 = _grads_of(m1, x, np.zeros((1, 3)))
    with pytest.raises(pg.StateError, match="no gradient in replica 0's map"):
        replicas.ag_average_gradients([m0, m1], [h0, h1])
    with pytest.raises(ValueError, match="replica 1 has 2 parameters"):
        replicas.ag_average_gradients([m0, [m1.W1, m1.b1]], [h0, h1])
    other = MLP(2, 4, 1, seed=0)
    with pytest.raises(pg.ShapeError, match="parameter 0 is .*4x2.* in replica 1"):
        replicas.ag_average_gradients([m0, other], [None, None])


@pytest.mark.parametrize("buf_dtype", [np.float64, np.float32])
def test_pack_unpack_round_trip(f64, buf_dtype):
    m = MLP(3, 4, 2, seed=5)
    X, Y = regression_data(6, n_in=3)
    g = _grads_of(m, X, Y)
    ts = list(m.parameters().values())
    arr, n = mpi._arr(ts), len(ts)
    L = mpi._flat_len(arr, n, 1)
    assert L == sum(t.size for t in ts) + n == 4 * 3 + 4 + 2 * 4 + 2 + 4
    orig = [g.get_tensor(t).numpy() for t in ts]
    buf = np.full(L + 1, -7.0, dtype=buf_dtype)
    mpi._pack(arr, n, g._m, mpi._GRAD, 1, 2.0, buf)
    expect = np.concatenate([2 * g[t].reshape(-1, order="F") for t in ts] + [np.ones(n)])
    np.testing.assert_allclose(buf[:L], expect, rtol=1e-6 if buf_dtype == np.float32 else 0)
    assert buf[L] == -7.0  # past the layout: untouched
    buf[: L - n] *= 3
    mpi._unpack(arr, n, g._m, mpi._GRAD, 1, 0.25, buf)
    for t, o in zip(
        ts, orig
    ):  # 2 * 3 * 0.25 = 1.5 times the original, written into the map in place
        np.testing.assert_allclose(
            g.get_tensor(t).numpy(), 1.5 * o, rtol=1e-6 if buf_dtype == np.float32 else 1e-15
        )
    # values: pack and unpack into another model
    other = MLP(3, 4, 2, seed=6)
    vbuf = np.empty(mpi._flat_len(arr, n, 0), dtype=np.float64)
    mpi._pack(arr, n, NULL, mpi._VALUE, 0, 1.0, vbuf)
    oarr = mpi._arr(list(other.parameters().values()))
    mpi._unpack(oarr, n, NULL, mpi._VALUE, 0, 1.0, vbuf)
    for k, v in _params(m).items():
        np.testing.assert_array_equal(_params(other)[k], v)


def test_pack_missing_gradients_flags_and_grad_mode(f64):
    m = MLP(2, 3, 1, seed=0)
    ts = list(m.parameters().values())
    with pg.with_grad_tape():
        loss = pg.ag_sum(pg.ag_mul(m.b2, 3.0))
    g = pg.backward(loss)
    arr, n = mpi._arr(ts), len(ts)
    L = mpi._flat_len(arr, n, 1)
    buf = np.empty(L)
    mpi._pack(arr, n, g._m, mpi._GRAD, 1, 1.0, buf)
    np.testing.assert_array_equal(buf[: L - n], [0.0] * (L - n - 1) + [3.0])
    np.testing.assert_array_equal(buf[L - n :], [0, 0, 0, 1])
    # another "rank" had a W1 gradient: a map cannot take it ...
    buf[L - n] = 1.0
    with pytest.raises(pg.StateError, match="no gradient in this process's map"):
        mpi._unpack(arr, n, g._m, mpi._GRAD, 1, 1.0, buf)
    # ... .grad can: a fresh .grad is set for W1 and b2; b1, W2 (flag 0) stay without one
    buf[:6] = np.arange(6)
    mpi._unpack(arr, n, NULL, mpi._GRAD, 1, 0.5, buf)
    np.testing.assert_array_equal(m.W1.grad, np.arange(6).reshape(3, 2, order="F") * 0.5)
    assert m.b1.grad is None and m.W2.grad is None
    np.testing.assert_array_equal(m.b2.grad, [[1.5]])
    assert (
        g.get_tensor(m.b2).numpy()[0, 0] == 3.0
    )  # the map returned by backward() is not changed in .grad mode
    with pytest.raises(pg.ShapeError, match="buffer has 3 elements"):
        mpi._pack(arr, n, NULL, mpi._GRAD, 1, 1.0, np.empty(3))
    with pytest.raises(ValueError, match="flags apply to gradients only"):
        mpi._pack(arr, n, NULL, mpi._VALUE, 1, 1.0, buf)


def test_copy_parameters_shape_mismatch():
    with pytest.raises(pg.ShapeError, match="parameter 0"):
        replicas.ag_copy_parameters(MLP(2, 3, 1, seed=0), MLP(2, 4, 1, seed=0))
    with pytest.raises(ValueError, match="destination has 4 parameters, source has 1"):
        replicas.ag_copy_parameters(MLP(2, 3, 1, seed=0), [pg.ag_param(np.ones((3, 2)))])


# ---------------------------------------------------------------------------------------------
# MPI: optional dependency


def test_import_pyggmlr_does_not_import_mpi4py():
    code = "import sys, pyggmlr; assert 'mpi4py' not in sys.modules, 'mpi4py imported'; print(pyggmlr.dp_train.__name__)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "dp_train"


def test_missing_mpi_gives_install_instructions(monkeypatch):
    monkeypatch.setitem(sys.modules, "mpi4py", None)  # import mpi4py -> ImportError
    monkeypatch.setitem(mpi._state, "MPI", None)
    monkeypatch.setitem(mpi._state, "comm", None)
    assert dist.mpi_available() is False
    for fn in (
        dist.init,
        dist.rank,
        dist.world_size,
        lambda: dist.ag_allreduce_gradients(MLP(2, 2, 1, seed=0)),
    ):
        with pytest.raises(dist.DistributedError) as ei:
            fn()
        msg = str(ei.value)
        assert (
            "apt-get install -y openmpi-bin libopenmpi-dev" in msg and "pip install mpi4py" in msg
        )
        assert "mpirun -np 2" in msg
    assert isinstance(ei.value, RuntimeError) and isinstance(ei.value, pg.PyggmlrError)


def test_fit_distributed_maps_onto_ag_fit(monkeypatch):
    """The alias only maps its arguments: ag_fit(distributed=True) gets them (no MPI needed)."""
    import pyggmlr.fit

    calls = []
    monkeypatch.setattr(pyggmlr.fit, "ag_fit", lambda *a, **k: calls.append((a, k)) or "hist")
    m, X, Y = MLP(4, 3, 2, seed=0), *regression_data(8)
    assert dist.ag_fit_distributed(m, X, Y) == "hist"
    assert calls[-1][0] == (m, X, Y)
    mapped = dict(
        loss="mse",
        optimizer="adamw",
        lr=1e-3,
        nepoch=10,
        batch_size=32,
        shuffle=True,
        seed=0,
        verbose=2,
        distributed=True,
    )
    assert calls[-1][1] == mapped
    opt = pg.optimizer_sgd(m, lr=0.1)
    dist.ag_fit_distributed(m, X, Y, "cross_entropy", opt, 0.5, 3, 4, False, 7, verbose=0)
    assert list(calls[-1][1]) == list(mapped)
    assert list(calls[-1][1].values()) == ["cross_entropy", opt, 0.5, 3, 4, False, 7, 0, True]
    dist.ag_fit_distributed(m, X, Y, optimizer="sgd", max_norm=float("inf"), drop_last=True)
    assert calls[-1][1]["optimizer"] == "sgd" and calls[-1][1]["verbose"] == 2


def test_fit_distributed_refuses_what_ag_fit_lacks(monkeypatch):
    """max_norm, drop_last=False and verbose=k are refused before MPI (here: mpi4py missing)."""
    monkeypatch.setitem(sys.modules, "mpi4py", None)
    monkeypatch.setitem(mpi._state, "MPI", None)
    monkeypatch.setitem(mpi._state, "comm", None)
    m, X, Y = MLP(4, 3, 2, seed=0), *regression_data(8)
    cases = [
        (dict(max_norm=1.0), "max_norm=1.0 is not supported.*DistributedOptimizer"),
        (dict(max_norm=float("nan")), "max_norm=nan is not supported"),
        (dict(max_norm=-float("inf")), "max_norm=-inf is not supported"),
        (dict(drop_last=False), "drop_last=False is not supported.*drop_last=True"),
        (dict(verbose=5), "verbose=5 is not supported"),
    ]
    for kw, msg in cases:
        with pytest.raises(pg.PyggmlrValueError, match="^ag_fit_distributed: " + msg):
            dist.ag_fit_distributed(m, X, Y, **kw)
    with pytest.raises(pg.ArgumentError, match="ag_fit_distributed: max_norm must be a number"):
        dist.ag_fit_distributed(m, X, Y, max_norm="1")
    with pytest.raises(pg.ArgumentError, match="ag_fit_distributed: drop_last must be True"):
        dist.ag_fit_distributed(m, X, Y, drop_last=0)
    with pytest.raises(dist.DistributedError, match="pip install mpi4py"):  # the plain call: MPI
        dist.ag_fit_distributed(m, X, Y, nepoch=1, verbose=False)


_MPIRUN = shutil.which("mpirun")
_HAVE_MPI4PY = importlib.util.find_spec("mpi4py") is not None
needs_mpi = pytest.mark.skipif(
    not (_MPIRUN and _HAVE_MPI4PY),
    reason="MPI tests need mpirun and mpi4py (apt-get install -y openmpi-bin libopenmpi-dev; pip install mpi4py): "
    f"mpirun {'found' if _MPIRUN else 'missing'}, mpi4py {'found' if _HAVE_MPI4PY else 'missing'}",
)


def _mpirun(script, *args, np_=2, timeout=120):
    cmd = [
        _MPIRUN,
        "--allow-run-as-root",
        "--oversubscribe",
        "-np",
        str(np_),
        sys.executable,
        os.path.join(HERE, script),
        *args,
    ]
    env = dict(os.environ, OMPI_MCA_btl_vader_single_copy_mechanism="none", PYTHONUNBUFFERED="1")
    t0 = time.monotonic()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{script} {' '.join(args)} hung: no exit within {timeout} s\n{e.stderr}")
    return r, time.monotonic() - t0


@needs_mpi
def test_mpi_two_ranks_equal_one_rank_with_double_batch(tmp_path):
    out = str(tmp_path / "report.json")
    r, _ = _mpirun("equivalence.py", out)
    assert r.returncode == 0, r.stdout + r.stderr
    rep = json.load(open(out))
    assert rep["world_size"] == 2
    # A: ag_fit_distributed is ag_fit(distributed=True), bit for bit, and returns its History;
    # 2 ranks x 4 follow one rank x 8 (Adam, shuffled; ranks started from different weights)
    assert rep["A_type"] == "History" and rep["A_bit_identical"] == 1
    assert rep["A_max_weight_diff"] < 1e-12
    assert rep["A_max_loss_diff"] < 1e-12
    assert rep["A_loss_first_last"][1] < 0.7 * rep["A_loss_first_last"][0]
    assert rep["A_comm_refused"].startswith("ag_fit_distributed: comm=")
    assert "ag_mpi_init(comm)" in rep["A_comm_refused"]
    # identical weights across ranks, bit for bit
    assert rep["A_spread"] == 0.0 and rep["A_rank_weights_identical"] is True
    # B: DistributedOptimizer (SGD momentum, clipping of the averaged gradient) vs a plain loop
    assert rep["B_max_weight_diff"] < 1e-12 and rep["B_moved"] > 1e-3
    assert rep["B_spread"] == 0.0
    # C: the ag_fit(distributed=True) hook
    assert rep["C_sizes"] == [8, 16] and rep["C_wrapped"] == "DistributedOptimizer"
    assert rep["C_parts"] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    # D: ag_fit(distributed=True) equals one rank with the global batch, weights identical on ranks
    assert rep["D_max_weight_diff"] < 1e-12 and rep["D_spread"] == 0.0
    # one fused all-reduce per step (4 epochs x 6 full global batches of 8; 51 % 8 left out):
    # 4*6+6+2*6+2 = 44 gradient values + 4 flags + 1 weight, f64
    assert rep["A_bytes"] == 4 * 6 * (44 + 4 + 1) * 8


@needs_mpi
def test_mpi_rank_failure_ends_the_job(tmp_path):
    r, took = _mpirun("rank_failure.py", os.devnull, "raise", timeout=60)
    assert r.returncode != 0
    assert "rank 1 failed on purpose at step 1" in r.stderr
    assert "aborting all ranks" in r.stderr
    assert "should not happen" not in r.stdout


@needs_mpi
def test_mpi_layout_mismatch_is_an_error_on_every_rank(tmp_path):
    r, _ = _mpirun("rank_failure.py", os.devnull, "layout", timeout=60)
    assert r.returncode != 0
    assert "the ranks pass different parameter lists" in r.stderr
    assert "should not happen" not in r.stdout


_BAD_COMM = """
import json, numpy as np, pyggmlr as pg, pyggmlr.distributed as d
m = pg.ag_sequential([pg.ag_linear(2, 1)])
opt = pg.optimizer_sgd(m)
calls = {
    "ag_mpi_init": lambda: d.ag_mpi_init(0),
    "ag_mpi_rank": lambda: d.ag_mpi_rank(0),
    "ag_mpi_world_size": lambda: d.ag_mpi_world_size("x"),
    "ag_mpi_barrier": lambda: d.ag_mpi_barrier(1.5),
    "ag_broadcast_parameters": lambda: d.ag_broadcast_parameters(m, comm=0),
    "ag_allreduce_gradients": lambda: d.ag_allreduce_gradients(m, comm=0),
    "ag_allreduce_mean": lambda: d.ag_allreduce_mean(1.0, comm=0),
    "ag_parameters_spread": lambda: d.ag_parameters_spread(m, comm=0),
    "ag_rank_slice": lambda: d.ag_rank_slice([1, 2], comm=0),
    "ag_distributed_setup": lambda: d.ag_distributed_setup(m, opt, 4, comm=0),
    "DistributedOptimizer": lambda: d.DistributedOptimizer(opt, comm=0),
    "ag_fit_distributed": lambda: d.ag_fit_distributed(
        m, np.zeros((2, 4)), np.zeros((1, 4)), "mse", comm=0),
}
out = {}
for k, f in calls.items():
    try:
        f()
        out[k] = "no error"
    except Exception as e:
        out[k] = [type(e).__name__, str(e)]
out["initialized"] = d.is_initialized()
print(json.dumps(out))
"""


@needs_mpi
def test_a_comm_that_is_not_a_communicator_is_refused():
    """Every function taking comm refuses one that is not an mpi4py communicator, naming itself
    (it used to fail with an AttributeError inside the collective), and changes nothing. A
    subprocess: importing mpi4py.MPI starts MPI (singleton) in that process."""
    r = subprocess.run(
        [sys.executable, "-c", _BAD_COMM], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out.pop("initialized") is False  # the refused ag_mpi_init(0) picked no communicator
    assert len(out) == 12
    for fn, (cls, msg) in out.items():
        assert cls == "ArgumentError", (fn, cls, msg)
        assert msg.startswith(f"{fn}: comm must be an mpi4py communicator"), msg
        assert msg.endswith(("got int 0", "got str 'x'", "got float 1.5")), msg


_RSCRIPT = shutil.which("Rscript")


def _have_rmpi():
    if not _RSCRIPT:
        return False
    r = subprocess.run(
        [_RSCRIPT, "-e", "quit(status = !requireNamespace('Rmpi', quietly = TRUE))"],
        capture_output=True,
    )
    return r.returncode == 0


@needs_mpi
def test_mpi_ag_fit_same_bits_in_r_and_python(tmp_path):
    """ag_fit(distributed=TRUE), 2 ranks, dropout, shuffles, a validation split and accumulation:
    the Python ranks and the R ranks (Rmpi), each a standalone process, give identical histories
    and weights; the history counts both ranks' samples."""
    py = str(tmp_path / "py.json")
    r, _ = _mpirun("fit_parity.py", py)
    assert r.returncode == 0, r.stdout + r.stderr
    rep = json.load(open(py))
    assert rep["spread"] == 0.0
    # 72 training samples, logical batches of 2 ranks x 16: 64 samples counted per epoch, on rank 0
    assert all(abs(a * 64 - round(a * 64)) < 1e-12 for a in rep["accuracy"])
    assert rep["loss"][-1] < rep["loss"][0] and len(rep["weights"]) == 4 * 8 + 8 + 8 * 3 + 3
    assert _r_ranks("fit_parity.R", tmp_path) == rep


def _r_ranks(script, tmp_path):
    """The R twin `script` on 2 ranks (Rscript under mpirun, Rmpi): what its rank 0 wrote. CI
    has R with Rmpi, so it fails there rather than skip."""
    if not _have_rmpi():
        why = (
            "Rmpi does not load (apt-get install r-cran-rmpi libopenmpi-dev): the R half cannot run"
        )
        if _RSCRIPT and os.environ.get("CI"):  # CI installs both: R's MPI path must run there
            pytest.fail("CI has R but " + why)
        pytest.skip("this machine has no R with Rmpi; " + why)
    rout = str(tmp_path / "r.json")
    env = dict(os.environ, OMPI_MCA_btl_vader_single_copy_mechanism="none")
    cmd = [_MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np", "2", _RSCRIPT,
           os.path.join(HERE, script), rout]  # fmt: skip
    rr = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    assert rr.returncode == 0, rr.stdout + rr.stderr
    return json.load(open(rout))


@needs_mpi
def test_mpi_allreduce_gradients_same_bits_in_r_and_python(tmp_path):
    """A hand-written loop's ag_allreduce_gradients on 2 ranks, f32 parameters, unequal weights:
    Python's default buffer is f64, as R's (Rmpi reduces doubles only), so both languages get
    the same averaged gradients, bit for bit; dtype="f64" is that default. (Python's default
    was the parameters' f32, whose sums differed from R's in 6 of these 16 values.)"""
    got = {}
    for dt in ("", "f64"):
        out = str(tmp_path / f"py{dt}.json")
        r, _ = _mpirun("allreduce_parity.py", out, *([dt] if dt else []))
        assert r.returncode == 0, r.stdout + r.stderr
        got[dt] = json.load(open(out))
    assert got[""] == got["f64"] and len(got[""]) == 16
    assert _r_ranks("allreduce_parity.R", tmp_path) == got[""]


_BAD_WEIGHT = """
import json, math, pyggmlr as pg, pyggmlr.distributed as d
m = pg.ag_linear(2, 3)
out = []
for w in (-1.0, -0.5, math.nan, math.inf, -math.inf):
    try:
        d.ag_allreduce_gradients(m, weight=w)
        out.append(None)
    except pg.PyggmlrValueError as e:
        out.append(str(e))
out.append(d.ag_allreduce_gradients(m, weight=0.0))  # 0 is a weight (a rank without data)
print(json.dumps(out))
"""


@needs_mpi
def test_allreduce_weight_refused_alike_in_r_and_python():
    """ag_allreduce_gradients' weight: the core's rule and text (pg_arg_real), the same words in
    both languages (each language's spelling of NaN and Inf: the core's number style), before
    any MPI call; 0 is accepted (one process: the total weight is 0)."""
    r = subprocess.run(
        [sys.executable, "-c", _BAD_WEIGHT], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr
    py = json.loads(r.stdout.strip().splitlines()[-1])
    text = "ag_allreduce_gradients: weight must be finite and >= 0, got "
    assert py == [text + s for s in ("-1", "-0.5", "nan", "inf", "-inf")] + [0.0]
    if not _RSCRIPT:
        pytest.skip("this machine has no R: the R half cannot run (scripts/install-r.sh)")
    code = (
        "suppressMessages(library(pyggmlr)); m <- ag_linear(2, 3);"
        " for (w in c(-1, -0.5, NaN, Inf, -Inf, NA)) {"
        " e <- tryCatch(ag_allreduce_gradients(m, weight = w), error = function(e) e);"
        " cat(inherits(e, 'pyggmlr_value_error'), conditionMessage(e), '\\n', sep = '|') }"
    )
    rr = subprocess.run([_RSCRIPT, "-e", code], capture_output=True, text=True, timeout=120)
    assert rr.returncode == 0, rr.stderr
    shown = ("-1", "-0.5", "NaN", "Inf", "-Inf", "NA")
    assert rr.stdout.splitlines() == [f"TRUE|{text}{s}|" for s in shown]
