"""Issue 28, hostile files and careless saves: a small file whose config declares layers its
tensors cannot back is refused before a layer is built (naming ag_load_model and the file);
configs and `extra` nested without end or holding cycles are typed errors, not RecursionError;
save errors are the OSError subclass of their errno, with the path; the metadata epoch and a
checkpoint's random-stream state are checked with typed errors. R: test-hostile-files.R."""

import errno
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from _files import edit_meta

import pyggmlr as pg
from pyggmlr.errors import PyggmlrValueError


def _big_attention_file(path):
    """A < 1 KiB file: a [4x4] attention layer whose config says d_model = 11585 (2 GB of f32
    weights, within the old budget of the product of its integer fields)."""
    pg.ag_save_model(pg.ag_sequential(pg.ag_multihead_attention(4, 2)), path)

    def fn(meta):
        cfg = json.loads(meta["config"])
        cfg["layers"][0].update(d_model=11585, n_heads=5)
        meta["config"] = json.dumps(cfg)

    edit_meta(path, fn)
    assert os.path.getsize(path) < 1024


def test_config_the_tensors_cannot_back_is_refused_before_building(tmp_path):
    """In a child: the load must fail without growing the process (main built the 2 GB layer,
    then failed on the shapes with a message naming neither function nor file)."""
    p = tmp_path / "mha.st"
    _big_attention_file(p)
    # the child's own peak: /proc's VmHWM starts afresh at exec, where getrusage's ru_maxrss keeps
    # the forking parent's (a pytest process of several hundred MB)
    code = textwrap.dedent(f"""
        import pyggmlr as pg
        try:
            pg.ag_load_model({str(p)!r})
            print("LOADED")
        except Exception as e:
            print(type(e).__name__, e)
        hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM:")][0]
        print(int(hwm.split()[1]) // 1024)
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    msg, rss_mb = r.stdout.strip().splitlines()
    assert msg.startswith(f"PyggmlrValueError ag_load_model(): {p}: architecture config"), msg
    assert "'layer1_W_q' [11585x11585]" in msg and "the file holds [4x4]" in msg
    assert int(rss_mb) < 600, rss_mb  # the 2 GB layer was never allocated


@pytest.mark.parametrize(
    "edit, text",
    [
        (lambda c: c["layers"][1].update(num_features=5), "'layer2_gamma' [5x1]"),
        (lambda c: c["layers"][0].update(in_features=7), "'layer1_W' [4x7]"),
        (
            lambda c: c["layers"].append({"type": "embedding", "vocab_size": 9, "dim": 2}),
            "'layer4_weight' [2x9] (18 values), which the file does not hold",
        ),
    ],
)
def test_config_is_matched_layer_by_layer(tmp_path, edit, text):
    m = pg.ag_sequential(pg.ag_linear(3, 4), pg.ag_batch_norm(4), pg.ag_dropout(0.1))
    p = tmp_path / "m.st"
    pg.ag_save_model(m, p)

    def fn(meta):
        cfg = json.loads(meta["config"])
        edit(cfg)
        meta["config"] = json.dumps(cfg)

    edit_meta(p, fn)
    with pytest.raises(PyggmlrValueError, match="^ag_load_model\\(\\): .*m.st: architecture") as e:
        pg.ag_load_model(p)
    assert text in str(e.value)


def test_every_built_in_layer_still_round_trips(tmp_path):
    m = pg.ag_sequential(
        pg.ag_linear(3, 4, "relu"),
        pg.ag_batch_norm(4),
        pg.ag_layer_norm(4),
        pg.ag_layer_norm(4, elementwise_affine=False),
        pg.ag_sequential(pg.ag_embedding(5, 4), pg.ag_dropout(0.2)),
        pg.ag_multihead_attention(4, 2),
        pg.ag_multihead_attention(4, 1, bias=False),
    )
    p = tmp_path / "all.st"
    pg.ag_save_model(m, p)
    back = pg.ag_load_model(p)
    a, b = m.parameters(), back.parameters()
    assert list(a) == list(b)
    for k in a:
        np.testing.assert_array_equal(a[k].numpy(), b[k].numpy())


def _nested_config(depth):
    cfg = {"type": "dropout", "rate": 0.1}
    for _ in range(depth):
        cfg = {"type": "sequential", "layers": [cfg]}
    return cfg


def test_deep_configs_are_refused_with_a_typed_error():
    with pytest.raises(PyggmlrValueError, match="nested deeper than 64 levels"):
        pg.ag_module_from_config(_nested_config(5000))
    deep = {}
    for _ in range(5000):
        deep = {"a": deep}
    with pytest.raises(PyggmlrValueError, match="expected a dict with a 'type' key"):
        pg.ag_module_from_config(deep)  # its repr is bounded too
    assert len(pg.ag_module_from_config(_nested_config(60)).layers) == 1


def test_cyclic_or_deep_extra_is_refused_and_nothing_written(tmp_path):
    m = pg.ag_sequential(pg.ag_linear(2, 2))
    p = tmp_path / "m.st"
    cyc = {"a": 1}
    cyc["self"] = cyc
    lst = []
    lst.append(lst)
    deep = []
    for _ in range(5000):
        deep = [deep]
    for extra, text in [
        (cyc, "reference cycle"),
        (lst, "reference cycle"),
        (deep, "deeper than 128"),
    ]:
        with pytest.raises(PyggmlrValueError, match=f"ag_save_model\\(\\): extra .*{text}"):
            pg.ag_save_model(m, p, extra=extra)
        assert not p.exists()
    ok = []
    for _ in range(120):
        ok = [ok]
    pg.ag_save_model(m, p, extra={"x": ok, "shared": [cyc["a"]] * 3})  # shared, not cyclic
    assert pg.ag_model_info(p)["extra"]["shared"] == [1, 1, 1]


def test_save_errors_are_the_os_error_of_their_errno(tmp_path):
    m = pg.ag_sequential(pg.ag_linear(2, 2))
    missing = tmp_path / "nope" / "m.st"
    with pytest.raises(FileNotFoundError) as e:
        pg.ag_save_model(m, missing)
    assert e.value.errno == errno.ENOENT and e.value.filename == str(missing)
    assert "ag_save_model()" in str(e.value)
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(NotADirectoryError) as e:
        pg.ag_save_model(m, f / "m.st")
    assert e.value.errno == errno.ENOTDIR and e.value.filename == str(f / "m.st")
    # /sys refuses new files even to root (a chmod-ed directory would not stop root)
    with pytest.raises(PermissionError) as e:
        pg.ag_save_model(m, "/sys/pyggmlr-test.st")
    assert e.value.errno in (errno.EACCES, errno.EPERM)
    assert e.value.filename == "/sys/pyggmlr-test.st"
    with pytest.raises(FileNotFoundError) as e:
        pg.ag_model_info(missing)
    assert e.value.errno == errno.ENOENT and "ag_model_info()" in str(e.value)
    with pytest.raises(IsADirectoryError, match=r"ag_load_model\(\): Is a directory"):
        pg.ag_load_model(tmp_path)


@pytest.mark.parametrize("epoch", ["²", "٣", "3a", "", "1234567890123"])
def test_metadata_epoch_takes_ascii_digits_only(tmp_path, epoch):
    m = pg.ag_sequential(pg.ag_linear(2, 2))
    p = tmp_path / "m.st"
    pg.ag_save_model(m, p, epoch=3)
    edit_meta(p, lambda meta: meta.update(epoch=epoch))
    with pytest.raises(PyggmlrValueError, match="metadata 'epoch' is not a non-negative integer"):
        pg.ag_load_model(p)
    assert pg.ag_model_info(p)["epoch"] is None  # R: NULL for the same texts
    edit_meta(p, lambda meta: meta.update(epoch="0042"))
    assert pg.ag_model_info(p)["epoch"] == 42


def _checkpoint(tmp_path):
    rng = np.random.default_rng(0)
    X, Y = rng.random((3, 20)), rng.random((1, 20))
    m = pg.ag_sequential(pg.ag_linear(3, 1))
    p = str(tmp_path / "ck.st")
    kw = dict(loss="mse", batch_size=5, verbose=0)
    pg.ag_fit(
        m,
        X,
        Y,
        optimizer=pg.optimizer_adam(m.parameters()),
        nepoch=1,
        seed=1,
        callbacks=[pg.ag_model_checkpoint(p)],
        **kw,
    )
    return p, X, Y, kw


@pytest.mark.parametrize(
    "key, value",
    [
        ("split_state", "abc"),
        ("split_state", ["a"] * 626),
        ("split_state", [1, 2, 3]),
        ("split_state", [True] * 626),
        ("seed", "abc"),
        ("seed", 2.5),
    ],
)
def test_checkpoint_with_a_bad_stream_state_is_a_typed_error(tmp_path, key, value):
    p, X, Y, kw = _checkpoint(tmp_path)

    def fn(meta):
        ex = json.loads(meta["extra"])
        ex["fit"]["settings"][key] = value
        meta["extra"] = json.dumps(ex)

    edit_meta(p, fn)
    m = pg.ag_sequential(pg.ag_linear(3, 1))
    before = {k: t.numpy().copy() for k, t in m.parameters().items()}
    with pytest.raises(PyggmlrValueError, match="holds an unusable random-stream state"):
        pg.ag_fit(
            m, X, Y, optimizer=pg.optimizer_adam(m.parameters()), nepoch=2, resume_from=p, **kw
        )
    for k, t in m.parameters().items():
        np.testing.assert_array_equal(t.numpy(), before[k])


class _Wrong:
    """A linear layer (2 -> 3) whose config says out_features = out, with extra buffers."""

    def __init__(self, out, bufs=None, cfg=None):
        self.lin, self.out, self.bufs, self.cfg = pg.ag_linear(2, 3), out, bufs or {}, cfg
        self.calls = 0

    def parameters(self):
        return self.lin.parameters()

    def buffers(self):
        return self.bufs

    def to_config(self):
        self.calls += 1
        return self.cfg or {"type": "linear", "in_features": 2, "out_features": self.out}


PRE = "ag_save_model(): the model's architecture config would not load back"


def test_save_config_check_one_core_text(tmp_path):
    """The core (native/modelfile_check.c) compares the rebuilt names and shapes with the
    model's and words the refusal for both languages (R: test-hostile-files.R)."""
    p = tmp_path / "m.st"
    with pytest.raises(PyggmlrValueError) as e:
        pg.ag_save_model(_Wrong(4), p)
    assert str(e.value) == (
        f"{PRE}: it rebuilds parameters 'W' 4x2, 'b' 4x1, the model has 'W' 3x2, 'b' 3x1; "
        "nothing was written"
    )
    rm = pg.ag_tensor(np.zeros((3, 1)))
    with pytest.raises(PyggmlrValueError) as e:
        pg.ag_save_model(_Wrong(3, {"rm": rm}), p)
    assert str(e.value) == (
        f"{PRE}: it rebuilds buffers none, the model has 'rm' 3x1; nothing was written"
    )
    with pytest.raises(PyggmlrValueError) as e:  # the rebuild fails: the language's reason
        pg.ag_save_model(_Wrong(3, cfg={"type": "linear", "in_features": 2}), p)
    assert str(e.value).startswith(f"{PRE} (ag_module_from_config: ")
    assert str(e.value).endswith("out_features is missing); nothing was written")
    with pytest.raises(PyggmlrValueError, match=r"^ag_save_model\(\).*\(architecture config has"):
        pg.ag_save_model(_Wrong(3, cfg={"type": "linear", "in_features": 2, "x": 10**6}), p)
    assert not p.exists()


def test_save_config_checked_once_a_refusal_remembered_never(tmp_path, monkeypatch):
    """A config that passed is not rebuilt again (the core's cache); one refused stays refused."""
    import pyggmlr.io.check as chk

    built = []
    real = chk.ag_module_from_config
    monkeypatch.setattr(chk, "ag_module_from_config", lambda c: built.append(1) or real(c))
    m = _Wrong(3)
    m.cfg = {"type": "linear", "in_features": 2, "out_features": 3, "activation": "relu"}
    pg.ag_save_model(m, tmp_path / "a.st")
    pg.ag_save_model(m, tmp_path / "b.st")
    assert len(built) == 1
    bad = _Wrong(5)
    for _ in range(2):
        with pytest.raises(PyggmlrValueError, match="it rebuilds parameters 'W' 5x2"):
            pg.ag_save_model(bad, tmp_path / "c.st")
    assert len(built) == 3


def test_load_rebuild_failure_names_the_file(tmp_path):
    """A config the front end cannot build: the core's text, naming the file (R: test-io-limits.R)."""
    p = tmp_path / "m.st"
    pg.ag_save_model(pg.ag_sequential(pg.ag_linear(2, 3)), p)
    cfg = {"type": "sequential", "layers": [{"type": "no_such_layer"}]}
    edit_meta(p, lambda meta: meta.update(config=json.dumps(cfg)))
    with pytest.raises(PyggmlrValueError) as e:
        pg.ag_load_model(p)
    assert str(e.value).startswith(  # the library's own error by its text alone, as R's
        f"{p}: cannot rebuild the model from its architecture config: ag_module_from_config: "
    )
