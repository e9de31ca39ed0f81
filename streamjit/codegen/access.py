"""The element accesses the stream passes insert: loads and stores without
Numba's wraparound (where the index is proven in range or never
negative), streamed stores and loads carrying their marks for the post-O3
stages, the aligned pointer with its alignment promise, and ``not_a_load``."""

import operator

import llvmlite.ir as llir
from numba import types
from numba.core import cgutils
from numba.np.arrayobj import fix_integer_index

from ..protocol.alignment import emit_alignment_promise
from ..protocol.markers import mark_streamed_load, mark_streamed_store
from .arrays import (array_shape, call_numba_operation, contiguous_row_pointer, element_pointer, index_values,
                     integer_indices, is_element_access, item_pointer, load_element, numba_operation, typed_load,
                     typed_stream_load)
from .registration import intrinsic


@intrinsic
def direct_load(typingctx, arr, index):
    """``arr[index]``, without wraparound for a single element, in a row
    checked to be contiguous (``inner_contiguous``)."""
    def codegen(context, builder, sig, args):
        ptr = contiguous_row_pointer(context, builder, sig.args[0], args[0], sig.args[1], args[1])
        return load_element(context, builder, sig.args[0], ptr, None)

    return typed_load(typingctx, arr, index, codegen)


@intrinsic
def unwrapped_load(typingctx, arr, index):
    """``arr[index]`` for an index proven never negative: Numba's element
    load without its negative-index wraparound (bounds checked when
    ``boundscheck`` is on), any layout."""
    def codegen(context, builder, sig, args):
        inds = index_values(context, builder, sig.args[1], args[1])
        ptr = item_pointer(context, builder, sig.args[0], args[0], inds, boundscheck=context.enable_boundscheck)
        return load_element(context, builder, sig.args[0], ptr, None)

    return typed_load(typingctx, arr, index, codegen)


@intrinsic
def unwrapped_store(typingctx, arr, index, value):
    """``arr[index] = value`` for an index proven never negative, as
    `unwrapped_load` loads."""
    if not (is_element_access(arr, index) and arr.mutable and typingctx.can_convert(value, arr.dtype) is not None):
        return None

    def codegen(context, builder, sig, args):
        aryty, idxty, valty = sig.args
        inds = index_values(context, builder, idxty, args[1])
        ptr = item_pointer(context, builder, aryty, args[0], inds, boundscheck=context.enable_boundscheck)
        data = context.data_model_manager[aryty.dtype].as_data(builder, context.cast(builder, args[2], valty,
                                                                                      aryty.dtype))
        builder.store(data, ptr, align=None if aryty.aligned else 1)
        return context.get_dummy_value()

    return types.none(arr, index, value), codegen


@intrinsic(prefer_literal=True)
def direct_stream_load(typingctx, arr, index, marker):
    """``direct_load`` tagged with its lowering ``marker`` (a streamed load,
    or the prefetched source of a streamed store)."""
    def codegen(context, builder, sig, args, m):
        ptr = contiguous_row_pointer(context, builder, sig.args[0], args[0], sig.args[1], args[1])
        return load_element(context, builder, sig.args[0], ptr, m)

    return typed_stream_load(typingctx, arr, index, marker, codegen)


@intrinsic(prefer_literal=True)
def stream_load(typingctx, arr, index, marker):
    """``arr[index]`` with Numba's semantics (negative indices wrap, bounds
    checked when ``boundscheck`` is on), tagged as a streamed load."""
    def codegen(context, builder, sig, args, m):
        aryty, idxty = sig.args[:2]
        parts = integer_indices(idxty)
        values = cgutils.unpack_tuple(builder, args[1], len(parts)) if isinstance(idxty, types.BaseTuple) else [args[1]]
        shape = array_shape(context, builder, aryty, args[0])
        inds = [fix_integer_index(context, builder, t, v, n) for t, v, n in zip(parts, values, shape)]
        ptr = item_pointer(context, builder, aryty, args[0], inds, boundscheck=context.enable_boundscheck)
        return load_element(context, builder, aryty, ptr, m)

    return typed_stream_load(typingctx, arr, index, marker, codegen)


