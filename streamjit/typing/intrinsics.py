"""The intrinsics the stream pass inserts into a kernel, typed for Numba.

The stream passes insert calls to these as globals in the IR. Each is a Numba
``@intrinsic``: typed and emitted inline in the kernel, with no helper
function to compile, link and inline (that kept first-call compile time
near plain ``numba.njit``).

- ``stream_load``: an element load with Numba's semantics, tagged as
  streamed (``stream_loads``) with how it is lowered (prefetch hint and
  distance, non-temporal or not: the machine profile's choice), for
  ``post_o3/nontemporal.py`` and ``post_o3/prefetch.py``.
- ``stream_store`` / ``direct_load`` / ``direct_stream_load``: array element
  access *without* Python's
  negative-index wraparound. The stream pass only calls them inside the
  aligned loop, whose index range it has checked to lie inside the array, so
  dropping wraparound is exact; it is also what lets LLVM see consecutive
  addresses and vectorize. ``stream_store`` writes through the aligned
  pointer and tags the store for ``post_o3/nontemporal.py``.
- ``unwrapped_load`` / ``unwrapped_store``: Numba's element access
  without wraparound, for indices proven never negative (the head loops).
- ``in_bounds``: the run-time check that licenses the two above;
  ``inner_contiguous``: that a view's rows are contiguous, so
  ``direct_load`` may step along them by the item size.
- ``not_a_load``: keeps a copy loop a loop (not ``memcpy``).
- ``aligned_start`` / ``same_alignment`` / ``aligned_pointer``: where the
  aligned loop starts, and the pointer its stores use, with the proof of
  its alignment handed to LLVM; ``is_stream_aligned`` / ``load_at``: the
  same for streamed sources that happen to be aligned too.
- ``exceeds``: whether the streamed arrays are above the size threshold.
- ``copies_elementwise`` / ``same_shape``: whether a whole-array
  store or an array expression can run as an element loop
  (``passes/array_stores.py``);
  ``with_numpy_errors``: one element of an array expression, computed as
  Numba's array expressions compute it.
- ``keep_scalar``: keeps a peeled head loop out of the vectorizer.
- ``store_fence``: the per-target store fence after a streamed loop nest.
- ``record_call``: counts, at a return, which path the call took
  (``passes/call_record.py``); ``opaque``: a value LLVM cannot fold.

Anything they cannot handle with certainty (non-array targets, partial
indices, a last dimension that is not contiguous at run time, unaligned
data) falls back to Numba's own indexing or to "no aligned loop", never to a
guessed alignment.
"""

import operator

import llvmlite.ir as llir
from numba import types
from numba.core import cgutils
from numba.core.callconv import create_error_model
from numba.core.typing import signature
from numba.np.arrayobj import fix_integer_index
from numba.np.numpy_support import as_dtype

from ..lowering.alignment import emit_alignment_promise
from ..lowering.keep_scalar import emit_keep_scalar
from ..lowering.markers import mark_streamed_load, mark_streamed_store
from ..lowering.targets import STREAM_ALIGN_BYTES, emit_store_fence
from .registration import intrinsic

_ELEMENT_TYPES = (types.Integer, types.Float, types.Complex, types.Boolean)


def _integer_indices(index):
    """Numba types of the index components, or None if not all integers."""
    parts = list(index) if isinstance(index, types.BaseTuple) else [index]
    if all(isinstance(p, types.Integer) for p in parts):
        return parts
    return None


def _is_element_access(arr, index):
    """True when ``arr[index]`` is a single element of a plain numeric array."""
    if not isinstance(arr, types.Array) or not isinstance(arr.dtype, _ELEMENT_TYPES):
        return False
    parts = _integer_indices(index)
    return parts is not None and len(parts) == arr.ndim


def _field(context, builder, aryty, ary_value, name):
    """One member of an array's struct value, read directly (cheaper to build
    and to optimize than Numba's struct proxy, which goes through memory)."""
    return builder.extract_value(ary_value, context.data_model_manager[aryty].get_field_position(name))


def _shape(context, builder, aryty, ary_value):
    return cgutils.unpack_tuple(builder, _field(context, builder, aryty, ary_value, "shape"), aryty.ndim)


