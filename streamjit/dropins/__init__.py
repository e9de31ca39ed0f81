"""Streamed stand-ins for NumPy's and Numba's own: ``copyto``, ``memcpy``
and ``preload`` (`copy.py`), ``empty_like`` (`allocation.py`) and
``stencil`` (`stencil.py`). The package's front door, ``streamjit``, hands
them on; Dask arrays' element-wise kernels stay at their public path,
``streamjit.dask``."""
