"""The command line: outputs, --json shapes, exit codes, errors without tracebacks."""
import json
import subprocess
import sys

import pytest

from vramsym.cli import ExitStatus, main


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_solve_max_batch_main_command(capsys):
    code, out, _ = run(capsys, "solve", "max_batch", "--model", "llama-3.1-8b", "--seq", "4096", "--gpu", "24GB")
    assert code == ExitStatus.OK
    code2, js, _ = run(capsys, "solve", "max_batch", "--model", "llama-3.1-8b", "--seq", "4096", "--gpu", "24GB", "--json")
    d = json.loads(js)
    assert f"largest batch that fits: {d['value']}" in out
    assert d["total_bytes"] <= 24 * 10**9 < d["next_total_bytes"]
    # every component is named in the estimate at the answer
    names = {c["name"] for c in d["estimate"]["components"]}
    assert {"weights", "kv_cache", "prefill_activations", "runtime_overhead"} <= names
    # the logits are alive after the layers' intermediates: another phase than the peak (prefill)
    assert d["estimate"]["peak_phase"] == "prefill"
    assert "logits" in next(p for p in d["estimate"]["phases"] if p["name"] == "logits")["components"]
    assert "GiB" in out and "GB" in out
    assert "regime inference" in out and "precision=bf16" in out and "kv_dtype=auto" in out


@pytest.mark.parametrize("gpu,capacity", [("24GB", 24 * 10**9), ("24GiB", 24 * 2**30),
                                          ("80000MiB", 80000 * 2**20), ("rtx-4090", 24564 * 2**20)])
def test_solve_json_keys_and_capacities(capsys, gpu, capacity):
    code, out, _ = run(capsys, "solve", "max_batch", "--model", "llama-3.1-8b", "--seq", "4096", "--gpu", gpu,
                       "--regime", "inference-kv", "--json")
    assert code == ExitStatus.OK
    d = json.loads(out)
    assert d["capacity_bytes"] == capacity
    assert d["variable"] == "batch"
    assert d["total_bytes"] <= capacity < d["next_total_bytes"]
    # weights 16,060,522,496 B + b * 2*4096*32*8*128*2 B (bf16 KV, GQA 8 of 32 heads)
    assert d["value"] == (capacity - 16_060_522_496) // (4096 * 32 * 2 * 8 * 128 * 2)


def test_estimate_json(capsys):
    code, out, _ = run(capsys, "estimate", "--model", "llama-3.1-8b", "--batch", "1", "--seq", "4096", "--json")
    d = json.loads(out)
    assert code == 0
    assert d["params"] == 8_030_261_248
    names = {c["name"]: c["bytes"] for c in d["components"]}
    assert names["weights"] == 2 * 8_030_261_248
    assert names["kv_cache"] == 2 * 4096 * 32 * 8 * 128 * 2
    assert d["total_bytes"] == sum(names.values())
    assert d["options"]["precision"] == "bf16"


def test_estimate_human_table(capsys):
    code, out, _ = run(capsys, "estimate", "--model", "llama-3.1-8b", "--batch", "1", "--seq", "4096")
    assert code == 0
    assert "16,060,522,496" in out and "total" in out and "GiB" in out


