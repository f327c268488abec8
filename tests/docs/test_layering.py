"""pyggmlr/'s layers (docs/contributing.md, "Python's layers"): every module's imports of the
package, read with ast, against the table there. (a) no import cycle but the one the table
allows; (b) no import inside a function but of an optional dependency; (c) no module imports
from a layer above its own. The checks run on a made-up tree first, so each is seen failing."""

from __future__ import annotations

import ast
import pathlib
import re
from typing import Dict, List, Set, Tuple

ROOT = pathlib.Path(__file__).resolve().parents[2]
PKG = ROOT / "pyggmlr"
#: what a function may import: the optional dependencies, imported on use
OPTIONAL = {"tqdm", "matplotlib", "mpi4py", "rpy2", "scipy_openblas32", "torch", "IPython"}

Edge = Tuple[str, str, int, bool]  # importer, imported, line, inside a function


def layer_table() -> Tuple[List[Tuple[str, List[str]]], Set[str]]:
    """[(layer name, [paths under pyggmlr/: "tensor.py", "nn/", "_native"])] bottom to top, and
    the modules of the one allowed cycle, from docs/contributing.md."""
    text = (ROOT / "docs" / "contributing.md").read_text()
    sec = text.split("## Python's layers", 1)[1].split("\n## ", 1)[0]
    layers = []
    for line in sec.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and re.match(r"^\d+ \w+$", cells[0]):
            layers.append((cells[0], re.findall(r"`([^`]+)`", cells[1])))
    m = re.search(r"allowed cycle: (.*?)\.\s", sec, re.S)
    assert m, "contributing.md: the allowed cycle's sentence is missing"
    cycle = {"pyggmlr." + p[: -len(".py")] for p in re.findall(r"`([\w/]+\.py)`", m.group(1))}
    return layers, cycle


