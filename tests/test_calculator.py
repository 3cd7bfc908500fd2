"""`vramsym html`: the calculator page is self-contained, and in a real headless browser (Debian's
Chromium driven by selenium) it shows the engine's bytes for random configurations (model,
regime, one option changed from the regime's defaults, GPU, batch, sequence, LoRA rank, GPUs and
their layout), reads its inputs from the URL, opens on a configuration that fits, groups the
digits of its byte counts, renders its chart, and shows hostile names as text."""
import json
import os
import random
import re
import shutil
from pathlib import Path
from urllib.parse import quote

import pytest

import vramsym
from helpers import run_cli

MODELS = ["llama-3.1-8b", "gpt2", "mixtral-8x7b"]
ROOT = Path(__file__).resolve().parents[1]
EVIL = "evil<img src=x onerror=alert(1)>"
GROUPED = re.compile(r"^-?\d{1,3}(,\d{3})*$")


@pytest.fixture(scope="module")
def page_path(tmp_path_factory):
    d = tmp_path_factory.mktemp("calc")
    cfg = json.loads((ROOT / "formulas" / "models" / "qwen2.5-0.5b.json").read_text())["config"]
    evil = d / EVIL
    evil.mkdir()
    (evil / "config.json").write_text(json.dumps(cfg))
    path = d / "calculator.html"
    code, out, err = run_cli(["html", "-o", str(path), *sum((["--model", m] for m in MODELS + [str(evil)]), [])])
    assert code == 0, err
    return path, str(evil)


def _data(path) -> dict:
    m = re.search(r'<script type="application/json" id="vramsym-data">(.*?)</script>', path.read_text(), re.S)
    return json.loads(m.group(1))


def test_the_page_is_self_contained(page_path):
    text = page_path[0].read_text()
    assert "<script src" not in text and "<link" not in text and "@import" not in text
    assert "Content-Security-Policy" in text and "default-src 'none'" in text
    # nothing the page loads or calls leaves it (URLs appear only as data: the models' sources)
    assert not re.search(r"""(src|href|action)\s*=\s*["']?(https?:|//)""", text)
    assert "url(" not in text and "fetch(" not in text and "XMLHttpRequest" not in text and "import(" not in text
    assert text.count("</script>") == 2
    assert EVIL not in text          # escaped inside the JSON (\u003c...), never raw markup
    # text reaches the page through textContent only
    app = (ROOT / "vramsym" / "printers" / "page" / "app.js").read_text()
    assert "innerHTML" not in app and "outerHTML" not in app and "insertAdjacentHTML" not in app
    assert "document.write" not in app and "eval(" not in app


def test_the_page_holds_one_option_changed_at_a_time(page_path):
    from vramsym.printers.calculator import ENGINE_OPTIONS, PAGE_REGIMES
    data = _data(page_path[0])
    assert data["inputs"]["regimes"] == list(PAGE_REGIMES) and {"vllm", "llama_cpp"} <= set(PAGE_REGIMES)
    for model in MODELS:
        for regime, offered in PAGE_REGIMES.items():
            base = data["configs"][f"{model}|{regime}|"]
            assert set(base["options"]) == set(offered)
            keys = {k for k in data["configs"] if k.startswith(f"{model}|{regime}|")}
            want = {f"{model}|{regime}|"} | {f"{model}|{regime}|{o}={v}" for o, vs in offered.items() for v in vs
                                             if v != base["options"][o]}
            assert keys == want, (model, regime)
            r = vramsym.compile(model, regime)       # the defaults are the engine's, for this model
            for o in offered:
                assert base["options"][o] == dict(r.regime.options)[ENGINE_OPTIONS.get((regime, o), (o,))[0]]
    # an option a regime does not read is not offered for it
    assert "quant" not in PAGE_REGIMES["train"] and "optimizer" not in PAGE_REGIMES["inference"]


