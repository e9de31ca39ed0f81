"""The staging buffer of a streamed loop whose sources trail its stores
modulo 4 KiB (`passes/staging.py`): where the buffer lies, the plain
stores and loads that fill and drain it, and the per-call check that
staging cannot change a result."""

import llvmlite.ir as llir
from numba import types
from numba.core import cgutils

from .arrays import array_field, byte_span, element_address, is_element_access
from ..protocol.targets import PAGE_BYTES
from .registration import intrinsic

# The buffer lies half a page from the destination modulo 4 KiB: its
# stores and loads then neither trail the sources (a few bytes behind the
# destination, the reason for staging) nor the destination's streamed stores.
_HALF_PAGE = PAGE_BYTES // 2
_LINE_BYTES = 64


@intrinsic(prefer_literal=True)
def staging_buffer(typingctx, arr, index, size):
    """A pointer to ``size`` bytes (an integer literal) of the stack,
    cache-line aligned, whose address is half a page past ``arr[index]``'s
    modulo 4 KiB (within a line). One buffer per call site, allocated in the
    function's entry block: a loop that asks for it again reuses it."""
    if not (isinstance(size, types.IntegerLiteral) and is_element_access(arr, index)):
        return None
    nbytes = size.literal_value

    def codegen(context, builder, sig, args):
        i8, intp = llir.IntType(8), context.get_value_type(types.intp)
        raw = cgutils.alloca_once(builder, llir.ArrayType(i8, nbytes + PAGE_BYTES))
        raw.align = _LINE_BYTES
        start = builder.bitcast(raw, i8.as_pointer())
        target = element_address(context, builder, sig.args[0], args[0], sig.args[1], args[1])
        skip = builder.sub(builder.add(target, intp(_HALF_PAGE)), builder.ptrtoint(start, intp))
        skip = builder.and_(skip, intp(PAGE_BYTES - _LINE_BYTES))
        return builder.bitcast(builder.gep(start, [skip]), context.get_value_type(arr.dtype).as_pointer())

    return types.CPointer(arr.dtype)(arr, index, size), codegen


@intrinsic
def buffer_store(typingctx, base, offset, value):
    """``base[offset] = value``: a plain store into a staging buffer."""
    if not (isinstance(base, types.CPointer) and typingctx.can_convert(value, base.dtype) is not None):
        return None

    def codegen(context, builder, sig, args):
        ptr = cgutils.gep(builder, args[0], context.cast(builder, args[1], sig.args[1], types.intp))
        val = context.cast(builder, args[2], sig.args[2], base.dtype)
        builder.store(context.data_model_manager[base.dtype].as_data(builder, val), ptr)
        return context.get_dummy_value()

    return types.none(base, offset, value), codegen


@intrinsic
def buffer_load(typingctx, base, offset):
    """``base[offset]``: a plain load from a staging buffer."""
    if not isinstance(base, types.CPointer):
        return None

    def codegen(context, builder, sig, args):
        ptr = cgutils.gep(builder, args[0], context.cast(builder, args[1], sig.args[1], types.intp))
        return context.data_model_manager[base.dtype].from_data(builder, builder.load(ptr))

    return base.dtype(base, offset), codegen


@intrinsic
def disjoint(typingctx, a, b):
    """True when arrays ``a`` and ``b`` share no byte (or either is empty);
    True for non-arrays."""
    def codegen(context, builder, sig, args):
        if not (isinstance(a, types.Array) and isinstance(b, types.Array)):
            return cgutils.true_bit
        spans = [byte_span(context, builder, t, v) for t, v in zip(sig.args, args)]
        empty = cgutils.false_bit
        for t, v in zip(sig.args, args):
            nitems = array_field(context, builder, t, v, "nitems")
            empty = builder.or_(empty, builder.icmp_signed("==", nitems, nitems.type(0)))
        (a_low, a_high), (b_low, b_high) = spans
        apart = builder.or_(builder.icmp_unsigned("<=", a_high, b_low), builder.icmp_unsigned("<=", b_high, a_low))
        return builder.or_(apart, empty)

    return types.boolean(a, b), codegen
