"""Loop functions the GPU tests compile for target="cuda" (and check
against numba.njit under numba-cuda's simulator, `cuda_simulated.py`):
the prange shapes of the CPU tests (test_parallel.py, test_user_shapes.py)
and a few the GPU passes treat specially."""

import importlib.util

from numba import cuda, float64
from numba import prange as pr  # `prange` under another name

import streamjit as sj


def missing_toolchain():
    """Why the GPU tests cannot run here, with the command that installs
    what they need; "" when they can."""
    install = 'pip install ".[test-cuda]"'
    if importlib.util.find_spec("numba_cuda") is None:
        return f"numba-cuda is not installed: {install}"
    from streamjit.cuda.ptx import tool
    from streamjit.errors import StreamError
    for name in ("ptxas", "nvdisasm"):
        try:
            tool(name)
        except StreamError:
            return f"{name} (the CUDA toolchain) is not installed: {install}"
    return ""


MISSING_TOOLCHAIN = missing_toolchain()


def triad(a, b, c, q):
    for i in sj.prange(a.shape[0]):
        a[i] = b[i] + q * c[i]


def jacobi(out, g):
    for r in sj.prange(1, g.shape[0] - 1):
        for c in range(1, g.shape[1] - 1):
            out[r, c] = 0.2 * (g[r, c] + g[r, c - 1] + g[r, c + 1] + g[r - 1, c] + g[r + 1, c])


def fill(out, value):
    for i in sj.prange(out.shape[0]):
        out[i] = value


def renamed_prange(out, a, b):
    for i in pr(a.shape[0]):
        out[i] = a[i] * b[i]


def chained_store(arr, img):
    for y in sj.prange(img.shape[0]):
        for x in range(img.shape[1]):
            arr[y][x] = img[y, x] + 1.0


def prange_rows(out, a):
    for i in sj.prange(a.shape[0]):
        for j in range(a.shape[1]):
            out[i, j] = 3.0 * a[i, j] + 1.0


def grid_2d(out, a):
    for i in sj.prange(a.shape[0]):
        for j in sj.prange(a.shape[1]):
            out[i, j] = 2.0 * a[i, j] - 1.0


def stepped(out, a):
    for i in sj.prange(1, a.shape[0], 3):
        out[i] = a[i] + 1.0


def branchy(out, a):
    for i in sj.prange(a.shape[0]):
        if a[i] > 0.5:
            out[i] = a[i]
        else:
            out[i] = -a[i]


def update_rows(out, a):
    # reads what it streams (out[r, c]): no vector stores, whose lanes are
    # written at the end of a group of iterations
    for r in sj.prange(a.shape[0]):
        for c in range(a.shape[1]):
            out[r, c] = 0.5 * out[r, c] + a[r, c]


def reduce_into(out, a):
    for i in sj.prange(a.shape[0]):
        out[0] += a[i]


def two_nests(out, a):
    for i in sj.prange(a.shape[0]):
        out[i] = a[i]
    for i in sj.prange(a.shape[0]):
        out[i] += 1.0


def returns_value(out, a):
    for i in sj.prange(a.shape[0]):
        out[i] = a[i]
    return out


def axpy_numba_cuda(out, x, y, alpha):
    # a kernel written for numba-cuda, hinted by sj.cuda.jit
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = alpha * x[i] + y[i]


def through_alias(out, a):
    o = out
    for i in sj.prange(a.shape[0]):
        o[i] = a[i] + 1.0


def atomic_numba_cuda(out, x):
    # stores to out only through an atomic: nothing to hint
    i = cuda.grid(1)
    if i < x.shape[0]:
        cuda.atomic.add(out, 0, x[i])


def from_the_end(out, a):
    # negative indices wrap around, element by element
    for i in sj.prange(-5, a.shape[0] - 5):
        out[i] = a[i] * 2.0


def grid_3d(out, a):
    for i in sj.prange(a.shape[0]):
        for j in sj.prange(a.shape[1]):
            for k in sj.prange(a.shape[2]):
                out[i, j, k] = a[i, j, k] + 0.5


def reverse_blocks_numba_cuda(out, x):
    # a numba-cuda kernel with shared memory and a barrier: each block of 64
    # reverses its elements (x holds whole blocks)
    tile = cuda.shared.array(64, float64)
    i = cuda.grid(1)
    t = cuda.threadIdx.x
    tile[t] = x[i]
    cuda.syncthreads()
    out[i] = tile[63 - t]


def mixed_indices_numba_cuda(out, x):
    # a 32-bit index (threadIdx.x) and a 64-bit one (the range's) in one access
    t = cuda.threadIdx.x
    for j in range(out.shape[1]):
        out[t, j] = x[j, t] * 2

