"""``stream_loads``: which loads are streamed, and which are prefetched.

Every element load of a streamed array becomes a tagged load
(``stream_load``; inside an aligned loop `align_peel.py` already made it
``direct_stream_load`` or ``load_at``) so the LLVM rewrite can give it a
non-temporal hint and a software prefetch. The prefetch needs an address
stream that advances: it is issued only for loads whose index is affine in
the innermost enclosing ``range`` loop's variable. A broadcast (``a[i]``
inside a ``j`` loop), a gather (``a[idx[k]]``) or a load outside every loop
keeps only the hint; the report says why.
"""

from numba.core import ir

from ..plan import METADATA_KEY
from ..typing import intrinsics
from .affine import AffineAnalyzer
from .ir_build import Emitter


def why_not_prefetched(scan, access):
    if not access.loops:
        return "outside every loop"
    innermost = access.loops[-1]
    if not innermost.is_range:
        return "the innermost loop is not a range() loop"
    if not access.is_element:
        return "not a single element"
    analyzer = AffineAnalyzer(scan, access.loops[0])
    dims = [analyzer.of(x) for x in access.index]
    if any(d is None for d in dims):
        return "the index is not an affine function of the loop variables (a gather)"
    if not any(innermost in d.coeffs for d in dims):
        return f"the index does not advance with the innermost loop '{innermost.var}'"
    return None


def prefetch_distance(scan, access, distance):
    """Bytes ahead to prefetch a streamed load (0: not prefetched)."""
    return 0 if not distance or why_not_prefetched(scan, access) else distance


def run_pass(state):
    """Tag the streamed loads still in the IR (the head loops and every
    loop that was not split)."""
    scan, result = state.stream_scan, state.metadata[METADATA_KEY]
    distance = state.stream_options.prefetch_distance
    blocks = state.func_ir.blocks
    changed = False
    for access in scan.loads():
        if access.array not in result.streamed_loads or access.kind == "inplace":
            continue
        reason = why_not_prefetched(scan, access) if distance else None
        if reason:
            result.note(access.array, access.line, f"{reason}: not prefetched")
        if not access.is_element:
            continue
        block = blocks[access.label]
        at = next(i for i, s in enumerate(block.body) if s is access.stmt)
        emit = Emitter(block.scope, access.loc)
        emit.call(intrinsics.stream_load, ir.Var(block.scope, access.array_var, access.loc), emit.index(access.index),
                  emit.const(0 if reason else distance), target=access.stmt.target)
        block.body[at:at + 1] = emit.stmts
        changed = True
    return changed
