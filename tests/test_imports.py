"""The package's imports, walked with ``ast``: the floors of docs/pipeline.md.

Floors, lowest first: the ground (errors, exact numbers, the terminal sanitiser, the flag
parser, the version), ``lang/``, ``catalog/``, ``engine/``, ``printers/``, ``measure/``, the
façade (``vramsym/__init__.py`` with ``api.py`` and ``symbolic.py``, completion), the command
line. A module may import its own floor and those below it; there is no import cycle. A
function-local (lazy) import is allowed only at a declared gate, listed in GATES as (module,
imported module) (issue 20): a new one fails, and so does a gate that is gone but still listed.
"""
import ast
import os

ROOT = os.path.join(os.path.dirname(__file__), "..", "vramsym")

FLOORS = [
    # ground; catalog/paths.py (where the bundled files live, how a file is opened safely) belongs here
    {"vramsym.errors", "vramsym.numbers", "vramsym.terminal", "vramsym.flags", "vramsym.version", "vramsym.catalog.paths"},
    "vramsym.lang", "vramsym.catalog", "vramsym.engine", "vramsym.printers", "vramsym.measure",
    {"vramsym", "vramsym.api", "vramsym.symbolic", "vramsym.completion"}, {"vramsym.cli"},
]

#: the function-local imports allowed, as (module, imported module); each group is one kind of gate
GATES = {
    # (a) the cache miss: parse and check the formula files (lark, pint), compose and compile (sympy)
    ("vramsym.engine.runtime", "vramsym.lang.library"),
    ("vramsym.engine.runtime", "vramsym.engine.compiler"),
    ("vramsym.engine.runtime", "vramsym.engine.regimes"),
    # (b) optional dependencies, each imported where it is first needed
    ("vramsym.catalog.gguf_file", "gguf"),                       # vramsym[gguf]
    ("vramsym.catalog.hub", "huggingface_hub"),                  # vramsym[hub] (and its constants, errors)
    ("vramsym.printers.plot", "matplotlib"),                     # vramsym[plot]
    ("vramsym.printers.plot", "matplotlib.pyplot"),
    ("vramsym.printers.plot", "matplotlib.colors"),
    ("vramsym.measure.compare", "torch"),                        # vramsym[measure]: the gate of measure/
    ("vramsym.measure.compare", "vramsym.measure.torch_backend"),
    ("vramsym.measure.compare", "vramsym.measure.distributed"),  # torch.distributed, for FSDP2 and TP only
    ("vramsym.measure.hf_model", "peft"),                        # LoRA and QLoRA only
    ("vramsym.measure.torch_backend", "peft"),
    ("vramsym.measure.torch_backend", "bitsandbytes"),           # QLoRA only
    ("vramsym.measure.hf_model", "transformers.masking_utils"),  # parts of transformers only some versions have
    ("vramsym.measure.hf_model", "transformers.modeling_layers"),
    ("vramsym.measure.workloads", "transformers"),               # DynamicCache, guarded for older versions
    # (c) the façade's name table: a public name imports its module on first use
    ("vramsym", "importlib"),
    # (d) standard-library modules the warm path never needs and would pay for at start-up
    ("vramsym.catalog.paths", "pathlib"),
    ("vramsym.catalog.models", "pathlib"),
    ("vramsym.engine.runtime", "pathlib"),       # with the cache miss's gate
    ("vramsym.engine.cache", "shutil"),          # pruning old keys
    ("vramsym.catalog.hub", "socket"),           # whether the Hub resolves
    ("vramsym.catalog.hub", "urllib.parse"),
    ("vramsym.errors", "difflib"),               # "did you mean", on an error only
    ("vramsym.flags", "textwrap"),               # --help only
    ("vramsym.cli", "vramsym.completion"),       # `vramsym completion` only (it imports typing)
}


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
    """(module -> set of vramsym modules it imports at its top, {(module, imported module): the
    number of function-local imports of it})."""
    edges, local = {}, {}
    for m, path in mods.items():
        tree = ast.parse(open(path, encoding="utf-8").read())
        top = {id(n) for n in tree.body}
        for stmt in tree.body:          # imports inside top-level try / if blocks are top-level too
            if isinstance(stmt, (ast.Try, ast.If)):
                top |= {id(n) for n in ast.walk(stmt)}
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            if isinstance(node, ast.ImportFrom):
                base = m.split(".") if path.endswith("__init__.py") else m.split(".")[:-1]
                name = ".".join(base[:len(base) - node.level + 1] + [node.module or ""]).strip(".") \
                    if node.level else node.module
                targets = [f"{name}.{a.name}" if f"{name}.{a.name}" in mods else name for a in node.names]
            else:
                targets = [a.name for a in node.names]
            if id(node) not in top:
                for t in targets:
                    local[(m, t)] = local.get((m, t), 0) + 1
                continue
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


def test_every_module_has_a_floor_and_no_upward_import():
    mods = _modules()
    edges, _ = _imports(mods)
    upward = {(m, t) for m, ts in edges.items() for t in ts if _floor(t) > _floor(m)}
    assert upward == set(), "upward imports"


def test_no_import_cycle():
    edges, _ = _imports(_modules())
    assert _cycles(edges) == []


def test_function_local_imports_only_at_the_gates():
    _, local = _imports(_modules())
    assert set(local) - GATES == set(), "function-local imports outside the gates: move them to the top"
    assert GATES - set(local) == set(), "gone: take them off GATES"
