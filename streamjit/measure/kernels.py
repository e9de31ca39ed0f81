"""The kernels the measurements time: the STREAM kernels (each with a
streamed build and a plain `numba.njit` build of the same source), a
5-point and a 4-point Jacobi, a gather, loops LLVM leaves scalar (a
running sum, a scale with an early exit, the same computing more per
element), a CSR spmv, and 1-D to 3-D
stencils, each as a loop and as a `numba.stencil` kernel. `calibration.py`
times some of them too."""

import functools

import numba
import numpy as np

from ..api import stream_kernel

# The STREAM kernels, written as a user would. Each gets a streamed build
# (stream_kernel) and a plain build (numba.njit) of the same source.
def stream_copy(a, b):
    """STREAM copy: ``a[i] = b[i]``."""
    for i in range(a.shape[0]):
        a[i] = b[i]


def stream_scale(a, b, q):
    """STREAM scale: ``a[i] = q * b[i]``."""
    for i in range(a.shape[0]):
        a[i] = q * b[i]


def stream_add(a, b, c):
    """STREAM add: ``a[i] = b[i] + c[i]``."""
    for i in range(a.shape[0]):
        a[i] = b[i] + c[i]


def stream_triad(a, b, c, q):
    """STREAM triad: ``a[i] = b[i] + q * c[i]``."""
    for i in range(a.shape[0]):
        a[i] = b[i] + q * c[i]


def jacobi5(out, g):
    """A 5-point Jacobi sweep of the 2-D grid ``g`` into the interior of ``out`` (its border is
    left as it is)."""
    for r in range(1, g.shape[0] - 1):
        for c in range(1, g.shape[1] - 1):
            out[r, c] = 0.2 * (g[r, c] + g[r, c - 1] + g[r, c + 1] + g[r - 1, c] + g[r + 1, c])


def gather(out, lut, key, x):
    """A gather through a table: ``out[i] = lut[key[i]] * x[i]`` (the loads of ``lut`` do not
    advance with ``i``, so they are not prefetched)."""
    for i in range(out.shape[0]):
        out[i] = lut[key[i]] * x[i]


def running_sum(out, a):
    """A running sum: a dependence from one iteration to the next keeps the loop scalar."""
    acc = a.dtype.type(0)
    for i in range(a.shape[0]):
        acc += a[i]
        out[i] = acc


def checked_scale(out, a):
    """A scale with a range check that raises: the early exit keeps the loop scalar."""
    for i in range(a.shape[0]):
        x = a[i]
        if x > 2:
            raise ValueError("value out of range")
        out[i] = 2 * x


@functools.cache
def chain(ops, checked=False):
    """``out[i] = f(a[i])``, ``f`` a chain of ``ops`` dependent operations
    (``((x * x) + c) * x ...``; 0: a copy), made from source; ``checked``:
    as `checked_scale`, with a range check that keeps the loop scalar."""
    value = "x"
    for k in range(ops):
        value = f"({value} * x)" if k % 2 == 0 else f"({value} + c)"
    name = f"{'checked_' if checked else ''}chain_{ops}"
    check = "        if x > 2:\n            raise ValueError('value out of range')\n" if checked else ""
    source = (f"def {name}(out, a, c):\n    for i in range(a.shape[0]):\n        x = a[i]\n{check}"
              f"        out[i] = {value}\n")
    namespace = {}
    exec(compile(source, f"<streamjit.measure {name}>", "exec"), namespace)
    return namespace[name]


def spmv(y, indptr, indices, values, x):
    """CSR sparse matrix times vector."""
    for i in range(y.shape[0]):
        acc = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            acc += values[k] * x[indices[k]]
        y[i] = acc


def _numpy_triad(a, b, c, q):
    np.multiply(c, q, out=a)
    a += b


# name -> (kernel, NumPy equivalent, arrays read, uses the scalar q)
STREAM_KERNELS = {
    "copy": (stream_copy, lambda a, b, c, q: np.copyto(a, b), 1, False),
    "scale": (stream_scale, lambda a, b, c, q: np.multiply(b, q, out=a), 1, True),
    "add": (stream_add, lambda a, b, c, q: np.add(b, c, out=a), 2, False),
    "triad": (stream_triad, _numpy_triad, 2, True),
}


def stream_builds(name):
    """(streamed at every size, plain) dispatchers of one STREAM kernel."""
    kernel = STREAM_KERNELS[name][0]
    return stream_kernel(stream_stores=["a"], threshold=None)(kernel), numba.njit(kernel)


def kernel_args(name, a, b, c, q):
    """The arguments STREAM kernel ``name`` takes, out of ``a, b, c, q``: the output, the arrays it
    reads and the scalar where it uses one."""
    _, _, reads, uses_q = STREAM_KERNELS[name]
    args = (a, b, c)[: reads + 1]
    return args + ((q,) if uses_q else ())


def jacobi5_stencil(a):
    """The 5-point Jacobi of `jacobi5` as a stencil kernel (relative indices)."""
    return 0.2 * (a[0, 0] + a[0, -1] + a[0, 1] + a[-1, 0] + a[1, 0])


def avg3_loop(out, a):
    """A 1-D 3-point average as a loop, into the interior of ``out``."""
    for i in range(1, a.shape[0] - 1):
        out[i] = (a[i - 1] + a[i] + a[i + 1]) / 3


def avg3_stencil(a):
    """The 3-point average of `avg3_loop` as a stencil kernel."""
    return (a[-1] + a[0] + a[1]) / 3


def laplace7_loop(out, a):
    """A 3-D 7-point Laplacian as a loop nest, into the interior of ``out``."""
    for i in range(1, a.shape[0] - 1):
        for j in range(1, a.shape[1] - 1):
            for k in range(1, a.shape[2] - 1):
                out[i, j, k] = (a[i - 1, j, k] + a[i + 1, j, k] + a[i, j - 1, k] + a[i, j + 1, k]
                                + a[i, j, k - 1] + a[i, j, k + 1] - 6 * a[i, j, k])


def laplace7_stencil(a):
    """The 7-point Laplacian of `laplace7_loop` as a stencil kernel."""
    return a[-1, 0, 0] + a[1, 0, 0] + a[0, -1, 0] + a[0, 1, 0] + a[0, 0, -1] + a[0, 0, 1] - 6 * a[0, 0, 0]


def jacobi4_stencil(a):
    """A 4-point Jacobi as a stencil kernel, in float32 (memory-bound; the sweep of
    `stencil_envelope`)."""
    return np.float32(0.25) * (a[0, 1] + a[0, -1] + a[1, 0] + a[-1, 0])


@functools.cache
def numba_stencil(kernel):
    """`numba.stencil` of ``kernel`` called from a jitted function, as its
    documentation shows: called from Python, a `numba.stencil` compiles
    its loop nest again on every call (about 0.35 s)."""
    applied = numba.stencil(kernel)
    return numba.njit(lambda block, out: applied(block, out=out))


def numba_stencil_block(block, kernel=jacobi4_stencil):
    """`numba.stencil` of ``kernel`` (whose result has the block's dtype) on
    one block, compiled once per process (a `numba.stencil` object itself
    does not pickle, so Dask workers build their own from this importable
    function)."""
    return numba_stencil(kernel)(block, np.zeros_like(block))


def jacobi4(out, g):
    """The 4-point Jacobi of `jacobi4_stencil` as a loop nest, into the interior of ``out``."""
    for r in range(1, g.shape[0] - 1):
        for c in range(1, g.shape[1] - 1):
            out[r, c] = np.float32(0.25) * (g[r, c - 1] + g[r, c + 1] + g[r - 1, c] + g[r + 1, c])
