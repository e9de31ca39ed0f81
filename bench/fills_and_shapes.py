"""Fills, reversed loops and boolean outputs, streamed against numba.njit.

The shapes that used to escape the stream pass: Numba issue #7534's
``arr.fill(0.0)``, ``arr[:] = 0.0``, a loop storing 0.0 (each of which LLVM
turned into ``memset``), non-zero fills, a reversed copy loop, and a boolean
output computed from doubles. Each kernel is named (``stream_stores``),
always streamed (``threshold=None``); float64, 256 MiB per array by default,
destinations misaligned by one element; 9 interleaved rounds, medians.

Run: python bench/fills_and_shapes.py [MiB]
"""

import sys

import numba
import numpy as np

import streamjit as sj
from streamjit import measure


def fill_method(arr, a):
    arr.fill(0.0)


def fill_slice_zero(arr, a):
    arr[:] = 0.0


def fill_loop_zero(arr, a):
    for i in range(arr.shape[0]):
        arr[i] = 0.0


def fill_slice_three(arr, a):
    arr[:] = 3.0


def fill_loop_three(arr, a):
    for i in range(arr.shape[0]):
        arr[i] = 3.0


def reversed_copy(arr, a):
    for i in range(arr.shape[0] - 1, -1, -1):
        arr[i] = a[i]


def boolean_output(arr, a):
    for i in range(a.shape[0]):
        arr[i] = a[i] > 0.5


def main(mib):
    print(measure.host_description())
    n = mib * measure.MIB // 8
    a = np.random.default_rng(0).random(n)
    for func in (fill_method, fill_slice_zero, fill_loop_zero, fill_slice_three, fill_loop_three, reversed_copy,
                 boolean_output):
        dtype = np.bool_ if func is boolean_output else np.float64
        out = np.ones(n + 1, dtype)[1:]
        streamed = sj.stream_kernel(stream_stores=["arr"], threshold=None)(func)
        plain = numba.njit(func)
        streamed(out, a)
        check = out.copy()
        plain(out, a)
        assert np.array_equal(check, out), func.__name__
        moved = out.nbytes + (a.nbytes if func in (reversed_copy, boolean_output) else 0)
        medians = measure.interleaved_medians({"streamjit": lambda: streamed(out, a), "njit": lambda: plain(out, a)}, 9)
        nt = streamed.stream_report().arrays["arr"].nt_vector_stores
        print(f"{func.__name__:17s} streamjit {moved / medians['streamjit'] / 1e9:5.1f} GB/s   numba.njit "
              f"{moved / medians['njit'] / 1e9:5.1f} GB/s   {medians['njit'] / medians['streamjit']:.2f}x   "
              f"NT vector stores in the report: {nt}", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 256)
