"""Hostile multi-GPU layouts (issue 19): a layout that cannot exist is refused with a sentence
naming what the user gave (exit 1), never answered silently and never exit 70.

1. Bounds declared in formulas/parallel.vram: parameter offload needs sharded parameters
   (ZeRO 2 with FSDP2, 3 with DeepSpeed), optimizer offload ZeRO 1; ``--ep`` divides the
   experts and is at most max(E, 1); ``--cp`` divides the sequence and is at most it; hybrid
   sharding needs whole replicas of the shard group.
2. ``solve min_gpus``: degrees parsed as every whole-number input is, fixed degrees searched in
   steps, a card nothing fits is DoesNotFit, a fixed layout that cannot exist is refused.
3. A symbol read only from a checkpoint's headers says that a checkpoint is needed.

Each runs the command line in-process, as tests/test_hostile.py does.
"""
import json
import time

import pytest

import vramsym
from vramsym.cli import ExitStatus, main

TRAIN = ["estimate", "--model", "llama-3.1-8b", "--regime", "train", "--batch", "1", "--seq", "512"]
MOE = ["estimate", "--model", "mixtral-8x7b", "--regime", "train", "--batch", "1", "--seq", "512"]
MIN_GPUS = ["solve", "min_gpus", "--model", "llama-3.1-8b", "--regime", "train", "--batch", "1", "--seq", "512",
            "--gpu", "80GB"]
# a 141 GB card: FSDP2 splits a fused expert tensor on its first dimension, the 8 experts, so no rank holds
# less than one expert of each layer (formulas/parallel.vram P_layer_pad): Mixtral-8x7B's full training fits
# no number of 80 GB GPUs under ZeRO-3
MOE_GPUS = ["solve", "min_gpus", "--model", "mixtral-8x7b", "--regime", "train", "--batch", "1", "--seq", "512",
            "--gpu", "141GB"]


def run(capsys, *argv):
    t = time.perf_counter()
    code = main(list(argv))
    elapsed = time.perf_counter() - t
    out, err = capsys.readouterr()
    assert code != ExitStatus.INTERNAL, err
    assert "Traceback" not in err and "internal error" not in err, err
    assert elapsed < 60, f"{argv} took {elapsed:.1f} s"
    return code, out, err


def refused(capsys, argv, *needles):
    code, out, err = run(capsys, *argv)
    assert code == ExitStatus.BAD_INPUT, (code, out, err)
    for n in needles:
        assert n in err, (n, err)
    return err


def answered(capsys, argv) -> dict:
    code, out, err = run(capsys, *argv, "--json")
    assert code == ExitStatus.OK, (code, err)
    return json.loads(out)


# ---- 1. layouts that cannot exist: bounds in parallel.vram ----

@pytest.mark.parametrize("flags,needles", [
    # parameter offload at ZeRO 0 (the default), 1 (FSDP2) and 2 (DeepSpeed: offload_param is stage 3 only)
    (["--gpus", "8", "--offload", "optimizer-params"],
     ["must be at least 2", "--offload optimizer-params", "--zero-impl fsdp2", "the default of --zero"]),
    (["--gpus", "8", "--zero", "1", "--offload", "optimizer-params"], ["at least 2", "got --zero 1"]),
    (["--gpus", "8", "--zero", "0", "--offload", "optimizer-params", "--zero-impl", "deepspeed"],
     ["at least 3", "--zero-impl deepspeed", "got --zero 0"]),
    (["--gpus", "8", "--zero", "1", "--offload", "optimizer-params", "--zero-impl", "deepspeed"], ["at least 3"]),
    (["--gpus", "8", "--zero", "2", "--offload", "optimizer-params", "--zero-impl", "deepspeed"],
     ["at least 3", "got --zero 2"]),
    # optimizer offload needs ZeRO 1 or more (DeepSpeed offload_optimizer: stages 1-3; DDP has none)
    (["--gpus", "8", "--zero", "0", "--offload", "optimizer"], ["at least 1", "--offload optimizer", "got --zero 0"]),
    (["--gpus", "8", "--offload", "optimizer", "--zero-impl", "deepspeed"], ["at least 1", "--offload optimizer"]),
    # context parallelism over more ranks than tokens, or a degree that does not divide the sequence
    (["--gpus", "1024", "--cp", "1024"], ["must be at most seq = 512", "got --cp 1024"]),
    (["--gpus", "6", "--cp", "3"], ["must divide seq", "= 512", "got --cp 3"]),
    # hybrid sharding: the GPUs split into whole replicas of the shard group
    (["--gpus", "12", "--sharding", "hybrid", "--zero", "3"], ["whole multiple", "= 8", "--sharding hybrid",
                                                             "got --gpus 12"]),
    (["--gpus", "12", "--tp", "2", "--sharding", "hybrid", "--zero", "3"], ["whole multiple", "got --gpus 12"]),
    (["--gpus", "24", "--sharding", "hybrid", "--zero", "3", "--gpus-per-node", "16"],
     ["whole multiple", "= 16", "got --gpus 24"]),
])
def test_impossible_training_layouts_are_refused(capsys, flags, needles):
    refused(capsys, TRAIN + flags, *needles)