def _unit_inner_stride(context, builder, aryty, ary_value):
    """True when the array's last dimension is contiguous (always, for 'C')."""
    if aryty.layout == "C":
        return cgutils.true_bit
    inner = cgutils.unpack_tuple(builder, _field(context, builder, aryty, ary_value, "strides"), aryty.ndim)[-1]
    return builder.icmp_signed("==", inner, inner.type(as_dtype(aryty.dtype).itemsize))


def _index_values(context, builder, idxty, idx_value):
    """The index components as intp values."""
    parts = _integer_indices(idxty)
    if isinstance(idxty, types.BaseTuple):
        values = cgutils.unpack_tuple(builder, idx_value, len(parts))
    else:
        values = [idx_value]
    return [context.cast(builder, v, t, types.intp) for v, t in zip(values, parts)]


def _item_pointer(context, builder, aryty, ary_value, inds, boundscheck=False):
    strides = cgutils.unpack_tuple(builder, _field(context, builder, aryty, ary_value, "strides"), aryty.ndim)
    return cgutils.get_item_pointer2(context, builder, _field(context, builder, aryty, ary_value, "data"),
                                     _shape(context, builder, aryty, ary_value), strides, aryty.layout, inds,
                                     wraparound=False, boundscheck=boundscheck)


def _element_pointer(context, builder, aryty, ary_value, idxty, idx_value):
    """Pointer to ``ary[idx]`` with no wraparound and no bounds check."""
    return _item_pointer(context, builder, aryty, ary_value, _index_values(context, builder, idxty, idx_value))


def _contiguous_row_pointer(context, builder, aryty, ary_value, idxty, idx_value):
    """`_element_pointer` for an array whose last dimension the caller
    checked is contiguous: the row is found through the strides, the
    element by an element-sized step LLVM can vectorize along (a view such
    as ``A[1:-1, :-2]`` has layout 'A'). Plain GEPs, no integer casts, so
    alias analysis keeps seeing the array."""
    inds = _index_values(context, builder, idxty, idx_value)
    data = _field(context, builder, aryty, ary_value, "data")
    if aryty.layout == "C" or aryty.ndim == 1 and aryty.layout != "A":
        return _item_pointer(context, builder, aryty, ary_value, inds)
    strides = cgutils.unpack_tuple(builder, _field(context, builder, aryty, ary_value, "strides"), aryty.ndim)
    row_offset = context.get_constant(types.intp, 0)
    for i, stride in zip(inds[:-1], strides[:-1]):
        row_offset = builder.add(row_offset, builder.mul(i, stride))
    byte_ptr = builder.bitcast(data, cgutils.voidptr_t)
    row = builder.bitcast(builder.gep(byte_ptr, [row_offset], inbounds=True), data.type)
    return cgutils.gep(builder, row, inds[-1], inbounds=True)


def _element_address(context, builder, aryty, ary_value, idxty, idx_value):
    ptr = _element_pointer(context, builder, aryty, ary_value, idxty, idx_value)
    return builder.ptrtoint(ptr, context.get_value_type(types.intp))


def _numba_operation(typingctx, op, argtys):
    """Numba's own signature for ``op(*argtys)`` (getitem/setitem), or None."""
    return typingctx.resolve_function_type(op, argtys, {})


def _call_numba_operation(context, builder, op, sig, actual_types, args):
    impl = context.get_function(op, sig)
    cast = [context.cast(builder, v, t, want) for v, t, want in zip(args, actual_types, sig.args)]
    return impl(builder, cast)


def _load_element(context, builder, aryty, ptr, marker):
    """Load one element; tag it with its lowering (`markers.load_marker`) unless None."""
    dtype = aryty.dtype
    raw = builder.load(ptr, align=None if aryty.aligned else 1)
    if marker is not None:
        mark_streamed_load(builder, raw, marker)
    return context.data_model_manager[dtype].from_data(builder, raw)


def _typed_load(typingctx, arr, index, element_codegen):
    """Signature and codegen of a load: ``element_codegen`` for a single
    element of a numeric array, Numba's own getitem for anything else."""
    if _is_element_access(arr, index):
        return arr.dtype(arr, index), element_codegen
    plain = _numba_operation(typingctx, operator.getitem, (arr, index))
    if plain is None:
        return None

    def codegen_plain(context, builder, sig, args):
        return _call_numba_operation(context, builder, operator.getitem, plain, sig.args[:2], args[:2])

    return plain.return_type(arr, index), codegen_plain


