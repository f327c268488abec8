import gc
import os

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


def current_bytes():
    """Bytes the core holds now (its allocator's count)."""
    return pg.ag_memory_stats()["total"]["current"]


def itemsize():
    return 4 if pg.ag_default_dtype() == "f32" else 8


# ---- leak check (tests/test_leaks.py documents it): after each test module, with its objects
# ---- deleted and gc.collect(), the core's live objects and current bytes are back where the
# ---- module started. PYGGMLR_LEAK_CHECK=0 turns it off.
def _core_counts():
    for _ in range(3):
        gc.collect()
    pg.ag_tape_clear()
    st = pg._core.ffi.new("pg_memory_counts *")
    pg._core.lib.pg_memory_stats(st)
    return {
        "live objects": pg._core.lib.pg_live_objects(),
        "bytes": st.total,
        "tensors": st.live_tensors,
        "gradient maps": st.live_gradmaps,
        "optimizers": st.live_optims,
    }


@pytest.fixture(scope="module", autouse=True)
def _module_leak_check(request):
    if os.environ.get("PYGGMLR_LEAK_CHECK", "1") == "0":
        yield
        return
    before = _core_counts()
    yield
    after = _core_counts()
    if after != before:
        pytest.fail(
            f"{request.module.__name__} leaked core objects: before {before}, after {after}",
            pytrace=False,
        )


# ---- end of the leak check
