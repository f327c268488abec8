"""Model files under attack: saving is atomic (temp file, fsync of the file and its directory,
rename) so a writer killed at any moment leaves the old file or the new one, never a torn
one; loading validates everything (header size limit, offsets inside the data, dtype and shape
consistency, architecture sizes) and never unpickles or executes anything; a fuzzer feeding
mutated real model files (bit flips, truncation, header edits, huge declared sizes, spliced
JSON, hostile configs) only ever gets PyggmlrValueError (or a model whose tensors have the
file's shapes).

PYGGMLR_FUZZ_CASES sets the number of mutated files (default 300; `make fuzz` runs 20,000)."""

import builtins
import json
import os
import pickle
import signal
import struct
import subprocess
import sys
import textwrap
import time
import warnings

import numpy as np
import pytest
from _files import read_safetensors
from _tokens import TOKENS

import pyggmlr as pg

N_CASES = int(os.environ.get("PYGGMLR_FUZZ_CASES", "300"))


def _model(seed=0):
    pg.ggml_set_seed(seed)
    return pg.ag_sequential(
        pg.ag_embedding(20, 4),
        pg.ag_layer_norm(4),
        pg.ag_linear(4, 6, "relu"),
        pg.ag_batch_norm(6),
        pg.ag_dropout(0.1),
        pg.ag_linear(6, 3),
    )


def _saved(tmp_path, dtype="f32"):
    prev = pg.ag_dtype(dtype)
    try:
        m = _model()
    finally:
        pg.ag_dtype(prev)
    opt = pg.optimizer_adam(m.parameters(), lr=0.01)
    x = np.random.default_rng(0).integers(0, 20, size=8)
    with pg.with_grad_tape():
        loss = pg.ag_mean(m(pg.ag_tensor(x.reshape(1, -1).astype(float))))
    opt.step(pg.backward(loss))
    path = tmp_path / f"m_{dtype}.safetensors"
    pg.ag_save_model(m, path, optimizer=opt, epoch=5, extra={"note": "fuzz"})
    return path, m


def _header(data):
    n = struct.unpack("<Q", data[:8])[0]
    return n, json.loads(data[8 : 8 + n])


def _pack(header, body):
    hb = json.dumps(header, separators=(",", ":")).encode()
    hb += b" " * (-len(hb) % 8)
    return struct.pack("<Q", len(hb)) + hb + body


# ---------------------------------------------------------------------------------------------
# nothing is executed or unpickled


class NoCode:
    """Context manager: pickle, marshal, eval, exec and compile raise (and are recorded) if the
    loader touches them. Scoped to the loads themselves: pytest's own reporting compiles code."""

    def __init__(self):
        import marshal

        self.calls = []
        self.targets = (
            [(pickle, n) for n in ("loads", "load", "Unpickler")]
            + [(builtins, n) for n in ("eval", "exec", "compile")]
            + [(marshal, "loads")]
        )

    def __enter__(self):
        self.saved = [(m, n, getattr(m, n)) for m, n in self.targets]
        for m, n in self.targets:
            setattr(m, n, self._trap(f"{m.__name__}.{n}"))
        return self

    def _trap(self, name):
        def f(*a, **k):
            self.calls.append(name)
            raise RuntimeError(f"the model loader called {name}")

        return f

    def __exit__(self, *exc):
        for m, n, v in self.saved:
            setattr(m, n, v)
        return False


@pytest.fixture
def no_code_execution():
    guard = NoCode()
    yield guard
    assert guard.calls == [], f"the loader ran code: {guard.calls}"


def test_hostile_payloads_are_data_not_code(tmp_path, no_code_execution):
    path, _ = _saved(tmp_path)
    data = path.read_bytes()
    n, header = _header(data)
    body = data[8 + n :]
    marker = tmp_path / "pwned"
    code = f"__import__('os').system('touch {marker}')"
    evil = pickle.dumps(Exception("x"), protocol=0)  # (dumps is not trapped; loads is)
    payloads = [
        {"type": code},
        {
            "type": "sequential",
            "layers": [{"type": "linear", "in_features": code, "out_features": 2}],
        },
        {"type": "linear", "in_features": 4, "out_features": 3, "activation": code, "init": code},
        {"__class__": "os.system", "__reduce__": [code]},
        {"type": "sequential", "layers": [{"type": "lambda", "fn": "lambda x: x"}]},
    ]
    bad = tmp_path / "evil.safetensors"
    for cfg in payloads:
        h = dict(header)
        h["__metadata__"] = dict(header["__metadata__"], config=json.dumps(cfg))
        bad.write_bytes(_pack(h, body))
        with pytest.raises(pg.PyggmlrValueError), no_code_execution:
            pg.ag_load_model(bad)
    for key in ("extra", "optimizer", "parameters", "epoch"):
        h = dict(header)
        h["__metadata__"] = dict(header["__metadata__"], **{key: evil.decode("latin-1")})
        bad.write_bytes(_pack(h, body))
        m = _model()
        opt = pg.optimizer_adam(m.parameters()) if key == "optimizer" else None
        try:
            with no_code_execution:
                pg.ag_load_model(bad, model=m, optimizer=opt)
        except pg.PyggmlrValueError:
            pass
    # a PyTorch-style zip/pickle file and a raw pickle are not model files
    for blob in (b"PK\x03\x04" + evil, evil, b"\x80\x04\x95" + evil):
        bad.write_bytes(blob)
        with pytest.raises(pg.PyggmlrValueError), no_code_execution:
            pg.ag_load_model(bad)
    assert not marker.exists()


