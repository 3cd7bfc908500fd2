"""`vramsym completion bash|zsh|fish`: scripts generated from the command table the parser uses.

Each script must be valid for its shell (``bash -n``, ``zsh -n``, ``fish --no-execute``; a shell
that is not installed is skipped) and must actually complete: the bash function is called with
COMP_WORDS / COMP_CWORD set, fish answers ``complete -C``, and the zsh function runs with the
completion builtins (compadd, _describe, ...) replaced by functions that print their arguments.
"""
import json
import shutil
import subprocess

import pytest

import vramsym
from vramsym import completion
from vramsym.cli import commands

from helpers import run_cli


@pytest.fixture(scope="module")
def interface():
    return vramsym.vocabulary().interface


@pytest.fixture(scope="module")
def scripts(interface, tmp_path_factory):
    d = tmp_path_factory.mktemp("completion")
    out = {}
    for shell in completion.SHELLS:
        p = d / f"vramsym.{shell}"
        p.write_text(completion.script(shell, commands(interface), interface))
        out[shell] = p
    return out


def _shell(name):
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not installed")
    return path


SYNTAX = {"bash": ["-n"], "zsh": ["-n"], "fish": ["--no-execute"]}


@pytest.mark.parametrize("shell", completion.SHELLS)
def test_script_is_valid_for_its_shell(scripts, shell):
    exe = _shell(shell)
    r = subprocess.run([exe, *SYNTAX[shell], str(scripts[shell])], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("shell", completion.SHELLS)
def test_the_command_prints_the_script(scripts, shell):
    code, out, err = run_cli(["completion", shell])
    assert (code, err) == (0, "")
    assert out == scripts[shell].read_text()
    code, out, err = run_cli(["completion", shell, "--json"])
    assert code == 0
    assert json.loads(out) == {"shell": shell, "script": scripts[shell].read_text()}


def test_an_unknown_shell_is_a_usage_error():
    code, out, err = run_cli(["completion", "tcsh"])
    assert code == 2
    assert err.splitlines()[-1] == ("vramsym completion: error: SHELL has no choice 'tcsh'; did you mean zsh, "
                                    "fish, bash? Choices: bash, zsh, fish")
    code, out, err = run_cli(["completion"])
    assert code == 2 and err.splitlines()[-1] == "vramsym completion: error: missing SHELL"


def test_help_names_the_command():
    code, out, err = run_cli(["--help"])
    assert "completion" in out
    code, out, err = run_cli(["completion", "--help"])
    assert code == 0 and "usage: vramsym completion SHELL" in out and "bash" in out


@pytest.mark.parametrize("shell", completion.SHELLS)
def test_script_holds_the_table(scripts, interface, shell):
    """Every command, every flag of every command, every regime and every option's choices."""
    text = scripts[shell].read_text()
    table = commands(interface)
    for name, (_, flags, _) in table.items():
        assert name in text
        for f in flags:
            if not f.positional:
                long = f.name if shell != "fish" else f"-l {f.name[2:]}"
                assert long in text, (name, f.name)
    for regime in interface.regimes:
        assert regime.replace("_", "-") in text
    for o in interface.options.values():
        for c in o.choices:
            assert c.replace("_", "-") in text


# (words on the command line, the word being completed last) -> what bash proposes
BASH = [
    (["vramsym", "est"], ["estimate"]),
    (["vramsym", "comp"], ["completion"]),
    (["vramsym", "estimate", "--reg"], ["--regime"]),
    (["vramsym", "estimate", "--regime", "tr"], ["train", "train-states", "trtllm"]),
    (["vramsym", "estimate", "--regime", "=", "tr"], ["train", "train-states", "trtllm"]),     # --regime=tr
    (["vramsym", "estimate", "--precision", "mixed-"], ["mixed-bf16", "mixed-fp16"]),
    (["vramsym", "estimate", "--model", "llama-3.1-"], ["llama-3.1-405b", "llama-3.1-70b", "llama-3.1-8b"]),
    (["vramsym", "solve", "max_batch", "--gpu", "a100-80gb-"], ["a100-80gb-pcie"]),
    (["vramsym", "estimate", "--batch", ""], []),                                   # a number: nothing to propose
    (["vramsym", "estimate", "--sp", ""], ["0", "1"]),
    (["vramsym", "estimate", "--sp", "--js"], ["--json"]),
    (["vramsym", "solve", "max_b"], ["max_batch", "max_block_size"]),
    (["vramsym", "completion", ""], ["bash", "fish", "zsh"]),
    (["vramsym", "dtype", "fp8"], ["fp8-e4m3", "fp8-e5m2"]),
    (["vramsym", "export", "--to", "j"], ["javascript", "json"]),
    (["vramsym", "derive", "--format", ""], ["latex", "markdown"]),
    (["vramsym", "estimate", "--set", "n_kv"], ["n_kv=", "n_kv_g="]),   # n_kv_g: the full-attention layers' KV heads (Gemma 4)
    (["vramsym", "estimate", "--assume", ""], ["llama"]),
    (["vramsym", "fit", "--ass"], ["--assume"]),
]


def _bash_complete(script, words):
    exe = _shell("bash")
    words_q = " ".join("'" + w + "'" for w in words)
    prog = (f"source '{script}'\nCOMP_WORDS=({words_q}); COMP_CWORD={len(words) - 1}\n"
            "_vramsym\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n")
    r = subprocess.run([exe, "--norc", "--noprofile", "-c", prog], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return sorted(x for x in r.stdout.splitlines() if x)


@pytest.mark.parametrize("words,expected", BASH, ids=[" ".join(w) for w, _ in BASH])
def test_bash_completes(scripts, words, expected):
    assert _bash_complete(scripts["bash"], words) == sorted(expected)


def test_bash_completes_files(scripts, tmp_path):
    (tmp_path / "my.vram").write_text("")
    got = _bash_complete(scripts["bash"], ["vramsym", "check", str(tmp_path / "my.")])
    assert got == [str(tmp_path / "my.vram")]
    got = _bash_complete(scripts["bash"], ["vramsym", "estimate", "--model", str(tmp_path / "my.")])
    assert got == [str(tmp_path / "my.vram")]


def test_bash_script_is_registered(scripts):
    exe = _shell("bash")
    r = subprocess.run([exe, "--norc", "--noprofile", "-c", f"source '{scripts['bash']}'; complete -p vramsym"],
                       capture_output=True, text=True, timeout=60)
    assert r.stdout.strip() == "complete -F _vramsym vramsym"


FISH = [
    ("vramsym est", ["estimate"]),
    ("vramsym estimate --reg", ["--regime"]),
    ("vramsym estimate --regime tr", ["train", "train-states", "trtllm"]),
    ("vramsym estimate --precision mixed-", ["mixed-bf16", "mixed-fp16"]),
    ("vramsym completion ", ["bash", "fish", "zsh"]),
]


@pytest.mark.parametrize("line,expected", FISH, ids=[l for l, _ in FISH])
def test_fish_completes(scripts, line, expected):
    exe = _shell("fish")
    r = subprocess.run([exe, "--no-config", "-c", f"source '{scripts['fish']}'; complete -C '{line}'"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    got = sorted({x.split("\t")[0] for x in r.stdout.splitlines() if x})
    assert [g for g in got if not g.startswith("-") or line.split()[-1].startswith("-")] == sorted(expected)


ZSH_MOCKS = r'''
compdef() { : }
compadd() { print -r -- "compadd $*" }
_describe() { print -r -- "_describe ${(P)${@[-1]}}" }
_files() { print -r -- "_files" }
compset() { print -r -- "compset $*" }
'''

ZSH = [
    (["vramsym", "estimate", "--regime", "tr"], "compadd -- adapters deepspeed-estimate"),
    (["vramsym", "estimate", "--regime=tr"], "compadd -- adapters deepspeed-estimate"),
    (["vramsym", "estimate", "--precision", "mixed-"], "mixed-bf16 mixed-fp16"),
    (["vramsym", "estimate", "--model", "llama"], "_files"),
    (["vramsym", "est"], "_describe estimate:memory of one configuration, by component"),
    (["vramsym", "estimate", "--"], "--regime:regime (default: inference)"),
]


@pytest.mark.parametrize("words,needle", ZSH, ids=[" ".join(w) for w, _ in ZSH])
def test_zsh_function_proposes(scripts, words, needle):
    exe = _shell("zsh")
    words_q = " ".join("'" + w + "'" for w in words)
    prog = (ZSH_MOCKS + f"source '{scripts['zsh']}'\nwords=({words_q}); CURRENT={len(words)}\n_vramsym\n")
    r = subprocess.run([exe, "-f", "-c", prog], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert needle in r.stdout


def test_one_walk_feeds_every_shell(interface):
    """The three renderers read the same records: the words of estimate's --regime are the regimes."""
    cmds = {c.name: c for c in completion.walk(commands(interface), interface)}
    regime = next(o for o in cmds["estimate"].options if o.names == ("--regime",))
    assert set(regime.value.words) == {r.replace("_", "-") for r in interface.regimes}
    model = next(o for o in cmds["estimate"].options if o.names == ("--model",))
    assert model.value.files and "llama-3.1-8b" in model.value.words
    gpu = next(o for o in cmds["solve"].options if o.names == ("--gpu",))
    assert {g["name"] for g in vramsym.catalog_gpus()} <= set(gpu.value.words)
    assert set(cmds) == set(commands(interface))
