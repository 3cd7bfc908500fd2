"""The package's imports, walked with ``ast``: the floors of docs/pipeline.md.

Floors, lowest first: the ground (errors, exact numbers, typed records, the terminal sanitiser, the flag
parser, the version), ``lang/``, ``catalog/``, ``engine/``, ``printers/``, ``measure/``, the
façade (``vramsym/__init__.py`` with ``api.py`` and ``symbolic.py``, completion), the command
line. A module may import its own floor and those below it; there is no import cycle. A
function-local (lazy) import is allowed only at a declared gate, listed in GATES as (module,
imported module) (issue 20): a new one fails, and so does a gate that is gone but still listed;
there are at most MOST_LOCAL of them.
"""
import ast
import os

ROOT = os.path.join(os.path.dirname(__file__), "..", "vramsym")

FLOORS = [
    # ground; catalog/paths.py (where the bundled files live, how a file is opened safely) belongs here
    {"vramsym.errors", "vramsym.numbers", "vramsym.terminal", "vramsym.flags", "vramsym.version", "vramsym.catalog.paths",
     "vramsym.records"},
    "vramsym.lang", "vramsym.catalog", "vramsym.engine", "vramsym.printers", "vramsym.measure",
    {"vramsym", "vramsym.api", "vramsym.symbolic", "vramsym.completion", "vramsym.precompile"}, {"vramsym.cli"},
]

#: the most function-local import statements vramsym/ may hold (issue 20: lark has 4.7 per 1,000 lines)
MOST_LOCAL = 15

#: the function-local imports allowed, as (module, imported module); each group is one kind of gate
GATES = {
    # (a) the cache miss: parse and check the formula files (lark, pint), compose and compile (sympy)
    ("vramsym.engine.runtime", "vramsym.engine.units"),
    ("vramsym.printers.calculator", "vramsym.printers.codegen"),  # a page group not in the cache: printed
    ("vramsym.printers.codegen", "vramsym.engine.runtime"),      # export --to python: the engine's own module
    # (b) optional dependencies, one gate each (pint's compat.py habit)
    ("vramsym.catalog.hub", "vramsym.catalog.hub_client"),       # vramsym[hub]: hub_client imports huggingface_hub
    ("vramsym.printers.plot", "matplotlib.colors"),              # vramsym[plot]: one statement, both modules
    ("vramsym.printers.plot", "matplotlib.pyplot"),
    ("vramsym.measure.compare", "vramsym.measure.torch_backend"),  # vramsym[measure] (torch, transformers): one
    ("vramsym.measure.compare", "vramsym.measure.distributed"),    # statement, the one- and multi-GPU harnesses
    ("vramsym.measure.hf_model", "peft"),                        # LoRA and QLoRA only
    ("vramsym.measure.workloads", "transformers"),               # a real Trainer run (measure_trainer) only
    ("vramsym.measure.torch_backend", "bitsandbytes"),           # QLoRA only
    # (c) standard-library modules the warm path never needs and would pay for at start-up
    ("vramsym.engine.cache", "shutil"),          # pruning old keys
    ("vramsym.engine.cache", "lzma"),            # a shipped entry read on a cold start, then kept in the user cache
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
    """Counting the gates' function-local imports too: a gate never leads back to its module."""
    mods = _modules()
    edges, local = _imports(mods)
    assert _cycles(edges) == []
    every = {m: set(ts) for m, ts in edges.items()}
    for m, t in local:
        if t in mods:
            every.setdefault(m, set()).add(t)
    assert _cycles(every) == []


def test_function_local_imports_only_at_the_gates():
    _, local = _imports(_modules())
    assert set(local) - GATES == set(), "function-local imports outside the gates: move them to the top"
    assert GATES - set(local) == set(), "gone: take them off GATES"


def test_few_function_local_imports():
    """Counted as statements: ``import a, b`` at one gate is one."""
    n = 0
    for path in _modules().values():
        tree = ast.parse(open(path, encoding="utf-8").read())
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n += sum(isinstance(x, (ast.Import, ast.ImportFrom)) for x in ast.walk(fn)
                         if x is not fn and not _in_nested(fn, x))
    assert n <= MOST_LOCAL, f"{n} function-local import statements in vramsym/ (at most {MOST_LOCAL})"


def _in_nested(fn, node):
    """Whether ``node`` lies in a function nested in ``fn`` (counted with that function)."""
    for inner in ast.walk(fn):
        if inner is not fn and isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                and any(x is node for x in ast.walk(inner)):
            return True
    return False


def test_a_warm_estimate_imports_no_heavy_module(tmp_path):
    """A warm ``vramsym estimate`` (its regime in the user cache) imports no sympy, pint or lark,
    and none of the standard-library modules that cost milliseconds at start-up: ``dataclasses``
    (it imports ``inspect``, about 8 ms: a model reader's record once brought it back), ``shutil``
    (with bz2 and lzma), ``typing``, ``difflib``."""
    import json
    import subprocess
    import sys
    code = ("import sys; sys.argv = ['vramsym', 'estimate', '--model', 'llama-3.1-8b', '--batch', '1', '--seq', '4096',"
            " '--json']\nfrom vramsym.cli import main\ntry:\n    main()\nexcept SystemExit:\n    pass\n"
            "import json\nprint(json.dumps(sorted(sys.modules)), file=sys.stderr)\n")   # json: vramsym's already
    env = dict(os.environ, VRAMSYM_CACHE_DIR=str(tmp_path / "cache"), COLUMNS="100")
    for _ in range(2):       # the first run fills the cache
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
        assert r.returncode == 0, r.stderr
    loaded = set(json.loads(r.stderr.strip().splitlines()[-1]))
    heavy = {"sympy", "pint", "lark", "dataclasses", "inspect", "shutil", "typing", "difflib"} & loaded
    assert not heavy, heavy
