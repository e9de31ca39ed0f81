"""Place one store fence after each execution of a streamed loop nest.

Non-temporal stores are weakly ordered, so a later load (on this or another
thread, once the kernel returns) could see stale data without a fence. As
in Halide, the fence goes where control leaves the outermost loop of every
nest that holds an aligned (streamed) loop: at the start of each block the
nest exits to. That point post-dominates the nest's streamed stores and
precedes any later load; a ``return`` or ``raise`` inside the nest is such
an exit too. A time loop around the nest runs the fence after every
execution of the nest.

With ``parallel=True`` a ``prange`` nest's iterations run on worker
threads: each iteration ends with a fence (before every jump back to the
loop header), so each worker fences its own stores before the join,
whatever the thread pool does.
"""

from numba.core import ir

from ..typing import intrinsics
from .ir_build import Emitter


def _fence(block, loc):
    emit = Emitter(block.scope, loc)
    emit.expr_stmt(intrinsics.store_fence)
    return emit.stmts


def run_pass(state):
    blocks = state.func_ir.blocks
    fenced = set()
    for root in dict.fromkeys(plan.root for plan in state.stream_peels):
        if root.kind == "prange":
            for label in root.body:
                term = blocks[label].body[-1]
                if label != root.header and isinstance(term, ir.Jump) and term.target == root.header:
                    blocks[label].body[-1:-1] = _fence(blocks[label], term.loc)
            continue
        for label in sorted(root.exits - fenced):
            fenced.add(label)
            blocks[label].body[0:0] = _fence(blocks[label], blocks[label].loc)
    return bool(fenced)
