"""Issue 19, "nothing lost" and hostile files: a load that fails leaves the user's model and
optimizer bit-identical (every tensor snapshotted before and compared after); a save that the
loader would refuse is refused before the old file is touched; whatever can be saved loads
back identically (a property test over random models); saving through a symlink writes its
target with the old file's mode; huge or non-regular files fail on their header, naming the
limit; checkpoint paths are checked when the callback is made. R: test-hostile-files.R."""

import json
import os
import re
import stat
import struct
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pyggmlr as pg
from pyggmlr.errors import PyggmlrValueError


def _model(seed=1, dtype="f32"):
    prev = pg.ag_dtype(dtype)
    try:
        pg.ggml_set_seed(seed)
        return pg.ag_sequential(pg.ag_linear(3, 4, "relu"), pg.ag_batch_norm(4), pg.ag_linear(4, 2))
    finally:
        pg.ag_dtype(prev)


def _trained(seed=1):
    m = _model(seed)
    opt = pg.optimizer_adam(m.parameters(), lr=0.01)
    x = pg.ag_tensor(np.random.default_rng(seed).random((3, 5)))
    with pg.with_grad_tape():
        loss = pg.ag_mse_loss(m(x), pg.ag_tensor(np.zeros((2, 5))))
    opt.step(pg.backward(loss))
    return m, opt


def _snap(m, opt=None):
    """Every tensor the user owns: weights, buffers, optimizer slots and counters (copies)."""
    sd = pg.ag_state_dict(m)
    out = {("p", k): np.array(v, copy=True) for k, v in sd["parameters"].items()}
    out.update({("b", k): np.array(v, copy=True) for k, v in sd["buffers"].items()})
    if opt is not None:
        with warnings.catch_warnings():  # a state taken mid-accumulation warns
            warnings.simplefilter("ignore")
            s = opt.state()
        out[("t",)] = (s["t"], s["accum_count"], opt.accumulate_steps)
        for nm, lst in s["slots"].items():
            for i, a in enumerate(lst):
                out[("s", nm, i)] = None if a is None else np.array(a, copy=True)
    return out


def _same(a, b):
    assert a.keys() == b.keys()
    for k in a:
        x, y = a[k], b[k]
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and x.tobytes() == y.tobytes(), k
        else:
            assert x == y, k


def _edit(path, fn):
    """Rewrite a model file: fn(header dict, body bytearray) edits them in place."""
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    h, body = json.loads(data[8 : 8 + n]), bytearray(data[8 + n :])
    fn(h, body)
    hb = json.dumps(h, separators=(",", ":")).encode()
    hb += b" " * (-len(hb) % 8)
    open(path, "wb").write(struct.pack("<Q", len(hb)) + hb + bytes(body))


