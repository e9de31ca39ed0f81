"""Where a streamed array the kernel allocates is placed: apart from the
kernel's array arguments modulo a page.

Large allocations are page-aligned chunks at one fixed offset within their
page (glibc mmaps them). An array the kernel allocates with ``np.empty``
then starts 48 bytes past a NumPy argument's data modulo 4 KiB (Numba's
allocation header against NumPy's), so its streamed store trails the
argument's element ``i - 1`` by a few dozen bytes: 4K aliasing, where the
loads wait for the non-temporal stores still in flight. The aligned loop's
check (`checks.no_trailing_alias`) then sends every call to the plain loop,
and a named fresh output of a stencil never streamed (AMD EPYC Zen 2 VM,
bench/README.md: every call counted ``page_alias``).

``placed_apart(fresh, inputs)`` follows such an ``np.empty`` /
``np.empty_like`` (inserted by ``passes/fresh_placement.py``): where
``fresh`` starts near an input's row modulo a page (its first row, and the
rows before and after it, which a stencil reads beside its store; rows
along every axis but the contiguous one, so a Fortran-ordered input's
columns), it allocates again, one page larger, and returns a view starting
on a cache line as far as possible from all of them. The first allocation
is released untouched (none of its pages was faulted in). Where no cache
line of the page lies farther from those rows than ``fresh`` already does
(inputs whose rows crowd the page), ``fresh`` stays where it is: a second
allocation would only cost.

In a kernel it is emitted inline (an intrinsic: the rule is a few integer
operations and one allocation). As a jitted function it cost 0.7-1.1 s of
first-call compile per array type (AMD EPYC Zen 2 VM, bench/README.md
"First call of a kernel with a named fresh output"): four
helpers, each through Numba's whole pipeline, and a ``reshape``. From
Python (the drop-ins ``empty_like`` and ``stencil``) the same rule runs in
NumPy.
"""

import numpy as np
from numba import types
from numba.core import cgutils
from numba.np.arrayobj import make_array, populate_array
from numba.np.numpy_support import as_dtype

from ..machine.profile import line_bytes
from ..numba_internals.arrays import allocate_array, structure_value
from ..protocol.targets import PAGE_BYTES
from .arrays import array_field
from .registration import intrinsic

# Smaller arrays are left where the allocator put them: they live in the
# allocator's heap at no fixed offset, and a second allocation costs more
# than the streamed loop saves there. Chosen, not measured: no bench script
# swept this size (16 pages, 64 KiB).
PLACED_FROM_BYTES = 16 * PAGE_BYTES
# How close, modulo a page, a fresh array's start may come to an input row's:
# the widest aliasing window measured (192 bytes, machine/profile.py's Zen 2 row:
# the 4K aliasing table of bench/README.md's first "AMD EPYC Zen 2 VM"
# section, 256 MiB float32 per placement of the output, measured on that VM;
# `bench/machine_profile.py` measures the row now) plus a stencil's reach of
# a few elements; the margin up to 512 is chosen, not measured.
NEAR_BYTES = 512


def contiguous_axis(strides):
    """The axis an array's elements run along: the one of the smallest
    stride in size, the last of those tied (a C array's last axis, a
    Fortran array's first)."""
    sizes = [abs(stride) for stride in strides]
    return max(range(len(sizes)), key=lambda k: (-sizes[k], k))


def row_starts(arrays):
    """Where, modulo a page, each array's rows start: its data, and one row
    (or plane) before and after it along each axis but the contiguous one
    (what a stencil's neighbours ``u[i - 1, j]``, ``u[i + 1, j]`` read: in
    a Fortran-ordered array, ``u[i, j - 1]``, ``u[i, j + 1]``)."""
    starts = []
    for array in arrays:
        start = array.ctypes.data
        starts.append(start)
        inner = contiguous_axis(array.strides) if array.ndim else None
        for k, stride in enumerate(array.strides):
            if k != inner:
                starts += [start + stride, start - stride]
    return np.array(starts, np.int64) % PAGE_BYTES


def nearest(positions, starts):
    """How close, either way round the page, each of ``positions`` comes to
    one of ``starts``."""
    ahead = (np.asarray(positions)[..., None] - starts) % PAGE_BYTES
    return np.minimum(ahead, PAGE_BYTES - ahead).min(axis=-1, initial=PAGE_BYTES)


def apart_offset(starts):
    """The offset within a page, on a cache line, farthest from every one
    of ``starts`` (the first such, counting up from 0)."""
    candidates = np.arange(0, PAGE_BYTES, line_bytes())  # where a placed array may start within its page
    return int(candidates[np.argmax(nearest(candidates, starts))])