# ---------------------------------------------------------------------------------------------
# atomic, durable saves


def test_save_fsyncs_file_and_directory_then_renames(tmp_path):
    """The core writes model files (native/codec_write.c): its trace says what the last save
    did, in order: the data written, the temp file fsynced, renamed, the directory fsynced."""
    from pyggmlr._core import ffi, lib

    path, m = _saved(tmp_path)
    pg.ag_save_model(m, path)
    assert ffi.string(lib.pg_codec_trace()).decode() == "write fsync rename fsync-dir"
    assert sorted(os.listdir(tmp_path)) == [path.name]


@pytest.mark.parametrize("fail_at", ["write", "fsync", "replace"])
def test_failed_save_keeps_the_old_file(tmp_path, fail_at):
    from pyggmlr._core import lib

    path, m = _saved(tmp_path)
    good = path.read_bytes()
    m2 = _model(seed=7)
    # the core's test hook: the third write fails (the disk fills up part-way through the
    # tensors), or the fsync, or the rename
    lib.pg_codec_test_fault({"write": 1, "fsync": 2, "replace": 3}[fail_at])
    with pytest.raises(OSError, match="injected"):
        pg.ag_save_model(m2, path)
    assert path.read_bytes() == good
    assert sorted(os.listdir(tmp_path)) == [path.name]  # no temp file left behind
    pg.ag_load_model(path)


def test_writer_killed_mid_save_never_leaves_a_torn_file(tmp_path):
    """A child saves a ~4 MB model over and over; it is SIGKILLed at random moments. Every
    time, the target is a complete file (old or new) that loads."""
    target = tmp_path / "big.safetensors"
    child = textwrap.dedent(f"""
        import sys, pyggmlr as pg
        m = pg.ag_sequential(pg.ag_linear(512, 1024), pg.ag_linear(1024, 16))
        pg.ag_save_model(m, {str(target)!r})
        print("ready", flush=True)
        while True:
            pg.ag_save_model(m, {str(target)!r})
    """)
    rng = np.random.default_rng(3)
    for _ in range(4):
        p = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, text=True)
        try:
            assert p.stdout.readline().strip() == "ready"
            time.sleep(float(rng.uniform(0.01, 0.3)))
        finally:
            p.send_signal(signal.SIGKILL)
            p.wait()
        m = pg.ag_load_model(target)
        assert (
            list(m.parameters()) == ["layer1_W", "layer1_b", "layer2_W", "layer2_b"]
            or len(m.parameters()) == 4
        )
        leftovers = [f for f in os.listdir(tmp_path) if f != target.name]
        for f in leftovers:  # a killed writer can leave its temp file (never the target) behind
            assert f.startswith("." + target.name) and f.endswith(".tmp")
            os.unlink(tmp_path / f)


# ---------------------------------------------------------------------------------------------
# the fuzzer


def _mutate(data, rng, i):
    n, header = _header(data)
    buf = bytearray(data)
    kind = i % 10
    if kind == 0:  # flip bits anywhere
        for _ in range(int(rng.integers(1, 6))):
            j = int(rng.integers(0, len(buf)))
            buf[j] ^= 1 << int(rng.integers(8))
    elif kind == 1:  # random bytes in the header
        for _ in range(int(rng.integers(1, 4))):
            buf[int(rng.integers(8, 8 + n))] = int(rng.integers(0, 256))
    elif kind == 2:  # truncate or extend
        k = int(rng.integers(0, len(buf) + 64))
        buf = (
            buf[:k]
            if k <= len(buf)
            else buf + bytes(rng.integers(0, 256, k - len(buf), dtype=np.uint8))
        )
    elif kind == 3:  # declared header length: near, huge, or past the end
        choice = int(rng.integers(4))
        hl = [n + int(rng.integers(-64, 64)), 2**64 - 1, 2**63, len(buf) * 4][choice]
        buf[:8] = struct.pack("<Q", max(0, hl) % 2**64)
    elif kind == 4:  # splice a JSON token into the header
        j = int(rng.integers(8, 8 + n))
        tok = TOKENS[int(rng.integers(len(TOKENS)))]
        buf = buf[:j] + tok + buf[j + len(tok) :]
    else:  # structured edits of one tensor entry or the metadata, re-packed consistently
        names = [k for k in header if k != "__metadata__"]
        h = json.loads(json.dumps(header))
        e = h[names[int(rng.integers(len(names)))]]
        big = [2**31, 2**40, 2**62, 2**63 - 1, 10**30, -1, -(2**63)]
        if kind == 5:
            e["shape"] = [
                int(rng.choice([0, 1, 3, 7] + big[:3])),
                int(rng.choice([0, 1, 4] + big[:2])),
            ][: int(rng.integers(0, 3))]
        elif kind == 6:
            b0, b1 = e["data_offsets"]
            e["data_offsets"] = [
                int(b0 + rng.integers(-16, 16)),
                int(rng.choice([b1, b1 + 4, b1 - 4] + big)),
            ]
        elif kind == 7:
            e["dtype"] = str(
                rng.choice(["F16", "BF16", "I64", "U8", "F32", "F64", "f32", "", "F64\u0000"])
            )
        elif kind == 8:  # hostile architecture sizes and types
            cfg = json.loads(h["__metadata__"]["config"])
            layer = cfg["layers"][int(rng.integers(len(cfg["layers"])))]
            key = [k for k in layer if k != "type"]
            if key:
                values = [10**7, 99_999_999, 10**8, -5, 0, 2.5, "x", None, [], {}]
                layer[str(rng.choice(key))] = values[int(rng.integers(len(values)))]
            h["__metadata__"]["config"] = json.dumps(cfg)
        else:  # metadata values
            meta = h["__metadata__"]
            k = str(rng.choice(sorted(meta)))
            meta[k] = [
                "",
                "[]",
                "{}",
                "null",
                "[1,2]",
                '{"kind": "adam"}',
                "9" * 30,
                json.dumps(["x"] * 3),
                meta[k][::-1],
            ][int(rng.integers(9))]
        return _pack(h, bytes(buf[8 + n :]))
    return bytes(buf)