@pytest.mark.parametrize("flags", [
    ["--gpus", "8", "--zero", "3", "--offload", "optimizer-params"],
    ["--gpus", "8", "--zero", "2", "--offload", "optimizer-params"],
    ["--gpus", "8", "--zero", "3", "--offload", "optimizer-params", "--zero-impl", "deepspeed"],
    ["--gpus", "1", "--zero", "3", "--offload", "optimizer-params", "--zero-impl", "deepspeed"],   # ZeRO-Offload on one GPU
    ["--gpus", "8", "--zero", "1", "--offload", "optimizer"],
    ["--gpus", "8", "--zero", "1", "--offload", "optimizer", "--zero-impl", "deepspeed"],
    ["--gpus", "8", "--zero", "0"],
    ["--gpus", "2", "--cp", "2"],
    ["--gpus", "512", "--cp", "512"],
    ["--gpus", "16", "--sharding", "hybrid", "--zero", "3"],
    ["--gpus", "4", "--sharding", "hybrid", "--zero", "3"],           # fewer than a node: one replica
    ["--gpus", "12", "--tp", "2", "--sharding", "hybrid", "--zero", "3", "--gpus-per-node", "4"],
    ["--gpus", "8", "--ep", "1"],                                      # a dense model: --ep 1 is fine
])
def test_layouts_that_exist_still_answer(capsys, flags):
    d = answered(capsys, TRAIN + flags)
    assert d["total_bytes"] > 0


def test_parameter_offload_moves_the_parameters_to_the_host(capsys):
    d = answered(capsys, TRAIN + ["--gpus", "8", "--zero", "3", "--offload", "optimizer-params"])
    assert d["layout"]["offload"] == "optimizer_params" and d["host_bytes"] > 0


@pytest.mark.parametrize("flags,needles", [
    (["--gpus", "64", "--ep", "64"], ["must be at most Max(1, E) = 8", "got --ep 64"]),
    (["--gpus", "6", "--ep", "3"], ["must divide E", "= 8", "got --ep 3"]),
    (["--gpus", "16", "--ep", "16"], ["at most", "got --ep 16"]),
])
def test_expert_parallelism_beyond_the_experts_is_refused(capsys, flags, needles):
    refused(capsys, MOE + flags, *needles)


@pytest.mark.parametrize("gpus,ep", [(8, 8), (2, 2), (8, 4), (4, 1)])
def test_expert_parallelism_that_splits_the_experts_answers(capsys, gpus, ep):
    d = answered(capsys, MOE + ["--gpus", str(gpus), "--ep", str(ep), "--zero", "3"])
    assert d["layout"]["ep"] == ep and d["layout"]["gpus"] == gpus


def test_a_dense_model_ignores_expert_parallelism(capsys):
    code, out, err = run(capsys, *TRAIN, "--gpus", "8", "--ep", "1")
    assert code == ExitStatus.OK and "--ep 1 is ignored" in err


def test_inference_checks_context_parallelism_against_the_sequence(capsys):
    refused(capsys, ["estimate", "--model", "llama-3.1-8b", "--batch", "1", "--seq", "512", "--gpus", "3",
                     "--cp", "3"], "must divide seq", "got --cp 3")
    answered(capsys, ["estimate", "--model", "llama-3.1-8b", "--batch", "1", "--seq", "512", "--gpus", "2",
                      "--cp", "2"])


def test_the_python_api_refuses_the_same_layouts():
    m = vramsym.load_model("llama-3.1-8b")
    r = vramsym.compile(m, "train", {"offload": "optimizer_params", "zero_impl": "deepspeed"})
    with pytest.raises(vramsym.InputError, match="at least 3 with --offload optimizer-params"):
        r.evaluate(batch=1, seq=512, gpus=8, zero=2)
    assert r.evaluate(batch=1, seq=512, gpus=8, zero=3).host_bytes > 0
    moe = vramsym.compile(vramsym.load_model("mixtral-8x7b"), "train")
    with pytest.raises(vramsym.InputError, match="must divide E"):
        moe.evaluate(batch=1, seq=512, gpus=6, ep=3)


# ---- 2. solve min_gpus ----

