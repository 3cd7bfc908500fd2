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
