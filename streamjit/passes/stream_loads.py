"""``stream_loads``: which loads are streamed, and which are prefetched.

Every element load of a streamed array becomes a tagged load
(``stream_load``; inside an aligned loop `align_peel.py` already made it
``direct_stream_load`` or ``load_at``) whose marker says how the LLVM
rewrite lowers it: the machine profile's choice for streamed loads
(`machine/profile.py`: a prefetch hint and distance, non-temporal loads or not),
which on some CPUs is plain loads. In the aligned loops of streamed stores,
the unit-stride sources that are not streamed may be prefetched too (the
profile's ``sources`` stage, its ``stencil_sources`` in a stencil's loop;
`marker_of` decides for all). The prefetch
needs an address stream that advances: it is issued only for loads whose
index is affine in the innermost enclosing ``range`` loop's variable. A
broadcast (``a[i]`` inside a ``j`` loop), a gather (``a[idx[k]]``) or a
load outside every loop is not prefetched; the report says why.

A streamed load stays a plain load, decided per access (`why_plain`),
where a prefetch does not pay (bench/npbench.py: NPBench kernels ran 0.70x
and 0.93x with ``stream_loads=True``): an array the kernel allocates (its lines
were just written, in cache), a walk whose step is wider than a cache line
(the hardware prefetcher follows constant strides; a prefetch a fixed
number of bytes ahead lands a few rows on, one more miss per element), a
loop each of whose iterations runs inner loops, or one that does many
floating-point operations per element it loads (compute-bound: the loads
wait for nothing). An array none of whose loads got a prefetch or a
non-temporal load leaves ``streamed_loads``, with a note saying why.

Where the stencil sources' stage asks for rows of ``min_row_bytes`` or more
(`unprefetched_options`), `align_peel.py` adds copies of the aligned loop
without prefetches, which calls with shorter rows run.
"""

import dataclasses

from numba.core import ir, types

from .. import codegen
from ..protocol.markers import load_marker
from ..machine.profile import LoadStage, line_bytes
from ..plan import METADATA_KEY
from .analysis.affine import AffineAnalyzer
from .analysis.indices import index_atoms, is_int, without_ellipsis
from .rewrite.ir_build import Emitter
from .analysis.loop_work import COMPUTE_BOUND_OPS, array_operation_line, float_operations, own_labels
from .rewrite.peel_checks import itemsize

# The `StreamFacts` fields this pass reads, sets and leaves stale (`passes/analysis/facts.py`).
REQUIRES = ("options", "scan")
PRODUCES = ()
# Not ``scan``: the loads it replaces are tagged once, and the passes after
# it read only the scan's arrays.
INVALIDATES = ()


def why_not_prefetched(scan, access):
    """Why a load is not prefetched, or None when it can be: outside every loop, in a loop that is
    not a ``range`` loop, not one element, a gather (an index not affine), or an index that does
    not advance with the innermost loop."""
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
        return f"the index does not advance with the innermost loop {innermost.described}"
    return None


def _stored_as_streamed(scan, access, result):
    """Whether the load reads an array its own loop streams stores to. An
    array one loop nest streams and the next reads (NPBench's jacobi_2d: B
    from A, then A from B) is that nest's source, and a ping-pong buffer
    (``A, B = B, A`` in a time loop) is stored by one stage and read by the
    next: only a load through the variable the loop stores through is the
    loop's own."""
    if access.array not in scan.group_roots and access.array not in result.streamed_stores:
        return False
    return any(s.array == access.array and s.loops[-1:] == access.loops[-1:] for s in scan.stores())


def _is_compute_bound(scan, loop):
    """Whether ``loop`` computes `loop_work.COMPUTE_BOUND_OPS` floating-point operations or more per
    element it loads."""
    loads = sum(1 for a in scan.loads() if a.loops and a.loops[-1] is loop)
    return float_operations(scan, loop) >= COMPUTE_BOUND_OPS * max(1, loads)