def _browser():
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.options import Options
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        chromium = None
    if not chromium or not driver:
        if os.environ.get("VRAMSYM_REQUIRE_BROWSER"):
            pytest.fail("the browser test needs Debian's chromium and chromium-driver and selenium (.ci/run installs them)")
        pytest.skip("no chromium / chromedriver / selenium here")
    o = Options()
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
              "--disable-background-networking", "--disable-component-update", "--disable-sync",
              "--disable-dev-shm-usage", "--window-size=1200,1000"):
        o.add_argument(a)
    o.binary_location = chromium
    return webdriver.Chrome(service=Service(driver), options=o)


@pytest.fixture(scope="module")
def browser():
    d = _browser()
    yield d
    d.quit()


def _set(browser, **values):
    """Set the page's inputs as a user would (then the page's own handler recomputes): the model
    and regime first (the options they offer, each at its default), then the rest."""
    return browser.execute_script("""
        const v = arguments[0];
        if (v.model) $('model').value = v.model;
        if (v.regime) $('regime').value = v.regime;
        optionSelects();
        const b = base();
        if (b && b.options) offered().forEach((o) => { $(o.name).value = b.options[o.name]; });
        for (const [k, x] of Object.entries(v)) if (k !== 'model' && k !== 'regime') $(k).value = x;
        render();
        return {total: $('total-bytes').textContent, error: $('error').textContent,
                reads: currentGroup() ? Object.keys(currentGroup().free) : [],
                cells: [...document.querySelectorAll('#breakdown tbody tr')].map(t => t.cells[1].textContent)};""",
        values)


def _bytes(text: str) -> int:
    assert GROUPED.match(text), text
    return int(text.replace(",", ""))


def _engine(model, regime, options, inputs, gpu):
    """The engine's estimate (or its refusal) for the page's inputs."""
    r = vramsym.compile(model, regime, options)
    return r.evaluate(r.with_gpu(inputs, gpu))


def _layout(rng, reads):
    """GPUs and a layout: mostly one that divides (gpus = dp x tp x pp), sometimes any."""
    gpus = rng.choice((1, 2, 4, 8))
    if rng.random() < 0.15:
        return {"gpus": gpus, "tp": rng.choice((1, 2, 3, 4)), "pp": rng.choice((1, 2)), "zero": rng.choice((0, 1, 2, 3))}
    whole = gpus if "gpus" in reads else 8
    tp = rng.choice([t for t in (1, 2, 4) if whole % t == 0])
    pp = rng.choice([p for p in (1, 2) if whole % (tp * p) == 0])
    return {"gpus": gpus, "tp": tp, "pp": pp, "zero": rng.choice((0, 1, 2, 3))}


