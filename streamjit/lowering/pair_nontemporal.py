"""AArch64: join 128-bit non-temporal accesses into 256-bit `stnp`/`ldnp` pairs.

AArch64's non-temporal store and load are *pair* instructions. LLVM emits
`stnp q0, q1` / `ldnp q0, q1` for a non-temporal access of a 256-bit
vector, but a 128-bit one is split into 64-bit halves or left plain. NEON
registers are 128 bits wide, so the vectorizer's accesses are 128-bit: as in
Halide, streamed vectors must be at least 256 bits. After the non-temporal
rewrite, this pass joins two non-temporal 128-bit accesses of one block that
touch adjacent halves of a 32-byte-aligned block (the unrolled parts of the
aligned loop), with nothing between them:

    store <4 x float> %a, ptr %p ; store <4 x float> %b, ptr %p+16
      -> %ab = shufflevector %a, %b, <0..7> ; store <8 x float> %ab, ptr %p
    %a = load <4 x float>, ptr %p ; %b = load <4 x float>, ptr %p+16
      -> %ab = load <8 x float>, ptr %p ; %a, %b = its two halves
"""

import re

from .llvm_text import ELEMENT_BYTES, constant_offsets
from .targets import arch_of

_STORE = re.compile(r"^(\s*)store (<(\d+) x ([^>]+)>) (%[\w.\-]+), ptr (%[\w.\-]+), align (\d+)(.*!nontemporal.*)$")
_LOAD = re.compile(r"^(\s*)(%[\w.\-]+) = load (<(\d+) x ([^>]+)>), ptr (%[\w.\-]+), align (\d+)(.*!nontemporal.*)$")
_TRIPLE = re.compile(r'^target triple = "([^"]+)"', re.M)


def _adjacent_halves(offsets, first_ptr, second_ptr, lanes, element, align):
    """True if two 16-byte accesses at these pointers form one aligned 32-byte block."""
    if lanes * element != 16 or align < 32:
        return False
    base, at = offsets.get(first_ptr, (first_ptr, 0))
    return offsets.get(second_ptr) == (base, at + 16)


def pair_streamed_accesses(llvm_text):
    """Return ``llvm_text`` with adjacent 128-bit NT accesses joined (AArch64 only)."""
    triple = _TRIPLE.search(llvm_text)
    if not triple or arch_of(triple.group(1)) != "aarch64":
        return llvm_text
    lines = llvm_text.split("\n")
    offsets = constant_offsets(lines)
    count = 0
    for i in range(len(lines) - 1):
        first, second = _STORE.match(lines[i]), _STORE.match(lines[i + 1])
        if first and second and first.group(2) == second.group(2) and _adjacent_halves(
                offsets, first.group(6), second.group(6), int(first.group(3)),
                ELEMENT_BYTES.get(first.group(4).strip(), 0), int(first.group(7))):
            indent, lanes, elem, pair = first.group(1), int(first.group(3)), first.group(4), f"%streamjit.pair.{count}"
            mask = ", ".join(f"i32 {k}" for k in range(2 * lanes))
            lines[i] = (f"{indent}{pair} = shufflevector {first.group(2)} {first.group(5)}, {first.group(2)} "
                        f"{second.group(5)}, <{2 * lanes} x i32> <{mask}>")
            lines[i + 1] = (f"{indent}store <{2 * lanes} x {elem}> {pair}, ptr {first.group(6)}, "
                            f"align {first.group(7)}{first.group(8)}")
            count += 1
            continue
        first, second = _LOAD.match(lines[i]), _LOAD.match(lines[i + 1])
        if first and second and first.group(3) == second.group(3) and _adjacent_halves(
                offsets, first.group(6), second.group(6), int(first.group(4)),
                ELEMENT_BYTES.get(first.group(5).strip(), 0), int(first.group(7))):
            indent, lanes, elem, pair = first.group(1), int(first.group(4)), first.group(5), f"%streamjit.pair.{count}"
            halves = [", ".join(f"i32 {k}" for k in range(h * lanes, (h + 1) * lanes)) for h in (0, 1)]
            wide = f"<{2 * lanes} x {elem}>"
            lines[i] = (f"{indent}{pair} = load {wide}, ptr {first.group(6)}, align {first.group(7)}{first.group(8)}\n"
                        f"{indent}{first.group(2)} = shufflevector {wide} {pair}, {wide} poison, "
                        f"<{lanes} x i32> <{halves[0]}>")
            lines[i + 1] = (f"{indent}{second.group(2)} = shufflevector {wide} {pair}, {wide} poison, "
                            f"<{lanes} x i32> <{halves[1]}>")
            count += 1
    return "\n".join(lines) if count else llvm_text