def _placed_apart_in_python(fresh, inputs):
    nbytes = fresh.size * fresh.itemsize
    if nbytes < PLACED_FROM_BYTES or line_bytes() % fresh.itemsize:
        return fresh
    starts = row_starts(inputs)
    here = nearest(fresh.ctypes.data % PAGE_BYTES, starts)
    if here >= NEAR_BYTES:
        return fresh
    offset = apart_offset(starts)
    if nearest(offset, starts) <= here:  # (no line of the page lies farther)
        return fresh
    buffer = np.empty(fresh.size + PAGE_BYTES // fresh.itemsize, fresh.dtype)
    skip = (offset - buffer.ctypes.data) % PAGE_BYTES
    return np.ndarray(fresh.shape, fresh.dtype, buffer, skip, fresh.strides)  # (fresh's layout, as in a kernel)


@intrinsic(python=_placed_apart_in_python)
def placed_apart(typingctx, fresh, inputs):
    """``fresh``, or where it starts within `NEAR_BYTES` of where an
    input's rows start modulo a page and `apart_offset` lies farther from
    them, an uninitialized array like it placed there (``inputs``: a tuple
    of arrays)."""
    if not (isinstance(fresh, types.Array) and isinstance(inputs, types.BaseTuple)
            and all(isinstance(t, types.Array) for t in inputs)):
        return None
    itemsize = as_dtype(fresh.dtype).itemsize
    # (only C or F arrays, whose strides describe one block from data on)
    movable = fresh.layout in "CF" and fresh.ndim >= 1 and line_bytes() % itemsize == 0

    def codegen(context, builder, sig, args):
        if not movable:
            context.nrt.incref(builder, fresh, args[0])
            return args[0]
        result = cgutils.alloca_once_value(builder, args[0])
        moved = cgutils.alloca_once_value(builder, cgutils.false_bit)
        intp = context.get_value_type(types.intp)
        starts = _row_starts_ir(context, builder, inputs, args[1])
        allocated = make_array(fresh)(context, builder, args[0])
        nbytes = builder.mul(allocated.nitems, allocated.itemsize)
        here = _nearest_ir(builder, _page_offset(builder, allocated.data, intp), starts)
        near = builder.icmp_signed("<", here, intp(NEAR_BYTES))
        with builder.if_then(builder.and_(builder.icmp_signed(">=", nbytes, intp(PLACED_FROM_BYTES)), near),
                             likely=False):
            offset, distance = _apart_offset_ir(builder, starts, intp)
            with builder.if_then(builder.icmp_signed(">", distance, here)):  # (only where it lies farther)
                buffer = allocate_array(context, builder, types.Array(fresh.dtype, 1, "C"),
                                        [builder.add(allocated.nitems, intp(PAGE_BYTES // itemsize))])
                skip = builder.and_(builder.sub(offset, _page_offset(builder, buffer.data, intp)),
                                    intp(PAGE_BYTES - 1))
                placed = make_array(fresh)(context, builder)
                populate_array(placed, data=builder.gep(buffer.data, [builder.udiv(skip, intp(itemsize))]),
                               shape=allocated.shape, strides=allocated.strides, itemsize=allocated.itemsize,
                               meminfo=buffer.meminfo)  # (the new buffer's one reference moves into the view)
                builder.store(structure_value(placed), result)
                builder.store(cgutils.true_bit, moved)
        with builder.if_then(builder.not_(builder.load(moved))):  # (kept: the caller's reference and the result's)
            context.nrt.incref(builder, fresh, args[0])
        return builder.load(result)

    return fresh(fresh, inputs), codegen


def _page_offset(builder, pointer, intp):
    return builder.and_(builder.ptrtoint(pointer, intp), intp(PAGE_BYTES - 1))


def _row_starts_ir(context, builder, inputs, value):
    """`row_starts`, as LLVM values (the inputs' types fix how many: the
    contiguous axis, found at run time as `contiguous_axis` finds it, gives
    its array's start twice over, which changes no distance)."""
    intp = context.get_value_type(types.intp)
    starts = []
    for k, aryty in enumerate(inputs):
        array = builder.extract_value(value, k)
        start = builder.ptrtoint(array_field(context, builder, aryty, array, "data"), intp)
        starts.append(start)
        if aryty.ndim < 2:
            continue
        strides = cgutils.unpack_tuple(builder, array_field(context, builder, aryty, array, "strides"), aryty.ndim)
        sizes = [builder.select(builder.icmp_signed("<", s, intp(0)), builder.neg(s), s) for s in strides]
        inner, smallest = intp(0), sizes[0]
        for axis, size in enumerate(sizes[1:], 1):  # (the last of the smallest)
            tied_or_smaller = builder.icmp_signed("<=", size, smallest)
            inner = builder.select(tied_or_smaller, intp(axis), inner)
            smallest = builder.select(tied_or_smaller, size, smallest)
        for axis, stride in enumerate(strides):
            row = builder.select(builder.icmp_signed("==", inner, intp(axis)), intp(0), stride)
            starts += [builder.add(start, row), builder.sub(start, row)]
    return [builder.and_(s, intp(PAGE_BYTES - 1)) for s in starts]


def _nearest_ir(builder, position, starts):
    """`nearest` for one position, as LLVM values."""
    distance = position.type(PAGE_BYTES)
    for start in starts:
        ahead = builder.and_(builder.sub(position, start), position.type(PAGE_BYTES - 1))
        behind = builder.sub(position.type(PAGE_BYTES), ahead)
        for d in (ahead, behind):
            distance = builder.select(builder.icmp_signed("<", d, distance), d, distance)
    return distance


def _apart_offset_ir(builder, starts, intp):
    """(`apart_offset`, how far it lies from ``starts``), as a loop over the candidate lines."""
    best = cgutils.alloca_once_value(builder, intp(0))
    best_distance = cgutils.alloca_once_value(builder, intp(-1))
    with cgutils.for_range(builder, intp(PAGE_BYTES // line_bytes())) as loop:
        candidate = builder.mul(loop.index, intp(line_bytes()))
        distance = _nearest_ir(builder, candidate, starts)
        farther = builder.icmp_signed(">", distance, builder.load(best_distance))
        builder.store(builder.select(farther, candidate, builder.load(best)), best)
        builder.store(builder.select(farther, distance, builder.load(best_distance)), best_distance)
    return builder.load(best), builder.load(best_distance)
