"""The run-time checks in front of a loop `align_peel.py` splits.

The aligned loop reads and writes its planned accesses without Numba's
wraparound and bounds handling, through pointers aligned at its first
iteration. Before the loop, one check per kind (`codegen.FALLBACK_CHECKS`)
proves that this is exact for the call; when one fails, the head loop runs
the whole range as Numba would, and `call_record.py` counts the fallback by
the check's kind:

- ``bounds``: every rewritten access is in bounds at the first and the last
  iteration (its extremes, the index being affine);
- ``alignment``: several streamed destinations share their offset within a
  cache line, so one aligned start serves them all;
- ``page_alias``: no source trails the streamed store by 1 to
  ``page_alias_bytes`` modulo a page, where the loop reads two streams or
  more and the machine profile says such sources stall streamed stores;
- ``contiguous``: rows are contiguous where the layout does not say so.
"""

from dataclasses import replace

from numba.core import ir
from numba.np.numpy_support import as_dtype

from ... import codegen
from ..analysis.affine import emit_index


def _bounds_checks(scan, emitter, plan, first, last):
    """As few ``in_bounds`` calls as the accesses allow: accesses of one
    array whose indices differ only by constants share one check (per
    dimension the extremes over the loop are the constant extremes at the
    first and last iteration, swapped where the coefficient is negative);
    arrays whose extremes come out identical share those indices."""
    loop = plan.loop
    groups = {}
    for access, dims in plan.stores + plan.loads:
        key = (access.array_var, tuple(d.key() for d in dims))
        groups.setdefault(key, (access, []))[1].append(dims)
    extremes = {}
    for access, members in groups.values():
        low, high = [], []
        for k, dim in enumerate(members[0]):
            consts = [m[k].const for m in members]
            ascending = dim.coeffs.get(loop, 0) >= 0
            low.append(replace(dim, const=min(consts) if ascending else max(consts)))
            high.append(replace(dim, const=max(consts) if ascending else min(consts)))
        text = (tuple((d.key(), d.const) for d in low), tuple((d.key(), d.const) for d in high))
        extremes.setdefault(text, ([], low, high))[0].append(access.array_var)
    checks = []
    for arrays, low, high in extremes.values():
        # (a call per array, not one of their tuple: a tuple of arrays takes
        # and drops a reference to each, IR to lower and optimize for nothing)
        at_first, at_last = emit_index(scan, low, loop, first, emitter), emit_index(scan, high, loop, last, emitter)
        checks += [emitter.call(codegen.in_bounds, ir.Var(emitter.scope, a, emitter.loc), at_first, at_last)
                   for a in arrays]
    return checks


def _alignment_checks(scan, emitter, plan, first):
    """One ``same_alignment`` per streamed destination after the first."""
    loop, (anchor, anchor_dims) = plan.loop, plan.stores[0]
    scope, loc = emitter.scope, emitter.loc
    return [emitter.call(codegen.same_alignment, ir.Var(scope, access.array_var, loc),
                         emit_index(scan, dims, loop, first, emitter), ir.Var(scope, anchor.array_var, loc),
                         emit_index(scan, anchor_dims, loop, first, emitter))
            for access, dims in plan.stores[1:]]


def itemsize(scan, array_var):
    """The item size in bytes of the array variable ``array_var``."""
    return as_dtype(scan.typemap[array_var].dtype).itemsize


def _page_alias_checks(scan, emitter, plan, first, page_alias_bytes):
    """One ``no_trailing_alias`` per source of the first destination's
    item size (sources of another size drift away from the store along the
    row), where the loop reads two such sources or more and
    ``page_alias_bytes`` is not 0; else none."""
    loop, (anchor, anchor_dims) = plan.loop, plan.stores[0]
    scope, loc = emitter.scope, emitter.loc
    stored = {access.array_var for access, _ in plan.stores}
    size = itemsize(scan, anchor.array_var)
    sources = {(access.array_var, tuple(d.key() for d in dims), tuple(d.const for d in dims)): (access, dims)
               for access, dims in plan.loads if access.array_var not in stored
               and itemsize(scan, access.array_var) == size}
    if len(sources) < 2 or not page_alias_bytes:
        return []
    anchor_first = emit_index(scan, anchor_dims, loop, first, emitter)
    distance = emitter.assign(ir.Const(page_alias_bytes, loc), hint="page_alias")
    return [emitter.call(codegen.no_trailing_alias, ir.Var(scope, access.array_var, loc),
                         emit_index(scan, dims, loop, first, emitter), ir.Var(scope, anchor.array_var, loc),
                         anchor_first, distance)
            for access, dims in sources.values()]


def _contiguous_checks(scan, emitter, plan):
    """One ``inner_contiguous`` per array the plan rewrites that is not
    C-contiguous by its type: loads of the aligned loop address rows as
    contiguous (`direct_load`), and its stores need contiguous rows to be
    aligned (counted as this check's fallback, not as a call no aligned
    loop reached)."""
    return [emitter.call(codegen.inner_contiguous, ir.Var(emitter.scope, name, emitter.loc))
            for name in sorted({a.array_var for a, _ in plan.loads + plan.stores
                                if scan.typemap[a.array_var].layout != "C"})]


def run_time_checks(scan, emitter, plan, first, last, page_alias_bytes):
    """``{check kind: [boolean variables]}`` for the split of ``plan.loop``
    whose iterations run from ``first`` to ``last``, emitted by ``emitter``
    at the loop's preheader."""
    return {"bounds": _bounds_checks(scan, emitter, plan, first, last),
            "alignment": _alignment_checks(scan, emitter, plan, first),
            "page_alias": _page_alias_checks(scan, emitter, plan, first, page_alias_bytes),
            "contiguous": _contiguous_checks(scan, emitter, plan)}
