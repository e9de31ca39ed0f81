"""The run-time checks that license an aligned loop: indices in bounds,
where the aligned part starts and ends, whether other arrays share the
destination's alignment, whether a source trails the destination by a few
bytes modulo a page, contiguous rows, and the size threshold."""

import llvmlite.ir as llir
from numba import types
from numba.core import cgutils
from numba.np.numpy_support import as_dtype

from ..protocol.targets import PAGE_BYTES, STREAM_ALIGN_BYTES
from .arrays import (array_field, array_shape, element_address, index_values, integer_indices, is_element_access,
                     unit_inner_stride)
from .registration import intrinsic


@intrinsic
def in_bounds(typingctx, arr, first, last):
    """True when indices ``first`` and ``last`` both lie inside ``arr``."""
    parts = integer_indices(first)

    def codegen(context, builder, sig, args):
        if not isinstance(arr, types.Array):
            return cgutils.true_bit  # not an array: its accesses keep Numba's semantics
        if parts is None or len(parts) > arr.ndim:
            return cgutils.false_bit
        shape = array_shape(context, builder, arr, args[0])
        ok = cgutils.true_bit
        for idx_type, idx_value in ((sig.args[1], args[1]), (sig.args[2], args[2])):
            for value, n in zip(index_values(context, builder, idx_type, idx_value), shape):
                within = builder.and_(builder.icmp_signed(">=", value, value.type(0)),
                                      builder.icmp_signed("<", value, n))
                ok = builder.and_(ok, within)
        return ok

    return types.boolean(arr, first, last), codegen


@intrinsic
def aligned_start(typingctx, arr, first, lo, hi, ok):
    """First loop index at which ``arr``'s streamed store is aligned, or
    ``hi`` when the aligned loop must not run (check failed, loop too short,
    data not even element-aligned, last dimension not contiguous)."""
    return _aligned_boundary(arr, first, lo, hi, ok, reverse=False)


@intrinsic
def aligned_end(typingctx, arr, end, lo, hi, ok):
    """For a loop running down from ``hi - 1`` to ``lo``: the largest index
    ``sv <= hi`` at which ``arr``'s streamed store is aligned (``end`` is the
    index of the element at ``hi``), so the aligned loop runs ``sv - 1`` down
    to ``lo``; or ``lo`` when it must not run (as `aligned_start`)."""
    return _aligned_boundary(arr, end, lo, hi, ok, reverse=True)


def _aligned_boundary(arr, at, lo, hi, ok, reverse):
    """`aligned_start` / `aligned_end`: where an aligned loop over ``[lo, hi)``
    starts (forward, from the element at ``lo``) or ends (``reverse``, from
    the element at ``hi``), given the other checks ``ok``."""
    supported = is_element_access(arr, at)

    def codegen(context, builder, sig, args):
        aryty, idxty, loty, hity = sig.args[:4]
        lo_v = context.cast(builder, args[2], loty, types.intp)
        hi_v = context.cast(builder, args[3], hity, types.intp)
        fallback = lo_v if reverse else hi_v
        if not supported:
            return fallback
        itemsize = as_dtype(aryty.dtype).itemsize
        lanes = STREAM_ALIGN_BYTES // itemsize
        address = element_address(context, builder, aryty, args[0], idxty, args[1])
        long_enough = builder.icmp_signed(">=", builder.sub(hi_v, lo_v), lo_v.type(2 * lanes))
        element_aligned = builder.icmp_unsigned("==", builder.and_(address, address.type(itemsize - 1)),
                                                address.type(0))
        contiguous = unit_inner_stride(context, builder, aryty, args[0])
        run = builder.and_(builder.and_(args[4], long_enough), builder.and_(element_aligned, contiguous))
        if reverse:  # back from hi to the aligned element below it
            misalignment = builder.and_(address, address.type(STREAM_ALIGN_BYTES - 1))
            boundary = builder.sub(hi_v, builder.udiv(misalignment, misalignment.type(itemsize)))
        else:  # on from lo to the next aligned element
            misalignment = builder.and_(builder.neg(address), address.type(STREAM_ALIGN_BYTES - 1))
            boundary = builder.add(lo_v, builder.udiv(misalignment, misalignment.type(itemsize)))
        chosen = builder.select(run, boundary, fallback)
        if not reverse:
            return chosen
        # Where the aligned loop runs (``chosen > lo``) LLVM knows the select
        # took ``boundary`` and rewrites some uses of it but not others; the
        # store offsets ``j - chosen`` then mix the two and their alignment is
        # no longer provable. A frozen value is one value to every use.
        frozen = llir.Instruction(builder.block, chosen.type, "freeze", [chosen])
        builder._insert(frozen)
        return frozen

    return types.intp(arr, at, lo, hi, ok), codegen


