"""Load formula text together with the bundled library, for tests."""
from pathlib import Path
import tempfile

from vramsym.catalog.paths import formulas_path
from vramsym.lang.library import load, load_or_raise


def load_text(text: str, name: str = "t.vram", bundled: bool = False):
    d = Path(tempfile.mkdtemp())
    p = d / name
    p.write_text(text)
    paths = ([Path(formulas_path())] if bundled else []) + [p]
    return load(paths)


def lib_text(text: str, bundled: bool = False):
    d = Path(tempfile.mkdtemp())
    p = d / "t.vram"
    p.write_text(text)
    return load_or_raise(([Path(formulas_path())] if bundled else []) + [p])


def estimate(lib, composed, model, inputs):
    """The compiled regime's estimate for a composition's regime and resolved options."""
    import vramsym
    return vramsym.estimate(model, composed.regime, dict(composed.options), inputs, library=lib)


def run_cli(argv):
    """(exit status, stdout, stderr) of ``vramsym ARGV`` run in this process."""
    import contextlib
    import io
    from vramsym.cli import main
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as e:
            code = e.code
    return code, out.getvalue(), err.getvalue()
