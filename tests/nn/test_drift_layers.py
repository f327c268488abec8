"""Drifts from R in the layer and tensor constructors and their forward calls (issue 29); the
same cases in both languages are tests/r/test_layer_drift_parity.py."""

import numpy as np
import pytest
from _rclass import refused

import pyggmlr as pg


def test_embedding_ids_past_any_integer_named_by_the_core():
    """an id past int64 read as a wrapped integer (-9223372036854775808) with a RuntimeWarning,
    R said "ids are out of R's integer range"; both now give the core's one text"""
    e = pg.ag_embedding(10, 4)
    for v, shown in ((3e9, "3e+09"), (-3e9, "-3e+09"), (1e300, "1e+300"), (11, "11")):
        refused(lambda v=v: e.forward(np.array([2.0, v])), pg.PyggmlrValueError,
                 f"ag_embedding: id {shown} at position 1 is out of range [0, 10) for weight "
                 "[4x10] f32 (ids are 0-based)")  # fmt: skip
    got = e.forward(np.array([2.0, 9.0])).numpy()  # whole doubles as before
    np.testing.assert_array_equal(got, e.weight.numpy()[:, [2, 9]])


def test_linear_texts_as_r():
    refused(
        lambda: pg.ag_linear(2, 3, gain=[1, 2]),
        pg.PyggmlrValueError,
        "ag_linear: gain must be a single finite number",
    )  # ggmlR's text, no value shown
    refused(
        lambda: pg.ag_linear(2, 3, init="he"),
        pg.PyggmlrValueError,
        "ag_linear: 'arg' should be one of \u201cglorot_uniform\u201d, \u201corthogonal\u201d "
        "(init = 'he')",
    )
    refused(
        lambda: pg.ag_linear(2, 3, activation=1),
        pg.PyggmlrValueError,
        "ag_linear: activation must be one of 'gelu', 'relu', 'sigmoid', 'softmax', 'tanh' "
        "or None, got 1",
    )
    assert pg.ag_linear(2, 3, init="orth").init == "orthogonal"  # a unique prefix still names one


def test_dropout_rate_is_the_core_rule():
    refused(
        lambda: pg.ag_dropout(True),
        pg.ArgumentError,
        "ag_dropout: rate must be a finite number in [0, 1), got bool True",
    )  # was 1.0
    refused(
        lambda: pg.ag_dropout(float("nan")),
        pg.PyggmlrValueError,
        "ag_dropout: rate must be a finite number in [0, 1), got nan",
    )
    assert pg.ag_dropout(0).rate == 0.0 and pg.ag_dropout(np.float32(0.5)).rate == 0.5


def test_conv_layer_needs_a_kernel_size():
    refused(
        lambda: pg.ag_conv2d(1, 2, None),
        pg.ArgumentError,
        "ag_conv2d: kernel_size must be a number or a pair (H, W), got None",
    )  # was "got 0"


def test_normalization_statistics_are_numbers():
    for bad in (True, ["a"], [[1.0, 2.0], [3.0]]):
        with pytest.raises(pg.ArgumentError, match="^ag_normalization: mean must be a non-empty"):
            pg.ag_normalization(mean=bad, variance=[1.0])
    n = pg.ag_normalization(mean=np.array([1, 2], dtype=np.int32), variance=[1.0, 4.0])
    np.testing.assert_array_equal(n.mean.numpy(), [[1.0], [2.0]])


def test_dtype_and_device_name_the_function():
    refused(
        lambda: pg.ag_tensor([1.0], dtype="i8"),
        pg.DTypeError,
        "ag_tensor: dtype must be 'f32' or 'f64', got 'i8'",
    )
    refused(
        lambda: pg.ag_param([1.0], dtype=2),
        pg.DTypeError,
        "ag_param: dtype must be 'f32' or 'f64', got 2",
    )
    before = pg.ag_default_dtype()
    refused(
        lambda: pg.ag_dtype("x"), pg.DTypeError, "ag_dtype: dtype must be 'f32' or 'f64', got 'x'"
    )
    assert pg.ag_default_dtype() == before  # a refused call changes nothing
    refused(
        lambda: pg.ag_tensor([1.0], device="tpu"),
        pg.PyggmlrValueError,
        "ag_tensor(): device must be 'cpu' or 'gpu', got 'tpu'",
    )
    refused(
        lambda: pg.ag_to_device(pg.ag_tensor([1.0]), "tpu"),
        pg.PyggmlrValueError,
        "ag_to_device(): device must be 'cpu' or 'gpu', got 'tpu'",
    )