@pytest.mark.parametrize("flag,value,needle", [
    ("--tp", "1.5", "--tp takes a whole number, got '1.5'"),
    ("--tp", "abc", "--tp takes a whole number, got 'abc'"),
    ("--pp", "2.5", "--pp takes a whole number, got '2.5'"),
    ("--zero", "3.5", "--zero takes a whole number, got '3.5'"),
    ("--cp", "nan", "--cp takes a whole number"),
    ("--ep", "1e999", "--ep takes a whole number"),
    ("--tp", "0", "--tp must be at least 1, got '0'"),
    ("--zero", "-1", "--zero must be at least 0, got '-1'"),
    ("--zero", "4", "must be at most 3"),
])
def test_min_gpus_refuses_degrees_that_are_not_whole_numbers(capsys, flag, value, needle):
    refused(capsys, MIN_GPUS + [flag, value], needle)


@pytest.mark.parametrize("flag,value,key,want", [("--pp", "2.0", "pp", 2), ("--zero", "3.0", "zero", 3),
                                                 ("--tp", "2.0", "tp", 2)])
def test_min_gpus_reads_a_whole_decimal_like_every_whole_number_input(capsys, flag, value, key, want):
    assert answered(capsys, TRAIN[:-4] + ["--batch", "1.0", "--seq", "512"])["inputs"]["b"] == "1"
    d = answered(capsys, MIN_GPUS + [flag, value])
    assert d["layout"][key] == want


@pytest.mark.parametrize("flag", ["--tp", "--pp", "--cp"])
def test_min_gpus_with_a_fixed_degree_searches_in_its_steps(capsys, flag):
    d = answered(capsys, MIN_GPUS + [flag, "2"])
    lay = d["layout"]
    assert lay[flag[2:]] == 2
    assert lay["gpus"] % 2 == 0 and lay["gpus"] == lay["dp"] * lay["tp"] * lay["pp"] * lay["cp"]
    # the answer is a layout the estimate accepts, and it fits
    est = answered(capsys, TRAIN + ["--gpus", str(lay["gpus"]), "--tp", str(lay["tp"]), "--pp", str(lay["pp"]),
                                    "--cp", str(lay["cp"]), "--zero", str(lay["zero"])])
    assert est["total_bytes"] == d["total_bytes"] <= d["capacity_bytes"]


@pytest.mark.parametrize("ep", [2, 4, 8])
def test_min_gpus_with_a_fixed_expert_degree_answers_a_multiple_of_it(capsys, ep):
    d = answered(capsys, MOE_GPUS + ["--ep", str(ep), "--tp", "1", "--pp", "1", "--zero", "3"])
    lay = d["layout"]
    assert lay["ep"] == ep and lay["gpus"] % ep == 0
    # one data-parallel step fewer (the previous multiple of ep) does not fit
    if lay["gpus"] > ep:
        smaller = answered(capsys, MOE + ["--gpus", str(lay["gpus"] - ep), "--ep", str(ep), "--zero", "3"])
        assert smaller["total_bytes"] > d["capacity_bytes"]


@pytest.mark.parametrize("node,gpu,want", [("4", "45GB", 4), ("8", "40GB", 5), ("8", "30GB", 6)])
def test_min_gpus_with_hybrid_sharding_answers_whole_replicas(capsys, node, gpu, want):
    """The search probes GPU counts that are not whole replicas (5 with 4 per node): it steps over
    them instead of giving the layout up."""
    d = answered(capsys, ["solve", "min_gpus", "--model", "llama-3.1-8b", "--regime", "train", "--batch", "1",
                          "--seq", "512", "--gpu", gpu, "--sharding", "hybrid", "--zero", "3", "--tp", "1",
                          "--pp", "1", "--gpus-per-node", node])
    gpus = d["layout"]["gpus"]
    assert gpus == want and d["problems"] == []
    assert gpus <= int(node) or gpus % int(node) == 0, (node, gpus)
    answered(capsys, TRAIN + ["--gpus", str(gpus), "--sharding", "hybrid", "--zero", "3", "--gpus-per-node", node])


@pytest.mark.parametrize("gpu", ["1B", "1000B", "0.001GB"])
def test_min_gpus_on_a_card_nothing_fits_says_so(capsys, gpu):
    code, out, err = run(capsys, *MIN_GPUS[:-1], gpu, "--json")
    assert code == ExitStatus.DOES_NOT_FIT, (code, err)
    e = json.loads(out)["error"]
    assert e["kind"] == "does_not_fit"
    assert e["message"].startswith("nothing fits") and "smallest per-GPU total found is" in e["message"]
    assert "must be at most" not in e["message"]          # no search bound blamed
    assert e["smallest_bytes"] > e["capacity_bytes"]


