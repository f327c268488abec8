"""The built-in GEMM (native/gemm*.c, used where no BLAS is available): every micro-kernel,
both paths, transposes, small and thin shapes, bit reproducibility and its thread pool."""

import math

import numpy as np
import pytest
from _fd import R, gradcheck, project

import pyggmlr as pg

# ---- the built-in GEMM kernel (used where no BLAS is available) ----

GEMM_KERNELS = {0: "portable", 1: "AVX2+FMA", 2: "AVX-512F"}


def _select_kernel(which):
    from pyggmlr._native import lib

    return lib.pg_gemm_kernel_select(which)


# every test below runs on each micro-kernel of the built-in GEMM: portable, AVX2 (16x6 / 8x6 tiles)
# and AVX-512 (32x6 / 16x6); a kernel this CPU cannot run is skipped (saying so), never replaced
@pytest.fixture(params=sorted(GEMM_KERNELS), ids=["portable", "avx2", "avx512"])
def builtin_gemm(request):
    prev = pg.ag_blas_name()
    pg.ag_set_blas("builtin")
    got = _select_kernel(request.param)
    try:
        if got != request.param:
            pytest.skip(
                f"this CPU lacks {GEMM_KERNELS[request.param]}: the built-in GEMM's "
                f"{GEMM_KERNELS[request.param]} kernel cannot run here (it has {GEMM_KERNELS[got]})"
            )
        yield request.param
    finally:
        _select_kernel(-1)
        if prev != "builtin":
            pg.ag_set_blas("openblas")


