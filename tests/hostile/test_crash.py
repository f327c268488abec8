"""Crash-prone cases, each in a fresh subprocess: a segfault or abort is a failed test here,
not a dead test runner. The raw C entry points (pyggmlr._core.lib) get NULL and foreign
pointers where the API promises a check, huge and negative sizes, and 10^9-element requests
under an address-space limit (so they must fail allocation cleanly, with PG_STATUS_ERR_NOMEM, instead of
being granted by overcommit). Each child prints one line per case; the parent checks the
status, that the child ran to its end, and the expected error text."""

import json
import subprocess
import sys
import textwrap

import pytest

PRELUDE = textwrap.dedent("""
    import json, resource, sys
    import numpy as np
    import pyggmlr as pg
    from pyggmlr._core import ffi, lib
    NULL = ffi.NULL
    out = []
    def last():
        s, m = lib.pg_last_status(), ffi.string(lib.pg_last_error()).decode()
        lib.pg_clear_error()
        return s, m
    def case(name, failed):
        s, m = last()
        out.append({"name": name, "failed": bool(failed), "status": s, "msg": m})
    def limit_memory(gib):
        import os
        if os.environ.get("PYGGMLR_SANITIZED"):
            return  # ASan reserves terabytes of address space; sanitize.sh caps allocations instead
        resource.setrlimit(resource.RLIMIT_AS, (gib << 30, gib << 30))
""")
EPILOGUE = "\nprint(json.dumps(out))\nprint('END-OF-CHILD')\n"


