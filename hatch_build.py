"""Build hook: check the compiled regimes that the repository ships (vramsym/_precompiled/).

They are generated data, written by ``python -m vramsym.precompile`` and committed
(tests/test_precompiled.py fails while they lag behind the formulas or the compiler), so the
build compiles nothing: it only says so when the shipped copy is stale, in which case vramsym
ignores it (its key does not match) and compiles each regime on its first use instead. A first
run reads them instead of importing sympy, pint and lark; see vramsym/precompile.py.
"""
import os
import sys

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class PrecompileHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version, build_data):
        if self.target_name != "wheel":
            return
        folder = os.path.join(self.root, "vramsym", "_precompiled")
        sys.path.insert(0, self.root)
        try:
            from vramsym.engine.cache import shipped_key     # reads files only: no sympy, no compile
            try:
                with open(os.path.join(folder, "KEY"), encoding="ascii") as fh:
                    stored = fh.read().strip()
            except OSError:
                stored = None
            current = shipped_key()
        finally:
            sys.path.remove(self.root)
            for m in [m for m in sys.modules if m == "vramsym" or m.startswith("vramsym.")]:
                del sys.modules[m]
        if stored != current:       # shipped all the same: a stale copy is never read (its key differs)
            self.app.display_warning(
                "vramsym: the compiled regimes in vramsym/_precompiled/ do not match the formulas "
                "(run `python -m vramsym.precompile`); each regime is compiled on its first use instead")
