"""Numba's runtime: the C functions of its NRT module, and its thread pool."""

import ctypes

import numba.np.ufunc.parallel as parallel
from numba.core.runtime import _nrt_python


def nrt_function_address(name):
    """The address of the C function ``name`` exported by the extension
    module Numba loads for its runtime (NRT), including those Numba does
    not make known to LLVM itself (``NRT_MemInfo_alloc_external``)."""
    return ctypes.cast(getattr(ctypes.CDLL(_nrt_python.__file__), name), ctypes.c_void_p).value


def thread_pool_launched():
    """Whether Numba's threading layer is loaded and its threads started
    (read without launching it, as ``numba.get_num_threads()`` would)."""
    return parallel._is_initialized
