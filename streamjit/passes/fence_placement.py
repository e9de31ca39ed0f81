"""Place one store fence after each execution of a streamed loop nest.

Non-temporal stores are weakly ordered, so a later load (on this or another
thread, once the kernel returns) could see stale data without a fence. As
in Halide, the fence goes where control leaves the outermost loop of every
nest that holds an aligned (streamed) loop (its root, from `legality.py`:
for a row store inside loops that select the row, those loops too): at the
start of each block the nest exits to. That point post-dominates the nest's streamed stores and
precedes any later load; a ``return`` or ``raise`` inside the nest is such
an exit too. A time loop around the nest runs the fence after every
execution of the nest.

With ``parallel=True`` a ``prange`` nest's iterations run on worker
threads: each iteration ends with a fence (before every jump back to the
loop header), so each worker fences its own stores before the join,
whatever the thread pool does.
"""

from numba.core import ir
from numba.core.analysis import compute_cfg_from_blocks

from .. import codegen
from .rewrite.ir_build import Emitter, new_block, retarget

# The `StreamFacts` fields this pass reads, sets and leaves stale (`passes/analysis/facts.py`).
REQUIRES = ("peels",)
PRODUCES = ()
INVALIDATES = ()


def _fence(block, loc):
    emit = Emitter(block.scope, loc)
    emit.call(codegen.store_fence)
    return emit.stmts


def run_pass(state):
    """Insert a store fence on every exit of each streamed nest (with the aligned loops the peel
    added), or at the end of each iteration of a ``prange`` nest. True when any fence was
    inserted."""
    blocks = state.func_ir.blocks
    # the nests as they are now, after the peel added blocks to them
    cfg = compute_cfg_from_blocks(blocks)
    loops = cfg.loops()
    fenced = set()
    for old_root in dict.fromkeys(plan.root for plan in state.stream_facts.peels):
        root = loops[old_root.header]
        if old_root.kind == "prange":
            # every edge back to the header (a jump, or a branch out of an
            # inner loop) goes through a block that fences
            for label in sorted(set(root.body) - {root.header}):
                block = blocks[label]
                if root.header in (getattr(block.body[-1], "target", None), getattr(block.body[-1], "truebr", None),
                                   getattr(block.body[-1], "falsebr", None)):
                    loc = block.body[-1].loc
                    fence = new_block(blocks, block.scope, loc, _fence(block, loc) + [ir.Jump(root.header, loc)])
                    retarget(block, {root.header: fence})
                    fenced.add(fence)
            continue
        # a root that was itself peeled is now its head loop, then the
        # aligned loops after it: the nest is all of them
        nest = set(root.body).union(*(plan.added for plan in state.stream_facts.peels if plan.root is old_root))
        exits = {succ for label in nest for succ, _ in cfg.successors(label)} - nest
        for label in sorted(exits - fenced):
            fenced.add(label)
            blocks[label].body[0:0] = _fence(blocks[label], blocks[label].loc)
    return bool(fenced)
