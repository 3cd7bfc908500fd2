"""The cache: data only, private, keyed by everything that can change an answer."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import vramsym

ROOT = Path(__file__).resolve().parents[1]
ARGV = ["estimate", "--model", "llama-3.1-8b", "--batch", "3", "--seq", "1000", "--json"]


def _run(argv, env, cwd=None, pkg_parent=None):
    env = dict(env)
    if pkg_parent:
        env["PYTHONPATH"] = str(pkg_parent)
    r = subprocess.run([sys.executable, "-m", "vramsym.cli", *argv], capture_output=True, text=True, env=env,
                       cwd=cwd)
    return r.returncode, r.stdout, r.stderr


@pytest.fixture
def env(tmp_path):
    e = dict(os.environ, VRAMSYM_CACHE_DIR=str(tmp_path / "cache"))
    e.pop("VRAMSYM_NO_CACHE", None)
    return e


CASES = [
    ["estimate", "--model", "qwen3-30b-a3b", "--batch", "2", "--seq", "4096", "--quant", "nf4"],
    ["estimate", "--model", "gpt2", "--regime", "train", "--batch", "8", "--seq", "512", "--precision", "fp32"],
    ["solve", "max_batch", "--model", "llama-3.1-8b", "--seq", "4096", "--gpu", "24GB"],
    ["solve", "max_batch", "--model", "mistral-7b-v0.1", "--seq", "8192", "--gpu", "a100-80gb", "--regime", "vllm"],
]


@pytest.mark.parametrize("argv", CASES, ids=[" ".join(c[:4]) for c in CASES])
def test_warm_equals_cold(env, argv):
    cold = _run(argv, dict(env, VRAMSYM_NO_CACHE="1"))
    first = _run(argv, env)     # compiles and stores
    warm = _run(argv, env)      # reads the compiled regime back
    assert cold == first == warm
    assert cold[0] == 0


@pytest.mark.parametrize("argv", [ARGV, CASES[2]], ids=["estimate", "solve"])
def test_warm_path_does_not_import_sympy(env, argv):
    """A cached answer imports none of sympy, pint and lark (tests/test_imports.py: their imports
    sit behind the cache miss's gate)."""
    _run(argv, env)
    code = ("import sys, runpy; sys.argv = ['vramsym'] + %r\n"
            "try:\n    runpy.run_module('vramsym.cli', run_name='__main__')\nexcept SystemExit:\n    pass\n"
            "print('SYMPY' if 'sympy' in sys.modules else 'NOSYMPY', file=sys.stderr)\n"
            "print('heavy:', sorted(m for m in ('sympy', 'pint', 'lark') if m in sys.modules), file=sys.stderr)") % (argv,)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert "NOSYMPY" in r.stderr, r.stderr
    assert "heavy: []" in r.stderr, r.stderr


def test_cache_is_private_data(env):
    _run(ARGV, env)
    d = Path(env["VRAMSYM_CACHE_DIR"])
    assert (os.stat(d).st_mode & 0o777) == 0o700
    assert (os.stat(d / "secret").st_mode & 0o777) == 0o600
    entries = list(d.glob("*/*.json"))
    assert entries and not list(d.rglob("*.pickle")) and not list(d.rglob("*.py"))
    for e in entries:
        mac, _, payload = e.read_bytes().partition(b"\n")
        json.loads(payload)     # data, nothing else


def test_tampered_entry_is_rebuilt_not_used(env, tmp_path):
    """Another hand rewrites a compiled regime in the cache (weights zeroed, a file written on
    load) without the secret: the entry fails its MAC, is rebuilt, and nothing of it runs."""
    import base64
    import marshal
    first = _run(ARGV, env)
    marker = tmp_path / "ran"
    evil = compile(f"open({str(marker)!r}, 'w').write('x')\ndef _inference_total(*a):\n    return 0\n", "evil", "exec")
    d = Path(env["VRAMSYM_CACHE_DIR"])
    tampered = 0
    for e in d.glob("*/*.json"):
        mac, _, payload = e.read_bytes().partition(b"\n")
        data = json.loads(payload)
        if "bytecode" in data:
            data["bytecode"] = base64.b64encode(marshal.dumps(evil)).decode()
            data["code"] = "open('/tmp/x', 'w')"
            e.write_bytes(mac + b"\n" + json.dumps(data).encode())
            tampered += 1
    assert tampered
    assert _run(ARGV, env) == first
    assert _run(["--version"], env)[0] == 0
    assert not marker.exists()


def test_corrupt_entry_is_rebuilt(env):
    first = _run(ARGV, env)
    for e in Path(env["VRAMSYM_CACHE_DIR"]).glob("*/*.json"):
        e.write_bytes(b"\x00garbage")
    assert _run(ARGV, env) == first


def test_shared_cache_folder_is_refused(env, tmp_path):
    d = Path(env["VRAMSYM_CACHE_DIR"])
    d.mkdir(mode=0o700)
    (d / "secret").write_bytes(b"x" * 32)
    os.chmod(d / "secret", 0o644)       # readable by others: a planted or leaked key
    code, out, err = _run(ARGV, env)
    assert code == 0 and "not a private file" in err
    cold = _run(ARGV, dict(env, VRAMSYM_NO_CACHE="1"))
    assert out == cold[1]


def test_editing_a_stage_changes_the_answer(env, tmp_path):
    """A copy of the package whose printer emits a different total misses the cache."""
    pkg = tmp_path / "pkg"
    shutil.copytree(ROOT / "vramsym", pkg / "vramsym", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "formulas", pkg / "formulas")
    before = _run(ARGV, env, cwd=tmp_path, pkg_parent=pkg)
    assert before[0] == 0, before
    stage = pkg / "vramsym" / "engine" / "assemble.py"     # stage 5: the total counted twice
    text = stage.read_text()
    assert 'f"    return ({total}, (' in text
    stage.write_text(text.replace('f"    return ({total}, (', 'f"    return (2 * {total}, ('))
    after = _run(ARGV, env, cwd=tmp_path, pkg_parent=pkg)
    assert after[0] == 0, after
    assert json.loads(after[1])["total_bytes"] == 2 * json.loads(before[1])["total_bytes"]


def test_cache_keeps_a_bounded_number_of_keys(env, tmp_path):
    from vramsym.engine import cache
    d = Path(env["VRAMSYM_CACHE_DIR"])
    old = dict(os.environ)
    os.environ.update(env)
    os.environ.pop("VRAMSYM_NO_CACHE", None)
    try:
        for i in range(cache.KEEP + 4):
            cache.put(f"key{i:02d}", "interface", {"i": i})
        assert len([p for p in d.iterdir() if p.is_dir()]) <= cache.KEEP
        assert cache.get(f"key{cache.KEEP + 3:02d}", "interface") == {"i": cache.KEEP + 3}
    finally:
        os.environ.clear()
        os.environ.update(old)


def test_key_follows_the_version_and_python(monkeypatch):
    import vramsym
    from vramsym.engine import cache
    k = cache.code_key()
    monkeypatch.setattr(cache, "__version__", vramsym.__version__ + ".post1")
    assert cache.code_key() != k
    monkeypatch.setattr(cache, "__version__", vramsym.__version__)
    monkeypatch.setattr(cache.sys, "version", "3.99.0 (another interpreter)")
    assert cache.code_key() != k


def test_each_library_answers_with_its_own_formulas():
    """Compiled regimes are remembered per library, never by an object id a later library can reuse."""
    import gc
    from helpers import lib_text
    for c in range(1, 40):
        lib = lib_text(f'term t = {c} * [byte] : byte "c bytes" source "test"\nregime r "r" {{ add t }}\n')
        assert vramsym.compile(None, "r", library=lib).evaluate().total_bytes == c
        del lib
        gc.collect()


def test_an_edited_formula_file_is_read_again(tmp_path, monkeypatch):
    """In one process (a notebook, say): edit a --formulas file and the next compile sees it."""
    monkeypatch.setenv("VRAMSYM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("VRAMSYM_NO_CACHE", raising=False)
    p = tmp_path / "extra.vram"
    m = vramsym.load_model("gpt2")
    totals = []
    for c in (1000, 2000):
        p.write_text(f'term t = {c} * [byte] : byte "c bytes" source "test"\n'
                     f'regime r extends inference "r" {{ add t }}\n')
        totals.append(vramsym.compile(m, "r", formulas=[str(p)]).evaluate(batch=1, seq=8).total_bytes)
    assert totals[1] - totals[0] == 1000


SHIPPED_RUN = ("import sys, vramsym.engine.cache as c; c.SHIPPED = sys.argv[1]; sys.argv = ['vramsym'] + sys.argv[2:]\n"
               "from vramsym.cli import main\n"
               "try:\n    main()\n"
               "finally:\n    print('sympy imported' if 'sympy' in sys.modules else 'no sympy', file=sys.stderr)\n")


def test_shipped_regimes_answer_a_first_run_without_sympy_and_only_while_their_key_matches(tmp_path, env):
    from vramsym import precompile
    folder = tmp_path / "shipped"
    assert precompile.write(str(folder), models=["llama-3.1-8b"]) > 10
    ref = subprocess.run([sys.executable, "-m", "vramsym.cli", *ARGV], capture_output=True, text=True,
                         env=dict(env, VRAMSYM_NO_CACHE="1"))
    want = json.loads(ref.stdout)["total_bytes"]

    def run(cache_dir):
        r = subprocess.run([sys.executable, "-c", SHIPPED_RUN, str(folder), *ARGV], capture_output=True, text=True,
                           env=dict(env, VRAMSYM_CACHE_DIR=str(cache_dir)))
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)["total_bytes"], r.stderr.strip().splitlines()[-1]

    assert run(tmp_path / "first") == (want, "no sympy")       # empty user cache: the shipped entries
    assert run(tmp_path / "first") == (want, "no sympy")       # then the user's cache (bytecode)
    (folder / "KEY").write_text("0" * 40 + "\n")                # built from other files: never read
    assert run(tmp_path / "second") == (want, "sympy imported")
    r = subprocess.run([sys.executable, "-c", SHIPPED_RUN, str(folder), *ARGV], capture_output=True, text=True,
                       env=dict(env, VRAMSYM_CACHE_DIR=str(tmp_path / "third"), VRAMSYM_NO_CACHE="1"))
    assert r.stderr.strip().splitlines()[-1] == "sympy imported"   # NO_CACHE: compiled afresh
