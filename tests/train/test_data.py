"""ag_dataloader (ggmlR's test-ag-training.R dataloader block, plus drop_last / seeds) and iris."""

import numpy as np
import pytest

import pyggmlr as pg


def _xy(n=64, f=4):
    x = np.arange(f * n, dtype=np.float64).reshape(f, n, order="F")  # column j holds j*f .. j*f+f-1
    y = np.arange(n, dtype=np.float64).reshape(1, n)  # y = sample index
    return x, y


def test_n_batches_and_shapes():
    x, y = _xy(64)
    dl = pg.ag_dataloader(x, y, batch_size=16, shuffle=False)
    assert dl.n_batches() == 4 and len(dl) == 4
    b = dl.next_batch()
    assert b["x"].shape == (4, 16) and b.y.shape == (1, 16)
    assert not b["x"].requires_grad
    assert pg.ag_dataloader(x, y, batch_size=10).n_batches() == 6  # 64 // 10: remainder dropped


def test_full_coverage_without_shuffle_in_order():
    x, y = _xy(64)
    dl = pg.ag_dataloader(x, y, batch_size=16, shuffle=False)
    seen = []
    while dl.has_next():
        b = dl.next_batch()
        ids = b.y.numpy()[0]
        np.testing.assert_array_equal(b.x.numpy(), x[:, ids.astype(int)])  # x and y stay paired
        seen.extend(ids.tolist())
    assert seen == list(range(64))


def test_shuffle_changes_order_and_seed_reproduces():
    x, y = _xy(64)
    a = [b.y.numpy()[0] for b in pg.ag_dataloader(x, y, batch_size=16, seed=42).epoch()]
    b = [b.y.numpy()[0] for b in pg.ag_dataloader(x, y, batch_size=16, seed=42).epoch()]
    order = np.concatenate(a)
    assert not np.array_equal(order, np.arange(64))
    np.testing.assert_array_equal(np.sort(order), np.arange(64))  # a permutation: full coverage
    np.testing.assert_array_equal(order, np.concatenate(b))


def test_global_stream_is_used_without_seed():
    x, y = _xy(64)
    pg.ggml_set_seed(7)
    a = pg.ag_dataloader(x, y, batch_size=64).next_batch().y.numpy()
    pg.ggml_set_seed(7)
    b = pg.ag_dataloader(x, y, batch_size=64).next_batch().y.numpy()
    c = pg.ag_dataloader(x, y, batch_size=64).next_batch().y.numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(b, c)


def test_reset_reshuffles():
    x, y = _xy(64)
    dl = pg.ag_dataloader(x, y, batch_size=64, seed=1)
    first = dl.next_batch().y.numpy()
    dl.reset()
    second = dl.next_batch().y.numpy()
    assert not np.array_equal(first, second)
    np.testing.assert_array_equal(np.sort(first), np.sort(second))


def test_has_next_false_after_last_batch_and_error():
    x, y = _xy(32)
    dl = pg.ag_dataloader(x, y, batch_size=16)
    dl.next_batch()
    dl.next_batch()
    assert not dl.has_next()
    with pytest.raises(pg.StateError, match="No more batches"):
        dl.next_batch()
    dl.reset()
    assert dl.has_next()


def test_col_major_false_transposes():
    x, y = _xy(20, f=3)
    dl = pg.ag_dataloader(x.T.copy(), y.T.copy(), batch_size=5, shuffle=False, col_major=False)
    b = dl.next_batch()
    np.testing.assert_array_equal(b.x.numpy(), x[:, :5])
    np.testing.assert_array_equal(b.y.numpy(), y[:, :5])


def test_epoch_gives_all_batches():
    x, y = _xy(64)
    dl = pg.ag_dataloader(x, y, batch_size=16)
    bs = dl.epoch()
    assert len(bs) == 4 and all(b.x.shape == (4, 16) for b in bs)
    assert sorted(np.concatenate([b.y.numpy()[0] for b in bs]).tolist()) == list(range(64))
    assert len(list(dl)) == 4  # iteration is one more epoch


def test_drop_last_false_yields_partial_batch():
    x, y = _xy(50)
    dl = pg.ag_dataloader(x, y, batch_size=16, shuffle=False, drop_last=False)
    assert dl.n_batches() == 4
    sizes = [b.x.shape[1] for b in dl]
    assert sizes == [16, 16, 16, 2]
    assert [b.y.numpy()[0].tolist() for b in dl][-1] == [48.0, 49.0]


def test_x_only_and_vector_targets():
    x, _ = _xy(10)
    b = pg.ag_dataloader(x, batch_size=5, shuffle=False).next_batch()
    assert set(b) == {"x"}
    ids = np.arange(10) % 3
    b = pg.ag_dataloader(x, ids, batch_size=5, shuffle=False).next_batch()
    np.testing.assert_array_equal(b.y.numpy(), [[0, 1, 2, 0, 1]])


def test_tensor_input_keeps_dtype(f64):
    x, y = _xy(8)
    pg.ag_dtype("f32")
    b = pg.ag_dataloader(pg.ag_tensor(x, dtype="f64"), batch_size=4).next_batch()
    assert b.x.dtype == "f64"


def test_print_format():
    x, y = _xy(32)
    assert (
        repr(pg.ag_dataloader(x, y, batch_size=8))
        == "ag_dataloader | n=32 | batch_size=8 | n_batches=4 | shuffle=TRUE"
    )
    assert (
        str(pg.ag_dataloader(x, y, batch_size=10, shuffle=False))
        == "ag_dataloader | n=32 | batch_size=10 | n_batches=3 | shuffle=FALSE"
    )


