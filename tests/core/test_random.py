"""R's random streams in the C core (pyggmlr.random), checked against R itself.

The reference numbers come from Rscript (R's own set.seed / runif / rnorm / sample), written to
binary files and compared bit for bit with the core's draws. Those tests skip only on a machine
without R (they say so); CI has R. The golden values of the spec and the stream's properties
(state round trips, thread safety, per-run streams) are checked everywhere."""

import os
import shutil
import subprocess
import threading

import numpy as np
import pytest
from _goldens import GLOROT_5X3_SEED42, ORTHOGONAL_3X2_SEED1

import pyggmlr as pg
from pyggmlr.random import Generator

SEEDS = (0, 1, -1, 2**31 - 1, 42)
PERM_NS = (1, 2, 3, 10, 1000, 2**16, 2**16 + 1, 100000)
BIG_NS = ("2147483647", "2147483648", "2147483649", "3e9", "1099511627776", "4.5e15")

_R_REF = r"""
out <- commandArgs(TRUE)[1]
w <- function(name, v) writeBin(as.double(v), file.path(out, paste0(name, ".bin")))
for (s in c(0L, 1L, -1L, .Machine$integer.max, 42L)) {
  set.seed(s); w(sprintf("state_%d", s), .Random.seed)
  set.seed(s); w(sprintf("runif_%d", s), runif(1e6))
  set.seed(s); w(sprintf("runif_ab_%d", s), runif(1e5, -2, 3))
  set.seed(s); w(sprintf("rnorm_%d", s), rnorm(1e5))
  for (n in c(1, 2, 3, 10, 1000, 2^16, 2^16 + 1, 1e5)) {
    set.seed(s); w(sprintf("perm_%d_%d", s, as.integer(n)), sample(n))
    set.seed(s); w(sprintf("rep_%d_%d", s, as.integer(n)), sample(n, 500, replace = TRUE))
  }
  for (n in c("2147483647", "2147483648", "2147483649", "3e9", "1099511627776", "4.5e15")) {
    set.seed(s); w(sprintf("bigrep_%d_%s", s, n), sample(as.numeric(n), 1000, replace = TRUE))
    set.seed(s); w(sprintf("bighash_%d_%s", s, n), sample(as.numeric(n), 1000))
  }
}
set.seed(7); w("hash_1e7p1", sample(1e7 + 1, 5))
set.seed(7); w("pool_1e7", sample(1e7, 5))
set.seed(7); w("pool_forced", sample.int(2e7, 10, useHash = FALSE))
set.seed(7); w("hash_forced", sample.int(100, 10, useHash = TRUE))
p10 <- c(1, 2, 2, 3, 0, 1, 5, 5, 1, 0.5)
set.seed(3); w("prob_rep", sample(10, 50, replace = TRUE, prob = p10))
set.seed(3); w("prob_norep", sample(10, 8, prob = p10))
set.seed(3); w("prob_walker", sample(300, 2000, replace = TRUE, prob = rep(c(1, 2, 3), 100)))
set.seed(3); w("prob_walker_ties", sample(250, 500, replace = TRUE, prob = rep(1, 250)))
set.seed(9); w("runif_vec", runif(10, c(0, -1, 5), c(1, 1, 5)))
set.seed(9); w("runif_nan", suppressWarnings(runif(6, c(0, NaN, 2, -Inf), c(1, 1, 1, 0))))
set.seed(9); w("rnorm_vec", rnorm(10, c(0, 10), c(1, 0, 2)))
set.seed(9); w("rnorm_nan", suppressWarnings(rnorm(6, c(0, NaN, Inf), c(1, 1, 1, -1, Inf, 0))))
set.seed(5); runif(7); w("state_mid", .Random.seed)
set.seed(5); runif(7); w("after_mid", runif(5))
set.seed(42); runif(3); w("seq_after_runif", sample(10))
set.seed(1); w("sample_x", sample(c(10, 20, 30, 40), 3))
set.seed(1); w("sample_nonint", sample.int(10.5, 6, replace = TRUE))
"""


