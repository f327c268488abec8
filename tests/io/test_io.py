"""Model files (safetensors + JSON architecture): round trips, interop with the safetensors
package, ggmlR's mismatch errors, optimizer state, atomic writes, hostile files and a fuzz loop."""

import json
import os
import struct
import warnings

import numpy as np
import pytest
from _files import read_safetensors, write_safetensors
from _parts import Parts
from _tokens import TOKENS

import pyggmlr as pg


def _model(seed=0, hidden=8):
    pg.ggml_set_seed(seed)
    return pg.ag_sequential(
        pg.ag_linear(4, hidden, "relu"),
        pg.ag_batch_norm(hidden),
        pg.ag_dropout(0.25),
        pg.ag_linear(hidden, 3),
    )


def _trained(tmp_path=None, seed=0):
    x, y, _ = pg.load_iris()
    m = _model(seed)
    opt = pg.optimizer_adam(m.parameters(), lr=0.01)
    pg.ag_fit(m, x, y, optimizer=opt, nepoch=2, batch_size=25, silent=True, seed=1)
    return m, opt, x


def _state(m):
    d = {k: t.numpy() for k, t in m.parameters().items()}
    d.update({k: t.numpy() for k, t in m.buffers().items()})
    return d


def _file(header, data=b"", hlen=None):
    hb = json.dumps(header).encode()
    return struct.pack("<Q", len(hb) if hlen is None else hlen) + hb + data


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_round_trip_reproduces_outputs_exactly(tmp_path, dtype):
    pg.ag_dtype(dtype)
    m, opt, x = _trained()
    path = tmp_path / "m.safetensors"
    assert pg.ag_save_model(m, path) == str(path)
    out = pg.ag_predict(m, x)
    given = pg.ag_load_model(path, model=_model(seed=5))
    pg.ag_dtype("f32")
    rebuilt = pg.ag_load_model(path)  # model=None: from the JSON architecture, in the file's dtype
    assert isinstance(rebuilt, pg.ag_sequential) and len(rebuilt) == 4 and not rebuilt.training
    assert rebuilt.parameters()["layer1_W"].dtype == dtype
    for mm in (rebuilt, given):
        assert pg.ag_predict(mm, x).tobytes() == out.tobytes()
        s, s0 = _state(mm), _state(m)
        assert list(s) == list(s0)
        for k in s0:
            assert s[k].tobytes() == s0[k].tobytes(), k


def test_batch_norm_buffers_survive(tmp_path):
    m, _, _ = _trained()
    rm = m.buffers()["layer2_running_mean"].numpy()
    assert np.max(np.abs(rm)) > 1e-3  # moved away from the zeros it started at
    pg.ag_save_model(m, tmp_path / "m.safetensors")
    m2 = pg.ag_load_model(tmp_path / "m.safetensors", model=_model(seed=3))
    np.testing.assert_array_equal(m2.buffers()["layer2_running_mean"].numpy(), rm)
    np.testing.assert_array_equal(
        m2.buffers()["layer2_running_var"].numpy(), m.buffers()["layer2_running_var"].numpy()
    )


def test_safetensors_package_reads_our_files(tmp_path, f64):
    st = pytest.importorskip("safetensors.numpy")
    from safetensors import safe_open

    m, _, _ = _trained()
    path = str(tmp_path / "m.safetensors")
    pg.ag_save_model(m, path, epoch=7, extra={"note": "hi"})
    d = st.load_file(path)
    assert set(d) == set(_state(m))
    W = m.parameters()["layer1_W"].numpy()
    assert d["layer1_W"].shape == (8, 4) and d["layer1_W"].dtype == np.float64
    np.testing.assert_array_equal(d["layer1_W"], W)  # rows, cols as R's dim(); no transposition
    np.testing.assert_array_equal(
        d["layer2_running_var"], m.buffers()["layer2_running_var"].numpy()
    )
    with safe_open(path, "np") as f:
        meta = f.metadata()
    assert (
        meta["format"] == "pyggmlr.ag_model"
        and meta["format_version"] == "1"
        and meta["epoch"] == "7"
    )
    assert json.loads(meta["config"]) == m.to_config()
    assert json.loads(meta["parameters"]) == list(m.parameters())
    assert json.loads(meta["extra"]) == {"note": "hi"}
    assert pg.ag_model_info(path)["epoch"] == 7