@intrinsic(prefer_literal=True)
def stream_store(typingctx, arr, index, value, base, offset, marker):
    """``arr[index] = value``. For a supported array the store goes to
    ``base[offset]`` (the same element, addressed from the aligned pointer of
    ``aligned_pointer``) and is tagged as a non-temporal candidate as
    ``marker`` (a string literal, `protocol.markers.store_marker`) says."""
    if not isinstance(marker, types.StringLiteral):
        return None
    if (isinstance(base, types.CPointer) and is_element_access(arr, index) and arr.mutable
            and typingctx.can_convert(value, arr.dtype) is not None):
        def codegen(context, builder, sig, args):
            stored = _store_through(context, builder, sig.args[3], args[3], sig.args[4], args[4], sig.args[2], args[2])
            mark_streamed_store(builder, stored, marker.literal_value)
            return context.get_dummy_value()

        return types.none(arr, index, value, base, offset, marker), codegen
    plain = numba_operation(typingctx, operator.setitem, (arr, index, value))
    if plain is None:
        return None

    def codegen_plain(context, builder, sig, args):
        call_numba_operation(context, builder, operator.setitem, plain, sig.args[:3], args[:3])
        return context.get_dummy_value()

    return types.none(arr, index, value, base, offset, marker), codegen_plain


def _pointer_at(context, builder, base, offset_type, offset):
    return cgutils.gep(builder, base, context.cast(builder, offset, offset_type, types.intp))


def _store_through(context, builder, pointer_type, base, offset_type, offset, value_type, value):
    """``base[offset] = value`` (``base`` a ``CPointer``); returns the store."""
    val = context.cast(builder, value, value_type, pointer_type.dtype)
    data = context.data_model_manager[pointer_type.dtype].as_data(builder, val)
    return builder.store(data, _pointer_at(context, builder, base, offset_type, offset))


@intrinsic
def buffer_store(typingctx, base, offset, value):
    """``base[offset] = value``: a plain store through a pointer (into a
    staging buffer, `passes/staging.py`)."""
    if not (isinstance(base, types.CPointer) and typingctx.can_convert(value, base.dtype) is not None):
        return None

    def codegen(context, builder, sig, args):
        _store_through(context, builder, sig.args[0], args[0], sig.args[1], args[1], sig.args[2], args[2])
        return context.get_dummy_value()

    return types.none(base, offset, value), codegen


@intrinsic(prefer_literal=True)
def load_at(typingctx, base, offset, marker):
    """``base[offset]`` through a pointer: an aligned source's, tagged as a
    streamed load lowered as ``marker`` says, or (``marker`` None) a plain
    load (out of a staging buffer)."""
    if not isinstance(base, types.CPointer) or not isinstance(marker, (types.StringLiteral, types.NoneType)):
        return None
    m = getattr(marker, "literal_value", None)

    def codegen(context, builder, sig, args):
        raw = builder.load(_pointer_at(context, builder, args[0], sig.args[1], args[1]))
        if m is not None:
            mark_streamed_load(builder, raw, m)
        return context.data_model_manager[sig.args[0].dtype].from_data(builder, raw)

    return base.dtype(base, offset, marker), codegen


@intrinsic
def aligned_pointer(typingctx, arr, index):
    """Pointer to ``arr[index]``, promised to LLVM to be stream-aligned (the
    caller checked it); stores of the aligned loop are addressed from it.

    The pointer is laundered so LLVM keeps it as the one base of the loop's
    addresses instead of re-deriving them from the array's data pointer
    (through phis the alignment proof cannot see into); the promise is an
    `llvm.assume` alignment bundle (``protocol/alignment.py``). Elements along
    the last dimension are then ``pointer[k]``: the caller checked that
    dimension is contiguous."""
    if not is_element_access(arr, index):
        return types.intp(arr, index), lambda context, builder, sig, args: context.get_constant(types.intp, 0)

    def codegen(context, builder, sig, args):
        ptr = element_pointer(context, builder, sig.args[0], args[0], sig.args[1], args[1])
        return emit_alignment_promise(builder, ptr)

    return types.CPointer(arr.dtype)(arr, index), codegen


@intrinsic
def not_a_load(typingctx, value):
    """``value``, through LLVM's ``freeze``: the same bits, but no longer a
    load. For a loop that stores what it loads (a copy), LLVM's loop idiom
    pass would call ``memcpy`` instead when it can prove the arrays apart (a
    ``prange`` worker's arguments are ``noalias``), dropping the streamed
    stores; it only does so when the stored value is the load itself. Other
    values pass as they are (a frozen struct would not split into lanes)."""
    def codegen(context, builder, sig, args):
        if not isinstance(args[0].type, (llir.IntType, llir.FloatType, llir.DoubleType)):
            return args[0]
        frozen = llir.Instruction(builder.block, args[0].type, "freeze", [args[0]])
        builder._insert(frozen)
        return frozen

    return value(value), codegen
