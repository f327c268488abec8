"""Recurrent layers: ag_lstm, ag_gru, ag_rnn (torch.nn.LSTM / GRU / RNN with batch_first, as
layers on the package's [features, batch] tensors). The whole sequence runs in one core op per
layer and direction (native/ops_rnn.c): forward, exact backpropagation through time, replayed
by ag_compile. This file only checks arguments, draws the weights and stacks the ops.

A sequence batch is x [F*T, N]: column n is one sequence in numpy's (T, F) C-order, i.e.
torch's batch_first (N, T, F) as ``x.reshape(N, -1).T``."""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import Any, Dict, List, Tuple, Union

from .._args import check_flag, check_int, check_num, plain
from .._core import NULL, lib
from ..errors import ArgumentError, PyggmlrValueError, ShapeError
from ..tensor import ArrayLike, Tensor, _wrap, ag_param
from .base import Module, _as_tensor, _config, _dropout, _fmt_num, _layer_memory, _uniform

__all__ = ["ag_lstm", "ag_gru", "ag_rnn"]

_MODES = {"lstm": lib.PG_RNN_LSTM, "gru": lib.PG_RNN_GRU}
_GATES = {"lstm": 4, "gru": 3, "rnn": 1}


class _Recurrent(Module):
    """The shared body of ag_lstm, ag_gru and ag_rnn (see ag_lstm)."""

    kind = "rnn"

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        dropout: float = 0,
        bidirectional: bool = False,
        return_sequences: bool = False,
        nonlinearity: str = "tanh",
        return_state: bool = False,
    ) -> None:
        fn = f"ag_{self.kind}"
        self.input_size = check_int(input_size, fn, "input_size", 1)
        self.hidden_size = check_int(hidden_size, fn, "hidden_size", 1)
        self.num_layers = check_int(num_layers, fn, "num_layers", 1)
        self.bias = check_flag(bias, fn, "bias")
        self.dropout = check_num(dropout, fn, "dropout", 0, 1, hi_open=True)
        self.bidirectional = check_flag(bidirectional, fn, "bidirectional")
        self.return_sequences = check_flag(return_sequences, fn, "return_sequences")
        self.return_state = check_flag(return_state, fn, "return_state")
        if self.kind == "rnn":
            # (`in` on an array raised numpy's "truth value is ambiguous": issue 29)
            if not isinstance(nonlinearity, str) or nonlinearity not in ("tanh", "relu"):
                raise PyggmlrValueError(
                    f"{fn}: nonlinearity must be 'tanh' or 'relu', got {plain(nonlinearity)!r}"
                )
            self.nonlinearity = nonlinearity
            self._mode = lib.PG_RNN_TANH if nonlinearity == "tanh" else lib.PG_RNN_RELU
        else:
            self._mode = _MODES[self.kind]
        H, G, D = self.hidden_size, _GATES[self.kind], 2 if self.bidirectional else 1
        a = 1.0 / math.sqrt(H)  # torch's default: every tensor U(-1/sqrt(hidden), 1/sqrt(hidden))
        b = 2 if self.bias else 0  # the values to allocate, closed form: a sum over
        # num_layers = 2^31 - 1 layers hung before the memory check could refuse them (issue 29)
        n = D * G * H * ((self.input_size + H + b) + (self.num_layers - 1) * (D * H + H + b))
        what = (
            f"for input_size = {self.input_size}, hidden_size = {H}, num_layers = {self.num_layers}"
        )
        self._names: List[str] = []
        with _layer_memory(fn, what, float(n)):
            for li in range(self.num_layers):
                f_in = self.input_size if li == 0 else D * H
                for k in range(D):
                    sx = f"_l{li}" + ("_reverse" if k else "")
                    shapes = [("W_ih", G * H, f_in), ("W_hh", G * H, H)]
                    if self.bias:
                        shapes += [("b_ih", G * H, 1), ("b_hh", G * H, 1)]
                    for nm, r, c in shapes:  # torch's order, one draw each, column-major
                        setattr(self, nm + sx, ag_param(_uniform(a, r, c, fn)))
                        self._names.append(nm + sx)
        self.training = True

    @property
    def name(self) -> str:
        extra = ", relu" if getattr(self, "nonlinearity", "tanh") == "relu" else ""
        if self.num_layers > 1:
            extra += f", num_layers={self.num_layers}"
        if self.bidirectional:
            extra += ", bidirectional"
        if self.dropout:
            extra += f", dropout={_fmt_num(self.dropout)}"
        if self.return_sequences:
            extra += ", return_sequences"
        if self.return_state:
            extra += ", return_state"
        return f"{self.kind}({self.input_size}, {self.hidden_size}{extra})"

    @property
    def output_size(self) -> int:
        """Rows per time step of the output: hidden_size, twice that when bidirectional."""
        return self.hidden_size * (2 if self.bidirectional else 1)

    def parameters(self) -> OrderedDict[str, Tensor]:
        """Per layer l and direction, torch's tensors: ``W_ih_l<l>`` [G*hidden, in],
        ``W_hh_l<l>`` [G*hidden, hidden], ``b_ih_l<l>``, ``b_hh_l<l>`` [G*hidden, 1] (with
        ``_reverse`` for the second direction); G = 4 (LSTM), 3 (GRU), 1 (RNN)."""
        return OrderedDict((nm, getattr(self, nm)) for nm in self._names)

    def _states(self, s: Any, arg: str, like: Tensor, N: int) -> List[Any]:
        """h0 / c0 as one [hidden, N] tensor per layer and direction (torch's order), from a
        list of them or one [num_layers*D*hidden, N] tensor; None: zeros."""
        fn, H = f"ag_{self.kind}", self.hidden_size
        k = self.num_layers * (2 if self.bidirectional else 1)
        if s is None:
            return [None] * k
        if isinstance(s, (list, tuple)):
            if len(s) != k:
                raise ShapeError(
                    f"{fn}: {arg} has {len(s)} states, expected {k} (one [hidden_size, batch] per "
                    f"layer and direction)"
                )
            return [_as_tensor(v, fn, like) for v in s]
        t = _as_tensor(s, fn, like)
        if t.shape != (k * H, N):
            raise ShapeError(
                f"{fn}: {arg} is [{t.shape[0]}x{t.shape[1]}] but must be [{k * H}, {N}] "
                f"(num_layers * directions * hidden_size, batch)"
            )
        if k == 1:
            return [t]
        return [_wrap(lib.pg_slice_rows(t._p, i * H, H)) for i in range(k)]

    def forward(  # type: ignore[override]  # return_state: a tuple, as torch's (out, h_n)
        self, x: ArrayLike, h0: Any = None, c0: Any = None
    ) -> Union[Tensor, Tuple[Tensor, ...]]:
        """x [input_size*T, batch] (column n: sequence n, time steps' features stacked) ->
        [D*hidden*T, batch] with return_sequences (time step t's block: the forward state, then
        the backward one), else the last step's [D*hidden, batch] (bidirectional: forward's
        state at T and backward's at 1, torch's h_n). h0 (and the LSTM's c0): initial states,
        [hidden, batch] per layer and direction as a list or stacked; None: zeros.
        With return_state: a tuple (output, h_n) (ag_lstm: (output, h_n, c_n)), h_n and c_n
        the final states stacked [num_layers*D*hidden, batch] in torch's order (layer-major,
        direction-minor: block l*D + k), which h0 / c0 take back.
        Raises ShapeError (rows not a multiple of input_size, bad state shapes), DTypeError."""
        fn = f"ag_{self.kind}"
        W0 = getattr(self, self._names[0])
        x = _as_tensor(x, fn, W0)
        if c0 is not None and self.kind != "lstm":
            raise ArgumentError(f"{fn}: c0 (an initial cell state) is for ag_lstm only")
        F, H = self.input_size, self.hidden_size
        rows, N = x.shape
        if rows < F or rows % F:
            raise ShapeError(
                f"{fn}: x is [{rows}x{N}], its rows are not a multiple of input_size = {F}; x is "
                f"[input_size*T, batch], each column one sequence with the time steps' features "
                f"stacked (numpy (N, T, F) as x.reshape(N, -1).T)"
            )
        T = rows // F
        hs, cs = self._states(h0, "h0", W0, N), self._states(c0, "c0", W0, N)
        D = 2 if self.bidirectional else 1
        seq: Tensor = x
        outs: List[Tensor] = []
        # the final states per layer and direction; the LSTM's cells come out of the op
        hn: List[Tensor] = []
        cn: List[Tensor] = []
        cell = self.return_state and self.kind == "lstm"
        for li in range(self.num_layers):
            if li and self.dropout and self.training:
                seq = _dropout(seq, self.dropout)
            outs = []
            for k in range(D):
                sx = f"_l{li}" + ("_reverse" if k else "")
                p = [
                    getattr(self, nm + sx)._p if self.bias or nm[0] == "W" else NULL
                    for nm in ("W_ih", "W_hh", "b_ih", "b_hh")
                ]
                h, c = hs[li * D + k], cs[li * D + k]
                o = _wrap(
                    lib.pg_rnn(
                        self._mode,
                        seq._p,
                        *p,
                        h._p if h is not None else NULL,
                        c._p if c is not None else NULL,
                        k | (lib.PG_RNN_CELL if cell else 0),
                    )
                )
                if cell:  # [H*T + H, N]: the hidden states over the last cell state
                    cn.append(_wrap(lib.pg_slice_rows(o._p, T * H, H)))
                    o = _wrap(lib.pg_slice_rows(o._p, 0, T * H))
                outs.append(o)
                top = li == self.num_layers - 1 and not self.return_sequences
                if self.return_state or top:
                    hn.append(_wrap(lib.pg_slice_rows(o._p, (T - 1) * H if k == 0 else 0, H)))
            seq = (
                outs[0]
                if D == 1
                else _wrap(lib.pg_seq_concat(outs[0]._p, outs[1]._p, T, fn.encode()))
            )
        if self.return_sequences:
            out = seq
        else:
            out = hn[-D] if D == 1 else _wrap(lib.pg_concat_rows(hn[-2]._p, hn[-1]._p))
        if not self.return_state:
            return out
        states = [_stack(hn)] + ([_stack(cn)] if cell else [])
        return (out, *states)

    def to_config(self) -> Dict[str, Any]:
        f = [
            "input_size",
            "hidden_size",
            "num_layers",
            "bias",
            "dropout",
            "bidirectional",
            "return_sequences",
            "return_state",
        ]
        return _config(self, self.kind, *(f + (["nonlinearity"] if self.kind == "rnn" else [])))


