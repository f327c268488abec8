import gc

import numpy as np
import pytest

import pyggmlr as pg


@pytest.fixture(autouse=True)
def _fresh_state():
    """Each test starts with f32 default, an empty tape and no open tape scope."""
    prev = pg.ag_dtype("f32")
    pg.ag_tape_clear()
    yield
    pg.ag_dtype(prev)
    pg.ag_tape_clear()


@pytest.fixture
def f64():
    pg.ag_dtype("f64")
    yield
    pg.ag_dtype("f32")


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def live_counts():
    gc.collect()
    pg.ag_tape_clear()
    return pg._core.lib.pg_live_objects()
