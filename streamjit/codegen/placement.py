"""Where a streamed array the kernel allocates is placed: apart from the
kernel's array arguments modulo a page.

Large allocations are page-aligned chunks at one fixed offset within their
page (glibc mmaps them). An array the kernel allocates with ``np.empty``
then starts 48 bytes past a NumPy argument's data modulo 4 KiB (Numba's
allocation header against NumPy's), so its streamed store trails the
argument's element ``i - 1`` by a few dozen bytes: 4K aliasing, where the
loads wait for the non-temporal stores still in flight. The aligned loop's
check (`checks.no_trailing_alias`) then sends every call to the plain loop,
and a named fresh output of a stencil never streamed (issue 27, AMD EPYC
Zen 2 VM: every call counted ``page_alias``).

``placed_apart(fresh, inputs)`` (``inputs``: a tuple of arrays of one
type in jitted code, any tuple of arrays from Python) follows such an ``np.empty`` /
``np.empty_like`` (inserted by ``passes/fresh_placement.py``): where
``fresh`` starts near an input's row modulo a page (its first row, and the
rows before and after it, which a stencil reads beside its store), it
allocates again, one page larger, and returns a view starting on a cache
line as far as possible from all of them. The first allocation is released untouched (none of its pages
was faulted in). The stencil drop-in places the outputs it allocates by the
same rule (`apart_offset`).
"""

import numpy as np
from numba.extending import register_jitable

from ..passes.stream_loads import LINE_BYTES
from .checks import PAGE_BYTES

# Smaller arrays are left where the allocator put them: they live in the
# allocator's heap at no fixed offset, and a second allocation costs more
# than the streamed loop saves there.
PLACED_FROM_BYTES = 16 * PAGE_BYTES
# How close, modulo a page, a fresh array's start may come to an input row's:
# the aliasing window (192 bytes) plus a stencil's reach of a few elements.
NEAR_BYTES = 512


@register_jitable
def _nearest(position, offsets):
    """How close, either way round the page, ``position`` comes to an offset."""
    distance = PAGE_BYTES
    for offset in offsets:
        ahead = (position - offset) % PAGE_BYTES
        distance = min(distance, ahead, PAGE_BYTES - ahead)
    return distance


@register_jitable
def apart_offset(offsets):
    """The offset within a page, on a cache line, farthest from every
    offset in ``offsets`` (an int64 array)."""
    best, best_distance = 0, -1
    for candidate in range(0, PAGE_BYTES, LINE_BYTES):
        distance = _nearest(candidate, offsets)
        if distance > best_distance:
            best, best_distance = candidate, distance
    return best


@register_jitable
def _input_offsets(inputs):
    """Where, modulo a page, each input's rows start: its data, and one row
    (or plane) before and after it in each outer dimension (what a
    stencil's neighbours ``u[i - 1, j]``, ``u[i + 1, j]`` read)."""
    capacity = 0
    for array in inputs:
        capacity += 2 * array.ndim + 1
    offsets = np.empty(capacity, np.int64)
    count = 0
    for array in inputs:
        if array.size:
            start = array.ctypes.data % PAGE_BYTES
            offsets[count] = start
            count += 1
            for dim in range(array.ndim - 1):
                offsets[count] = (start + array.strides[dim]) % PAGE_BYTES
                offsets[count + 1] = (start - array.strides[dim]) % PAGE_BYTES
                count += 2
    return offsets[:count]


@register_jitable
def placed_apart(fresh, inputs):
    """``fresh``, or where it starts within `NEAR_BYTES` of where an
    input's rows start modulo a page, an uninitialized array like it placed
    by `apart_offset`."""
    nbytes = fresh.size * fresh.itemsize
    if nbytes < PLACED_FROM_BYTES:
        return fresh
    offsets = _input_offsets(inputs)
    if LINE_BYTES % fresh.itemsize or _nearest(fresh.ctypes.data % PAGE_BYTES, offsets) >= NEAR_BYTES:
        return fresh
    # (a buffer of fresh's own dtype, sliced: no byte view to compile)
    buffer = np.empty(fresh.size + PAGE_BYTES // fresh.itemsize, fresh.dtype)
    skip = (apart_offset(offsets) - buffer.ctypes.data) % PAGE_BYTES // fresh.itemsize
    return buffer[skip:skip + fresh.size].reshape(fresh.shape)
