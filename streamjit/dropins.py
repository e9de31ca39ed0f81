"""Drop-in replacements for NumPy copies: `copyto` and `memcpy`.

Below the copy threshold (`threshold.copy_threshold`, where the measured
curves of streamed and NumPy copies cross) `copyto` calls the C function
that `numpy.copyto` itself runs, so results, broadcasting, casting,
exceptions and speed are NumPy's own. Above it, same-shape, same-dtype,
C-contiguous numeric copies without ``where=`` run a streamed copy kernel
(overlapping arrays, which NumPy copies as if through a buffer, in the
direction that reads each element before it is overwritten); copies of at
least `PARALLEL_BYTES` run on all of Numba's threads. Everything else goes
to `numpy.copyto`.
"""

import os

import numba
import numpy as np
from numba import prange

from .dispatcher import stream_kernel
from .threshold import copy_threshold

_FAST_DTYPES = frozenset(np.dtype(c) for c in "?bBhHiIlLqQfdFD")

# The C function behind `np.copyto`. The public function first asks its
# arguments for `__array_function__` overrides, which costs more than a
# 1 KiB copy (95 vs 230 ns here); exact ndarrays have none, so for them
# this is exactly what np.copyto runs, minus that check.
_numpy_copyto = getattr(np.copyto, "_implementation", np.copyto)


@numba.njit(inline="always")
def _starts_inside(dst, src):
    """dst's data starts after src's, within src: a forward copy would
    overwrite elements of src before reading them."""
    start = src.ctypes.data
    return start < dst.ctypes.data < start + src.shape[0] * src.itemsize


# Both kernels always stream: `copyto` has already decided by size.
@stream_kernel(stream_stores=["dst"], nogil=True)
def _copy_elements(dst, src):
    if _starts_inside(dst, src):
        for i in range(dst.shape[0] - 1, -1, -1):
            dst[i] = src[i]
        return
    for i in range(dst.shape[0]):
        dst[i] = src[i]


@stream_kernel(stream_stores=["dst"], nogil=True, parallel=True)
def _copy_elements_parallel(dst, src):
    for i in prange(dst.shape[0]):
        dst[i] = src[i]


# Copies at least this large (bytes) use all of Numba's threads: one core
# cannot fill a server's memory bus, and above ~180 MiB glibc's memcpy (so
# np.copyto) streams too, which one streamed thread only matches.
# STREAMJIT_PARALLEL_BYTES overrides.
PARALLEL_BYTES = int(os.environ.get("STREAMJIT_PARALLEL_BYTES", 64 << 20))

# Bytes per array above which copies stream (read at import, like
# threshold="auto" kernels; see `threshold.copy_threshold`).
STREAM_BYTES = copy_threshold()[0]


def stream_copy(dst, src):
    """Streamed copy of 1-D C-contiguous ``src`` into ``dst`` (same length and
    dtype, any size): what `copyto` runs above the threshold."""
    if dst.nbytes >= PARALLEL_BYTES and numba.get_num_threads() > 1 and not np.may_share_memory(dst, src):
        _copy_elements_parallel(dst, src)
    else:
        _copy_elements(dst, src)


def copyto(dst, src, casting="same_kind", where=True):
    """Like `numpy.copyto`: copy ``src`` into ``dst``, streamed when large."""
    if where is True and type(dst) is np.ndarray and type(src) is np.ndarray:
        if (dst.nbytes > STREAM_BYTES and dst.shape == src.shape and dst.dtype in _FAST_DTYPES
                and dst.dtype == src.dtype and dst.flags.carray and src.flags.c_contiguous):
            stream_copy(dst.reshape(-1), src.reshape(-1))
        else:
            _numpy_copyto(dst, src, casting)
        return
    np.copyto(dst, src, casting=casting, where=where)


def memcpy(dst, src):
    """Copy the bytes of C-contiguous ``src`` into C-contiguous ``dst`` (any
    dtypes, equal ``nbytes``); overlapping buffers behave like ``memmove``.
    Returns ``dst``."""
    for name, array in (("dst", dst), ("src", src)):
        if not isinstance(array, np.ndarray) or not array.flags.c_contiguous:
            raise ValueError(f"memcpy: {name} must be a C-contiguous numpy array")
    if dst.nbytes != src.nbytes:
        raise ValueError(f"memcpy: dst has {dst.nbytes} bytes but src has {src.nbytes}")
    if not dst.flags.writeable:
        raise ValueError("memcpy: dst is read-only")
    copyto(dst.reshape(-1).view(np.uint8), src.reshape(-1).view(np.uint8))
    return dst
