"""A model and its optimizer go to and from a model file through the core in both languages
(native/modelfile_model.c): R reading a Python file into a fresh model and optimizer and writing
it back gives the same tensors bit for bit and the same metadata except created_by (R had left
unused optimizer slots out of the list and typed accumulate_steps as a double); a load that fails
says the same in both and changes nothing; a file whose hyper-parameters differ warns the same."""

import json
import struct

import numpy as np
import pytest

from pyggmlr import r

if not r.available():
    pytest.skip(f"R bridge unavailable: {r.unavailable_reason()}", allow_module_level=True)

pytestmark = pytest.mark.parity  # embeds R (rpy2): not in the sanitized run, which cannot host R

import pyggmlr as pg  # noqa: E402

_X = np.linspace(-1, 1, 24).reshape(4, 6, order="F")
_Y = np.linspace(0, 1, 18).reshape(3, 6, order="F")
_OPTS = {
    "adam": ("optimizer_adam", dict(lr=0.01, weight_decay=0.05)),
    "sgd": ("optimizer_sgd", dict(lr=0.1, momentum=0.9, nesterov=True)),
    "adam_accum": ("optimizer_adam", dict(lr=0.01, accumulate_steps=3)),
}


def _r_args(kw):
    return ", ".join(
        f"{k} = {('TRUE' if v else 'FALSE') if isinstance(v, bool) else repr(v)}"
        for k, v in kw.items()
    )


def _trained(kind, dtype):
    """A 4-5-3 model after 2 optimizer calls (adam_accum: both only accumulate)."""
    prev = pg.ag_dtype(dtype)
    try:
        pg.ggml_set_seed(7)
        m = pg.ag_sequential([pg.ag_linear(4, 5, activation="tanh"), pg.ag_linear(5, 3)])
        fn, kw = _OPTS[kind]
        opt = getattr(pg, fn)(m.parameters(), **kw)
        for _ in range(2):
            with pg.with_grad_tape():
                loss = pg.ag_mse_loss(m.forward(pg.ag_tensor(_X)), _Y)
            opt.step(pg.backward(loss), sum_grads=kind == "adam_accum")
            opt.zero_grad()
        return m, opt
    finally:
        pg.ag_dtype(prev)


def _parts(path):
    """(header without created_by, {name: raw bytes}) of a safetensors file"""
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8 : 8 + n])
    meta = h.pop("__metadata__")
    meta.pop("created_by")
    meta["config"] = json.loads(meta["config"])  # each language's JSON spacing
    data = b[8 + n :]
    return (meta, h), {k: data[v["data_offsets"][0] : v["data_offsets"][1]] for k, v in h.items()}


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("kind", list(_OPTS))
def test_r_writes_back_the_same_file(tmp_path, kind, dtype):
    m, opt = _trained(kind, dtype)
    a, b = tmp_path / "py.safetensors", tmp_path / "r.safetensors"
    pg.ag_save_model(m, str(a), optimizer=opt, epoch=2)
    fn, kw = _OPTS[kind]
    r.run(
        f"m <- ag_load_model(a); o <- {fn}(m$parameters(), {_r_args(kw)}); "
        "ag_load_model(a, model = m, optimizer = o); ag_save_model(m, b, optimizer = o, epoch = 2L)",
        a=str(a),
        b=str(b),
    )
    (ma, ha), da = _parts(a)
    (mb, hb), db = _parts(b)
    assert ma == mb and ha == hb
    assert da == db
    slots = json.loads(ma["optimizer"])["slots"]  # every slot listed, used or not
    assert slots == (["accum", "velocity"] if kind == "sgd" else ["accum", "m", "v"])
    if kind == "adam_accum":
        assert json.loads(ma["optimizer"])["accum_count"] == 2
        assert any(k.startswith("optimizer.accum.") for k in da)


_TWO = "ag_sequential(list(ag_linear(4, 5, activation = 'tanh'), ag_linear(5, 3)))"
_REFUSALS = {  # R's model and optimizer; the Python ones are built alike below
    "shape": ("ag_sequential(list(ag_linear(4, 2)))", "optimizer_adam(m$parameters())"),
    "kind": (_TWO, "optimizer_sgd(m$parameters())"),
    "names": ("ag_sequential(list(ag_linear(4, 5), ag_linear(5, 3), ag_linear(3, 3)))", "NULL"),
}


@pytest.mark.parametrize("case", list(_REFUSALS))
def test_same_refusals_and_nothing_written(tmp_path, case):
    m, opt = _trained("adam", "f64")
    p = tmp_path / "m.safetensors"
    pg.ag_save_model(m, str(p), optimizer=opt)
    model, optim = _REFUSALS[case]
    out = r.run(
        f"ag_dtype('f64'); m <- {model}; o <- {optim}; before <- lapply(m$parameters(), function(t) t$data); "
        "res <- tryCatch({ ag_load_model(p, model = m, optimizer = o); list('none', '') }, "
        "error = function(e) list(class(e)[[1L]], conditionMessage(e))); "
        "same <- identical(before, lapply(m$parameters(), function(t) t$data)); "
        "ag_dtype('f32'); c(res, same)",
        p=str(p),
    )
    cls, msg, same = out
    assert same is True  # R: nothing written
    prev = pg.ag_dtype("f64")
    try:
        pm = {
            "shape": lambda: pg.ag_sequential([pg.ag_linear(4, 2)]),
            "kind": lambda: pg.ag_sequential(
                [pg.ag_linear(4, 5, activation="tanh"), pg.ag_linear(5, 3)]
            ),
            "names": lambda: pg.ag_sequential(
                [pg.ag_linear(4, 5), pg.ag_linear(5, 3), pg.ag_linear(3, 3)]
            ),
        }[case]()
        po = (
            None
            if case == "names"
            else (pg.optimizer_sgd if case == "kind" else pg.optimizer_adam)(pm.parameters())
        )
        before = [t.numpy() for t in pm.parameters().values()]
        with pytest.raises(pg.PyggmlrError) as e:
            pg.ag_load_model(str(p), model=pm, optimizer=po)
        assert all(np.array_equal(a, t.numpy()) for a, t in zip(before, pm.parameters().values()))
    finally:
        pg.ag_dtype(prev)
    assert msg == str(e.value)
    assert (
        cls
        == {"PyggmlrValueError": "pyggmlr_value_error", "ShapeError": "pyggmlr_shape_error"}[
            type(e.value).__name__
        ]
    )


