"""Drifts between the Python and R front ends in the layer and tensor constructors and their
forward calls (issue 29): each case is the same call in both languages, with the same condition
class and text (R's class name for Python's type, R's display of a value for Python's)."""

import numpy as np
import pytest

from pyggmlr import r

if not r.available():
    pytest.skip(f"R bridge unavailable: {r.unavailable_reason()}", allow_module_level=True)

pytestmark = pytest.mark.parity  # embeds R (rpy2): not in the sanitized run, which cannot host R

from _rclass import same_refusal  # noqa: E402

import pyggmlr as pg  # noqa: E402

_R_RUN = """tryCatch({{ {call}; list("none", "") }},
         error = function(e) list(class(e)[[1L]], conditionMessage(e)))"""
_ACTS = "'gelu', 'relu', 'sigmoid', 'softmax', 'tanh'"
_INIT = 'init must be "glorot_uniform", "orthogonal", a function(out, in) or a numeric matrix'
_NOT_NUM = "expected a numeric matrix, vector or ag_tensor, got"
_FLAT = "tensors are 2-D matrices [features, batch]; got a"

_CASES = [  # (id, Python call, R call, Python type, Python text, R text or None: the same)
    ("gain", lambda: pg.ag_linear(2, 3, gain="a"), 'ag_linear(2, 3, gain = "a")',
     pg.PyggmlrValueError, "ag_linear: gain must be a single finite number", None),
    ("gain with a matrix init", lambda: pg.ag_linear(2, 3, init=np.ones((3, 2)), gain=2),
     "ag_linear(2, 3, init = matrix(1, 3, 2), gain = 2)", pg.PyggmlrValueError,
     "ag_linear: gain applies to string inits only; scale a function or matrix init yourself",
     None),
    ("init kind", lambda: pg.ag_linear(2, 3, init=True), "ag_linear(2, 3, init = TRUE)",
     pg.PyggmlrValueError, f"ag_linear: {_INIT}", None),
    ("init name", lambda: pg.ag_linear(2, 3, init="xavier"), 'ag_linear(2, 3, init = "xavier")',
     pg.PyggmlrValueError,
     "ag_linear: 'arg' should be one of \u201cglorot_uniform\u201d, \u201corthogonal\u201d "
     "(init = 'xavier')",
     "ag_linear: 'arg' should be one of \u201cglorot_uniform\u201d, \u201corthogonal\u201d "
     '(init = "xavier")'),
    ("activation", lambda: pg.ag_linear(2, 3, activation="swish"),
     'ag_linear(2, 3, activation = "swish")', pg.PyggmlrValueError,
     f"ag_linear: activation must be one of {_ACTS} or None, got 'swish'",
     f'ag_linear: activation must be one of {_ACTS} or NULL, got "swish"'),
    ("dropout flag", lambda: pg.ag_dropout(True), "ag_dropout(TRUE)", pg.ArgumentError,
     "ag_dropout: rate must be a finite number in [0, 1), got bool True",
     "ag_dropout: rate must be a finite number in [0, 1), got TRUE"),
    ("dropout range", lambda: pg.ag_dropout(1), "ag_dropout(1)", pg.PyggmlrValueError,
     "ag_dropout: rate must be a finite number in [0, 1), got 1", None),
    ("conv kernel_size", lambda: pg.ag_conv1d(1, 2, None), "ag_conv1d(1, 2, NULL)",
     pg.ArgumentError, "ag_conv1d: kernel_size must be a number, got None",
     "ag_conv1d: kernel_size must be a number, got NULL"),
    ("conv groups kind", lambda: pg.ag_conv2d(1, 2, 3, groups=[2]),
     "ag_conv2d(1, 2, 3, groups = list(2))", pg.ArgumentError,
     "ag_conv2d: groups must be an integer >= 1, got [2]",  # Python said "a whole number"
     "ag_conv2d: groups must be an integer >= 1, got list(2)"),
    ("conv order", lambda: pg.ag_conv1d(1, 2, 3, padding=True, dilation=True),
     "ag_conv1d(1, 2, 3, padding = TRUE, dilation = TRUE)", pg.ArgumentError,
     "ag_conv1d: padding must be a number, got True",  # Python named dilation first
     "ag_conv1d: padding must be a number, got TRUE"),
    ("conv transpose order",
     lambda: pg.ag_conv_transpose1d_op(np.ones((4, 1)), np.ones((1, 1)), output_padding=True,
                                       dilation=True),
     "ag_conv_transpose1d_op(matrix(1, 4, 1), matrix(1, 1, 1), output_padding = TRUE, "
     "dilation = TRUE)", pg.ArgumentError,
     "ag_conv_transpose1d_op: dilation must be a number, got True",  # R named output_padding
     "ag_conv_transpose1d_op: dilation must be a number, got TRUE"),
    ("normalization mean", lambda: pg.ag_normalization(mean=True, variance=[1.0]),
     "ag_normalization(mean = TRUE, variance = 1)", pg.ArgumentError,
     "ag_normalization: mean must be a non-empty numeric vector (one value per feature), got bool True",
     "ag_normalization: mean must be a non-empty numeric vector (one value per feature), got TRUE"),
    ("tensor dtype", lambda: pg.ag_tensor([1.0], dtype="i8"), 'ag_tensor(1, dtype = "i8")',
     pg.DTypeError, "ag_tensor: dtype must be 'f32' or 'f64', got 'i8'",
     'ag_tensor: dtype must be "f32" or "f64", got "i8"'),
    # ag_images / ag_sequences: R matched dtype with match.arg (a value error, "'arg' should be
    # one of") and failed on a tensor with tolower()'s simpleError
    ("images dtype", lambda: pg.ag_images(np.ones((1, 1, 2, 2)), dtype="i8"),
     'ag_images(array(1, c(1, 1, 2, 2)), dtype = "i8")', pg.DTypeError,
     "ag_images: dtype must be 'f32' or 'f64', got 'i8'",
     'ag_images: dtype must be "f32" or "f64", got "i8"'),
    ("sequences dtype tensor",
     lambda: pg.ag_sequences(np.ones((2, 3, 1)), dtype=pg.ag_tensor(np.ones((1, 1)))),
     "ag_sequences(array(1, c(2, 3, 1)), dtype = ag_tensor(matrix(1, 1, 1)))", pg.DTypeError,
     "ag_sequences: dtype must be 'f32' or 'f64', got ag_tensor [1x1]",
     'ag_sequences: dtype must be "f32" or "f64", got <environment>'),
    ("default dtype", lambda: pg.ag_dtype("f16"), 'ag_dtype("f16")', pg.DTypeError,
     "ag_dtype: dtype 'f16' is not supported by the CPU engine; use 'f32' or 'f64'",
     'ag_dtype: dtype "f16" is not supported by the CPU engine; use "f32" or "f64"'),
    ("tensor device", lambda: pg.ag_param([1.0], device="tpu"), 'ag_param(1, device = "tpu")',
     pg.PyggmlrValueError, "ag_param(): device must be 'cpu' or 'gpu', got 'tpu'",
     'ag_param(): device must be "cpu" or "gpu", got "tpu"'),
    ("forward strings", lambda: pg.ag_linear(2, 3)(np.array(["a"])),
     'ag_linear(2, 3)$forward("a")', pg.DTypeError, f"ag_linear: {_NOT_NUM} dtype <U1",
     f"ag_linear: {_NOT_NUM} character"),
    ("forward kind", lambda: pg.ag_batch_norm(2)(None), "ag_batch_norm(2)$forward(NULL)",
     pg.DTypeError, f"ag_batch_norm: {_NOT_NUM} NoneType", f"ag_batch_norm: {_NOT_NUM} NULL"),
    ("forward 4-d", lambda: pg.ag_max_pool2d(2)(np.ones((2, 1, 4, 4))),
     "ag_max_pool2d(2)$forward(array(1, c(2, 1, 4, 4)))", pg.ShapeError,
     f"ag_max_pool2d: {_FLAT} 2x1x4x4 array", None),
    ("tensor 3-d", lambda: pg.ag_tensor(np.ones((2, 3, 4))), "ag_tensor(array(1, c(2, 3, 4)))",
     pg.ShapeError, f"ag_tensor: {_FLAT} 2x3x4 array", None),
    ("sequential", lambda: pg.ag_sequential(pg.ag_linear(2, 2), "a"),
     'ag_sequential(ag_linear(2, 2), "a")', pg.ArgumentError,
     "ag_sequential: layer 2 has no forward function (got 'a')",
     'ag_sequential: layer 2 has no forward function (got "a")'),
    ("embedding id 1e300", lambda: pg.ag_embedding(10, 4).forward([2.0, 1e300]),  # Python: a
     "ag_embedding(10, 4)$forward(c(2, 1e300))", pg.PyggmlrValueError,  # wrapped int64; R: its
     "ag_embedding: id 1e+300 at position 1 is out of range [0, 10) for weight [4x10] f32 (ids "
     "are 0-based)",  # own "out of R's integer range"
     "ag_embedding: id 1e+300 at position 2 is out of range [0, 10) for weight [4x10] f32 (ids "
     "are 0-based)"),
    # the convolutions' limit, at construction as the transposed ones (it was at the forward)
    *[(f"conv {kw} > 65535", lambda f=f, kw=kw: getattr(pg, f)(1, 2, **{"kernel_size": 3, kw: 65536}),
       f"{f}(1, 2, kernel_size = {'65536' if kw == 'kernel_size' else '3'}, {'stride = 1' if kw == 'kernel_size' else kw + ' = 65536'})", pg.PyggmlrValueError,
       f"{f}: kernel_size, stride, padding and dilation must be at most 65535", None)
      for f, kw in (("ag_conv2d", "stride"), ("ag_conv1d", "padding"), ("ag_conv2d", "dilation"),
                    ("ag_conv1d", "kernel_size"), ("ag_conv_transpose1d", "stride"))],
]  # fmt: skip