def test_forward_refusals_name_the_layer():
    refused(
        lambda: pg.ag_layer_norm(2)("a"),
        pg.DTypeError,
        "ag_layer_norm: expected a numeric matrix, vector or ag_tensor, got str",
    )
    refused(
        lambda: pg.ag_conv2d(1, 2, 3)(np.array([["a"]])),
        pg.DTypeError,
        "ag_conv2d: expected a numeric matrix, vector or ag_tensor, got dtype <U1",
    )
    refused(
        lambda: pg.ag_pad1d(1)(np.ones((1, 1, 3))),
        pg.ShapeError,
        "ag_pad1d: tensors are 2-D matrices [features, batch]; got a 1x1x3 array",
    )
    refused(
        lambda: pg.ag_sequential(pg.ag_linear(2, 2), None),
        pg.ArgumentError,
        "ag_sequential: layer 2 has no forward function (got None)",  # R's: the value
    )


def test_refused_constructors_draw_nothing():
    pg.ggml_set_seed(5)
    before = pg.random.get_state()
    for call in (
        lambda: pg.ag_dropout("a"),
        lambda: pg.ag_linear(2, 3, init="x"),
        lambda: pg.ag_conv1d(1, 2, None),
        lambda: pg.ag_linear(2, 3, gain=True),
    ):
        with pytest.raises(pg.PyggmlrError):
            call()
    assert np.array_equal(pg.random.get_state(), before)


def test_conv_arguments_in_r_order():
    refused(
        lambda: pg.ag_conv2d(1, 2, 3, padding=True, dilation=None),
        pg.ArgumentError,
        "ag_conv2d: padding must be a number or a pair (H, W), got True",
    )
    refused(
        lambda: pg.ag_conv_transpose2d(1, 2, 3, output_padding=True, groups=None),
        pg.ArgumentError,
        "ag_conv_transpose2d: output_padding must be a number or a pair (H, W), got True",
    )
    refused(
        lambda: pg.ag_conv1d(1, 2, 3, groups="a"),
        pg.ArgumentError,
        "ag_conv1d: groups must be an integer >= 1, got 'a'",
    )  # the core's value text's words
    refused(
        lambda: pg.ag_conv1d(1, 2, 3, groups=0),
        pg.PyggmlrValueError,
        "ag_conv1d: groups must be an integer >= 1, got 0",
    )


def test_huge_layer_counts_refused_at_once():
    for kind in (pg.ag_lstm, pg.ag_gru, pg.ag_rnn):  # the count in closed form, not a loop
        with pytest.raises(pg.PyggmlrMemoryError, match=r"num_layers = 2147483647 \("):
            kind(2, 3, num_layers=2**31 - 1, bidirectional=True)
    with pytest.raises(pg.PyggmlrMemoryError, match=r"for a \[1x9223090559730712576\] weight"):
        pg.ag_conv_transpose2d(1, 2**31 - 1, 65535)  # fan_in as R's double shows it
    for f in ("ag_conv1d", "ag_conv2d", "ag_conv_transpose1d", "ag_conv_transpose2d"):
        for kw in ("kernel_size", "stride", "padding", "dilation"):  # the op's limit, at once
            a = {"in_channels": 1, "out_channels": 1, "kernel_size": 3, kw: 65536}
            refused(
                lambda f=f, a=a: getattr(pg, f)(**a),
                pg.PyggmlrValueError,
                f"{f}: kernel_size, stride, padding and dilation must be at most 65535",
            )
        getattr(pg, f)(1, 1, 3, stride=65535, padding=65535, dilation=65535)  # the limit itself
