"""AArch64: pair 128-bit streamed vector stores into 256-bit `stnp q, q`.

AArch64's non-temporal store is a *pair* store. LLVM emits `stnp q0, q1`
for a non-temporal store of a 256-bit vector, but splits a 128-bit one into
two 64-bit halves (`stnp d0, d1`). NEON registers are 128 bits wide, so the
vectorizer's stores are 128-bit: as in Halide, streamed vectors must be at
least 256 bits. After the non-temporal rewrite, this pass joins two
non-temporal 128-bit stores of one block that write adjacent halves of a
32-byte-aligned block (the unrolled parts of the aligned loop), with nothing
between them, into one 256-bit store of the concatenated vectors.
"""

import re

from .llvm_text import ELEMENT_BYTES, constant_offsets
from .targets import arch_of

_STORE = re.compile(r"^(\s*)store (<(\d+) x ([^>]+)>) (%[\w.\-]+), ptr (%[\w.\-]+), align (\d+)(.*!nontemporal.*)$")
_TRIPLE = re.compile(r'^target triple = "([^"]+)"', re.M)


def pair_streamed_stores(llvm_text):
    """Return ``llvm_text`` with adjacent 128-bit NT stores joined (AArch64 only)."""
    triple = _TRIPLE.search(llvm_text)
    if not triple or arch_of(triple.group(1)) != "aarch64":
        return llvm_text
    lines = llvm_text.split("\n")
    offsets = constant_offsets(lines)
    count = 0
    for i in range(len(lines) - 1):
        first, second = _STORE.match(lines[i]), _STORE.match(lines[i + 1])
        if not first or not second or first.group(2) != second.group(2):
            continue
        lanes, element = int(first.group(3)), ELEMENT_BYTES.get(first.group(4).strip(), 0)
        if lanes * element != 16 or int(first.group(7)) < 32:
            continue
        first_at = offsets.get(first.group(6), (first.group(6), 0))
        if offsets.get(second.group(6)) != (first_at[0], first_at[1] + 16):
            continue
        indent, vector = first.group(1), f"%streamjit.pair.{count}"
        mask = ", ".join(f"i32 {k}" for k in range(2 * lanes))
        lines[i] = (f"{indent}{vector} = shufflevector {first.group(2)} {first.group(5)}, {first.group(2)} "
                    f"{second.group(5)}, <{2 * lanes} x i32> <{mask}>")
        lines[i + 1] = (f"{indent}store <{2 * lanes} x {first.group(4)}> {vector}, ptr {first.group(6)}, "
                        f"align {first.group(7)}{first.group(8)}")
        count += 1
    return "\n".join(lines) if count else llvm_text
