"""`vramsym plot`: the plotted data are the engine's numbers (each point an estimate, each limit a
solve), the pictures are written and non-trivial, and bad input is exit 1 with a sentence."""
import json

import pytest

import vramsym
from helpers import run_cli

pytest.importorskip("matplotlib")


def test_curve_data_are_estimates_and_solves(tmp_path):
    out_png = tmp_path / "batch.png"
    code, out, err = run_cli(["plot", "--model", "llama-3.1-8b", "--vary", "batch", "--from", "1", "--to", "40",
                              "--seq", "4096", "--gpu", "rtx-4090", "--gpu", "80GB", "-o", str(out_png), "--json"])
    assert code == 0, err
    d = json.loads(out)
    assert d["x"] == list(range(1, 41))
    r = vramsym.compile("llama-3.1-8b")
    for x, t in zip(d["x"][::7], d["total_bytes"][::7]):
        est = r.evaluate(batch=x, seq=4096)
        assert t == est.total_bytes
        for name, series in d["components"].items():
            assert series[d["x"].index(x)] == est.component(name).bytes
    lim = {c["label"]: c for c in d["capacities"]}
    assert lim["rtx-4090"]["value"] == r.solve("batch", "rtx-4090", seq=4096).value
    assert lim["80GB"]["value"] == r.solve("batch", "80GB", seq=4096).value
    raw = out_png.read_bytes()
    assert raw[:8] == b"\x89PNG\r\n\x1a\n" and len(raw) > 20_000


def test_svg_on_a_log_axis_names_the_components(tmp_path):
    path = tmp_path / "seq.svg"
    code, out, err = run_cli(["plot", "--model", "qwen2.5-7b", "--vary", "seq", "--from", "512", "--to", "131072",
                              "--log", "--points", "24", "--batch", "1", "--gpu", "24GB", "-o", str(path)])
    assert code == 0, err
    text = path.read_text()
    assert text.lstrip().startswith("<?xml") and "<svg" in text
    assert "kv_cache" in text and "weights" in text and "max seq" in text


def test_the_map_frontier_is_the_exact_solve(tmp_path):
    path = tmp_path / "map.pdf"
    code, out, err = run_cli(["plot", "--map", "--model", "llama-3.1-8b", "--gpu", "rtx-4090", "--points", "12",
                              "-o", str(path), "--json"])
    assert code == 0, err
    d = json.loads(out)
    r = vramsym.compile("llama-3.1-8b")
    cap = d["capacity_bytes"]
    for s, m in zip(d["seq"], d["max_batch"]):
        if m:
            assert r.evaluate(batch=m, seq=s).total_bytes <= cap < r.evaluate(batch=m + 1, seq=s).total_bytes
        else:
            assert r.evaluate(batch=1, seq=s).total_bytes > cap
    for row, s in zip(d["total_bytes"], d["seq"]):
        assert row == [r.evaluate(batch=b, seq=s).total_bytes for b in d["batch"]]
    assert path.read_bytes()[:5] == b"%PDF-"


def test_more_gpus_mark_the_fewest_that_fit(tmp_path):
    code, out, err = run_cli(["plot", "--model", "llama-3.1-8b", "--regime", "train", "--vary", "gpus", "--from", "1",
                              "--to", "16", "--zero", "3", "--batch", "1", "--seq", "2048", "--gpu", "80GB", "--json"])
    assert code == 0, err
    d = json.loads(out)
    fewest = d["capacities"][0]["value"]
    assert fewest is not None
    assert d["total_bytes"][d["x"].index(fewest)] <= 80 * 10**9 < d["total_bytes"][d["x"].index(fewest) - 1]


def test_a_missing_matplotlib_names_the_extra(monkeypatch, tmp_path):
    import sys
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    code, out, err = run_cli(["plot", "--model", "gpt2", "--seq", "512", "-o", str(tmp_path / "x.png")])
    assert code == 1 and "[plot]" in err


@pytest.mark.parametrize("extra,needle", [
    (["-o", "x.gif"], ".png"),
    (["-o", "/no/such/folder/x.png"], "no such folder"),
    (["--from", "10", "--to", "2", "--json"], "--to"),
    (["--from", "0", "--json"], "--from"),
    (["--points", "1", "--json"], "--points"),
    (["--points", "10000000", "--json"], "--points"),
    (["--vary", "lora_rank", "--json"], "lora_rank"),
    (["--vary", "batch", "--batch", "2", "--json"], "both given and varied"),
    ([], "-o FILE"),
])
def test_bad_plot_input_is_exit_1(extra, needle):
    code, out, err = run_cli(["plot", "--model", "gpt2", "--seq", "512", *extra])
    assert code == 1, (code, out, err)
    assert needle in err + out and "Traceback" not in err


def test_map_needs_a_gpu():
    code, out, err = run_cli(["plot", "--map", "--model", "gpt2", "--json"])
    assert code == 1 and "--gpu" in err + out