def _limit_address_space(extra_gib=3):
    """Cap this process's address space (soft limit, restored after) so an allocation a hostile
    file might trigger fails cleanly instead of being overcommitted."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as f:
        vm = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    cap = vm + (extra_gib << 30)
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    return lambda: resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_mutated_model_files_only_raise_value_errors(tmp_path, dtype, no_code_execution):
    path, _ = _saved(tmp_path, dtype)
    data = path.read_bytes()
    rng = np.random.default_rng(1234 if dtype == "f32" else 4321)
    bad = tmp_path / "fuzz.safetensors"
    outcomes = {"loaded": 0, "rejected": 0}
    kinds = {}
    # (under ASan, scripts/sanitize.sh caps allocation sizes instead: its shadow memory needs
    # terabytes of address space)
    limit = os.path.exists("/proc/self/statm") and not os.environ.get("PYGGMLR_SANITIZED")
    restore = _limit_address_space() if limit else (lambda: None)
    try:
        for i in range(N_CASES):
            blob = _mutate(data, rng, i)
            bad.write_bytes(blob)
            for target in ("rebuild", "into", "optimizer", "info"):
                if target in ("into", "optimizer"):
                    m = _model()
                    opt = pg.optimizer_adam(m.parameters()) if target == "optimizer" else None
                try:
                    with warnings.catch_warnings(), no_code_execution:
                        warnings.simplefilter("ignore")
                        if target == "rebuild":
                            m = pg.ag_load_model(bad)
                        elif target == "info":
                            pg.ag_model_info(bad)
                            continue
                        else:
                            pg.ag_load_model(bad, model=m, optimizer=opt)
                    # loaded: the model's tensors have exactly the file's shapes
                    file_tensors = read_safetensors(bad)[0]
                    for k, t in m.parameters().items():
                        assert tuple(t.shape) == file_tensors[k].shape
                    outcomes["loaded"] += 1
                except pg.PyggmlrValueError:
                    outcomes["rejected"] += 1
                    kinds[i % 10] = kinds.get(i % 10, 0) + 1
                except Exception as e:  # anything else is a bug: report the case
                    raise AssertionError(f"case {i} ({target}): {type(e).__name__}: {e}") from e
    finally:
        restore()
    assert outcomes["rejected"] > N_CASES and outcomes["loaded"] > N_CASES // 10, outcomes
    assert len(kinds) == 10  # every mutation kind produced rejections


def test_huge_declared_sizes(tmp_path):
    path, _ = _saved(tmp_path)
    data = path.read_bytes()
    n, header = _header(data)
    body = data[8 + n :]
    bad = tmp_path / "huge.safetensors"
    name = next(k for k in header if k != "__metadata__")
    cases = []
    for shape, offs in (
        ([2**62, 2], None),
        ([2**31, 2**31], None),
        ([10**9], [0, 4 * 10**9]),
        ([1, 1], [0, 2**63]),
        ([1, 1], [2**64, 2**64 + 4]),
        ([1, 1], [-4, 0]),
    ):
        h = json.loads(json.dumps(header))
        h[name]["shape"] = shape
        if offs is not None:
            h[name]["data_offsets"] = offs
        cases.append(_pack(h, body))
    for hl in (2**64 - 1, 2**63, 100 * 1024 * 1024 + 1, len(data) + 1):
        cases.append(struct.pack("<Q", hl) + data[8:])
    for blob in cases:
        bad.write_bytes(blob)
        with pytest.raises(pg.PyggmlrValueError):
            pg.ag_load_model(bad)
        with pytest.raises(pg.PyggmlrValueError):
            pg.ag_model_info(bad)
