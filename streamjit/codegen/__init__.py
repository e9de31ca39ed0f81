"""Code generation: the intrinsics the stream passes insert into a kernel,
typed for Numba and emitted while Numba lowers it to LLVM IR (one module
per group: `access.py`, `checks.py`, `fusion.py`, `control.py`, on the
helpers of `arrays.py`).

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
- ``no_trailing_alias``: that a source does not trail the streamed store by
  1 to the machine profile's ``page_alias_bytes`` modulo a page (4K
  aliasing with stores in flight, on CPUs where it stalls them).
- ``staging_region`` / ``staging_slot`` / ``buffer_store`` / ``disjoint``:
  the stack buffers a loop whose sources trail its stores modulo 4 KiB
  streams through (``passes/staging.py``), the plain stores into them
  (``load_at`` without a marker reads them back), and the check that the
  destination shares no memory with what the loop reads or writes.
- ``nbytes_of``: an array's bytes, which the size test against the threshold adds.
- ``copies_elementwise`` / ``same_shape`` / ``leads``: whether a whole-array
  store or an array expression can run as an element loop
  (``passes/array_stores.py``); ``sliced``: a view of one of its operands;
  ``with_numpy_errors``: one element of an array expression, computed as
  Numba's array expressions compute it; ``where_element``: one of
  ``np.where``.
- ``placed_apart``: a streamed array the kernel allocates, moved apart
  from its array arguments modulo a page (`placement.py`; from Python,
  the drop-ins ``empty_like`` and ``stencil`` run the same rule in NumPy).
- ``smaller`` / ``larger``: ``min`` / ``max`` of two integers, inline
  (Numba's are overloads, each a helper compile: `integers.py`).
- ``keep_scalar``: keeps a peeled head loop out of the vectorizer.
- ``store_fence``: the per-target store fence after a streamed loop nest.
- ``count_call``: counts which path the call took, where its counters
  change and at each return (``passes/call_record.py``); ``opaque``: a value LLVM cannot fold;
  ``counter_cells`` / ``update_cell`` / ``cell``: the counters of a call with ``prange`` workers.

Anything they cannot handle with certainty (non-array targets, partial
indices, a last dimension that is not contiguous at run time, unaligned
data) falls back to Numba's own indexing or to "no aligned loop", never to a
guessed alignment.
"""

from .access import (aligned_pointer, buffer_store, direct_load, direct_stream_load, load_at, not_a_load, stream_load,
                     stream_store, unwrapped_load, unwrapped_store)
from .checks import (aligned_end, aligned_start, in_bounds, inner_contiguous, is_stream_aligned, nbytes_of,
                     no_trailing_alias, rows_hold, same_alignment)
from .control import (CALL_PATHS, FALLBACK_CHECKS, cell, counter_cells, keep_scalar, opaque, count_call,
                      store_fence, update_cell)
from .integers import larger, smaller
from .fusion import copies_elementwise, leads, same_shape, sliced, where_element, with_numpy_errors
from .placement import placed_apart
from .staging import disjoint, staging_region, staging_slot

__all__ = ["aligned_pointer", "direct_load", "direct_stream_load", "load_at", "not_a_load", "stream_load",
           "stream_store", "unwrapped_load", "unwrapped_store", "aligned_end", "aligned_start", "in_bounds",
           "inner_contiguous", "is_stream_aligned", "nbytes_of", "no_trailing_alias", "rows_hold", "same_alignment", "CALL_PATHS",
           "FALLBACK_CHECKS", "keep_scalar", "opaque", "count_call", "counter_cells", "update_cell", "cell", "store_fence",
           "copies_elementwise", "same_shape",
           "leads", "sliced", "where_element", "with_numpy_errors", "placed_apart",
           "buffer_store", "disjoint", "staging_region", "staging_slot", "smaller", "larger"]
