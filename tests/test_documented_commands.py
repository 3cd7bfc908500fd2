"""Every example the CLI's table declares, and every `vramsym ...` line of the README and
docs/*.md, runs and exits as documented (0, unless the line says `# exit N`)."""
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from vramsym.cli import COMMANDS

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
MY_VRAM = '''
term my_overhead = 2 * weights : byte "twice the weights (an example)" source "the tutorial"
regime my_regime extends inference "inference with an extra copy of the weights" { add my_overhead }
'''


def documented():
    out = []
    for _, _, _, examples in COMMANDS:
        out += [("cli table", e, 0) for e in examples]
    for doc in DOCS:
        if doc.name == "regimes.md":
            continue
        in_code = False
        for line in doc.read_text().splitlines():
            if line.startswith("```"):
                in_code = not in_code
                continue
            text = line.strip()
            if text.startswith("$ "):
                text = text[2:]
            if not in_code or not text.startswith("vramsym "):
                continue
            status = 0
            m = re.search(r"#\s*exit (\d+)", text)
            if m:
                status = int(m.group(1))
            text = text.split(" #")[0].split(" > ")[0].strip()
            for part in text.split(" | "):
                out.append((doc.name, part.strip(), status))
    return out


CASES = documented()


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    d = tmp_path_factory.mktemp("docs")
    import json
    entry = json.loads((ROOT / "formulas" / "models" / "llama-3.2-1b.json").read_text())
    (d / "config.json").write_text(json.dumps(entry["config"]))
    (d / "my.vram").write_text(MY_VRAM)
    (d / "formulas").symlink_to(ROOT / "formulas")
    # the README's checkpoint examples: a tiny safetensors folder and a tiny GGUF file
    from test_checkpoints import TINY, dense_tensors, make_dir, write_gguf
    make_dir(d / "my-checkpoint", TINY, dense_tensors(TINY))
    write_gguf(d / "my-model.Q4_K_M.gguf")
    return d


@pytest.mark.parametrize("where,line,status", CASES, ids=[f"{w}: {l[:70]}" for w, l, _ in CASES])
def test_documented_command(workdir, where, line, status):
    import os
    argv = shlex.split(line)
    assert argv[0] == "vramsym"
    env = dict(os.environ, VRAMSYM_CACHE_DIR=str(workdir / ".cache"))   # shared: what users get
    env.pop("VRAMSYM_NO_CACHE", None)
    # the whole catalog's page from an empty cache prints every page group with sympy (about 9 minutes on
    # a loaded 2-core machine; docs/performance.md): the one documented command allowed longer
    whole_page = argv[1] == "html" and "--model" not in argv
    r = subprocess.run([sys.executable, "-m", "vramsym.cli", *argv[1:]], capture_output=True, text=True,
                       cwd=workdir, timeout=1800 if whole_page else 300, env=env)
    assert r.returncode == status, (where, line, r.stderr[-2000:])
    assert "Traceback" not in r.stderr


def test_the_test_sees_the_readme():
    assert any(w == "README.md" and "solve max_batch" in line for w, line, _ in CASES)
    assert len(CASES) > 30