def _last_axis_steps_one_element(scan, var):
    """Whether the last axis of the array ``var`` holds adjacent elements:
    a C-contiguous array, or a view (layout "A", as Numba types every
    slice but the simplest) of one whose index ends in a slice without a
    step (``A[1:-1, 1:-1]``). ``A[:i + 1, k]`` (a column) and
    ``u[:, :, k]`` (its last axis a row of ``u``) are not: their last axis
    steps a row, known only at run time."""
    aryty = scan.typemap[var]
    if aryty.layout == "C":
        return True
    value = scan.definition(var)
    if aryty.layout == "F" or not (isinstance(value, ir.Expr) and value.op in ("getitem", "static_getitem")) \
            or not _last_axis_steps_one_element(scan, value.value.name):
        return False
    atoms = index_atoms(scan, value)
    if atoms is None:
        return False
    parent_ndim = scan.typemap[value.value.name].ndim
    atoms = without_ellipsis(scan, atoms, parent_ndim)
    last = atoms[-1] if len(atoms) == parent_ndim else slice(None)  # (missing trailing indices: whole axes)
    if isinstance(last, slice):
        return last.step in (None, 1)
    sliced = isinstance(last, ir.Var) and scan.typemap.get(last.name)
    return isinstance(sliced, types.SliceType) and sliced.members == 2 and not is_int(scan, last)


def _step_bytes(scan, access, dims, loop):
    """Bytes between the elements of ``loop``'s consecutive iterations, or
    None where a dimension other than the contiguous one moves, or the
    contiguous one is not (`_last_axis_steps_one_element`): a row or more
    apart, not known at compile time."""
    aryty = scan.typemap[access.array_var]
    inner = len(dims) - 1 if aryty.layout != "F" else 0
    if aryty.layout == "A" and not _last_axis_steps_one_element(scan, access.array_var):
        return None
    if any(loop in d.coeffs for k, d in enumerate(dims) if k != inner):
        return None
    return abs(dims[inner].coeffs.get(loop, 0)) * itemsize(scan, access.array_var)  # (booleans have no bitwidth)


def why_plain(scan, access):
    """Why a streamed load is better left a plain load (no prefetch, no
    non-temporal load), or None: an array the kernel allocates, then
    `why_source_plain`."""
    if access.array in scan.fresh:
        return "an array the kernel allocates (just written, in cache)"
    return why_source_plain(scan, access)


def why_source_plain(scan, access):
    """Why a load is better left without a prefetch, or None: the
    prefetch's own reasons (`why_not_prefetched`), then whether it would
    pay."""
    reason = why_not_prefetched(scan, access)
    if reason:
        return reason
    innermost = access.loops[-1]
    analyzer = AffineAnalyzer(scan, access.loops[0])
    step = _step_bytes(scan, access, [analyzer.of(x) for x in access.index], innermost)
    if step is None or step > line_bytes():
        return (f"a strided walk ({'rows' if step is None else f'{step} bytes'} apart per iteration of "
                f"{innermost.described}, wider than a {line_bytes()}-byte line)")
    labels, inner = own_labels(scan, innermost)
    if inner:
        return f"each iteration of {innermost.described} runs inner loops"
    line = array_operation_line(scan, labels)
    if line is not None:
        return f"each iteration of {innermost.described} runs an operation over arrays (line {line})"
    if _is_compute_bound(scan, innermost):
        return f"the loop {innermost.described} is compute-bound (>= {COMPUTE_BOUND_OPS} operations per element loaded)"
    return None


def _one_walk_loaded_apart(plan, offsets_of):
    """Whether two loads of one array walking by the same indices differ in
    ``offsets_of(their index parts)`` (None: the load is not compared)."""
    seen = {}
    for load, dims in plan.loads:
        offsets = offsets_of(dims)
        walk = (load.array_var, tuple(d.key() for d in dims))
        if offsets is not None and seen.setdefault(walk, offsets) != offsets:
            return True
    return False


def loads_a_stencil(plan):
    """Whether ``plan``'s loop is a stencil's: one array loaded at two
    elements or more per iteration (a Jacobi sweep's five loads per store,
    whose rows the next rows load again from the cache; a triad, one load
    per source, is not)."""
    return _one_walk_loaded_apart(plan, lambda dims: tuple(d.const for d in dims))


def reads_rows_again(plan):
    """Whether ``plan``'s loop reads rows of one array again: two loads of
    it at offsets that differ before their last index (a 2-D Jacobi's
    ``g[i - 1, j]`` and ``g[i + 1, j]``: each row it loads, the next rows
    load again from the cache). A 1-D stencil's ``a[i - 1]`` and
    ``a[i + 1]`` read the same lines in the same iterations instead: its
    source is one stream, as a copy's (NPBench's jacobi_1d on the AMD EPYC
    Zen 4 VM, family 25 model 17, bench/npbench.py, 244 MiB: 13.3-14.4x
    njit with the copy's ``prefetchnta`` 2 KiB, 12.4-12.6x with the 2-D
    sweeps' ``prefetcht1`` 4 KiB, two runs each)."""
    return _one_walk_loaded_apart(plan, lambda dims: tuple(d.const for d in dims[:-1]) if len(dims) > 1 else None)


