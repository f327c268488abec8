"""Arguments of an unexpected kind that reached numpy or Python's own operators and came out as
their errors (found by calling every public function with random hostile values): a Tensor as a
dtype, an array as a layout, a choice or a flag, a list as ag_compile's build, and bytes paths on
save, which the loader already took. Each is now the library's typed error naming the function,
and a bytes path saves."""

import numpy as np
import pytest

import pyggmlr as pg


def test_dtype_of_another_kind_is_a_dtype_error():
    for bad, shown in ((pg.ag_tensor(np.ones((2, 2))), "ag_tensor [2x2]"), (np.ones(2), "array(")):
        with pytest.raises(
            pg.DTypeError, match=r"^ag_dtype: dtype must be 'f32' or 'f64', got "
        ) as e:
            pg.ag_dtype(bad)
        assert shown in str(e.value) and "\n" not in str(e.value)  # the first line only
    assert pg.ag_dtype() == "f32"  # unchanged
    assert pg.ag_tensor(np.ones(2), dtype=np.float64).dtype == "f64"  # numpy's types still do


@pytest.mark.parametrize("fn", [pg.ag_images, pg.ag_sequences])
def test_layout_array_is_a_value_error(fn):
    with pytest.raises(pg.PyggmlrValueError, match=r"layout must be '"):
        fn(np.ones((2, 3, 4)), np.array(["NTF", "NCHW"]))


def test_compile_build_list_is_refused():
    with pytest.raises(pg.PyggmlrValueError, match=r'^ag_compile\(\): build must be "opt", '):
        pg.ag_compile(lambda x: x, build=["opt"])


def test_save_model_takes_a_bytes_path(tmp_path):
    pg.ggml_set_seed(1)
    m = pg.ag_linear(2, 3)
    p = bytes(tmp_path / "m.safetensors")
    assert pg.ag_save_model(m, p) == p
    back = pg.ag_load_model(p)
    np.testing.assert_array_equal(back.W.numpy(), m.W.numpy())
    with pytest.raises(FileNotFoundError, match="No such file or directory: b'") as e:
        pg.ag_load_model(bytes(tmp_path / "none.safetensors"))
    assert e.value.filename == bytes(tmp_path / "none.safetensors")


@pytest.mark.parametrize("bad", ["no", 1, None, np.array([True, False])])
def test_module_train_takes_a_bool_only(bad):
    m = pg.ag_sequential(pg.ag_linear(2, 3), pg.ag_dropout(0.5))
    m.eval()
    with pytest.raises(pg.ArgumentError, match=r"^ag_sequential.train: mode must be True or False"):
        m.train(bad)
    assert m.training is False and m.layers[1].training is False  # unchanged
    assert m.train(np.True_) is m and m.layers[1].training is True


def test_history_from_dict_names_what_is_wrong():
    h = pg.History.from_dict({"epoch": [1, 2], "loss": [0.5, None], "stopped_epoch": 2})
    assert h.epoch == [1, 2] and h.loss[0] == 0.5 and np.isnan(h.loss[1]) and h.stopped_epoch == 2
    with pytest.raises(pg.ArgumentError, match=r"^History.from_dict: d must be a dict, got list$"):
        pg.History.from_dict([1])
    for v, shown in ((3, "int"), ("ab", "str"), ({"a": 1}, "dict")):
        with pytest.raises(
            pg.ArgumentError,
            match=rf"^History.from_dict: 'loss' must be a list of per-epoch values, got {shown}$",
        ):
            pg.History.from_dict({"loss": v})


def test_compiled_memory_quiet_is_a_flag(capsys):
    x = pg.ag_tensor(np.ones((2, 3)))
    step = pg.ag_compile(lambda a: pg.ag_sum(a), x, build="forward")
    with pytest.raises(
        pg.ArgumentError, match=r"^memory\(\): quiet must be True or False, got str"
    ):
        step.memory(quiet="no")
    assert capsys.readouterr().out == ""  # refused before printing
    step.memory(quiet=np.False_)
    assert capsys.readouterr().out.startswith("Compiled graph (forward): 1 node")


def test_clipping_has_no_silent_default_threshold():
    """R (and ggmlR) have no default max_norm / clip_value; Python clipped to 1.0 unasked."""
    w = pg.ag_param(np.full((2, 2), 3.0))
    w.grad = np.full((2, 2), 3.0)
    with pytest.raises(
        pg.ArgumentError, match="^clip_grad_norm: max_norm must be a number, got NoneType$"
    ):
        pg.clip_grad_norm([w])
    with pytest.raises(
        pg.PyggmlrValueError, match="^clip_grad_value: clip_value must be a single positive"
    ):
        pg.clip_grad_value([w])
    np.testing.assert_array_equal(w.grad, np.full((2, 2), 3.0))  # untouched
    assert pg.clip_grad_norm([w], max_norm=1.0) == 6.0
