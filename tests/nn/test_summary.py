"""summary(model) (pyggmlr.summary, Module.summary): the core's output shapes (native/
layer_shape.c) by hand for each layer kind, against the layers' own outputs and torch's, and the
table R prints (r/tests/testthat/test-robjects.R's golden)."""

import numpy as np
import pytest

import pyggmlr as pg

torch = pytest.importorskip("torch")


def shapes(m):
    return [r["output_shape"] for r in pg.summary(m).layers]


def run(m, rows, img=None, n=2):
    """The model's output on random data: (rows, image shape or None)."""
    x = pg.ag_tensor(np.random.default_rng(0).uniform(size=(rows, n)))
    if img is not None:
        x.image_shape = img
    pg.ag_eval(m)
    y = m.forward(x)
    return y.shape[0], y.image_shape


def test_golden_table_is_rs():
    pg.ggml_set_seed(1)
    m = pg.ag_sequential(
        pg.ag_linear(4, 8, "relu"), pg.ag_dropout(0.1), pg.ag_batch_norm(8), pg.ag_linear(8, 3)
    )
    s = m.summary()
    assert isinstance(s, pg.Summary) and s.model is m
    assert [r["params"] for r in s.layers] == [40, 0, 16, 27]
    assert [r["buffers"] for r in s.layers] == [0, 0, 16, 0]
    assert (s.total, s.non_trainable) == (83, 16)
    assert s.layers[2] == {
        "layer": "batch_norm(8)",
        "type": "ag_batch_norm",
        "output_shape": "[8 x batch]",
        "params": 16,
        "buffers": 16,
    }
    assert str(s) == "\n".join(
        [
            "ag_sequential (4 layers, train mode)",
            "_______________________________________________________",
            "Layer (type)                      Output shape  Param #",
            "=======================================================",
            "1 linear(4, 8, relu) (ag_linear)  [8 x batch]        40",
            "2 dropout(0.1) (ag_dropout)       [8 x batch]         0",
            "3 batch_norm(8) (ag_batch_norm)   [8 x batch]        16",
            "4 linear(8, 3) (ag_linear)        [3 x batch]        27",
            "=======================================================",
            "Total params: 99",
            "Trainable params: 83",
            "Non-trainable params: 16",
        ]
    )
    assert repr(s) == str(s) and str(pg.summary(m)) == str(s)
    assert str(pg.ag_linear(3, 2).summary()).startswith("ag_linear\n")
    assert pg.summary(pg.ag_embedding(10, 4)).layers[0]["output_shape"] == "[4 x batch]"


def test_images_2d_by_hand_and_by_the_layers():
    m = pg.ag_sequential(
        pg.ag_conv2d(1, 16, 3, padding=1, input_shape=(1, 8, 8)),
        pg.ag_max_pool2d(2),
        pg.ag_pad2d([0, 1, 1, 0]),
        pg.ag_upsample2d(2),
        pg.ag_conv2d(16, 4, 3, stride=2, dilation=2),
        pg.ag_avg_pool2d(2, padding=1),
        pg.ag_batch_norm(16),
        pg.ag_flatten(),
        pg.ag_linear(16, 10),
    )
    assert shapes(m) == [
        "[1024 x batch] (16, 8, 8)",  # (8 + 2 - 2 - 1) / 1 + 1
        "[256 x batch] (16, 4, 4)",
        "[400 x batch] (16, 5, 5)",  # left 0, right 1, top 1, bottom 0
        "[1600 x batch] (16, 10, 10)",
        "[36 x batch] (4, 3, 3)",  # (10 - 2 * 2 - 1) / 2 + 1
        "[16 x batch] (4, 2, 2)",  # (3 + 2 - 1 - 1) / 2 + 1
        "[16 x batch] (4, 2, 2)",  # norms keep the image, as the tensors do
        "[16 x batch]",
        "[10 x batch]",
    ]
    # each prefix's output, run
    for k in range(1, len(m.layers) + 1):
        rows, img = run(pg.ag_sequential(m.layers[:k]), 64)
        want = pg.summary(m).layers[k - 1]["output_shape"]
        assert want.startswith(f"[{rows} x batch]")
        assert (img is None) == ("(" not in want)
        if img is not None:
            assert want.endswith(f"({img[0]}, {img[1]}, {img[2]})")


