"""Whether a whole-array store or an array expression can run as an element
loop (`passes/array_stores.py`), the views of its operands, and one element
of an array expression computed as Numba's array expressions compute it."""

import operator

from numba import types
from numba.core import cgutils
from numba.core.imputils import impl_ret_borrowed
from numba.core.callconv import create_error_model
from numba.core.typing import signature
from numba.np.numpy_support import as_dtype

from .arrays import array_field, array_shape, call_numba_operation, spans_apart
from .registration import intrinsic


def _operand_fits(context, builder, arr, arr_value, value, value_value):
    """Whether ``value`` can be read element for element where ``arr`` is
    written: a scalar, or an array whose shape is the last ``value.ndim``
    extents of ``arr``'s (NumPy broadcasts it over the leading ones)."""
    if not isinstance(value, types.Array):
        return cgutils.true_bit
    if not 1 <= value.ndim <= arr.ndim:
        return cgutils.false_bit
    ok = cgutils.true_bit
    arr_shape = array_shape(context, builder, arr, arr_value)[arr.ndim - value.ndim:]
    for a, b in zip(arr_shape, array_shape(context, builder, value, value_value)):
        ok = builder.and_(ok, builder.icmp_signed("==", a, b))
    return ok


@intrinsic
def copies_elementwise(typingctx, row, value):
    """True when ``row[...] = value`` equals an element-by-element copy:
    ``value`` is a scalar, or an array of the row's trailing shape (NumPy
    broadcasts it over the leading dimensions) whose memory does not overlap
    the row's or is the very same elements (else NumPy semantics need a
    temporary copy, which Numba's own setitem makes)."""
    if not isinstance(row, types.Array):
        return None

    def codegen(context, builder, sig, args):
        ok = _operand_fits(context, builder, row, args[0], value, args[1])
        if not isinstance(value, types.Array) or not 1 <= value.ndim <= row.ndim:
            return ok
        apart = spans_apart(context, builder, row, args[0], value, args[1])
        if as_dtype(row.dtype).itemsize == as_dtype(value.dtype).itemsize and row.ndim == value.ndim:
            same = builder.icmp_unsigned("==", array_field(context, builder, row, args[0], "data"),
                                         array_field(context, builder, value, args[1], "data"))
            for a, b in zip(*(cgutils.unpack_tuple(builder, array_field(context, builder, t, v, "strides"), t.ndim)
                              for t, v in ((row, args[0]), (value, args[1])))):
                same = builder.and_(same, builder.icmp_signed("==", a, b))
            apart = builder.or_(apart, same)
        empty = cgutils.false_bit
        for n in array_shape(context, builder, row, args[0]):
            empty = builder.or_(empty, builder.icmp_signed("==", n, n.type(0)))
        return builder.and_(ok, builder.or_(apart, empty))

    return types.boolean(row, value), codegen


@intrinsic
def sliced(typingctx, arr, index):
    """``arr[index]`` for an index of slices without a step (``a[x:y, :]``),
    the view Numba's getitem makes (its start and stop clamped as
    ``slice.indices`` clamps them), in straight-line code: Numba's general
    slicing emits some 400 instructions per 3-D view (bounds for negative
    steps, error paths), and the views of a fused temporary's operands are
    many (68 in NPBench's hdiff)."""
    parts = list(index) if isinstance(index, types.BaseTuple) else [index]
    if not (isinstance(arr, types.Array) and 1 <= len(parts) <= arr.ndim
            and all(p == types.slice2_type for p in parts)):
        return None
    found = typingctx.resolve_function_type(operator.getitem, (arr, index), {})
    if found is None or not isinstance(found.return_type, types.Array) or found.return_type.ndim != arr.ndim:
        return None

    def codegen(context, builder, sig, args):
        values = cgutils.unpack_tuple(builder, args[1], len(parts)) if isinstance(index, types.BaseTuple) else [args[1]]
        shape = array_shape(context, builder, arr, args[0])
        strides = array_field(context, builder, arr, args[0], "strides")
        offset = shape[0].type(0)
        for d, value in enumerate(values):
            member = context.make_helper(builder, types.slice2_type, value)
            n, zero = shape[d], shape[d].type(0)
            bounds = []
            for bound in (member.start, member.stop):  # (Numba's fix_slice for a step of 1)
                bound = builder.select(builder.icmp_signed("<", bound, zero), builder.add(bound, n), bound)
                bound = builder.select(builder.icmp_signed("<", bound, zero), zero, bound)
                bounds.append(builder.select(builder.icmp_signed(">=", bound, n), n, bound))
            length = builder.sub(bounds[1], bounds[0])
            shape[d] = builder.select(builder.icmp_signed("<", length, zero), zero, length)
            offset = builder.add(offset, builder.mul(bounds[0], builder.extract_value(strides, d)))
        model = context.data_model_manager[sig.return_type]
        value = context.get_value_type(sig.return_type)(None)
        for name in ("meminfo", "parent", "itemsize", "strides"):
            value = builder.insert_value(value, array_field(context, builder, arr, args[0], name),
                                         model.get_field_position(name))
        nitems = shape[0]
        for n in shape[1:]:
            nitems = builder.mul(nitems, n)
        data = cgutils.pointer_add(builder, array_field(context, builder, arr, args[0], "data"), offset)
        value = builder.insert_value(value, nitems, model.get_field_position("nitems"))
        value = builder.insert_value(value, data, model.get_field_position("data"))
        value = builder.insert_value(value, cgutils.pack_array(builder, shape), model.get_field_position("shape"))
        return impl_ret_borrowed(context, builder, sig.return_type, value)

    return found.return_type(arr, index), codegen


