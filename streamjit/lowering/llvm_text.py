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
# a non-temporal store: tagged, a scalar float's `movnti` (`nontemporal.py`),
# or a streamed fill (`stream_memset.py`)
NT_STORE = re.compile(r'^\s*(?:store .*!nontemporal|call void asm sideeffect "movnti|call void @streamjit\.stream_fill)',
                      re.M)
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

    def runs_into(lines, start):
        """("fence" or "ret", line index) that ends a path entering at ``start``, or (None, None)."""
        for n, line in enumerate(lines[start:], start):
            if STORE_FENCE.search(line):
                return "fence", n
            if _RETURN.match(line):
                return "ret", n
        return None, None

    ends = {label: runs_into(lines, 0) for label, lines in blocks.items()}
    # the returns reachable unfenced from each block's start: a fixed point over the CFG
    escapes = {label: {(label, n)} if kind == "ret" else set() for label, (kind, n) in ends.items()}
    changed = True
    while changed:
        changed = False
        for label, (kind, _) in ends.items():
            if kind is None:
                reached = set().union(*(escapes.get(s, set()) for s in successors[label]))
                if not reached <= escapes[label]:
                    escapes[label] |= reached
                    changed = True
    stores, returns = 0, set()
    for label, lines in blocks.items():
        for k, line in enumerate(lines):
            if NT_STORE.match(line):
                kind, n = runs_into(lines, k + 1)
                reached = {(label, n)} if kind == "ret" else set() if kind == "fence" else \
                    set().union(*(escapes.get(s, set()) for s in successors[label]))
                stores += bool(reached)
                returns |= reached
    return stores, returns
