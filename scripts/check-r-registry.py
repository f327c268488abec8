#!/usr/bin/env python3
"""Check the R package's registration table and NAMESPACE against its sources.

Fails (exit 1, one line per problem) when:
  - an R_* entry point defined in r/src's glue (init.c, r_*.c) is not in init.c's CallEntries,
    is declared (init.c, r_entries.h) or registered with another argument count, or is
    registered but not defined;
  - a .Call(R_*) in r/R, r/tests or r/vignettes names an entry point that is not registered,
    passes another number of arguments, or passes a literal number for a code (a C parameter
    named what, kind, dtype, build or act; R reads codes by name: .pg$op, .pg$code);
  - a code read by name in R (.pg$code$<group>[["NAME"]], .pg$op[["NAME"]]) is not in the tables
    of r/src/r_codes.c (R_pg_codes) or r/src/r_ops.c (R_pg_op_codes);
  - a NAMESPACE export is not defined in r/R or has no \\alias in r/man;
  - an S3method() of NAMESPACE has no function <generic>.<class> in r/R;
  - a public function of r/R (a top-level `name <- function`, name not starting with ".") is
    neither exported, nor an S3 method, nor listed in INTERNAL below.
Usage: python3 scripts/check-r-registry.py [ROOT]   (ROOT: the repository, default: this one)
"""

import glob
import os
import re
import sys

# public-looking names that stay internal on purpose (name: why)
INTERNAL: dict = {}

# C parameters that take a code: an R call site passes a name's value there, never a literal
CODE_PARAMS = {"what", "kind", "dtype", "build", "act"}

DEF_RE = re.compile(r"^SEXP\s+(R_\w+)\s*\(([^)]*)\)", re.M)
EXTERN_RE = re.compile(r"^extern\s+SEXP\s+(R_\w+)\s*\(([^)]*)\)\s*;", re.M)
ENTRY_RE = re.compile(r'\{\s*"(R_\w+)"\s*,\s*\(DL_FUNC\)\s*&(R_\w+)\s*,\s*(\d+)\s*\}')
CALL_RE = re.compile(r"\.Call\(\s*(?:pyggmlr:::)?(R_\w+)")
FUN_RE = re.compile(r"^(`[^`]+`|[A-Za-z.][\w.]*)\s*(?:<-|=)\s*function\b", re.M)
ASSIGN_RE = re.compile(r"^(`[^`]+`|[A-Za-z.][\w.]*)\s*(?:<-|=)", re.M)
EXPORT_RE = re.compile(r'export\(\s*"?([^")\s]+)"?\s*\)')
S3_RE = re.compile(r'S3method\(\s*"?([^",\s]+)"?\s*,\s*([\w.]+)\s*\)')
CODE_USE_RE = re.compile(r'\.pg\$code\$(\w+)\[\["(\w+)"\]\]')
OP_USE_RE = re.compile(r'\.pg\$op\[\["(\w+)"\]\]')
ALIAS_RE = re.compile(r"\\alias\{([^}]+)\}")


def param_names(params: str) -> list:
    params = params.strip()
    return [] if params in ("", "void") else [p.split()[-1].lstrip("*") for p in params.split(",")]


def n_args(params: str) -> int:
    return len(param_names(params))


def call_args(text: str, start: int) -> list:
    """The top-level arguments of the call whose "(" is at text[start] (strings and comments
    skipped), as stripped source strings."""
    depth, i, args, cur = 0, start, [], []
    while i < len(text):
        ch = text[i]
        if ch in "\"'`":
            j = i + 1
            while j < len(text) and text[j] != ch:
                j += 2 if text[j] == "\\" else 1
            cur.append(text[i : j + 1])
            i = j + 1
            continue
        if ch == "#":
            while i < len(text) and text[i] != "\n":
                i += 1
            continue
        if ch in "([{":
            depth += 1
            if depth == 1:
                i += 1
                continue
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                args.append("".join(cur).strip())
                return args
        elif ch == "," and depth == 1:
            args.append("".join(cur).strip())
            cur = []
            i += 1
            continue
        cur.append(ch)
        i += 1
    return args


def strip_c_comments(text: str) -> str:
    return re.sub(r"/\*.*?\*/", "", text, flags=re.S)


