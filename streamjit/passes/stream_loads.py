"""``stream_loads``: which loads are streamed, and which are prefetched.

Every element load of a streamed array becomes a tagged load
(``stream_load``; inside an aligned loop `align_peel.py` already made it
``direct_stream_load`` or ``load_at``) whose marker says how the LLVM
rewrite lowers it: the machine profile's choice for streamed loads
(`machine.py`: a prefetch hint and distance, non-temporal loads or not),
which on some CPUs is plain loads. In the aligned loops of streamed stores,
the unit-stride sources that are not streamed may be prefetched too (the
profile's ``sources`` stage; `marker_of` decides for both). The prefetch
needs an address stream that advances: it is issued only for loads whose
index is affine in the innermost enclosing ``range`` loop's variable. A
broadcast (``a[i]`` inside a ``j`` loop), a gather (``a[idx[k]]``) or a
load outside every loop is not prefetched; the report says why.
"""

from numba.core import ir

from ..lowering.markers import load_marker
from ..plan import METADATA_KEY
from .. import codegen
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


def _stored_as_streamed(scan, access, result):
    """Whether the load reads an array its own stage streams stores to. A
    ping-pong buffer (``A, B = B, A`` in a time loop) is stored by one stage
    and read by the next: only a load through the variable the loop stores
    through is the stage's own."""
    if access.array not in scan.group_roots:
        return access.array in result.streamed_stores
    return any(s.array == access.array and s.loops[-1:] == access.loops[-1:] for s in scan.stores())


def marker_of(scan, access, options, result):
    """How a load inside an aligned loop of streamed stores is lowered
    (`markers.load_marker`), or None for a plain load: streamed loads take
    the profile's ``loads`` stage; prefetchable sources that are neither
    streamed nor stored as streamed take its ``sources`` stage."""
    if access.array in result.streamed_loads:
        stage = options.loads
    elif options.sources.prefetches() and not _stored_as_streamed(scan, access, result) \
            and not why_not_prefetched(scan, access):
        return load_marker(options.sources)
    else:
        return None
    return load_marker(stage, prefetched=stage.prefetches() and not why_not_prefetched(scan, access))


def run_pass(state):
    """Tag the streamed loads still in the IR (the head loops and every
    loop that was not split)."""
    scan, result = state.stream_scan, state.metadata[METADATA_KEY]
    stage = state.stream_options.loads
    blocks = state.func_ir.blocks
    changed = False
    for access in scan.loads():
        if access.array not in result.streamed_loads or access.kind == "inplace":
            continue
        reason = why_not_prefetched(scan, access) if stage.prefetches() else None
        if reason:
            result.note(access.array, access.line, f"{reason}: not prefetched")
        if not access.is_element:
            continue
        block = blocks[access.label]
        at = next(i for i, s in enumerate(block.body) if s is access.stmt)
        emit = Emitter(block.scope, access.loc)
        emit.call(codegen.stream_load, ir.Var(block.scope, access.array_var, access.loc), emit.index(access.index),
                  emit.const(load_marker(stage, prefetched=not reason)), target=access.stmt.target)
        block.body[at:at + 1] = emit.stmts
        changed = True
    return changed