def _poke(name, value):
    """An edit writing value into every element of tensor name (F32)."""

    def fn(h, body):
        b, e = h[name]["data_offsets"]
        body[b:e] = np.full((e - b) // 4, value, dtype="<f4").tobytes()

    return fn


# ---- a failing load changes nothing ----


@pytest.mark.parametrize("edit", ["neg_v", "nan_t", "shape"])
def test_optimizer_load_state_bad_field_changes_nothing(edit):
    m, opt = _trained()
    st = opt.state()
    m2, opt2 = _trained(2)
    before = _snap(m2, opt2)
    bad = dict(st)
    if edit == "neg_v":
        bad["slots"] = {"m": st["slots"]["m"], "v": [a - 1.0 for a in st["slots"]["v"]]}
    elif edit == "nan_t":
        bad["t"] = float("nan")
    else:
        bad["slots"] = {"m": st["slots"]["m"][:-1] + [np.zeros((9, 9))], "v": st["slots"]["v"]}
    with pytest.raises(
        PyggmlrValueError, match=r"second moments must be >= 0|not counts|has shape"
    ):
        opt2.load_state(bad)
    _same(before, _snap(m2, opt2))


def test_load_state_refuses_values_beyond_f32():
    m, opt = _trained()
    st = opt.state()
    st["slots"] = {
        "m": [np.full(np.shape(a), 1e300) for a in st["slots"]["m"]],
        "v": st["slots"]["v"],
    }
    before = _snap(m, opt)
    with pytest.raises(PyggmlrValueError, match="outside the f32 range"):
        opt.load_state(st)
    _same(before, _snap(m, opt))


@pytest.mark.parametrize("what", ["neg_v", "f64_overflow", "bad_buffer_shape"])
def test_load_model_with_optimizer_bad_value_changes_nothing(tmp_path, what):
    m, opt = _trained()
    p = tmp_path / "m.st"
    pg.ag_save_model(m, p, optimizer=opt, epoch=3)
    h = json.loads(open(p, "rb").read()[8 : 8 + struct.unpack("<Q", open(p, "rb").read(8))[0]])
    vname = next(k for k in h if k.startswith("optimizer.v."))
    if what == "neg_v":
        _edit(p, _poke(vname, -2.0))
    elif what == "f64_overflow":  # the last parameter as F64 holding 1e300: Inf in an f32 model
        last = [k for k in h if not k.startswith(("optimizer", "__"))][-1]

        def fn(hh, body):
            b, e = hh[last]["data_offsets"]
            n = (e - b) // 4
            body[b:e] = np.full(n, 1e300, dtype="<f8").tobytes()
            hh[last]["dtype"] = "F64"
            grow = 4 * n
            for k, v in hh.items():
                if k != "__metadata__" and v["data_offsets"][0] > b:
                    v["data_offsets"] = [v["data_offsets"][0] + grow, v["data_offsets"][1] + grow]
            hh[last]["data_offsets"] = [b, e + grow]

        _edit(p, fn)
    else:

        def fn(hh, body):
            k = next(k for k in hh if "running_var" in k)
            hh[k]["shape"] = [2, 2]

        _edit(p, fn)
    m2, opt2 = _trained(2)
    before = _snap(m2, opt2)
    with pytest.raises(
        PyggmlrValueError, match=r"second moments|outside the f32 range|shape mismatch"
    ):
        pg.ag_load_model(p, model=m2, optimizer=opt2)
    _same(before, _snap(m2, opt2))


@pytest.mark.parametrize("bad", [np.nan, 1e300, "shape"])
def test_load_state_dict_bad_last_entry_changes_nothing(bad):
    m, _ = _trained()
    sd = pg.ag_state_dict(m)
    last = list(sd["parameters"])[-1]
    shape = np.shape(sd["parameters"][last])
    sd["parameters"][last] = np.zeros((7, 7)) if bad == "shape" else np.full(shape, bad)
    m2, _ = _trained(2)
    before = _snap(m2)
    with pytest.raises((PyggmlrValueError, pg.ShapeError)):
        pg.ag_load_state_dict(m2, sd)
    _same(before, _snap(m2))


def _fit(m, opt, **kw):
    rng = np.random.default_rng(0)
    return pg.ag_fit(
        m,
        rng.random((3, 8)),
        rng.random((2, 8)),
        nepoch=kw.pop("epochs", 1),
        optimizer=opt,
        loss="mse",
        silent=True,
        **kw,
    )


@pytest.mark.parametrize("tamper", ["batch_size", "rng", "history", "neg_v", "callback"])
def test_refused_resume_changes_nothing(tmp_path, tamper):
    p = str(tmp_path / "ck.st")
    m, opt = _trained()
    _fit(
        m,
        opt,
        batch_size=4,
        callbacks=[pg.ag_model_checkpoint(p), pg.ag_early_stopping(patience=5)],
    )
    if tamper in ("rng", "history", "callback"):

        def fn(h, body):
            ex = json.loads(h["__metadata__"]["extra"])
            if tamper == "rng":
                ex["fit"]["rng_state"] = ["x"]
            elif tamper == "callback":
                ex["fit"]["callbacks"][1]["wait"] = "soon"
            else:
                ex["fit"]["history"]["loss"] = ["nope"]
            h["__metadata__"]["extra"] = json.dumps(ex)

        _edit(p, fn)
    elif tamper == "neg_v":
        h = json.loads(open(p, "rb").read()[8 : 8 + struct.unpack("<Q", open(p, "rb").read(8))[0]])
        _edit(p, _poke(next(k for k in h if k.startswith("optimizer.v.")), -1.0))
    m2, opt2 = _trained(2)
    opt2.accumulate_steps, opt2.accum_count = 3, 1  # ag_fit sets its own: put back on a refusal
    before = _snap(m2, opt2)
    with pytest.raises(PyggmlrValueError):
        _fit(
            m2,
            opt2,
            batch_size=2 if tamper == "batch_size" else 4,
            resume_from=p,
            epochs=2,
            callbacks=[pg.ag_model_checkpoint(p), pg.ag_early_stopping(patience=5)],
        )
    _same(before, _snap(m2, opt2))


# ---- a save the loader would refuse is refused first ----


def test_save_refuses_epoch_out_of_range_old_file_untouched(tmp_path):
    m, opt = _trained()
    p = tmp_path / "m.st"
    pg.ag_save_model(m, p, optimizer=opt, epoch=3)
    old = open(p, "rb").read()
    for ep, cls in (
        (10**12, PyggmlrValueError),
        (-1, PyggmlrValueError),
        (2.5, PyggmlrValueError),
        (True, pg.ArgumentError),
        ("3", pg.ArgumentError),
    ):
        with pytest.raises(
            cls, match=r"^ag_save_model\(\): epoch must be an integer in \[0, 1e12\)"
        ):
            pg.ag_save_model(m, p, epoch=ep)
    assert open(p, "rb").read() == old
    pg.ag_save_model(m, p, epoch=10**12 - 1)
    assert pg.ag_model_info(p)["epoch"] == 10**12 - 1


def test_save_epoch_text_is_the_cores_nothing_written(tmp_path):
    # one rule and text for both languages (pg_mf_epoch_arg; R: test-io-limits.R), whole texts
    m, p = pg.ag_linear(2, 3), tmp_path / "m.st"
    rule = "ag_save_model(): epoch must be an integer in [0, 1e12) (what ag_load_model reads back)"
    for ep, cls, shown in (
        (-1, PyggmlrValueError, "-1"),
        (1.5, PyggmlrValueError, "1.5"),
        ("a", pg.ArgumentError, "str 'a'"),
        (float("nan"), PyggmlrValueError, "nan"),
        (10**40, PyggmlrValueError, str(10**40)),
        (1e300, PyggmlrValueError, "1e+300"),
        (np.int64(-3), PyggmlrValueError, "-3"),  # as Python users write it (issue 29)
    ):
        with pytest.raises(cls) as e:
            pg.ag_save_model(m, p, epoch=ep)
        assert str(e.value) == f"{rule}, got {shown}"
        assert not p.exists()
    pg.ag_save_model(m, p, epoch=None)  # None: no epoch
    assert pg.ag_model_info(p)["epoch"] is None
    pg.ag_save_model(m, p, epoch=np.float64(4.0))
    assert pg.ag_model_info(p)["epoch"] == 4


def test_save_refuses_unloadable_architecture_old_file_untouched(tmp_path):
    m, _ = _trained()
    p = tmp_path / "m.st"
    pg.ag_save_model(m, p)
    old = open(p, "rb").read()
    m.layers[0].activation = "bogus"
    with pytest.raises(PyggmlrValueError, match="would not load back.*bogus.*nothing was written"):
        pg.ag_save_model(m, p)
    assert open(p, "rb").read() == old
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]


