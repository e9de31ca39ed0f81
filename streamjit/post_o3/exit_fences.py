"""A store fence before every return a streamed store can reach unfenced.

`passes/fence_placement.py` fences each streamed loop nest where control
leaves it in the IR: the loop's end, a ``return`` or ``raise`` inside it.
Numba's IR does not show the exceptions an operation raises inside the
loop (a division by zero, an index out of bounds under ``boundscheck``, a
failed allocation): lowered, each is a branch from the middle of the nest to
the function's return, with an error status, past the nest's fence. The
caller then sees the exception while streamed stores made before it may
still be unordered. This stage puts a copy of the function's own fence (the
module's first, in a function with none) before each such return (the paths
are read off the final CFG, `unfenced_returns`), marked `EXIT_FENCE_MARK`
for `stream_report`. Normal returns are already fenced by the nest's fence
and get none, nor do streamjit's own fills (`stream_memset.py`): each is
called inside a streamed nest, whose fence follows the call.
"""

import collections

from ..llvm_text import build
from ..llvm_text.counts import is_nt_store, is_store_fence
from ..protocol.markers import FILL

EXIT_FENCE_MARK = "; streamjit: exit fence"


def _ends(block, start):
    """("fence" or "ret", index) that ends a path entering ``block`` at
    ``start``, or (None, None) when it leaves the block first."""
    for k, inst in enumerate(block.insts[start:], start):
        if is_store_fence(inst):
            return "fence", k
        if inst.opcode == "ret":
            return "ret", k
    return None, None


def unfenced_returns(function):
    """(how many non-temporal stores can reach a ``ret`` along some path
    that passes no store fence, {(block label, index)} of those ``ret``s)."""
    blocks = {block.label: block for block in function.blocks}
    successors = {label: block.successors() for label, block in blocks.items()}
    ends = {label: _ends(block, 0) for label, block in blocks.items()}
    # the returns reachable unfenced from each block's start: a fixed point over the CFG, each
    # block's returns handed back to the predecessors that pass through without a fence or
    # return (a worklist: sweeping every block until nothing changed was quadratic in the blocks)
    escapes = {label: {(label, k)} if kind == "ret" else set() for label, (kind, k) in ends.items()}
    passing = collections.defaultdict(list)
    for label, (kind, _) in ends.items():
        for successor in successors[label] if kind is None else ():
            passing[successor].append(label)
    work = [label for label, reached in escapes.items() if reached]
    while work:
        label = work.pop()
        for predecessor in passing[label]:
            if not escapes[label] <= escapes[predecessor]:
                escapes[predecessor] |= escapes[label]
                work.append(predecessor)
    stores, returns = 0, set()
    for label, block in blocks.items():
        for k, inst in enumerate(block.insts):
            if is_nt_store(inst):
                kind, n = _ends(block, k + 1)
                reached = {(label, n)} if kind == "ret" else set() if kind == "fence" else \
                    set().union(*(escapes.get(s, set()) for s in successors[label]))
                stores += bool(reached)
                returns |= reached
    return stores, returns


def _every_return_follows_a_fence(function):
    """Whether each ``ret`` has a fence before it in its own block: then no
    path avoids one (the usual case, checked without building the CFG)."""
    return all(_ends(block, 0)[0] != "ret" for block in function.blocks)


def run(module, target):
    """Fence every return a non-temporal store reaches without a fence."""
    fences = {f.name: next((i for _, _, i in f.instructions() if is_store_fence(i)), None) for f in module.functions}
    first_fence = next(filter(None, fences.values()), None)
    if first_fence is None:  # (no nest fence: nothing streamed was placed)
        return False
    changed = False
    for function in module.functions:
        # (streamjit's own fills run inside a streamed nest, whose fence follows the call)
        if function.name.startswith(FILL) or _every_return_follows_a_fence(function) \
                or not any(is_nt_store(i) for _, _, i in function.instructions()):
            continue
        _, returns = unfenced_returns(function)
        own = fences[function.name]
        # (another function's fence without its attachments: its `!dbg` names that function)
        fence = own or first_fence
        for block in function.blocks:
            for k in sorted((k for label, k in returns if label == block.label), reverse=True):
                block.insts.insert(k, build.commented(fence, EXIT_FENCE_MARK, attachments=own is not None))
                changed = True
    return changed
