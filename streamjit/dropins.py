"""Drop-in replacements for NumPy copies: `copyto` and `memcpy`.

Outside the band where streaming wins (`STREAM_BYTES`, `STREAM_LIMIT_BYTES`)
`copyto` calls the C function that `numpy.copyto` itself runs, so results,
broadcasting, casting, exceptions and speed are NumPy's own. Inside it,
same-shape, same-dtype, C-contiguous numeric copies without ``where=`` run
a streamed copy kernel (overlapping arrays, which NumPy copies as if
through a buffer, in the direction that reads each element before it is
overwritten); with `PARALLEL_BYTES` set, copies at least that large run on
all of Numba's threads. Everything else goes to `numpy.copyto`.
"""

import os

import numba
import numpy as np
from numba import prange

from .dispatcher import stream_kernel
from .threshold import copy_threshold, numpy_streaming_bytes

_FAST_DTYPES = frozenset(np.dtype(c) for c in "?bBhHiIlLqQfdFD")

# The C function behind `np.copyto`. The public function first asks its
# arguments for `__array_function__` overrides, which costs more than a
# 1 KiB copy (95 vs 230 ns here); exact ndarrays have none, so for them
# this is exactly what np.copyto runs, minus that check.
_numpy_copyto = getattr(np.copyto, "_implementation", np.copyto)
_ndarray = np.ndarray


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


# Copies at least this large (bytes) use all of Numba's threads, when
# STREAMJIT_PARALLEL_BYTES sets it; by default copies use one thread, as
# np.copyto does: on our 2-core VM, shared with other processes, two
# threads gained 1.07-1.9x in one session and nothing in another.
PARALLEL_BYTES = int(os.environ["STREAMJIT_PARALLEL_BYTES"]) if "STREAMJIT_PARALLEL_BYTES" in os.environ else None

# Copies stream above STREAM_BYTES (where the measured curves cross, see
# `threshold.copy_threshold`) up to STREAM_LIMIT_BYTES: above it np.copyto
# streams by itself, and one streamed thread of ours is slower (0.9x).
# Both are read at import, like threshold="auto" kernels.
STREAM_BYTES = copy_threshold()[0]
STREAM_LIMIT_BYTES = (numpy_streaming_bytes()[0] if PARALLEL_BYTES is None else None) or float("inf")


def stream_copy(dst, src):
    """Streamed copy of 1-D C-contiguous ``src`` into ``dst`` (same length and
    dtype, any size): what `copyto` runs between its thresholds."""
    if (PARALLEL_BYTES is not None and dst.nbytes >= PARALLEL_BYTES and numba.get_num_threads() > 1
            and not np.may_share_memory(dst, src)):
        _copy_elements_parallel(dst, src)
    else:
        _copy_elements(dst, src)


def copyto(dst, src, casting="same_kind", where=True):
    """Like `numpy.copyto`: copy ``src`` into ``dst``, streamed when large."""
    # written for the small copy's sake: a module-level name and separate
    # comparisons cost 40 ns less than `np.ndarray` and a chained comparison
    if where is True and type(dst) is _ndarray and type(src) is _ndarray:
        if (dst.nbytes > STREAM_BYTES and dst.nbytes <= STREAM_LIMIT_BYTES and dst.shape == src.shape
                and dst.dtype in _FAST_DTYPES and dst.dtype == src.dtype and dst.flags.carray
                and src.flags.c_contiguous):
            return stream_copy(dst.reshape(-1), src.reshape(-1))
        return _numpy_copyto(dst, src, casting)
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
