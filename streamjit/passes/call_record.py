"""Count, per call, which path a kernel took: streamed (or staged:
`staging.py`; or without prefetches, in rows too short for them:
`stream_loads.unprefetched_options`), plain below the size threshold, or
plain after a run-time check sent its loops to their plain versions (and
which checks failed).

The report says what was compiled; what ran depends on each call's data
(its size, its alignment, whether operands overlap). Numba keeps its own
per-dispatcher ``stats``; this pass gives the kernel counters of its own,
at no measurable cost: a module global of integers (zero when the code
is loaded, read by ``StreamDispatcher.stream_calls`` and
``stream_fallbacks``), counts kept in locals where the paths part, and the
counters' increments before each return:

    ran = opaque(0); fell = opaque(0); ...            # at entry
    counted = count_call(name, False, -1, ran, staged, unprefetched, large, fell)  # (after the size test)
    fell = fell | (not (ok | end <= first)) * 1       # after each of an aligned loop's run-time checks (bit k: check k)
    ran = ran + opaque(end > start)                   # where the aligned loop's start is computed
    staged = staged + opaque(end > start & not alias_ok)  # there too, where the loop can run staged
    unprefetched = unprefetched + opaque(not long_rows)  # where the rows pick the aligned loop's copy
    fell = fell | (not ok) * 16                       # after a fused loop's check (`array_stores.py`)
    counted = count_call(name, False, counted, ran, ...)  # after each of those: moved where the path changed
    count_call(name, True, counted, ran, ...)             # before each return and raise

The call is counted at entry and moved from path to path as its counters
change, not only at its returns: a call ended by an exception that Numba's
own code raises (a division by zero, an index out of bounds under
``boundscheck``, a shape mismatch), a return from the middle of a block
that no IR statement precedes, is counted under the path it took until
then. With ``parallel=True`` the counters change inside `prange` workers
(below): such a call is counted where it starts and at its returns only.

One bit of ``fell`` per kind of check (``codegen.FALLBACK_CHECKS``:
bounds, alignment of several streamed stores, contiguous rows, a source a
few bytes behind a store modulo a page, a fused loop's operands), so that
the report can say which check sent a call to the plain code, not only
that one did: one variable, not one per check, each of which every count
and every loop copy would carry. With ``parallel=True`` the aligned loops
run inside `prange` workers (`parallel_blocks.py`), which update the
counters at once. There the counters are not variables but cells in the
call's frame (``codegen.counter_cells``), which the workers add to (``fell``:
or into) atomically: a sum in a variable would be a parfor reduction, for which
Numba compiles ``np.empty`` and a reduction function and carries each sum
out of every worker (a prange triad's first call: 2.7 s CPU with them,
1.5 s without, /tmp script around bench/compile_time.py's child, AMD EPYC
Zen 3 VM).

``large`` is the size test (`size_check.py`; True without a threshold).
Where no loop could be aligned every call counts as ``plain``, and the
report says why. Kernels that stream nothing are counted only where they
fused loops (`array_stores.py`), whose run-time check may send a call to
Numba's own code: ``plain`` (the fused loops ran) or ``after_check``.
"""

import hashlib
import operator

from numba.core import ir

from ..plan import METADATA_KEY
from .. import codegen
from .align_peel import SIZE_GATE
from .rewrite.ir_build import Emitter

# The `StreamFacts` fields this pass reads, sets and leaves stale (`passes/analysis/facts.py`).
REQUIRES = ("options", "fallbacks", "peels")
PRODUCES = ()
INVALIDATES = ()

RAN = "$streamjit_ran"
COUNTED = "$streamjit_counted"
STAGED = "$streamjit_staged"
UNPREFETCHED = "$streamjit_unprefetched"
FELL = "$streamjit_fell"
CELLS = "$streamjit_cells"


def _after(blocks, name, update):
    """Insert ``update(emit, var)``'s statements right after ``name`` is set."""
    for block in blocks.values():
        for at, stmt in enumerate(block.body):
            if isinstance(stmt, ir.Assign) and stmt.target.name == name:
                emit = Emitter(block.scope, stmt.loc)
                update(emit, stmt.target)
                block.body[at + 1:at + 1] = emit.stmts
                return


def _count(emit, counter, value, slots):
    """``counter = counter + value``, or with ``slots`` ({counter: its
    cell}) an add to its cell in `CELLS`."""
    _update(emit, counter, operator.add, value, slots)


def _fell(emit, check, failed, slots):
    """``FELL = FELL | failed << k``: bit k of the mask for check k of
    `codegen.FALLBACK_CHECKS` (or'ed, not added: one bit per check; with
    ``slots`` an atomic or into its cell)."""
    bit = emit.binop(operator.mul, failed, emit.const(1 << codegen.FALLBACK_CHECKS.index(check)))
    _update(emit, FELL, operator.or_, bit, slots)


def _update(emit, counter, op, value, slots):
    """``counter = counter op value`` (``op``: `operator.add` or `operator.or_`), or with ``slots`` the same
    on its cell, atomically."""
    if slots:
        emit.call(codegen.update_cell, ir.Var(emit.scope, CELLS, emit.loc), emit.const(slots[counter]),
                  emit.const("add" if op is operator.add else "or"), value)
    else:
        emit.assign(ir.Expr.binop(op, ir.Var(emit.scope, counter, emit.loc), value, emit.loc), target=counter)


def _failed(emit, passed):
    return emit.assign(ir.Expr.unary("not", passed, emit.loc), hint="failed")


