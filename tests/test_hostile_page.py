"""Issue 19, hostile input to `vramsym plot` and to the calculator page (`vramsym html`).

plot: every --from / --to / --points value is a correct picture or exit 1 with a sentence naming
the flag (never an internal error: no float overflow, --to bounded by the varied symbol's declared
max or by sweep.MAX_X), and a model name that is mathtext, or holds control characters or a lone
surrogate, is drawn as plain text. The page: a template slot in a name is data, a name that is not
UTF-8 is escaped, and a link the command line would refuse (a number beyond its limits, an unknown
model, regime, precision, GPU or parameter) shows its error alone and computes nothing."""
import json
import os
import re
from pathlib import Path

import pytest

import vramsym
from helpers import run_cli

ROOT = Path(__file__).resolve().parents[1]
CONFIG = json.loads((ROOT / "formulas" / "models" / "qwen2.5-0.5b.json").read_text())["config"]
SLOTS = "/*APP*/ /*DATA*/ /*RUNTIME*/"
MATHTEXT = ["$\\undefinedcommand$", "$\\frac{1}{$"]
CONTROL = "\x1b]0;pwned\x07"
SURROGATE = os.fsdecode(b"bad\xff")       # a file name that is not UTF-8: 'bad\udcff'


def _model_dir(tmp_path, name: str) -> str:
    """A model whose name is ``name``: the folder of its config.json."""
    d = tmp_path / name
    d.mkdir()
    (d / "config.json").write_text(json.dumps(CONFIG))
    return str(d)


def _model_file(tmp_path, file: str, name: str) -> str:
    """A model file that names itself (the catalog's form: {"name", "config"})."""
    p = tmp_path / file
    p.write_text(json.dumps({"name": name, "config": CONFIG}))
    return str(p)


# ---- plot: numbers -------------------------------------------------------------------------

BIG = str(10**39)