@pytest.fixture(scope="module")
def rref(tmp_path_factory):
    """name -> R's numbers (float64), computed once by Rscript."""
    rs = shutil.which("Rscript")
    if rs is None:
        pytest.skip(
            "R is not installed here (Rscript not found): the comparisons with R's own generator "
            "need it; CI installs R"
        )
    d = tmp_path_factory.mktemp("rref")
    script = d / "ref.R"
    script.write_text(_R_REF)
    subprocess.run([rs, "--vanilla", str(script), str(d)], check=True, timeout=300)
    return {
        f[:-4]: np.fromfile(d / f, dtype=np.float64) for f in os.listdir(d) if f.endswith(".bin")
    }


# ---- against R itself --------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_uniforms_normals_and_state_equal_r(rref, seed):
    np.testing.assert_array_equal(
        Generator(seed).get_state(), rref[f"state_{seed}"].astype(np.int32)
    )
    u = Generator(seed).runif(10**6)
    assert u.tobytes() == rref[f"runif_{seed}"].tobytes()
    assert Generator(seed).runif(10**5, -2, 3).tobytes() == rref[f"runif_ab_{seed}"].tobytes()
    assert Generator(seed).rnorm(10**5).tobytes() == rref[f"rnorm_{seed}"].tobytes()


@pytest.mark.parametrize("seed", SEEDS)
def test_sample_equals_r_for_every_bit_count(rref, seed):
    for n in PERM_NS:
        np.testing.assert_array_equal(
            Generator(seed).sample(n), rref[f"perm_{seed}_{n}"], err_msg=f"sample({n})"
        )
        np.testing.assert_array_equal(
            Generator(seed).sample(n, 500, replace=True),
            rref[f"rep_{seed}_{n}"],
            err_msg=f"sample({n}, 500, TRUE)",
        )
    for n in BIG_NS:  # beyond 2^31: double results; no replacement goes through R's hashed path
        np.testing.assert_array_equal(
            Generator(seed).sample(float(n), 1000, replace=True),
            rref[f"bigrep_{seed}_{n}"],
            err_msg=f"sample({n}, 1000, TRUE)",
        )
        np.testing.assert_array_equal(
            Generator(seed).sample(float(n), 1000),
            rref[f"bighash_{seed}_{n}"],
            err_msg=f"sample({n}, 1000)",
        )


def test_sample_paths_and_weights_equal_r(rref):
    g = Generator(7)
    np.testing.assert_array_equal(g.sample(1e7 + 1, 5), rref["hash_1e7p1"])
    g.seed(7)
    np.testing.assert_array_equal(g.sample(1e7, 5), rref["pool_1e7"])
    g.seed(7)
    np.testing.assert_array_equal(g.sample_int(2e7, 10, use_hash=False), rref["pool_forced"])
    g.seed(7)
    np.testing.assert_array_equal(g.sample_int(100, 10, use_hash=True), rref["hash_forced"])
    p10 = [1, 2, 2, 3, 0, 1, 5, 5, 1, 0.5]
    for name, args in (
        ("prob_rep", (10, 50, True, p10)),
        ("prob_norep", (10, 8, False, p10)),
        ("prob_walker", (300, 2000, True, [1, 2, 3] * 100)),
        ("prob_walker_ties", (250, 500, True, [1] * 250)),
    ):
        g.seed(3)
        np.testing.assert_array_equal(g.sample_int(*args), rref[name], err_msg=name)
    g.seed(1)
    np.testing.assert_array_equal(g.sample([10, 20, 30, 40], 3), rref["sample_x"])
    g.seed(1)
    np.testing.assert_array_equal(g.sample_int(10.5, 6, replace=True), rref["sample_nonint"])


def test_recycled_arguments_and_nans_equal_r(rref):
    g = Generator(9)
    assert g.runif(10, [0, -1, 5], [1, 1, 5]).tobytes() == rref["runif_vec"].tobytes()
    g.seed(9)
    with pytest.warns(RuntimeWarning, match="runif: NAs produced"):
        v = g.runif(6, [0, np.nan, 2, -np.inf], [1, 1, 1, 0])
    np.testing.assert_array_equal(
        v, rref["runif_nan"]
    )  # NaN where R gives NaN, the same draws elsewhere
    g.seed(9)
    assert g.rnorm(10, [0, 10], [1, 0, 2]).tobytes() == rref["rnorm_vec"].tobytes()
    g.seed(9)
    with pytest.warns(RuntimeWarning, match="rnorm: NAs produced"):
        v = g.rnorm(6, [0, np.nan, np.inf], [1, 1, 1, -1, np.inf, 0])
    np.testing.assert_array_equal(v, rref["rnorm_nan"])