def _typed_stream_load(typingctx, arr, index, marker, element_codegen):
    """`_typed_load` for a load taking a literal ``marker`` too (how it is
    lowered, `markers.load_marker`); ``element_codegen(context, builder,
    sig, args, marker)``."""
    if not isinstance(marker, types.StringLiteral):
        return None
    m = marker.literal_value

    def codegen(context, builder, sig, args):
        return element_codegen(context, builder, sig, args, m)

    typed = _typed_load(typingctx, arr, index, codegen)
    return typed and (typed[0].return_type(arr, index, marker), typed[1])


@intrinsic
def direct_load(typingctx, arr, index):
    """``arr[index]``, without wraparound for a single element, in a row
    checked to be contiguous (``inner_contiguous``)."""
    def codegen(context, builder, sig, args):
        ptr = _contiguous_row_pointer(context, builder, sig.args[0], args[0], sig.args[1], args[1])
        return _load_element(context, builder, sig.args[0], ptr, None)

    return _typed_load(typingctx, arr, index, codegen)


@intrinsic
def unwrapped_load(typingctx, arr, index):
    """``arr[index]`` for an index proven never negative: Numba's element
    load without its negative-index wraparound (bounds checked when
    ``boundscheck`` is on), any layout."""
    def codegen(context, builder, sig, args):
        inds = _index_values(context, builder, sig.args[1], args[1])
        ptr = _item_pointer(context, builder, sig.args[0], args[0], inds, boundscheck=context.enable_boundscheck)
        return _load_element(context, builder, sig.args[0], ptr, None)

    return _typed_load(typingctx, arr, index, codegen)


@intrinsic
def unwrapped_store(typingctx, arr, index, value):
    """``arr[index] = value`` for an index proven never negative, as
    `unwrapped_load` loads."""
    if not (_is_element_access(arr, index) and arr.mutable and typingctx.can_convert(value, arr.dtype) is not None):
        return None

    def codegen(context, builder, sig, args):
        aryty, idxty, valty = sig.args
        inds = _index_values(context, builder, idxty, args[1])
        ptr = _item_pointer(context, builder, aryty, args[0], inds, boundscheck=context.enable_boundscheck)
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
        ptr = _contiguous_row_pointer(context, builder, sig.args[0], args[0], sig.args[1], args[1])
        return _load_element(context, builder, sig.args[0], ptr, m)

    return _typed_stream_load(typingctx, arr, index, marker, codegen)


@intrinsic(prefer_literal=True)
def stream_load(typingctx, arr, index, marker):
    """``arr[index]`` with Numba's semantics (negative indices wrap, bounds
    checked when ``boundscheck`` is on), tagged as a streamed load."""
    def codegen(context, builder, sig, args, m):
        aryty, idxty = sig.args[:2]
        parts = _integer_indices(idxty)
        values = cgutils.unpack_tuple(builder, args[1], len(parts)) if isinstance(idxty, types.BaseTuple) else [args[1]]
        shape = _shape(context, builder, aryty, args[0])
        inds = [fix_integer_index(context, builder, t, v, n) for t, v, n in zip(parts, values, shape)]
        ptr = _item_pointer(context, builder, aryty, args[0], inds, boundscheck=context.enable_boundscheck)
        return _load_element(context, builder, aryty, ptr, m)

    return _typed_stream_load(typingctx, arr, index, marker, codegen)


