"""The timeline of phases: a regime's total is the largest phase total, a phase's total the sum of
the components alive in it, and no formula subtracts what is not alive together."""
import json
import re
from functools import lru_cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import vramsym
from helpers import run_cli
from vramsym.catalog.models import catalog
from vramsym.engine.regimes import compose
from vramsym.lang.parse import parse_text

ROOT = Path(__file__).resolve().parent.parent
LIB = vramsym.load_library(use_cache=False)
SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
REGIMES = ["inference", "train", "lora", "qlora", "freeze", "vllm", "train_states"]

#: the phases of every bundled regime, in order (a change here is a change of the timeline)
PHASES = {
    "inference": ["prefill", "logits"],
    "inference_kv": ["all"],
    "train_states": ["all"],
    "train": ["forward", "attention_forward", "recurrent_forward", "backward_start", "root_pre_backward", "final_norm_backward", "recompute_first", "attention_recompute", "attention_backward", "layer_backward_top", "layer_backward", "layer_mlp_backward", "backward_end", "root_reduce_scatter", "recompute_last", "attention_recompute_last", "attention_backward_last", "ssm_recompute", "ssm_recompute_last", "ssm_backward", "ssm_backward_last", "recurrent_low_forward", "optimizer"],
    "lora": ["forward", "attention_forward", "recurrent_forward", "backward_start", "root_pre_backward", "final_norm_backward", "recompute_first", "attention_recompute", "attention_backward", "layer_backward_top", "layer_backward", "layer_mlp_backward", "backward_end", "root_reduce_scatter", "recompute_last", "attention_recompute_last", "attention_backward_last", "ssm_recompute", "ssm_recompute_last", "ssm_backward", "ssm_backward_last", "recurrent_low_forward", "optimizer"],
    "qlora": ["forward", "attention_forward", "recurrent_forward", "backward_start", "root_pre_backward", "final_norm_backward", "recompute_first", "attention_recompute", "attention_backward", "layer_backward_top", "layer_backward", "layer_mlp_backward", "backward_end", "root_reduce_scatter", "recompute_last", "attention_recompute_last", "attention_backward_last", "ssm_recompute", "ssm_recompute_last", "ssm_backward", "ssm_backward_last", "recurrent_low_forward", "optimizer",
              "backward_top"],
    "freeze": ["forward", "attention_forward", "recurrent_forward", "backward_start", "root_pre_backward", "final_norm_backward", "recompute_first", "attention_recompute", "attention_backward", "layer_backward_top", "layer_backward", "layer_mlp_backward", "backward_end", "root_reduce_scatter", "recompute_last", "attention_recompute_last", "attention_backward_last", "ssm_recompute", "ssm_recompute_last", "ssm_backward", "ssm_backward_last", "recurrent_low_forward", "optimizer"],
    "adapters": ["forward", "attention_forward", "recurrent_forward", "backward_start", "root_pre_backward", "final_norm_backward", "recompute_first", "attention_recompute", "attention_backward", "layer_backward_top", "layer_backward", "layer_mlp_backward", "backward_end", "root_reduce_scatter", "recompute_last", "attention_recompute_last", "attention_backward_last", "ssm_recompute", "ssm_recompute_last", "ssm_backward", "ssm_backward_last", "recurrent_low_forward", "optimizer"],
    "prefix": ["forward", "attention_forward", "recurrent_forward", "backward_start", "root_pre_backward", "final_norm_backward", "recompute_first", "attention_recompute", "attention_backward", "layer_backward_top", "layer_backward", "layer_mlp_backward", "backward_end", "root_reduce_scatter", "recompute_last", "attention_recompute_last", "attention_backward_last", "ssm_recompute", "ssm_recompute_last", "ssm_backward", "ssm_backward_last", "recurrent_low_forward", "optimizer"],
    "vllm": ["profile", "serving"],
    "llama_cpp": ["load", "graph"],
    "ollama": ["load", "graph"],
    "sglang": ["load", "serving"],
    "trtllm": ["dry_run", "serving"],
    "heuristic_1_2": ["all"],
    "heuristic_1_3": ["all"],
    "deepspeed_estimate": ["all"],
}