def test_foreign_safetensors_loads_into_given_model(tmp_path):
    st = pytest.importorskip("safetensors.numpy")
    m = pg.ag_sequential(pg.ag_linear(3, 2))
    W = np.arange(6, dtype=np.float32).reshape(2, 3)
    st.save_file(
        {"layer1_W": W, "layer1_b": np.ones((2, 1), np.float32)}, str(tmp_path / "t.safetensors")
    )
    pg.ag_load_model(tmp_path / "t.safetensors", model=m)
    np.testing.assert_array_equal(m.parameters()["layer1_W"].numpy(), W)
    with pytest.raises(pg.PyggmlrValueError, match="model="):
        pg.ag_load_model(tmp_path / "t.safetensors")


def test_mismatch_errors_as_ggmlr(tmp_path):
    m, _, _ = _trained()
    path = tmp_path / "m.safetensors"
    pg.ag_save_model(m, path)
    other = pg.ag_sequential(pg.ag_linear(4, 8, "relu"), pg.ag_linear(8, 3))
    with pytest.raises(
        pg.PyggmlrValueError,
        match=r"parameter mismatch .*missing in file: layer2_W, layer2_b; "
        r"not in model: layer2_gamma, layer2_beta, layer4_W, layer4_b",
    ):
        pg.ag_load_model(path, model=other)
    wide = _model(hidden=16)
    before = _state(wide)
    with pytest.raises(
        pg.PyggmlrValueError,
        match=r"shape mismatch for parameter 'layer1_W': model 16x4 vs file 8x4",
    ):
        pg.ag_load_model(path, model=wide)
    no_bn = pg.ag_sequential(
        pg.ag_linear(4, 8, "relu"), pg.ag_layer_norm(8), pg.ag_dropout(0.25), pg.ag_linear(8, 3)
    )
    with pytest.raises(pg.PyggmlrValueError, match="mismatch"):
        pg.ag_load_model(path, model=no_bn)
    after = _state(wide)
    for k in before:  # nothing written when the file does not fit
        np.testing.assert_array_equal(before[k], after[k])


def test_optimizer_state_round_trip(tmp_path):
    m, opt, _ = _trained()
    path = tmp_path / "m.safetensors"
    pg.ag_save_model(m, path, optimizer=opt, epoch=2)
    m2 = _model(seed=9)
    opt2 = pg.optimizer_adam(m2.parameters(), lr=0.01)
    pg.ag_load_model(path, model=m2, optimizer=opt2)
    s1, s2 = opt.state(), opt2.state()
    assert s2["t"] == s1["t"] > 0
    for k in ("m", "v"):
        for a, b in zip(s1["slots"][k], s2["slots"][k]):
            assert a.tobytes() == b.tobytes()
    m3 = _model()
    with pytest.raises(pg.PyggmlrValueError, match="is for adam"):
        pg.ag_load_model(path, model=m3, optimizer=pg.optimizer_sgd(m3.parameters()))
    pg.ag_save_model(m, tmp_path / "plain.safetensors")
    with pytest.raises(pg.PyggmlrValueError, match="no optimizer state"):
        pg.ag_load_model(tmp_path / "plain.safetensors", model=_model(), optimizer=opt2)
    # not an optimizer: the core's text, with the language's type name (R: its class)
    msg = r"^ag_{}_model\(\): optimizer must be an optimizer object, got dict$"
    with pytest.raises(pg.ArgumentError, match=msg.format("save")):
        pg.ag_save_model(m, path, optimizer={})
    with pytest.raises(pg.ArgumentError, match=msg.format("load")):
        pg.ag_load_model(path, model=m, optimizer={})