# A single column (1x1x1, 129x300x1: matrix-vector) runs the plain loops; the rest the kernel's
# direct path (operands up to about 4 MiB) or its packed blocked path (300x900x400 in f64): sizes
# ragged against the tiles (32x6 / 16x6 / 8x6 / 4x6), larger than the blocks (MC 128 / 64, KC 256:
# several k blocks add up in C), more columns than NC (3072). test_builtin_gemm_paths_give_identical_bits
# runs both paths on each shape.
@pytest.mark.parametrize(
    "m,k,n",
    [
        (1, 1, 1),
        (3, 5, 2),
        (7, 4, 9),
        (64, 33, 17),
        (17, 33, 9),
        (100, 3, 257),
        (300, 900, 400),
        (7, 5, 3100),
        (129, 300, 1),
    ],
)
def test_builtin_gemm_forward_and_grad(builtin_gemm, rng, m, k, n):
    assert pg.ag_blas_name() == "builtin"
    A, B = R(rng, m, k), R(rng, k, n)
    np.testing.assert_allclose(
        pg.ag_matmul(pg.ag_tensor(A, dtype="f64"), pg.ag_tensor(B, dtype="f64")).numpy(),
        A @ B,
        rtol=1e-12,
        atol=1e-13,
    )
    np.testing.assert_allclose(
        pg.ag_matmul(pg.ag_tensor(A), pg.ag_tensor(B)).numpy(),
        A @ B,
        rtol=1e-4,
        atol=2e-6 * math.sqrt(k),
    )
    if m * k * n <= 200:
        gradcheck(lambda a, b: project(pg.ag_matmul(a, b)), A, B)
    else:  # large: compare backward with numpy's dA = G B^T, dB = A^T G (G = projection weights)
        a, b = pg.ag_param(A, dtype="f64"), pg.ag_param(B, dtype="f64")
        G = np.random.default_rng(7).uniform(0.5, 1.5, (m, n))
        with pg.with_grad_tape():
            loss = project(pg.ag_matmul(a, b))
        g = pg.backward(loss)
        np.testing.assert_allclose(g[a], G @ B.T, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(g[b], A.T @ G, rtol=1e-12, atol=1e-12)


def test_builtin_gemm_ignores_nan_in_fresh_output(builtin_gemm):
    # beta = 0 must overwrite (not scale) the output buffer, whatever garbage it holds
    for _ in range(3):
        out = pg.ag_matmul(
            pg.ag_tensor(np.ones((3, 2)), dtype="f64"), pg.ag_tensor(np.ones((2, 4)), dtype="f64")
        )
        np.testing.assert_array_equal(out.numpy(), np.full((3, 4), 2.0))


def test_builtin_gemm_overwrites_garbage_in_blocked_output(builtin_gemm, rng):
    # the blocked kernel with beta = 0: NaN left in a recycled buffer of the output's size must not leak
    A, B = R(rng, 40, 50), R(rng, 50, 30)
    for dt in ("f64", "f32"):
        for _ in range(3):
            junk = pg.ag_tensor(np.full((40, 30), np.nan), dtype=dt)
            del junk
            out = pg.ag_matmul(pg.ag_tensor(A, dtype=dt), pg.ag_tensor(B, dtype=dt)).numpy()
            assert np.isfinite(out).all()
            np.testing.assert_allclose(
                out, A @ B, rtol=1e-4 if dt == "f32" else 1e-12, atol=1e-5 if dt == "f32" else 0
            )


def _op(X, t):
    return X.T if t else X


@pytest.mark.parametrize("ta,tb", [(0, 0), (0, 1), (1, 0), (1, 1)])
@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (17, 33, 9), (100, 3, 257), (150, 300, 70)])
def test_builtin_gemm_transposes_forward_and_grad(builtin_gemm, rng, ta, tb, m, k, n):
    # matmul_t reaches pg_gemm with every (ta, tb) and alpha != 1 forward; its backward runs the
    # transposed products dA = al G op(B)^T, dB = al op(A)^T G in their four layouts as well
    from pyggmlr.nn.base import _matmul_t

    al = -0.75
    A = R(rng, k, m) if ta else R(rng, m, k)
    B = R(rng, n, k) if tb else R(rng, k, n)
    want = al * _op(A, ta) @ _op(B, tb)
    out32 = _matmul_t(pg.ag_tensor(A), pg.ag_tensor(B), ta=ta, tb=tb, alpha=al).numpy()
    np.testing.assert_allclose(out32, want, rtol=1e-4, atol=2e-6 * math.sqrt(k))
    a, b = pg.ag_param(A, dtype="f64"), pg.ag_param(B, dtype="f64")
    with pg.with_grad_tape():
        out = _matmul_t(a, b, ta=ta, tb=tb, alpha=al)
        loss = project(out)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-12, atol=1e-13)
    g = pg.backward(loss)
    G = np.random.default_rng(7).uniform(0.5, 1.5, (m, n))
    d_opa, d_opb = al * G @ _op(B, tb).T, al * _op(A, ta).T @ G
    np.testing.assert_allclose(g[a], _op(d_opa, ta), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(g[b], _op(d_opb, tb), rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("dt", ["f64", "f32"])
def test_builtin_gemm_accumulates_gradients_of_reused_tensors(builtin_gemm, rng, dt):
    # W used twice (dW = G1 x1^T + G2 x2^T) and x used twice (dx = W^T G1 + V^T G3): the second
    # product into each gradient slot runs with beta = 1
    W, V, x, x2 = R(rng, 70, 300), R(rng, 20, 300), R(rng, 300, 40), R(rng, 300, 25)
    w, v, xs = pg.ag_param(W, dtype=dt), pg.ag_param(V, dtype=dt), pg.ag_param(x, dtype=dt)
    with pg.with_grad_tape():
        loss = pg.ag_add(
            pg.ag_add(
                project(pg.ag_matmul(w, xs), 7),
                project(pg.ag_matmul(w, pg.ag_tensor(x2, dtype=dt)), 8),
            ),
            project(pg.ag_matmul(v, xs), 9),
        )
    g = pg.backward(loss)
    G1, G2, G3 = (
        np.random.default_rng(s).uniform(0.5, 1.5, sh)
        for s, sh in ((7, (70, 40)), (8, (70, 25)), (9, (20, 40)))
    )
    tol = dict(rtol=1e-12, atol=1e-12) if dt == "f64" else dict(rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(g[w], G1 @ x.T + G2 @ x2.T, **tol)
    np.testing.assert_allclose(g[xs], W.T @ G1 + V.T @ G3, **tol)
    np.testing.assert_allclose(g[v], G3 @ x.T, **tol)


def _bits(arr):
    return arr.view(np.uint32 if arr.dtype == np.float32 else np.uint64)


def _select_path(which):
    from pyggmlr._native import lib

    return lib.pg_gemm_path_select(which)


# the small and thin products of small MLPs (forward m x k x n and their backward products), and
# every m from 1 to 17 (ragged rows against 2, 4, 8 and 16 lanes; 1 to 2 vectors per tile)
SMALL_GEMMS = [
    (64, 4, 32),
    (32, 64, 32),
    (3, 32, 32),
    (64, 32, 32),
    (10, 128, 64),
    (10, 128, 256),
    (64, 64, 64),
    (128, 64, 64),
    (64, 32, 4),
    (4, 64, 32),
    (32, 3, 32),
    (10, 64, 128),
    (128, 10, 64),
    (2, 2, 2),
    (5, 300, 7),
] + [(m, 33, 19) for m in range(1, 18)]


def _gemm_operands(rng, m, k, n, ta, tb):
    return (R(rng, k, m) if ta else R(rng, m, k)), (R(rng, n, k) if tb else R(rng, k, n))


def _gemm_layouts(rng, shapes, dt, make=pg.ag_tensor):
    """Each m x k x n in the four layouts: (m, k, n, ta, tb, a, b), a and b tensors (`make`)
    of random operands stored transposed where ta / tb."""
    for m, k, n in shapes:
        for ta in (0, 1):
            for tb in (0, 1):
                A, B = _gemm_operands(rng, m, k, n, ta, tb)
                yield m, k, n, ta, tb, make(A, dtype=dt), make(B, dtype=dt)


@pytest.mark.parametrize("ta,tb", [(0, 0), (0, 1), (1, 0), (1, 1)])
def test_builtin_gemm_small_and_thin_shapes(builtin_gemm, rng, ta, tb):
    # forward against numpy with alpha != 1, then accumulation into a used output (beta = 1: the
    # backward's gradient slots) through a tape, every layout, f64 and f32
    from pyggmlr.nn.base import _matmul_t

    al = -0.75
    for m, k, n in SMALL_GEMMS:
        A, B = _gemm_operands(rng, m, k, n, ta, tb)
        want = al * _op(A, ta) @ _op(B, tb)
        got = _matmul_t(
            pg.ag_tensor(A, dtype="f64"), pg.ag_tensor(B, dtype="f64"), ta=ta, tb=tb, alpha=al
        ).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13, err_msg=f"f64 {m}x{k}x{n}")
        got = _matmul_t(pg.ag_tensor(A), pg.ag_tensor(B), ta=ta, tb=tb, alpha=al).numpy()
        np.testing.assert_allclose(
            got, want, rtol=1e-4, atol=2e-6 * math.sqrt(k), err_msg=f"f32 {m}x{k}x{n}"
        )
    for m, k, n in [
        (3, 32, 32),
        (10, 64, 128),
        (17, 33, 19),
    ]:  # gradients: beta = 1 into a reused slot
        A, B = _gemm_operands(rng, m, k, n, ta, tb)
        a, b = pg.ag_param(A, dtype="f64"), pg.ag_param(B, dtype="f64")
        with pg.with_grad_tape():
            loss = pg.ag_add(
                project(_matmul_t(a, b, ta=ta, tb=tb, alpha=al), 7),
                project(_matmul_t(a, b, ta=ta, tb=tb, alpha=al), 8),
            )
        g = pg.backward(loss)
        G = np.random.default_rng(7).uniform(0.5, 1.5, (m, n)) + np.random.default_rng(8).uniform(
            0.5, 1.5, (m, n)
        )
        np.testing.assert_allclose(g[a], _op(al * G @ _op(B, tb).T, ta), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(g[b], _op(al * _op(A, ta).T @ G, tb), rtol=1e-12, atol=1e-12)


@pytest.fixture
def gemm_path():
    # _select_path: the built-in GEMM's path (1 direct, 0 packed, -1 by size), -1 again afterwards
    try:
        yield _select_path
    finally:
        _select_path(-1)


@pytest.mark.parametrize("dt", ["f64", "f32"])
def test_builtin_gemm_paths_give_identical_bits(builtin_gemm, gemm_path, rng, dt):
    # the direct (unpacked) path and the packed blocked path sum every element in the same order
    # with the same operations: identical bits, whichever the size picks, in every layout, with
    # alpha != 1, k > KC (several k blocks) and n > NC (several B panels in the packed path)
    from pyggmlr.nn.base import _matmul_t

    shapes = SMALL_GEMMS[:14] + [
        (1, 33, 19),
        (9, 33, 19),
        (17, 33, 19),
        (70, 600, 45),
        (7, 5, 3100),
        (24, 33, 19),  # AVX-512: ragged rows of half a vector run on the AVX2 kernels
        (44, 300, 9),
        (1024, 300, 100),  # columns of A 4 / 8 KiB apart: the direct path copies its a side
        (256, 40, 200),  # 1 / 2 KiB apart, 34 column tiles: copied too
        (512, 70, 60),  # copied, and packed with a k block that is not whole 16-column blocks
    ]
    for m, k, n, ta, tb, a, b in _gemm_layouts(rng, shapes, dt):
        outs = []
        for path in (1, 0, -1):
            assert gemm_path(path) == path
            outs.append(_matmul_t(a, b, ta=ta, tb=tb, alpha=-0.75).numpy())
        for o in outs[1:]:
            np.testing.assert_array_equal(
                _bits(o), _bits(outs[0]), err_msg=f"{m}x{k}x{n} ta={ta} tb={tb}"
            )
        # and right: a packing or copy both paths share would agree with itself
        want = -0.75 * (_op(a.numpy(), ta).astype(np.float64) @ _op(b.numpy(), tb))
        tol = dict(rtol=1e-4, atol=1e-3) if dt == "f32" else dict(rtol=1e-12, atol=1e-11)
        np.testing.assert_allclose(outs[0], want, **tol, err_msg=f"{m}x{k}x{n} ta={ta} tb={tb}")


@pytest.mark.parametrize("dt", ["f64", "f32"])
def test_builtin_gemm_is_bit_reproducible(builtin_gemm, rng, dt):
    # every element sums its products in one fixed order (k blocks of KC, in increasing k), whatever
    # the run, the addresses (and so the alignment) of the inputs, the element's place in a tile or
    # block, or the layout the operands come in: packing absorbs it
    from pyggmlr.nn.base import _matmul_t

    A, B = R(rng, 150, 300), R(rng, 300, 70)
    ref = _bits(pg.ag_matmul(pg.ag_tensor(A, dtype=dt), pg.ag_tensor(B, dtype=dt)).numpy())
    for extra in (1, 3, 7):
        pad = [
            pg.ag_tensor(np.ones((extra, 1)), dtype=dt) for _ in range(extra)
        ]  # shift later allocations
        got = pg.ag_matmul(
            pg.ag_tensor(A.copy(), dtype=dt), pg.ag_tensor(B.copy(), dtype=dt)
        ).numpy()
        np.testing.assert_array_equal(_bits(got), ref)
        del pad
    sub = pg.ag_matmul(pg.ag_tensor(A[5:82], dtype=dt), pg.ag_tensor(B[:, 3:36], dtype=dt)).numpy()
    np.testing.assert_array_equal(_bits(sub), ref[5:82, 3:36])
    for ta in (0, 1):
        for tb in (0, 1):
            At, Bt = (A.T.copy() if ta else A), (B.T.copy() if tb else B)
            got = _matmul_t(
                pg.ag_tensor(At, dtype=dt), pg.ag_tensor(Bt, dtype=dt), ta=ta, tb=tb
            ).numpy()
            np.testing.assert_array_equal(_bits(got), ref, err_msg=f"ta={ta} tb={tb}")


@pytest.fixture
def gemm_threads():
    # the thread count of the built-in GEMM (ag_set_threads) and its minimum work per thread;
    # both restored afterwards (one thread, the default minimum)
    from pyggmlr._native import lib

    try:
        yield lib
    finally:
        pg.ag_set_threads(1)
        lib.pg_gemm_thread_min_flops(-1)


@pytest.mark.parametrize("dt", ["f64", "f32"])
def test_builtin_gemm_threads_give_identical_bits(builtin_gemm, gemm_path, gemm_threads, rng, dt):
    # ag_set_threads(n) splits a product over rows or columns of C, never over k: threads 1, 2, 3
    # and 4 give the same bits on shapes that take the direct path (small, thin m: vectors along
    # n, thin n) and the packed one (forced, and by size), every layout, alpha != 1, beta 0 and
    # 1 (accumulation through backward). The minimum work per thread is set to 0 so that even
    # the small shapes are split (the rows or columns permitting).
    from pyggmlr.nn.base import _matmul_t

    assert gemm_threads.pg_gemm_thread_min_flops(0) == 0
    shapes = [
        (64, 32, 4),
        (3, 32, 32),
        (10, 64, 128),
        (70, 600, 45),
        (7, 5, 310),
        (300, 40, 7),
        (150, 300, 70),
        (256, 40, 200),  # the direct path copies its a side two row tiles at a time: the
        # threads' row ranges end inside a pair
    ]
    for path in (-1, 0):
        gemm_path(path)
        for m, k, n, ta, tb, a, b in _gemm_layouts(rng, shapes, dt, make=pg.ag_param):
            outs = []
            for t in (1, 2, 3, 4):
                pg.ag_set_threads(t)
                with pg.with_grad_tape():  # b used twice: its gradient slot accumulates
                    out = _matmul_t(a, b, ta=ta, tb=tb, alpha=-0.75)
                    loss = pg.ag_add(project(out, 7), project(_matmul_t(a, b, ta=ta, tb=tb), 8))
                g = pg.backward(loss)
                outs.append([_bits(out.numpy()), _bits(g[a]), _bits(g[b])])
            for t, o in zip((2, 3, 4), outs[1:]):
                for x, x1 in zip(o, outs[0]):
                    np.testing.assert_array_equal(
                        x, x1, err_msg=f"{m}x{k}x{n} ta={ta} tb={tb} path={path} threads={t}"
                    )
    want = _op(a.numpy(), ta) @ _op(b.numpy(), tb)  # and the numbers are right
    np.testing.assert_allclose(
        _matmul_t(a, b, ta=ta, tb=tb).numpy(),
        want,
        rtol=1e-4 if dt == "f32" else 1e-12,
        atol=1e-3 if dt == "f32" else 1e-11,
    )


def test_builtin_gemm_threads_start_only_where_it_pays(builtin_gemm, gemm_threads, rng):
    # with the default minimum work per thread a small product stays on the calling thread (no
    # worker is started), a large one starts n - 1 workers, which stay for the next products;
    # fewer threads stop the extra workers, and one thread stops them all
    lib = gemm_threads
    pg.ag_set_threads(1)
    assert lib.pg_gemm_threads_live() == 0
    small = [pg.ag_tensor(R(rng, 64, 64), dtype="f64") for _ in range(2)]
    A, B = (
        R(rng, 256, 300),
        R(rng, 300, 200),
    )  # 30.7 MFLOP: 3 threads of >= 2 (f64), 3 of >= 4 (f32)
    big = [pg.ag_tensor(A, dtype="f64"), pg.ag_tensor(B, dtype="f64")]
    ref = _bits(pg.ag_matmul(*big).numpy())
    pg.ag_set_threads(3)
    pg.ag_matmul(*small)
    assert lib.pg_gemm_threads_live() == 0
    got = pg.ag_matmul(*big).numpy()
    assert lib.pg_gemm_threads_live() == 2
    np.testing.assert_array_equal(_bits(got), ref)
    np.testing.assert_allclose(got, A @ B, rtol=1e-12, atol=1e-12)
    big32 = [pg.ag_tensor(A), pg.ag_tensor(B)]
    np.testing.assert_allclose(pg.ag_matmul(*big32).numpy(), A @ B, rtol=1e-4, atol=1e-3)
    pg.ag_set_threads(2)
    assert lib.pg_gemm_threads_live() == 1
    np.testing.assert_array_equal(_bits(pg.ag_matmul(*big).numpy()), ref)
    assert lib.pg_gemm_threads_live() == 1
    assert lib.pg_gemm_threads_stop() == 1 and lib.pg_gemm_threads_live() == 0
    np.testing.assert_array_equal(_bits(pg.ag_matmul(*big).numpy()), ref)  # restarts
    assert lib.pg_gemm_threads_live() == 1
    pg.ag_set_threads(1)
    assert lib.pg_gemm_threads_live() == 0


def test_builtin_gemm_threads_from_several_python_threads(builtin_gemm, gemm_threads, rng):
    # products from 4 Python threads at once while the pool is active (cffi releases the GIL):
    # one of them gets the pool, the others run single-threaded; every result has the bits of
    # a single-threaded run
    import threading

    gemm_threads.pg_gemm_thread_min_flops(0)
    ops = [
        (pg.ag_tensor(R(rng, 90, 120), dtype=dt), pg.ag_tensor(R(rng, 120, 70), dtype=dt))
        for dt in ("f64", "f32")
    ]
    refs = [_bits(pg.ag_matmul(a, b).numpy()) for a, b in ops]
    pg.ag_set_threads(2)
    bad = []

    def work(i):
        a, b = ops[i % 2]
        for _ in range(30):
            if not np.array_equal(_bits(pg.ag_matmul(a, b).numpy()), refs[i % 2]):
                bad.append(i)

    ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert bad == []
    assert gemm_threads.pg_gemm_threads_live() == 1


def test_builtin_gemm_threads_at_exit_and_after_fork():
    # a process that exits with the pool's workers asleep ends (the exit handler joins them); a
    # fork()ed child, which has none of its parent's workers, splits its products on a pool of
    # its own with the same bits
    import os
    import subprocess
    import sys

    code = """
import os, numpy as np, pyggmlr as pg
from pyggmlr._native import lib
pg.ag_set_blas("builtin")
pg.ag_set_threads(2)
a = pg.ag_tensor(np.arange(300 * 200.0).reshape(300, 200) % 7, dtype="f64")
b = pg.ag_tensor(np.arange(200 * 150.0).reshape(200, 150) % 5, dtype="f64")
ref = pg.ag_matmul(a, b).numpy()
assert lib.pg_gemm_threads_live() == 1
pid = os.fork()
if pid == 0:
    ok = np.array_equal(pg.ag_matmul(a, b).numpy(), ref) and lib.pg_gemm_threads_live() == 1
    os._exit(0 if ok else 3)
_, st = os.waitpid(pid, 0)
assert os.waitstatus_to_exitcode(st) == 0, st
assert np.array_equal(ref, (np.arange(300 * 200.0).reshape(300, 200) % 7) @ (np.arange(200 * 150.0).reshape(200, 150) % 5))
print("ok", lib.pg_gemm_threads_live())
"""
    if not hasattr(os, "fork"):
        pytest.skip("no fork() on this platform: the fork half of this test cannot run")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["ok", "1"]


@pytest.mark.parametrize("dt", ["f64", "f32"])
def test_builtin_gemm_avx2_and_avx512_kernels_give_identical_bits(rng, dt):
    # the AVX-512 kernel sums every element in the AVX2 kernel's order (same k blocks, one FMA per k
    # step from 0, then alpha * acc + C / + beta * C), so the two agree to the bit in every layout,
    # with alpha != 1 and with accumulation (beta = 1 in backward); the portable kernel (no FMA)
    # only agrees to rounding
    from pyggmlr.nn.base import _matmul_t

    prev = pg.ag_blas_name()
    pg.ag_set_blas("builtin")
    try:
        if _select_kernel(2) != 2:
            pytest.skip(
                "this CPU lacks AVX-512F: the AVX-512 kernel cannot run here to compare with AVX2"
            )
        A, B = R(rng, 150, 600), R(rng, 600, 70)
        outs = {}
        for kern in (1, 2, 0):
            assert _select_kernel(kern) == kern
            res = []
            for ta in (0, 1):
                for tb in (0, 1):
                    At, Bt = (A.T.copy() if ta else A), (B.T.copy() if tb else B)
                    a, b = pg.ag_param(At, dtype=dt), pg.ag_param(Bt, dtype=dt)
                    with pg.with_grad_tape():
                        out = _matmul_t(a, b, ta=ta, tb=tb, alpha=-0.75)
                        loss = project(out, 7)
                        if not tb:  # b used twice: its gradient slot accumulates (beta = 1)
                            loss = pg.ag_add(
                                loss, project(pg.ag_matmul(pg.ag_tensor(A[:40], dtype=dt), b), 8)
                            )
                    g = pg.backward(loss)
                    res += [out.numpy(), g[a], g[b]]
            outs[kern] = res
        for x1, x2, x0 in zip(outs[1], outs[2], outs[0]):
            np.testing.assert_array_equal(_bits(x2), _bits(x1))
            np.testing.assert_allclose(
                x0, x1, rtol=1e-4 if dt == "f32" else 1e-12, atol=1e-3 if dt == "f32" else 1e-11
            )
        if dt == "f32":  # the comparison can fail: FMA and separate rounding differ somewhere here
            assert any((_bits(x0) != _bits(x1)).any() for x0, x1 in zip(outs[0], outs[1]))
        # the small and thin shapes (direct path: masked ragged rows, vectors along n for thin m,
        # transposed stores), every layout, on both paths
        for m, k, n, ta, tb, a, b in _gemm_layouts(rng, SMALL_GEMMS, dt):
            for path in (-1, 0):
                _select_path(path)
                got = {}
                for kern in (1, 2):
                    _select_kernel(kern)
                    got[kern] = _bits(_matmul_t(a, b, ta=ta, tb=tb, alpha=-0.75).numpy())
                np.testing.assert_array_equal(
                    got[2], got[1], err_msg=f"{m}x{k}x{n} ta={ta} tb={tb} path={path}"
                )
    finally:
        _select_path(-1)
        _select_kernel(-1)
        if prev != "builtin":
            pg.ag_set_blas("openblas")


@pytest.mark.parametrize("dt", ["f64", "f32"])
def test_builtin_gemm_two_row_tails_give_identical_bits(rng, dt):
    # AVX-512, f64: rows 8 + 2 (the 10-row output layer; also 16 + 2, 16 + 10 and C^T tiles of
    # n = 18) run their last 2 rows on 128-bit kernels (up to 10 columns): the same bits as the
    # AVX2 kernel and the packed path, in the layouts forward and backward use, with alpha != 1,
    # ragged column tiles and two k blocks (f32 runs the same shapes on its usual kernels)
    from pyggmlr.nn.base import _matmul_t

    prev = pg.ag_blas_name()
    pg.ag_set_blas("builtin")
    try:
        if _select_kernel(2) != 2:
            pytest.skip("this CPU lacks AVX-512F: the 2-row AVX-512 kernels cannot run here")
        shapes = [(10, 128, 64), (10, 128, 256), (10, 300, 21), (2, 128, 11), (18, 64, 9)]
        shapes += [(26, 257, 10), (10, 5, 1), (3, 64, 18), (10, 513, 7)]
        for m, k, n, ta, tb, a, b in _gemm_layouts(rng, shapes, dt):
            got = {}
            for kern, path in ((2, -1), (2, 1), (1, 1), (2, 0)):
                _select_kernel(kern)
                _select_path(path)
                got[kern, path] = _bits(_matmul_t(a, b, ta=ta, tb=tb, alpha=-0.75).numpy())
            for key, bits in got.items():
                np.testing.assert_array_equal(
                    bits, got[2, 1], err_msg=f"{m}x{k}x{n} ta={ta} tb={tb} {key}"
                )
    finally:
        _select_kernel(-1)
        _select_path(-1)
        if prev != "builtin":
            pg.ag_set_blas("openblas")
