"""Count, per call, which path a kernel took: streamed, plain below the
size threshold, or plain after a run-time check sent its loops to their
plain versions (and which checks failed).

The report says what was compiled; what ran depends on each call's data
(its size, its alignment, whether operands overlap). Numba keeps its own
per-dispatcher ``stats``; this pass gives the kernel counters of its own,
at no measurable cost: a module global of integers (zero when the code
is loaded, read by ``StreamDispatcher.stream_calls`` and
``stream_fallbacks``), two locals set where the paths part, and the
counters' increments before each return:

    ran = opaque(False); fell = opaque(0)             # at entry
    fell = fell | (not (check | end <= first)) * bit  # after each of an aligned loop's run-time checks
    ran = ran | opaque(end > start)                   # where the aligned loop's start is computed
    fell = fell | (not ok) * bit                      # after a fused loop's check (`array_stores.py`)
    record_call(name, ran, large, fell)               # before each return

``fell`` holds one bit per kind of check (``codegen.FALLBACK_CHECKS``:
bounds, alignment of several streamed stores, contiguous rows, a source a
few bytes behind a store modulo a page, a fused loop's operands), so that
the report can say which check sent a call to the plain code, not only
that one did.

``large`` is the size test (`size_check.py`; True without a threshold).
Kernels with ``parallel=True`` are not counted (their loops run on
workers, where these locals are not shared), nor kernels that stream
nothing. Where no loop could be aligned every call counts as ``plain``, and
the report says why.
"""

import hashlib
import operator

from numba.core import ir

from ..plan import METADATA_KEY
from .. import codegen
from .align_peel import SIZE_GATE
from .ir_build import Emitter

RAN, FELL = "$streamjit_ran", "$streamjit_fell"


def _after(blocks, name, update):
    """Insert ``update(emit, var)``'s statements right after ``name`` is set."""
    for block in blocks.values():
        for at, stmt in enumerate(block.body):
            if isinstance(stmt, ir.Assign) and stmt.target.name == name:
                emit = Emitter(block.scope, stmt.loc)
                update(emit, stmt.target)
                block.body[at + 1:at + 1] = emit.stmts
                return


def _or(emit, flag, value):
    emit.assign(ir.Expr.binop(operator.or_, ir.Var(emit.scope, flag, emit.loc), value, emit.loc), target=flag)


def _failed_bit(emit, passed, check):
    """``codegen.FALLBACK_CHECKS``'s bit of ``check`` where ``passed`` is False, else 0."""
    failed = emit.assign(ir.Expr.unary("not", passed, emit.loc), hint="failed")
    return emit.binop(operator.mul, failed, emit.const(1 << codegen.FALLBACK_CHECKS.index(check)))


def run_pass(state):
    options, result = state.stream_options, state.metadata[METADATA_KEY]
    if options.parallel or not result.streamed_stores:
        return False
    blocks = state.func_ir.blocks
    entry = blocks[min(blocks)]
    at = next(i for i, s in enumerate(entry.body) if not (isinstance(s, ir.Assign) and isinstance(s.value, ir.Arg)))
    start = Emitter(entry.scope, entry.loc)
    for flag, zero in ((RAN, False), (FELL, 0)):  # (hidden: on a path with no loop LLVM would fold it, duplicating the fence)
        start.call(codegen.opaque, start.const(zero), target=flag)
    entry.body[at:at] = start.stmts
    # (values or'ed in where they are computed, not constants set in the
    # blocks a test leads to, and the loop's test hidden (`codegen.opaque`):
    # else LLVM duplicates the blocks after the test, the fence among them)
    for plan in state.stream_peels:
        _after(blocks, plan.start, lambda emit, _, plan=plan: _or(
            emit, RAN, emit.call(codegen.opaque, emit.binop(operator.gt, *plan.runs))))
        for check, variable in plan.checks.items():
            # (an empty loop's checks fail too: not a fallback)
            _after(blocks, variable, lambda emit, passed, plan=plan, check=check: _or(emit, FELL, _failed_bit(
                emit, emit.binop(operator.or_, passed, emit.binop(operator.le, plan.span[1], plan.span[0])), check)))
    for ok in state.stream_fallbacks:
        _after(blocks, ok, lambda emit, ok: _or(emit, FELL, _failed_bit(emit, ok, "operands")))
    # one name per compile, the same in every process that compiles the
    # kernel in the same order (Numba's unique name counts functions)
    key = f"{state.func_id.unique_name}{state.args}".encode()
    result.call_counter = f"_streamjit_calls_{hashlib.sha1(key).hexdigest()[:20]}"
    for block in blocks.values():
        if isinstance(block.body[-1], ir.Return):
            emit = Emitter(block.scope, block.body[-1].loc)
            # (`size_check.py` tests the size only where a loop was aligned)
            large = ir.Var(block.scope, SIZE_GATE, emit.loc) if options.threshold is not None and state.stream_peels \
                else emit.const(True)
            emit.call(codegen.record_call, emit.const(result.call_counter), ir.Var(block.scope, RAN, emit.loc),
                      large, ir.Var(block.scope, FELL, emit.loc))
            block.body[-1:-1] = emit.stmts
    return True
