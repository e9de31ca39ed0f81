"""Reading LLVM IR text: the few facts the text rewrites share.

The rewrites after optimization (`nontemporal.py`, `pair_nontemporal.py`,
`prefetch.py`, `exit_fences.py`) work on the module's text, because llvmlite
exposes no metadata or instruction-building API on a parsed module. They
need element sizes, for addresses which pointer is a constant byte offset
from which, and for fences which paths lead from a streamed store to a
return.
"""

import re

# Bytes of the scalar types Numba arrays hold, as LLVM spells them.
ELEMENT_BYTES = {"i1": 1, "i8": 1, "i16": 2, "i32": 4, "i64": 8, "half": 2, "bfloat": 2, "float": 4,
                 "double": 8, "ptr": 8}

_CONST_GEP = re.compile(
    r"^\s*(%[\w.\-]+) = getelementptr (?:inbounds |nuw |nusw )*(\w+), ptr (%[\w.\-]+), i64 (-?\d+)\s*$")


def constant_offsets(lines):
    """``{pointer: (base pointer, byte offset)}`` for pointers computed as a
    constant offset from another, followed through chains of such offsets."""
    offsets = {}
    for line in lines:
        m = _CONST_GEP.match(line)
        if m and m.group(2) in ELEMENT_BYTES:
            base, offset = offsets.get(m.group(3), (m.group(3), 0))
            offsets[m.group(1)] = (base, offset + int(m.group(4)) * ELEMENT_BYTES[m.group(2)])
    return offsets


_BLOCK_LABEL = re.compile(r'^"?([-\w.$]+)"?:')
_SUCCESSOR = re.compile(r'label %"?([-\w.$]+)"?')
_NT_STORE = re.compile(r"^\s*store .*!nontemporal")
_RETURN = re.compile(r"^\s*ret\b")
# every target's store fence (`targets.emit_store_fence`)
STORE_FENCE = re.compile(r"call void @llvm\.(?:x86\.sse\.sfence|aarch64\.dmb)\(|^\s*fence\b")


def function_blocks(function_text):
    """``{label: [lines]}`` of one function's text (its ``define`` line
    first); the unlabelled entry block is ``<entry>``."""
    blocks, label = {}, "<entry>"
    for line in function_text.splitlines()[1:]:
        m = _BLOCK_LABEL.match(line)
        if m:
            label = m.group(1)
        blocks.setdefault(label, []).append(line)
    return blocks


def unfenced_returns(blocks):
    """(how many non-temporal stores can reach a ``ret`` along some path
    that passes no store fence, {(label, line index)} of those ``ret``s)."""
    successors = {label: {s for line in lines for s in _SUCCESSOR.findall(line)} for label, lines in blocks.items()}
    stores, returns = 0, set()
    for label, lines in blocks.items():
        for k, line in enumerate(lines):
            if not _NT_STORE.match(line):
                continue
            reached, stack, seen = set(), [(label, k + 1)], set()
            while stack:
                at, start = stack.pop()
                for n, later in enumerate(blocks.get(at, [])[start:], start):
                    if STORE_FENCE.search(later):
                        break
                    if _RETURN.match(later):
                        reached.add((at, n))
                        break
                else:
                    stack.extend((s, 0) for s in successors.get(at, ()) - seen)
                    seen |= successors.get(at, set())
            stores += bool(reached)
            returns |= reached
    return stores, returns
