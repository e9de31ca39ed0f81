"""The functions the stream pass inserts into a kernel, typed for Numba.

The rewritten kernel calls these through a closure variable; each one is a
plain Python function (its meaning when run uninterpreted) with a Numba
overload or intrinsic that does the real work:

- ``stream_store`` / ``direct_load``: array element access *without* Python's
  negative-index wraparound. The stream pass only calls them inside the
  aligned loop, whose index range it has checked to lie inside the array, so
  dropping wraparound is exact; it is also what lets LLVM see consecutive
  addresses and vectorize. ``stream_store`` tags the store for
  ``lowering/nontemporal.py``.
- ``in_bounds``: the run-time check that licenses the two above.
- ``aligned_start`` / ``same_alignment`` / ``aligned_pointer``: where the
  aligned loop starts, and the pointer its stores use, with the proof of
  its alignment handed to LLVM.
- ``store_fence``: the per-target store fence after a streamed loop nest.

Anything they cannot handle with certainty (non-array targets, partial
indices, non-contiguous layouts, unaligned data) falls back to NumPy
semantics or to "no aligned loop", never to a guessed alignment.
"""

import llvmlite.ir as llir
from numba import types
from numba.core import cgutils
from numba.core.registry import cpu_target
from numba.extending import intrinsic, overload, register_jitable
from numba.np.arrayobj import make_array
from numba.np.numpy_support import as_dtype

from ..lowering.alignment import emit_alignment_promise
from ..lowering.markers import mark_streamed_store
from ..lowering.targets import STREAM_ALIGN_BYTES, emit_store_fence

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


def _element_pointer(context, builder, aryty, ary_value, idxty, idx_value):
    """Pointer to ``ary[idx]`` with no wraparound and no bounds check."""
    ary = make_array(aryty)(context, builder, ary_value)
    parts = _integer_indices(idxty)
    values = cgutils.unpack_tuple(builder, idx_value, len(parts)) if isinstance(idxty, types.BaseTuple) else [idx_value]
    inds = [context.cast(builder, v, t, types.intp) for v, t in zip(values, parts)]
    return cgutils.get_item_pointer(context, builder, aryty, ary, inds, wraparound=False)


def stream_store(arr, index, value, base, offset):
    """``arr[index] = value``. When compiled for a supported array, the store
    goes to ``base[offset]`` (the same element, addressed from the aligned
    pointer of ``aligned_pointer``) and is a non-temporal candidate."""
    arr[index] = value


def direct_load(arr, index):
    """``arr[index]``; without wraparound when compiled."""
    return arr[index]


@intrinsic
def _store_at(typingctx, base, offset, value):
    def codegen(context, builder, sig, args):
        ptrty, offty, valty = sig.args
        ptr = cgutils.gep(builder, args[0], context.cast(builder, args[1], offty, types.intp))
        val = context.cast(builder, args[2], valty, ptrty.dtype)
        data = context.data_model_manager[ptrty.dtype].as_data(builder, val)
        mark_streamed_store(builder, builder.store(data, ptr))
        return context.get_dummy_value()

    return types.none(base, offset, value), codegen


@intrinsic
def _load_element(typingctx, arr, index):
    def codegen(context, builder, sig, args):
        aryty, idxty = sig.args
        ptr = _element_pointer(context, builder, aryty, args[0], idxty, args[1])
        align = None if aryty.aligned else 1
        return context.unpack_value(builder, aryty.dtype, ptr, align=align)

    return arr.dtype(arr, index), codegen


@intrinsic
def _element_address(typingctx, arr, index):
    def codegen(context, builder, sig, args):
        ptr = _element_pointer(context, builder, sig.args[0], args[0], sig.args[1], args[1])
        return builder.ptrtoint(ptr, context.get_value_type(types.uintp))

    return types.uintp(arr, index), codegen


@overload(stream_store)
def _stream_store_impl(arr, index, value, base, offset):
    # Same conversions as Numba's setitem, which also allows unsafe casts;
    # anything else takes the plain path so Numba reports its usual error.
    if (isinstance(base, types.CPointer) and _is_element_access(arr, index) and arr.mutable
            and cpu_target.typing_context.can_convert(value, arr.dtype) is not None):
        return lambda arr, index, value, base, offset: _store_at(base, offset, value)

    def plain(arr, index, value, base, offset):
        arr[index] = value

    return plain


