"""The package's imports, walked with ``ast``: the floors of docs/pipeline.md as a ratchet.

Floors, lowest first: the ground (errors, exact numbers, the terminal sanitiser, the flag
parser), ``lang/``, ``catalog/``, ``engine/``, ``printers/``, ``measure/``, the façade
(``vramsym/__init__.py``, completion), the command line. A module may import its own floor and
those below it. The import cycles and upward imports that remain are listed here by name: a new
one fails, and so does one that is gone but still listed (take it off the list), so the lists
only shrink. The function-local imports (lazy: the warm path imports no sympy) may only fall in
number; the goal is at most 15, each at a declared gate (issue 20).
"""
import ast
import os

ROOT = os.path.join(os.path.dirname(__file__), "..", "vramsym")

FLOORS = [
    # ground; catalog/paths.py (where the bundled files live, how a file is opened safely) belongs here
    {"vramsym.errors", "vramsym.numbers", "vramsym.terminal", "vramsym.flags", "vramsym.catalog.paths"},
    "vramsym.lang", "vramsym.catalog", "vramsym.engine", "vramsym.printers", "vramsym.measure",
    {"vramsym", "vramsym.completion"}, {"vramsym.cli"},
]

#: upward imports still to remove (importer -> imported)
KNOWN_UPWARD = {
    ("vramsym.engine.compiled", "vramsym.printers.codegen"),
    ("vramsym.engine.cache", "vramsym"),
    ("vramsym.printers.codegen", "vramsym"),
    ("vramsym.printers.calculator", "vramsym"),
    ("vramsym.measure.compare", "vramsym"),
}
#: the one import cycle left: the façade, the engine and the printers
KNOWN_CYCLE_SIZE = 16
#: function-local imports of vramsym/ today (a ratchet: lower it when you remove some)
MAX_LOCAL_IMPORTS = 216


def _modules():
    out = {}
    for folder, _, files in os.walk(ROOT):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(folder, f)
                rel = os.path.relpath(path, os.path.dirname(ROOT))[:-3].replace(os.sep, ".")
                out[rel[:-9] if rel.endswith(".__init__") else rel] = path
    return out


def _imports(mods):
    """(module -> set of vramsym modules it imports, number of function-local imports)."""
    edges, local = {}, 0
    for m, path in mods.items():
        tree = ast.parse(open(path, encoding="utf-8").read())
        top = {id(n) for n in tree.body}
        for stmt in tree.body:          # imports inside top-level try / if blocks are top-level too
            if isinstance(stmt, (ast.Try, ast.If)):
                top |= {id(n) for n in ast.walk(stmt)}
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            local += id(node) not in top
            if isinstance(node, ast.ImportFrom):
                base = m.split(".") if path.endswith("__init__.py") else m.split(".")[:-1]
                name = ".".join(base[:len(base) - node.level + 1] + [node.module or ""]).strip(".") \
                    if node.level else node.module
                targets = [f"{name}.{a.name}" if f"{name}.{a.name}" in mods else name for a in node.names]
            else:
                targets = [a.name for a in node.names]
            edges.setdefault(m, set()).update(t for t in targets if t in mods and t != m)
    return edges, local


def _floor(m):
    for i, f in enumerate(FLOORS):
        if (m in f) if isinstance(f, set) else (m == f or m.startswith(f + ".")):
            return i
    raise AssertionError(f"{m} has no floor in tests/test_imports.py: add it to FLOORS")


def _cycles(edges):
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))
    for v in list(edges):
        if v not in index:
            visit(v)
    return out


def test_every_module_has_a_floor_and_no_new_upward_import():
    mods = _modules()
    edges, _ = _imports(mods)
    upward = {(m, t) for m, ts in edges.items() for t in ts if _floor(t) > _floor(m)}
    assert upward - KNOWN_UPWARD == set(), "new upward imports"
    assert KNOWN_UPWARD - upward == set(), "gone: take them off KNOWN_UPWARD"


def test_one_cycle_left_and_it_only_shrinks():
    edges, _ = _imports(_modules())
    cycles = _cycles(edges)
    assert len(cycles) <= 1, cycles
    size = len(cycles[0]) if cycles else 0
    assert size <= KNOWN_CYCLE_SIZE, cycles
    assert not any(c.startswith(("vramsym.lang", "vramsym.catalog")) for c in (cycles[0] if cycles else ())), cycles


def test_function_local_imports_only_fall():
    _, local = _imports(_modules())
    assert local <= MAX_LOCAL_IMPORTS, f"{local} function-local imports, more than {MAX_LOCAL_IMPORTS}"