def test_same_valid_and_transposed_convolution_against_torch():
    for kw in (
        dict(kernel_size=3, padding="same"),
        dict(kernel_size=(3, 2), padding="valid"),
        dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 0), dilation=(1, 2)),
    ):
        conv = pg.ag_conv2d(2, 3, input_shape=(2, 7, 6), **kw)
        tk = {k: v for k, v in kw.items()}
        t = torch.nn.Conv2d(2, 3, **tk)(torch.zeros(1, 2, 7, 6)).shape
        c, h, w = t[1], t[2], t[3]
        assert shapes(conv) == [f"[{c * h * w} x batch] ({c}, {h}, {w})"]
    for kw in (
        dict(kernel_size=3, stride=2, padding=1, output_padding=1),
        dict(kernel_size=(2, 3), dilation=(1, 2)),
        dict(kernel_size=3, stride=(2, 3), padding=(0, 1), output_padding=(1, 2), groups=2),
    ):
        convt = pg.ag_conv_transpose2d(2, 4, input_shape=(2, 4, 5), **kw)
        t = torch.nn.ConvTranspose2d(2, 4, **kw)(torch.zeros(1, 2, 4, 5)).shape
        c, h, w = t[1], t[2], t[3]
        assert shapes(convt) == [f"[{c * h * w} x batch] ({c}, {h}, {w})"]
        assert run(pg.ag_sequential(convt), 40) == (c * h * w, (c, h, w))
    # no input_shape and no image before it: unknown, and what follows until a layer sets it
    m = pg.ag_sequential(pg.ag_conv2d(1, 4, 3), pg.ag_flatten(), pg.ag_linear(36, 2))
    assert shapes(m) == ["?", "?", "[2 x batch]"]


def test_signals_1d_against_torch():
    m = pg.ag_sequential(
        pg.ag_conv1d(3, 8, 5, input_shape=(3, 32)),
        pg.ag_max_pool1d(2, padding=1),
        pg.ag_pad1d([1, 2]),
        pg.ag_upsample1d(3),
        pg.ag_avg_pool1d(4, stride=2),
        pg.ag_global_avg_pool(),
        pg.ag_linear(8, 2),
    )
    t = torch.zeros(1, 3, 32)
    t = torch.nn.Conv1d(3, 8, 5)(t)
    lens = [t.shape[2]]
    t = torch.nn.functional.max_pool1d(t, 2, padding=1)
    lens.append(t.shape[2])
    t = torch.nn.functional.pad(t, (1, 2))
    lens.append(t.shape[2])
    t = torch.nn.functional.interpolate(t, scale_factor=3)
    lens.append(t.shape[2])
    t = torch.nn.functional.avg_pool1d(t, 4, stride=2)
    lens.append(t.shape[2])
    assert lens == [28, 15, 18, 54, 26]
    assert shapes(m) == [f"[{8 * n} x batch] (8, 1, {n})" for n in lens] + [
        "[8 x batch]",
        "[2 x batch]",
    ]
    assert run(m, 96) == (2, None)


def test_transposed_1d_and_crops_against_torch():
    m = pg.ag_sequential(
        pg.ag_conv_transpose1d(3, 4, 3, stride=2, output_padding=1, input_shape=(3, 10)),
        pg.ag_pad1d((-2, 1)),
        pg.ag_pad2d((1, -1, -1, 0)),
    )
    t = torch.nn.ConvTranspose1d(3, 4, 3, stride=2, output_padding=1)(torch.zeros(1, 3, 10))
    lens = [t.shape[2]]
    t = torch.nn.functional.pad(t, (-2, 1))
    lens.append(t.shape[2])
    assert lens == [22, 21]
    # cropping the one row of a 1-D signal leaves nothing (the layer refuses it): unknown
    assert shapes(m) == [f"[{4 * n} x batch] (4, 1, {n})" for n in lens] + ["?"]
    assert run(pg.ag_sequential(*m.layers[:2]), 30) == (84, (4, 1, 21))


