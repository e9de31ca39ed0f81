"""Numba's runtime: the C functions of its NRT module, and its thread pool."""

import ctypes

import llvmlite.binding as llvm
import numba.np.ufunc.parallel as parallel
from numba.core import config
from numba.core.runtime import _nrt_python


def nrt_function_address(name):
    """The address of the C function ``name`` exported by the extension
    module Numba loads for its runtime (NRT), including those Numba does
    not make known to LLVM itself (``NRT_MemInfo_alloc_external``)."""
    return ctypes.cast(getattr(ctypes.CDLL(_nrt_python.__file__), name), ctypes.c_void_p).value


def install_runtime_symbols():
    """Make the runtime's C functions known to LLVM by the names compiled
    code calls them by (``NRT_MemInfo_alloc_safe_aligned``, ...), as
    ``rtsys.initialize`` does first (with the allocation statistics it
    switches on under ``NUMBA_NRT_STATS``), without the LLVM compile of
    Numba's NRT module that follows it there. Loading cached code needs
    no more: every library links its own copy of that module's functions
    (Numba's ``post_lowering`` adds it to each), so the cached object code
    holds them. Safe to repeat, and before or after ``rtsys.initialize``."""
    if config.NRT_STATS:
        _nrt_python.memsys_enable_stats()
    for name, address in _nrt_python.c_helpers.items():
        llvm.add_symbol(name if name.startswith("_") else "NRT_" + name, address)


def thread_pool_launched():
    """Whether Numba's threading layer is loaded and its threads started
    (read without launching it, as ``numba.get_num_threads()`` would)."""
    return parallel._is_initialized
