"""The command-line parser (vramsym/flags.py) as a table, httpie-style: argv -> exit status and the
exact standard error. The table covers the declared behaviour: ``--`` ends the flags, a flag name is
never a value, an unknown ``-x`` is an unknown flag, a bad choice is a usage error (exit 2)."""
import pytest

from helpers import run_cli

M = ["--model", "llama-3.1-8b"]
U_EST = "usage: vramsym estimate --model MODEL [flags]  (vramsym estimate --help)\n"
U_DTYPE = "usage: vramsym dtype FORMAT [flags]  (vramsym dtype --help)\n"

TABLE = [
    # argv, exit status, exact stderr
    (["estimate", *M, "--batch", "--seq", "128"], 2, U_EST + "vramsym estimate: error: --batch needs a value (N)\n"),
    (["estimate", *M, "--seq"], 2, U_EST + "vramsym estimate: error: --seq needs a value (N)\n"),
    (["estimate", *M, "-x"], 2,
     U_EST + "vramsym estimate: error: unknown flag -x for `vramsym estimate`; `vramsym estimate --help` lists the flags\n"),
    (["estimate", *M, "-x=3"], 2,
     U_EST + "vramsym estimate: error: unknown flag -x for `vramsym estimate`; `vramsym estimate --help` lists the flags\n"),
    (["estimate", *M, "--", "--json"], 2, U_EST + "vramsym estimate: error: unexpected argument '--json'\n"),
    (["estimate", *M, "--unit", "--batch", "1"], 2, U_EST + "vramsym estimate: error: --unit needs a value ({GiB,GB})\n"),
    (["models", "--json=1"], 2, "usage: vramsym models  [flags]  (vramsym models --help)\n"
     "vramsym models: error: --json takes no value\n"),
    (["estimate", *M, "--batch", "1", "--batch", "2"], 2,
     U_EST + "vramsym estimate: error: --batch is given twice, with different values\n"),
    (["estimate", "--batch", "1"], 2, U_EST + "vramsym estimate: error: --model is required (catalog name (see "
     "`vramsym models`) or path to a config.json)\n"),
    (["estimat"], 2, "usage: vramsym [--version] COMMAND [flags]  (vramsym --help; vramsym COMMAND --help)\n"
     "vramsym: error: unknown command 'estimat'; did you mean estimate?\n"),
    (["dtype"], 2, U_DTYPE + "vramsym dtype: error: missing FORMAT\n"),
    (["dtype", "bf16", "fp16"], 2, U_DTYPE + "vramsym dtype: error: unexpected argument 'fp16'\n"),
    (["dtype", "--", "bf16"], 0, ""),
    (["estimate", *M, "--batch", "-3", "--seq", "16"], 1,
     "vramsym: batch (batch size (sequences per step)) must be positive, got -3 from the input\n"),
]


@pytest.mark.parametrize("argv,status,stderr", TABLE, ids=[" ".join(a) for a, _, _ in TABLE])
def test_flags_table(argv, status, stderr):
    code, out, err = run_cli(argv)
    assert (code, err) == (status, stderr)


def test_a_bad_choice_is_a_usage_error_with_the_choices():
    code, out, err = run_cli(["estimate", *M, "--precision", "fp99"])
    assert code == 2
    assert err.splitlines()[-1].startswith("vramsym estimate: error: --precision has no choice 'fp99'; did you mean ")
    assert "Choices: fp32, bf16" in err


def test_json_after_the_end_of_the_flags_is_not_obeyed():
    code, out, err = run_cli(["estimate", *M, "--", "--json"])
    assert code == 2 and out == "" and err.startswith("usage:")      # the error as text: --json was not a flag
    code, out, err = run_cli(["estimate", *M, "--batch", "x", "--json"])
    assert code == 1 and out.startswith("{") and '"kind": "input"' in out


def test_an_equals_value_may_look_like_a_flag():
    code, out, err = run_cli(["estimate", "--model=llama-3.1-8b", "--batch=1", "--seq=16", "--json"])
    assert code == 0, err