def test_save_draws_nothing_from_the_random_stream(tmp_path):
    m, _ = _trained()
    pg.ggml_set_seed(7)
    a = pg.random.runif(3)
    pg.ggml_set_seed(7)
    pg.ag_save_model(
        m, tmp_path / "m.st"
    )  # the rebuild check initialises layers, then puts the stream back
    assert np.array_equal(pg.random.runif(3), a)


_LAYERS = st.sampled_from(["linear", "batch_norm", "layer_norm", "dropout"])


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    kinds=st.lists(_LAYERS, min_size=1, max_size=4),
    width=st.integers(1, 6),
    seed=st.integers(0, 2**31 - 1),
    act=st.sampled_from([None, "relu", "tanh", "sigmoid", "gelu", "softmax"]),
    f64=st.booleans(),
)
def test_property_whatever_saves_loads_identically(tmp_path, kinds, width, seed, act, f64):
    prev = pg.ag_dtype("f64" if f64 else "f32")
    try:
        pg.ggml_set_seed(seed % 100000)
        layers, w = [], width
        for k in kinds:
            if k == "linear":
                layers.append(pg.ag_linear(w, w + 1, act))
                w += 1
            elif k == "batch_norm":
                layers.append(pg.ag_batch_norm(w))
            elif k == "layer_norm":
                layers.append(pg.ag_layer_norm(w))
            else:
                layers.append(pg.ag_dropout(0.25))
        m = pg.ag_sequential(*layers)
    finally:
        pg.ag_dtype(prev)
    p = tmp_path / "prop.st"
    pg.ag_save_model(m, p, epoch=seed % 10**12)
    back = pg.ag_load_model(p)
    _same(_snap(m), _snap(back))
    assert pg.ag_to_config(back) == pg.ag_to_config(m)


