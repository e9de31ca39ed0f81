"""Split streamed loops so their stores can be aligned vector NT stores.

A vector non-temporal store must be aligned to its width, but a kernel's
destination may be any view (``out[1:]``) and its loop may start anywhere.
For each innermost ``range`` loop with streamed element stores whose last
index is the loop variable plus an invariant, this pass versions the loop
in the IR (names shortened):

    sv = aligned_start(out, idx(lo), lo, hi,   # hi if no aligned loop
                       in_bounds(...) & ...)   # every rewritten access, at lo and hi-1
    ev = sv + (hi - sv) // L * L           # the last line boundary (L items a line), or hi
    for j in range(lo, sv): BODY           # head: the original blocks, Python semantics
    if hi > sv:
        p = aligned_pointer(out, idx(sv))  # alignment proven above, handed to LLVM
        for j in range(sv, ev): BODY'      # a copy of the loop's blocks
        for j in range(ev, hi): BODY       # tail, where an outer loop moves the row

The head is the original loop, its iterator re-made over ``range(lo, sv)``;
the aligned loop is a copy of its blocks with new labels (loop versioning,
as Numba's ``MixedContainerUnroller`` clones loop bodies), and so is the
tail, left as the user wrote it: where the loop writes a row per iteration
of an outer loop, the aligned loop's NT stores fill every line they touch
(`_line_end`) and the tail's plain stores the rest of each row. A loop that
runs once per call (a 1-D array) ends mid-line once: it has no tail, and
costs no third copy to compile. In ``BODY'``
stores to streamed arrays are ``stream_store`` (addressed as ``p[j - sv]``,
so every vector store derives from the aligned pointer) and affine loads are
``direct_load``: both skip negative-index wraparound, which the bounds check
made exact, so LLVM sees consecutive addresses and vectorizes. Where the
profile lowers streamed loads (``stream_loads``) of unit-stride streams as
non-temporal loads, a second copy, taken when those sources are aligned at
``sv`` too, reads them through aligned pointers; where its stencil sources'
row prefetches only in long rows, the copies come twice, one without
prefetches, chosen per call by the rows' length. LLVM's vectorizer ends
each aligned loop with its own remainder loop. When a check fails (an
index out of range, a non-contiguous or unaligned array, a short loop:
`peel_checks.py`), the head loop runs the whole range exactly as Numba
would. Where a source may trail the streamed store modulo 4 KiB on a CPU
where that stalls it, a third copy, the staged loop (`staging.py`), runs
the calls whose sources do (the copies: `loop_copies.py`).

Several streamed destinations in one loop are aligned together only when
they share their offset within a cache line (checked at run time). The
inserted IR is untyped; `retype.py` types it.
"""

import functools
import operator
from dataclasses import dataclass, field

from numba.core import ir, types

from ..plan import METADATA_KEY, NOT_STAGED
from ..protocol.targets import STREAM_ALIGN_BYTES
from .. import codegen
from .analysis.rebindings import version_name
from .accesses import UPDATE_NOTE, updates_stay_plain
from .analysis.affine import AffineAnalyzer, emit_index
from .analysis.indices import int_constant
from .rewrite.ir_build import Emitter, new_block, retarget, drop_definition
from .rewrite.peel_checks import itemsize, run_time_checks
from .loop_copies import clone_loop, rewrite_copy, scalar_bytes
from .staging import disjoint_checks, staged_loop, why_not_staged
from .stream_loads import unprefetched_options, why_plain

# The `StreamFacts` fields this pass reads, sets and leaves stale (`passes/analysis/facts.py`).
REQUIRES = ("options", "scan", "legal", "store_origin", "typed")
PRODUCES = ("peels", "typed")
# Not ``scan``: its readers after this pass use its arrays, which no split
# changes, and the streamed loads it found, which stay where it found them
# (the head loop is the original loop; `_unwrap` replaces only other
# accesses); the copies are new blocks it does not list, whose loads are the
# intrinsics already. ``legal`` goes stale: the nests it names are split.
INVALIDATES = ("legal",)

SIZE_GATE = "$streamjit_large"
_TERMINAL = (ir.Return, ir.Raise, ir.StaticRaise, ir.DynamicRaise)


