"""Drop-in replacements for NumPy copies: `copyto` and `memcpy`.

Both take NumPy's path for anything but the common case, so results,
broadcasting, casting and exceptions are NumPy's own. The common case (same
shape and dtype, both C-contiguous, native numeric or bool, destination
writable and aligned, no ``where`` mask) runs a streamed copy kernel with
``threshold="auto"``: arrays above the machine's threshold are copied with
non-temporal stores, smaller ones with the plain loop, and overlapping
arrays (which NumPy copies as if through a buffer) in the direction that
reads each element before it is overwritten. Large copies (`PARALLEL_BYTES`)
run on all of Numba's threads. The Python-side checks are a few attribute
reads, cheap next to a small `np.copyto`.
"""

import os

import numba
import numpy as np
from numba import prange

from .dispatcher import stream_kernel

_FAST_DTYPES = frozenset(np.dtype(c) for c in "?bBhHiIlLqQfdFD")


@numba.njit(inline="always")
def _starts_inside(dst, src):
    """dst's data starts after src's, within src: a forward copy would
    overwrite elements of src before reading them."""
    start = src.ctypes.data
    return start < dst.ctypes.data < start + src.shape[0] * src.itemsize


@stream_kernel(stream_stores=["dst"], threshold="auto", nogil=True)
def _copy_elements(dst, src):
    if _starts_inside(dst, src):
        for i in range(dst.shape[0] - 1, -1, -1):
            dst[i] = src[i]
        return
    for i in range(dst.shape[0]):
        dst[i] = src[i]


@stream_kernel(stream_stores=["dst"], threshold="auto", nogil=True, parallel=True)
def _copy_elements_parallel(dst, src):
    for i in prange(dst.shape[0]):
        dst[i] = src[i]


# Copies at least this large (bytes) use all of Numba's threads: one core
# cannot fill a server's memory bus. On our 2-core VM one streamed thread
# nearly does (256 MiB float32: 1.37x np.copyto on one thread, 1.45x on
# two); STREAMJIT_PARALLEL_BYTES overrides.
PARALLEL_BYTES = int(os.environ.get("STREAMJIT_PARALLEL_BYTES", 64 << 20))


def copyto(dst, src, casting="same_kind", where=True):
    """Like `numpy.copyto`: copy ``src`` into ``dst``, streamed when large."""
    if (where is True and type(dst) is np.ndarray and type(src) is np.ndarray and dst.shape == src.shape
            and dst.dtype in _FAST_DTYPES and dst.dtype == src.dtype
            and dst.flags.carray and src.flags.c_contiguous):
        if dst.ndim != 1:
            dst, src = dst.reshape(-1), src.reshape(-1)
        if dst.nbytes >= PARALLEL_BYTES and numba.get_num_threads() > 1 and not np.may_share_memory(dst, src):
            _copy_elements_parallel(dst, src)
        else:
            _copy_elements(dst, src)
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