# ---- symlinks and modes ----


def test_save_through_symlink_writes_the_target_and_keeps_its_mode(tmp_path):
    m, _ = _trained()
    target, link = tmp_path / "real.st", tmp_path / "link.st"
    pg.ag_save_model(m, target)
    os.chmod(target, 0o640)
    os.symlink(target.name, link)  # relative, as ln -s does
    m2, _ = _trained(2)
    pg.ag_save_model(m2, link)
    assert os.path.islink(link) and os.readlink(link) == target.name
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o640
    _same(_snap(m2), _snap(pg.ag_load_model(target)))
    dangling = tmp_path / "dangling.st"
    os.symlink("made.st", dangling)
    pg.ag_save_model(m2, dangling)
    assert os.path.islink(dangling) and (tmp_path / "made.st").is_file()


def test_new_file_mode_follows_the_umask(tmp_path):
    m, _ = _trained()
    old = os.umask(0o027)
    try:
        pg.ag_save_model(m, tmp_path / "new.st")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "new.st").st_mode) == 0o640
    os.chmod(tmp_path / "new.st", 0o600)
    pg.ag_save_model(m, tmp_path / "new.st")
    assert stat.S_IMODE(os.stat(tmp_path / "new.st").st_mode) == 0o600


# ---- huge and odd files fail on their header ----