@dataclass(eq=False)
class PeelPlan:
    """The plan for versioning one innermost streamed loop: its loop and nest, the streamed stores
    and affine loads to rewrite (each with its affine index per dimension), the sources read through
    aligned pointers, and, filled in as the peel is applied, the blocks it added, the variables
    holding its run-time checks and choices of copy, the iteration span and where the aligned loops start."""
    loop: object
    root: object  # the nest's outermost loop
    stores: list  # [(Access, dims)]
    loads: list  # [(Access, dims)]
    sources: list = field(default_factory=list)  # streamed loads read through aligned pointers
    added: set = field(default_factory=set)  # labels of the blocks the peel added (the aligned loops)
    # {FALLBACK_CHECKS name: the variable holding that run-time check's result} (the size test aside)
    checks: dict = field(default_factory=dict)
    span: tuple = None  # (first, end): the loop's iterations run over [first, end)
    start: str = None  # the variable holding where the aligned loop(s) start (or end, running down)
    runs: tuple = None  # (a, b): the aligned loop(s) run where a > b
    staged: str = None  # the variable that is False where the staged loop runs instead (`staging.py`)
    long_rows: str = None  # the variable that is False where the copies without prefetches run


def _why_not_peelable(scan, loop):
    if loop.kind == "prange":
        return "its loop is a prange loop that was not split into blocks"
    if not loop.is_range:
        return "its loop is not a range() loop"
    if int_constant(scan, loop.step) not in (1, -1):
        return "its loop step is not 1 or -1"
    blocks = scan.func_ir.blocks
    header = blocks[loop.for_block].body[-1]
    if len(loop.entries) != 1 or not isinstance(blocks[next(iter(loop.entries))].body[-1], ir.Jump):
        return "its loop has more than one entry"
    if not isinstance(header, ir.Branch) or header.falsebr in loop.body:
        return "its loop is not a plain for loop"
    if len(scan.defs.get(loop.iterator, [])) != 1:
        return "its loop iterator is shared"
    for label in loop.exits:
        if label != header.falsebr and not isinstance(blocks[label].body[-1], _TERMINAL):
            return "its loop contains 'break' (or an 'else' clause)"
    return None


def plan_peels(scan, legal, streamed, aligned_loads, result, origin, updates_plain=False):
    """Choose the loops to split; note why other streamed stores stay plain.
    ``aligned_loads``: the streamed arrays whose loads may be read through
    aligned pointers (as non-temporal loads); ``updates_plain``: the loops
    `array_stores.py` made of updates in place keep plain stores
    (`accesses.UPDATE_NOTE`)."""
    plans = []
    for loop in scan.loops:
        # (in-place operators and index-array stores are Numba's own: not analyzed)
        direct = [s for s in scan.stores() if s.array in streamed and s.loops and s.loops[-1] is loop and s in legal]
        if not direct:
            continue
        reason = _why_not_peelable(scan, loop)
        if reason:
            for s in direct:
                result.note(s.array, s.line, f"not aligned because {reason}; plain stores")
            continue
        root, _ = legal[direct[0]]
        aligned = []
        for s in direct:
            dims = legal[s][1]
            if id(s.stmt) in origin and not s.is_element:
                continue  # Numba's own store, where `array_stores.py`'s element loop cannot run
            if updates_plain and origin.get(id(s.stmt), (None, None))[1] in ("inplace", "update"):
                result.note(s.array, s.line, UPDATE_NOTE)
            elif s.kind == "row":
                result.note(s.array, s.line, "a row store (fewer indices than dimensions); plain stores")
            elif s.kind == "slice":
                result.note(s.array, s.line, "a slice store; plain stores")
            elif scan.def_labels(s.array_var) & loop.body:
                # (distinct iterations still write distinct elements: legal, but no pointer to align)
                result.note(s.array, s.line, f"'{s.array}' is swapped with another array inside its loop (line "
                            f"{loop.line}); plain stores (swap the buffers after the loop)")
            elif dims[-1].coeffs == {loop: 1}:
                aligned.append((s, dims))
            else:
                result.note(s.array, s.line, f"the last index is not '{loop.var}' plus a loop-invariant offset; "
                            "plain stores")
        if not aligned:
            continue
        # (one aligned start serves stores of one item size only: `same_alignment` compares offsets
        # within a line at the first iteration, which move apart by the item sizes' difference; the
        # widest items stream, the most bytes)
        size = max(itemsize(scan, s.array_var) for s, _ in aligned)
        widest = next(s.array for s, _ in aligned if itemsize(scan, s.array_var) == size)
        for s, _ in aligned:
            if itemsize(scan, s.array_var) != size:
                result.note(s.array, s.line, f"its items are not {size} bytes, as those of '{widest}' streamed in "
                            "the same loop; plain stores")
        aligned = [(s, dims) for s, dims in aligned if itemsize(scan, s.array_var) == size]
        analyzer = AffineAnalyzer(scan, root)
        loads = []
        for a in scan.loads():
            if a.loops and a.loops[-1] is loop and a.is_element:
                dims = [analyzer.of(x) for x in a.index]
                if all(d is not None for d in dims):
                    loads.append((a, dims))
        plan = PeelPlan(loop, root, aligned, loads)
        # (sources read through aligned pointers only forwards)
        plan.sources = _alignable_stream_loads(plan, loop, aligned_loads, scan) if int_constant(scan, loop.step) == 1 \
            else []
        plans.append(plan)
        for access, _ in aligned:
            known = result.vector_hints.setdefault(access.array, [])
            known += [hint for hint in vector_hints(scan, plan) if hint not in known]
    return plans