def test_phase_names_per_regime():
    assert sorted(PHASES) == sorted(LIB.regimes)
    for regime, names in PHASES.items():
        assert [p.name for p in compose(LIB, regime).phases] == names, regime


def test_no_formula_file_subtracts_what_is_not_alive_together():
    """No `signed` term (the language has no such attribute any more) and no phase_overlap."""
    for f in sorted((ROOT / "formulas").glob("*.vram")):
        text = re.sub(r'"(\\.|[^"\\\n])*"', '""', f.read_text())      # strings apart
        text = re.sub(r"#[^\n]*", "", text)
        assert not re.search(r"\bsigned\b", text), f
        assert "phase_overlap" not in text, f
    _, diags = parse_text('term t = 1 : 1 "t" signed\n', "x.vram")
    assert diags and diags[0].kind == "syntax"


@lru_cache(maxsize=None)
def _model(name):
    return vramsym.load_model(name)


@SETTINGS
@given(st.sampled_from(sorted(catalog())), st.sampled_from(REGIMES), st.integers(1, 16), st.integers(1, 8192),
       st.sampled_from([{}, {"checkpointing": "full"}, {"attention": "eager"}, {"optimizer": "adamw_fused"}]),
       st.sampled_from([{}, {"gpus": 2, "zero": 2}, {"gpus": 2, "zero": 3}, {"grad_accum": 2}]))
def test_total_is_the_largest_phase_total(name, regime, b, s, options, layout):
    inputs = {"batch": b, "seq": s}
    if regime == "vllm":
        inputs["capacity"] = 80 * 10**9
    elif regime.startswith("train") or regime in ("lora", "qlora", "freeze"):
        inputs.update(layout)
    try:
        est = vramsym.estimate(_model(name), regime, options, inputs, library=LIB)
    except vramsym.VramError:
        return
    phases = est.phases
    assert est.exact_total == max(p.exact for p in phases)
    assert est.peak_phase.exact == est.exact_total
    by_name = {c.name: c.exact for c in est.all_components}
    for p in phases:      # frag is 0 by default: a share term adds nothing, so every phase is a plain sum
        assert p.exact == sum(by_name[c] for c in p.components if not est.component(c).host), (p.name, regime)
    assert [c.name for c in est.components] == [c for c in by_name if c in est.peak_phase.components]
    assert all(c.exact >= 0 for c in est.all_components)


def test_json_lists_the_phases_and_the_peak():
    code, out, err = run_cli(["estimate", "--model", "llama-3.2-1b", "--regime", "train", "--batch", "2",
                              "--seq", "512", "--json"])
    assert code == 0, err
    d = json.loads(out)
    assert [p["name"] for p in d["phases"]] == PHASES["train"]
    peak = next(p for p in d["phases"] if p["name"] == d["peak_phase"])
    assert peak["total_bytes"] == d["total_bytes"] == max(p["total_bytes"] for p in d["phases"])
    assert [c["name"] for c in d["components"]] == peak["components"]
    code, out, _ = run_cli(["estimate", "--model", "llama-3.2-1b", "--regime", "train", "--batch", "2", "--seq", "512"])
    assert f"peak phase: {d['peak_phase']}" in out and "phase totals: forward" in out and "(peak)" in out


def test_fsdp2_zero2_unsharded_parameters_not_alive_with_all_gradients():
    """FSDP2 with reshard_after_forward=False: the unsharded parameters are alive from forward to the
    start of backward, not with every gradient and the optimizer step (measured: docs/accuracy.md)."""
    est = vramsym.estimate(_model("llama-3.2-1b"), "train", {"overhead": "none"},
                           {"batch": 2, "seq": 512, "gpus": 2, "zero": 2}, library=LIB)
    phases = {p.name: p for p in est.phases}
    assert "zero2_unsharded" in phases["forward"].components
    assert "zero2_unsharded" not in phases["optimizer"].components
    assert "zero2_unsharded" not in phases["backward_end"].components
    # the fake-process-group measurement of this job: 13,260,059,472 B at the peak (vramsym measure)
    assert abs(est.total_bytes / 13_260_059_472 - 1) < 0.02