def test_same_hyper_warning(tmp_path):
    m, opt = _trained("adam", "f64")
    p = tmp_path / "m.safetensors"
    pg.ag_save_model(m, str(p), optimizer=opt)
    o2 = pg.optimizer_adam(m.parameters(), lr=0.5)
    with pytest.warns(pg.OptimizerHyperWarning) as w:
        pg.ag_load_model(str(p), model=m, optimizer=o2)
    msg, changed = r.run(
        "ag_dtype('f64'); m <- ag_load_model(p); o <- optimizer_adam(m$parameters(), lr = 0.5); "
        "w <- tryCatch(ag_load_model(p, model = m, optimizer = o), ggmlR_opt_hyper_warning = function(w) w); "
        "ag_dtype('f32'); list(conditionMessage(w), w$changed)",
        p=str(p),
    )
    assert msg == str(w[0].message)
    got = {
        k: {kk: float(np.asarray(vv).ravel()[0]) for kk, vv in v.items()}
        for k, v in changed.items()
    }
    assert got == {
        k: {kk: float(vv) for kk, vv in v.items()} for k, v in w[0].message.changed.items()
    }


@pytest.mark.parametrize("classes", [None, ["b", "\u00e9", "a"]])
def test_same_model_info(tmp_path, classes):
    """ag_model_info is the core's answer in both languages (pg_mf_info_json): the same keys in
    the same order, shapes, epoch and the target as the loader reads it (issue 29: Python's
    target lacked "classes" without labels, R's had it NULL)."""
    m, opt = _trained("adam", "f64")
    m.loss_, m.classes_ = ("mse", None) if classes is None else ("cross_entropy", classes)
    p = tmp_path / "m.safetensors"
    pg.ag_save_model(m, str(p), optimizer=opt, epoch=3)
    info = pg.ag_model_info(str(p))
    keys, target, epoch, shapes, opt_kind = r.run(
        "i <- ag_model_info(p); list(names(i), i$target, i$epoch, "
        "lapply(i$parameters, function(d) d$shape), i$optimizer)",
        p=str(p),
    )
    assert keys == list(info)
    assert target == info["target"]
    assert target["classes"] == (None if classes is None else classes)
    assert epoch == info["epoch"] == 3 and opt_kind == info["optimizer"] == "adam"
    want = {k: s for k, (s, _) in info["parameters"].items()}
    assert {k: tuple(v) for k, v in shapes.items()} == want


_CONV = {"type": "conv2d", "in_channels": 1, "out_channels": 2, "kernel_size": [3, 3],
         "stride": [1, 1], "padding": [1, 1], "dilation": [1, 1], "groups": 1, "bias": True,
         "input_shape": [1, 4, 4], "activation": None, "init": "torch"}  # fmt: skip
_EDITS = {  # a hand-edited config: the same file is refused alike in both languages
    "a pair of one": ("kernel_size", [3]),  # R had taken list(3) as 3
    "a stride past the ops' limit": ("stride", [1, 70000]),
    "a layer type": ("type", "no_such_layer"),
    "out_channels": ("out_channels", 0),
}


@pytest.mark.parametrize("edit", list(_EDITS))
def test_same_refusal_of_an_edited_config(tmp_path, edit):
    pg.ggml_set_seed(1)
    p = tmp_path / "c.st"
    pg.ag_save_model(pg.ag_sequential([pg.ag_conv2d(**{k: v for k, v in _CONV.items()
                                                       if k != "type"})]), str(p))  # fmt: skip
    b = open(p, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8 : 8 + n])
    key, value = _EDITS[edit]
    h["__metadata__"]["config"] = json.dumps(
        {"type": "sequential", "layers": [dict(_CONV, **{key: value})]}
    )
    hb = json.dumps(h).encode()
    open(p, "wb").write(struct.pack("<Q", len(hb)) + hb + b[8 + n :])
    with pytest.raises(pg.PyggmlrValueError) as e:
        pg.ag_load_model(str(p))
    assert str(e.value).startswith(f"{p}: cannot rebuild the model from its architecture config: ")
    assert "Error: " not in str(e.value)  # the library's text alone, as R's conditionMessage
    got = r.run(
        "tryCatch({ ag_load_model(p); list('none', '') }, "
        "error = function(e) list(class(e)[[1L]], conditionMessage(e)))",
        p=str(p),
    )
    assert got == ["pyggmlr_value_error", str(e.value)]