@intrinsic
def leads(typingctx, arr, value):
    """True when the 1-D ``value`` can be read along ``arr``'s next-to-last
    dimension while ``arr`` is written (``np.outer``'s first operand): its
    length is that extent, and its memory does not overlap ``arr``'s (or
    ``arr`` is empty)."""
    if not (isinstance(arr, types.Array) and arr.ndim >= 2 and isinstance(value, types.Array) and value.ndim == 1):
        return None

    def codegen(context, builder, sig, args):
        shape = array_shape(context, builder, arr, args[0])
        ok = builder.icmp_signed("==", shape[-2], array_shape(context, builder, value, args[1])[0])
        apart = spans_apart(context, builder, arr, args[0], value, args[1])
        for n in shape:
            apart = builder.or_(apart, builder.icmp_signed("==", n, n.type(0)))
        return builder.and_(ok, apart)

    return types.boolean(arr, value), codegen


@intrinsic
def same_shape(typingctx, arr, value):
    """True when ``value`` is a scalar or an array of ``arr``'s trailing
    shape: an operand of an array expression whose result has ``arr``'s
    shape, read element for element (the result is a new array, so memory
    overlap does not matter)."""
    if not isinstance(arr, types.Array):
        return None

    def codegen(context, builder, sig, args):
        return _operand_fits(context, builder, arr, args[0], value, args[1])

    return types.boolean(arr, value), codegen


@intrinsic
def with_numpy_errors(typingctx, fn, *args):
    """``fn(*args)`` on scalars under NumPy's error model, as Numba computes
    each element of an array expression (``x / 0.0`` is inf, not
    ZeroDivisionError): a fused element loop gives the array expression's
    values and raises where it raises."""
    if not isinstance(fn, types.Function):
        return None
    inner = typingctx.resolve_function_type(fn, args, {})
    if inner is None:
        return None

    def codegen(context, builder, sig, values):
        numpy_model = context.subtarget(error_model=create_error_model("numpy", context))
        return call_numba_operation(numpy_model, builder, fn, inner, sig.args[1:], values[1:])

    return signature(inner.return_type, fn, *args), codegen


@intrinsic
def where_element(typingctx, cond, x, y):
    """One element of ``np.where(cond, x, y)``: ``x`` where ``cond`` is true,
    else ``y``, in the type the two unify to (the fused loop casts it to the
    dtype Numba's ``np.where`` gives its result)."""
    x, y = types.unliteral(x), types.unliteral(y)
    both = typingctx.unify_types(x, y)
    if not isinstance(both, (types.Number, types.Boolean)) or not isinstance(cond, (types.Number, types.Boolean)):
        return None

    def codegen(context, builder, sig, args):
        chosen = context.cast(builder, args[0], sig.args[0], types.boolean)
        return builder.select(chosen, context.cast(builder, args[1], sig.args[1], both),
                              context.cast(builder, args[2], sig.args[2], both))

    return signature(both, cond, x, y), codegen