def read(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def code_tables(src: str):
    """R_pg_codes' groups {group: {names}} (r_codes.c: static const r_code <group>[] = {...};
    listed in GROUP(...)) and R_pg_op_codes' names (r_ops.c: the nm[] array)."""
    groups = {}
    path = os.path.join(src, "r_codes.c")
    if os.path.exists(path):
        text = strip_c_comments(read(path))
        listed = set(re.findall(r"GROUP\((\w+)\)", text))
        for g, body in re.findall(r"r_code\s+(\w+)\[\]\s*=\s*\{(.*?)\};", text, re.S):
            if g in listed:
                groups[g] = set(re.findall(r'\{\s*"(\w+)"', body))
    ops = set()
    path = os.path.join(src, "r_ops.c")
    if os.path.exists(path):
        m = re.search(r"\*nm\[\]\s*=\s*\{(.*?)\};", strip_c_comments(read(path)), re.S)
        ops = set(re.findall(r'"(\w+)"', m.group(1))) if m else set()
    return groups, ops


def check(root: str) -> list:
    problems = []
    src = os.path.join(root, "r", "src")
    glue = [p for p in sorted(glob.glob(os.path.join(src, "*.c"))) if not os.path.islink(p)]
    defined, pnames = {}, {}
    for p in glue:
        for name, params in DEF_RE.findall(strip_c_comments(read(p))):
            defined[name] = (n_args(params), os.path.basename(p))
            pnames[name] = param_names(params)
    init = strip_c_comments(read(os.path.join(src, "init.c")))
    decl = init  # the entry points' declarations: init.c and the header it includes
    if os.path.exists(os.path.join(src, "r_entries.h")):
        decl += strip_c_comments(read(os.path.join(src, "r_entries.h")))
    declared = {name: n_args(params) for name, params in EXTERN_RE.findall(decl)}
    registered = {}
    for name, fn, n in ENTRY_RE.findall(init):
        if name != fn:
            problems.append(f"init.c: entry {name!r} points at {fn}")
        if name in registered:
            problems.append(f"init.c: {name} registered twice")
        registered[name] = int(n)
    for name, (n, where) in sorted(defined.items()):
        if name not in registered:
            problems.append(f"{where}: {name} ({n} args) is not registered in init.c")
        elif registered[name] != n:
            problems.append(
                f"init.c: {name} registered with {registered[name]} args, {where} takes {n}"
            )
        if name in registered and declared.get(name) != n:
            problems.append(
                f"init.c: extern {name} declares {declared.get(name)} args, {where} takes {n}"
            )
    for name in sorted(set(registered) - set(defined)):
        problems.append(f"init.c: {name} is registered but defined in no glue file")

    r_files = sorted(glob.glob(os.path.join(root, "r", "R", "*.R")))
    tests = os.path.join(root, "r", "tests", "**", "*.R")
    users = r_files + sorted(glob.glob(tests, recursive=True))
    users += sorted(glob.glob(os.path.join(root, "r", "vignettes", "*.Rmd")))
    groups, ops = code_tables(src)
    for p in users:
        text, rel = read(p), os.path.relpath(p, root)
        for g, name in CODE_USE_RE.findall(text):
            if name not in groups.get(g, ()):
                problems.append(f'{rel}: .pg$code${g}[["{name}"]] is not in R_pg_codes (r_codes.c)')
        for name in OP_USE_RE.findall(text):
            if name not in ops:
                problems.append(f'{rel}: .pg$op[["{name}"]] is not in R_pg_op_codes (r_ops.c)')
        for m in CALL_RE.finditer(text):
            name, line = m.group(1), text.count("\n", 0, m.start()) + 1
            if name not in registered:
                problems.append(f"{rel}:{line}: .Call({name}) is not registered")
                continue
            args = call_args(text, m.start() + len(".Call"))[1:]
            if len(args) != registered[name]:
                problems.append(
                    f"{rel}:{line}: .Call({name}) passes {len(args)} args, "
                    f"init.c registers {registered[name]}"
                )
            for arg, pname in zip(args, pnames.get(name, [])):
                if pname in CODE_PARAMS and re.fullmatch(r"-?\d+L?", arg):
                    problems.append(
                        f"{rel}:{line}: .Call({name}) passes {arg} for the code "
                        f"{pname!r}: read it by name (.pg$op, .pg$code)"
                    )

    funs, assigned = set(), set()
    for p in r_files:
        text = read(p)
        funs.update(n.strip("`") for n in FUN_RE.findall(text))
        assigned.update(n.strip("`") for n in ASSIGN_RE.findall(text))
    ns_lines = read(os.path.join(root, "r", "NAMESPACE")).splitlines()
    ns = "\n".join(line.split("#")[0] for line in ns_lines)
    exports = set(EXPORT_RE.findall(ns))
    s3 = {f"{g}.{c}" for g, c in S3_RE.findall(ns)}
    aliases = set()
    for p in glob.glob(os.path.join(root, "r", "man", "*.Rd")):
        aliases.update(a.strip() for a in ALIAS_RE.findall(read(p)))
    aliases = {a.replace("\\%", "%") for a in aliases}
    for name in sorted(exports):
        if name not in assigned:
            problems.append(f"NAMESPACE: export {name} is not defined in r/R")
        if name not in aliases:
            problems.append(f"NAMESPACE: export {name} has no \\alias in r/man")
    for name in sorted(s3 - funs):
        problems.append(f"NAMESPACE: S3method {name} has no function in r/R")
    for name in sorted(funs):
        if name.startswith(".") or name in exports or name in s3 or name in INTERNAL:
            continue
        problems.append(
            f"r/R: {name} is public-looking but neither exported nor in INTERNAL "
            "(scripts/check-r-registry.py)"
        )
    for name in sorted(set(INTERNAL) - funs):
        problems.append(f"scripts/check-r-registry.py: INTERNAL {name} is not a function in r/R")
    for name in sorted(set(INTERNAL) & exports):
        problems.append(f"scripts/check-r-registry.py: {name} is in INTERNAL but exported")
    return problems


def main() -> int:
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    root = sys.argv[1] if len(sys.argv) > 1 else here
    problems = check(root)
    for line in problems:
        print(line)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
