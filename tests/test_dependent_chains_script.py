"""bench/dependent_chains.py: the script times streamed chains of dependent
operations against numba.njit at LLVM's width and at 512 bits, and checks
every build against njit's result."""

import os
import sys

import pytest

from streamjit.machine import profile as machine

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "bench"))
import dependent_chains  # noqa: E402


@pytest.mark.parametrize("wide", [False, True])
def test_the_script_runs_and_checks_its_results(wide, capsys, monkeypatch):
    if wide and machine.vector_isa() != "AVX-512":
        pytest.skip("512-bit vectors need AVX-512")
    monkeypatch.setattr(dependent_chains, "CHAINS", (1, 17))
    # (main(wide=True) replaces vector_lanes for the whole process: restored after the test)
    monkeypatch.setattr(dependent_chains.loop_copies, "vector_lanes", dependent_chains.loop_copies.vector_lanes)
    dependent_chains.main(mib=1, rounds=1, wide=wide)   # (it asserts every result equal to njit's)
    out = capsys.readouterr().out
    assert ("512-bit vectors" in out) == wide and " 1 operations (NT stores: " in out and "17 operations" in out
    assert "no software prefetch" in out