def module_name(rel: pathlib.PurePosixPath) -> str:
    parts = ["pyggmlr", *rel.with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def read_tree() -> Dict[str, Tuple[str, bool]]:
    """module name -> (source, is a package's __init__) for every .py file under pyggmlr/."""
    out = {}
    for p in sorted(PKG.rglob("*.py")):
        rel = pathlib.PurePosixPath(p.relative_to(PKG).as_posix())
        out[module_name(rel)] = (p.read_text(), p.name == "__init__.py")
    return out


def imports(tree: Dict[str, Tuple[str, bool]]) -> Tuple[List[Edge], List[Edge]]:
    """(edges between the package's modules, imports of anything else made inside a function).
    `from X import y` is an edge to X.y when that is a module, to X otherwise."""
    known = set(tree) | {"pyggmlr._native"}
    internal: List[Edge] = []
    external: List[Edge] = []

    def visit(mod: str, is_pkg: bool, node: ast.AST, in_fn: bool) -> None:
        for ch in ast.iter_child_nodes(node):
            fn = in_fn or isinstance(ch, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(ch, ast.ImportFrom):
                if ch.level:
                    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
                    base = base[: len(base) - (ch.level - 1)]
                    target = ".".join(base + ([ch.module] if ch.module else []))
                else:
                    target = ch.module or ""
                if target == "pyggmlr" or target.startswith("pyggmlr."):
                    for a in ch.names:
                        sub = f"{target}.{a.name}"
                        internal.append((mod, sub if sub in known else target, ch.lineno, in_fn))
                elif in_fn:
                    external.append((mod, target, ch.lineno, True))
            elif isinstance(ch, ast.Import):
                for a in ch.names:
                    if a.name == "pyggmlr" or a.name.startswith("pyggmlr."):
                        internal.append((mod, a.name, ch.lineno, in_fn))
                    elif in_fn:
                        external.append((mod, a.name, ch.lineno, True))
            visit(mod, is_pkg, ch, fn)

    for mod, (src, is_pkg) in tree.items():
        visit(mod, is_pkg, ast.parse(src), False)
    return internal, external


def cycles(edges: List[Edge]) -> List[Set[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    graph: Dict[str, Set[str]] = {}
    for a, b, _, _ in edges:
        if a != b:
            graph.setdefault(a, set()).add(b)
            graph.setdefault(b, set())
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on: Set[str] = set()
    out: List[Set[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return out


def layer_of(mod: str, layers: List[Tuple[str, List[str]]]) -> int:
    """The index of mod's layer (-1: in none). `nn/` holds pyggmlr.nn and everything below."""
    rel = mod[len("pyggmlr.") :] if mod != "pyggmlr" else "__init__"
    for i, (_, paths) in enumerate(layers):
        for p in paths:
            if p.endswith("/"):
                pkg = p.rstrip("/").replace("/", ".")
                if rel == pkg or rel.startswith(pkg + "."):
                    return i
            elif rel == (p[: -len(".py")] if p.endswith(".py") else p).replace("/", "."):
                return i
    return -1


def problems(tree, layers, allowed_cycle) -> List[str]:
    """Every breach of the rules, as text (empty when the tree keeps them)."""
    internal, external = imports(tree)
    out = []
    for comp in cycles(internal):
        if comp != allowed_cycle:
            out.append(f"import cycle: {sorted(comp)}")
    for a, b, line, in_fn in internal:
        if in_fn:
            out.append(f"{a}:{line}: imports {b} inside a function")
    for a, b, line, _ in external:
        if b.split(".")[0] not in OPTIONAL:
            out.append(f"{a}:{line}: imports {b} inside a function (not an optional dependency)")
    for mod in sorted(tree):
        if layer_of(mod, layers) < 0:
            out.append(f"{mod}: in no layer of docs/contributing.md's table")
    for a, b, line, _ in internal:
        la, lb = layer_of(a, layers), layer_of(b, layers)
        if la >= 0 and lb > la:
            out.append(f"{a}:{line}: layer {layers[la][0]!r} imports {b} from {layers[lb][0]!r}")
    return out


def test_the_checks_can_fail():
    """A made-up tree breaking each rule once: each breach is reported."""
    layers = [("0 core", ["a.py", "b.py", "c.py"]), ("1 top", ["top/"])]
    tree = {
        "pyggmlr": ("", True),
        "pyggmlr.a": ("from . import b\n", False),
        "pyggmlr.b": ("from .a import x\nfrom .top import y\n", False),  # a cycle; upwards
        "pyggmlr.c": ("def f():\n    from . import a\n    import json\n    import tqdm\n", False),
        "pyggmlr.top": ("from .a import z\n", True),
        "pyggmlr.stray": ("", False),
    }
    found = problems(tree, layers, set())
    assert "import cycle: ['pyggmlr.a', 'pyggmlr.b']" in found
    assert "pyggmlr.c:2: imports pyggmlr.a inside a function" in found
    assert "pyggmlr.c:3: imports json inside a function (not an optional dependency)" in found
    assert not any("tqdm" in f for f in found)  # optional: allowed
    assert "pyggmlr.b:2: layer '0 core' imports pyggmlr.top from '1 top'" in found
    assert "pyggmlr.stray: in no layer of docs/contributing.md's table" in found
    assert "pyggmlr" in [m for m in tree if layer_of(m, layers) < 0]  # the root needs a row too
    allowed = problems(tree, layers, {"pyggmlr.a", "pyggmlr.b"})  # the table's allowed cycle
    assert not any(f.startswith("import cycle") for f in allowed)


def test_the_package_keeps_its_layers():
    layers, allowed = layer_table()
    assert [n.split()[1] for n, _ in layers][:2] == ["core", "nn"] and len(layers) >= 6
    assert allowed == {"pyggmlr.tensor", "pyggmlr.ops", "pyggmlr.tensor_index", "pyggmlr.tape"}
    tree = read_tree()
    assert len(tree) > 40 and "pyggmlr.fit.loop" in tree
    found = problems(tree, layers, allowed)
    assert not found, "\n".join(found)
    # the allowed cycle is the one there is (it does not grow unnoticed, or vanish unrecorded)
    assert cycles(imports(tree)[0]) == [allowed]


def test_every_subpackage_ships():
    """Each subpackage is in pyproject.toml's package list (the wheel and the sdist carry it)."""
    listed = set(re.findall(r'"(pyggmlr[\w.]*)"', (ROOT / "pyproject.toml").read_text()))
    pkgs = {
        module_name(pathlib.PurePosixPath(p.relative_to(PKG).as_posix()))
        for p in PKG.rglob("__init__.py")
    }
    assert pkgs <= listed, f"missing from [tool.setuptools] packages: {sorted(pkgs - listed)}"