def test_random_configurations_show_the_engines_bytes(page_path, browser):
    from vramsym.errors import InputError
    from vramsym.printers.calculator import ENGINE_OPTIONS, PAGE_REGIMES
    browser.get(page_path[0].as_uri())
    data = _data(page_path[0])
    rng = random.Random(20261204)
    gpus = [g["name"] for g in vramsym.catalog_gpus()]
    seen = {"refused": 0, "shown": 0, "options": set(), "layout": set()}
    for _ in range(48):
        model, regime = rng.choice(MODELS), rng.choice(list(PAGE_REGIMES))
        base = data["configs"][f"{model}|{regime}|"]["options"]
        page_opts, engine_opts, variant = {}, {}, ""
        if rng.random() < 0.8:       # one option changed from the defaults (or set to its default)
            opt = rng.choice(list(PAGE_REGIMES[regime]))
            page_opts[opt] = rng.choice(PAGE_REGIMES[regime][opt])
            if page_opts[opt] != base[opt]:
                engine_opts = {e: page_opts[opt] for e in ENGINE_OPTIONS.get((regime, opt), (opt,))}
                variant = f"{opt}={page_opts[opt]}"
                seen["options"].add((regime, opt))
        cfg = data["configs"][f"{model}|{regime}|{variant}"]
        reads = data["groups"][cfg["group"]]["free"] if "group" in cfg else {"batch": "b", "seq": "s"}
        b, s, r = rng.randint(1, 64), rng.choice([1, 7, 128, 1000, 2048, 4096, 8191, 32768]), rng.randint(1, 256)
        numbers = {"batch": b, "seq": s, "lora_rank": r, **_layout(rng, reads)}
        gpu = rng.choice(gpus)
        got = _set(browser, model=model, regime=regime, gpu=gpu, **page_opts, **{k: str(v) for k, v in numbers.items()})
        inputs = {k: numbers[k] for k in reads}
        assert set(got["reads"]) == (set(reads) if "group" in cfg else set()), (got, reads)
        where = (model, regime, engine_opts, inputs, gpu, got)
        try:
            est = _engine(model, regime, engine_opts, inputs, gpu)
        except InputError as e:
            assert got["total"] == "" and got["error"], (where, str(e))
            seen["refused"] += 1
            continue
        assert got["error"] == "" and _bytes(got["total"]) == est.total_bytes, where
        assert [_bytes(c) for c in got["cells"]] == [c.bytes for c in est.components], where
        seen["shown"] += 1
        seen["layout"] |= {k for k in inputs if k in ("gpus", "tp", "pp", "zero") and inputs[k] not in (0, 1)}
    # the draws reached what they test: numbers and refusals, options and layouts
    assert seen["shown"] >= 25 and seen["refused"] >= 1, seen
    assert len(seen["options"]) >= 8 and seen["layout"] == {"gpus", "tp", "pp", "zero"}, seen


def test_the_page_opens_on_a_configuration_that_fits(page_path, browser):
    browser.get(page_path[0].as_uri())
    s = browser.execute_script("return {fit: $('fit').textContent, cls: $('fit').className, error: $('error').textContent,"
                               "model: $('model').value, regime: $('regime').value, gpu: $('gpu').value,"
                               "total: $('total-bytes').textContent, batch: $('batch').value, seq: $('seq').value}")
    assert s["error"] == "" and s["fit"].startswith("fits ") and s["cls"] == "fits", s
    assert (s["model"], s["regime"], s["gpu"]) == ("llama-3.1-8b", "inference", "rtx-4090")
    est = _engine("llama-3.1-8b", "inference", {}, {"batch": int(s["batch"]), "seq": int(s["seq"])}, "rtx-4090")
    assert _bytes(s["total"]) == est.total_bytes
    assert est.total_bytes <= next(g for g in vramsym.catalog_gpus() if g["name"] == "rtx-4090")["capacity_bytes"]


def test_the_opening_model_is_chosen_by_computing():
    """Without llama-3.1-8b, or where it does not fit: the largest model of the page that fits the
    card; where none fits, the first model on the smallest card it fits."""
    from vramsym.catalog.gpus import catalog
    from vramsym.engine.runtime import Vocabulary
    from vramsym.printers.calculator import _initial
    gpus, v = list(catalog()), Vocabulary.of()
    specs = {n: vramsym.load_model(n) for n in ("llama-3.1-70b", "qwen2.5-0.5b", "qwen2.5-7b")}
    assert _initial(specs, gpus, v)["model"] == "qwen2.5-7b"
    one = _initial({"llama-3.1-70b": specs["llama-3.1-70b"]}, gpus, v)
    total = vramsym.compile("llama-3.1-70b").evaluate(batch=1, seq=4096).total_bytes
    fitting = sorted((g for g in gpus if g.capacity_bytes >= total), key=lambda g: g.capacity_bytes)
    assert one["model"] == "llama-3.1-70b" and one["gpu"] == fitting[0].name