def test_custom_model_without_config(tmp_path):
    class Net:
        def __init__(self):
            self.W = pg.ag_param(np.arange(6.0).reshape(2, 3))

        def forward(self, x):
            return pg.ag_matmul(self.W, x)

        def parameters(self):
            return {"W": self.W}

    pg.ag_save_model(Net(), tmp_path / "n.safetensors")
    n = Net()
    n.W.data = np.zeros((2, 3))
    pg.ag_load_model(tmp_path / "n.safetensors", model=n)
    np.testing.assert_array_equal(n.W.numpy(), np.arange(6.0).reshape(2, 3))
    with pytest.raises(pg.PyggmlrValueError, match="no architecture"):
        pg.ag_load_model(tmp_path / "n.safetensors")

    class Custom(Net):  # a to_config() that refuses: the weights alone, with the core's warning
        def to_config(self):
            raise pg.PyggmlrValueError("no config for Custom")

    want = (
        r"^ag_save_model\(\): saving the weights without the architecture \(no config for "
        r"Custom\); load with ag_load_model\(path, model=\.\.\.\)$"
    )
    with pytest.warns(UserWarning, match=want):
        pg.ag_save_model(Custom(), tmp_path / "c.safetensors")


def test_empty_path_is_refused_at_the_write():
    """The core's refusal, after the other checks, as R's (r/tests/testthat/test-io.R)."""
    m = pg.ag_linear(2, 2)
    with pytest.raises(pg.ArgumentError) as e:
        pg.ag_save_model(m, "")
    assert str(e.value) == "ag_save_model(): path must be a single file name"
    with pytest.raises(pg.ArgumentError) as e:
        pg.ag_save_model(m, "", optimizer=5)
    assert str(e.value) == "ag_save_model(): optimizer must be an optimizer object, got int"


def test_a_model_without_parameters_is_named_by_the_function(tmp_path):
    """The core's text, naming ag_load_model on a load (it said ag_save_model), as R's."""
    pg.ag_save_model(pg.ag_linear(2, 2), tmp_path / "m.st")
    for call, fn in (
        (lambda: pg.ag_save_model(5, tmp_path / "x.st"), "ag_save_model()"),
        (lambda: pg.ag_load_model(tmp_path / "m.st", model=5), "ag_load_model()"),
    ):
        with pytest.raises(pg.ArgumentError) as e:
            call()
        assert str(e.value) == (
            f"{fn}: `model` must be an ag_sequential or ag_* layer (an object with "
            "parameters()), got int"
        )


def test_model_parts_refusals_as_r(tmp_path):
    """R's rules, texts and order (r/tests/testthat/test-io.R; tests/r/test_saveargs_parity.py):
    a builder given as model= is refused, the model is checked before model_fn, an empty name is
    refused naming the function, a name both a parameter's and a buffer's before the config, and
    a to_config() fault propagates. Nothing is written."""
    f = tmp_path / "m.st"
    pg.ag_save_model(pg.ag_linear(2, 2), f)
    t = pg.ag_param(np.ones((1, 1)))

    bad = "`model` must be an ag_sequential or ag_* layer (an object with parameters()), got"
    cases = [
        (lambda: pg.ag_load_model(f, model=lambda: pg.ag_linear(2, 2)), pg.ArgumentError,
         f"ag_load_model(): {bad} function"),
        (lambda: pg.ag_save_model(5, tmp_path / "x.st", model_fn=5), pg.ArgumentError,
         f"ag_save_model(): {bad} int"),
        (lambda: pg.ag_save_model(Parts({"": t}), tmp_path / "x.st"), pg.PyggmlrValueError,
         "ag_save_model(): every parameter needs a name"),
        (lambda: pg.ag_save_model(Parts([t]), tmp_path / "x.st"), pg.PyggmlrValueError,
         "ag_save_model(): every parameter needs a name"),
        (lambda: pg.ag_save_model(Parts({"a": t}, {"": t}), tmp_path / "x.st"),
         pg.PyggmlrValueError, "ag_save_model(): every buffer needs a name"),
        (lambda: pg.ag_save_model(Parts({"a": 3}), tmp_path / "x.st"), pg.ArgumentError,
         "ag_save_model(): model entry 'a' is a int, not an ag_tensor"),
        (lambda: pg.ag_save_model(Parts({1: t}), tmp_path / "x.st"), pg.ArgumentError,
         "ag_save_model(): model names must be strings, got 1"),
        (lambda: pg.ag_save_model(Parts({"a": t}, {"a": t}, cfg={"type": "?"}), tmp_path / "x.st"),
         pg.PyggmlrValueError, "ag_save_model(): names used by both a parameter and a buffer: a"),
        (lambda: pg.ag_save_model(Parts({"a": t}, raises=KeyError("k")), tmp_path / "x.st"),
         KeyError, "'k'"),
    ]  # fmt: skip
    for call, exc, text in cases:
        with pytest.raises(exc) as e:
            call()
        assert str(e.value) == text
    assert not (tmp_path / "x.st").exists()


