"""GPU kernels under numba-cuda's simulator give numba.njit's results (odd
sizes, views, empty arrays; vector stores with their peeled heads and
tails; asynchronous load rings). The simulator takes the place of
numba.cuda when numba.cuda is first imported, so the cases run in a
process of their own (`cuda_simulated.py`), once for the module."""

import json
import os
import subprocess
import sys

import pytest

from cuda_kernels import MISSING_TOOLCHAIN
from helpers import checkout_env

pytestmark = pytest.mark.skipif(bool(MISSING_TOOLCHAIN), reason=MISSING_TOOLCHAIN)

HERE = os.path.dirname(__file__)
ENV = checkout_env(NUMBA_ENABLE_CUDASIM="1")
CASES = [f"triad-{n}{s}" for s in ("", "-prefetch2") for n in (0, 1, 7, 33, 1001)] + \
    [f"triad-strided{s}" for s in ("", "-prefetch2")] + \
    [f"jacobi-{shape}{s}" for s in ("", "-prefetch2") for shape in ("0x0", "3x3", "2x9", "13x37", "view")] + \
    ["fill-float32", "fill-int32", "fill-int8", "renamed-prange", "chained-store", "prange-rows", "grid-2d-0x5",
     "grid-2d-7x9", "grid-2d-33x17", "grid-3d", "stepped", "branchy", "negative-indices", "through-alias",
     "update-rows", "numba-cuda-axpy-0", "numba-cuda-axpy-7", "numba-cuda-axpy-1001", "numba-cuda-axpy-nc",
     "numba-cuda-shared-memory", "triad-launch-1x32", "triad-launch-3x64", "triad-launch-5x128",
     "triad-prefetch3-64-threads", "device-arrays-in-place"]


@pytest.fixture(scope="module")
def simulated():
    done = subprocess.run([sys.executable, os.path.join(HERE, "cuda_simulated.py")], capture_output=True, text=True,
                          env=ENV, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_every_case_ran(simulated):
    assert sorted(simulated) == sorted(CASES)


@pytest.mark.parametrize("case", CASES)
def test_simulated_result_equals_njit(simulated, case):
    assert simulated[case] == "", simulated[case]


def test_gpu_benchmark_script_runs_on_the_simulator():
    # bench/gpu.py's logic (kernels, checks of every variant's result, the
    # sweep) on tiny arrays; its timings mean nothing here
    done = subprocess.run([sys.executable, os.path.join(HERE, os.pardir, "bench", "gpu.py"), "--smoke"],
                          capture_output=True, text=True, env=ENV, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "pipeline depth" in done.stdout and "device-to-device copy" in done.stdout