def _counter_name(state, options):
    """The counters' global: one name per compile, the same in every
    process that compiles the kernel in the same order (Numba's unique name
    counts functions), and distinct for kernels of the same name from other
    modules, files, code or options: entries loaded from the cache into one
    process would otherwise share one counter (linkonce_odr globals of one
    name merge)."""
    func_id = state.func_id
    code = func_id.func.__code__
    key = repr((func_id.modname, code.co_filename, func_id.unique_name, state.args,
                hashlib.sha1(code.co_code + repr(code.co_consts).encode()).hexdigest(),
                options.cache_key())).encode()
    return f"_streamjit_calls_{hashlib.sha1(key).hexdigest()[:20]}"


def run_pass(state):
    """Where any store streams or a loop was fused: zero the path counters at entry, update them
    where the call's path is chosen (an aligned loop ran, below the threshold, a failed run-time
    check, none reached), and count the call in the kernel's counters at entry, after each update
    and before each return or raise. True when the IR changed."""
    facts, result = state.stream_facts, state.metadata[METADATA_KEY]
    options = facts.options
    if not (result.streamed_stores or facts.fallbacks):
        return False
    blocks = state.func_ir.blocks
    result.call_counter = _counter_name(state, options)
    gated = options.threshold is not None and facts.peels  # (`size_check.py` tests the size only then)
    # (the copies' counters only where a loop has that copy: elsewhere a constant 0 that LLVM folds away)
    copies = {STAGED: any(plan.staged for plan in facts.peels),
              UNPREFETCHED: any(plan.long_rows for plan in facts.peels)}

    counters = (RAN, *(c for c, kept in copies.items() if kept), FELL)
    # (with parallel=True the counters are cells of the call's frame that prange workers add to)
    slots = {counter: k for k, counter in enumerate(counters)} if options.parallel else {}

    def count(emit, counted, final=False):
        """``count_call`` of the counters as they stand, moving the call from ``counted``."""
        def var(name):
            if name in slots:
                return emit.call(codegen.cell, ir.Var(emit.scope, CELLS, emit.loc), emit.const(slots[name]))
            return ir.Var(emit.scope, name, emit.loc)
        large = var(SIZE_GATE) if gated else emit.const(True)
        counts = [var(counter) if kept else emit.const(0) for counter, kept in copies.items()]
        return emit.call(codegen.count_call, emit.const(result.call_counter), emit.const(final), counted, var(RAN),
                         *counts, large, var(FELL), target=None if final else COUNTED)

    def after(name, update):
        """``update(emit, var)`` right after ``name`` is set, then the call counted anew."""
        def updated(emit, var):
            update(emit, var)
            if not options.parallel:  # (in a prange worker the counters are partial sums: counted at the returns)
                count(emit, ir.Var(emit.scope, COUNTED, emit.loc))
        _after(blocks, name, updated)

    entry = blocks[min(blocks)]
    at = next(i for i, s in enumerate(entry.body) if not (isinstance(s, ir.Assign) and isinstance(s.value, ir.Arg)))
    start = Emitter(entry.scope, entry.loc)
    # (hidden: on a path with no loop LLVM would fold it, duplicating the fence)
    if slots:
        start.call(codegen.counter_cells, start.const(len(counters)), target=CELLS)
    for counter in () if slots else counters:
        start.call(codegen.opaque, start.const(0), target=counter)
    if not gated:
        count(start, start.const(-1))
    entry.body[at:at] = start.stmts
    if gated:  # (counted once the size is known)
        _after(blocks, SIZE_GATE, lambda emit, _: count(emit, emit.const(-1)))
    # (values added in where they are computed, not constants set in the
    # blocks a test leads to, and the loop's test hidden (`codegen.opaque`):
    # else LLVM duplicates the blocks after the test, the fence among them)
    for plan in facts.peels:
        def started(emit, _, plan=plan):
            _count(emit, RAN, emit.call(codegen.opaque, emit.binop(operator.gt, *plan.runs)), slots)
            if plan.staged:  # (the aligned loop ran staged: `staging.py`)
                _count(emit, STAGED, emit.call(codegen.opaque, emit.binop(
                    operator.and_, emit.binop(operator.gt, *plan.runs),
                    _failed(emit, ir.Var(emit.scope, plan.staged, emit.loc)))), slots)
        after(plan.start, started)
        if plan.long_rows:  # (the aligned loop ran its copy without prefetches; its test runs only before it)
            after(plan.long_rows, lambda emit, long_rows: _count(
                emit, UNPREFETCHED, emit.call(codegen.opaque, _failed(emit, long_rows)), slots))
        for check, variable in plan.checks.items():
            # (an empty loop's checks fail too: not a fallback)
            after(variable, lambda emit, passed, plan=plan, check=check: _fell(emit, check, _failed(
                emit, emit.binop(operator.or_, passed, emit.binop(operator.le, plan.span[1], plan.span[0]))), slots))
    for ok in facts.fallbacks:
        after(ok, lambda emit, ok: _fell(emit, "operands", _failed(emit, ok), slots))
    for block in blocks.values():
        if isinstance(block.body[-1], (ir.Return, ir.Raise, ir.StaticRaise, ir.DynamicRaise)):
            emit = Emitter(block.scope, block.body[-1].loc)
            count(emit, ir.Var(block.scope, COUNTED, emit.loc), final=True)
            block.body[-1:-1] = emit.stmts
    return True