def test_atomic_save_leaves_no_temp_files(tmp_path, monkeypatch):
    m, _, _ = _trained()
    path = tmp_path / "m.safetensors"
    pg.ag_save_model(m, path)
    pg.ag_save_model(m, path)  # overwrite
    assert os.listdir(tmp_path) == ["m.safetensors"]
    good = path.read_bytes()

    from pyggmlr._core import lib  # the core writes the file: its test hook fails the rename

    lib.pg_codec_test_fault(3)
    with pytest.raises(OSError, match="injected failure in replace"):
        pg.ag_save_model(_model(seed=4), path)
    assert os.listdir(tmp_path) == ["m.safetensors"] and path.read_bytes() == good
    with pytest.raises(pg.ArgumentError, match="JSON"):
        pg.ag_save_model(m, tmp_path / "x.safetensors", extra={"f": object()})
    assert os.listdir(tmp_path) == ["m.safetensors"]


def _good_tensor():
    return {"layer1_W": {"dtype": "F32", "shape": [2, 1], "data_offsets": [0, 8]}}


@pytest.mark.parametrize(
    "content, msg",
    [
        (b"", "shorter than"),
        (b"\x01\x02\x03", "shorter than"),
        (struct.pack("<Q", 2**62) + b"{}", "exceeds"),
        (struct.pack("<Q", 500) + b'{"a": 1}', "truncated"),
        (struct.pack("<Q", 8) + b"not json", "JSON"),
        (struct.pack("<Q", 4) + b"\xff\xfe{}", "UTF-8"),
        (_file([1, 2]), "JSON object"),
        (_file({"__metadata__": {"format": 3}}), "strings"),
        (_file(_good_tensor(), b"\0" * 4), "outside"),  # offsets past EOF
        (
            _file(
                {
                    "a": {"dtype": "F32", "shape": [2, 1], "data_offsets": [0, 8]},
                    "b": {"dtype": "F32", "shape": [2, 1], "data_offsets": [4, 12]},
                },
                b"\0" * 12,
            ),
            "overlap",
        ),
        (
            _file({"a": {"dtype": "I64", "shape": [1, 1], "data_offsets": [0, 8]}}, b"\0" * 8),
            "unsupported dtype",
        ),
        (
            _file({"a": {"dtype": "F32", "shape": [3, 1], "data_offsets": [0, 8]}}, b"\0" * 8),
            "needs 12",
        ),
        (
            _file({"a": {"dtype": "F32", "shape": [2, -1], "data_offsets": [0, 8]}}, b"\0" * 8),
            "shape",
        ),
        (
            _file({"a": {"dtype": "F32", "shape": [1, 1, 2], "data_offsets": [0, 8]}}, b"\0" * 8),
            "shape",
        ),
        (
            _file({"a": {"dtype": "F32", "shape": [2, 1], "data_offsets": [8, 0]}}, b"\0" * 8),
            "outside",
        ),
        (
            _file({"a": {"dtype": "F32", "shape": [2, 1], "data_offsets": ["0", 8]}}, b"\0" * 8),
            "two integers",
        ),
        (_file({"a": {"dtype": "F32", "shape": [2, 1]}}, b"\0" * 8), "exactly"),
        (struct.pack("<Q", 60) + b'{"a":' * 10 + b" " * 10, "JSON"),
        (b"\x1f\x8b\x08\x00" + b"\0" * 60, "truncated"),  # a gzip (R .rds) file
        (b"X\n\x00\x00\x00\x03\x00\x04" + b"\0" * 40, "exceeds"),  # uncompressed RDS
    ],
)
def test_hostile_files_give_clear_errors(tmp_path, content, msg):
    p = tmp_path / "bad.safetensors"
    p.write_bytes(content)
    with pytest.raises(pg.PyggmlrValueError, match=msg):
        pg.ag_load_model(p, model=_model())
    with pytest.raises(pg.PyggmlrValueError):
        pg.ag_load_model(p)