def test_totals_and_bytes_have_thousands_separators(page_path, browser):
    browser.get(page_path[0].as_uri() + "?model=llama-3.1-8b&regime=train&batch=4&seq=2048&gpu=a100-80gb")
    s = browser.execute_script("return {total: $('total-bytes').textContent, fit: $('fit').textContent,"
                               "rows: [...document.querySelectorAll('#breakdown tbody tr, #derivation tbody tr')]"
                               "  .map(t => t.cells[t.parentNode.parentNode.id === 'breakdown' ? 1 : 2].textContent)}")
    est = _engine("llama-3.1-8b", "train", {}, {"batch": 4, "seq": 2048}, "a100-80gb")
    assert s["total"] == f"{est.total_bytes:,}" and "," in s["total"], s
    assert all(GROUPED.match(c) for c in s["rows"]) and any("," in c for c in s["rows"]), s
    assert re.search(r"\(\d{1,3}(,\d{3})+ B\), headroom -?\d{1,3}(,\d{3})* B", s["fit"]), s


def test_the_url_query_sets_the_inputs_and_the_cli_agrees(page_path, browser):
    q = "?model=gpt2&regime=train&precision=mixed-bf16&batch=8&seq=1024&gpu=rtx-4090"
    browser.get(page_path[0].as_uri() + q)
    shown = browser.find_element("id", "total-bytes").text
    code, out, err = run_cli(["estimate", "--model", "gpt2", "--regime", "train", "--precision", "mixed-bf16",
                              "--batch", "8", "--seq", "1024", "--json"])
    assert code == 0 and _bytes(shown) == json.loads(out)["total_bytes"]
    assert "rtx-4090" in browser.find_element("id", "fit").text
    assert "batch=8" in browser.find_element("id", "link").get_attribute("href")
    browser.get(page_path[0].as_uri() + "?model=llama-3.1-8b&regime=lora&batch=2&seq=512")   # no rank: the default
    code, out, err = run_cli(["estimate", "--model", "llama-3.1-8b", "--regime", "lora", "--batch", "2", "--seq", "512",
                              "--json"])
    assert _bytes(browser.find_element("id", "total-bytes").text) == json.loads(out)["total_bytes"]
    browser.get(page_path[0].as_uri() + "?model=no-such-model&batch=2")
    assert "unknown model" in browser.find_element("id", "error").text


@pytest.mark.parametrize("query,flags", [
    ("model=llama-3.1-8b&regime=train&optimizer=adam8bit&gpus=8&zero=3&batch=2&seq=2048",
     ["--regime", "train", "--optimizer", "adam8bit", "--gpus", "8", "--zero", "3", "--batch", "2", "--seq", "2048"]),
    ("model=llama-3.1-8b&regime=train&checkpointing=full&gpus=4&tp=2&pp=2&batch=2&seq=2048",
     ["--regime", "train", "--checkpointing", "full", "--gpus", "4", "--tp", "2", "--pp", "2", "--batch", "2",
      "--seq", "2048"]),
    ("model=mixtral-8x7b&regime=inference&quant=nf4&tp=2&batch=4&seq=4096",
     ["--quant", "nf4", "--tp", "2", "--batch", "4", "--seq", "4096"]),
    ("model=llama-3.1-8b&regime=inference&kv_dtype=fp8&batch=8&seq=8192",
     ["--kv-dtype", "fp8", "--batch", "8", "--seq", "8192"]),
    ("model=llama-3.1-8b&regime=qlora&quant=int8&batch=2&seq=1024&lora_rank=32",
     ["--regime", "qlora", "--quant", "int8", "--batch", "2", "--seq", "1024", "--lora-rank", "32"]),
    ("model=llama-3.1-8b&regime=vllm&gpu=h100-sxm-80gb&quant=fp8&batch=16&seq=4096&tp=2",
     ["--regime", "vllm", "--gpu", "h100-sxm-80gb", "--quant", "fp8", "--batch", "16", "--seq", "4096", "--tp", "2"]),
    ("model=gpt2&regime=llama-cpp&kv_dtype=q8-0&batch=1&seq=2048",
     ["--regime", "llama-cpp", "--cache-type-k", "q8-0", "--cache-type-v", "q8-0", "--batch", "1", "--seq", "2048"]),
])
def test_a_link_with_options_and_a_layout_is_the_cli(page_path, browser, query, flags):
    browser.get(page_path[0].as_uri() + "?" + query)
    s = browser.execute_script("return {total: $('total-bytes').textContent, error: $('error').textContent,"
                               "link: $('link').getAttribute('href')}")
    model = query.split("&")[0].split("=")[1]
    code, out, err = run_cli(["estimate", "--model", model, *flags, "--json"])
    assert code == 0, err
    assert s["error"] == "" and _bytes(s["total"]) == json.loads(out)["total_bytes"], (s, query)
    # the page's own link gives the same configuration
    browser.get(page_path[0].as_uri() + s["link"])
    assert browser.find_element("id", "total-bytes").text == s["total"]


