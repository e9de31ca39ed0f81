"""Kernels shared by the tests. Module level, so each compiles once per
signature for the whole session."""

import numba
import numpy as np

import streamjit as sj


def copy_source(dst, src):
    for i in range(src.shape[0]):
        dst[i] = src[i]


copy = sj.stream_kernel(stream_stores=["dst"])(copy_source)
copy_plain = sj.stream_kernel(copy_source)
copy_njit = numba.njit(copy_source)


@sj.stream_kernel(stream_stores=True)
def triad(a, b, c, q):
    for i in range(a.shape[0]):
        a[i] = b[i] + q * c[i]


@sj.stream_kernel(stream_stores=["out"])
def shifted_store(out, src):
    # last index is the loop variable plus an offset: out[1:] = src[:-1]
    for i in range(src.shape[0] - 1):
        out[i + 1] = src[i]


@sj.stream_kernel(stream_stores=["out"])
def reverse(out, src):
    n = src.shape[0]
    for i in range(n):
        out[n - 1 - i] = src[i]


@sj.stream_kernel(stream_stores=["out"])
def interleave(out, a, b):
    for i in range(a.shape[0]):
        out[2 * i] = a[i]
        out[2 * i + 1] = b[i]


@sj.stream_kernel(stream_stores=["out"], threshold=None)   # (True, "auto": an update in place stays plain)
def accumulate(out, a):
    # read-modify-write: the load of out is a self-load and stays ordinary
    for i in range(a.shape[0]):
        out[i] = out[i] + 5 * a[i]


@sj.stream_kernel(stream_stores=True)
def accumulate_aug(out, a):
    for i in range(a.shape[0]):
        out[i] += a[i]


@sj.stream_kernel(stream_stores=True)
def clip_positive(out, a):
    # a conditional store in exclusive branches of one if
    for i in range(a.shape[0]):
        if a[i] > 0:
            out[i] = a[i]
        else:
            out[i] = 0


@sj.stream_kernel(stream_stores=["out"])
def jacobi(out, g):
    for r in range(1, g.shape[0] - 1):
        for c in range(1, g.shape[1] - 1):
            out[r, c] = 0.2 * (g[r, c] + g[r, c - 1] + g[r, c + 1] + g[r - 1, c] + g[r + 1, c])


@sj.stream_kernel(stream_stores=["out"])
def scale3d(out, a, s):
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            for k in range(a.shape[2]):
                out[i, j, k] = s * a[i, j, k]


@sj.stream_kernel(stream_stores=["out"])
def with_local_index(out, a):
    for i in range(a.shape[0]):
        k = i + 1
        out[k - 1] = a[i] * 2


@sj.stream_kernel(stream_stores=["out"])
def early_return(out, a, stop_at):
    for i in range(a.shape[0]):
        if i == stop_at:
            return i
        out[i] = a[i]
    return -1


@sj.stream_kernel(stream_stores=["out"])
def ranged(out, a, lo, hi):
    for i in range(lo, hi):
        out[i] = a[i] + 1


@sj.stream_kernel(stream_stores=["out"])
def store_then_read(out, a):
    # a load of the streamed array after the nest must see the new values
    for i in range(a.shape[0]):
        out[i] = a[i] * 3
    total = 0.0
    for i in range(out.shape[0]):
        total += out[i]
    return total


@sj.stream_kernel(stream_stores=["out"])
def checked_scale(out, a, limit):
    # the early exit keeps LLVM from vectorizing: scalar streamed stores
    for i in range(a.shape[0]):
        x = a[i]
        if x > limit:
            raise ValueError("value above limit")
        out[i] = 2 * x


@sj.stream_kernel(stream_stores=["out"])
def with_left_neighbour(out, a):
    # a[i - 1] at i = 0 is a[-1]: Python's wraparound, kept exactly
    for i in range(a.shape[0]):
        out[i] = a[i - 1] + a[i] + a[i]


@sj.stream_kernel(stream_stores=["out"])
def jacobi_f32(out, g):
    # float32 arithmetic throughout (the constant is float32 too)
    for r in range(1, g.shape[0] - 1):
        for c in range(1, g.shape[1] - 1):
            out[r, c] = np.float32(0.2) * (g[r, c] + g[r, c - 1] + g[r, c + 1] + g[r - 1, c] + g[r + 1, c])


@sj.stream_kernel(stream_stores=["out"])
def add2d(out, a, b):
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            out[i, j] = a[i, j] + 2 * b[i, j]


@sj.stream_kernel(stream_loads=["f"], stream_stores=["h"])
def residual(h, f, g):
    for i in range(h.shape[0]):
        h[i] = f[i] + g[i]


# Plain functions, streamed with each test's own options (and run by numba.njit beside them).

def triad_by_three(out, a, b):
    for i in range(out.shape[0]):
        out[i] = a[i] + 3.0 * b[i]


def copy_until(dst, src, k):
    for i in range(src.shape[0]):
        if i == k:
            raise ValueError("stop")
        dst[i] = src[i]


def smooth_fresh(u):
    out = np.empty_like(u)
    out[0], out[-1] = u[0], u[-1]
    for i in range(1, u.shape[0] - 1):
        out[i] = u[i - 1] + u[i] + u[i + 1]
    return out
