"""Build hook: compile the bundled regimes into the wheel (vramsym/_precompiled/).

A first run of vramsym then reads them (after checking that their key matches the installed
files) instead of importing sympy, pint and lark to compile; see vramsym/engine/precompile.py.
A failure here costs only that speed, so it warns and the wheel is built without them.
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
            from vramsym.engine.precompile import write
            n = write(folder)
        except Exception as e:       # noqa: BLE001 - the wheel works without them, only slower at first
            self.app.display_warning(f"vramsym: compiled regimes not shipped ({type(e).__name__}: {e})")
            return
        finally:
            sys.path.remove(self.root)
        self.app.display_info(f"vramsym: {n} compiled regimes shipped")
        if version != "editable":
            build_data["force_include"][folder] = "vramsym/_precompiled"
