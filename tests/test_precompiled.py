"""The compiled regimes the repository ships (vramsym/_precompiled/, generated data).

The wheel's build hook compiles nothing (an install takes seconds), so the shipped copy must be
regenerated with ``python -m vramsym.precompile`` whenever what it is compiled from
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
REGENERATE = "run `python -m vramsym.precompile` and commit vramsym/_precompiled/"


def _shipped_entries():
    return {p.name[:-len(".json.xz")] for p in Path(cache.SHIPPED).glob("*.json.xz")}


def test_the_shipped_regimes_were_compiled_from_todays_formulas_and_compiler():
    stored = (Path(cache.SHIPPED) / "KEY").read_text(encoding="ascii").strip()
    assert stored == cache.shipped_key(), f"vramsym/_precompiled/ is stale: {REGENERATE}"


def test_the_shipped_page_groups_were_printed_by_todays_printers():
    stored = (Path(cache.SHIPPED_PAGE) / "KEY").read_text(encoding="ascii").strip()
    assert stored == cache.shipped_key(page=True), \
        f"vramsym/_precompiled/page/ is stale: {REGENERATE} (--page: the page groups alone)"


def _fresh(code, tmp_path, **env) -> str:
    """What ``python -c code`` prints from an empty user cache under ``tmp_path`` (``env`` added)."""
    run_env = dict(os.environ, VRAMSYM_CACHE_DIR=str(tmp_path / "cache"))
    run_env.pop("VRAMSYM_NO_CACHE", None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env=dict(run_env, **env))
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


def test_every_combination_of_the_catalog_assembles_from_shipped_units_without_sympy(tmp_path):
    """Every regime's defaults, every fit row and every page configuration, for every catalog model,
    is assembled from the shipped digest and units alone, from an empty user cache: the formula
    files are never read and no unit is compiled (sympy is never needed). Only the digest and the
    units (and the interface) are shipped."""
    assert {p.name for p in Path(cache.SHIPPED).glob("*.json.xz")} == \
        {"interface.json.xz", "digest.json.xz", "units.json.xz"}, REGENERATE
    code = ("from vramsym.catalog.models import catalog, load_model\n"
            "from vramsym.engine.runtime import Vocabulary\n"
            "from vramsym.precompile import combinations\n"
            "v = Vocabulary.of()\n"
            "n = 0\n"
            "for regime, opts, users in combinations(v, [load_model(m) for m in sorted(catalog())]):\n"
            "    v.compiled(regime, opts, users[0].config); n += 1\n"
            "print(n, v.library is None, len(v._unit_sources[1]))")
    n, unread, compiled = _fresh(code, tmp_path).split()
    assert int(n) > 800 and (unread, compiled) == ("True", "0"), (out.stdout, REGENERATE)


def test_a_combination_no_catalog_model_makes_assembles_without_sympy(tmp_path):
    """Options the catalog's combinations never put together (Mixtral's LoRA with full
    checkpointing and Lion) assemble from the shipped units too, from an empty user cache, without
    importing sympy, and give what the formulas give (the units compiled afresh)."""
    code = ("import sys, json, vramsym\n"
            "e = vramsym.estimate('mixtral-8x7b', 'lora', {'checkpointing': 'full', 'optimizer': 'lion'},"
            " {'batch': 2, 'seq': 2048})\n"
            "print(e.exact_total, 'sympy' in sys.modules)")
    total, with_sympy = _fresh(code, tmp_path).split()
    assert with_sympy == "False", total
    assert _fresh(code, tmp_path, VRAMSYM_NO_CACHE="1").split() == [total, "True"]


def test_every_group_of_the_whole_catalogs_page_is_shipped():
    """`vramsym html` with the whole catalog builds its page from shipped data: every group the
    page holds (each model, regime and one-option variant that is not refused) is in
    _precompiled/page/, and nothing else is; what the page builds from an empty cache prints no
    group with sympy (tests/test_calculator.py builds it)."""
    from vramsym.catalog.models import catalog, load_model
    from vramsym.engine.runtime import Vocabulary
    from vramsym.printers.calculator import page_group_specs
    needed = set(page_group_specs(Vocabulary.of(), [load_model(n) for n in sorted(catalog())]))
    shipped = {p.name[:-len(".json.xz")] for p in Path(cache.SHIPPED_PAGE).glob("*.json.xz")}
    assert len(needed) > 300 and needed == shipped, \
        f"{len(needed - shipped)} not shipped, {len(shipped - needed)} extra: {REGENERATE}"


@pytest.mark.parametrize("page", [False, True], ids=["regimes", "page groups"])
def test_compiling_reads_nothing_the_key_leaves_out(page):
    """The shipped key covers cache.COMPILE_INPUTS only (and PAGE_INPUTS for the page groups);
    compiling a regime (printing a page group) must import no other module of the package (a new
    import there would let a stale copy be read)."""
    inputs = cache.COMPILE_INPUTS + (cache.PAGE_INPUTS if page else ())
    code = ("import os, sys, json, vramsym; import vramsym.engine.compiler, vramsym.engine.regimes, "
            "vramsym.engine.units, "
            f"vramsym.lang.library{', vramsym.printers.codegen' if page else ''}; "
            "pkg = os.path.dirname(os.path.realpath(vramsym.__file__)); "
            "print(json.dumps(sorted(os.path.relpath(os.path.realpath(m.__file__), pkg).replace(os.sep, '/') "
            "for n, m in sys.modules.items() if (n == 'vramsym' or n.startswith('vramsym.')) "
            "and getattr(m, '__file__', None))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    read = json.loads(out.stdout)
    assert read and all(r.startswith(inputs) for r in read), [r for r in read if not r.startswith(inputs)]
    assert not page or "printers/codegen.py" in read
    pkg = Path(cache.__file__).resolve().parent.parent
    grammar = pkg / "lang" / "grammar.lark"
    assert grammar.exists() and "lang/grammar.lark".startswith(cache.COMPILE_INPUTS)


def test_the_shipped_digest_and_units_are_what_compiling_gives_today():
    """The shipped digest equals the formula files' digest today, and units drawn at random from the
    shipped ones (seeded) equal a fresh compile of each."""
    import random
    from vramsym.catalog.paths import formulas_path
    from vramsym.engine import units
    from vramsym.lang.library import load_or_raise
    lib = load_or_raise([Path(formulas_path())])
    shipped = json.loads(lzma.decompress((Path(cache.SHIPPED) / "digest.json.xz").read_bytes()))
    assert json.loads(json.dumps(units.digest(lib))) == shipped, REGENERATE
    packed = json.loads(lzma.decompress((Path(cache.SHIPPED) / "units.json.xz").read_bytes()))
    for key in random.Random(7).sample(sorted(packed), 40):
        assert json.loads(json.dumps(units.compile_unit(lib, key))) == packed[key], (key, REGENERATE)


def test_a_shipped_page_group_is_what_printing_gives_today_and_a_cold_page_needs_no_sympy(tmp_path):
    """One shipped group (llama-3.1-8b's train defaults) equals a fresh print; a page of two catalog
    models built from an empty user cache reads every group shipped: sympy is never imported."""
    from vramsym.catalog.gpus import catalog as gpus
    from vramsym.catalog.models import load_model
    from vramsym.engine.runtime import Vocabulary
    from vramsym.printers import calculator
    vocabulary = Vocabulary.of()
    m = load_model("llama-3.1-8b")
    spec = calculator.group_spec(vocabulary.compiled("train", {}, m.config), calculator.gpu_aliases(list(gpus())))
    name = calculator.group_name(*spec)
    shipped = json.loads(lzma.decompress((Path(cache.SHIPPED_PAGE) / (name + ".json.xz")).read_bytes()))
    assert shipped == json.loads(json.dumps(calculator.make_group(vocabulary.load_library(), *spec))), REGENERATE
    code = ("import sys; from vramsym.printers.calculator import page; "
            "html = page(['llama-3.1-8b', 'qwen3-8b']); "
            "print(len(html), 'sympy' in sys.modules, 'lark' in sys.modules)")
    env = dict(os.environ, VRAMSYM_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("VRAMSYM_NO_CACHE", None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT, env=env)
    size, with_sympy, with_lark = out.stdout.split()
    assert int(size) > 100_000 and (with_sympy, with_lark) == ("False", "False"), out.stdout


def test_a_refused_combination_is_refused_from_shipped_data(tmp_path):
    """A catalog model asking for a regime that does not model it (Falcon-H1's Mamba2 state in
    vLLM) is refused from an empty user cache without importing sympy, with the sentence every
    refusal gives."""
    env = dict(os.environ, VRAMSYM_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("VRAMSYM_NO_CACHE", None)
    code = ("import sys, vramsym\n"
            "try:\n    vramsym.compile(vramsym.load_model('falcon-h1-7b'), 'vllm').evaluate(batch=1, seq=128)\n"
            "except vramsym.InputError as e:\n    print(e)\n"
            "print('sympy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT, env=env)
    refusal, with_sympy = out.stdout.strip().rsplit("\n", 1)
    assert with_sympy == "False" and "regime 'vllm' does not model" in refusal, out.stdout


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


def test_precompile_refuses_an_option_it_does_not_know_rather_than_writing_a_folder_named_after_it(tmp_path, monkeypatch,
                                                                                                  capsys):
    """`python -m vramsym.precompile --help` once started a 20-minute run writing into ./--help."""
    from vramsym import precompile
    monkeypatch.chdir(tmp_path)
    assert precompile.main(["--help"]) == 0
    assert "usage: python -m vramsym.precompile" in capsys.readouterr().out
    assert precompile.main(["--bogus"]) == 2
    assert "unexpected argument '--bogus'" in capsys.readouterr().err
    assert precompile.main([str(tmp_path / "a"), str(tmp_path / "b")]) == 2
    assert list(tmp_path.iterdir()) == []
