"""A store fence before every return a streamed store can reach unfenced.

`passes/fence_placement.py` fences each streamed loop nest where control
leaves it in the IR: the loop's end, a ``return`` or ``raise`` inside it.
Numba's IR does not show the exceptions an operation raises inside the
loop (a division by zero, an index out of bounds under ``boundscheck``, a
failed allocation): lowered, each is a branch from the middle of the nest to
the function's return, with an error status, past the nest's fence. The
caller then sees the exception while streamed stores made before it may
still be unordered. This rewrite, on the optimized module's text, puts a
copy of the function's own fence before each such return (the paths are
read off the final CFG, `llvm_text.unfenced_returns`), marked
``EXIT_FENCE_MARK`` for `stream_report`. Normal returns are already fenced
by the nest's fence and get none.
"""

import re

from .llvm_text import NT_STORE, STORE_FENCE, function_blocks, unfenced_returns

EXIT_FENCE_MARK = "; streamjit: exit fence"
_FUNCTION = re.compile(r"^define [^\n]*\{\n.*?^\}$", re.M | re.S)


def _every_return_follows_a_fence(function_text):
    """Whether each ``ret`` has a fence before it in its own block: then no
    path avoids one (the usual case, checked without building the CFG)."""
    fenced = False
    for line in function_text.splitlines():
        if not line.startswith(" "):
            fenced = False
        elif "fence" in line and STORE_FENCE.search(line):
            fenced = True
        elif line.startswith("  ret ") and not fenced:
            return False
    return True


def _fenced(function_text, fence_call):
    if _every_return_follows_a_fence(function_text):
        return function_text
    blocks = function_blocks(function_text)
    _, returns = unfenced_returns(blocks)
    if not returns:
        return function_text
    lines = [function_text.splitlines()[0]]
    for label, block in blocks.items():
        for k, line in enumerate(block):
            if (label, k) in returns:
                lines.append(f"  {fence_call} {EXIT_FENCE_MARK}")
            lines.append(line)
    return "\n".join(lines)


def fence_exits(text):
    """The module text with every return that a non-temporal store reaches
    without a fence fenced; ``text`` itself when there is none."""
    if not NT_STORE.search(text):
        return text
    fence = STORE_FENCE.search(text)
    if fence is None:  # (no nest fence: nothing streamed was placed)
        return text
    line = text[text.rfind("\n", 0, fence.start()) + 1:text.find("\n", fence.start())].strip()
    rewritten = _FUNCTION.sub(lambda m: _fenced(m.group(0), line) if NT_STORE.search(m.group(0)) else m.group(0),
                              text)
    return rewritten if rewritten != text else text