@pytest.mark.parametrize("flags,needle", [
    (["--to", BIG, "-o", "x.png"], "--to"),                        # was exit 70
    (["--to", str(10**400), "--log", "-o", "x.png"], "--to"),      # was exit 70 (float overflow)
    (["--to", "10^39"], "--to"),
    (["--to", "1e39", "--log"], "--to must be at most 1,000,000,000,000,000"),
    (["--to", "1e400", "--log"], "--to '1e400': an exponent beyond"),
    (["--to", "1000000000000001"], "--to must be at most"),
    (["--to", "0"], "--to must be at least 1"),
    (["--to", "-5"], "--to must be at least 1"),
    (["--to", "1.5"], "--to must be a whole number"),
    (["--to", "abc"], "--to 'abc': not a number"),
    (["--from", "9", "--to", "3"], "must not be below --from"),
    (["--from", "0"], "--from must be at least 1"),
    (["--from", "1e41"], "--from"),
    (["--points", "0"], "--points must be at least"),
    (["--points", "1"], "--points must be at least 2"),
    (["--points", str(10**9)], "--points must be at most 4,096"),
    (["--points", "1e9"], "--points must be at most 4,096"),
    (["--points", "x"], "--points 'x'"),
])
def test_hostile_plot_numbers_are_exit_1(flags, needle, tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    monkeypatch.chdir(tmp_path)
    flags = flags if "-o" in flags else flags + ["--json"]
    code, out, err = run_cli(["plot", "--model", "llama-3.1-8b", "--vary", "batch", "--seq", "512", *flags])
    assert code == 1, (code, out, err)
    err = err + out      # --json: the error is the printed object
    assert needle in err and "internal error" not in err and "Traceback" not in err, err
    assert not (tmp_path / "x.png").exists()


def test_gpus_are_bounded_by_their_declared_max():
    code, out, err = run_cli(["plot", "--model", "gpt2", "--regime", "train", "--zero", "3", "--batch", "1",
                              "--seq", "512", "--vary", "gpus", "--to", "2000000", "--json"])
    assert code == 1 and "--to 2,000,000: gpus must be at most 1048576" in out, (out, err)


@pytest.mark.parametrize("log", [False, True])
def test_the_largest_plotted_value_draws(log, tmp_path):
    pytest.importorskip("matplotlib")
    from vramsym.engine.sweep import MAX_X
    path = tmp_path / "far.png"
    code, out, err = run_cli(["plot", "--model", "gpt2", "--seq", "512", "--to", "1e15", "--points", "9",
                              "--gpu", "24GB", "-o", str(path), "--json"] + (["--log"] if log else []))
    assert code == 0, err
    d = json.loads(out)
    assert d["x"][0] == 1 and d["x"][-1] == MAX_X == 10**15 and d["x"] == sorted(set(d["x"])) and len(d["x"]) <= 9
    assert d["total_bytes"][-1] == vramsym.compile("gpt2").evaluate(batch=10**15, seq=512).total_bytes
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_log_spacing_never_overflows():
    from vramsym.engine.sweep import points
    xs = points(1, 10**15, 4096, True)
    assert xs[0] == 1 and xs[-1] == 10**15 and xs == sorted(set(xs))


# ---- plot: names ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", MATHTEXT + [CONTROL, SURROGATE])
def test_a_hostile_model_name_is_plain_text_in_the_picture(name, tmp_path):
    pytest.importorskip("matplotlib")
    model = _model_dir(tmp_path, name)
    shown = name.replace("\x1b", "\\x1b").replace("\x07", "\\x07").replace("\udcff", "\\udcff")
    for ext in ("png", "svg", "pdf"):
        path = tmp_path / f"curve.{ext}"
        code, out, err = run_cli(["plot", "--model", model, "--seq", "512", "--gpu", "24GB", "--log", "-o", str(path)])
        assert code == 0, (ext, err)
        assert path.stat().st_size > 5000
        if ext == "svg":     # matplotlib keeps each text as a comment beside its glyphs: drawn as written
            text = path.read_text()
            assert shown in text.replace("&lt;", "<").replace("&amp;", "&"), shown
        path = tmp_path / f"map.{ext}"
        code, out, err = run_cli(["plot", "--map", "--model", model, "--gpu", "24GB", "--points", "4", "-o", str(path)])
        assert code == 0, (ext, err)


def test_a_model_file_named_as_mathtext_draws(tmp_path):
    pytest.importorskip("matplotlib")
    model = tmp_path / "$\\frac{1}{$.json"           # a bare config file: the model is named after the file
    model.write_text(json.dumps(CONFIG))
    path = tmp_path / "x.svg"
    code, out, err = run_cli(["plot", "--model", str(model), "--seq", "512", "-o", str(path)])
    assert code == 0, err
    assert "$\\frac{1}{$ - inference" in path.read_text()


# ---- the page: its writer ------------------------------------------------------------------

def _data(text: str) -> dict:
    m = re.search(r'<script type="application/json" id="vramsym-data">(.*?)</script>', text, re.S)
    return json.loads(m.group(1))


def test_a_slot_in_a_name_is_data(tmp_path):
    """`/*APP*/` in a model's name or path: the page still holds its data, runtime and app once each."""
    from vramsym.printers.calculator import _APP
    folder = tmp_path / "*APP*"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(CONFIG))
    models = [str(folder) + "/", _model_file(tmp_path, "slots.json", SLOTS)]
    path = tmp_path / "p.html"
    code, out, err = run_cli(["html", "-o", str(path), *sum((["--model", m] for m in models), [])])
    assert code == 0, err
    text = path.read_text(encoding="utf-8")
    assert text.count("</script>") == 2 and text.count(_APP) == 1 and text.count("const Q = ") == 1
    data = _data(text)
    assert [m["name"] for m in data["models"]] == models
    assert data["models"][0]["source"].endswith("/*APP*/config.json") and data["models"][1]["label"] == SLOTS


