"""scripts/check-r-registry.py: the R package's init.c table and NAMESPACE agree with its
sources, here and on copies with one defect each (so the checker is known to catch it)."""

import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "check-r-registry.py")


def run(root):
    r = subprocess.run([sys.executable, SCRIPT, root], capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def test_the_tree_passes():
    rc, out = run(ROOT)
    assert rc == 0, out
    assert out == ""


@pytest.fixture
def tree(tmp_path):
    """A copy of what the checker reads: r/R, r/tests, r/man, r/NAMESPACE and r/src's glue
    (its .c files and r_entries.h)."""
    r = tmp_path / "r"
    for d in ("R", "tests", "man", "vignettes"):
        shutil.copytree(os.path.join(ROOT, "r", d), r / d)
    shutil.copy(os.path.join(ROOT, "r", "NAMESPACE"), r / "NAMESPACE")
    (r / "src").mkdir()
    src = os.path.join(ROOT, "r", "src")
    for b in os.listdir(src):
        p = os.path.join(src, b)
        if b.endswith((".c", ".h")) and not os.path.islink(p):  # glue, r_entries.h
            shutil.copy(p, r / "src" / b)
    assert run(str(tmp_path))[0] == 0
    return tmp_path


def edit(path, old, new):
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))


def fails_with(tree, *needles):
    rc, out = run(str(tree))
    assert rc == 1, out
    for n in needles:
        assert n in out, out


def test_unregistered_entry_point(tree):
    with open(tree / "r" / "src" / "r_scope.c", "a") as f:
        f.write("\nSEXP R_pg_new_thing(SEXP a, SEXP b) { return a; }\n")
    fails_with(tree, "R_pg_new_thing (2 args) is not registered")


def test_wrong_argument_count(tree):
    edit(
        tree / "r" / "src" / "init.c",
        "(DL_FUNC)&R_pg_scope, 2}",
        "(DL_FUNC)&R_pg_scope, 3}",
    )
    fails_with(tree, "R_pg_scope registered with 3 args, r_scope.c takes 2")


def test_extern_declaration_count(tree):
    edit(
        tree / "r" / "src" / "r_entries.h",
        "extern SEXP R_pg_scope(SEXP, SEXP);",
        "extern SEXP R_pg_scope(SEXP);",
    )
    fails_with(tree, "extern R_pg_scope declares 1 args")


def test_registered_but_not_defined(tree):
    edit(
        tree / "r" / "src" / "r_scope.c",
        "SEXP R_pg_scope(SEXP what, SEXP n)",
        "SEXP R_pg_scope2(SEXP what, SEXP n)",
    )
    fails_with(
        tree,
        "R_pg_scope is registered but defined in no glue file",
        "R_pg_scope2 (2 args) is not registered",
    )


APPENDED = [
    (
        "R/tape.R",
        "\n.nothing <- function() .Call(R_pg_nothing, 1)\n",
        [".Call(R_pg_nothing) is not registered"],
    ),
    (
        "R/tape.R",
        '\n.depth <- function() .Call(R_pg_scope, .pg$code$scope[["DEPTH"]])\n',
        [".Call(R_pg_scope) passes 1 args, init.c registers 2"],
    ),
    (
        "R/tape.R",
        "\n.depth <- function() .Call(R_pg_tape, 3L)\n",
        ["passes 3L for the code 'what'"],
    ),
    (
        "NAMESPACE",
        "export(ag_not_there)\n",
        [
            "export ag_not_there is not defined in r/R",
            "export ag_not_there has no \\alias in r/man",
        ],
    ),
    (
        "R/tape.R",
        "\nag_forgotten <- function(x) x\n",
        ["ag_forgotten is public-looking but neither exported nor in INTERNAL"],
    ),
    (
        "NAMESPACE",
        "S3method(print, ag_nothing)\n",
        ["S3method print.ag_nothing has no function in r/R"],
    ),
    (
        "R/tape.R",
        '\n.d <- function() .Call(R_pg_tape, .pg$code$tape[["DEPHT"]])\n',
        ['.pg$code$tape[["DEPHT"]] is not in R_pg_codes'],
    ),
    (
        "R/tape.R",
        '\n.s <- function(x) .Call(R_pg_unary, .pg$op[["SIGMA"]], x, 0, 0, "s")\n',
        ['.pg$op[["SIGMA"]] is not in R_pg_op_codes'],
    ),
]


@pytest.mark.parametrize(
    "rel, text, needles",
    APPENDED,
    ids=[
        "unregistered-call",
        "call-arg-count",
        "literal-code",
        "export-undefined",
        "public-not-exported",
        "s3-without-function",
        "unknown-code",
        "unknown-op",
    ],
)
def test_appended_defect(tree, rel, text, needles):
    with open(tree / "r" / rel, "a") as f:
        f.write(text)
    fails_with(tree, *needles)


def test_blas_names_are_one_pair_in_both_languages():
    """ag_set_blas / ag_blas_name in Python and R, and no other name (the aliases use_blas,
    blas_name and R's ag_use_openblas went in issue 29)."""
    import pyggmlr as pg

    ns = open(os.path.join(ROOT, "r", "NAMESPACE")).read()
    for name in ("ag_set_blas", "ag_blas_name"):
        assert f"export({name})" in ns
    assert "ag_use_openblas" not in ns
    assert not hasattr(pg, "use_blas") and not hasattr(pg, "blas_name")
    prev = pg.ag_blas_name()
    try:
        assert pg.ag_set_blas("builtin") == "builtin" == pg.ag_blas_name()
        assert pg.ag_set_blas() == "builtin"  # the default, as R's ag_set_blas()
        with pytest.raises(pg.PyggmlrValueError, match=r"^ag_set_blas\(\): name must be"):
            pg.ag_set_blas("mkl")
    finally:
        pg.ag_set_blas("openblas" if prev.startswith("OpenBLAS") else "builtin")


# names one language has and the other has not, and why (everything else is in both)
PY_ONLY = {
    "ag_fit_distributed": "Python's MPI entry; R runs it as ag_fit(distributed = TRUE)",
    "ag_rng": "a numpy Generator on the shared stream; R draws with set.seed / runif",
    "blas_library_path": "what pyggmlr.r hands R's ag_set_blas('openblas', path)",
    "load_iris": "R has datasets::iris",
    "load_sunspots": "R has datasets::sunspot.month (the same values)",
    "summary": "R's base summary() generic, with the package's S3 methods (summary.ag_sequential)",
}
R_ONLY = {
    "%*%": "R's operator (R < 4.3 dispatch)",
    "ag_image_shape<-": "R's replacement form (Python: x.image_shape = (C, H, W))",
}


def test_one_name_per_capability_in_python_and_r():
    import re

    import pyggmlr as pg

    ns = open(os.path.join(ROOT, "r", "NAMESPACE")).read()
    r_names = set(re.findall(r'export\(\s*"?([^")\s]+)"?\s*\)', ns))
    py_names = {n for n in pg.__all__ if not n[0].isupper()}  # classes have no R counterpart
    assert py_names - r_names == set(PY_ONLY)
    assert r_names - py_names == set(R_ONLY)
