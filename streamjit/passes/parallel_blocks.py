"""Parallel streamed loops: split a `prange` loop into aligned-able blocks.

With ``parallel=True``, Numba runs a `prange` loop's iterations in chunks on
worker threads, in functions it generates. A chunk starts anywhere, so the
alignment peel must happen inside each worker, and each worker must fence
its own streamed stores before the join. This pass rewrites an innermost
`prange` loop that holds streamed stores,

    for i in prange(lo, hi): BODY

into a parallel loop over blocks of `BLOCK` iterations, each a sequential
loop that `align_peel.py` splits like any other (its own head, its own
aligned loop):

    for b in prange(ceil((hi - lo) / BLOCK)):
        for i in range(lo + b*BLOCK, min(lo + (b+1)*BLOCK, hi)): BODY

`fence_placement.py` then ends each parallel iteration with a fence.
Legality is checked on the loop as the user wrote it, before this split.
"""

import ast
import copy

# Iterations per block: each block ends in a store fence, which waits for the
# write-combining buffers to drain; 16K-iteration blocks made a one-thread
# float32 copy 1.21x the plain loop instead of 1.40x with these (256 MiB).
# Still small enough to balance a few dozen workers on large arrays.
BLOCK = 1 << 18


def is_prange(loop):
    func = loop.node.iter.func if isinstance(loop.node, ast.For) and isinstance(loop.node.iter, ast.Call) else None
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
    return loop.is_range and name == "prange"


def _name(id_, ctx=ast.Load):
    return ast.Name(id=id_, ctx=ctx())


def split_prange_loops(scan, streamed):
    """Rewrite innermost `prange` loops that store to ``streamed`` arrays;
    return how many were split."""
    split = 0
    for loop in scan.loops:
        direct = [s for s in scan.stores() if s.array in streamed and s.loops and s.loops[-1] is loop]
        if not direct or not is_prange(loop) or not loop.unit_step or loop.node.orelse:
            continue
        node, n = loop.node, loop.serial
        lo, hi, block = f"__streamjit_plo{n}", f"__streamjit_phi{n}", f"__streamjit_block{n}"
        start = ast.BinOp(left=_name(lo), op=ast.Add(),
                          right=ast.BinOp(left=_name(block), op=ast.Mult(), right=ast.Constant(value=BLOCK)))
        stop = ast.Call(func=_name("min"), keywords=[], args=[
            ast.BinOp(left=copy.deepcopy(start), op=ast.Add(), right=ast.Constant(value=BLOCK)), _name(hi)])
        inner = ast.For(target=node.target, iter=ast.Call(func=_name("range"), args=[start, stop], keywords=[]),
                        body=node.body, orelse=[])
        blocks = ast.BinOp(left=ast.BinOp(left=ast.BinOp(left=_name(hi), op=ast.Sub(), right=_name(lo)),
                                          op=ast.Add(), right=ast.Constant(value=BLOCK - 1)),
                           op=ast.FloorDiv(), right=ast.Constant(value=BLOCK))
        outer = ast.For(target=_name(block, ast.Store),
                        iter=ast.Call(func=copy.deepcopy(node.iter.func), args=[blocks], keywords=[]),
                        body=[inner], orelse=[])
        replacement = [
            ast.Assign(targets=[_name(lo, ast.Store)], value=loop.start or ast.Constant(value=0)),
            ast.Assign(targets=[_name(hi, ast.Store)], value=loop.stop),
            outer,
        ]
        scan.replace_statement(node, replacement)
        split += 1
    return split
