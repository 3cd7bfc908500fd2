import atexit
import os
import shutil
import tempfile

import pytest

# One private cache for the whole run (and its xdist workers, which inherit the variable), never the
# user's own: each regime and option set compiles once per run, in-process and in every CLI
# subprocess, instead of at every call. The cache is keyed by the content of the code and the formula
# files, so a hit is the same answer (tests/test_cache.py proves warm == cold with VRAMSYM_NO_CACHE).
if not os.environ.get("VRAMSYM_TEST_CACHE_DIR"):
    os.environ["VRAMSYM_TEST_CACHE_DIR"] = tempfile.mkdtemp(prefix="vramsym-test-cache-")
    atexit.register(shutil.rmtree, os.environ["VRAMSYM_TEST_CACHE_DIR"], True)
os.environ["VRAMSYM_CACHE_DIR"] = os.environ["VRAMSYM_TEST_CACHE_DIR"]
os.environ.pop("VRAMSYM_NO_CACHE", None)

import vramsym  # noqa: E402


@pytest.fixture(scope="session")
def lib():
    return vramsym.load_library(use_cache=False)


@pytest.fixture(scope="session")
def model():
    def get(name):
        return vramsym.load_model(name)
    return get


# The long cases (tests/slow_cases.txt: full-size FakeTensorMode measurements, the longest export, fuzz and CLI
# tests, each over 15 s on a 2-core machine, measured with --durations) carry the mark `slow`. The
# default run (the README's test command, CI) leaves them out (addopts: -m "not slow") so that it stays
# well inside CI's 90 minutes; `python -m pytest -m slow` runs them, `-m ""` runs everything.
_SLOW_LIST = os.path.join(os.path.dirname(__file__), "slow_cases.txt")


def _slow_cases() -> set:
    with open(_SLOW_LIST, encoding="utf-8") as f:
        return {line.split("#", 1)[0].strip() for line in f} - {""}


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: a case over 15 s (tests/slow_cases.txt); run with -m slow")


def pytest_collection_modifyitems(config, items):
    slow = _slow_cases()
    for item in items:
        if item.nodeid in slow:
            item.add_marker(pytest.mark.slow)