def test_a_name_that_is_not_utf8_is_escaped(tmp_path):
    models = [_model_dir(tmp_path, SURROGATE), _model_dir(tmp_path, CONTROL),
              _model_file(tmp_path, "named.json", "x\udc80" + CONTROL + "\u202e")]
    path = tmp_path / "p.html"
    code, out, err = run_cli(["html", "-o", str(path), *sum((["--model", m] for m in models), [])])
    assert code == 0, err
    raw = path.read_bytes()
    assert raw.isascii() and b"\x1b" not in raw and b"\\udcff" in raw
    data = _data(raw.decode("ascii"))
    assert [m["name"] for m in data["models"]] == models
    assert data["models"][2]["label"] == "x\udc80" + CONTROL + "\u202e"


# ---- the page in a browser -----------------------------------------------------------------

@pytest.fixture(scope="module")
def hostile_page(tmp_path_factory):
    d = tmp_path_factory.mktemp("hostile")
    slots = _model_file(d, "slots.json", SLOTS)
    odd = _model_dir(d, "x\udc80" + CONTROL)
    path = d / "calculator.html"
    code, out, err = run_cli(["html", "-o", str(path), "--model", "llama-3.1-8b", "--model", slots, "--model", odd])
    assert code == 0, err
    return path, slots, odd


@pytest.fixture(scope="module")
def browser():
    from test_calculator import _browser
    d = _browser()
    yield d
    d.quit()


def _state(browser):
    return browser.execute_script("""return {
        error: document.getElementById('error').textContent,
        total: document.getElementById('total-bytes').textContent,
        rows: document.querySelectorAll('#breakdown tbody tr, #derivation tbody tr, #values tbody tr').length,
        chart: document.getElementById('chart').childElementCount,
        fit: document.getElementById('fit').textContent}""")


BASE = "?model=llama-3.1-8b&regime=lora&precision=bf16&batch=2&seq=512&lora_rank=16&gpu=rtx-4090"


def _link(**change):
    from urllib.parse import parse_qsl, urlencode
    q = dict(parse_qsl(BASE[1:]))
    q.update(change)
    return "?" + urlencode({k: v for k, v in q.items() if v is not None})


REFUSED = [   # (link change, what the error says): each one the command line refuses too
    (dict(lora_rank=str(10**50)), "lora_rank must be a whole number of at least 1, got '1000"),
    (dict(lora_rank=str(10**308)), "longer than 90 characters"),
    (dict(lora_rank="1e41"), "an exponent beyond"),
    (dict(lora_rank="1.5"), "lora_rank must be a whole number of at least 1, got '1.5'"),
    (dict(lora_rank="-5"), "lora_rank must be a whole number of at least 1, got '-5'"),
    (dict(batch="0"), "batch must be a whole number of at least 1, got '0'"),
    (dict(seq="10^4"), "seq must be a whole number of at least 1, got '10^4': not a number"),
    (dict(seq="Infinity"), "not a number"),
    (dict(batch="3/0"), "a zero denominator"),
    (dict(model="no-such-model"), "unknown model 'no-such-model' in the link"),
    (dict(gpu="no-such-gpu"), "unknown gpu 'no-such-gpu' in the link"),
    (dict(regime="no-such-regime"), "unknown regime 'no-such-regime' in the link"),
    (dict(precision="fp64"), "unknown precision 'fp64' in the link"),
    (dict(bach="3"), "unknown parameter 'bach' in the link"),
]


