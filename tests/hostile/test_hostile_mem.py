"""Hostile use, crashes / memory / hangs (issue 19): numpy views outliving their tensor, file
descriptors and FIFOs as model paths, fork() while another thread trains, unbounded requests.
Where a crash or a hang is possible the case runs in a child process with a timeout."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pyggmlr as pg
from pyggmlr.errors import ArgumentError, PyggmlrValueError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _child(code, timeout=60):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    assert r.returncode == 0, (
        f"child failed ({r.returncode}): {r.stdout[-2000:]} {r.stderr[-2000:]}"
    )
    return r.stdout


# ---- numpy views keep their storage ----


def test_view_outlives_free_and_trim():
    out = _child("""
        import gc, numpy as np, pyggmlr as pg
        for how in ("numpy", "asarray", "array_copy_false"):
            t = pg.ag_tensor(np.arange(4096.0).reshape(64, 64), dtype="f64")
            v = (t.numpy(copy=False) if how == "numpy" else np.asarray(t) if how == "asarray"
                 else t.__array__(copy=False))
            if how == "asarray":  # np.asarray copies unless asked for a view; take the view too
                v = t.numpy(copy=False)
            t.free(); del t; gc.collect(); pg.ag_memory_trim()
            # the next tensor of that size must not alias the view's memory
            u = pg.ag_tensor(np.full((64, 64), -7.0), dtype="f64")
            assert v[3, 5] == 3 * 64 + 5, (how, v[3, 5])
            assert float(v.sum()) == sum(range(4096)), how
            v[0, 0] = 123.0          # writing through the view must not change u
            assert u.numpy()[0, 0] == -7.0
            u.free()
        print("ok")
    """)
    assert "ok" in out


def test_view_accounting_exact():
    base = pg.ag_live_objects()
    t = pg.ag_tensor(np.ones((100, 10)), dtype="f64")
    v = t.numpy(copy=False)
    t.free()
    assert pg.ag_live_objects() == base + 1  # the view holds the tensor: still counted
    assert v.sum() == 1000.0
    del v
    import gc

    gc.collect()
    assert pg.ag_live_objects() == base


def test_view_sees_updates_while_alive():
    p = pg.ag_param(np.zeros((3, 2)))
    v = p.numpy(copy=False)
    p.data = np.ones((3, 2))
    assert v.sum() == 6.0


# ---- paths that are not files ----


@pytest.mark.parametrize("bad", [0, 1, 2, True, False, 3.0, None, [b"x"]])
def test_load_model_refuses_non_paths(bad):
    with pytest.raises(ArgumentError, match="ag_load_model\\(\\): path must be a file name"):
        pg.ag_load_model(bad)
    with pytest.raises(ArgumentError, match="ag_model_info\\(\\): path must be a file name"):
        pg.ag_model_info(bad)


def test_save_model_refuses_non_paths():
    m = pg.ag_linear(2, 1)
    for bad in (1, True):
        with pytest.raises(ArgumentError, match="ag_save_model\\(\\): path must be a file name"):
            pg.ag_save_model(m, bad)


def test_fifo_device_directory_do_not_block(tmp_path):
    fifo = tmp_path / "f.fifo"
    os.mkfifo(fifo)
    out = _child(
        f"""
        import pyggmlr as pg
        for p in ({str(fifo)!r}, "/dev/zero", "/dev/null", {str(tmp_path)!r}):
            for fn in (pg.ag_load_model, pg.ag_model_info):
                try:
                    fn(p)
                except (ValueError, OSError) as e:
                    print(type(e).__name__, e)
                else:
                    raise SystemExit("accepted " + p)
        m = pg.ag_linear(2, 1)
        for p in ({str(fifo)!r}, {str(tmp_path)!r}):
            try:
                pg.ag_save_model(m, p)
            except (ValueError, OSError) as e:
                print(type(e).__name__, e)
            else:
                raise SystemExit("saved over " + p)
    """,
        timeout=30,
    )
    assert out.count("not a regular file") >= 8
    assert os.path.exists(fifo)  # the FIFO was not replaced


def test_core_open_refuses_fifo_itself(tmp_path):
    # the C reader's own check (O_NONBLOCK + fstat), under the front end's
    from pyggmlr._core import ffi, lib

    fifo = tmp_path / "g.fifo"
    os.mkfifo(fifo)
    h = ffi.new("pg_st_file **")
    assert lib.pg_file_kind(str(fifo).encode()) == lib.PG_FILE_KIND_OTHER
    assert lib.pg_file_kind(b"/nonexistent/x") == lib.PG_FILE_KIND_MISSING
    assert lib.pg_file_kind(str(tmp_path).encode()) == lib.PG_FILE_KIND_DIR
    assert lib.pg_st_open(str(fifo).encode(), h) == lib.PG_STATUS_ERR_VALUE
    assert "not a regular file" in ffi.string(lib.pg_last_error()).decode()
    lib.pg_clear_error()


# ---- fork while another thread trains ----


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
@pytest.mark.skipif(
    bool(os.environ.get("PYGGMLR_SANITIZED")),
    reason="ASan's own allocator has no fork handler in GCC 12's libasan (LLVM added one in 18, "
    "llvm-project#75290): a child forked while another thread allocates can hang inside ASan; "
    "this test runs in the un-sanitized suite, and the C driver's fork case under ASan",
)
def test_fork_with_busy_thread_does_not_deadlock():
    out = _child(
        """
        import os, sys, threading, time, warnings, numpy as np, pyggmlr as pg, pyggmlr.random
        warnings.simplefilter("ignore")  # fork() with threads: DeprecationWarning on 3.12
        pg.ag_set_threads(2)
        stop = False
        def busy():
            m = pg.ag_linear(64, 64, activation="relu")
            opt = pg.optimizer_adam(m.parameters(), lr=1e-3)
            x = pg.ag_tensor(np.random.default_rng(0).standard_normal((64, 64)))
            while not stop:
                with pg.with_grad_tape():
                    loss = pg.ag_mse_loss(m(x), x)
                grads = pg.backward(loss)
                opt.step(grads)
                pg.ag_relu(pg.ag_matmul(x, x))
                pg.random.runif(100)
        ths = [threading.Thread(target=busy) for _ in range(2)]
        for t in ths: t.start()
        t0, n = time.time(), 0
        while time.time() - t0 < 6 and n < 150:
            pid = os.fork()
            if pid == 0:
                try:
                    y = pg.ag_relu(pg.ag_matmul(pg.ag_tensor(np.ones((200, 200))), pg.ag_tensor(np.ones((200, 200)))))
                    with pg.with_grad_tape():
                        w = pg.ag_param(np.ones((3, 1)))
                        l = pg.ag_sum(pg.ag_mul(w, w))
                    pg.backward(l); pg.random.runif(3); pg.ag_set_threads(1); pg.ag_memory_trim()
                    os._exit(0 if y.numpy()[0, 0] == 200.0 else 3)
                except BaseException as e:
                    sys.stderr.write(repr(e)); sys.stderr.flush()
                    os._exit(4)
            deadline = time.time() + 5
            while True:
                r, st = os.waitpid(pid, os.WNOHANG)
                if r: break
                if time.time() > deadline:
                    os.kill(pid, 9); os.waitpid(pid, 0)
                    stop = True
                    print("DEADLOCK after", n); sys.exit(1)
                time.sleep(0.002)
            assert os.WEXITSTATUS(st) == 0, st
            n += 1
        stop = True
        for t in ths: t.join()
        print("forks", n)
    """,
        timeout=60,
    )
    assert "forks" in out and int(out.split()[-1]) >= 10


# ---- unbounded requests ----


def test_set_threads_bound():
    with pytest.raises(
        PyggmlrValueError,
        match=r"^ag_set_threads\(\): n must be an integer in \[1, 1024\], got 1000000$",
    ):
        pg.ag_set_threads(10**6)
    with pytest.raises(PyggmlrValueError, match=r"in \[1, 1024\], got 1000000.0$"):
        pg.ag_set_threads(1e6)
    prev = pg.ag_set_threads(2.0)  # the one integer rule: 2.0 is 2
    assert pg.ag_set_threads(prev) == 2
    with pytest.raises(pg.ArgumentError, match=r"^ag_set_threads\(\): n must be an integer"):
        pg.ag_set_threads(True)
    prev = pg.ag_set_threads(1)
    assert pg.ag_get_threads() == 1
    pg.ag_set_threads(prev)


def test_dp_train_replica_bound():
    with pytest.raises(
        PyggmlrValueError, match=r"^dp_train: n_replicas must be an integer in \[1, 1024\]"
    ):
        pg.dp_train(lambda: pg.ag_linear(1, 1), [np.ones((1, 1))], n_replicas=10**9)
    with pytest.raises(PyggmlrValueError, match="n_replicas"):
        pg.dp_train(lambda: pg.ag_linear(1, 1), [np.ones((1, 1))], n_replicas=1e9)


def test_huge_sizes_named():
    with pytest.raises(MemoryError, match=r"ag_linear.*1000000x1000000"):
        pg.ag_linear(10**6, 10**6)
    from pyggmlr._core import lib

    assert lib.pg_physical_memory() > 0
