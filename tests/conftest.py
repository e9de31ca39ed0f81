import os
import sys

from hypothesis import settings

sys.path.insert(0, os.path.dirname(__file__))

# Fuzz budget: short with the suite, long when asked for (`-m fuzz`).
settings.register_profile("suite", max_examples=60, deadline=None)
settings.register_profile("fuzz", max_examples=3000, deadline=None)


def pytest_configure(config):
    config.addinivalue_line("markers", "fuzz: property tests; `-m fuzz` runs them with a long budget")
    settings.load_profile("fuzz" if "fuzz" in (config.option.markexpr or "") else "suite")