def test_errors():
    x, y = _xy(10)
    with pytest.raises(pg.ShapeError, match="x has 10 samples"):
        pg.ag_dataloader(x, y[:, :9])
    with pytest.raises(pg.PyggmlrValueError, match="batch_size"):
        pg.ag_dataloader(x, y, batch_size=0)
    with pytest.raises(pg.ShapeError) as e:  # R's text (issue 29): it said "got shape (2, 2, 2)"
        pg.ag_dataloader(np.ones((2, 2, 2)))
    assert str(e.value) == "ag_dataloader: x must be a matrix or a vector, got a 2x2x2 array"
    assert pg.ag_dataloader(3.0, batch_size=1).n_batches() == 1  # one sample, as in R


def test_load_iris():
    x, y, classes = pg.load_iris()
    assert x.shape == (4, 150) and x.dtype == np.float64
    assert y.shape == (150,) and y.dtype == np.int64
    assert classes == ["setosa", "versicolor", "virginica"]
    np.testing.assert_array_equal(np.bincount(y), [50, 50, 50])
    np.testing.assert_allclose(x[:, 0], [5.1, 3.5, 1.4, 0.2])
    np.testing.assert_allclose(x.mean(axis=1), [5.843333, 3.057333, 3.758, 1.199333], atol=1e-6)


def test_refusals_name_ag_dataloader():
    x, y = _xy(10)
    with pytest.raises(pg.ShapeError) as e:
        pg.ag_dataloader(x, y[:, :9])
    assert str(e.value) == "ag_dataloader: x has 10 samples (columns) but y has 9"
    with pytest.raises(pg.PyggmlrValueError, match=r"^ag_dataloader: supplied seed is not a valid"):
        pg.ag_dataloader(x, seed="a")
    with pytest.raises(pg.ArgumentError, match=r"^ag_dataloader: `seed` must be a single non-NA"):
        pg.ag_dataloader(x, seed=[1, 2])
    with pytest.raises(pg.ArgumentError, match=r"^ag_dataloader: drop_last must be True or False"):
        pg.ag_dataloader(x, drop_last=1)
    dl = pg.ag_dataloader(x, batch_size=10)
    dl.next_batch()
    with pytest.raises(pg.StateError) as e:
        dl.next_batch()
    assert str(e.value) == "ag_dataloader: No more batches. Call reset() to start a new epoch."


@pytest.mark.parametrize(
    "bs,drop,sizes",
    [
        (4, True, [4, 4]),
        (4, False, [4, 4, 2]),
        (10, True, [10]),
        (10, False, [10]),
        (11, True, []),
        (11, False, [10]),
        (3, False, [3, 3, 3, 1]),
    ],
)
def test_batches_follow_the_cores_count(bs, drop, sizes):
    """n_batches() is pg_batch_count (R's loader and ag_fit's plan use it too); each batch is
    the next batch_size samples of the order, the last one partial without drop_last."""
    x, y = _xy(10)
    dl = pg.ag_dataloader(x, y, batch_size=bs, drop_last=drop, shuffle=False)
    assert dl.n_batches() == len(sizes) == pg._core.lib.pg_batch_count(b"t", 10, bs, drop)
    got = [b.y.numpy()[0].tolist() for b in dl]
    assert [len(g) for g in got] == sizes
    assert sum(got, []) == list(range(sum(sizes)))
    assert not dl.has_next()


def test_drop_last_false_takes_the_same_permutation():
    x, y = _xy(10)
    a = [b.y.numpy()[0] for b in pg.ag_dataloader(x, y, batch_size=4, seed=3).epoch()]
    b = [b.y.numpy()[0] for b in pg.ag_dataloader(x, y, batch_size=4, seed=3, drop_last=False)]
    assert [len(v) for v in a] == [4, 4] and [len(v) for v in b] == [4, 4, 2]
    np.testing.assert_array_equal(np.concatenate(a), np.concatenate(b)[:8])
    assert sorted(np.concatenate(b).tolist()) == list(range(10))


def test_batch_count_refuses_bad_sizes():
    lib = pg._core.lib
    assert lib.pg_batch_count(b"ag_dataloader", 10, 0, 1) < 0
    assert (
        "ag_dataloader: batches of 0 over 10 samples"
        in pg._core.ffi.string(lib.pg_last_error()).decode()
    )
    lib.pg_clear_error()
    assert lib.pg_batch_count(b"ag_dataloader", -1, 2, 0) < 0
    lib.pg_clear_error()


def test_load_sunspots():
    """R's sunspot.month (R 4.2): 3177 months from 1749-01 to 2013-09, one decimal each (the
    parity tier checks every value against R's own)."""
    x, year, month = pg.load_sunspots()
    assert x.shape == year.shape == month.shape == (3177,) and x.dtype == np.float64
    assert (year[0], month[0], year[-1], month[-1]) == (1749, 1, 2013, 9)
    np.testing.assert_array_equal(np.diff(year * 12 + month - 1), 1)  # no month left out
    np.testing.assert_array_equal(x[:3], [58.0, 62.6, 70.0])
    assert x[-1] == 37.0 and x.max() == 253.8 and x.min() == 0.0
    np.testing.assert_array_equal(np.round(x * 10) / 10, x)
