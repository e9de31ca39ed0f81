"""Streamed stand-ins for NumPy's and Numba's own: ``copyto``, ``memcpy``
and ``preload`` (`copy.py`), ``empty_like`` (`allocation.py`) and
``stencil`` (`stencil.py`). The package's front door, ``streamjit``, hands
them on; Dask arrays' element-wise kernels stay at their public path,
``streamjit.dask``."""

from . import copy as _copy


def __getattr__(name):
    """``streamjit.dropins.copy_threads`` and the other names of
    ``streamjit.dropins`` from before it was a folder (copyto's module,
    now `copy.py`), read where they live now."""
    try:
        return getattr(_copy, name)
    except AttributeError:
        raise AttributeError(f"module 'streamjit.dropins' has no attribute {name!r}") from None
