"""ag_fit(validation_data=) in Python and in R (a standalone Rscript) from the same seed: the same
history and weights to the last bit (the loader / validation_data rules exist in both)."""

import shutil
import subprocess

import numpy as np
import pytest

import pyggmlr as pg

_R = r"""
suppressMessages(library(pyggmlr))
set.seed(3); x <- matrix(rnorm(160), 4, 40); y <- floor(runif(40) * 3)
ggml_set_seed(5)
m <- ag_sequential(ag_linear(4, 6, activation = "tanh"), ag_linear(6, 3))
h <- ag_fit(m, x[, 1:30], y[1:30], validation_data = list(x[, 31:40], y[31:40]), batch_size = 5L, nepoch = 3L,
            seed = 2L, silent = TRUE, static = FALSE)
cat(sprintf("%.17g", c(h$loss, h$val_loss, unlist(lapply(m$parameters(), function(t) as.vector(t$data))))), "\n")
"""


def _have_r():
    if not shutil.which("Rscript"):
        return False
    return (
        subprocess.run(
            ["Rscript", "-e", "quit(status = !requireNamespace('pyggmlr', quietly = TRUE))"],
            capture_output=True,
        ).returncode
        == 0
    )


def test_validation_data_same_bits_in_r_and_python():
    g = pg.random.Generator(3)  # R's set.seed(3); rnorm(160); runif(40)
    x = g.rnorm(160).reshape(4, 40, order="F")
    y = np.floor(g.runif(40) * 3)
    pg.ggml_set_seed(5)
    m = pg.ag_sequential(pg.ag_linear(4, 6, activation="tanh"), pg.ag_linear(6, 3))
    h = pg.ag_fit(
        m,
        x[:, :30],
        y[:30],
        validation_data=(x[:, 30:], y[30:]),
        batch_size=5,
        nepoch=3,
        seed=2,
        silent=True,
        static=False,
    )
    mine = [float(v) for v in list(h.loss) + list(h.val_loss)]
    mine += [float(w) for t in m.parameters().values() for w in t.numpy().ravel(order="F")]
    assert all(np.isfinite(mine)) and len(mine) == 6 + 4 * 6 + 6 + 6 * 3 + 3
    if not _have_r():
        pytest.skip(
            "no R with the pyggmlr package on this machine (bash scripts/install-r-package.sh): the R half cannot run"
        )
    out = subprocess.run(["Rscript", "-e", _R], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert [float(v) for v in out.stdout.split()] == mine