@pytest.mark.parametrize("query,needle", [
    ("regime=inference&quant=q9", "unknown quant 'q9' in the link"),
    ("regime=train&optimizer=adamw&quant=int8", "the link sets quant, which regime train does not offer"),
    ("regime=inference&quant=int8&kv_dtype=fp8", "one option changed at a time"),
    ("regime=inference&gpus=8", "the link gives gpus, which regime inference does not read"),
    ("regime=train&gpus=3&tp=3", "must divide n_q (attention (query) heads) = 32, got 3"),
    ("regime=train&gpus=4&tp=8", "n_dp (data-parallel degree"),
    ("regime=train&zero=4", "zero (ZeRO stage"),
    ("regime=train&gpus=0", "gpus must be a whole number of at least 1, got '0'"),
    ("regime=llama_cpp&tp=2", "the link gives tp, which regime llama-cpp does not read"),
])
def test_a_refused_option_or_layout_is_said_alone(page_path, browser, query, needle):
    browser.get(page_path[0].as_uri() + "?model=llama-3.1-8b&batch=1&seq=512&" + query)
    s = browser.execute_script("return {total: $('total-bytes').textContent, error: $('error').textContent,"
                               "rows: document.querySelectorAll('#breakdown tbody tr').length,"
                               "chart: $('chart').childElementCount}")
    assert needle in s["error"] and s["total"] == "" and s["rows"] == 0 and s["chart"] == 0, (query, s)


def test_the_inputs_a_regime_does_not_read_are_not_shown(page_path, browser):
    browser.get(page_path[0].as_uri())
    def shown(regime):
        _set(browser, model="llama-3.1-8b", regime=regime)
        return browser.execute_script("return [...document.querySelectorAll('#inputs label')]"
                                      ".filter(l => l.style.display !== 'none' && l.id).map(l => l.id.replace('-label', ''))")
    assert shown("inference") == ["precision", "quant", "kv_dtype", "batch", "seq", "tp", "pp"]
    assert shown("train") == ["precision", "checkpointing", "optimizer", "batch", "seq", "gpus", "tp", "pp", "zero"]
    assert shown("qlora") == ["precision", "quant", "checkpointing", "optimizer", "batch", "seq", "lora_rank", "gpus",
                              "tp", "pp", "zero"]
    assert shown("llama_cpp") == ["precision", "quant", "kv_dtype", "batch", "seq"]
    # llama.cpp's cache types are its own
    values = browser.execute_script("return [...$('kv_dtype').options].map(o => o.value)")
    assert values == ["f16", "q8_0", "q4_0"]


