"""The loop vectorizer's width for streamed stencil loops, set before O3.

On many AVX-512 CPUs LLVM vectorizes with 256-bit vectors
(``prefer-256-bit``): 512-bit ones cost plain loops and memory-bound
streams a few percent. A streamed stencil loop, one array loaded at two
elements or more per iteration (a Jacobi sweep's five loads per store), is
bound by its loads from the cache as much as by memory, and 512-bit vectors
halve them: on the Intel Xeon VM (family 6 model 167), bench/vector_width.py,
256 MiB, a float64 swap Jacobi ran 1.16x njit at 256 bits and 1.23x at 512,
heat_3d (255^3) 1.06x and 1.14x, where a float32 stencil went from 1.18x to
1.15x and triads, compiled 512 bits wide, lost 2-5%. Which item sizes take the wide vectors is the machine profile's
``wide_stencil_bytes`` row; the pass that versions the loop
(`passes/loop_copies.py`, `vector_lanes`) writes the lanes into the marker
of each streamed store of such a loop (``streamjit.stream_store:out:
scalar=8:lanes=8``, `protocol/markers.py`).

This stage finds, in each function, the innermost natural loop holding a
store so marked and attaches ``llvm.loop.vectorize.width`` (with
``llvm.loop.vectorize.enable``) to its latches' branches: the metadata
``#pragma clang loop vectorize_width(8)`` gives a loop in C. The rest of
the function, the plain versions of the same loop included, keeps LLVM's
width. It runs before O3 because the loop vectorizer, inside O3, reads it.
A module with no such marker is returned as it is, unparsed.
"""

import llvmlite.binding as llvm

from ..llvm_text.module import Module
from ..protocol.markers import STREAM_STORE_SCOPE, parse_store_marker


def _terminator(block):
    return next(inst for inst in reversed(block.insts) if inst.is_instruction)


def _widened(module, lanes_of):
    """Attach the width to the latches of each innermost loop holding a
    store whose scope list ``lanes_of`` gives lanes (Numba's unoptimized
    code carries no loop metadata of its own); whether any was attached."""
    changed = False
    for function in module.functions:
        marked = {block.label: lanes_of[inst.scope()] for block in function.blocks for inst in block.insts
                  if inst.opcode == "store" and inst.scope() in lanes_of}
        if not marked:
            continue
        loops = function.loops()
        widths = {}  # the latches of each innermost loop holding a marked store -> its lanes
        for label, lanes in marked.items():
            holding = [loop for loop in loops if label in loop[1]]
            if holding:
                widths[tuple(min(holding, key=lambda loop: len(loop[1]))[0])] = lanes
        blocks = {b.label: b for b in function.blocks}
        for latches, lanes in widths.items():
            if any("llvm.loop" in _terminator(blocks[latch]).metadata for latch in latches):
                continue  # (a loop optimized before, in a library linked in: vectorized already)
            width = module.add_metadata(f'!{{!"llvm.loop.vectorize.width", i32 {lanes}}}')
            node = max(module.metadata) + 1
            module.append(f"!{node} = distinct !{{!{node}, !{width}}}")
            # (every latch carries the same node: LLVM reads a loop's metadata only where they agree)
            for latch in map(blocks.get, latches):
                at = latch.insts.index(_terminator(latch))
                latch.insts[at] = latch.insts[at].with_metadata("llvm.loop", node)
            changed = True
    return changed


def run(module):
    """``module`` (an llvmlite module) with the vector widths its streamed
    stores' markers ask for set on their loops: a new module where one was
    set, else ``module`` itself."""
    text = str(module)
    if ":lanes=" not in text:
        return module
    edited = Module(text)
    lanes_of = {i: lanes for i, marker in edited.marked_scope_lists(STREAM_STORE_SCOPE).items()
                if (lanes := parse_store_marker(marker)[2])}
    if not lanes_of or not _widened(edited, lanes_of):
        return module
    widened = llvm.parse_assembly(str(edited))
    widened.verify()
    widened.name = module.name
    return widened
