"""The Numba releases streamjit is tested with are declared,
and outside them import says so instead of degrading silently."""

import os
import re
import subprocess
import sys
import warnings

import pytest

import streamjit as sj
from helpers import checkout_env
from streamjit.kernel.versions import NEWEST, OLDEST, check_numba

PYPROJECT = os.path.join(os.path.dirname(__file__), os.pardir, "pyproject.toml")


def test_pyproject_declares_the_range_import_checks():
    with open(PYPROJECT) as f:
        low, high = re.search(r'"numba>=(\d+\.\d+),<(\d+\.\d+)"', f.read()).groups()
    assert low == f"{OLDEST[0]}.{OLDEST[1]}" and high == f"{NEWEST[0]}.{NEWEST[1] + 1}"


@pytest.mark.parametrize("version", ["0.66.0", "0.67.1", "0.68.1"])
def test_tested_releases_import_quietly(version):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning fails the test
        check_numba(version)


def test_an_older_numba_fails_at_import_naming_the_range():
    code = "import numba; numba.__version__ = '0.61.2'\nimport streamjit\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=checkout_env())
    assert done.returncode == 1
    assert ("ImportError: streamjit needs numba 0.66 to 0.68 (the releases it is tested with); numba 0.61.2 is "
            "installed, on which kernels compile without streaming: pip install 'numba>=0.66,<0.69'") in done.stderr


def test_a_newer_numba_warns_naming_the_range():
    with pytest.warns(sj.StreamWarning, match=r"tested with numba 0\.66 to 0\.68; numba 0\.69\.0 is newer"):
        check_numba("0.69.0")
