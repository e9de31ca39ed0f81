"""Parallel streamed loops: split a `prange` loop into alignable blocks.

With ``parallel=True``, Numba runs a `prange` loop's iterations in chunks on
worker threads, in functions it generates. A chunk starts anywhere, so the
alignment peel must happen inside each worker, and each worker must fence
its own streamed stores before the join. This pass rewrites an innermost
`prange` loop that holds streamed stores,

    for i in prange(lo, hi): BODY

into a parallel loop over blocks of `BLOCK` iterations, each a sequential
loop that `align_peel.py` splits like any other (its own head, its own
aligned loop, its own fence from `fence_placement.py`, inside the worker):

    for b in prange((hi - lo + BLOCK - 1) // BLOCK):
        for i in range(lo + b*BLOCK, min(lo + b*BLOCK + BLOCK, hi)): BODY

The original loop's blocks become the inner loop; a new header and block
make the outer one. The IR is typed again, so the passes after this one see
the split loops as if the user had written them.
"""

import operator

from numba import prange
from numba.core import ir

from .. import codegen
from .accesses import streamed_store_names
from .analysis.scan import scan_kernel
from .rewrite.ir_build import Emitter, new_block, retarget, drop_definition
from .retype import retype

# The `StreamFacts` fields this pass reads, sets and leaves stale (`passes/analysis/facts.py`).
REQUIRES = ("options", "views", "store_origin", "typed")
PRODUCES = ("typed",)
INVALIDATES = ()

# Iterations per block: each block ends in a store fence, which waits for the
# write-combining buffers to drain; 16K-iteration blocks made a one-thread
# float32 copy 1.21x the plain loop instead of 1.40x with these (256 MiB;
# `bench/parallel.py` on the AMD EPYC Zen 5 VM, 2 cores: bench/README.md,
# "Parallel"). Only 16K and 2^18 were measured; that 2^18 is still small
# enough to balance a few dozen workers on large arrays is chosen, not
# measured (a 2-core machine cannot show it).
BLOCK = 1 << 18
BLOCK_HINT = "block"


def is_block_loop(loop):
    """Whether ``loop`` is a parallel loop over blocks this pass made: its
    iterations run the loop inside it over disjoint ranges."""
    return bool(loop.induction) and loop.induction.startswith(f"$streamjit_{BLOCK_HINT}.")


def _splittable(scan, loop):
    blocks = scan.func_ir.blocks
    header = blocks[loop.for_block].body[-1]
    return (loop.kind == "prange" and len(loop.range_call.args) < 3 and len(loop.entries) == 1
            and isinstance(blocks[next(iter(loop.entries))].body[-1], ir.Jump)
            and isinstance(header, ir.Branch) and header.falsebr not in loop.body)


def _split(scan, loop):
    blocks = scan.func_ir.blocks
    preheader = blocks[next(iter(loop.entries))]
    scope, loc = preheader.scope, loop.loc
    exit_label = blocks[loop.for_block].body[-1].falsebr
    call = loop.range_call
    # the user's prange call becomes a sequential range that nothing reads
    # (new statements, so `retype` types the call anew)
    owner, at = next((b, k) for b in blocks.values() for k, s in enumerate(b.body)
                     if isinstance(s, ir.Assign) and s.value is call)
    sequential = Emitter(scope, call.loc)
    sequential.call(range, *call.args, target=owner.body[at].target)
    owner.body[at:at + 1] = sequential.stmts
    pre = Emitter(scope, loc)
    lo = pre.value(loop.start) if isinstance(loop.start, int) else pre.assign(loop.start, hint="plo")
    hi = pre.assign(loop.stop, hint="phi")
    count = pre.binop(operator.floordiv, pre.add(pre.sub(hi, lo), BLOCK - 1), BLOCK)
    outer_iter = pre.range_iterator(prange, [count])

    head = Emitter(scope, loc)
    nxt = head.assign(ir.Expr.iternext(outer_iter, loc), hint="next")
    block_index = head.assign(ir.Expr.pair_first(nxt, loc), hint=BLOCK_HINT)
    more = head.assign(ir.Expr.pair_second(nxt, loc), hint="more")
    body = Emitter(scope, loc)
    start = body.add(lo, body.binop(operator.mul, block_index, BLOCK))
    stop = body.call(codegen.smaller, body.add(start, BLOCK), hi)
    drop_definition(blocks, scan.defs[loop.iterator][0])
    body.range_iterator(range, [start, stop], target=loop.iterator)
    body.stmts.append(ir.Jump(loop.header, loc))
    body_label = new_block(blocks, scope, loc, body.stmts)
    head_label = new_block(blocks, scope, loc, [])
    exit_inner = new_block(blocks, scope, loc, [ir.Jump(head_label, loc)])
    head.stmts.append(ir.Branch(more, body_label, exit_label, loc))
    blocks[head_label].body = head.stmts
    pre.stmts.append(ir.Jump(head_label, loc))
    preheader.body[-1:] = pre.stmts
    retarget(blocks[loop.for_block], {exit_label: exit_inner})


def run_pass(state):
    """With ``parallel=True``, split each ``prange`` loop that directly holds streamed stores into
    a parallel loop over blocks, each block a sequential loop; retype what was inserted. Returns
    how many loops were split."""
    facts = state.stream_facts
    if not facts.options.parallel:
        return False
    scan = scan_kernel(state.func_ir, state.typemap, True, facts.views)
    streamed = streamed_store_names(facts.options, scan, facts.store_origin)
    split = 0
    for loop in scan.loops:
        direct = [s for s in scan.stores() if s.array in streamed and s.loops and s.loops[-1] is loop]
        if direct and _splittable(scan, loop):
            _split(scan, loop)
            split += 1
    if split:
        retype(state)
    return split
