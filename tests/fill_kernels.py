"""Kernels with ``assert`` statements, kept out of the test modules (pytest
rewrites the asserts of those into calls Numba cannot compile)."""

import streamjit as sj


# Numba issue #7534, as its author wrote it (the size asserted is theirs: the
# kernel is compiled eagerly and its code checked; a copy with a size a test
# can afford is run).
@sj.stream_kernel('void(float64[::1])', stream_stores=["arr"])
def fillArr(arr):
    assert arr.size == 128*1024*1024  # May help the JIT to generate a more efficient code (but not much in practice)
    arr.fill(0.0)


@sj.stream_kernel('void(float64[::1])', stream_stores=["arr"])
def fillArrSmall(arr):
    assert arr.size == 1001
    arr.fill(0.0)
