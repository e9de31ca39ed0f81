"""The staging buffer of a streamed loop whose sources trail its stores
modulo 4 KiB (`passes/staging.py`): where the buffer lies, the plain
slots it is cut into, and the per-call check that staging cannot change a
result (its plain stores and loads: `access.buffer_store`, `access.load_at`)."""

import llvmlite.ir as llir
from numba import types
from numba.core import cgutils

from .arrays import array_field, element_address, is_element_access, spans_apart
from ..protocol.targets import PAGE_BYTES
from .registration import intrinsic

# The buffer lies half a page from the destination modulo 4 KiB: its
# stores and loads then neither trail the sources (a few bytes behind the
# destination, the reason for staging) nor the destination's streamed stores.
_HALF_PAGE = PAGE_BYTES // 2
_LINE_BYTES = 64


def _slot_stride(slot_bytes):
    """Slot starts a whole number of pages apart: each keeps its placement."""
    return -(-slot_bytes // PAGE_BYTES) * PAGE_BYTES


@intrinsic(prefer_literal=True)
def staging_region(typingctx, slot_bytes):
    """Stack memory for two staging slots of ``slot_bytes`` (an integer
    literal) each, wherever `staging_slot` places them: allocated once, in
    the function's entry block, however often the loop asks for a slot."""
    if not isinstance(slot_bytes, types.IntegerLiteral):
        return None
    nbytes = 2 * _slot_stride(slot_bytes.literal_value) + PAGE_BYTES  # (a multiple of 8)

    def codegen(context, builder, sig, args):
        i8 = llir.IntType(8)
        # (words, counted: InstCombine took 5 s over an [n x i8] array of this size)
        region = cgutils.alloca_once(builder, llir.IntType(64), size=context.get_constant(types.intp, nbytes // 8))
        region.align = _LINE_BYTES
        return builder.bitcast(region, i8.as_pointer())

    return types.CPointer(types.uint8)(slot_bytes), codegen


@intrinsic(prefer_literal=True)
def staging_slot(typingctx, region, arr, index, slot, slot_bytes):
    """Slot ``slot`` (0 or 1) of a `staging_region`, for the strip of
    ``arr`` starting at ``arr[index]``: cache-line aligned, half a page past
    that element's address modulo 4 KiB (within a line). The same strip and
    slot give the same pointer."""
    if not (isinstance(slot_bytes, types.IntegerLiteral) and is_element_access(arr, index)
            and isinstance(region, types.CPointer) and isinstance(slot, types.Integer)):
        return None
    stride = _slot_stride(slot_bytes.literal_value)

    def codegen(context, builder, sig, args):
        intp = context.get_value_type(types.intp)
        start = args[0]
        target = element_address(context, builder, sig.args[1], args[1], sig.args[2], args[2])
        skip = builder.sub(builder.add(target, intp(_HALF_PAGE)), builder.ptrtoint(start, intp))
        skip = builder.and_(skip, intp(PAGE_BYTES - _LINE_BYTES))
        skip = builder.add(skip, builder.mul(context.cast(builder, args[3], sig.args[3], types.intp), intp(stride)))
        return builder.bitcast(builder.gep(start, [skip]), context.get_data_type(arr.dtype).as_pointer())

    return types.CPointer(arr.dtype)(region, arr, index, slot, slot_bytes), codegen


@intrinsic
def disjoint(typingctx, a, b):
    """True when arrays ``a`` and ``b`` share no byte (or either is empty);
    True for non-arrays."""
    def codegen(context, builder, sig, args):
        if not (isinstance(a, types.Array) and isinstance(b, types.Array)):
            return cgutils.true_bit
        empty = cgutils.false_bit
        for t, v in zip(sig.args, args):
            nitems = array_field(context, builder, t, v, "nitems")
            empty = builder.or_(empty, builder.icmp_signed("==", nitems, nitems.type(0)))
        return builder.or_(spans_apart(context, builder, a, args[0], b, args[1]), empty)

    return types.boolean(a, b), codegen
