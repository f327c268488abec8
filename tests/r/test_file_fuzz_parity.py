"""Hand-edited files, refused or accepted alike in both languages (issue 29, hostile use): every
entry of a saved model's architecture config and of a checkpoint's run state (its settings, its
history, its callbacks' states) and the optimizer's state replaced in turn by a hostile JSON value
(or removed), then loaded in Python and in R. Both must accept (and give the same predictions, or
resume to the same history) or refuse with the same class and text. The one difference allowed is
each language's words for a config that is not an object at all (Python's dict, R's list). Found:
R read a convolution's `[3]` as 3 and a callback state `[]` as a state (both now refused alike)."""

import copy
import json
import struct

import numpy as np
import pytest

from pyggmlr import r

if not r.available():
    pytest.skip(f"R bridge unavailable: {r.unavailable_reason()}", allow_module_level=True)

pytestmark = pytest.mark.parity  # embeds R (rpy2): not in the sanitized run, which cannot host R

from _rclass import R_CLASS  # noqa: E402

import pyggmlr as pg  # noqa: E402

_BAD = [None, -1, 0, 2**63, 1e308, "x", [], {}, [1, 2, 3], True, 0.5, 10**6]
_DROP = object()  # the entry removed
_RX = np.linspace(-2, 2, 64 * 6).reshape(64, 6, order="F")
_CX = np.linspace(-1, 1, 4 * 40).reshape(4, 40, order="F")
_CY = np.arange(40.0) % 3


