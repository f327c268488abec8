"""Same arguments in both languages (issue 29): every function that Python's `pyggmlr` and R's
package both export takes the same arguments in the same order, apart from the few that are
one language's own (listed below with why), so a call written by position means the same in
both."""

import inspect
import json

import pytest

from pyggmlr import r

if not r.available():
    pytest.skip(f"R bridge unavailable: {r.unavailable_reason()}", allow_module_level=True)

pytestmark = pytest.mark.parity  # embeds R (rpy2): not in the sanitized run, which cannot host R

import pyggmlr as pg  # noqa: E402

# arguments one language has and the other cannot: (function, language) -> names
_OWN = {
    # mpi4py communicators: Rmpi has only its communicator 0
    ("ag_allreduce_gradients", "py"): {"comm"},
    ("ag_broadcast_parameters", "py"): {"comm"},
    ("ag_parameters_spread", "py"): {"comm"},
    ("ag_mpi_barrier", "py"): {"comm"},
    ("ag_mpi_rank", "py"): {"comm"},
    ("ag_mpi_world_size", "py"): {"comm"},
    ("ag_mpi_init", "py"): {"comm", "abort_on_error"},
    # R evaluates an expression where Python runs a function or a with-block
    ("ag_no_grad", "R"): {"expr"},
    ("with_grad_tape", "R"): {"expr"},
    ("with_grad_tape", "py"): {"fn"},
    ("ag_checkpoint", "R"): {"fn"},
    ("ag_local_mode", "R"): {"envir"},
    # R only: a data frame for the formula interface; code stored in ggmlR's .rds containers;
    # the OpenBLAS library Python finds through its wheel
    ("ag_fit", "R"): {"data"},
    ("ag_load_model", "R"): {"trust"},
    ("ag_set_blas", "R"): {"path"},
}
_RENAMED = {("ag_slice_rows", "from_"): "from"}  # R's `from` is a Python keyword

_R_FORMALS = """
ns <- asNamespace("pyggmlr")
out <- list()
for (n in sort(getNamespaceExports("pyggmlr"))) {
  f <- get(n, ns)
  if (is.function(f) && !is.primitive(f)) out[[n]] <- as.character(setdiff(names(formals(f)), "..."))
}
as.character(jsonlite::toJSON(out))
"""


def _py_args(name, obj):
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):  # a builtin without a signature
        return None
    skip = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    return [_RENAMED.get((name, p.name), p.name) for p in sig.parameters.values()
            if p.kind not in skip]  # fmt: skip


def test_shared_functions_take_the_same_arguments_in_the_same_order():
    r_args = json.loads(r.run(_R_FORMALS))
    shared = sorted(n for n in r_args if not n.startswith("_") and callable(getattr(pg, n, None)))
    assert len(shared) > 150  # the whole shared API (160 functions), not a few names
    differ = {}
    for n in shared:
        py = _py_args(n, getattr(pg, n))
        if py is None:
            continue
        py = [a for a in py if a not in _OWN.get((n, "py"), ())]
        ra = [a for a in r_args[n] if a not in _OWN.get((n, "R"), ())]
        if py != ra:
            differ[n] = (py, ra)
    assert differ == {}


def test_each_own_argument_is_still_there():
    """The list above stays true: each language-own argument exists on its side only."""
    r_args = json.loads(r.run(_R_FORMALS))
    for (n, lang), names in _OWN.items():
        py = _py_args(n, getattr(pg, n)) or []
        mine, other = (py, r_args[n]) if lang == "py" else (r_args[n], py)
        assert names <= set(mine) and not names & set(other), (n, lang)