@pytest.mark.parametrize("argv,needles", [
    (MIN_GPUS + ["--zero", "0", "--offload", "optimizer-params"], ["at least 2", "--offload optimizer-params",
                                                                  "got --zero 0"]),
    (MIN_GPUS + ["--zero", "2", "--offload", "optimizer-params", "--zero-impl", "deepspeed"], ["at least 3"]),
    (MIN_GPUS + ["--zero", "0", "--offload", "optimizer"], ["at least 1", "got --zero 0"]),
    (MIN_GPUS + ["--cp", "3"], ["must divide seq", "got --cp 3"]),
    (MIN_GPUS + ["--cp", "1024"], ["at most seq = 512", "got --cp 1024"]),
    (MIN_GPUS + ["--pp", "64"], ["at most L = 32", "got --pp 64"]),
    (MIN_GPUS + ["--tp", "3"], ["must divide n_q", "got --tp 3"]),
    (MOE_GPUS + ["--ep", "3"], ["must divide E", "got --ep 3"]),
    (MOE_GPUS + ["--ep", "64"], ["at most Max(1, E) = 8", "got --ep 64"]),
])
def test_min_gpus_refuses_a_fixed_layout_that_cannot_exist(capsys, argv, needles):
    refused(capsys, argv, *needles)


def test_min_gpus_searches_the_zero_stages_offload_allows(capsys):
    d = answered(capsys, MIN_GPUS + ["--offload", "optimizer-params"])
    assert d["layout"]["zero"] >= 2 and d["host_bytes"] > 0
    assert all(row["layout"]["zero"] >= 2 for row in d["layouts"])
    d = answered(capsys, MIN_GPUS + ["--offload", "optimizer-params", "--zero-impl", "deepspeed"])
    assert all(row["layout"]["zero"] == 3 for row in d["layouts"])


def test_min_gpus_with_zero_3_and_parameter_offload_answers(capsys):
    d = answered(capsys, MIN_GPUS + ["--zero", "3", "--offload", "optimizer-params"])
    assert d["layout"]["zero"] == 3 and d["value"] >= 1


def test_min_gpus_api_with_a_fixed_tensor_degree():
    r = vramsym.compile(vramsym.load_model("llama-3.1-8b"), "train")
    res = vramsym.min_gpus(r, vramsym.resolve_capacity("80GB")[0], {"batch": 1, "seq": 512, "tp": 2})
    est, lay = res["best"]
    assert lay["tp"] == 2 and lay["gpus"] % 2 == 0
    # by symbol name as well as by flag name; a float that is whole is that whole number
    res2 = vramsym.min_gpus(r, vramsym.resolve_capacity("80GB")[0], {"batch": 1, "seq": 512, "n_tp": 2.0})
    assert res2["best"][1] == lay


# ---- 3. a symbol read only from a checkpoint's headers ----

@pytest.mark.parametrize("flags,needles", [
    (["--regime", "llama_cpp", "--weights-source", "file"], ["regime llama_cpp with --weights-source file needs a checkpoint"]),
    (["--weights-source", "file"], ["regime inference with --weights-source file needs a checkpoint"]),
])
def test_a_catalog_model_where_a_checkpoint_is_needed_says_so(capsys, flags, needles):
    err = refused(capsys, ["estimate", "--model", "llama-3.1-8b", "--batch", "1", "--seq", "16"] + flags,
                  *needles, "--model", "*.safetensors", ".gguf")
    assert "ckpt_weight_bytes" not in err          # an internal field, not something a user can give


# ---- the bound syntax: `multiple EXPR`, and bounds that read options ----

EXTRA = '''
symbol foo : 1 "a test count" domain posint alias foo_count default 4
    multiple match overhead { none: 3, cuda: 2 }
    source "a test"
term foo_bytes = foo * [byte] : byte "bytes of the test count" source "a test"
regime foo_test "a test regime" { add foo_bytes }
'''


def test_a_multiple_bound_that_reads_an_option(tmp_path):
    f = tmp_path / "foo.vram"
    f.write_text(EXTRA)
    r = vramsym.compile(None, "foo_test", {}, formulas=[str(f)])
    assert r.evaluate(foo_count=6).total_bytes == 6
    with pytest.raises(vramsym.InputError, match=r"must be a whole multiple of 2 with --overhead cuda, "
                                                 r"got --foo-count 3"):
        r.evaluate(foo_count=3)
    r = vramsym.compile(None, "foo_test", {"overhead": "none"}, formulas=[str(f)])
    assert r.evaluate(foo_count=3).total_bytes == 3
    with pytest.raises(vramsym.InputError, match=r"multiple of 3 with --overhead none, got 4, the default of "
                                                 r"--foo-count"):
        r.evaluate()


def test_a_multiple_bound_is_unit_checked(tmp_path, capsys):
    f = tmp_path / "bad.vram"
    f.write_text(EXTRA.replace("none: 3, cuda: 2", "none: 3 * [byte], cuda: 2 * [byte]"))
    code, out, err = run(capsys, "check", str(f))
    assert code == ExitStatus.BAD_INPUT and "foo" in out + err
