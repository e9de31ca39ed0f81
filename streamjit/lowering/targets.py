"""Per-target facts the rewrite needs: which fence orders streamed stores,
how wide an aligned streamed block is, and how to recognise streaming
instructions in the target's assembly.

Non-temporal stores are weakly ordered on x86 (`movnt*`) and AArch64
(`stnp`), so each streamed loop nest ends in a store fence: `sfence` on x86,
`dmb ishst` on AArch64 (Halide emits nothing there; we do), and a release
fence on any other target.
"""

import re

import llvmlite.ir as llir

# Streamed destinations are peeled to this alignment: one cache line, which
# is also the widest vector register (zmm) and covers AArch64's `stnp` pairs.
STREAM_ALIGN_BYTES = 64

_NT_STORE_ASM = re.compile(r"^\s*(v?movnt(?:ps|pd|dq|i|ss|sd)\w*|stnp|stnt1\w*)\s+(.*)$", re.M)
_FENCE_ASM = re.compile(r"^\s*(sfence|mfence|dmb\s+ish\w*|fence\b.*)$", re.M)
_VECTOR_REG = re.compile(r"%?\b([xyz]mm\d+|q\d+)\b")
_SCALAR_NT = ("movnti", "movntss", "movntsd")


def arch_of(triple):
    """'x86' / 'aarch64' / 'other' for an LLVM target triple."""
    arch = triple.split("-", 1)[0]
    if arch in ("x86_64", "i386", "i686"):
        return "x86"
    if arch in ("aarch64", "arm64"):
        return "aarch64"
    return "other"


def emit_store_fence(builder, triple):
    """Emit the store fence that orders this target's streamed stores."""
    module = builder.module
    arch = arch_of(triple)
    if arch == "x86":
        fn = module.declare_intrinsic("llvm.x86.sse.sfence", (), llir.FunctionType(llir.VoidType(), ()))
        builder.call(fn, ())
    elif arch == "aarch64":
        # dmb ishst: barrier option 0b1010 (inner shareable, stores only).
        fnty = llir.FunctionType(llir.VoidType(), (llir.IntType(32),))
        fn = module.declare_intrinsic("llvm.aarch64.dmb", (), fnty)
        builder.call(fn, (llir.Constant(llir.IntType(32), 10),))
    else:
        builder.fence("release")


def count_asm_streaming(asm):
    """Count (vector NT stores, scalar NT stores, fences) in assembly text."""
    vector = scalar = 0
    for mnemonic, operands in _NT_STORE_ASM.findall(asm):
        if mnemonic not in _SCALAR_NT and _VECTOR_REG.search(operands):
            vector += 1
        else:
            scalar += 1
    return vector, scalar, len(_FENCE_ASM.findall(asm))
