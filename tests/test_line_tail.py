"""Where an outer loop moves a streamed store to another row, the aligned
loop stops at the row's last cache-line boundary and a copy of the
original loop, the tail, writes the rest with plain stores (so vector NT
stores only ever fill whole lines): results equal numba.njit's for every
row length around a line, at two offsets of the destination, forwards
and downwards, with a value carried through head, aligned loop and tail,
and with an exception's exit in the loop."""

import numba
import numpy as np
import pytest

import streamjit as sj


def scale(out, a):
    for r in range(a.shape[0]):
        for c in range(a.shape[1]):
            out[r, c] = 2 * a[r, c] + 1


def downwards(out, a):
    for r in range(a.shape[0]):
        for c in range(a.shape[1] - 1, -1, -1):
            out[r, c] = a[r, c] - 1


def running_sum(out, a):
    for r in range(a.shape[0]):
        acc = a[r, 0] * 0
        for c in range(a.shape[1]):
            acc += a[r, c]
            out[r, c] = acc


def checked(out, a):
    for r in range(a.shape[0]):
        for c in range(a.shape[1]):
            if a[r, c] > 2:
                raise ValueError("out of range")
            out[r, c] = a[r, c] + 1


@pytest.mark.parametrize("function", [scale, downwards, running_sum, checked])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_every_row_length_around_a_line(function, dtype):
    kernel = sj.stream_kernel(stream_stores=True, threshold=None)(function)
    plain = numba.njit(function)
    rng = np.random.default_rng(7)
    lanes = 64 // np.dtype(dtype).itemsize
    for width in range(1, 3 * lanes + 2):
        for offset in (0, 1):  # (rows of `width` items: each starts at another offset in its line)
            a = rng.random((7, width + offset)).astype(dtype)[:, offset:]
            got = rng.random((7, width + offset)).astype(dtype)[:, offset:]
            expected = got.copy()
            kernel(got, a)
            plain(expected, a)
            np.testing.assert_array_equal(got, expected, err_msg=f"width={width} offset={offset}")
    calls = kernel.stream_calls()
    assert calls["streamed"] > 0
