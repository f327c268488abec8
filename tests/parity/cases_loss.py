"""Parity cases for the losses beyond ggmlR's (ops_loss.py, R's loss.R): each loss's value and
gradient, R against Python on the same inputs, and ag_fit trained with each new loss name. No
ggmlR column: ggmlR has none of these losses."""

from __future__ import annotations

from typing import Any, Dict, List

import numpy as np

from .cases_models import ARCHS, fit_cases_on, linear_shapes
from .core import CASES, Case, Record, _u


def _inputs(rng: Any) -> Dict[str, Any]:
    """Logits, [0, 1] targets, free targets and non-negative weights of every broadcast shape."""
    return {
        "x": _u(rng, 4, 6, lo=-3, hi=3),
        "probs": rng.uniform(0.0, 1.0, size=(4, 6)),
        "target": _u(rng, 4, 6),
        "w": rng.uniform(0.0, 2.0, size=(4, 6)),
        "wcol": rng.uniform(0.0, 2.0, size=(4, 1)),
        "wrow": rng.uniform(0.0, 2.0, size=(1, 6)),
        "ids": np.array([0, 3, 1, 1, 2, 3]),  # drawn last: the cases above keep their inputs
        "pw": rng.uniform(0.2, 3.0, size=4),
        "cw": rng.uniform(0.2, 3.0, size=4),
    }


def _case(name: str, f: Any) -> None:
    def fn(P: Any, d: Dict[str, Any], steps: int) -> List[Record]:
        x = P.ag_param(d["x"])
        loss = P.tape(lambda: f(P, x, d))
        g = P.backward(loss)
        return [{"loss": P.np(loss), "grad": P.grad(g, x)}]

    CASES.append(Case(f"loss:{name}", "loss", fn, 1, _inputs, ggmlr=False))


_case(
    "binary_cross_entropy of sigmoid",
    lambda P, x, d: P.ag_binary_cross_entropy_loss(P.ag_sigmoid(x), d["probs"]),
)
_case(
    "binary_cross_entropy at p = 0 and 1",
    lambda P, x, d: P.ag_binary_cross_entropy_loss(
        P.ag_clamp(P.ag_scale(x, 0.4), 0.0, 1.0), d["probs"]
    ),
)
_case("bce_with_logits", lambda P, x, d: P.ag_bce_with_logits_loss(x, d["probs"]))
_case(
    "bce_with_logits large logits",
    lambda P, x, d: P.ag_bce_with_logits_loss(P.ag_scale(x, 40.0), d["probs"]),
)
_case("huber delta 1", lambda P, x, d: P.ag_huber_loss(x, d["target"]))
_case("huber delta 0.7", lambda P, x, d: P.ag_huber_loss(x, d["target"], delta=0.7))
_case("mae", lambda P, x, d: P.ag_mae_loss(x, d["target"]))
_case("mae with ties (d = 0)", lambda P, x, d: P.ag_mae_loss(P.ag_relu(x), np.zeros((4, 6))))
_case("weighted_mse full", lambda P, x, d: P.ag_weighted_mse_loss(x, d["target"], d["w"]))
_case("weighted_mse column", lambda P, x, d: P.ag_weighted_mse_loss(x, d["target"], d["wcol"]))
_case("weighted_mse row", lambda P, x, d: P.ag_weighted_mse_loss(x, d["target"], d["wrow"]))
_case("weighted_mse scalar", lambda P, x, d: P.ag_weighted_mse_loss(x, d["target"], 0.3))