@pytest.mark.parametrize("call, rcall, exc, text, rtext", [c[1:] for c in _CASES],
                         ids=[c[0] for c in _CASES])  # fmt: skip
def test_same_refusal(call, rcall, exc, text, rtext):
    same_refusal(call, rcall, exc, text, rtext)


@pytest.mark.parametrize("call, rcall, text", [
    (lambda: pg.ag_gru(2, 3, num_layers=2**31 - 1), "ag_gru(2, 3, num_layers = 2^31 - 1)",
     "ag_gru: out of memory for input_size = 2, hidden_size = 3, num_layers = 2147483647"),
    (lambda: pg.ag_conv2d(1, 2**31 - 1, 65535), "ag_conv2d(1, 2^31 - 1, 65535)",  # R: [NAx..]
     "ag_conv2d: out of memory for a [2147483647x4294836225] weight"),
], ids=["recurrent layers", "conv fan_in"])  # fmt: skip
def test_same_memory_refusal(call, rcall, text):
    """refused at once (a stack of 2^31 - 1 layers was summed layer by layer: minutes), the same
    text up to the memory figures, which change between the two calls"""
    with pytest.raises(pg.PyggmlrMemoryError) as e:
        call()
    assert str(e.value).startswith(text + " (")
    cls, msg = r.run(_R_RUN.format(call=rcall))
    assert cls == "pyggmlr_memory_error" and msg.startswith(text + " (")