def test_device_and_huge_files_fail_on_the_header(tmp_path):
    """In a child under a 3 GiB address-space limit: a reader that read these whole would fail
    there (or be killed), not take the test runner's memory."""
    sparse, claim = tmp_path / "sparse.st", tmp_path / "claim.st"
    with open(sparse, "wb") as f:
        f.truncate(8 << 30)  # 8 GiB of holes: nothing may read it whole
    claim.write_bytes(struct.pack("<Q", 10**12) + b"{}")
    code = textwrap.dedent(f"""
        import os, resource, sys
        import pyggmlr as pg
        if not os.environ.get("PYGGMLR_SANITIZED"):
            resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
        for fn, p in [(pg.ag_load_model, "/dev/zero"), (pg.ag_model_info, "/dev/zero"),
                      (pg.ag_load_model, {str(sparse)!r}), (pg.ag_load_model, {str(claim)!r})]:
            try:
                fn(p)
                print("LOADED", p)
            except pg.PyggmlrValueError as e:
                print(type(e).__name__, e)
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 4, r.stdout
    assert re.match(
        r"^PyggmlrValueError ag_load_model\(\): /dev/zero: .*not a regular file", lines[0]
    )
    assert re.match(
        r"^PyggmlrValueError ag_model_info\(\): /dev/zero: .*not a regular file", lines[1]
    )
    assert "sparse.st: not a safetensors model file: header length 0 is too small" in lines[2]
    assert "header length 1000000000000 exceeds the 104857600-byte limit" in lines[3]


@pytest.mark.parametrize("size", ["3e7", "30000000.0", "30000000"])
def test_small_file_config_asking_for_huge_layers_fails_before_allocating(tmp_path, size):
    m = pg.ag_sequential(pg.ag_linear(2, 1))
    p = tmp_path / "m.st"
    pg.ag_save_model(m, p)

    def fn(h, body):
        cfg = json.loads(h["__metadata__"]["config"])
        cfg["layers"][0]["in_features"] = "@@"
        h["__metadata__"]["config"] = json.dumps(cfg).replace('"@@"', size)

    _edit(p, fn)
    assert os.path.getsize(p) < 1024
    with pytest.raises(PyggmlrValueError, match="implausible layer size"):
        pg.ag_load_model(p)


# ---- checkpoint paths are checked when the callback is made ----


def test_checkpoint_path_names_epochs_by_the_core_rule(tmp_path):
    """{epoch:03d} zero-pads, {{ and }} are one brace each (pg_checkpoint_path, as R's)."""
    cb = pg.ag_model_checkpoint(str(tmp_path / "a{{b}}_{epoch:03d}.st"))
    x = np.arange(1, 9, dtype=float).reshape(2, 4, order="F") / 8
    pg.ag_fit(
        pg.ag_linear(2, 2), x, [0, 1, 0, 1], nepoch=2, batch_size=2, silent=True, callbacks=[cb]
    )
    assert [os.path.basename(p) for p in cb.saved] == ["a{b}_001.st", "a{b}_002.st"]
    assert all(os.path.exists(p) for p in cb.saved)


def test_checkpoint_path_checked_at_construction(tmp_path):
    with pytest.raises(PyggmlrValueError, match=r"placeholder other than \{epoch\}"):
        pg.ag_model_checkpoint(str(tmp_path / "runs" / "{name}" / "m.st"))
    with pytest.raises(PyggmlrValueError, match="does not exist"):
        pg.ag_model_checkpoint(str(tmp_path / "missing" / "m_{epoch}.st"))
    ro = tmp_path / "ro"
    ro.mkdir()
    os.chmod(ro, 0o500)
    try:
        if not os.access(ro, os.W_OK):  # root writes anywhere
            with pytest.raises(PyggmlrValueError, match="not writable"):
                pg.ag_model_checkpoint(str(ro / "m.st"))
    finally:
        os.chmod(ro, 0o700)
    assert pg.ag_model_checkpoint(str(tmp_path / "m_{epoch}.st")).path.endswith("m_{epoch}.st")


def test_refused_capture_set_keeps_the_limit():
    W = pg.ag_param(np.full((2, 3), 0.5))
    opt = pg.optimizer_adam({"W": W}, lr=0.1)
    cs = pg.ag_capture_step(
        lambda x, y: pg.ag_mse_loss(pg.ag_matmul(W, x), y), optimizer=opt, max_grad_norm=0.01
    )
    for bad in (None, -1, float("nan"), [1, 2]):
        with pytest.raises((PyggmlrValueError, pg.ArgumentError, TypeError)):
            pg.ag_capture_set(cs, bad)
    assert cs._step["limit"] == 0.01


def test_ag_fit_that_fails_in_setup_leaves_the_optimizer_as_it_was():
    """Bad class ids are found by the core's plan, after ag_fit configured the optimizer: the
    optimizer's accumulate_steps / accum_count are put back (a failed call changes nothing)."""
    m = pg.ag_sequential(pg.ag_linear(2, 3))
    opt = pg.optimizer_adam(m, lr=0.01, accumulate_steps=3)
    opt.accum_count = 1
    with pytest.raises(pg.PyggmlrValueError):
        pg.ag_fit(
            m,
            np.zeros((2, 8)),
            np.array([0, 1, 2, 7, 0, 1, 2, 0.5]),
            optimizer=opt,
            nbatch_logical=8,
            batch_size=4,
            nepoch=1,
            silent=True,
        )
    assert (opt.accumulate_steps, opt.accum_count) == (3, 1)
