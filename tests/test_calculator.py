"""`vramsym html`: the calculator page is self-contained, and in a real headless browser (Debian's
Chromium driven by selenium) it shows the engine's bytes for random configurations, reads its
inputs from the URL, renders its chart, and shows hostile names as text."""
import json
import os
import random
import shutil
from pathlib import Path
from urllib.parse import quote

import pytest

import vramsym
from helpers import run_cli

MODELS = ["llama-3.1-8b", "gpt2", "mixtral-8x7b", "gemma-2-9b"]
ROOT = Path(__file__).resolve().parents[1]
EVIL = "evil<img src=x onerror=alert(1)>"


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


def test_the_page_is_self_contained(page_path):
    text = page_path[0].read_text()
    assert "<script src" not in text and "<link" not in text and "@import" not in text
    assert "Content-Security-Policy" in text and "default-src 'none'" in text
    # nothing the page loads or calls leaves it (URLs appear only as data: the models' sources)
    import re
    assert not re.search(r"""(src|href|action)\s*=\s*["']?(https?:|//)""", text)
    assert "url(" not in text and "fetch(" not in text and "XMLHttpRequest" not in text and "import(" not in text
    assert text.count("</script>") == 2
    assert EVIL not in text          # escaped inside the JSON (\u003c...), never raw markup


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
    """Set the page's inputs as a user would (then the page's own handler recomputes)."""
    browser.execute_script("""
        const v = arguments[0];
        if (v.regime) { document.getElementById('regime').value = v.regime; precisions(); }
        for (const [k, x] of Object.entries(v)) if (k !== 'regime') document.getElementById(k).value = x;
        render();""", values)
    return browser.find_element("id", "total-bytes").text, browser.find_element("id", "error").text


def _engine(model, regime, precision, batch, seq, lora_rank):
    r = vramsym.compile(model, regime, {"precision": precision})
    ins = {"batch": batch, "seq": seq}
    if r.regime.symbol("lora_rank") in r.regime.args:
        ins["lora_rank"] = lora_rank
    return r.evaluate(ins)


def test_random_configurations_show_the_engines_bytes(page_path, browser):
    from vramsym.printers.calculator import PAGE_REGIMES
    browser.get(page_path[0].as_uri())
    rng = random.Random(20261201)
    gpus = [g["name"] for g in vramsym.catalog_gpus()]
    for _ in range(14):
        model, regime = rng.choice(MODELS), rng.choice(sorted(PAGE_REGIMES))
        precision = rng.choice(PAGE_REGIMES[regime])
        b, s, r = rng.randint(1, 64), rng.choice([1, 7, 128, 1000, 2048, 4096, 8191, 32768]), rng.randint(1, 256)
        shown, err = _set(browser, model=model, regime=regime, precision=precision, batch=b, seq=s, lora_rank=r,
                          gpu=rng.choice(gpus))
        est = _engine(model, regime, precision, b, s, r)
        assert err == "" and shown == str(est.total_bytes), (model, regime, precision, b, s, r, shown, err)
        cells = browser.execute_script(
            "return [...document.querySelectorAll('#breakdown tbody tr')].map(t => t.cells[1].textContent)")
        assert [int(c.replace(",", "")) for c in cells] == [c.bytes for c in est.components]


def test_the_url_query_sets_the_inputs_and_the_cli_agrees(page_path, browser):
    q = "?model=gpt2&regime=train&precision=mixed-bf16&batch=8&seq=1024&gpu=rtx-4090"
    browser.get(page_path[0].as_uri() + q)
    shown = browser.find_element("id", "total-bytes").text
    code, out, err = run_cli(["estimate", "--model", "gpt2", "--regime", "train", "--precision", "mixed-bf16",
                              "--batch", "8", "--seq", "1024", "--json"])
    assert code == 0 and shown == str(json.loads(out)["total_bytes"])
    assert "rtx-4090" in browser.find_element("id", "fit").text
    assert "batch=8" in browser.find_element("id", "link").get_attribute("href")
    browser.get(page_path[0].as_uri() + "?model=llama-3.1-8b&regime=lora&batch=2&seq=512")   # no rank: the default
    code, out, err = run_cli(["estimate", "--model", "llama-3.1-8b", "--regime", "lora", "--batch", "2", "--seq", "512",
                              "--json"])
    assert browser.find_element("id", "total-bytes").text == str(json.loads(out)["total_bytes"])
    browser.get(page_path[0].as_uri() + "?model=no-such-model&batch=2")
    assert "unknown model" in browser.find_element("id", "error").text


def test_bad_inputs_are_said_not_computed(page_path, browser):
    browser.get(page_path[0].as_uri())
    for bad in ("0", "-3", "2.5", "1e-3", "abc", "1" * 41):
        shown, err = _set(browser, batch=bad)
        assert shown == "" and "batch must be a whole number" in err, (bad, shown, err)
    # what the command line reads, the page reads (vramsym.numbers): 1e3 is 1000
    shown, err = _set(browser, model="gpt2", regime="inference", precision="bf16", batch="1e3", seq="128")
    assert err == "" and shown == str(_engine("gpt2", "inference", "bf16", 1000, 128, 8).total_bytes)


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
    assert browser.find_element("id", "total-bytes").text == str(
        _engine(vramsym.load_model(evil), "inference", "bf16", 1, 4096, 16).total_bytes)
