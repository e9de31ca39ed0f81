"""Count, per call, which path a kernel took: streamed, plain below the
size threshold, or plain after a run-time check sent its loops to their
plain versions.

The report says what was compiled; what ran depends on each call's data
(its size, its alignment, whether operands overlap). Numba keeps its own
per-dispatcher ``stats``; this pass gives the kernel counters of its own,
at no measurable cost: a module global of four integers (zero when the
code is loaded, read by ``StreamDispatcher.stream_calls``), three boolean
locals set where the paths part, and one increment before each return:

    ran = False; fell = False               # at entry
    fell = fell | not (checked | end <= first)   # after each aligned loop's run-time checks
    ran = True                              # where control enters an aligned loop
    fell = True                             # in a fused loop's fallback (`array_stores.py`)
    record_call(name, ran, large, fell)     # before each return

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
from ..typing import intrinsics
from .align_peel import SIZE_GATE
from .ir_build import Emitter

RAN, FELL = "$streamjit_ran", "$streamjit_fell"


def _set(block, name, value, at=0):
    block.body[at:at] = [ir.Assign(ir.Const(value, block.loc), ir.Var(block.scope, name, block.loc), block.loc)]


def _after_checks(blocks, plan):
    """Record a failed check of a loop with iterations (an empty loop's
    checks fail too) right after the variable holding the checks is set."""
    for block in blocks.values():
        for at, stmt in enumerate(block.body):
            if isinstance(stmt, ir.Assign) and stmt.target.name == plan.checked:
                emit = Emitter(block.scope, stmt.loc)
                passed = emit.binop(operator.or_, stmt.target, emit.binop(operator.le, plan.span[1], plan.span[0]))
                failed = emit.assign(ir.Expr.unary("not", passed, stmt.loc), hint="failed")
                emit.assign(ir.Expr.binop(operator.or_, ir.Var(block.scope, FELL, stmt.loc), failed, stmt.loc),
                            target=FELL)
                block.body[at + 1:at + 1] = emit.stmts
                return


def run_pass(state):
    options, result = state.stream_options, state.metadata[METADATA_KEY]
    if options.parallel or not result.streamed_stores:
        return False
    blocks = state.func_ir.blocks
    entry = blocks[min(blocks)]
    at = next(i for i, s in enumerate(entry.body) if not (isinstance(s, ir.Assign) and isinstance(s.value, ir.Arg)))
    _set(entry, RAN, False, at)
    _set(entry, FELL, False, at)
    for plan in state.stream_peels:
        _set(blocks[plan.entry], RAN, True)
        _after_checks(blocks, plan)
    for label in state.stream_fallbacks:
        _set(blocks[label], FELL, True)
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
            emit.call(intrinsics.record_call, emit.const(result.call_counter), ir.Var(block.scope, RAN, emit.loc),
                      large, ir.Var(block.scope, FELL, emit.loc))
            block.body[-1:-1] = emit.stmts
    return True