# ---- torch's options (issue 31): pos_weight, and cross-entropy's weight / ignore_index /
# label_smoothing on ids and on a probability matrix
_case(
    "bce_with_logits pos_weight vector",
    lambda P, x, d: P.ag_bce_with_logits_loss(x, d["probs"], pos_weight=d["pw"]),
)
_case(
    "bce_with_logits pos_weight scalar",
    lambda P, x, d: P.ag_bce_with_logits_loss(x, d["probs"], pos_weight=2.5),
)
_case(
    "binary_cross_entropy pos_weight",
    lambda P, x, d: P.ag_binary_cross_entropy_loss(P.ag_sigmoid(x), d["probs"], pos_weight=d["pw"]),
)
_case(
    "softmax_ce weight",
    lambda P, x, d: P.ag_softmax_cross_entropy_loss(x, d["ids"], weight=d["cw"]),
)
_case(
    "softmax_ce ignore_index",
    lambda P, x, d: P.ag_softmax_cross_entropy_loss(x, d["ids"], ignore_index=1),
)
_case(
    "softmax_ce label_smoothing",
    lambda P, x, d: P.ag_softmax_cross_entropy_loss(x, d["ids"], label_smoothing=0.2),
)
_case(
    "softmax_ce weight + ignore_index + smoothing",
    lambda P, x, d: P.ag_softmax_cross_entropy_loss(
        x, d["ids"], weight=d["cw"], ignore_index=3, label_smoothing=0.25
    ),
)
_case(
    "softmax_ce probabilities, weight + smoothing",
    lambda P, x, d: P.ag_softmax_cross_entropy_loss(
        x, P.ag_softmax(P.ag_tensor(d["target"])), weight=d["cw"], label_smoothing=0.1
    ),
)

# ---- ag_fit with each new loss name: the whole loop in each language (cases_models' ag_fit)

ARCHS.setdefault(
    "mlp_sigmoid",
    (
        'ag_sequential(ag_linear(4, 6, "relu"), ag_linear(6, 3, "sigmoid"))',
        {**linear_shapes(1, 4, 6), **linear_shapes(2, 6, 3)},
        {},
    ),
)


def _probs(rng: Any, n: int, loss: str) -> Any:
    return rng.uniform(0.0, 1.0, size=(3, n))  # in [0, 1]: a valid target of every loss here


# fmt: off
fit_cases_on([
    ("bce, sigmoid output, adamw, val 0.25", 24,
     "mlp_sigmoid", "adamw", 0.02, 0.01, False, "binary_cross_entropy", 4, 4, 0.25),
    ("bce_with_logits, sgd, accum 2x4, schedule", 24,
     "mlp", "sgd", 0.1, None, True, "bce_with_logits", 4, 8, 0.0),
    ("huber, 'adamw', batch_norm, val 0.2", 30,
     "bn", "adamw_str", 0.02, None, False, "huber", 5, 5, 0.2),
    ("mae, sgd", 24,
     "mlp", "sgd", 0.1, None, False, "mae", 6, 6, 0.0),
], target=_probs)
# fmt: on


# ---- binary classification (issue 31): a 1-output model on 0/1 targets, so the History's
# accuracy / val_accuracy columns (binary accuracy, counted in C) are compared to the bit

ARCHS.setdefault(
    "mlp_1out",
    (
        'ag_sequential(ag_linear(4, 6, "relu"), ag_linear(6, 1))',
        {**linear_shapes(1, 4, 6), **linear_shapes(2, 6, 1)},
        {},
    ),
)
ARCHS.setdefault(
    "mlp_1prob",
    (
        'ag_sequential(ag_linear(4, 6, "relu"), ag_linear(6, 1, "sigmoid"))',
        {**linear_shapes(1, 4, 6), **linear_shapes(2, 6, 1)},
        {},
    ),
)


def _labels01(rng: Any, n: int, loss: str) -> Any:
    return (rng.uniform(0.0, 1.0, size=(1, n)) > 0.5).astype(np.float64)  # 0/1 labels


# fmt: off
fit_cases_on([
    ("binary acc: bce_with_logits, 1 out, val 0.25", 28,
     "mlp_1out", "adamw", 0.02, 0.01, False, "bce_with_logits", 4, 4, 0.25),
    ("binary acc: bce of sigmoid, sgd, val 0.2", 30,
     "mlp_1prob", "sgd", 0.5, None, False, "binary_cross_entropy", 5, 5, 0.2),
], target=_labels01)
# fmt: on
