"""The Python side of the drifts the cross-language fuzzer (tests/r/test_fuzz_refusal_parity.py,
issue 29) found: each refusal with its exact class and text (R's: test-fuzz-drifts.R)."""

import numpy as np
import pytest
from _rclass import refused

import pyggmlr as pg


def _fit(**kw):
    pg.ggml_set_seed(1)
    args = dict(y=[0, 1, 2, 0], nepoch=1, batch_size=2, silent=True, optimizer="sgd")
    return pg.ag_fit(pg.ag_sequential(pg.ag_linear(2, 3)), np.ones((2, 4)), **{**args, **kw})


_OPT = "is.list(params) is not TRUE (params must be a list of ag_tensors or a model, got {})"
_CASES = [  # (id, call, type, text)
    ("precision None", lambda: pg.ag_matmul_precision(None), pg.ArgumentError,
     "ag_matmul_precision: 'arg' should be one of \u201cdefault\u201d, \u201cf32\u201d "
     "(precision = None)"),
    ("precision x", lambda: pg.ag_matmul_precision("x"), pg.PyggmlrValueError,
     "ag_matmul_precision: 'arg' should be one of \u201cdefault\u201d, \u201cf32\u201d "
     "(precision = 'x')"),
    ("local mode precision", lambda: pg.ag_local_mode(matmul_precision="x").__enter__(),
     pg.PyggmlrValueError, "ag_local_mode: 'arg' should be one of \u201cdefault\u201d, "
     "\u201cf32\u201d (matmul_precision = 'x')"),
    ("clip_value -1", lambda: pg.clip_grad_value([pg.ag_param(np.ones((2, 2)))], clip_value=-1),
     pg.PyggmlrValueError,
     "clip_grad_value: clip_value must be a single positive finite number, got -1"),
    ("clip_value NaN",
     lambda: pg.clip_grad_value([pg.ag_param(np.ones((2, 2)))], clip_value=np.nan),
     pg.PyggmlrValueError,
     "clip_grad_value: clip_value must be a single positive finite number, got nan"),
    ("optimizer array", lambda: pg.optimizer_sgd(np.array([1, 2])), pg.ArgumentError,
     "optimizer_sgd: " + _OPT.format("array([1, 2])")),
    ("clip array", lambda: pg.clip_grad_norm(np.array([1, 2]), max_norm=1.0), pg.ArgumentError,
     "clip_grad_norm: params must be a list of ag_tensors, got array([1, 2])"),
    ("ragged tensor", lambda: pg.ag_tensor([1, [2]]), pg.DTypeError,
     "ag_tensor: expected a numeric matrix, vector or ag_tensor, got list"),
    ("ragged op", lambda: pg.ag_sum([[1, 2], [3]]), pg.DTypeError,
     "ag_sum: expected a numeric matrix, vector or ag_tensor, got list"),
    ("ragged data", lambda: pg.ag_dataloader([1, [2]], batch_size=2), pg.ArgumentError,
     "ag_dataloader: x must be numeric, got list"),
    ("conv pair nested", lambda: pg.ag_conv2d(1, 2, [1, [2]]), pg.ArgumentError,
     "ag_conv2d: kernel_size must be a number or a pair (H, W), got [1, [2]]"),
    ("pool dict", lambda: pg.ag_max_pool2d({"a": 1}), pg.ArgumentError,
     "ag_max_pool2d: kernel_size must be a number or a pair (H, W) of numbers, got {'a': 1}"),
    ("progress array", lambda: _fit(progress=np.array([1, 2])), pg.PyggmlrValueError,
     'ag_fit: progress must be "auto", "bar" or "none", got array([1, 2])'),
    ("progress None", lambda: _fit(progress=None), pg.PyggmlrValueError,
     'ag_fit: progress must be "auto", "bar" or "none", got None'),
    ("bare string y", lambda: _fit(y="x"), pg.PyggmlrValueError,
     "ag_fit: labels y must be one label per sample (a vector), got a scalar"),
]  # fmt: skip


@pytest.mark.parametrize("call, exc, text", [c[1:] for c in _CASES], ids=[c[0] for c in _CASES])
def test_fuzz_drift_refusals(call, exc, text):
    refused(call, exc, text)
    pg.ag_matmul_precision("default")


def test_a_failed_refusal_changes_nothing():
    pg.ag_matmul_precision("f32")
    with pytest.raises(pg.ArgumentError):
        pg.ag_matmul_precision(None)
    assert pg.ag_matmul_precision("default") == "f32"
    assert pg.ag_matmul_precision("default") == "default"