@intrinsic(prefer_literal=True)
def stream_store(typingctx, arr, index, value, base, offset, name):
    """``arr[index] = value``. For a supported array the store goes to
    ``base[offset]`` (the same element, addressed from the aligned pointer of
    ``aligned_pointer``) and is tagged as a non-temporal candidate of the
    array called ``name`` (a string literal)."""
    if not isinstance(name, types.StringLiteral):
        return None
    if (isinstance(base, types.CPointer) and _is_element_access(arr, index) and arr.mutable
            and typingctx.can_convert(value, arr.dtype) is not None):
        def codegen(context, builder, sig, args):
            ptrty, offty, valty = sig.args[3], sig.args[4], sig.args[2]
            ptr = cgutils.gep(builder, args[3], context.cast(builder, args[4], offty, types.intp))
            val = context.cast(builder, args[2], valty, ptrty.dtype)
            data = context.data_model_manager[ptrty.dtype].as_data(builder, val)
            mark_streamed_store(builder, builder.store(data, ptr), name.literal_value)
            return context.get_dummy_value()

        return types.none(arr, index, value, base, offset, name), codegen
    plain = _numba_operation(typingctx, operator.setitem, (arr, index, value))
    if plain is None:
        return None

    def codegen_plain(context, builder, sig, args):
        _call_numba_operation(context, builder, operator.setitem, plain, sig.args[:3], args[:3])
        return context.get_dummy_value()

    return types.none(arr, index, value, base, offset, name), codegen_plain


@intrinsic
def in_bounds(typingctx, arrays, first, last):
    """True when indices ``first`` and ``last`` both lie inside the array
    ``arrays`` (or inside each array of a tuple of them)."""
    parts = _integer_indices(first)
    members = list(arrays) if isinstance(arrays, types.BaseTuple) else [arrays]

    def inside(context, builder, aryty, ary_value, sig, args):
        if not isinstance(aryty, types.Array):
            return cgutils.true_bit  # not an array: its accesses keep Numba's semantics
        if parts is None or len(parts) > aryty.ndim:
            return cgutils.false_bit
        shape = _shape(context, builder, aryty, ary_value)
        ok = cgutils.true_bit
        for idx_type, idx_value in ((sig.args[1], args[1]), (sig.args[2], args[2])):
            for value, n in zip(_index_values(context, builder, idx_type, idx_value), shape):
                within = builder.and_(builder.icmp_signed(">=", value, value.type(0)),
                                      builder.icmp_signed("<", value, n))
                ok = builder.and_(ok, within)
        return ok

    def codegen(context, builder, sig, args):
        if isinstance(sig.args[0], types.BaseTuple):
            values = cgutils.unpack_tuple(builder, args[0], len(members))
        else:
            values = [args[0]]
        ok = cgutils.true_bit
        for aryty, value in zip(members, values):
            ok = builder.and_(ok, inside(context, builder, aryty, value, sig, args))
        return ok

    return types.boolean(arrays, first, last), codegen


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
    supported = _is_element_access(arr, at)

    def codegen(context, builder, sig, args):
        aryty, idxty, loty, hity = sig.args[:4]
        lo_v = context.cast(builder, args[2], loty, types.intp)
        hi_v = context.cast(builder, args[3], hity, types.intp)
        fallback = lo_v if reverse else hi_v
        if not supported:
            return fallback
        itemsize = as_dtype(aryty.dtype).itemsize
        lanes = STREAM_ALIGN_BYTES // itemsize
        address = _element_address(context, builder, aryty, args[0], idxty, args[1])
        long_enough = builder.icmp_signed(">=", builder.sub(hi_v, lo_v), lo_v.type(2 * lanes))
        element_aligned = builder.icmp_unsigned("==", builder.and_(address, address.type(itemsize - 1)),
                                                address.type(0))
        contiguous = _unit_inner_stride(context, builder, aryty, args[0])
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
    dimension is contiguous, as the anchor's is checked by ``aligned_start``)."""
    supported = _is_element_access(arr, index) and _is_element_access(anchor, anchor_index)

    def codegen(context, builder, sig, args):
        if not supported:
            return cgutils.false_bit
        mask = context.get_constant(types.intp, STREAM_ALIGN_BYTES - 1)
        a = builder.and_(_element_address(context, builder, sig.args[0], args[0], sig.args[1], args[1]), mask)
        b = builder.and_(_element_address(context, builder, sig.args[2], args[2], sig.args[3], args[3]), mask)
        contiguous = _unit_inner_stride(context, builder, sig.args[0], args[0])
        return builder.and_(builder.icmp_unsigned("==", a, b), contiguous)

    return types.boolean(arr, index, anchor, anchor_index), codegen


