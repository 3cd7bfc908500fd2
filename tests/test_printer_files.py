"""The calculator page's own files (vramsym/printers/page/: the HTML template, the JavaScript app,
the exact BigInt runtime) ship inside the package, are read only when a page is built, and make
the page; the exact runtime runs the exact JavaScript export under node."""
import json
import shutil
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest
import sympy

from vramsym.printers import calculator, codegen

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "vramsym" / "printers" / "page"
FILES = ("calculator.html", "app.js", "exact.js")


def test_the_files_are_in_the_package_folder():
    assert Path(calculator.PAGE_DIR).resolve() == PAGE.resolve()
    for name in FILES:
        assert (PAGE / name).is_file(), name
        assert (PAGE / name).read_text(encoding="utf-8").endswith("\n"), name
    assert {calculator.TEMPLATE_FILE, calculator.APP_FILE, codegen.JS_EXACT_RUNTIME_FILE} == set(FILES)


def test_the_wheel_takes_them():
    """hatchling's wheel takes every file of ``packages`` that git does not ignore: the page's files
    must be neither excluded by the build config nor ignored by git (building a wheel here compiles
    every regime, too slow for a test; test_package.py builds one)."""
    try:
        import tomllib
    except ImportError:            # Python 3.10
        pytest.skip("no tomllib")
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hatch"]["build"]
    wheel = cfg["targets"]["wheel"]
    assert wheel["packages"] == ["vramsym"]
    for key in ("only-include", "exclude", "include"):
        assert key not in wheel and key not in cfg, key
    git = shutil.which("git")
    if git is None or not (ROOT / ".git").exists():
        return
    r = subprocess.run([git, "check-ignore", *(f"vramsym/printers/page/{n}" for n in FILES)],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 1 and not r.stdout.strip(), f"git ignores {r.stdout}"


def test_the_wheel_ships_them(tmp_path):
    """A wheel built without the build hook (HATCH_BUILD_NO_HOOKS: hatchling's file selection only,
    seconds instead of the minutes the precompiling hook takes) holds the page's files."""
    import os
    import zipfile
    env = dict(os.environ, HATCH_BUILD_NO_HOOKS="true")
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
                       capture_output=True, text=True, env=env)
    if r.returncode != 0:
        pytest.skip(f"cannot build a wheel here: {r.stderr[-300:]}")
    names = set(zipfile.ZipFile(next(tmp_path.glob("vramsym-*.whl"))).namelist())
    for name in FILES:
        assert f"vramsym/printers/page/{name}" in names, name


def test_importing_reads_no_file():
    code = ("import vramsym, vramsym.cli, vramsym.printers.calculator as c, vramsym.printers.codegen;"
            "assert c.page_file.cache_info().currsize == 0, c.page_file.cache_info()")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr


def test_the_template_has_each_slot_once_and_the_scripts_none():
    tpl = calculator.page_file(calculator.TEMPLATE_FILE)
    assert [m.group(1) for m in calculator._SLOT.finditer(tpl)] == ["DATA", "RUNTIME", "APP"]
    for name in (calculator.APP_FILE, codegen.JS_EXACT_RUNTIME_FILE):
        assert not calculator._SLOT.search(calculator.page_file(name)), name
    # the old module attributes still read the files
    assert calculator._HTML == tpl and calculator._APP == calculator.page_file("app.js")
    assert codegen.JS_EXACT_RUNTIME == codegen.js_exact_runtime() == calculator.page_file("exact.js")


def test_the_page_is_the_template_filled_once():
    text = calculator.page(["gpt2"])
    tpl = calculator.page_file(calculator.TEMPLATE_FILE)
    app, runtime = calculator.page_file(calculator.APP_FILE), codegen.js_exact_runtime()
    head, rest = tpl.split("/*DATA*/")
    middle, rest = rest.split("/*RUNTIME*/")
    between, tail = rest.split("/*APP*/")
    assert text.startswith(head) and text.endswith(between + app + tail)
    assert text.count(runtime) == 1 and text.count(app) == 1
    assert middle + runtime + "const FUNCS = [\n" in text
    # the layout the page had when these were Python strings
    assert '"use strict";\n\nconst Q = (() => {' in text and "\n];\n\n\nconst DATA = JSON.parse(" in text
    assert text.endswith("render();\n\n</script>\n</body></html>\n")


def test_a_slot_in_the_data_is_not_filled(monkeypatch):
    """One pass: a model name holding a slot marker stays data."""
    data = {"models": [{"name": "/*APP*/ /*RUNTIME*/ /*DATA*/"}]}
    monkeypatch.setattr(calculator, "build_data", lambda models=None, vocabulary=None, assume=None: (data, "const FUNCS = [];\n"))
    text = calculator.page()
    app = calculator.page_file(calculator.APP_FILE)
    assert text.count(app) == 1 and text.count("const Q = ") == 1
    assert "/*APP*/ /*RUNTIME*/ /*DATA*/" in text


# ---------------------------------------------------------------------------
# the exact runtime under node

def test_exact_javascript_under_node(tmp_path):
    node = shutil.which("node")
    if node is None:
        pytest.skip("no node")
    x, y, z = sympy.symbols("x y z", positive=True)
    exprs = [x + y / 3, x * y ** 2 - sympy.Rational(7, 5) * z, x ** -2, sympy.ceiling(x / 3) * 16,
             sympy.floor(-x * y / 7), sympy.Min(x, y, 3), sympy.Max(x, 2 * y - z),
             sympy.Piecewise((x, sympy.And(x > 1, y <= 2)), (y, sympy.Or(sympy.Eq(x, 2), sympy.Ne(y, 3))),
                             (z, True)),
             sympy.Piecewise((x + 1, sympy.Not(x >= y)), (2 * y, True))]
    env = {"x": Fraction(7, 2), "y": Fraction(3), "z": Fraction(-5, 4)}
    script = (codegen.js_exact_runtime()
              + "const a = {" + ", ".join(f"{json.dumps(k)}: Q.parse({json.dumps(str(v))})" for k, v in env.items())
              + "};\nconst out = [" + ",\n".join(codegen.js_exact(e) for e in exprs) + "];\n"
              + "console.log(JSON.stringify(out.map((v) => v[0] + '/' + v[1])));\n")
    (tmp_path / "t.js").write_text(script)
    r = subprocess.run([node, str(tmp_path / "t.js")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    subs = {s: sympy.Rational(env[s.name].numerator, env[s.name].denominator) for s in (x, y, z)}
    want = [Fraction(str(e.xreplace(subs))) for e in exprs]
    assert [Fraction(v) for v in json.loads(r.stdout)] == want
