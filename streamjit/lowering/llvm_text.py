"""Reading LLVM IR text: the few facts the text rewrites share.

The rewrites after optimization (`nontemporal.py`, `pair_nontemporal.py`,
`prefetch.py`) work on the module's text, because llvmlite exposes no
metadata or instruction-building API on a parsed module. They need element
sizes and, for addresses, which pointer is a constant byte offset from which.
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