@overload(direct_load)
def _direct_load_impl(arr, index):
    if _is_element_access(arr, index):
        return lambda arr, index: _load_element(arr, index)
    return lambda arr, index: arr[index]


def in_bounds(arr, first, last):
    """True when indices ``first`` and ``last`` both lie inside ``arr``."""
    return True


@overload(in_bounds)
def _in_bounds_impl(arr, first, last):
    if not isinstance(arr, types.Array):
        return lambda arr, first, last: True
    parts = _integer_indices(first)
    if parts is None or len(parts) > arr.ndim:
        return lambda arr, first, last: False
    if isinstance(first, types.BaseTuple):
        def check(arr, first, last):
            for d in range(len(first)):
                n = arr.shape[d]
                if first[d] < 0 or first[d] >= n or last[d] < 0 or last[d] >= n:
                    return False
            return True
        return check

    def check_scalar(arr, first, last):
        n = arr.shape[0]
        return 0 <= first < n and 0 <= last < n

    return check_scalar


def aligned_start(arr, first, lo, hi, ok):
    """First loop index at which ``arr``'s streamed store is aligned; ``hi``
    when the aligned loop must not run."""
    return hi


@register_jitable
def _peeled_start(address, itemsize, lo, hi, ok):
    lanes = STREAM_ALIGN_BYTES // itemsize
    if not ok or hi - lo < 2 * lanes or address % itemsize != 0:
        return hi
    peel = ((STREAM_ALIGN_BYTES - address % STREAM_ALIGN_BYTES) % STREAM_ALIGN_BYTES) // itemsize
    return lo + peel


@overload(aligned_start)
def _aligned_start_impl(arr, first, lo, hi, ok):
    if not (_is_element_access(arr, first) and arr.layout == "C"):
        return lambda arr, first, lo, hi, ok: hi
    itemsize = as_dtype(arr.dtype).itemsize  # a constant, so the peel needs no division

    def impl(arr, first, lo, hi, ok):
        return _peeled_start(_element_address(arr, first), itemsize, lo, hi, ok)

    return impl


def same_alignment(arr, index, anchor, anchor_index):
    """True when ``arr[index]`` and ``anchor[anchor_index]`` share their offset
    within a stream-aligned block, so one peel aligns both."""
    return True


@overload(same_alignment)
def _same_alignment_impl(arr, index, anchor, anchor_index):
    if not (_is_element_access(arr, index) and arr.layout == "C"):
        return lambda arr, index, anchor, anchor_index: False

    def impl(arr, index, anchor, anchor_index):
        a = _element_address(arr, index) % STREAM_ALIGN_BYTES
        return a == _element_address(anchor, anchor_index) % STREAM_ALIGN_BYTES

    return impl


@intrinsic
def aligned_pointer(typingctx, arr, index):
    """Pointer to ``arr[index]``, promised to LLVM to be stream-aligned (the
    caller checked it); stores of the aligned loop are addressed from it.

    The pointer is laundered so LLVM keeps it as the one base of the loop's
    addresses instead of re-deriving them from the array's data pointer
    (through phis the alignment proof cannot see into). Called directly by
    the kernel, so the promise lands in the kernel's own module, where
    ``lowering/alignment.py`` turns it into an `llvm.assume`."""
    if not (_is_element_access(arr, index) and arr.layout == "C"):
        return types.intp(arr, index), lambda context, builder, sig, args: context.get_constant(types.intp, 0)

    def codegen(context, builder, sig, args):
        ptr = _element_pointer(context, builder, sig.args[0], args[0], sig.args[1], args[1])
        return emit_alignment_promise(builder, ptr)

    return types.CPointer(arr.dtype)(arr, index), codegen


def store_fence():
    """Order this thread's streamed stores before anything that follows."""


@intrinsic
def _emit_store_fence(typingctx):
    def codegen(context, builder, sig, args):
        emit_store_fence(builder, context.codegen()._tm.triple)
        return context.get_dummy_value()

    return types.none(), codegen


@overload(store_fence)
def _store_fence_impl():
    return lambda: _emit_store_fence()
