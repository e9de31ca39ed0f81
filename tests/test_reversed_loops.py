"""Reversed unit-stride loops (``range(n - 1, -1, -1)``) are peeled to
alignment from their top end and stream; results equal numba.njit."""

import re

import numba
import numpy as np
import pytest

import streamjit as sj
from helpers import needs_x86_avx


def whole(out, a):
    for i in range(out.shape[0] - 1, -1, -1):
        out[i] = a[i] * 2.0


def interior(out, a):
    for i in range(out.shape[0] - 2, 2, -1):
        out[i] = a[i - 1] + a[i + 1]


def prange_reverse_order(out, a):
    # Numba's own test_prange_reverse_order1, compiled sequentially
    n = out.shape[0]
    for i in numba.prange(n - 1, -1, -1):
        out[i] = a[i] + 1.0


def rows_reversed(out, m):
    for r in range(m.shape[0]):
        for c in range(m.shape[1] - 1, -1, -1):
            out[r, c] = m[r, c] * 3.0


KERNELS = {f: (sj.stream_kernel(stream_stores=["out"])(f), numba.njit(f))
           for f in (whole, interior, prange_reverse_order)}


@pytest.mark.parametrize("func", list(KERNELS), ids=lambda f: f.__name__)
@pytest.mark.parametrize("n", [0, 1, 5, 17, 1001, 4099])
def test_reversed_loops_equal_njit_on_every_view(func, n):
    streamed, plain = KERNELS[func]
    rng = np.random.default_rng(n)
    a, out = rng.standard_normal(n + 9), rng.standard_normal(n + 9)
    views = {"misaligned": lambda x: x[1:n + 1], "aligned": lambda x: x[:n],
             "reversed": lambda x: x[n:0:-1] if n else x[:0], "strided": lambda x: x[::2][:n // 2 + 1] if n else x[:0]}
    for label, view in views.items():
        expected, got = out.copy(), out.copy()
        plain(view(expected), view(a))
        streamed(view(got), view(a))
        np.testing.assert_array_equal(got, expected, err_msg=label)


@needs_x86_avx
@pytest.mark.parametrize("func", list(KERNELS), ids=lambda f: f.__name__)
def test_reversed_loops_hold_vector_nt_stores(func):
    streamed, _ = KERNELS[func]
    out, a = np.empty(3001), np.random.default_rng(0).standard_normal(3001)
    streamed(out[1:], a[1:])
    sig = streamed.signatures[-1]
    assert streamed.stream_report(sig).arrays["out"].nt_vector_stores > 0
    asm = streamed.inspect_asm(sig)
    assert re.search(r"^\s*vmovntpd\s+%[yz]mm", asm, re.M) and re.search(r"^\s*sfence", asm, re.M)


def test_reversed_inner_loop_of_a_2d_nest():
    streamed = sj.stream_kernel(stream_stores=["out"])(rows_reversed)
    m = np.random.default_rng(3).standard_normal((29, 301))
    expected, got = np.empty((29, 302))[:, 1:], np.empty((29, 302))[:, 1:]
    numba.njit(rows_reversed)(expected, m)
    streamed(got, m)
    np.testing.assert_array_equal(got, expected)
    assert streamed.stream_report().arrays["out"].nt_vector_stores > 0