def test_state_moves_between_r_and_python(rref):
    g = Generator(5)
    g.runif(7)
    np.testing.assert_array_equal(g.get_state(), rref["state_mid"].astype(np.int32))
    h = Generator(123)
    h.set_state(rref["state_mid"].astype(np.int64))  # R's .Random.seed, as it arrives from R
    assert h.runif(5).tobytes() == rref["after_mid"].tobytes()
    pg.ggml_set_seed(42)
    pg.random.runif(3)
    np.testing.assert_array_equal(pg.random.sample(10), rref["seq_after_runif"])


# ---- everywhere: the spec's check values and the stream's properties -------------------------


def test_spec_check_values():
    pg.ggml_set_seed(42)
    assert pg.random.runif(3).tolist() == [
        0.91480604349635541,
        0.93707541329786181,
        0.28613953478634357,
    ]
    pg.ggml_set_seed(42)
    assert pg.random.sample(10).tolist() == [1, 5, 10, 8, 2, 4, 6, 9, 7, 3]
    pg.ggml_set_seed(42)
    pg.random.runif(3)
    assert pg.random.sample(10).tolist() == [9, 4, 2, 8, 1, 10, 6, 5, 7, 3]
    pg.ggml_set_seed(1)
    np.testing.assert_allclose(
        pg.random.rnorm(4),
        [-0.626453810742332, 0.183643324222082, -0.835628612410047, 1.59528080213779],
        rtol=0,
        atol=5e-15,
    )  # the spec prints 15 digits
    pg.ggml_set_seed(1)
    assert pg.random.sample(5).tolist() == [1, 4, 3, 5, 2]


def test_spec_initialiser_goldens(f64):
    pg.ggml_set_seed(42)
    w = pg.ag_linear(5, 3).W.numpy().ravel(order="F")
    np.testing.assert_allclose(w[:4], GLOROT_5X3_SEED42, rtol=0, atol=1e-15)
    pg.ggml_set_seed(1)
    w = pg.ag_linear(3, 2, init="orthogonal").W.numpy()
    np.testing.assert_allclose(w, ORTHOGONAL_3X2_SEED1, atol=1e-10)
    pg.ggml_set_seed(1)
    np.testing.assert_array_equal(
        pg.ag_linear(2, 3, init="orthogonal").W.numpy(), w.T
    )  # the same 3 x 2 draw
    np.testing.assert_allclose(w @ w.T, np.eye(2), atol=1e-15)


def test_dropout_mask_is_runif_in_column_order(f64):
    x = np.ones((3, 4))
    pg.ggml_set_seed(11)
    out = pg.ag_dropout(0.3).forward(x).numpy()
    pg.ggml_set_seed(11)
    u = pg.random.runif(12).reshape((3, 4), order="F")
    np.testing.assert_array_equal(out, (u > 0.3) / 0.7)


def test_state_round_trip_and_validation():
    g = Generator(3)
    g.runif(700)  # crosses a block of 624 words
    st = g.get_state()
    assert st[0] == 10403 and st.size == pg.random.STATE_LEN == 626
    a = g.runif(50)
    g.set_state(st)
    np.testing.assert_array_equal(g.runif(50), a)
    with pytest.raises(pg.PyggmlrValueError, match="626"):
        g.set_state(st[:10])
    bad = st.copy()
    bad[0] = 10101
    with pytest.raises(pg.PyggmlrValueError, match="default kinds"):
        g.set_state(bad)
    with pytest.raises(pg.PyggmlrValueError, match="integers"):
        g.set_state(np.full(626, 0.5))
    np.testing.assert_array_equal(g.get_state()[2:], st[2:])  # a failed call changed nothing