def test_duplicate_keys_and_hostile_config(tmp_path):
    p = tmp_path / "d.safetensors"
    hb = b'{"a":{"dtype":"F32","shape":[1,1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1,1],"data_offsets":[0,4]}}'
    p.write_bytes(struct.pack("<Q", len(hb)) + hb + b"\0" * 4)
    with pytest.raises(pg.PyggmlrValueError, match="duplicate"):
        pg.ag_load_model(p, model=_model())
    meta = {
        "format": "pyggmlr.ag_model",
        "format_version": "1",
        "parameters": "[]",
        "buffers": "[]",
    }
    for cfg, msg in [
        ({"type": "os.system", "cmd": "rm -rf /"}, "unknown layer type"),
        ({"type": "linear", "in_features": 10**12, "out_features": 2}, "implausible"),
        ({"type": "linear", "bogus": 1}, "rebuild"),
    ]:
        p.write_bytes(_file({"__metadata__": dict(meta, config=json.dumps(cfg))}))
        with pytest.raises(pg.PyggmlrValueError, match=msg):
            pg.ag_load_model(p)
    p.write_bytes(_file({"__metadata__": dict(meta, format_version="99", config="{}")}))
    with pytest.raises(pg.PyggmlrValueError, match="version"):
        pg.ag_load_model(p)