def run_child(body, timeout=120):
    p = subprocess.run(
        [sys.executable, "-c", PRELUDE + textwrap.dedent(body) + EPILOGUE],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert p.returncode == 0, (
        f"child exited with {p.returncode}\nstdout:{p.stdout[-2000:]}\nstderr:{p.stderr[-4000:]}"
    )
    lines = p.stdout.strip().splitlines()
    assert lines and lines[-1] == "END-OF-CHILD", p.stdout + p.stderr
    return {c["name"]: c for c in json.loads(lines[-2])}


def expect(cases, name, status, text):
    c = cases[name]
    assert c["failed"], f"{name}: did not fail"
    assert c["status"] == status, f"{name}: status {c['status']} ({c['msg']})"
    assert text in c["msg"], f"{name}: {c['msg']!r} lacks {text!r}"


ARG, STATE, VALUE, NOMEM, SHAPE, DTYPE = 6, 5, 3, 4, 1, 2


def test_null_and_foreign_pointers_into_the_c_api():
    cases = run_child("""
        t = lib.pg_tensor_full(0, 2, 2, 1.0)
        junk = ffi.new("char[512]")              # zeroed memory: no tensor magic
        foreign = ffi.cast("pg_tensor *", junk)
        for nm, bad in (("null", NULL), ("foreign", foreign)):
            case(f"unary {nm}", lib.pg_unary(0, bad) == NULL)
            case(f"matmul {nm}", lib.pg_matmul(t, bad) == NULL)
            case(f"add {nm}", lib.pg_add(bad, t) == NULL)
            case(f"sum {nm}", lib.pg_sum(bad, 0) == NULL)
            case(f"reshape {nm}", lib.pg_reshape(bad, 1, -1) == NULL)
            case(f"mse {nm}", lib.pg_mse_loss(t, bad) == NULL)
            case(f"backward {nm}", lib.pg_backward(bad) == NULL)
            case(f"layer_norm {nm}", lib.pg_layer_norm(bad, NULL, NULL, 1e-5) == NULL)
            case(f"concat {nm}", lib.pg_concat_rows(t, bad) == NULL)
            case(f"clone {nm}", lib.pg_tensor_clone(bad) == NULL)
            case(f"read {nm}", lib.pg_tensor_read(bad, junk, 1) != 0)
            case(f"set_grad {nm}", lib.pg_tensor_set_grad(bad, t) != 0)
            arr = ffi.new("pg_tensor *[]", [t, bad])
            case(f"optim {nm}", lib.pg_optim_new(1, arr, 2, NULL) == NULL)
            case(f"clip {nm}", lib.pg_clip_grad_norm(arr, 2, NULL, 1.0, NULL) != 0)
            lib.pg_tensor_retain(bad)   # ignored
            lib.pg_tensor_release(bad)  # ignored
        case("read null dst", lib.pg_tensor_read(t, NULL, 1) != 0)
        case("write null src", lib.pg_tensor_write(t, NULL, 1, 2, 2, 1, 2) != 0)
        case("ids null", lib.pg_softmax_ce_loss_idx(t, NULL, 2) == NULL)
        case("embedding null", lib.pg_embedding(t, NULL, 2) == NULL)
        case("optim step null", lib.pg_optim_step(NULL, NULL) < 0)
        case("optim set null", lib.pg_optim_set(NULL, b"lr", 1.0) != 0)
        case("zero_grad null", lib.pg_optim_zero_grad(NULL) != 0)
        case("stats null", lib.pg_memory_stats(NULL) != 0)
        case("tape memory null", lib.pg_tape_memory(NULL, NULL, NULL, NULL, 0) < 0)
        case("tape end", lib.pg_tape_end() != 0)
        case("unstash", lib.pg_tape_unstash() != 0)
        case("gradmap null", lib.pg_gradmap_size(NULL) == 0 and lib.pg_gradmap_get(NULL, t) == NULL)
        lib.pg_gradmap_free(NULL); lib.pg_optim_free(NULL)
        lib.pg_tensor_release(t)
    """)
    for nm in ("null", "foreign"):
        text = "is NULL" if nm == "null" else "not a live tensor"
        for op in (
            "unary",
            "matmul",
            "add",
            "sum",
            "reshape",
            "mse",
            "backward",
            "layer_norm",
            "concat",
            "clone",
            "read",
            "set_grad",
            "optim",
            "clip",
        ):
            expect(cases, f"{op} {nm}", ARG, "" if op in ("clip",) and nm == "null" else "")
        assert text in cases[f"unary {nm}"]["msg"] and "ag_relu" in cases[f"unary {nm}"]["msg"]
        assert (
            "ag_matmul" in cases[f"matmul {nm}"]["msg"]
            and "backward" in cases[f"backward {nm}"]["msg"]
        )
    expect(cases, "read null dst", ARG, "NULL destination")
    expect(cases, "write null src", ARG, "NULL source")
    expect(cases, "ids null", ARG, "NULL class ids")
    expect(cases, "embedding null", ARG, "ag_embedding")
    expect(cases, "optim step null", ARG, "NULL optimizer")
    expect(cases, "optim set null", ARG, "NULL")
    expect(cases, "zero_grad null", ARG, "NULL optimizer")
    expect(cases, "stats null", ARG, "NULL output")
    expect(cases, "tape memory null", ARG, "NULL")
    expect(cases, "tape end", STATE, "without a matching begin")
    expect(cases, "unstash", STATE, "no tape")
    assert cases["gradmap null"]["failed"]


def test_huge_and_negative_sizes_fail_cleanly():
    cases = run_child("""
        import numpy as np
        limit_memory(3)  # GiB of address space: a 4 GB request must be refused, not overcommitted
        case("1e9 f32", lib.pg_tensor_full(0, 10**9, 1, 1.0) == NULL)
        case("1e9 f64 zeros", lib.pg_tensor_new(1, 10**5, 10**4, NULL, 1, 1, 1) == NULL)
        case("1e10", lib.pg_tensor_new(0, 10**5, 10**5, NULL, 0, 1, 1) == NULL)
        case("overflow", lib.pg_tensor_new(0, 2**62, 2**62, NULL, 0, 1, 1) == NULL)
        case("int64 max", lib.pg_tensor_full(1, 2**63 - 1, 2**63 - 1, 0.0) == NULL)
        case("negative rows", lib.pg_tensor_new(0, -1, 5, NULL, 0, 1, 1) == NULL)
        case("negative cols", lib.pg_tensor_full(0, 5, -(2**63), 0.0) == NULL)
        case("bad dtype", lib.pg_tensor_new(7, 2, 2, NULL, 0, 1, 1) == NULL)
        t = lib.pg_tensor_full(0, 2, 3, 1.0)
        case("reshape wrap", lib.pg_reshape(t, 2**62 + 3, 4) == NULL)
        case("reshape -1 0", lib.pg_reshape(t, -1, 0) == NULL)
        case("slice huge", lib.pg_slice_rows(t, 1, 2**63 - 1) == NULL)
        case("embedding neg n", lib.pg_embedding(t, ffi.new("double[1]"), -5) == NULL)
        ids = ffi.new("int64_t[3]", [0, 2**62, -1])
        case("ids out of range", lib.pg_softmax_ce_loss_idx(t, ids, 3) == NULL)
        # the Python API on the same requests
        for name, fn in (("py full", lambda: pg.ag_tensor(np.broadcast_to(np.float32(1), (10**9, 1)))),
                         ("py reshape", lambda: pg.ag_reshape(pg.ag_tensor(np.ones((2, 3))), 10**30, 1)),
                         ("py linear", lambda: pg.ag_tensor(np.zeros((0, 10**9))))):
            try:
                r = fn()
                out.append({"name": name, "failed": False, "status": 0, "msg": str(r.shape)})
            except pg.PyggmlrError as e:
                out.append({"name": name, "failed": True, "status": 0, "msg": f"{type(e).__name__}: {e}"})
        # still usable after all that
        ok = pg.ag_sum(pg.ag_tensor(np.ones((3, 3)))).item() == 9.0
        out.append({"name": "still works", "failed": not ok, "status": 0, "msg": ""})
        lib.pg_tensor_release(t)
    """)
    expect(cases, "1e9 f32", NOMEM, "out of memory allocating a [1000000000x1] f32 tensor")
    expect(cases, "1e9 f64 zeros", NOMEM, "out of memory")
    expect(cases, "1e10", NOMEM, "out of memory")
    expect(cases, "overflow", VALUE, "too large")
    expect(cases, "int64 max", VALUE, "too large")
    expect(cases, "negative rows", VALUE, "dims must be >= 0")
    expect(cases, "negative cols", VALUE, "dims must be >= 0")
    expect(cases, "bad dtype", DTYPE, "dtype")
    expect(cases, "reshape wrap", SHAPE, "ag_reshape")
    expect(cases, "reshape -1 0", SHAPE, "ag_reshape")
    expect(cases, "slice huge", VALUE, "ag_slice_rows")
    expect(cases, "embedding neg n", VALUE, "ag_embedding")
    expect(cases, "ids out of range", VALUE, "out of range")
    assert cases["py full"]["failed"] and "PyggmlrMemoryError" in cases["py full"]["msg"]
    assert cases["py reshape"]["failed"] and "ag_reshape" in cases["py reshape"]["msg"]
    assert not cases["py linear"]["failed"] and cases["py linear"]["msg"] == "(0, 1000000000)"
    assert not cases["still works"]["failed"]


def test_dead_handles_and_teardown_orders():
    """Objects dropped in every order (optimizer before params, map after tape clear, tensors
    kept only by the tape, a thread that exits with nodes on its tape) and the interpreter
    exiting with live objects: no crash, and the core's counters end at zero."""
    cases = run_child("""
        import gc, threading
        p = pg.ag_param(np.ones((3, 3)))
        opt = pg.optimizer_adam([p])
        with pg.with_grad_tape():
            h = pg.ag_tanh(p)
            loss = pg.ag_sum(h)
        g = pg.backward(loss)
        del h, loss, p          # only the tape, the map and the optimizer hold them now
        gc.collect()
        pg.ag_tape_clear()
        opt.step(g)
        del g
        opt.zero_grad()
        del opt
        gc.collect()
        def work():
            q = pg.ag_param(np.ones((2, 2)))
            pg.with_grad_tape().__enter__()   # a scope never closed, nodes left behind
            pg.ag_relu(pg.ag_mul(q, q))
        th = threading.Thread(target=work); th.start(); th.join()
        gc.collect()
        import time
        for _ in range(200):  # join() returns before the OS thread has run its exit handlers
            if lib.pg_live_objects() == 0:
                break
            time.sleep(0.01)
        live = lib.pg_live_objects()
        out.append({"name": "live", "failed": live != 0, "status": 0, "msg": str(live)})
        # leave objects alive at exit on purpose: the interpreter's teardown must not crash
        keep = [pg.ag_param(np.ones((2, 2))) for _ in range(3)]
        keep_opt = pg.optimizer_sgd(keep)
        with pg.with_grad_tape():
            keep_loss = pg.ag_sum(pg.ag_mul(keep[0], keep[1]))
        keep_map = pg.backward(keep_loss)
    """)
    assert not cases["live"]["failed"], f"live objects after teardown: {cases['live']['msg']}"


@pytest.mark.parametrize("what", ["pickle", "copy", "deepcopy"])
def test_copying_handles_is_safe(what):
    """Tensors, optimizers and gradient maps hold C pointers: copying them must copy the values
    or refuse with a typed error; never share a pointer that is then released twice."""
    cases = run_child(f"""
        import copy, pickle, gc
        t = pg.ag_param(np.arange(6.0).reshape(2, 3))
        opt = pg.optimizer_adam([t])
        with pg.with_grad_tape():
            loss = pg.ag_sum(t)
        gm = pg.backward(loss)
        for name, obj in (("opt", opt), ("map", gm)):
            try:
                if "{what}" == "pickle":
                    pickle.dumps(obj)
                else:
                    getattr(copy, "{what}")(obj)
                out.append({{"name": name, "failed": False, "status": 0, "msg": "copied"}})
            except pg.StateError as e:
                out.append({{"name": name, "failed": True, "status": 0, "msg": str(e)}})
        del opt, gm, loss, obj
        try:
            if "{what}" == "pickle":
                c = pickle.loads(pickle.dumps(t))
            else:
                c = getattr(copy, "{what}")(t)
            vals = c.numpy().tolist()
            out.append({{"name": "copy", "failed": False, "status": 0, "msg": json.dumps(vals)}})
            del c
        except Exception as e:
            out.append({{"name": "copy", "failed": True, "status": 0, "msg": type(e).__name__ + ": " + str(e)}})
        t.numpy()
        del t
        gc.collect()
        pg.ag_tape_clear()
        out.append({{"name": "live", "failed": lib.pg_live_objects() != 0, "status": 0, "msg": str(lib.pg_live_objects())}})
    """)
    c = cases["copy"]
    assert not c["failed"], c["msg"]
    assert json.loads(c["msg"]) == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert cases["opt"]["failed"] and "cannot be copied" in cases["opt"]["msg"]
    assert cases["map"]["failed"] and "cannot be copied" in cases["map"]["msg"]
    assert not cases["live"]["failed"], cases["live"]["msg"]
