"""A drop-in replacement for a NumPy allocation: `empty_like`, whose arrays
are placed apart from their prototype modulo a page (`codegen/placement.py`
places the arrays a kernel allocates the same way).
"""

import numpy as np

from ..codegen.placement import placed_apart


def empty_like(prototype, dtype=None, order="K", subok=True, shape=None):
    """`numpy.empty_like`, with its arguments and defaults, placed apart from ``prototype`` in memory.

    Large NumPy arrays start at one fixed offset within their 4 KiB page, so
    a second buffer made with ``np.empty_like(a)`` or ``a.copy()`` lies at
    the same offset as ``a``: a loop that stores ``b[i]`` while loading
    ``a[i - 1]`` then loads from just behind its stores modulo 4 KiB, and
    the loads wait for the stores (4K aliasing). A streamed loop there runs
    plain (``stream_fallbacks()["page_alias"]``), and plain loops slow down
    too: a streamed Jacobi sweep of 4096x4096 float32 ran 16 ms with its two
    buffers apart, 40-46 ms with them alike (AMD EPYC Zen 2 VM). Arrays of
    64 KiB and more, C- or Fortran-ordered, are placed on a cache line far
    from ``prototype``'s offset; smaller ones, others (``order="K"`` of a
    strided view) and subclasses (``subok=True``) are NumPy's as made.

    Parameters
    ----------
    prototype : array_like
        The array the new one is shaped like and kept apart from.
    dtype : data-type, optional
        Overrides ``prototype``'s dtype.
    order : {"C", "F", "A", "K"}, default "K"
        The memory layout, as for `numpy.empty_like`.
    subok : bool, default True
        Whether the result has ``prototype``'s subclass, as for `numpy.empty_like`.
    shape : int or tuple of ints, optional
        Overrides ``prototype``'s shape.

    Returns
    -------
    out : ndarray
        Uninitialized, laid out as `numpy.empty_like` lays it out.

    Examples
    --------
    >>> import numpy as np, streamjit as sj
    >>> a = np.ones((512, 512))
    >>> b = sj.empty_like(a)
    >>> b.shape, b.dtype, b.flags.c_contiguous
    ((512, 512), dtype('float64'), True)
    >>> min((b.ctypes.data - a.ctypes.data) % 4096, (a.ctypes.data - b.ctypes.data) % 4096) >= 512
    True
    """
    fresh = np.empty_like(prototype, dtype=dtype, order=order, subok=subok, shape=shape)
    if type(fresh) is not np.ndarray:  # (a subclass: placed_apart would return a plain ndarray)
        return fresh
    return placed_apart(fresh, (np.asarray(prototype),))
