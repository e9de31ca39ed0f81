"""The aligned loop stops at the last cache-line boundary and a copy of the
original loop, the tail, runs the rest with plain stores (so vector NT
stores only ever fill whole lines): results equal numba.njit's at every
length around a line, at several offsets of the destination, forwards
and downwards, with a value carried through head, aligned loop and tail,
and with a break."""

import numba
import numpy as np
import pytest

import streamjit as sj


def scale(out, a):
    for i in range(a.shape[0]):
        out[i] = 2 * a[i] + 1


def downwards(out, a):
    for i in range(a.shape[0] - 1, -1, -1):
        out[i] = a[i] - 1


def running_sum(out, a):
    acc = a[0] * 0
    for i in range(a.shape[0]):
        acc += a[i]
        out[i] = acc


def until_large(out, a):
    for i in range(a.shape[0]):
        if a[i] > 0.97:
            break
        out[i] = a[i] + 1


def rows(out, g):
    for r in range(g.shape[0]):
        for c in range(1, g.shape[1] - 1):
            out[r, c] = g[r, c - 1] + g[r, c + 1]


@pytest.mark.parametrize("function", [scale, downwards, running_sum, until_large])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_every_length_around_a_line(function, dtype):
    kernel = sj.stream_kernel(stream_stores=True, threshold=None)(function)
    plain = numba.njit(function)
    rng = np.random.default_rng(7)
    lanes = 64 // np.dtype(dtype).itemsize
    for n in range(1, 4 * lanes + 2):
        for offset in (0, 1, lanes - 1):
            a = rng.random(n + offset).astype(dtype)[offset:]
            got, expected = rng.random(n + offset).astype(dtype)[offset:], None
            expected = got.copy()
            kernel(got, a)
            plain(expected, a)
            np.testing.assert_array_equal(got, expected, err_msg=f"n={n} offset={offset}")
    assert kernel.stream_calls()["streamed"] > 0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rows_ending_mid_line(dtype):
    # rows of 2040 bytes (float64) or 1020 (float32): each row's aligned loop ends at another offset in its line
    g = np.random.default_rng(3).random((11, 255)).astype(dtype)
    got, expected = g.copy(), g.copy()
    kernel = sj.stream_kernel(stream_stores=True, threshold=None)(rows)
    kernel(got, g)
    numba.njit(rows)(expected, g)
    np.testing.assert_array_equal(got, expected)
    calls = kernel.stream_calls()
    assert calls["streamed"] + calls["staged"] == 1
