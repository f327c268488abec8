"""ggmlR's GPU switches and probes (pyggmlr/gpu.py): same checks and values, no GPU here."""

import pytest

import pyggmlr as pg


def test_probes_answer_no_gpu(capsys):
    assert pg.ggml_vulkan_available() is False
    assert pg.ggml_vulkan_device_count() == 0 and pg.ggml_backend_dev_count() == 0
    assert pg.ggml_vulkan_status() == {"available": False, "n_devices": 0, "devices": []}
    assert "not available" in capsys.readouterr().out


def test_graph_mode_and_matmul_precision():
    old = pg.ag_graph_mode()
    try:
        assert pg.ag_graph_mode(True) is old
        assert pg.ag_graph_mode() is True
        with pytest.raises(pg.ArgumentError, match="`on` must be TRUE or FALSE"):  # R's class
            pg.ag_graph_mode(1)
        with pytest.raises(pg.ArgumentError, match="`check` must be TRUE, FALSE or NULL"):
            pg.ag_graph_mode(False, check="x")
        assert pg.ag_graph_mode() is True
    finally:
        pg.ag_graph_mode(old)
    assert pg.ag_matmul_precision() == "default"
    assert pg.ag_matmul_precision("f32") == "default" and pg.ag_matmul_precision() == "f32"
    with pytest.raises(pg.PyggmlrValueError, match="should be one of"):
        pg.ag_matmul_precision("f16")
    pg.ag_matmul_precision("default")


def test_local_mode_restores_on_exit_and_on_error():
    pg.ag_graph_mode(False)
    with pg.ag_local_mode(graph=True, matmul_precision="f32") as prev:
        assert pg.ag_graph_mode() is True and pg.ag_matmul_precision() == "f32"
        assert prev == {"matmul_precision": "default", "graph": False}
    assert pg.ag_graph_mode() is False and pg.ag_matmul_precision() == "default"
    with pytest.raises(RuntimeError, match="boom"):
        with pg.ag_local_mode(graph=True):
            raise RuntimeError("boom")
    assert pg.ag_graph_mode() is False
    with pytest.raises(pg.ArgumentError, match="`graph` must be TRUE, FALSE or NULL"):
        pg.ag_local_mode(graph="yes")  # refused at the call, as R's (not at `with`)
    with pytest.raises(pg.PyggmlrValueError, match="matmul_precision"):
        pg.ag_local_mode(matmul_precision="f16")
    assert pg.ag_graph_mode() is False and pg.ag_matmul_precision() == "default"
