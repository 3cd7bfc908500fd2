"""`vramsym advise`: every change it lists is reproduced by `vramsym estimate` with its flags, the
ranking puts what fits first, the solved rows agree with `solve`, and the sensitivity is the
derivative of the compiled total."""
import json

import pytest

import vramsym
from helpers import run_cli

BASE = ["--model", "llama-3.1-8b", "--batch", "16", "--seq", "8192", "--gpu", "24GB"]


@pytest.fixture(scope="module")
def inference_advice():
    code, out, err = run_cli(["advise", *BASE, "--allow-smaller", "--json"])
    assert code == 0, err
    return json.loads(out)


def _estimate_total(argv):
    code, out, err = run_cli([*argv, "--json"])
    assert code == 0, (argv, err)
    return json.loads(out)["total_bytes"]


def test_each_change_is_reproduced_by_estimate_with_its_argv(inference_advice):
    d = inference_advice
    assert not d["fits"] and d["total_bytes"] > d["capacity_bytes"] == 24 * 10**9
    assert d["changes"], d
    for row in d["changes"]:
        assert row["argv"][0] == "estimate"
        assert _estimate_total(row["argv"]) == row["total_bytes"], row
        assert row["saved_bytes"] == d["total_bytes"] - row["total_bytes"] > 0
        assert row["fits"] == (row["total_bytes"] <= row["capacity_bytes"])
        assert row["headroom_bytes"] == row["capacity_bytes"] - row["total_bytes"]


def test_args_appended_to_the_users_command_give_the_same_total(inference_advice):
    """For a change whose flags the user did not give, the user's command plus `args` is the row."""
    given = {a for a in BASE if a.startswith("--")}
    rows = [r for r in inference_advice["changes"] if not {a for a in r["args"] if a.startswith("--")} & given]
    assert rows
    for row in rows:
        assert _estimate_total(["estimate", *BASE, *row["args"]]) == row["total_bytes"], row


def test_changes_that_fit_come_first_cheapest_first(inference_advice):
    rows = inference_advice["changes"]
    fits = [r["fits"] for r in rows]
    assert fits == sorted(fits, reverse=True)
    fitting = [r for r in rows if r["fits"]]
    assert [r["cost_rank"] for r in fitting] == sorted(r["cost_rank"] for r in fitting)
    rest = [r["saved_bytes"] for r in rows if not r["fits"]]
    assert rest == sorted(rest, reverse=True)


def test_the_batch_row_is_the_solved_maximum(inference_advice):
    row = next(r for r in inference_advice["changes"] if r["change"] == "largest batch that fits")
    sol = vramsym.solve("batch", "24GB", "llama-3.1-8b", inputs={"seq": 8192})
    assert row["solved"] == {"batch": sol.value} and row["total_bytes"] == sol.total_bytes


def test_a_combination_fits_without_lowering_the_batch(inference_advice):
    """No single quantization fits batch 16 x 8192 on 24 GB; the combined change (then the largest
    batch) does, and names each part."""
    rows = inference_advice["changes"]
    singles = [r for r in rows if "solved" not in r and "layout" not in r and "combined" not in r and "engine" not in r]
    assert singles and not any(r["fits"] for r in singles)
    combo = next(r for r in rows if "combined" in r)
    assert combo["fits"] and len(combo["combined"]) >= 2


def test_sensitivity_is_the_derivative_of_the_compiled_total(inference_advice):
    sens = inference_advice["sensitivity"]
    r = vramsym.compile("llama-3.1-8b")
    f = lambda b, s: r.evaluate(batch=b, seq=s).exact_total   # noqa: E731
    from fractions import Fraction
    # linear in the batch: the derivative is the exact step
    assert Fraction(sens["batch"]["exact"]) == f(17, 8192) - f(16, 8192)
    # at most quadratic (convex) in the sequence: between the backward and forward steps
    d = Fraction(sens["seq"]["exact"])
    assert f(16, 8192) - f(16, 8191) <= d <= f(16, 8193) - f(16, 8192)


