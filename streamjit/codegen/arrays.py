"""Helpers the intrinsics share, run while Numba emits LLVM IR: an array's
fields, shape and element pointers (as Numba computes them), typed element
loads, and Numba's own implementation of an operation, called in place."""

import operator
from numba import types
from numba.core import cgutils
from numba.np.numpy_support import as_dtype

from ..protocol.markers import mark_streamed_load


ELEMENT_TYPES = (types.Integer, types.Float, types.Complex, types.Boolean)


def integer_indices(index):
    """Numba types of the index components, or None if not all integers."""
    parts = list(index) if isinstance(index, types.BaseTuple) else [index]
    if all(isinstance(p, types.Integer) for p in parts):
        return parts
    return None


def is_element_access(arr, index):
    """True when ``arr[index]`` is a single element of a plain numeric array."""
    if not isinstance(arr, types.Array) or not isinstance(arr.dtype, ELEMENT_TYPES):
        return False
    parts = integer_indices(index)
    return parts is not None and len(parts) == arr.ndim


def array_field(context, builder, aryty, ary_value, name):
    """One member of an array's struct value, read directly (cheaper to build
    and to optimize than Numba's struct proxy, which goes through memory)."""
    return builder.extract_value(ary_value, context.data_model_manager[aryty].get_field_position(name))


def array_shape(context, builder, aryty, ary_value):
    """The array's shape as a list of intp values, one per dimension."""
    return cgutils.unpack_tuple(builder, array_field(context, builder, aryty, ary_value, "shape"), aryty.ndim)


def unit_inner_stride(context, builder, aryty, ary_value):
    """True when the array's last dimension is contiguous (always, for 'C')."""
    if aryty.layout == "C":
        return cgutils.true_bit
    inner = cgutils.unpack_tuple(builder, array_field(context, builder, aryty, ary_value, "strides"), aryty.ndim)[-1]
    return builder.icmp_signed("==", inner, inner.type(as_dtype(aryty.dtype).itemsize))


def index_values(context, builder, idxty, idx_value):
    """The index components as intp values."""
    parts = integer_indices(idxty)
    if isinstance(idxty, types.BaseTuple):
        values = cgutils.unpack_tuple(builder, idx_value, len(parts))
    else:
        values = [idx_value]
    return [context.cast(builder, v, t, types.intp) for v, t in zip(values, parts)]


def item_pointer(context, builder, aryty, ary_value, inds, boundscheck=False):
    """Pointer to the element at the intp indices ``inds``, computed as Numba computes it
    (`cgutils.get_item_pointer2`) but without negative-index wraparound; bounds-checked only
    with ``boundscheck``."""
    strides = cgutils.unpack_tuple(builder, array_field(context, builder, aryty, ary_value, "strides"), aryty.ndim)
    return cgutils.get_item_pointer2(context, builder, array_field(context, builder, aryty, ary_value, "data"),
                                     array_shape(context, builder, aryty, ary_value), strides, aryty.layout, inds,
                                     wraparound=False, boundscheck=boundscheck)


def element_pointer(context, builder, aryty, ary_value, idxty, idx_value):
    """Pointer to ``ary[idx]`` with no wraparound and no bounds check."""
    return item_pointer(context, builder, aryty, ary_value, index_values(context, builder, idxty, idx_value))


def contiguous_row_pointer(context, builder, aryty, ary_value, idxty, idx_value):
    """`element_pointer` for an array whose last dimension the caller
    checked is contiguous: the row is found through the strides, the
    element by an element-sized step LLVM can vectorize along (a view such
    as ``A[1:-1, :-2]`` has layout 'A'). Plain GEPs, no integer casts, so
    alias analysis keeps seeing the array."""
    inds = index_values(context, builder, idxty, idx_value)
    data = array_field(context, builder, aryty, ary_value, "data")
    if aryty.layout == "C" or aryty.ndim == 1 and aryty.layout != "A":
        return item_pointer(context, builder, aryty, ary_value, inds)
    strides = cgutils.unpack_tuple(builder, array_field(context, builder, aryty, ary_value, "strides"), aryty.ndim)
    row_offset = context.get_constant(types.intp, 0)
    for i, stride in zip(inds[:-1], strides[:-1]):
        row_offset = builder.add(row_offset, builder.mul(i, stride))
    byte_ptr = builder.bitcast(data, cgutils.voidptr_t)
    row = builder.bitcast(builder.gep(byte_ptr, [row_offset], inbounds=True), data.type)
    return cgutils.gep(builder, row, inds[-1], inbounds=True)


