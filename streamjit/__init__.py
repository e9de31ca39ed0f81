"""streamjit: a Numba JIT for NumPy loops whose large outputs bypass the cache.

``@stream_kernel(stream_stores=[...])`` compiles a loop function with Numba
and turns the stores to the named arrays into aligned, full-width vector
non-temporal stores, followed by a store fence (see README.md).
"""

import importlib

from numba import prange

from ._version import __version__

from .kernel.versions import check_numba  # noqa: E402

check_numba()  # before anything compiles: outside the tested range, say so

from .api import stream_kernel
from .kernel.dispatcher import StreamDispatcher
from .dropins.allocation import empty_like
from .dropins.copy import copyto, memcpy, preload
from .errors import StreamConfigError, StreamError, StreamLegalityError, StreamWarning
from .inspection.report import ArrayReport, StreamReport
from .post_o3.pool import memory_stats, release_memory
from .dropins.stencil import stencil


def __getattr__(name):
    """``sj.cuda`` (GPU kernels, `streamjit/cuda`), loaded on first use;
    numba.cuda itself only when a GPU kernel is compiled or launched."""
    if name == "cuda":
        return importlib.import_module(".cuda", __name__)
    raise AttributeError(f"module 'streamjit' has no attribute {name!r}")


__all__ = [
    "stream_kernel", "StreamDispatcher", "StreamReport", "ArrayReport", "prange", "copyto", "memcpy", "empty_like", "preload",
    "release_memory", "memory_stats", "stencil", "StreamError", "StreamConfigError", "StreamLegalityError", "StreamWarning",
]