def test_truncated_prefixes(tmp_path):
    m, opt, _ = _trained()
    path = tmp_path / "m.safetensors"
    pg.ag_save_model(m, path, optimizer=opt, epoch=1)
    data = path.read_bytes()
    bad = tmp_path / "t.safetensors"
    for n in sorted(
        {0, 4, 8, 9, 20, len(data) // 2, len(data) - 1} | set(range(len(data) - 9, len(data)))
    ):
        bad.write_bytes(data[:n])
        with pytest.raises(pg.PyggmlrValueError):
            pg.ag_load_model(bad)


def test_mutation_fuzz_only_raises_value_errors(tmp_path):
    """A few hundred random mutations (byte flips, header-length changes, truncation, spliced
    bytes, JSON token swaps) never raise anything but PyggmlrValueError."""
    m, opt, _ = _trained()
    path = tmp_path / "m.safetensors"
    pg.ag_save_model(m, path, optimizer=opt, epoch=3, extra={"a": [1, 2]})
    data = path.read_bytes()
    hlen = struct.unpack("<Q", data[:8])[0]
    rng = np.random.default_rng(2024)
    bad = tmp_path / "f.safetensors"
    outcomes = {"ok": 0, "error": 0}
    for i in range(400):
        buf = bytearray(data)
        kind = i % 5
        if kind == 0:  # flip bytes in the header
            for _ in range(rng.integers(1, 4)):
                j = int(rng.integers(8, 8 + hlen))
                buf[j] = int(rng.integers(0, 256))
        elif kind == 1:  # change the header length
            buf[:8] = struct.pack("<Q", max(0, hlen + int(rng.integers(-40, 40))))
        elif kind == 2:  # truncate or extend
            n = int(rng.integers(0, len(buf) + 16))
            buf = buf[:n] if n <= len(buf) else buf + bytes(n - len(buf))
        elif kind == 3:  # splice a JSON token into the header
            j = int(rng.integers(8, 8 + hlen))
            tok = TOKENS[int(rng.integers(len(TOKENS)))]
            buf = buf[:j] + tok + buf[j + len(tok) :]
        else:  # anywhere, including the data
            j = int(rng.integers(0, len(buf)))
            buf[j] ^= 1 << int(rng.integers(8))
        bad.write_bytes(bytes(buf))
        for model in (None, _model(), "opt"):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter(
                        "ignore"
                    )  # load_state warns when mutated hyper-parameters differ
                    if model == "opt":
                        mm = _model()
                        pg.ag_load_model(
                            bad, model=mm, optimizer=pg.optimizer_adam(mm.parameters(), lr=0.01)
                        )
                    else:
                        pg.ag_load_model(bad, model=model)
                outcomes["ok"] += 1
            except pg.PyggmlrValueError:
                outcomes["error"] += 1
    assert outcomes["error"] > 600 and outcomes["ok"] > 20  # both paths exercised


def test_load_with_a_builder_as_ggmlr_model_fn(tmp_path):
    pg.ggml_set_seed(3)
    m = pg.ag_sequential(pg.ag_linear(4, 6, "relu"), pg.ag_linear(6, 2))
    path = tmp_path / "m.safetensors"
    pg.ag_save_model(m, path)
    x = pg.ag_tensor(np.arange(12.0).reshape(4, 3) / 10)
    want = m(x).numpy()

    def build():
        return pg.ag_sequential(pg.ag_linear(4, 6, "relu"), pg.ag_linear(6, 2))

    for got in (pg.ag_load_model(path, build), pg.ag_load_model(path, model_fn=build)):
        assert np.array_equal(got(x).numpy(), want) and not got.training
    with pytest.raises(pg.ArgumentError, match="not both"):
        pg.ag_load_model(path, model=m, model_fn=build)
    with pytest.raises(
        pg.ArgumentError,
        match=r"`model_fn` must return an ag_sequential or ag_\* layer \(got class: int\)",
    ):
        pg.ag_load_model(path, lambda: 42)  # ggmlR's text
    with pytest.raises(pg.PyggmlrValueError, match="mismatch"):
        pg.ag_load_model(path, lambda: pg.ag_sequential(pg.ag_linear(4, 6)))


# The exact bytes of a small file: r/tests/testthat/test-io.R checks that R writes the same ones
# (both go through the core's writer, native/codec_write.c).
_GOLDEN_FILE = (
    "d0000000000000007b225f5f6d657461646174615f5f223a7b22666f726d6174223a22707967676d6c722e61675f6d6f64656c222c22636f6e666967"
    "223a227b5c22615c223a5c225c75303066635c227d227d2c226c61796572315f57223a7b226474797065223a22463332222c227368617065223a5b32"
    "2c335d2c22646174615f6f666673657473223a5b302c32345d7d2c226361665c7530306539223a7b226474797065223a22463634222c227368617065"
    "223a5b322c315d2c22646174615f6f666673657473223a5b32342c34305d7d7d202020200000803f0000004000004040000080400000a0400000c040"
    "000000000000e03f00000000000000c0"
)


def test_writer_bytes_are_the_ones_r_writes(tmp_path):
    p = tmp_path / "g.safetensors"
    w = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.float32)
    write_safetensors(
        p,
        [("layer1_W", w), ("caf\u00e9", np.array([[0.5], [-2.0]]))],
        {"format": "pyggmlr.ag_model", "config": '{"a":"\u00fc"}'},
    )
    assert p.read_bytes().hex() == _GOLDEN_FILE
    t, meta = read_safetensors(p)
    assert t["layer1_W"].tobytes() == w.tobytes() and t["caf\u00e9"].dtype == np.float64
    assert meta == {"format": "pyggmlr.ag_model", "config": '{"a":"\u00fc"}'}


def _nested(depth, leaf):
    """[[...[leaf]...]]: depth lists, one inside the other."""
    for _ in range(depth):
        leaf = [leaf]
    return leaf


@pytest.mark.parametrize(
    "cfg, msg",
    [
        ({"type": "linear", "in_features": 50000, "out_features": 50000}, "implausible layer size"),
        (
            {
                "type": "sequential",
                "layers": [{"type": "linear", "in_features": 4, "out_features": 1e9}],
            },
            "implausible size",
        ),
        (
            {
                "type": "linear",
                "in_features": 2,
                "out_features": 2,
                "x": _nested(68, 1),  # 68 lists, one inside the other: past the nesting limit
            },
            "nested too deeply",
        ),
    ],
)
def test_hostile_config_sizes_are_refused_before_building(tmp_path, cfg, msg):
    """The guard lives in the core (native/codec_meta.c), so R refuses the same configs."""
    p = tmp_path / "c.safetensors"
    meta = {
        "format": "pyggmlr.ag_model",
        "format_version": "1",
        "parameters": "[]",
        "buffers": "[]",
        "config": json.dumps(cfg),
    }
    write_safetensors(p, [], meta)
    with pytest.raises(pg.PyggmlrValueError, match=msg):
        pg.ag_load_model(p)
