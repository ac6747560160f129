import os

import numpy as np
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(REPO, "examples", "models")


def example_paths():
    return sorted(os.path.join(EXAMPLES, f) for f in os.listdir(EXAMPLES) if f.endswith(".json"))


def load_example(name):
    from skinflint import ir
    return ir.load(os.path.join(EXAMPLES, f"{name}.json"))


def up(x):
    """The next float32 above x."""
    return np.nextafter(np.float32(x), np.float32(np.inf))


def down(x):
    return np.nextafter(np.float32(x), np.float32(-np.inf))


@pytest.fixture
def rng():
    return np.random.default_rng(12345)