@intrinsic
def is_stream_aligned(typingctx, arr, index):
    """True when ``arr[index]`` is stream-aligned and ``arr``'s last dimension
    contiguous, so it can be read through ``aligned_pointer``."""
    supported = _is_element_access(arr, index)

    def codegen(context, builder, sig, args):
        if not supported:
            return cgutils.false_bit
        address = _element_address(context, builder, sig.args[0], args[0], sig.args[1], args[1])
        low_bits = builder.and_(address, address.type(STREAM_ALIGN_BYTES - 1))
        aligned = builder.icmp_unsigned("==", low_bits, address.type(0))
        return builder.and_(aligned, _unit_inner_stride(context, builder, sig.args[0], args[0]))

    return types.boolean(arr, index), codegen


@intrinsic(prefer_literal=True)
def load_at(typingctx, base, offset, marker):
    """``base[offset]`` through an aligned pointer, tagged as a streamed load
    lowered as ``marker`` says."""
    if not isinstance(base, types.CPointer) or not isinstance(marker, types.StringLiteral):
        return None
    m = marker.literal_value

    def codegen(context, builder, sig, args):
        ptr = cgutils.gep(builder, args[0], context.cast(builder, args[1], sig.args[1], types.intp))
        raw = builder.load(ptr)
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
    `llvm.assume` alignment bundle (``lowering/alignment.py``). Elements along
    the last dimension are then ``pointer[k]``: the caller checked that
    dimension is contiguous."""
    if not _is_element_access(arr, index):
        return types.intp(arr, index), lambda context, builder, sig, args: context.get_constant(types.intp, 0)

    def codegen(context, builder, sig, args):
        ptr = _element_pointer(context, builder, sig.args[0], args[0], sig.args[1], args[1])
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


@intrinsic
def inner_contiguous(typingctx, arr):
    """True when ``arr``'s last dimension is contiguous (or it is not an array)."""
    def codegen(context, builder, sig, args):
        if not isinstance(arr, types.Array):
            return cgutils.true_bit
        return _unit_inner_stride(context, builder, arr, args[0])

    return types.boolean(arr), codegen