@pytest.mark.parametrize("argv,status,needle", [
    (["estimate", "--model", "llama-3.1-8x", "--batch", "1", "--seq", "1"], ExitStatus.BAD_INPUT, "did you mean llama-3.1-8b"),
    (["solve", "max_batch", "--model", "llama-3.1-8b", "--seq", "4096", "--gpu", "24"], ExitStatus.BAD_INPUT, "GPU"),
    (["solve", "max_batch", "--model", "llama-3.1-8b", "--seq", "4096", "--gpu", "24XB"], ExitStatus.BAD_INPUT, "unknown memory unit"),
    (["solve", "max_batch", "--model", "llama-3.1-8b", "--seq", "4096", "--gpu", "12GB"], ExitStatus.DOES_NOT_FIT, "nothing fits"),
    (["solve", "max_batch", "--model", "llama-3.1-8b", "--seq", "4096", "--gpu", "rtx-9999"], ExitStatus.BAD_INPUT, "unknown GPU"),
    (["solve", "max_batch", "--model", "llama-3.1-8b", "--batch", "2", "--seq", "4096", "--gpu", "24GB"], ExitStatus.BAD_INPUT, "both given and solved"),
    (["solve", "max_foo", "--model", "llama-3.1-8b", "--seq", "4096", "--gpu", "24GB"], ExitStatus.BAD_INPUT, "cannot solve for 'foo'"),
    (["estimate", "--model", "llama-3.1-8b", "--batch", "0", "--seq", "1"], ExitStatus.BAD_INPUT, "must be positive"),
    (["estimate", "--model", "llama-3.1-8b", "--batch", "1.5", "--seq", "1"], ExitStatus.BAD_INPUT, "whole number"),
    (["estimate", "--model", "llama-3.1-8b", "--seq", "1"], ExitStatus.BAD_INPUT, "missing value for batch"),
    (["estimate", "--model", "llama-3.1-8b", "--regime", "infernce", "--batch", "1", "--seq", "1"], ExitStatus.USAGE, "did you mean inference"),
])
def test_bad_input_exit_codes(capsys, argv, status, needle):
    code, out, err = run(capsys, *argv)
    assert code == status
    assert needle in err
    assert "Traceback" not in err


def test_errors_in_json(capsys):
    code, out, _ = run(capsys, "solve", "max_batch", "--model", "llama-3.1-8b", "--seq", "4096", "--gpu", "12GB", "--json")
    d = json.loads(out)
    assert code == ExitStatus.DOES_NOT_FIT
    assert d["error"]["kind"] == "does_not_fit" and d["error"]["shortfall_bytes"] > 0


def test_config_json_path_and_missing_field(tmp_path, capsys):
    cfg = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
           "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 100}
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    code, out, _ = run(capsys, "estimate", "--model", str(p), "--batch", "1", "--seq", "8", "--json")
    assert code == 0
    del cfg["vocab_size"]
    p.write_text(json.dumps(cfg))
    code, out, err = run(capsys, "estimate", "--model", str(p), "--batch", "1", "--seq", "8")
    assert code == ExitStatus.BAD_INPUT and "vocab_size" in err


def test_check_command_reports_location(tmp_path, capsys):
    bad = tmp_path / "bad.vram"
    bad.write_text('term kv = 2 * b * s * L * n_kv * d_head * kv_bytes : byte "forgot [element/(token*layer)]"\n')
    code, out, err = run(capsys, "check", str(bad))
    assert code == ExitStatus.BAD_INPUT
    assert "bad.vram:1:" in err and "unit error" in err and "^" in err
    good = tmp_path / "good.vram"
    good.write_text('term kv2 = 2 * b * s * L * n_kv * d_head * [element/(token*layer)] * kv_bytes : byte "ok" source "test"\n')
    code, out, err = run(capsys, "check", str(good))
    assert code == 0 and "ok" in out


def test_models_gpus_formulas(capsys):
    code, out, _ = run(capsys, "models", "--json")
    rows = json.loads(out)
    assert code == 0 and len(rows) >= 25
    assert next(r for r in rows if r["name"] == "llama-3.1-8b")["params"] == 8_030_261_248
    code, out, _ = run(capsys, "gpus", "--json")
    assert any(g["name"] == "rtx-4090" for g in json.loads(out))
    code, out, _ = run(capsys, "formulas", "--json")
    d = json.loads(out)
    assert all(t["sources"] for t in d["terms"]), "every term cites a source"