def test_errors_carry_r_messages_and_change_nothing():
    g = Generator(4)
    st = g.get_state()
    with pytest.raises(
        pg.PyggmlrValueError,
        match="cannot take a sample larger than the population when 'replace = FALSE'",
    ):
        g.sample_int(5, 6)
    with pytest.raises(pg.PyggmlrValueError, match="too few positive probabilities"):
        g.sample_int(3, 3, prob=[1, 0, 1])
    with pytest.raises(pg.PyggmlrValueError, match="incorrect number of probabilities"):
        g.sample_int(3, 2, replace=True, prob=[1, 1])
    with pytest.raises(pg.PyggmlrValueError, match="negative probability"):
        g.sample_int(3, 2, replace=True, prob=[1, -1, 1])
    with pytest.raises(pg.PyggmlrValueError, match="invalid first argument"):
        g.sample_int(float("nan"), 2)
    with pytest.raises(pg.PyggmlrValueError, match="n must be a count"):
        g.runif(-1)
    np.testing.assert_array_equal(g.get_state(), st)
    # R's as.integer then set.seed, the core's rule (pg_seed_parse): "1" is 1 as in ggmlR
    for bad in (1.5e10, float("inf"), -(2.0**31)):
        with pytest.raises(pg.PyggmlrValueError, match="supplied seed is not a valid integer"):
            pg.ggml_set_seed(bad)
    with pytest.raises(pg.PyggmlrValueError, match="single non-NA integer .or None.. Got nan."):
        pg.ggml_set_seed(float("nan"))
    for bad in (True, [1, 2]):  # not one number: the wrong kind, as R's TRUE and c(1, 2)
        with pytest.raises(pg.ArgumentError, match="single non-NA integer"):
            pg.ggml_set_seed(bad)
    assert (
        pg.ggml_set_seed(2**31 - 1) == 2**31 - 1
        and pg.ggml_set_seed(-(2.0**31) + 0.5) == -(2**31) + 1
    )
    assert pg.ggml_set_seed(None) is None and pg.ggml_set_seed(7.9) == 7  # as.integer truncates


