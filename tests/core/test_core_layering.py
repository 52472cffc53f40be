"""The modules of `mylib/core` import each other without cycles, function-local imports
included, so the core reads bottom-up (see "Import layers" in docs/core_api.md).

`tests/test_house.py` checks the rooms (packages) against each other; this checks the
modules inside the core room.
"""

import ast
import itertools
import os

from import_graph import cycles  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORE = os.path.join(ROOT, "mylib", "core")


def _module_name(path):
    rel = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
    return rel.removesuffix(".__init__")


def _is_module(name):
    base = os.path.join(ROOT, *name.split("."))
    return os.path.exists(base + ".py") or os.path.exists(os.path.join(base, "__init__.py"))


def _core_imports(path):
    """``(target, lineno, function_local)`` for each mylib.core module `path` imports."""
    with open(path) as f:
        tree = ast.parse(f.read())
    local = {id(n) for fn in ast.walk(tree)
             if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
             for n in ast.walk(fn)}
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom) and n.level == 0 and n.module and \
                n.module.startswith("mylib.core"):
            # `from mylib.core.ops import array_ops` imports the module array_ops.
            targets = [f"{n.module}.{a.name}" if _is_module(f"{n.module}.{a.name}")
                       else n.module for a in n.names]
        elif isinstance(n, ast.Import):
            targets = [a.name for a in n.names if a.name.startswith("mylib.core")]
        else:
            continue
        for t in targets:
            yield t, n.lineno, id(n) in local


def _edges():
    """``{module: {imported module: [(file, line, function_local)]}}`` inside the core;
    the package `mylib.core` itself (its `__init__` re-exports everything) is left out."""
    edges = {}
    for root, _, files in os.walk(CORE):
        for f in sorted(files):
            if not f.endswith(".py"):
                continue
            path = os.path.join(root, f)
            src = _module_name(path)
            if src == "mylib.core":
                continue
            for dst, line, local in _core_imports(path):
                sites = edges.setdefault(src, {}).setdefault(dst, []) \
                    if dst not in (src, "mylib.core") else []
                site = (os.path.relpath(path, ROOT), line, local)
                if dst not in (src, "mylib.core") and site not in sites:
                    sites.append(site)
    return edges


def _shortest_cycle(edges, comp):
    """A shortest import cycle through the first module of `comp`, as a list of modules."""
    start = comp[0]
    prev, frontier = {start: None}, [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(edges.get(v, ())):
                if w == start:
                    path = [v]
                    while prev[path[-1]] is not None:
                        path.append(prev[path[-1]])
                    return path[::-1] + [start]
                if w in comp and w not in prev:
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    return [start]


def _site(sites):
    f, line, local = sites[0]
    return f"{f}:{line}" + ("  (function-local)" if local else "")


def test_edges_are_found():
    # The check is not vacuous: it sees module-level and submodule imports.
    edges = _edges()
    assert "mylib.core.graph" in edges["mylib.core.op_registry"]
    assert "mylib.core.ops.constant_ops" in edges["mylib.core.ops.array_ops"]
    assert cycles({"a": {"b": []}, "b": {"c": []}, "c": {"a": []}}) == [["a", "b", "c"]]


def test_core_modules_import_no_cycle():
    edges = _edges()
    problems = []
    for comp in cycles(edges):
        cycle = _shortest_cycle(edges, comp)
        lines = [f"{len(comp)} core modules import each other: {', '.join(comp)}",
                 "  for example:"]
        lines += [f"    {a} -> {b}  at {_site(edges[a][b])}"
                  for a, b in itertools.pairwise(cycle)]
        local = [f"    {a} -> {b}  at {_site([s for s in sites if s[2]]).split()[0]}"
                 for a in comp for b, sites in sorted(edges[a].items())
                 if b in comp and any(s[2] for s in sites)]
        if local:
            lines += ["  function-local imports inside it:"] + local
        problems.append("\n".join(lines))
    assert not problems, (
        "Import cycle inside mylib/core. Move what points up to a lower module (or the "
        "op's gradient to the module of the ops it builds), or look an op type up in the "
        "registry; a function-local import only hides the cycle.\n" + "\n".join(problems))


def test_no_function_local_core_imports():
    # A function-local import of another core module is a cycle in hiding (an optional
    # dependency is never a core module): import it at the top of the file.
    local = [f"{f}:{line}  {a} -> {b}" for a, bs in sorted(_edges().items())
             for b, sites in sorted(bs.items()) for f, line, is_local in sites if is_local]
    assert not local, "Function-local imports of core modules:\n" + "\n".join(local)