def test_console_script_runs_as_a_process():
    r = subprocess.run([sys.executable, "-m", "vramsym.cli", "estimate", "--model", "gpt2", "--batch", "1", "--seq", "8", "--json"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["total_bytes"] > 0


def test_cache_follows_included_files(tmp_path, monkeypatch):
    """A warm cache must notice a change in a file reached only through `include`."""
    import vramsym
    monkeypatch.delenv("VRAMSYM_NO_CACHE", raising=False)
    monkeypatch.setenv("VRAMSYM_CACHE_DIR", str(tmp_path / "cache"))
    inc = tmp_path / "inc.vram"
    inc.write_text('term extra_t = 1 * [byte] : byte "t" source "test"\n')
    top = tmp_path / "top.vram"
    top.write_text('include "inc.vram"\n')
    lib = vramsym.load_library([top])
    assert "extra_t" in lib.terms
    assert "extra_t" in vramsym.load_library([top]).terms  # warm
    inc.write_text('term extra_t = 1 * [byte] : byte "t"\n')  # no source now: must fail
    with pytest.raises(vramsym.FormulaError):
        vramsym.load_library([top])


def test_fit_table(capsys):
    code, out, _ = run(capsys, "fit", "--model", "llama-3.1-8b", "--gpu", "rtx-4090", "--seq", "2048", "--json")
    d = json.loads(out)
    assert code == 0
    rows = d["scenarios"]
    assert all(r["fits"] == (r["total_bytes"] <= d["capacity_bytes"]) for r in rows)
    assert any(r["fits"] for r in rows) and not all(r["fits"] for r in rows)
    for r in rows:
        if r["max_batch"] is not None:
            assert r["fits"]


def test_derive_and_export_commands(capsys):
    code, out, _ = run(capsys, "derive", "--model", "llama-3.1-8b", "--seq", "4096", "--gpu", "24GB", "--solve", "max_batch",
                       "--format", "markdown")
    assert code == 0 and "$$" in out and "24,000,000,000" in out
    code, out, _ = run(capsys, "derive", "--model", "llama-3.1-8b", "--batch", "1", "--seq", "4096", "--format", "latex", "--standalone")
    assert code == 0 and out.lstrip().startswith("\\documentclass") and "\\end{document}" in out
    code, out, err = run(capsys, "export", "--regime", "inference", "--to", "python", "--model", "llama-3.1-8b")
    assert code == 0, err
    ns = {}
    exec(compile(out, "<export>", "exec"), ns)  # the exported module is our own generated code
    est_code, est_out, _ = run(capsys, "estimate", "--model", "llama-3.1-8b", "--batch", "3", "--seq", "1000", "--json")
    assert ns["inference_total"](3, 1000) == json.loads(est_out)["total_bytes"]


def test_dtype_command(capsys):
    code, out, _ = run(capsys, "dtype", "fp16")
    assert code == 0 and "65504" in out
    code, out, err = run(capsys, "dtype", "fp17")
    assert code == ExitStatus.BAD_INPUT and "unknown number format" in err


def test_measure_command_tiny(tmp_path, capsys):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    cfg = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
           "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 128, "tie_word_embeddings": False,
           "max_position_embeddings": 256}
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    code, out, _ = run(capsys, "measure", "--model", str(p), "--regime", "train", "--precision", "fp32",
                       "--batch", "1", "--seq", "32", "--json")
    assert code == 0
    rows = {r["component"]: r for r in json.loads(out)["rows"]}
    assert rows["parameters"]["predicted_bytes"] == rows["parameters"]["measured_bytes"]
    code, out, err = run(capsys, "measure", "--model", str(p), "--regime", "prefix", "--batch", "1", "--seq", "32")
    assert code == ExitStatus.BAD_INPUT and "measure supports the regimes" in err, (code, err)


def test_rules_of_thumb_shown_beside_not_mixed_in(capsys):
    code, out, _ = run(capsys, "estimate", "--model", "llama-3.1-8b", "--batch", "1", "--seq", "4096", "--gpu", "24GB", "--json")
    d = json.loads(out)
    assert sum(c["bytes"] for c in d["components"]) == d["total_bytes"]
    assert not any(c["name"].startswith("heuristic") for c in d["components"])
    h = {x["regime"]: x["total_bytes"] for x in d["heuristics"]}
    weights = next(c["bytes"] for c in d["components"] if c["name"] == "weights")
    kv = next(c["bytes"] for c in d["components"] if c["name"] == "kv_cache")
    act = next(c["bytes"] for c in d["components"] if c["name"] == "prefill_activations")
    # seed article 2, section 2.2: weights x 1.2 + KV cache + activation peak
    assert h["heuristic_1_2"] == -(-weights * 6 // 5) + kv + act  # rounded up to a whole byte
    assert "heuristic_1_3" in h  # needs the capacity: 0.2 x C


# ---- never a silent guess: unknown model types and contradicting fields (issue 21) ----

TINY_CFG = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
            "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 100}


def _cfg(tmp_path, **changes):
    p = tmp_path / f"config-{len(list(tmp_path.iterdir()))}.json"
    p.write_text(json.dumps(dict(TINY_CFG, **changes)))
    return str(p)


def test_an_unknown_model_type_is_refused_with_one_sentence(tmp_path, capsys):
    code, out, err = run(capsys, "estimate", "--model", _cfg(tmp_path, model_type="persimmon"), "--batch", "1", "--seq", "8")
    assert code == ExitStatus.BAD_INPUT and out == ""
    line = err.strip()
    assert "\n" not in line and "'persimmon'" in line and "nearest supported family:" in line
    assert "`--assume llama` gives an approximation" in line
    code, out, err = run(capsys, "estimate", "--model", _cfg(tmp_path, model_type=None), "--batch", "1", "--seq", "8")
    assert code == ExitStatus.BAD_INPUT and "without a model_type" in err and "--assume llama" in err


def test_assume_llama_says_it_everywhere(tmp_path, capsys):
    p = _cfg(tmp_path, model_type="persimmon")
    code, out, err = run(capsys, "estimate", "--model", p, "--assume", "llama", "--batch", "1", "--seq", "8")
    assert code == 0
    assert "vramsym: warning:" in err and "approximation" in err and "'persimmon'" in err
    assert "APPROXIMATE: model_type 'persimmon'" in out
    code, out, err = run(capsys, "estimate", "--model", p, "--assume", "llama", "--batch", "1", "--seq", "8", "--json")
    d = json.loads(out)
    assert d["approximate"] is True and "'persimmon'" in d["approximate_reason"] and "Llama-style" in d["approximate_reason"]
    # the same structure as a llama config: the same numbers, only marked
    code, out2, _ = run(capsys, "estimate", "--model", _cfg(tmp_path), "--batch", "1", "--seq", "8", "--json")
    d2 = json.loads(out2)
    assert d2["approximate"] is False and d2["approximate_reason"] is None and d2["total_bytes"] == d["total_bytes"]
    code, out, err = run(capsys, "solve", "max_batch", "--model", p, "--assume", "llama", "--seq", "8", "--gpu", "1GB",
                         "--json")
    assert code == 0 and json.loads(out)["approximate"] is True and "warning" in err
    code, out, err = run(capsys, "fit", "--model", p, "--assume", "llama", "--gpu", "24GB", "--json")
    assert code == 0 and json.loads(out)["approximate"] is True


def test_assume_takes_only_llama(tmp_path, capsys):
    code, out, err = run(capsys, "estimate", "--model", "llama-3.1-8b", "--assume", "mamba", "--batch", "1", "--seq", "8")
    assert code == ExitStatus.USAGE and "--assume has no choice 'mamba'" in err


@pytest.mark.parametrize("changes,field", [
    ({"ssm_state_size": 128}, "ssm_state_size"),
    ({"mamba_d_state": 16}, "mamba_d_state"),
    ({"hybrid_override_pattern": "M-M*"}, "hybrid_override_pattern"),
    ({"layers_block_type": ["mamba", "attention"]}, "layers_block_type"),
    ({"attn_layer_indices": [1]}, "attn_layer_indices"),
    ({"intermediate_size": [128, 256]}, "intermediate_size"),
    ({"hidden_size_per_layer_input": 256}, "hidden_size_per_layer_input"),
    ({"layer_types": ["full_attention", "linear_attention"]}, "layer_types"),
    ({"kv_lora_rank": 512}, "kv_lora_rank"),
])
def test_a_known_type_with_contradicting_fields_is_refused_naming_the_field(tmp_path, capsys, changes, field):
    p = _cfg(tmp_path, **changes)
    code, out, err = run(capsys, "estimate", "--model", p, "--batch", "1", "--seq", "8")
    assert code == ExitStatus.BAD_INPUT, (code, out, err)
    assert f"'{field}'" in err and "model_type 'llama'" in err and "--assume llama" in err, err


def test_assume_llama_ignores_a_contradicting_field_and_says_which(tmp_path, capsys):
    p = _cfg(tmp_path, ssm_state_size=128)
    code, out, err = run(capsys, "estimate", "--model", p, "--assume", "llama", "--batch", "1", "--seq", "8", "--json")
    assert code == 0 and "'ssm_state_size'" in json.loads(out)["approximate_reason"]


def test_falcon_multi_query_reads_one_kv_head(tmp_path, capsys):
    cfg = {"model_type": "falcon", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
           "vocab_size": 100, "multi_query": True, "parallel_attn": True, "bias": False}
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    m = __import__("vramsym").load_model(str(p))
    assert m.config["num_key_value_heads"] == 1 and m.approximate is None
    p.write_text(json.dumps(dict(cfg, new_decoder_architecture=True, num_kv_heads=2)))
    code, out, err = run(capsys, "estimate", "--model", str(p), "--batch", "1", "--seq", "8")
    assert code == ExitStatus.BAD_INPUT and "'new_decoder_architecture'" in err


@pytest.mark.parametrize("gpu,card,others", [("a100", "a100-40gb", ["a100-80gb"]),
                                             ("h100", "h100-sxm-80gb", ["h100-pcie-80gb", "h100-nvl-94gb"]),
                                             ("rtx-4090", "rtx-4090", []),
                                             ("rtx-4060", "rtx-4060", []),
                                             ("rtx-5060-ti", "rtx-5060-ti-16gb", ["rtx-5060-ti-8gb"])])
def test_estimate_names_the_card_a_gpu_name_resolved_to(capsys, gpu, card, others):
    """Issue 24: `--gpu a100` picked the 40 GB card without saying so. The estimate names the card
    (text and --json), and a name that other cards' names begin with says which it was read as."""
    code, out, _ = run(capsys, "estimate", "--model", "llama-3.1-8b", "--batch", "1", "--seq", "1024", "--gpu", gpu,
                       "--json")
    assert code == ExitStatus.OK
    desc = json.loads(out)["capacity"]
    assert desc.startswith(card + ",")
    assert all(o in desc for o in others)
    assert (f"'{gpu}' is read as {card}" in desc) == bool(others)
    code, out, _ = run(capsys, "estimate", "--model", "llama-3.1-8b", "--batch", "1", "--seq", "1024", "--gpu", gpu)
    assert f"({card}, " in next(line for line in out.splitlines() if line.startswith("capacity "))


def test_a_card_without_a_driver_report_says_its_size_is_the_marketed_one(capsys):
    _, desc = __import__("vramsym").resolve_capacity("rtx-5080")
    assert "16,384 MiB (the marketed size read as GiB; no driver report recorded)" in desc
    assert "as reported by the driver" in __import__("vramsym").resolve_capacity("rtx-4090")[1]


@pytest.mark.parametrize("batch,verdict", [("1", "fits: "), ("64", "does NOT fit: ")])
def test_estimate_with_a_gpu_answers_first(capsys, batch, verdict):
    """Issue 24: the first line is the verdict, the number and the card."""
    code, out, _ = run(capsys, "estimate", "--model", "llama-3.1-8b", "--batch", batch, "--seq", "4096",
                       "--gpu", "rtx-4090", "--unit", "GiB")
    assert code == ExitStatus.OK
    first = out.splitlines()[0]
    assert first.startswith(verdict) and first.endswith(" GiB on rtx-4090 (24,564 MiB)"), first
    assert " of 23.99 GiB" in first


def test_fit_table_prints_each_refusal_once(capsys):
    """fit over a model whose LoRA and QLoRA rows refuse it (Gemma 3n: all-linear adapters on AltUp's and
    LAuReL's linears, and the 4-bit base; its training was the example before it was read, and Gemma 4,
    Mamba2, Jamba and Falcon-H1 before that): each row says refused [n], the training rows answer, and
    every distinct sentence is printed once under the table, not once a row."""
    code, out, _ = run(capsys, "fit", "--model", "gemma-3n-e2b", "--gpu", "rtx-4090", "--seq", "1024")
    assert code == 0
    rows = [line for line in out.splitlines() if line.startswith("  lora ")]
    assert rows and all(line.rstrip().endswith("refused [1]") for line in rows), out
    train = [line for line in out.splitlines() if line.startswith("  train ")]
    assert train and not any("refused" in line for line in train), out
    notes = [line for line in out.splitlines() if line.startswith("  [")]
    assert len(notes) == len(set(notes)) >= 2 and "regime 'lora'" in notes[0], out


def test_a_manual_loop_over_a_config_that_keeps_its_cache_says_what_to_do(tmp_path):
    # --loop manual counts no KV cache; transformers builds one in training unless use_cache is false or every
    # layer is checkpointed (GradientCheckpointingLayer): the estimate says so, with the fix
    import json
    import vramsym
    job = {"batch": 1, "seq": 512}

    def said(model, **opts):
        est = vramsym.estimate(model, "lora", dict({"loop": "manual"}, **opts), inputs=job)
        return any("use_cache=False" in n for n in est.notes)
    assert said("llama-3.2-1b")                                   # the Hub config sets use_cache true
    assert not said("llama-3.2-1b", checkpointing="full")
    assert not said("llama-3.2-1b", loop="trainer")               # Trainer sets use_cache False
    cfg = dict(vramsym.load_model("llama-3.2-1b").config)
    p = tmp_path / "config.json"
    p.write_text(json.dumps({k: v for k, v in cfg.items() if not k.startswith("arch_")} | {"use_cache": False}))
    assert not said(str(p))


@pytest.mark.parametrize("gpu,logged,unit", [
    ("m1-16gb", "10922.67", 2**20),          # llama.cpp 2023: bytes / 2^20 (ise-uiuc/magicoder#19)
    ("m4-16gb", "11453.25", 10**6),          # llama.cpp 2024+: bytes / 1e6 (ggml-org/ci, ggml-100-mac-m4)
    ("m2-max-32gb", "21845.34", 2**20),      # ollama/ollama#434
    ("mac-36gb", "28991.03", 10**6),
    ("m1-max-64gb", "49152.00", 2**20),      # ggml-org/llama.cpp#1870
    ("m2-max-96gb", "73728.00", 2**20),      # ggml-org/llama.cpp#3213
    ("m3-max-128gb", "103079.22", 10**6),
])
def test_a_mac_gives_the_gpu_metals_working_set_limit_as_llama_cpp_logs_it(capsys, gpu, logged, unit):
    """Apple silicon shares its memory: the GPU may take Metal's recommendedMaxWorkingSetSize (2/3 of
    the RAM up to 32 GB, 3/4 above, on macOS 13-15), which llama.cpp's Metal backend logs and reports as
    the device's total. The capacity is that limit, as llama.cpp printed it for these machines."""
    from vramsym.catalog.gpus import find_gpu
    g = find_gpu(gpu)
    assert f"{g.capacity_bytes / unit:.2f}" == logged
    assert g.capacity_bytes < g.memory_mib * 2**20
    code, out, _ = run(capsys, "solve", "max_seq", "--model", "llama-3.2-1b", "--regime", "llama-cpp", "--batch", "1",
                       "--gpu", gpu, "--json")
    d = json.loads(out)
    assert code == ExitStatus.OK and d["capacity_bytes"] == g.capacity_bytes
    assert d["total_bytes"] <= g.capacity_bytes < d["next_total_bytes"] or d["next_total_bytes"] is None
    comp = {c["name"]: c["bytes"] for c in d["estimate"]["components"]}
    assert comp.get("runtime_overhead", 0) == 0          # Metal's working set holds no CUDA context


def test_gpus_lists_unified_memory_with_the_gpus_share(capsys):
    code, out, _ = run(capsys, "gpus", "--json")
    mac = next(g for g in json.loads(out) if g["name"] == "mac-64gb")
    assert mac["unified"] is True and mac["capacity_bytes"] == 48 * 2**30 and mac["memory_mib"] == 64 * 1024
    assert "recommendedMaxWorkingSetSize" in mac["capacity_source"]
    code, out, _ = run(capsys, "gpus")
    assert "mac-64gb" in out and "unified, the GPU's working set 48.00 GiB" in out


def test_the_verdict_names_a_macs_working_set_and_its_unified_memory(capsys):
    code, out, _ = run(capsys, "estimate", "--model", "llama-3.2-1b", "--batch", "1", "--seq", "1024", "--gpu", "mac-64gb")
    first = " ".join(" ".join(out.split("\n")[:3]).split())      # the terminal's width may wrap the verdict
    assert code == ExitStatus.OK and "of 48.00 GiB" in first and "on mac-64gb (the GPU's working set" in first
    assert "of 65,536 MiB" in first
