"""The compiled regimes the repository ships (vramsym/_precompiled/, generated data).

The wheel's build hook compiles nothing (an install takes seconds), so the shipped copy must be
regenerated with ``python -m vramsym.engine.precompile`` whenever what it is compiled from
changes; these tests fail until it is, and check that the key covers everything compiling reads.
"""
import json
import lzma
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from vramsym.engine import cache

ROOT = Path(__file__).resolve().parent.parent
REGENERATE = "run `python -m vramsym.engine.precompile` and commit vramsym/_precompiled/"


def _shipped_entries():
    return {p.name[:-len(".json.xz")] for p in Path(cache.SHIPPED).glob("*.json.xz")}


def test_the_shipped_regimes_were_compiled_from_todays_formulas_and_compiler():
    stored = (Path(cache.SHIPPED) / "KEY").read_text(encoding="ascii").strip()
    assert stored == cache.shipped_key(), f"vramsym/_precompiled/ is stale: {REGENERATE}"


def test_every_default_of_every_catalog_model_is_shipped():
    """Every regime's defaults and every fit row, for every catalog model, is shipped, or listed as
    refused to every model asking for it (REFUSED); nothing else is shipped."""
    from vramsym.catalog.models import catalog, load_model
    from vramsym.catalog.paths import formulas_path
    from vramsym.engine.precompile import REFUSED, combinations, entry_of
    from vramsym.engine.runtime import Vocabulary
    from vramsym.lang.library import load_or_raise
    vocabulary = Vocabulary(library=load_or_raise([Path(formulas_path())]))
    shipped = _shipped_entries()
    refused = set((Path(cache.SHIPPED) / REFUSED).read_text(encoding="ascii").split())
    needed = {entry_of(vocabulary, regime, opts, users[0])[0] for regime, opts, users in combinations(vocabulary, [load_model(n) for n in sorted(catalog())])}
    assert not needed - shipped - refused, f"{len(needed - shipped - refused)} not shipped: {REGENERATE}"
    assert shipped - needed == {"interface"} and not refused & shipped


def test_compiling_reads_nothing_the_key_leaves_out():
    """The shipped key covers cache.COMPILE_INPUTS only; compiling a regime must import no other
    module of the package (a new import there would let a stale copy be read)."""
    code = ("import os, sys, json, vramsym; import vramsym.engine.compiler, vramsym.engine.regimes, "
            "vramsym.lang.library; pkg = os.path.dirname(os.path.realpath(vramsym.__file__)); "
            "print(json.dumps(sorted(os.path.relpath(os.path.realpath(m.__file__), pkg).replace(os.sep, '/') "
            "for n, m in sys.modules.items() if (n == 'vramsym' or n.startswith('vramsym.')) "
            "and getattr(m, '__file__', None))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    read = json.loads(out.stdout)
    assert read and all(r.startswith(cache.COMPILE_INPUTS) for r in read), \
        [r for r in read if not r.startswith(cache.COMPILE_INPUTS)]
    pkg = Path(cache.__file__).resolve().parent.parent
    grammar = pkg / "lang" / "grammar.lark"
    assert grammar.exists() and "lang/grammar.lark".startswith(cache.COMPILE_INPUTS)


@pytest.mark.parametrize("model, regime", [("llama-3.1-8b", "inference"), ("qwen3-8b", "train")])
def test_a_shipped_entry_is_what_compiling_gives_today(model, regime):
    from vramsym.catalog.models import load_model
    from vramsym.catalog.paths import formulas_path
    from vramsym.engine.compiler import compile_regime
    from vramsym.engine.precompile import shipped_name
    from vramsym.engine.regimes import compose
    from vramsym.engine.runtime import Vocabulary
    from vramsym.lang.library import load_or_raise
    lib = load_or_raise([Path(formulas_path())])
    vocabulary = Vocabulary(library=lib)
    m = load_model(model)
    name, _ = shipped_name(lib, vocabulary, regime, {}, m)
    shipped = json.loads(lzma.decompress((Path(cache.SHIPPED) / (name + ".json.xz")).read_bytes()))
    fresh = compile_regime(lib, compose(lib, regime, vocabulary.resolve(regime, {}, m.config)))
    assert json.loads(json.dumps(fresh, sort_keys=True)) == shipped, REGENERATE


def test_the_user_cache_key_survives_a_reinstall_of_the_same_files(tmp_path):
    """The key is the files' content: copying the package afresh (new inodes and times, as a
    reinstall makes) keeps it; a one-byte edit changes it."""
    def key_of(where):
        code = "from vramsym.engine import cache; print(cache.code_key())"
        env = dict(os.environ, PYTHONPATH=str(where))
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                              cwd=where, env=env).stdout.strip()

    def install(where):
        shutil.copytree(ROOT / "vramsym", where / "vramsym", ignore=shutil.ignore_patterns("__pycache__", "_precompiled"))
        shutil.copytree(ROOT / "formulas", where / "formulas")

    install(tmp_path / "a")
    install(tmp_path / "b")
    k = key_of(tmp_path / "a")
    assert k and k == key_of(tmp_path / "b")
    cli = tmp_path / "b" / "vramsym" / "cli.py"
    cli.write_text(cli.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    assert key_of(tmp_path / "b") != k