@intrinsic
def same_alignment(typingctx, arr, index, anchor, anchor_index):
    """True when ``arr[index]`` and ``anchor[anchor_index]`` share their offset
    within a stream-aligned block, so one peel aligns both (and ``arr``'s last
    dimension is contiguous, as the anchor's is checked by ``aligned_start``).
    Only for arrays of one item size (`align_peel.plan_peels`): offsets of
    other sizes drift apart along the loop."""
    supported = is_element_access(arr, index) and is_element_access(anchor, anchor_index)

    def codegen(context, builder, sig, args):
        if not supported:
            return cgutils.false_bit
        mask = context.get_constant(types.intp, STREAM_ALIGN_BYTES - 1)
        a = builder.and_(element_address(context, builder, sig.args[0], args[0], sig.args[1], args[1]), mask)
        b = builder.and_(element_address(context, builder, sig.args[2], args[2], sig.args[3], args[3]), mask)
        contiguous = unit_inner_stride(context, builder, sig.args[0], args[0])
        return builder.and_(builder.icmp_unsigned("==", a, b), contiguous)

    return types.boolean(arr, index, anchor, anchor_index), codegen


# A load stream whose address trails a streamed store's by a few bytes modulo
# 4 KiB makes the loop's later loads look like reads of those stores still in
# flight (4K aliasing: the core compares the low 12 address bits), and a
# non-temporal store stays in flight until it reaches memory. Whether that
# stalls, and over how many bytes, is the machine profile's
# ``page_alias_bytes`` row (machine/profile.py: 192 on Zen 2, none on Zen 4 and Intel).


@intrinsic
def no_trailing_alias(typingctx, arr, index, anchor, anchor_index, distance):
    """False when ``arr[index]``, a load, lies 1 to ``distance`` bytes before
    the streamed store ``anchor[anchor_index]`` modulo a page."""
    supported = is_element_access(arr, index) and is_element_access(anchor, anchor_index)

    def codegen(context, builder, sig, args):
        if not supported:
            return cgutils.true_bit
        load = element_address(context, builder, sig.args[0], args[0], sig.args[1], args[1])
        store = element_address(context, builder, sig.args[2], args[2], sig.args[3], args[3])
        trail = builder.and_(builder.sub(store, load), load.type(PAGE_BYTES - 1))
        near = builder.icmp_unsigned("<", builder.sub(trail, trail.type(1)),
                                     context.cast(builder, args[4], sig.args[4], types.intp))
        return builder.not_(near)

    return types.boolean(arr, index, anchor, anchor_index, distance), codegen


@intrinsic
def is_stream_aligned(typingctx, arr, index):
    """True when ``arr[index]`` is stream-aligned and ``arr``'s last dimension
    contiguous, so it can be read through ``aligned_pointer``."""
    supported = is_element_access(arr, index)

    def codegen(context, builder, sig, args):
        if not supported:
            return cgutils.false_bit
        address = element_address(context, builder, sig.args[0], args[0], sig.args[1], args[1])
        low_bits = builder.and_(address, address.type(STREAM_ALIGN_BYTES - 1))
        aligned = builder.icmp_unsigned("==", low_bits, address.type(0))
        return builder.and_(aligned, unit_inner_stride(context, builder, sig.args[0], args[0]))

    return types.boolean(arr, index), codegen


@intrinsic
def rows_hold(typingctx, arr, nbytes):
    """True when a row of the array ``arr`` (its last dimension) holds
    ``nbytes`` bytes or more."""
    def codegen(context, builder, sig, args):
        row = array_shape(context, builder, arr, args[0])[-1]
        row_bytes = builder.mul(row, row.type(as_dtype(arr.dtype).itemsize))
        return builder.icmp_signed(">=", row_bytes, context.cast(builder, args[1], sig.args[1], types.intp))

    return types.boolean(arr, nbytes), codegen


@intrinsic
def inner_contiguous(typingctx, arr):
    """True when ``arr``'s last dimension is contiguous (or it is not an array)."""
    def codegen(context, builder, sig, args):
        if not isinstance(arr, types.Array):
            return cgutils.true_bit
        return unit_inner_stride(context, builder, arr, args[0])

    return types.boolean(arr), codegen


@intrinsic
def nbytes_of(typingctx, arr):
    """The bytes ``arr`` holds, 0 where it is not an array (a variable that
    holds arrays in turn): the size test adds these, where a tuple of the
    arrays would take and drop a reference to each."""
    def codegen(context, builder, sig, args):
        if not isinstance(arr, types.Array):
            return context.get_constant(types.intp, 0)
        return builder.mul(array_field(context, builder, arr, args[0], "nitems"),
                           array_field(context, builder, arr, args[0], "itemsize"))

    return types.intp(arr), codegen