@intrinsic
def exceeds(typingctx, threshold, arrays):
    """True when the arrays in the tuple ``arrays`` hold more than
    ``threshold`` bytes together (non-array members count 0)."""
    if not isinstance(arrays, types.BaseTuple) or not isinstance(threshold, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        total = context.get_constant(types.intp, 0)
        members = cgutils.unpack_tuple(builder, args[1], len(sig.args[1]))
        for member_type, member in zip(sig.args[1], members):
            if isinstance(member_type, types.Array):
                nitems = _field(context, builder, member_type, member, "nitems")
                total = builder.add(total, builder.mul(nitems, _field(context, builder, member_type, member, "itemsize")))
        limit = context.cast(builder, args[0], sig.args[0], types.intp)
        return builder.icmp_signed(">", total, limit)

    return types.boolean(threshold, arrays), codegen


@intrinsic
def keep_scalar(typingctx):
    """Keep the enclosing loop scalar (see ``lowering/keep_scalar.py``)."""
    def codegen(context, builder, sig, args):
        emit_keep_scalar(builder)
        return context.get_dummy_value()

    return signature(types.none), codegen


@intrinsic
def store_fence(typingctx):
    """Order this thread's streamed stores before anything that follows."""
    def codegen(context, builder, sig, args):
        emit_store_fence(builder, context.codegen()._tm.triple)
        return context.get_dummy_value()

    return signature(types.none), codegen


def _byte_span(context, builder, aryty, ary_value):
    """(lowest, highest + 1) byte address an array's elements occupy."""
    intp = context.get_value_type(types.intp)
    data = builder.ptrtoint(_field(context, builder, aryty, ary_value, "data"), intp)
    low = high = data
    strides = cgutils.unpack_tuple(builder, _field(context, builder, aryty, ary_value, "strides"), aryty.ndim)
    for n, stride in zip(_shape(context, builder, aryty, ary_value), strides):
        reach = builder.mul(builder.sub(n, n.type(1)), stride)
        negative = builder.icmp_signed("<", reach, reach.type(0))
        low = builder.add(low, builder.select(negative, reach, reach.type(0)))
        high = builder.add(high, builder.select(negative, reach.type(0), reach))
    return low, builder.add(high, intp(as_dtype(aryty.dtype).itemsize))


def _operand_fits(context, builder, arr, arr_value, value, value_value):
    """Whether ``value`` can be read element for element where ``arr`` is
    written: a scalar, or an array whose shape is the last ``value.ndim``
    extents of ``arr``'s (NumPy broadcasts it over the leading ones)."""
    if not isinstance(value, types.Array):
        return cgutils.true_bit
    if not 1 <= value.ndim <= arr.ndim:
        return cgutils.false_bit
    ok = cgutils.true_bit
    arr_shape = _shape(context, builder, arr, arr_value)[arr.ndim - value.ndim:]
    for a, b in zip(arr_shape, _shape(context, builder, value, value_value)):
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
        row_low, row_high = _byte_span(context, builder, row, args[0])
        value_low, value_high = _byte_span(context, builder, value, args[1])
        apart = builder.or_(builder.icmp_unsigned("<=", row_high, value_low),
                            builder.icmp_unsigned("<=", value_high, row_low))
        if as_dtype(row.dtype).itemsize == as_dtype(value.dtype).itemsize and row.ndim == value.ndim:
            same = builder.icmp_unsigned("==", _field(context, builder, row, args[0], "data"),
                                         _field(context, builder, value, args[1], "data"))
            for a, b in zip(*(cgutils.unpack_tuple(builder, _field(context, builder, t, v, "strides"), t.ndim)
                              for t, v in ((row, args[0]), (value, args[1])))):
                same = builder.and_(same, builder.icmp_signed("==", a, b))
            apart = builder.or_(apart, same)
        empty = cgutils.false_bit
        for n in _shape(context, builder, row, args[0]):
            empty = builder.or_(empty, builder.icmp_signed("==", n, n.type(0)))
        return builder.and_(ok, builder.or_(apart, empty))

    return types.boolean(row, value), codegen


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
        return _call_numba_operation(numpy_model, builder, fn, inner, sig.args[1:], values[1:])

    return signature(inner.return_type, fn, *args), codegen


@intrinsic
def opaque(typingctx, flag):
    """``flag``, through an empty inline assembly block LLVM cannot see
    into: where the call record's flags are known (False at entry, the
    aligned loop's test), LLVM would duplicate the blocks after a branch on
    them (the store fence after a nest) to fold them."""
    if not isinstance(flag, types.Boolean):
        return None

    def codegen(context, builder, sig, args):
        byte = llir.IntType(8)
        hidden = builder.asm(llir.FunctionType(byte, [byte]), "", "=r,0", [builder.zext(args[0], byte)], False)
        return builder.trunc(hidden, llir.IntType(1))

    return types.boolean(flag), codegen


# The paths `record_call` counts, in the order of its counters.
CALL_PATHS = ("streamed", "below_threshold", "after_check", "plain")


@intrinsic(prefer_literal=True)
def record_call(typingctx, name, streamed, large, fell):
    """Add one to counter ``CALL_PATHS.index(path)`` of the module global
    ``name`` (an ``[n x i64]``, zero at load, read by the dispatcher):
    ``streamed`` (an aligned loop ran), else ``below_threshold`` (not
    ``large``), else ``after_check`` (``fell``: a run-time check sent a
    loop to its plain version), else ``plain``."""
    if not isinstance(name, types.StringLiteral):
        return None

    def codegen(context, builder, sig, args):
        counters = builder.module.globals.get(name.literal_value)
        if counters is None:
            ty = llir.ArrayType(llir.IntType(64), len(CALL_PATHS))
            counters = llir.GlobalVariable(builder.module, ty, name.literal_value)
            counters.initializer = ty(None)
            counters.linkage = "linkonce_odr"  # (one counter where a caller links this kernel in)
        i64 = llir.IntType(64)
        _, ran, large_value, fell_value = args
        path = builder.select(ran, i64(0), builder.select(large_value, builder.select(fell_value, i64(2), i64(3)),
                                                          i64(1)))
        slot = builder.gep(counters, [llir.IntType(32)(0), path])
        builder.store(builder.add(builder.load(slot), i64(1)), slot)
        return context.get_dummy_value()

    return signature(types.none, name, types.boolean, types.boolean, types.boolean), codegen