def _stack(ts: List[Tensor]) -> Tensor:
    """[hidden, N] tensors stacked by rows (one tensor as it is)."""
    out = ts[0]
    for t in ts[1:]:
        out = _wrap(lib.pg_concat_rows(out._p, t._p))
    return out


class ag_lstm(_Recurrent):
    """LSTM layer as torch.nn.LSTM(batch_first=True): gates i, f, g, o; c = f*c + i*g,
    h = o*tanh(c). x [input_size*T, batch] (torch's (N, T, F) as x.reshape(N, -1).T).

    Args: input_size, hidden_size, num_layers (stacked layers): integers >= 1; bias: learn
    b_ih and b_hh; dropout in [0, 1): on each stacked layer's input but the first, in training
    mode only (drawn from the current random stream); bidirectional: a second direction running
    time backwards; return_sequences: output every step ([D*hidden*T, batch]) or the last
    ([D*hidden, batch]); return_state: forward returns (output, h_n, c_n) (ag_gru, ag_rnn:
    (output, h_n)), the final states [num_layers*D*hidden, batch] (torch's h_n, c_n; keras'
    return_state), exact gradients through them. Weights and biases are U(-1/sqrt(hidden), 1/sqrt(hidden)) (torch's
    default) from the current random stream, the same bits as R.
    Raises: ArgumentError / PyggmlrValueError for bad arguments; forward: ShapeError,
    DTypeError (the core's texts naming ag_lstm, the argument and the shapes)."""

    kind = "lstm"

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        dropout: float = 0,
        bidirectional: bool = False,
        return_sequences: bool = False,
        return_state: bool = False,
    ) -> None:
        super().__init__(
            input_size,
            hidden_size,
            num_layers,
            bias,
            dropout,
            bidirectional,
            return_sequences,
            return_state=return_state,
        )


class ag_gru(_Recurrent):
    """GRU layer as torch.nn.GRU(batch_first=True): gates r, z, n; n = tanh(W_in x + b_in +
    r*(W_hn h + b_hn)), h = (1 - z)*n + z*h. Arguments, output and errors as ag_lstm."""

    kind = "gru"

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        dropout: float = 0,
        bidirectional: bool = False,
        return_sequences: bool = False,
        return_state: bool = False,
    ) -> None:
        super().__init__(
            input_size,
            hidden_size,
            num_layers,
            bias,
            dropout,
            bidirectional,
            return_sequences,
            return_state=return_state,
        )


class ag_rnn(_Recurrent):
    """Plain recurrent layer as torch.nn.RNN(batch_first=True): h = act(W_ih x + b_ih + W_hh h
    + b_hh), nonlinearity "tanh" or "relu". Arguments, output and errors as ag_lstm."""

    kind = "rnn"
