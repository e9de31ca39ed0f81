"""bench/vector_width.py: its 512-bit build really compiles 512-bit
streamed stores where the CPU has AVX-512, leaves later compiles as they
were, and the script checks every build (C included) against numba.njit."""

import os
import re
import sys

import numpy as np
import pytest

import streamjit as sj
from streamjit.machine import vector_isa

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "bench"))
import vector_width  # noqa: E402


def copy(dst, src):
    for i in range(src.shape[0]):
        dst[i] = src[i]


def _nt_registers(kernel):
    src = np.random.default_rng(0).random(4099)
    dst = np.empty_like(src)
    kernel(dst, src)
    np.testing.assert_array_equal(dst, src)
    return set(re.findall(r"vmovntp[sd]\s+%([xyz]mm)", kernel.inspect_asm(kernel.signatures[0])))


@pytest.mark.skipif(vector_isa() != "AVX-512", reason="512-bit vectors need AVX-512")
def test_the_wide_build_stores_zmm_and_ends_with_its_block():
    build = vector_width.library.build
    with vector_width.wide_vectors():
        wide = _nt_registers(sj.stream_kernel(stream_stores=True, threshold=None)(copy))
    assert "zmm" in wide
    assert vector_width.library.build is build


def test_the_script_runs_and_checks_its_results(capsys):
    vector_width.main(mib=2, rounds=1)  # (it asserts every result equal to numba.njit's)
    out = capsys.readouterr().out
    assert "streamjit, 512-bit" in out and "swap Jacobi" in out and "triad" in out