def vector_hints(scan, plan):
    """What in a split loop's body keeps LLVM's vectorizer from it, for the
    report to give when its stores did not vectorize: a float carried from
    one iteration to the next (a reduction such as ``acc += x[i]``, which
    LLVM keeps in order without ``fastmath``). (A recurrence, ``out[i] =
    out[i - 1] + ...``, vectorizes behind a run-time overlap test that
    always fails: the report counts its vector stores.)"""
    loop, hints = plan.loop, []
    carried = sorted({version_name(name) for name, found in scan.defs.items()
                      if not name.startswith("$") and isinstance(scan.typemap.get(name), (types.Float, types.Complex))
                      and {label for label, _ in found} & loop.body and {label for label, _ in found} - loop.body})
    if carried:
        hints.append(f"the loop carries the float{'s' if len(carried) > 1 else ''} {', '.join(map(repr, carried))} "
                     "from one iteration to the next (a reduction: without fastmath=True LLVM keeps its order and "
                     "does not vectorize; or sum in a loop of its own)")
    return hints


def _alignable_stream_loads(plan, loop, streamed_loads, scan):
    """Streamed loads that can be read through an aligned pointer: unit
    stride along the last dimension only (not a diagonal ``L[i, i]`` or a
    skewed ``A[i + j, j]``), and the only access of their array in the loop
    (two offsets of one array cannot both be aligned)."""
    counts = {}
    for access, _ in plan.loads:
        counts[access.array] = counts.get(access.array, 0) + 1
    return [(a, d) for a, d in plan.loads
            if a.array in streamed_loads and not why_plain(scan, a) and counts[a.array] == 1
            and d[-1].coeffs == {loop: 1} and all(loop not in x.coeffs for x in d[:-1])]


def _never_negative(scan, dims):
    """Whether every dimension of an affine index is >= 0 in every
    iteration: loops counting up by one from constants >= 0, coefficients
    >= 0, no invariant terms, and the lowest value >= 0."""
    for dim in dims:
        low = dim.const
        for loop, c in dim.coeffs.items():
            start = int_constant(scan, loop.start) if loop.is_range else None
            if c < 0 or start is None or start < 0 or int_constant(scan, loop.step) != 1:
                return False
            low += c * start
        if dim.terms or low < 0:
            return False
    return True


