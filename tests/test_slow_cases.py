"""tests/slow_cases.txt names tests that exist (a renamed test must not silently leave the list, nor
a stale line hide nothing)."""
import os
import re

from conftest import _slow_cases

HERE = os.path.dirname(__file__)


def test_every_slow_case_names_a_test_function_that_exists():
    cases = _slow_cases()
    assert cases
    for nodeid in cases:
        path, _, rest = nodeid.partition("::")
        assert "[" not in rest or rest.endswith("]"), nodeid     # a parametrized id, whole
        func = re.match(r"[A-Za-z_0-9]+", rest).group(0)
        with open(os.path.join(HERE, "..", path), encoding="utf-8") as f:
            assert re.search(rf"^def {func}\(", f.read(), re.M), nodeid
