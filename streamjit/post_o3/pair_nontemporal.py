"""AArch64: join 128-bit non-temporal accesses into 256-bit `stnp`/`ldnp` pairs.

AArch64's non-temporal store and load are *pair* instructions. LLVM emits
`stnp q0, q1` / `ldnp q0, q1` for a non-temporal access of a 256-bit
vector, but a 128-bit one is split into 64-bit halves or left plain. NEON
registers are 128 bits wide, so the vectorizer's accesses are 128-bit: as in
Halide, streamed vectors must be at least 256 bits. After the non-temporal
stage, this stage joins two non-temporal 128-bit accesses of one block that
touch adjacent halves of a 32-byte-aligned block (the unrolled parts of the
aligned loop), with nothing between them:

    store <4 x float> %a, ptr %p ; store <4 x float> %b, ptr %p+16
      -> %ab = shufflevector %a, %b, <0..7> ; store <8 x float> %ab, ptr %p
    %a = load <4 x float>, ptr %p ; %b = load <4 x float>, ptr %p+16
      -> %ab = load <8 x float>, ptr %p ; %a, %b = its two halves
"""

from ..llvm_text import build
from ..llvm_text.module import LOCAL, type_bytes, vector_shape


def _adjacent_halves(offsets, first, second):
    """True if two non-temporal 16-byte accesses of one kind form one aligned 32-byte block."""
    if first.opcode != second.opcode or first.opcode not in ("store", "load") or first.type != second.type \
            or "nontemporal" not in first.metadata or "nontemporal" not in second.metadata:
        return False
    shape = vector_shape(first.type)
    if not shape or shape[0] or type_bytes(first.type) != 16 or (first.align or 0) < 32:
        return False
    if first.opcode == "store" and not (LOCAL.fullmatch(first.value) and LOCAL.fullmatch(second.value)):
        return False
    base, at = offsets.get(first.pointer, (first.pointer, 0))
    return second.pointer is not None and offsets.get(second.pointer) == (base, at + 16)


def _paired(function, first, second):
    """The instructions of the 32-byte access that replaces ``first`` and ``second``."""
    _, lanes, element = vector_shape(first.type)
    pair, wide = function.new_name("pair"), f"<{2 * lanes} x {element}>"
    if first.opcode == "store":
        return [build.shuffle(pair, first.type, first.value, second.value, range(2 * lanes)),
                build.store(wide, pair, first.pointer, first.align, first.tail)]
    return [build.load(pair, wide, first.pointer, first.align, first.tail)] + [
        build.shuffle(half.result, wide, pair, "poison", range(h * lanes, (h + 1) * lanes))
        for h, half in enumerate((first, second))]


def run(module, target):
    """Join adjacent 128-bit NT accesses, per block (run on AArch64 only: `stages.APPLIES`)."""
    changed = False
    for function in module.functions:
        offsets = function.constant_offsets()
        for block in function.blocks:
            insts = block.insts
            changed |= block.rewrite_runs(lambda k: (_paired(function, insts[k], insts[k + 1]), k + 2) if (
                k + 1 < len(insts) and _adjacent_halves(offsets, insts[k], insts[k + 1])) else None)
    return changed
