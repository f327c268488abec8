"""Parity case for summary(model) (native/layer_shape.c): R's print(summary(model)) and
Python's str(summary(model)) are the same bytes for a CNN (convolution, batch norm, pooling,
transposed convolution, padding), a 1-D signal model, a recurrent model, a model with a custom
layer and a single layer; print() of every built-in layer alone (the core's line). The R half
is summary.R."""

from __future__ import annotations

from typing import Any, Dict, List

import numpy as np

from .core import CASES, Record, ScriptCase, call_r

NAMES = ("cnn", "signal", "rnn", "custom", "layer")


class my_scale:  # noqa: N801  (R's class name: the table shows it)
    """R's custom list layer (summary.R): x * 2 with one [5, 1] parameter."""

    def __init__(self, pg: Any) -> None:
        self.s = pg.ag_param(np.ones((5, 1)))

    def forward(self, x: Any) -> Any:
        return x * 2

    def parameters(self) -> Dict[str, Any]:
        return {"s": self.s}


def _models(pg: Any) -> List[Any]:
    return [
        pg.ag_sequential(
            pg.ag_conv2d(1, 8, 3, padding=1, input_shape=(1, 8, 8)),
            pg.ag_batch_norm(512),
            pg.ag_max_pool2d(2),
            pg.ag_conv_transpose2d(8, 4, 2, stride=2),
            pg.ag_avg_pool2d(2),
            pg.ag_pad2d((1, 2)),
            pg.ag_flatten(),
            pg.ag_linear(192, 3),
        ),
        pg.ag_sequential(
            pg.ag_conv1d(3, 8, 5, input_shape=(3, 32)),
            pg.ag_max_pool1d(2),
            pg.ag_upsample1d(2),
            pg.ag_pad1d((1, 2)),
            pg.ag_global_avg_pool(),
            pg.ag_linear(8, 2, "softmax"),
        ),
        pg.ag_sequential(
            pg.ag_linear(4, 12),
            pg.ag_lstm(3, 5, bidirectional=True, return_sequences=True),
            pg.ag_gru(10, 4),
            pg.ag_dropout(0.1),
            pg.ag_linear(4, 2),
        ),
        pg.ag_sequential(
            pg.ag_linear(2, 5),
            my_scale(pg),
            pg.ag_dropout(0.5),
            pg.ag_layer_norm(5),
            pg.ag_linear(5, 1),
        ),  # fmt: skip
        pg.ag_conv_transpose2d(
            2, 3, 3, stride=2, padding=1, output_padding=1, input_shape=(2, 4, 4)
        ),  # fmt: skip
    ]


def _as_bytes(s: str) -> Any:
    return np.frombuffer(s.encode(), dtype=np.uint8).astype(np.float64)


def _py(d: Dict[str, Any], steps: int, dtype: str) -> List[Record]:
    import pyggmlr as pg

    pg.ggml_set_seed(int(d["seed"][0]))
    texts = [str(pg.summary(m)) for m in _models(pg)]
    assert "(4, 8, 8)" in texts[0] and "?" in texts[3]  # shapes known, and an unknown one
    return [{f"{n} table": _as_bytes(t) for n, t in zip(NAMES, texts)}]


def _r(d: Dict[str, Any], steps: int, dtype: str) -> List[Record]:
    res = call_r("parity_summary_text", seed=int(d["seed"][0]))
    texts = [str(s) for s in np.atleast_1d(res)]
    assert len(texts) == len(NAMES) and "(4, 8, 8)" in texts[0], texts
    return [{f"{n} table": _as_bytes(t) for n, t in zip(NAMES, texts)}]


CASES.append(
    ScriptCase("summary text: CNN, 1-D, RNN, custom, one layer", _py, _r, 1,
               lambda rng: {"seed": np.array([7.0])}, group="layers")
)  # fmt: skip


def _alone(pg: Any) -> List[Any]:
    """Every built-in layer printed alone but ag_linear, ag_layer_norm and ag_normalization
    (ggmlR's own prints, tested apart); the GRU in eval mode."""
    gru = pg.ag_gru(1, 32)
    pg.ag_eval(gru)
    return [
        pg.ag_lstm(2, 3, num_layers=2, bidirectional=True, dropout=0.25),
        gru,
        pg.ag_rnn(4, 5, nonlinearity="relu", return_sequences=True),
        pg.ag_conv2d(1, 4, 3, input_shape=(1, 8, 8), activation="relu"),
        pg.ag_conv1d(2, 3, 3),
        pg.ag_conv_transpose2d(2, 3, 3),
        pg.ag_conv_transpose1d(2, 3, 3),
        pg.ag_max_pool2d(2),
        pg.ag_avg_pool1d(2),
        pg.ag_global_avg_pool(),
        pg.ag_global_max_pool(),
        pg.ag_flatten(),
        pg.ag_pad2d(1),
        pg.ag_pad1d((1, 2), mode="reflect"),
        pg.ag_upsample2d(2),
        pg.ag_upsample1d(2, mode="linear"),
        pg.ag_multihead_attention(8, 2),
        pg.ag_embedding(10, 4),
        pg.ag_batch_norm(4),
        pg.ag_dropout(0.5),
    ]


def _py_alone(d: Dict[str, Any], steps: int, dtype: str) -> List[Record]:
    import pyggmlr as pg

    pg.ggml_set_seed(int(d["seed"][0]))
    text = "\n".join(repr(m) for m in _alone(pg))
    assert "ag_gru: gru(1, 32) (3360 parameters, eval mode)" in text, text
    return [{"prints": _as_bytes(text)}]


def _r_alone(d: Dict[str, Any], steps: int, dtype: str) -> List[Record]:
    res = call_r("parity_print_text", seed=int(d["seed"][0]))
    return [{"prints": _as_bytes(str(np.atleast_1d(res)[0]))}]


CASES.append(
    ScriptCase("print text: each built-in layer alone", _py_alone, _r_alone, 1,
               lambda rng: {"seed": np.array([7.0])}, group="layers")
)  # fmt: skip