def test_choosing_an_option_sets_the_others_back(page_path, browser):
    browser.get(page_path[0].as_uri() + "?model=llama-3.1-8b&regime=inference&kv_dtype=fp8&batch=1&seq=1024")
    browser.execute_script("const q = $('quant'); q.value = 'int8'; q.dispatchEvent(new Event('change'));")
    s = browser.execute_script("return {kv: $('kv_dtype').value, notice: $('notice').textContent,"
                               "error: $('error').textContent, total: $('total-bytes').textContent}")
    assert s["kv"] == "auto" and "kv_dtype auto set back" in s["notice"] and s["error"] == "", s
    est = _engine("llama-3.1-8b", "inference", {"quant": "int8"}, {"batch": 1, "seq": 1024}, "rtx-4090")
    assert _bytes(s["total"]) == est.total_bytes


def test_a_layout_the_formulas_do_not_model_is_refused(tmp_path, monkeypatch, browser):
    """A hybrid model (Mamba2 layers) over tensor parallelism: the engine refuses it, the page too."""
    from vramsym.printers import calculator
    from vramsym.errors import InputError
    monkeypatch.setattr(calculator, "PAGE_REGIMES", {"inference": {"precision": ("bf16",)}})
    path = tmp_path / "p.html"
    path.write_text(calculator.page(["nemotron-h-8b"]))
    browser.get(path.as_uri() + "?batch=1&seq=1024&tp=2")
    err = browser.find_element("id", "error").text
    with pytest.raises(InputError) as e:
        _engine("nemotron-h-8b", "inference", {}, {"batch": 1, "seq": 1024, "tp": 2}, "rtx-4090")
    assert err == str(e.value) and browser.find_element("id", "total-bytes").text == ""
    browser.get(path.as_uri() + "?batch=1&seq=1024&tp=1")
    est = _engine("nemotron-h-8b", "inference", {}, {"batch": 1, "seq": 1024}, "rtx-4090")
    assert _bytes(browser.find_element("id", "total-bytes").text) == est.total_bytes


def test_bad_inputs_are_said_not_computed(page_path, browser):
    browser.get(page_path[0].as_uri())
    for bad in ("0", "-3", "2.5", "1e-3", "abc", "1" * 41):
        got = _set(browser, batch=bad)
        assert got["total"] == "" and "batch must be a whole number" in got["error"], (bad, got)
    # what the command line reads, the page reads (vramsym.numbers): 1e3 is 1000
    got = _set(browser, model="gpt2", regime="inference", precision="bf16", batch="1e3", seq="128")
    assert got["error"] == "" and _bytes(got["total"]) == _engine("gpt2", "inference", {}, {"batch": 1000, "seq": 128},
                                                                  "rtx-4090").total_bytes


def test_the_chart_renders(page_path, browser):
    import io
    import matplotlib.image
    browser.get(page_path[0].as_uri() + "?model=llama-3.1-8b&regime=inference&batch=4&seq=4096&gpu=rtx-4090")
    rects = browser.execute_script(
        "return [...document.querySelectorAll('#chart rect.component')].map(r => +r.getAttribute('width'))")
    assert len(rects) >= 3 and sum(rects) > 500
    png = browser.find_element("id", "chart").screenshot_as_png
    img = matplotlib.image.imread(io.BytesIO(png), format="png")
    pixels = img.reshape(-1, img.shape[-1])[:, :3]
    colours = {tuple((p * 255).round().astype(int)) for p in pixels[::7]}
    non_white = (pixels.sum(axis=1) < 2.9).mean()
    assert len(colours) >= 4 and non_white > 0.2, (len(colours), non_white)


def test_a_hostile_model_name_is_text(page_path, browser):
    path, evil = page_path
    browser.get(path.as_uri() + "?model=" + quote(evil))
    assert browser.execute_script("return document.querySelectorAll('img').length") == 0
    names = browser.execute_script("return [...document.getElementById('model').options].map(o => o.textContent)")
    assert evil in names
    assert _bytes(browser.find_element("id", "total-bytes").text) == _engine(
        vramsym.load_model(evil), "inference", {}, {"batch": 1, "seq": 4096}, "rtx-4090").total_bytes