def _unwrap(scan, blocks, plan, streamed_loads, mapping=None):
    """In the head loop (the plain path below the threshold), or with
    ``mapping`` (a label's copy) in the tail copied from it, element
    accesses whose indices are never negative skip Numba's wraparound test:
    LLVM cannot always prove it away (an array a time loop swaps is a phi
    there), and the test keeps the loop from vectorizing (0.43x numba.njit
    below the threshold, bench/ping_pong.py). In a kept-scalar loop it is
    IR to lower and optimize for nothing: a 2-D Jacobi kernel's tail was
    the largest block of its function, 481 lines of 2,796 (bench/README.md,
    "the tail's accesses"). Streamed loads keep theirs for `stream_loads.py`
    to tag."""
    scope = blocks[plan.loop.header].scope
    edits = []
    for access, dims in plan.stores + plan.loads:
        stmt = access.stmt
        if access.chained or not access.is_element or access.array in streamed_loads \
                or not _never_negative(scan, dims):
            continue
        if isinstance(stmt, ir.SetItem):
            replaced = Emitter(scope, stmt.loc)
            replaced.call(codegen.unwrapped_store, stmt.target, stmt.index, stmt.value)
        elif isinstance(stmt, ir.Assign) and stmt.value.op == "getitem":
            replaced = Emitter(scope, stmt.loc)
            replaced.call(codegen.unwrapped_load, stmt.value.value, stmt.value.index, target=stmt.target)
        else:
            continue
        # (a copy's statements sit where the original's do: `loop_copies.clone_loop`)
        at = next(k for k, s in enumerate(blocks[access.label].body) if s is stmt)
        edits.append((mapping[access.label] if mapping else access.label, at, replaced.stmts))
    for label, at, stmts in sorted(edits, key=lambda edit: -edit[1]):  # (the last first: positions hold)
        blocks[label].body[at:at + 1] = stmts


def _all(emitter, variables):
    """The ``&`` of boolean variables: not ``and``, no short-circuit branches to lower and optimize."""
    return functools.reduce(lambda a, b: emitter.binop(operator.and_, a, b), variables)


def _iterations(pre, loop, reverse):
    """``(first, hi)``: the loop visits ``[first, hi)``, emitted by ``pre``."""
    if reverse:  # range(top, bottom, -1) visits [bottom + 1, top + 1) downwards
        return pre.add(loop.stop, 1), pre.add(loop.start, 1)
    first = loop.start if isinstance(loop.start, int) else pre.assign(loop.start, hint="lo")
    return first, pre.assign(loop.stop, hint="hi")


def _aligned_loops(state, scan, plan, scope, start, end, reverse, then, options, result):
    """The entry label of the aligned loop: a copy of the loop's blocks
    from ``start`` to ``end`` (whole lines), its planned accesses rewritten,
    going on to ``then``; with sources to read through aligned pointers, a
    test of their alignment at ``start`` picks one of two such copies, one
    reading them aligned; where short rows go unprefetched
    (`stream_loads.unprefetched_options`), a test of the rows picks those
    copies or the same without prefetches."""
    blocks, loop, loc = scan.func_ir.blocks, plan.loop, plan.loop.loc
    exit_label = blocks[loop.for_block].body[-1].falsebr
    scalar = scalar_bytes(scan, plan, options, result)  # (once for every copy)

    def offset_of(emit):
        return emit.sub(ir.Var(scope, loop.induction, loc), start)

    def aligned_copy(emit, source_pointers, options):
        pointers = [emit.call(codegen.aligned_pointer, ir.Var(scope, a.array_var, loc),
                              emit_index(scan, d, loop, start, emit)) for a, d in plan.stores]
        for access, dims in plan.sources if source_pointers else ():
            source_pointers[access] = emit.call(codegen.aligned_pointer, ir.Var(scope, access.array_var, loc),
                                                emit_index(scan, dims, loop, start, emit))
        iterator = emit.temp("aligned_iter").name
        emit.range_iterator(range, [emit.sub(start, 1), emit.sub(end, 1), -1] if reverse else [start, end], target=iterator)
        head, mapping = clone_loop(state, loop, iterator)
        retarget(blocks[mapping[loop.for_block]], {exit_label: then})
        rewrite_copy(scan, blocks, mapping, plan, pointers, offset_of, source_pointers, options, result, scalar)
        emit.stmts.append(ir.Jump(head, loc))
        return new_block(blocks, scope, loc, emit.stmts)

    def aligned_copies(options):
        if not plan.sources:
            return aligned_copy(Emitter(scope, loc), {}, options)
        unaligned = aligned_copy(Emitter(scope, loc), {}, options)
        test = Emitter(scope, loc)
        both = _all(test, [test.call(codegen.is_stream_aligned, ir.Var(scope, a.array_var, loc),
                                     emit_index(scan, d, loop, start, test)) for a, d in plan.sources])
        sourced = aligned_copy(Emitter(scope, loc), dict.fromkeys(a for a, _ in plan.sources), options)
        test.stmts.append(ir.Branch(both, sourced, unaligned, loc))
        return new_block(blocks, scope, loc, test.stmts)

    unprefetched, rows_of = unprefetched_options(scan, plan, options, result)
    if unprefetched is None:
        return aligned_copies(options)
    test = Emitter(scope, loc)
    long_rows = _all(test, [test.call(codegen.rows_hold, ir.Var(scope, name, loc),
                                      test.const(options.stencil_sources.min_row_bytes)) for name in rows_of])
    test.stmts.append(ir.Branch(long_rows, aligned_copies(options), aligned_copies(unprefetched), loc))
    plan.long_rows = long_rows.name
    return new_block(blocks, scope, loc, test.stmts)