def _read(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    return json.loads(raw[8 : 8 + n]), raw[8 + n :]


def _write(path, hdr, body):
    hb = json.dumps(hdr).encode()
    open(path, "wb").write(struct.pack("<Q", len(hb)) + hb + body)


def _leaves(o, p=()):
    """Every entry's path (long lists: their first three)."""
    if p:
        yield p
    if isinstance(o, dict):
        for k, v in o.items():
            yield from _leaves(v, p + (k,))
    elif isinstance(o, list):
        for i, v in enumerate(o[:3]):
            yield from _leaves(v, p + (i,))


def _edits(doc):
    """(edited copy of doc) for every entry and hostile value."""
    for p in _leaves(doc):
        for v in _BAD + [_DROP]:
            c = copy.deepcopy(doc)
            o = c
            for k in p[:-1]:
                o = o[k]
            if v is _DROP:
                del o[p[-1]]
            else:
                o[p[-1]] = v
            yield c


def _mutants(tmp_path, src, keys):
    """Files that are src with metadata entry k (a JSON document) edited, for k in keys."""
    hdr, body = _read(src)
    meta, out = hdr["__metadata__"], []
    for key in keys:
        for c in _edits(json.loads(meta[key])):
            h = dict(hdr, __metadata__=dict(meta, **{key: json.dumps(c)}))
            out.append(str(tmp_path / f"f{len(out):04d}.st"))
            _write(out[-1], h, body)
    return out


def _py(fn, files):
    res = []
    for f in files:
        try:
            res.append(["ok", fn(f)])
        except pg.PyggmlrError as e:
            res.append([R_CLASS[type(e)], str(e)])
    return res


_R_LOOP = """lapply(files, function(f) tryCatch(list("ok", {call}),
  error = function(e) list(class(e)[[1L]], conditionMessage(e))))"""


def _same(py, rr):
    assert len(py) == len(rr)
    for (pc, pm), (rc, rm) in zip(py, rr):
        if "expected a dict with a 'type' key" in str(pm):  # each language's word for an object
            assert (rc, rm.split(", got")[0]) == (pc, pm.split(", got")[0].replace(
                "a dict with a 'type' key", "a list with a 'type' entry"))  # fmt: skip
        elif pc == "ok" and isinstance(pm, tuple):  # (outputs, their classes)
            assert rc == "ok" and np.array_equal(np.asarray(rm[0], dtype=float), pm[0])
            assert rm[1] == pm[1]
        elif pc == "ok":
            assert rc == "ok" and np.array_equal(np.asarray(rm, dtype=float), pm, equal_nan=True)
        else:  # the row-major hint names each language's transpose
            assert (rc, str(rm).replace("pass t(x)", "pass x.T")) == (pc, pm)


def test_edited_model_config_same_outcome(tmp_path):
    pg.ggml_set_seed(1)
    m = pg.ag_sequential(
        [
            pg.ag_conv2d(1, 2, 3, padding=1, input_shape=(1, 8, 8), activation="relu"),
            pg.ag_max_pool2d(2),
            pg.ag_flatten(),
            pg.ag_linear(32, 4),
            pg.ag_layer_norm(4),
            pg.ag_linear(4, 2),
        ]
    )
    pg.ag_fit(m, _RX, np.array(["a", "b"] * 3), nepoch=1, batch_size=2, silent=True)  # a target
    src = tmp_path / "m.st"
    pg.ag_save_model(m, str(src))
    files = _mutants(tmp_path, src, ["config", "target", "parameters", "buffers"])
    assert len(files) > 400

    def predict(f):
        m = pg.ag_load_model(f)
        try:  # the classes as the file's target says (refused without one)
            cls = "|".join(str(c) for c in pg.ag_predict(m, _RX, type="class"))
        except pg.PyggmlrError as e:
            cls = str(e)
        return pg.ag_predict(m, _RX).ravel(order="F").tolist(), cls

    py = _py(predict, files)
    assert 10 < sum(c == "ok" for c, _ in py) < len(py) - 300  # both outcomes are exercised
    call = """{m <- ag_load_model(f)
      list(as.vector(ag_predict(m, x)), tryCatch(paste(ag_predict(m, x, type = "class"),
           collapse = "|"), error = function(e) conditionMessage(e)))}"""
    rr = r.run(_R_LOOP.format(call=call), files=files, x=_RX)
    _same(py, rr)


def test_edited_checkpoint_same_outcome(tmp_path):
    pg.ggml_set_seed(3)
    m = pg.ag_sequential([pg.ag_linear(4, 5, "relu"), pg.ag_linear(5, 3)])
    src = tmp_path / "ck.st"
    cbs = [pg.ag_model_checkpoint(str(src)), pg.ag_early_stopping(patience=3)]
    pg.ag_fit(m, _CX, _CY, nepoch=2, batch_size=8, silent=True, seed=5, val_split=0.2,
              callbacks=cbs)  # fmt: skip
    files = _mutants(tmp_path, src, ["extra", "optimizer"])
    assert len(files) > 600

    def resume(f):
        pg.ggml_set_seed(3)
        m = pg.ag_sequential([pg.ag_linear(4, 5, "relu"), pg.ag_linear(5, 3)])
        cbs = [pg.ag_model_checkpoint(str(tmp_path / "out.st")), pg.ag_early_stopping(patience=3)]
        h = pg.ag_fit(m, _CX, _CY, nepoch=3, batch_size=8, silent=True, seed=5, val_split=0.2,
                      callbacks=cbs, resume_from=f)  # fmt: skip
        return [float(len(h.epoch))] + [float(v) for v in h.loss]

    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an edited optimizer's hyper-parameters warn
        py = _py(resume, files)
    assert 50 < sum(c == "ok" for c, _ in py) < len(py) - 400
    call = """suppressWarnings({
      ggml_set_seed(3); m <- ag_sequential(ag_linear(4, 5, "relu"), ag_linear(5, 3))
      h <- ag_fit(m, x, y, nepoch = 3, batch_size = 8, silent = TRUE, seed = 5, val_split = 0.2,
                  callbacks = list(ag_model_checkpoint(out), ag_early_stopping(patience = 3)),
                  resume_from = f)
      c(length(h$epoch), h$loss)})"""
    rr = r.run(_R_LOOP.format(call=call), files=files, x=_CX, y=_CY,
               out=str(tmp_path / "out_r.st"))  # fmt: skip
    _same(py, rr)
