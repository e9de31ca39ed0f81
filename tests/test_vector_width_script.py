"""bench/vector_width.py: the script runs each program with the
``wide_stencil_bytes`` row off and on, and checks every build (C included)
against numba.njit."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "bench"))
import vector_width  # noqa: E402


def test_the_script_runs_and_checks_its_results(capsys):
    vector_width.main(mib=2, rounds=1, only="swap Jacobi,triad")  # (it asserts every result equal to njit's)
    out = capsys.readouterr().out
    assert "streamjit, 512-bit stencils" in out and "never streamed" in out and "C NT 256" in out
    _, c_bits = vector_width.c_jacobi()
    assert ("C NT 512 " in out) == (c_bits == 512)  # timed where the CPU has AVX-512, else named as not built
    assert ("C NT 512: not built (this CPU has no AVX-512)" in out) == (c_bits == 256)
    assert "swap Jacobi" in out and "triad" in out and "heat_3d" not in out