def _tail_loop(state, scan, plan, scope, end, hi, reverse, streamed_loads):
    """The entry of the tail: a copy of the original loop over what the
    aligned loop leaves, ``[end, hi)`` (downwards ``[first, end)``), kept
    scalar as always-streamed kernels' heads are (under a line of items;
    each element converted as the head's are, where an out-of-range
    conversion's result depends on the loop), its accesses unwrapped as
    the head's (`_unwrap`)."""
    blocks, loop = state.func_ir.blocks, plan.loop
    tail = Emitter(scope, loop.loc)
    iterator = tail.temp("tail_iter").name
    tail.range_iterator(range, [tail.sub(end, 1), loop.stop, -1] if reverse else [end, hi], target=iterator)
    header, mapping = clone_loop(state, loop, iterator)
    _unwrap(scan, blocks, plan, streamed_loads, mapping)
    tail.stmts.append(ir.Jump(header, loop.loc))
    _keep_scalar(blocks[mapping[blocks[loop.for_block].body[-1].truebr]], scope, loop.loc)
    return new_block(blocks, scope, loop.loc, tail.stmts)


def _keep_scalar(body, scope, loc):
    """Start the loop body block ``body`` with ``keep_scalar``: LLVM leaves its loop unvectorized."""
    keep = Emitter(scope, loc)
    keep.call(codegen.keep_scalar)
    body.body[0:0] = keep.stmts


def _line_end(pre, start, bound, reverse, lanes):
    """Where the aligned loop stops: the last line boundary before ``bound``
    (``hi``; downwards, the first after ``first``), a whole number of
    ``lanes`` (a line's items) from the line-aligned ``start``. Its vector
    NT stores then fill every line they touch; the items of the last
    partial line go to the plain tail loop. A line whose NT stores leave
    part of it to plain stores is written to memory in pieces: a heat_3d
    of 255^3 float64 (each row ending mid-line) ran 0.66-0.70x numba.njit
    streamed with 256-bit stores ending there, 1.04-1.06x with whole lines
    (bench/vector_width.py, Intel Xeon VM, family 6 model 167)."""
    span = pre.sub(start, bound) if reverse else pre.sub(bound, start)
    whole = pre.binop(operator.mul, pre.binop(operator.floordiv, span, pre.const(lanes)), pre.const(lanes))
    return pre.sub(start, whole) if reverse else pre.add(start, whole)


def _stage(state, scan, plan, pre, result):
    """Where sources may trail the streamed store modulo a page, a call
    whose sources do runs the staged loop (`staging.py`) where it can: the
    page-alias check then fails (a fallback to the plain loop) only where
    the arrays also share memory. Else note why such calls run plain."""
    reason = why_not_staged(scan, plan, state.targetctx)
    if reason:
        for access, _ in plan.stores:
            result.note(access.array, access.line, f"{NOT_STAGED} {reason}")
        return
    plan.staged = plan.checks["page_alias"]
    scope, loc = pre.scope, pre.loc
    plan.checks["page_alias"] = pre.binop(operator.or_, ir.Var(scope, plan.staged, loc),
                                          _all(pre, disjoint_checks(scan, pre, plan))).name


