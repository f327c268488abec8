"""Shared by test_training.py and test_fit_resume.py: standardised iris, the small MLP they
train and a model's weights (parameters and buffers) as arrays."""

import pyggmlr as pg


def _iris():
    x, y, _ = pg.load_iris()
    return (x - x.mean(axis=1, keepdims=True)) / x.std(axis=1, keepdims=True), y


def _mlp(seed=0, hidden=16, dropout=None, bn=False):
    pg.ggml_set_seed(seed)
    layers = [pg.ag_linear(4, hidden, "relu")]
    if bn:
        layers.append(pg.ag_batch_norm(hidden))
    if dropout:
        layers.append(pg.ag_dropout(dropout))
    layers.append(pg.ag_linear(hidden, 3))
    return pg.ag_sequential(*layers)


def _weights(model):
    d = {k: t.numpy() for k, t in model.parameters().items()}
    d.update({k: t.numpy() for k, t in model.buffers().items()})
    return d