def element_address(context, builder, aryty, ary_value, idxty, idx_value):
    """The address of ``ary[idx]`` as an intp (`element_pointer`, no wraparound, no bounds check)."""
    ptr = element_pointer(context, builder, aryty, ary_value, idxty, idx_value)
    return builder.ptrtoint(ptr, context.get_value_type(types.intp))


def byte_span(context, builder, aryty, ary_value):
    """(lowest, highest + 1) byte address an array's elements occupy."""
    intp = context.get_value_type(types.intp)
    data = builder.ptrtoint(array_field(context, builder, aryty, ary_value, "data"), intp)
    low = high = data
    strides = cgutils.unpack_tuple(builder, array_field(context, builder, aryty, ary_value, "strides"), aryty.ndim)
    for n, stride in zip(array_shape(context, builder, aryty, ary_value), strides):
        reach = builder.mul(builder.sub(n, n.type(1)), stride)
        negative = builder.icmp_signed("<", reach, reach.type(0))
        low = builder.add(low, builder.select(negative, reach, reach.type(0)))
        high = builder.add(high, builder.select(negative, reach.type(0), reach))
    return low, builder.add(high, intp(as_dtype(aryty.dtype).itemsize))


def spans_apart(context, builder, a_type, a, b_type, b):
    """Whether two arrays' `byte_span` share no byte."""
    (a_low, a_high), (b_low, b_high) = byte_span(context, builder, a_type, a), byte_span(context, builder, b_type, b)
    return builder.or_(builder.icmp_unsigned("<=", a_high, b_low), builder.icmp_unsigned("<=", b_high, a_low))


def numba_operation(typingctx, op, argtys):
    """Numba's own signature for ``op(*argtys)`` (getitem/setitem), or None."""
    return typingctx.resolve_function_type(op, argtys, {})


def call_numba_operation(context, builder, op, sig, actual_types, args):
    """Call Numba's own implementation of ``op`` for signature ``sig`` in place, the arguments (of
    ``actual_types``) cast to the signature's types first; returns its value."""
    impl = context.get_function(op, sig)
    cast = [context.cast(builder, v, t, want) for v, t, want in zip(args, actual_types, sig.args)]
    return impl(builder, cast)


def load_element(context, builder, aryty, ptr, marker):
    """Load one element; tag it with its lowering (`markers.load_marker`) unless None."""
    dtype = aryty.dtype
    raw = builder.load(ptr, align=None if aryty.aligned else 1)
    if marker is not None:
        mark_streamed_load(builder, raw, marker)
    return context.data_model_manager[dtype].from_data(builder, raw)


def typed_load(typingctx, arr, index, element_codegen):
    """Signature and codegen of a load: ``element_codegen`` for a single
    element of a numeric array, Numba's own getitem for anything else."""
    if is_element_access(arr, index):
        return arr.dtype(arr, index), element_codegen
    plain = numba_operation(typingctx, operator.getitem, (arr, index))
    if plain is None:
        return None

    def codegen_plain(context, builder, sig, args):
        return call_numba_operation(context, builder, operator.getitem, plain, sig.args[:2], args[:2])

    return plain.return_type(arr, index), codegen_plain


def typed_stream_load(typingctx, arr, index, marker, element_codegen):
    """`typed_load` for a load taking a literal ``marker`` too (how it is
    lowered, `markers.load_marker`); ``element_codegen(context, builder,
    sig, args, marker)``."""
    if not isinstance(marker, types.StringLiteral):
        return None
    m = marker.literal_value

    def codegen(context, builder, sig, args):
        return element_codegen(context, builder, sig, args, m)

    typed = typed_load(typingctx, arr, index, codegen)
    return typed and (typed[0].return_type(arr, index, marker), typed[1])