def test_default_stream_is_not_torn_by_threads():
    pg.ggml_set_seed(2024)
    ref = pg.random.runif(8 * 50 * 97)
    pg.ggml_set_seed(2024)
    chunks = []
    lock = threading.Lock()

    def work():
        for _ in range(50):
            c = pg.random.runif(97)  # one call: a contiguous run of the stream
            with lock:
                chunks.append(c)

    ts = [threading.Thread(target=work) for _ in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    starts = {ref[i * 97]: i for i in range(8 * 50)}
    seen = sorted(starts[c[0]] for c in chunks)
    assert seen == list(range(8 * 50))
    for c in chunks:
        i = starts[c[0]]
        np.testing.assert_array_equal(c, ref[i * 97 : (i + 1) * 97])


def _model(seed):
    pg.ggml_set_seed(100 + seed)
    return pg.ag_sequential(pg.ag_linear(4, 8, "relu"), pg.ag_dropout(0.2), pg.ag_linear(8, 3))


def _fit(m, seed, x, y):
    h = pg.ag_fit(
        m, x, y, nepoch=3, batch_size=8, val_split=0.25, seed=seed, silent=True, static=False
    )
    return list(h.loss) + list(h.val_loss), [t.numpy() for t in m.parameters().values()]


def test_fits_with_seeds_are_reproducible_across_threads():
    g = Generator(5)
    x = g.runif(4 * 64, -1, 1).reshape((4, 64), order="F")
    y = g.sample_int(3, 64, replace=True) - 1
    seq = {s: _fit(_model(s), s, x, y) for s in (1, 2, 3)}  # one after another
    models = {s: _model(s) for s in (1, 2, 3)}  # the same initial weights
    res = {}
    ts = [
        threading.Thread(target=lambda s=s: res.__setitem__(s, _fit(models[s], s, x, y)))
        for s in (1, 2, 3)
    ]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for s in (1, 2, 3):  # shuffles and dropout masks came from each fit's own stream
        assert res[s][0] == seq[s][0]
        assert all(np.array_equal(u, v) for u, v in zip(res[s][1], seq[s][1]))


def test_fit_seed_leaves_default_stream_alone():
    g = Generator(6)
    x = g.runif(4 * 40, -1, 1).reshape((4, 40), order="F")
    y = g.sample_int(3, 40, replace=True) - 1
    pg.ggml_set_seed(1)
    m = pg.ag_sequential(pg.ag_linear(4, 5, "relu"), pg.ag_dropout(0.3), pg.ag_linear(5, 3))
    st = pg.random.get_state()
    pg.ag_fit(m, x, y, nepoch=2, batch_size=8, val_split=0.2, seed=9, silent=True)
    np.testing.assert_array_equal(pg.random.get_state(), st)
    pg.ag_fit(
        m, x, y, nepoch=1, batch_size=8, silent=True
    )  # seed None: draws from the default stream
    assert not np.array_equal(pg.random.get_state(), st)


def test_dataloader_draws_r_sample():
    x = np.arange(20.0).reshape((2, 10), order="F")
    pg.ggml_set_seed(42)
    dl = pg.ag_dataloader(x, batch_size=5, shuffle=True)
    np.testing.assert_array_equal(dl.order + 1, [1, 5, 10, 8, 2, 4, 6, 9, 7, 3])  # R's sample(10)
    st = pg.random.get_state()
    own = pg.ag_dataloader(x, batch_size=5, shuffle=True, seed=42)
    np.testing.assert_array_equal(own.order + 1, [1, 5, 10, 8, 2, 4, 6, 9, 7, 3])
    own.reset()
    np.testing.assert_array_equal(
        pg.random.get_state(), st
    )  # a loader's own stream leaves the default alone


def test_draws_too_large_for_memory_fail_instead_of_killing_the_process():
    g = Generator(8)
    st = g.get_state()
    with pytest.raises(
        pg.PyggmlrMemoryError,
        match=r"runif: .* GiB needed, more than the .* GiB of memory available",
    ):
        g.runif(1e20)
    with pytest.raises(pg.PyggmlrMemoryError, match="sample.int: .* GiB needed"):
        g.sample_int(3e9, 2e9)  # the result alone
    with pytest.raises(pg.PyggmlrMemoryError, match="the pool of a sample without replacement"):
        g.sample_int(4e15, 3, use_hash=False)
    with pytest.raises(
        pg.PyggmlrMemoryError, match="the pool of a sample without replacement, and the result"
    ):
        g.sample_int(4e9, 10**6, use_hash=False)  # the result fits, the pool beside it does not
    with pytest.raises(pg.PyggmlrValueError, match="runif: min must be numbers"):
        g.runif(3, "a")
    with pytest.raises(pg.PyggmlrValueError, match="sample.int: prob must be numbers"):
        g.sample_int(5, 2, prob="ab")
    np.testing.assert_array_equal(g.get_state(), st)  # nothing was drawn
    with pytest.raises(
        pg.PyggmlrMemoryError, match=r"ag_linear \(orthogonal init\): .* GiB needed"
    ):
        pg.ag_linear(60000, 60000, init="orthogonal")
    with pytest.raises(
        pg.PyggmlrMemoryError,
        match=r"ag_linear: out of memory drawing a \[1000000x1000000\] weight",
    ):
        pg.ag_linear(10**6, 10**6)


def test_dropout_is_one_op_whose_backward_is_g_times_mask(f64):
    x0 = np.arange(1.0, 13.0).reshape((3, 4), order="F")
    w = np.linspace(-1, 1, 12).reshape((3, 4), order="F")
    x = pg.ag_param(x0)
    pg.ggml_set_seed(5)
    with pg.with_grad_tape():
        y = pg.ag_dropout(0.4).forward(x)
        loss = pg.ag_sum(pg.ag_mul(y, w))
    assert "dropout" in {r["op"] for r in pg.ag_tape_memory(quiet=True).by_op}
    g = pg.backward(loss)
    pg.ggml_set_seed(5)
    mask = (pg.random.runif(12).reshape((3, 4), order="F") > 0.4) / 0.6
    np.testing.assert_array_equal(y.numpy(), x0 * mask)
    np.testing.assert_array_equal(g[x], w * mask)
    with pytest.raises(pg.PyggmlrValueError, match=r"ag_dropout: rate must be in \[0, 1\)"):
        pg.nn.base._dropout(x, 1.0)


def test_ggml_set_seed_takes_strings_as_ggmlr_does():
    assert pg.ggml_set_seed("42") == 42 and pg.ggml_set_seed(" 3.9") == 3
    a = pg.random.runif(3)
    pg.ggml_set_seed(3)
    assert np.array_equal(a, pg.random.runif(3))  # " 3.9" seeded as set.seed(3)
    with pytest.raises(pg.PyggmlrValueError, match="supplied seed is not a valid integer"):
        pg.ggml_set_seed("abc")
