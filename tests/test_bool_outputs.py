"""Boolean outputs (i1 in registers, i8 in memory) of comparisons of
boolean, integer and floating-point operands, through every store path:
the aligned loop's vector NT stores and its peeled head, the staged loop's
strips (destination a few bytes past its sources modulo 4 KiB), an aligned
loop that stays scalar (a branch in its body), and the fused slice store.
Each equals numba.njit on random data."""

import numba
import numpy as np
import pytest

import streamjit as sj
from helpers import at_offset


def compare_loop(out, a, b):
    for i in range(out.shape[0]):
        out[i] = a[i] > b[i]


def compare_branch(out, a, b):
    for i in range(out.shape[0]):
        if a[i] == b[i]:
            out[i] = a[i] >= b[i]
        else:
            out[i] = a[i] < b[i]


def compare_slices(out, a, b):
    out[:] = a <= b


def compare_shifted(out, a, b):
    out[1:] = a[:-1] != b[1:]


KERNELS = [compare_loop, compare_branch, compare_slices, compare_shifted]
COMPILED = {f: (sj.stream_kernel(stream_stores=["out"], threshold=None)(f), numba.njit(f)) for f in KERNELS}
OPERANDS = [(np.bool_, np.bool_), (np.int64, np.int64), (np.float64, np.float64), (np.bool_, np.int32),
            (np.uint8, np.float32)]


def _operand(n, dtype, offset, rng):
    """``n`` random items of ``dtype`` (few distinct values, so equal pairs occur), ``offset`` bytes into a page."""
    array = at_offset(n, offset, dtype, rng)
    array[:] = rng.integers(0, 3, n).astype(dtype)
    return array


@pytest.mark.parametrize("kernel", KERNELS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtypes", OPERANDS, ids=lambda d: "-".join(np.dtype(t).name for t in d))
@pytest.mark.parametrize("n, out_offset", [(0, 0), (1, 3), (37, 0), (1001, 1), (4099, 5), (3000, 264)])
def test_bool_outputs_equal_njit(kernel, dtypes, n, out_offset):
    """Sources at 256 bytes into a page; the output at ``out_offset``: 264
    trails them by 8 bytes (staged where the profile checks that, as in the
    test below), odd offsets peel a head."""
    streamed, reference = COMPILED[kernel]
    rng = np.random.default_rng(n)
    a, b = (_operand(n, t, 256, rng) for t in dtypes)
    got, expected = at_offset(n, out_offset, np.bool_, rng), np.zeros(n, np.bool_)
    got[:] = False
    streamed(got, a, b)
    reference(expected, a, b)
    np.testing.assert_array_equal(got, expected)


def test_bool_outputs_take_the_aligned_and_staged_paths(page_alias_check):
    """Boolean sources 8 bytes behind the output modulo 4 KiB run staged; 1 byte past a page, aligned."""
    streamed = sj.stream_kernel(stream_stores=["out"], threshold=None)(compare_loop)
    rng = np.random.default_rng(0)
    a, b = (_operand(3000, np.bool_, 256, rng) for _ in range(2))
    for out_offset in (1, 264):
        expected = np.zeros(3000, np.bool_)
        numba.njit(compare_loop)(expected, a, b)
        got = at_offset(3000, out_offset, np.bool_, rng)
        streamed(got, a, b)
        np.testing.assert_array_equal(got, expected)
    assert streamed.stream_calls()["streamed"] == 1 and streamed.stream_calls()["staged"] == 1
