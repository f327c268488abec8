"""MPI arguments of the wrong kind (Python), and R embedded in a Python process whose mpi4py
started MPI: Rmpi loaded there without its communicators and the process died (SIGSEGV in
mpi_comm_is_null) at R's first MPI call; now R's MPI functions refuse with a DistributedError
(pyggmlr_distributed_error) and ag_mpi_available() is FALSE. Each in a subprocess: MPI is
started once per process."""

import importlib.util
import json
import os
import shutil
import subprocess
import sys

import pytest

_HAVE_MPI4PY = importlib.util.find_spec("mpi4py") is not None
needs_mpi4py = pytest.mark.skipif(
    not _HAVE_MPI4PY, reason="mpi4py is not installed (pip install mpi4py): no MPI front end"
)

_KINDS = """
import json, numpy as np, pyggmlr as pg
m, out = pg.ag_linear(2, 3), []
for call in (lambda: pg.ag_allreduce_gradients(m, check="no"),
             lambda: pg.ag_allreduce_gradients(m, dtype=np.ones(2)),
             lambda: pg.ag_broadcast_parameters(m, buffers=np.ones(2)),
             lambda: pg.ag_mpi_init(abort_on_error=np.ones(2)),
             lambda: pg.ag_fit_distributed(m, np.ones((2, 4)), verbose=np.ones(2))):
    try:
        call()
        out.append(None)
    except Exception as e:
        out.append([type(e).__name__, str(e)])
print(json.dumps(out))
"""


def _run(code):
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr  # a crash is -11
    return json.loads(r.stdout.strip().splitlines()[-1])


@needs_mpi4py
def test_mpi_arguments_of_another_kind_are_typed_errors():
    out = _run(_KINDS)
    assert out == [
        ["ArgumentError", "ag_allreduce_gradients: check must be True or False, got str 'no'"],
        ["DTypeError", "ag_allreduce_gradients: dtype must be 'f32' or 'f64', got array([1., 1.])"],
        ["ArgumentError",
         "ag_broadcast_parameters: buffers must be True or False, got ndarray array([1., 1.])"],
        ["ArgumentError",
         "ag_mpi_init: abort_on_error must be True or False, got ndarray array([1., 1.])"],
        ["PyggmlrValueError", "ag_fit_distributed: verbose=array([1., 1.]) is not supported; use "
         "True (a line per epoch) or False, or ag_fit's verbose / callbacks"],
    ]  # fmt: skip


_HOST = """
import json, pyggmlr as pg
from pyggmlr import r
r.start()
pg.ag_allreduce_gradients(pg.ag_linear(2, 3))  # mpi4py starts MPI in this process
got = r.run("e <- tryCatch(ag_mpi_world_size(), error = function(e) e); "
            "list(class(e)[[1L]], conditionMessage(e), ag_mpi_available(), "
            "class(tryCatch(ag_allreduce_gradients(ag_linear(2, 3)), error = function(e) e))[[1L]])")
print(json.dumps([str(got[0]), str(got[1]), bool(got[2]), str(got[3]), pg.ag_mpi_world_size()]))
"""


@pytest.mark.parity  # embeds R (rpy2): not in the sanitized run, which cannot host R
@needs_mpi4py
def test_embedded_r_refuses_the_python_hosts_mpi():
    from pyggmlr import r

    if not r.available():
        pytest.skip(f"R bridge unavailable: {r.unavailable_reason()}")
    has_rmpi = subprocess.run(
        [shutil.which("Rscript") or "Rscript", "-e",
         "quit(status = !requireNamespace('Rmpi', quietly = TRUE))"], capture_output=True
    ).returncode == 0  # fmt: skip
    if not has_rmpi:
        if os.environ.get("CI"):  # CI installs Rmpi: the crash it guards must be checked there
            pytest.fail("CI has R but Rmpi does not load")
        pytest.skip("Rmpi does not load here (apt-get install r-cran-rmpi): nothing to crash")
    cls, msg, available, cls2, world = _run(_HOST)
    assert (cls, cls2, available, world) == (
        "pyggmlr_distributed_error",
        "pyggmlr_distributed_error",
        False,
        1,
    )
    assert msg.startswith("pyggmlr: MPI was started in this process by its Python host (mpi4py)")
