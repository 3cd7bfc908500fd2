import os
import pytest

os.environ.setdefault("VRAMSYM_NO_CACHE", "1")

import vramsym  # noqa: E402


@pytest.fixture(scope="session")
def lib():
    return vramsym.load_library(use_cache=False)


@pytest.fixture(scope="session")
def model():
    def get(name):
        return vramsym.load_model(name)
    return get


@pytest.fixture(scope="module")
def module_cache(tmp_path_factory):
    """One cache for a module (``pytestmark = pytest.mark.usefixtures("module_cache")``): each regime
    and option set compiles once there, instead of at every call under VRAMSYM_NO_CACHE."""
    old = {k: os.environ.get(k) for k in ("VRAMSYM_CACHE_DIR", "VRAMSYM_NO_CACHE")}
    os.environ["VRAMSYM_CACHE_DIR"] = str(tmp_path_factory.mktemp("cache"))
    os.environ.pop("VRAMSYM_NO_CACHE", None)
    yield
    for k, v in old.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