def marker_of(scan, plan, access, options, result):
    """How a load of ``plan``'s loop, an aligned loop of streamed stores, is
    lowered (`markers.load_marker`), or None for a plain load: streamed
    loads take the profile's ``loads`` stage; sources that are neither
    streamed nor stored as streamed by their own loop take its
    ``stencil_sources`` stage in a loop that reads rows again
    (`reads_rows_again`), else its ``sources``, where a prefetch pays for
    them as for a streamed load (`why_source_plain`: vadv's ``u_pos[:, :,
    k]``, a row apart per element, was prefetched 4 KiB ahead). An array
    the kernel allocates is prefetched as a source: these loops run only
    above the threshold, where the nest's arrays have left the L2 a
    ``prefetcht1`` fills (cavity_flow's ``pn = p.copy()``, 3000x3000
    float64: 26 -> 21 ms a sweep on the Intel Xeon VM, family 6 model
    167, bench/README.md "fifth session")."""
    if access.array in result.streamed_loads:
        stage = options.loads
        return None if why_plain(scan, access) else load_marker(stage, prefetched=stage.prefetches())
    sources = options.stencil_sources if reads_rows_again(plan) else options.sources
    if sources.prefetches() and not _stored_as_streamed(scan, access, result) and not why_source_plain(scan, access):
        return load_marker(sources)
    return None


def unprefetched_options(scan, plan, options, result):
    """``(options, arrays)``: where ``plan``'s loop reads rows again and
    prefetches sources as the stencil sources' stage says, a stage that
    prefetches only in rows of ``min_row_bytes`` or more, ``options``
    without that prefetch and the array variables whose rows the call
    tests; else ``(None, ())``. A prefetch a fixed distance ahead lands
    rows ahead of a short row: on the AMD EPYC Zen 4 VM (family 25 model
    17, bench/load_stages.py 128 5 --rows) prefetcht1 4 KiB ahead ran
    5-point float64 sweeps over rows of 640-4000 items 1.24-1.53x no
    prefetch, over rows of 160 and 320 0.91x and 0.89x, and NPBench's hdiff
    over rows of 160 0.91x (512 bytes ahead 0.75x: a prefetch of a line
    about to be read costs it too): short rows run a loop with no prefetch
    at all (1.04x and 1.07x)."""
    stage = options.stencil_sources
    if not (stage.prefetches() and stage.min_row_bytes and reads_rows_again(plan)):
        return None, ()
    prefetched = {access.array_var for access, _ in plan.loads if access.array not in result.streamed_loads
                  and scan.typemap[access.array_var].ndim > 1 and marker_of(scan, plan, access, options, result)}
    if not prefetched:
        return None, ()
    return dataclasses.replace(options, stencil_sources=LoadStage(nt_loads=stage.nt_loads)), sorted(prefetched)


def run_pass(state):
    """Tag the streamed loads still in the IR (the head loops and every
    loop that was not split) that a prefetch or a non-temporal load pays
    for; an array with none leaves ``streamed_loads``."""
    scan, result = state.stream_facts.scan, state.metadata[METADATA_KEY]
    stage = state.stream_facts.options.loads
    blocks = state.func_ir.blocks
    changed, emitted = False, set()
    for access in scan.loads():
        if access.array not in result.streamed_loads or access.kind == "inplace":
            continue
        reason = why_plain(scan, access)
        if reason:
            result.note(access.array, access.line, f"{reason}: plain load")
            continue
        if not (stage.prefetches() or stage.nt_loads):  # this machine's profile: plain loads
            continue
        emitted.add(access.array)
        if not access.is_element:
            continue
        block = blocks[access.label]
        at = next(i for i, s in enumerate(block.body) if s is access.stmt)
        emit = Emitter(block.scope, access.loc)
        emit.call(codegen.stream_load, ir.Var(block.scope, access.array_var, access.loc), emit.index(access.index),
                  emit.const(load_marker(stage, prefetched=True)), target=access.stmt.target)
        block.body[at:at + 1] = emit.stmts
        changed = True
    result.streamed_loads = frozenset(emitted)
    return changed