def apply_peel(state, scan, plan, gate, scalar_head, options, result):
    """Version ``plan.loop`` into head and aligned loops (see module doc)."""
    blocks, loop = scan.func_ir.blocks, plan.loop
    existing = set(blocks)
    preheader = blocks[next(iter(loop.entries))]
    header_branch = blocks[loop.for_block].body[-1]
    exit_label = header_branch.falsebr
    scope, loc = preheader.scope, loop.loc
    pre = Emitter(scope, loc)
    reverse = int_constant(scan, loop.step) == -1
    first, hi = _iterations(pre, loop, reverse)
    checks = run_time_checks(scan, pre, plan, first, pre.sub(hi, 1), options.machine.page_alias_bytes)
    plan.checks = {name: _all(pre, group).name for name, group in checks.items() if group}
    if checks["page_alias"]:
        _stage(state, scan, plan, pre, result)
    ok = _all(pre, [ir.Var(scope, name, loc) for name in plan.checks.values()])
    plan.span = (first, hi)  # (with plan.checks, what `call_record.py` counts a fallback by)
    if gate:
        ok = pre.binop(operator.and_, ir.Var(scope, SIZE_GATE, loc), ok)
    # the aligned loop runs over [start, hi) forwards, or [first, start) downwards, after the head
    anchor, anchor_dims = plan.stores[0]
    boundary, at = (codegen.aligned_end, hi) if reverse else (codegen.aligned_start, first)
    start = pre.call(boundary, ir.Var(scope, anchor.array_var, loc), emit_index(scan, anchor_dims, loop, at, pre),
                     first, hi, ok)
    drop_definition(blocks, scan.defs[loop.iterator][0])
    pre.range_iterator(range, [loop.start, pre.sub(start, 1), -1] if reverse else [first, start],
                       target=loop.iterator)
    if any(dim.coeffs for dim in anchor_dims[:-1]):  # a row per iteration of an outer loop: a tail each
        end = _line_end(pre, start, first if reverse else hi, reverse,
                        STREAM_ALIGN_BYTES // itemsize(scan, anchor.array_var))
        then = _tail_loop(state, scan, plan, scope, end, hi, reverse, result.streamed_loads)
    else:
        end, then = (first, exit_label) if reverse else (hi, exit_label)
    preheader.body[-1:-1] = pre.stmts
    entry = _aligned_loops(state, scan, plan, scope, start, end, reverse, then, options, result)
    if plan.staged:
        entry = new_block(blocks, scope, loc, [ir.Branch(ir.Var(scope, plan.staged, loc), entry,
                                                         staged_loop(state, scan, plan, start, hi, options, result),
                                                         loc)])
    after = Emitter(scope, loc)
    runs = (start, first) if reverse else (hi, start)
    more = after.binop(operator.gt, *runs)
    plan.start, plan.runs = start.name, runs
    after.stmts.append(ir.Branch(more, entry, exit_label, loc))
    retarget(blocks[loop.for_block], {exit_label: new_block(blocks, scope, loc, after.stmts)})
    plan.added = set(blocks) - existing
    # (a call the page-alias check sends to the head loop runs it whole:
    # vectorized, not kept scalar as always-streamed kernels' heads are, 0.39x njit)
    if scalar_head and not checks["page_alias"]:
        _keep_scalar(blocks[header_branch.truebr], scope, loc)
    _unwrap(scan, blocks, plan, result.streamed_loads)


def run_pass(state):
    """Plan the peels of every innermost streamed loop (a loop holding another split loop stays
    plain, with a note) and apply them: the head loop, the run-time checks and the aligned
    loop(s). True when any loop was split."""
    facts, result = state.stream_facts, state.metadata[METADATA_KEY]
    scan, options = facts.scan, facts.options
    # a second, aligned-source loop only where loads may become non-temporal (the machine profile)
    plans = plan_peels(scan, facts.legal, result.streamed_stores,
                       result.streamed_loads if options.loads.nt_loads else frozenset(), result, facts.store_origin,
                       updates_stay_plain(options))
    # a loop that holds another split loop is not split itself (its blocks
    # changed under it); its own stores stay plain
    nested = [p for p in plans if any(q is not p and p.loop.header in q.loop.enclosing_headers() for q in plans)]
    for p in nested:
        for access, _ in p.stores:
            result.note(access.array, access.line, "not aligned because its loop holds another streamed loop; "
                        "plain stores")
    plans = [p for p in plans if p not in nested]
    facts.peels = plans
    # innermost first: a copy made for an inner loop must not be copied again
    for plan in plans:
        # below a threshold the head loop is the whole plain path and must
        # vectorize; without one it only peels (or takes rare fallbacks)
        apply_peel(state, scan, plan, options.threshold is not None, options.threshold is None, options, result)
    result.peeled_loops = len(plans)
    return bool(plans)
