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