def test_training_advice_reaches_one_gpu():
    code, out, err = run_cli(["advise", "--model", "llama-3.2-1b", "--regime", "train", "--precision", "fp32",
                              "--batch", "8", "--seq", "2048", "--gpu", "rtx-4090", "--json"])
    assert code == 0, err
    d = json.loads(out)
    assert not d["fits"]
    one_gpu = [r for r in d["changes"] if r["fits"] and "layout" not in r]
    assert one_gpu, d["changes"]
    for row in one_gpu[:3]:
        assert _estimate_total(row["argv"]) == row["total_bytes"]


def test_the_text_output_names_the_best_change_and_its_command():
    code, out, err = run_cli(["advise", *BASE, "--allow-smaller"])
    assert code == 0, err
    assert "does not fit" in out and "best: " in out and "vramsym estimate --model llama-3.1-8b" in out
    assert "d total / d batch" in out


@pytest.mark.parametrize("argv,needle", [
    (["advise", "--model", "llama-3.1-8b", "--batch", "1", "--seq", "1024", "--gpu", "nosuchgpu"], "GPU"),
    (["advise", "--model", "llama-3.1-8b", "--batch", "0", "--seq", "1024", "--gpu", "24GB"], "batch"),
    (["advise", "--model", "no-such-model", "--batch", "1", "--seq", "1024", "--gpu", "24GB"], "model"),
    (["advise", "--model", "llama-3.1-8b", "--batch", "1", "--seq", "1024", "--gpu", "-5GB"], "positive"),
])
def test_bad_input_is_exit_1_with_a_sentence(argv, needle):
    code, out, err = run_cli(argv)
    assert code == 1, (code, out, err)
    assert needle.lower() in err.lower() and "Traceback" not in err


LORA_ONE_GPU = ["advise", "--model", "llama-3.1-8b", "--regime", "lora", "--batch", "4", "--seq", "2048",
                "--gpu", "rtx-4090", "--json"]


def test_advise_stays_within_the_job_it_was_given():
    """Issue 24: a single-GPU LoRA user was told to use 8 GPUs, and a sequence of 30 came second. By
    default nothing needs more GPUs than the job has or a smaller batch or sequence than asked; what
    was left out for that is in `problems`, with the flag that allows it."""
    code, out, err = run_cli(LORA_ONE_GPU)
    assert code == 0, err
    d = json.loads(out)
    assert not any("layout" in r for r in d["changes"])
    for r in d["changes"]:
        solved = r.get("solved", {})
        assert solved.get("batch", 4) >= 4 and solved.get("seq", 2048) >= 2048, r
    left = {p["change"]: p["error"] for p in d["problems"]}
    assert "--allow-gpus" in left["fewest GPUs that hold it"]
    assert "--allow-smaller" in left["largest sequence length that fits"]
    assert any(r["fits"] for r in d["changes"])            # checkpointing and a fused loss fit one card


def test_advise_proposes_more_gpus_and_less_when_allowed():
    code, out, err = run_cli([*LORA_ONE_GPU, "--allow-gpus", "8", "--allow-smaller"])
    assert code == 0, err
    d = json.loads(out)
    layout = next(r for r in d["changes"] if "layout" in r)
    assert 1 < layout["layout"]["gpus"] <= 8
    assert any(r.get("solved", {}).get("seq", 2048) < 2048 for r in d["changes"])
    code, out, err = run_cli([*LORA_ONE_GPU, "--allow-gpus", "4"])
    assert not any("layout" in r and r["layout"]["gpus"] > 4 for r in json.loads(out)["changes"])


def test_another_engine_is_proposed_and_reproduced_but_never_combined(inference_advice):
    """Issue 25: a job that does not fit in transformers may fit in llama.cpp (a Q4_K_M GGUF, every
    layer on the GPU): the row names the engine, its argv moves to the llama_cpp regime and gives the
    same total, and the combinations stay on the user's engine."""
    rows = inference_advice["changes"]
    engine = [r for r in rows if r.get("engine") == "llama.cpp"]
    assert engine and all(r["regime"] == "llama_cpp" and "--quant" in r["args"] for r in engine)
    for r in engine:
        assert _estimate_total(r["argv"]) == r["total_bytes"]
    combo = next(r for r in rows if "combined" in r)
    assert not any("llama.cpp" in part for part in combo["combined"])