def test_a_refused_link_shows_its_error_alone(hostile_page, browser):
    path = hostile_page[0]
    browser.get(path.as_uri() + BASE)
    ok = _state(browser)
    assert ok["error"] == "" and ok["total"] and ok["rows"] > 10 and ok["chart"] > 3
    for change, needle in REFUSED:
        for key, value in change.items():      # the command line refuses the same value
            if key in ("batch", "seq", "lora_rank"):
                flag = "--" + key.replace("_", "-")
                code, out, err = run_cli(["estimate", "--model", "llama-3.1-8b", "--regime", "lora",
                                          *(["--batch", "2"] if key != "batch" else []),
                                          *(["--seq", "512"] if key != "seq" else []), flag, value])
                assert code == 1, (key, value, out)
        browser.get(path.as_uri() + _link(**change))
        s = _state(browser)
        assert needle in s["error"], (change, s["error"])
        assert s["total"] == "" and s["rows"] == 0 and s["chart"] == 0 and s["fit"] == "", (change, s)
    # every complaint at once
    browser.get(path.as_uri() + _link(gpu="nope", lora_rank="1.5", bach="3"))
    s = _state(browser)
    assert all(n in s["error"] for n in ("unknown gpu 'nope'", "got '1.5'", "unknown parameter 'bach'")), s
    assert s["total"] == "" and s["rows"] == 0
    # the user answers the complaint: choosing a model computes that model
    browser.get(path.as_uri() + _link(model="no-such-model"))
    browser.execute_script("const m = document.getElementById('model'); m.value = 'llama-3.1-8b';"
                           "m.dispatchEvent(new Event('change'));")
    assert _state(browser)["error"] == "" and _state(browser)["total"] == ok["total"]


def test_the_page_reads_numbers_as_the_command_line(hostile_page, browser):
    """The page's reader of numbers against vramsym.numbers.to_fraction, and an accepted 40-digit
    batch computed exactly."""
    from vramsym.numbers import NumberError, to_fraction
    path = hostile_page[0]
    browser.get(path.as_uri() + BASE)
    texts = ["1", " 7 ", "1_000", "1e3", "2.50", ".5", "1.", "+3", "-4", "6/2", " 3 / 4 ", "3/0", "1e40", "1e41",
             "1e-40", "1e-41", "9" * 40, "9" * 41, "0" * 50 + "1", "1" * 91, "abc", "", ".", "1e", "0x10", "1,000",
             "10^4", "Infinity", "NaN", "1__0", "1._5", "1.5e2", "-0"]
    page = browser.execute_script("""return arguments[0].map((t) => {
        try { return show(readNumber(t)); } catch (e) { return "error: " + e.message; } });""", texts)
    for t, got in zip(texts, page):
        try:
            want = str(to_fraction(t))
        except NumberError as e:
            want = f"error: {e}"
        assert got == want, (t, got, want)
    big = "9" * 40
    browser.get(path.as_uri() + _link(batch=big, regime="inference", lora_rank=None))
    s = _state(browser)
    est = vramsym.compile("llama-3.1-8b", "inference", {"precision": "bf16"}).evaluate(batch=int(big), seq=512)
    assert s["error"] == "" and s["total"] == f"{est.total_bytes:,}"
    shown = browser.execute_script(
        "return [...document.querySelectorAll('#breakdown tbody tr')].map(t => [t.cells[2].textContent, t.cells[3].textContent])")
    assert all("Infinity" not in g and "NaN" not in p for g, p in shown), shown
    assert shown[0][1].endswith("%")


def test_hostile_names_are_escaped_text(hostile_page, browser):
    path, slots, odd = hostile_page
    from urllib.parse import quote
    browser.get(path.as_uri() + "?model=" + quote(slots) + "&batch=1&seq=128")
    s = _state(browser)
    assert s["error"] == "" and s["total"] == "{:,}".format(
        vramsym.compile(vramsym.load_model(slots)).evaluate(batch=1, seq=128).total_bytes)
    names = browser.execute_script("return [...document.getElementById('model').options].map(o => o.textContent)")
    assert names == ["llama-3.1-8b", slots, odd.replace("\udc80", "\\udc80").replace("\x1b", "\\x1b").replace("\x07", "\\x07")]