def test_recurrent_embedding_attention_and_custom_layers():
    r = pg.ag_sequential(
        pg.ag_linear(4, 12),
        pg.ag_lstm(3, 5, bidirectional=True, return_sequences=True),
        pg.ag_gru(10, 4),
        pg.ag_rnn(4, 6, num_layers=2),
    )
    assert shapes(r) == ["[12 x batch]", "[40 x batch]", "[4 x batch]", "[6 x batch]"]
    assert run(r, 4) == (6, None)
    assert shapes(pg.ag_lstm(3, 5, return_sequences=True)) == ["?"]  # T is the data's
    assert shapes(pg.ag_gru(3, 5, return_state=True)) == ["[5 x batch]"]  # the output's rows
    assert shapes(pg.ag_multihead_attention(8, 2)) == ["[8 x batch]"]
    assert shapes(pg.ag_layer_norm(6)) == ["[6 x batch]"]

    class Double:
        def forward(self, x):
            return pg.ag_add(x, x)

    s = pg.summary(
        pg.ag_sequential(pg.ag_linear(2, 5), Double(), pg.ag_dropout(0.5), pg.ag_linear(5, 1))
    )
    assert [r["output_shape"] for r in s.layers] == ["[5 x batch]", "?", "?", "[1 x batch]"]
    assert s.layers[1]["layer"] == "Double" and s.layers[1]["type"] == "Double"
    # a nested sequential is walked (its layers may be custom): the row shows its output
    n = pg.ag_sequential(pg.ag_linear(3, 4), pg.ag_sequential(pg.ag_linear(4, 6), Double()))
    assert shapes(n) == ["[4 x batch]", "?"]
    n = pg.ag_sequential(
        pg.ag_linear(3, 4), pg.ag_sequential(pg.ag_dropout(0.1), pg.ag_linear(4, 6))
    )
    assert shapes(n) == ["[4 x batch]", "[6 x batch]"]


def test_fitted_model_adds_the_target_lines():
    pg.ggml_set_seed(2)
    m = pg.ag_sequential(pg.ag_linear(4, 3))
    x = np.random.default_rng(0).normal(size=(4, 12))
    y = np.array(["a", "b", "c"] * 4)
    pg.ag_fit(m, x, y, loss="cross_entropy", nepoch=1, batch_size=12, silent=True, seed=1)
    lines = str(m.summary()).split("\n")
    assert lines[-2:] == ["  loss: cross_entropy", "  classes (3): a, b, c"]
    assert lines[-3] == "Non-trainable params: 0"


def test_thousands_and_unicode_widths():
    m = pg.ag_sequential(pg.ag_linear(1000, 1000), pg.ag_linear(1000, 2))
    text = str(m.summary())
    assert "1,001,000" in text and "Total params: 1,003,002" in text

    class Café:
        def forward(self, x):
            return x

    lines = str(pg.summary(pg.ag_sequential(Café(), pg.ag_linear(2, 1)))).split("\n")
    assert lines[4].index("?") == lines[5].index("[1 x batch]")  # aligned by characters


def test_fit_hint_reads_the_core_rows():
    from pyggmlr.fit.util import _input_rows

    r = pg.ag_sequential(pg.ag_lstm(3, 5, return_sequences=True), pg.ag_linear(10, 4))
    assert _input_rows(r[0], 6) == 10 and _input_rows(r, 6) == 4 and _input_rows(r[0], -1) is None

    class Same:
        def forward(self, x):
            return x

    assert _input_rows(pg.ag_sequential(pg.ag_linear(2, 3), Same()), 2) is None
    for bad in (7, None, pg.ag_tensor([[1.0]])):  # not models: refused, naming the kind
        with pytest.raises(
            pg.ArgumentError, match=f"^summary: model must be .* got {type(bad).__name__}$"
        ):
            pg.summary(bad)
    fn = pg.summary(lambda x: x)  # a callable is a custom layer: unknown shape
    assert fn.layers == [
        {"layer": "function", "type": "function", "output_shape": "?", "params": 0, "buffers": 0}
    ]


def test_numpy_input_shapes_and_normalization_text():
    """A numpy vector serves as input_shape wherever a list does (the conv layers and the
    global pooling op refused one), and ag_normalization writes shapes as [RxC], as R's."""
    x = pg.ag_tensor(np.ones((12, 2)))
    assert pg.ag_global_avg_pool_op(x, input_shape=np.array([2, 6])).shape == (2, 2)
    assert pg.ag_global_avg_pool_op(x, input_shape=[2, 6]).shape == (2, 2)
    conv = pg.ag_conv2d(1, 1, 3, input_shape=np.array([1, 4, 4]))
    assert (
        conv.to_config()["input_shape"]
        == pg.ag_conv2d(1, 1, 3, input_shape=(1, 4, 4)).to_config()["input_shape"]
    )
    with pytest.raises(pg.ShapeError, match=r"features = 3 but x has 2 rows \(\[2x3\]\)$"):
        pg.ag_normalization(np.ones((2, 3)), features=3)
