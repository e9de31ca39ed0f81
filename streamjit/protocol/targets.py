"""Per-target facts the rewrite needs: which fence orders streamed stores,
how wide an aligned streamed block is, and how to recognise streaming
instructions in the target's assembly.

Non-temporal stores are weakly ordered on x86 (`movnt*`) and AArch64
(`stnp`), so each streamed loop nest ends in a store fence: `sfence` on x86,
`dmb ishst` on AArch64 (Halide emits nothing there; we do), and a release
fence on any other target.
"""

import functools
import re
from dataclasses import dataclass

import llvmlite.binding as llvm
import llvmlite.ir as llir

# Streamed destinations are peeled to this alignment: one cache line, which
# is also the widest vector register (zmm) and covers AArch64's `stnp` pairs.
STREAM_ALIGN_BYTES = 64
# A page as the 4K-aliasing check and the placement of fresh arrays see it:
# the core compares the low 12 bits of a load's and a store's addresses.
PAGE_BYTES = 4096

_NT_STORE_ASM = re.compile(r"^\s*(v?movnt(?:ps|pd|dq|i|ss|sd)\w*|stnp|stnt1\w*)\s+(.*)$", re.M)
# The store fences we emit: x86 `sfence`, AArch64 `dmb ishst`, and what LLVM
# makes of a release fence elsewhere (RISC-V `fence rw,w`, POWER `lwsync`).
_FENCE_ASM = re.compile(r"^\s*(sfence|dmb\s+ishst|fence\s+rw,\s*w|lwsync)\s*$", re.M)
_VECTOR_REG = re.compile(r"%?\b([xyz]mm\d+|q\d+|z\d+)\b")
_SCALAR_NT = ("movnti", "movntss", "movntsd")


def arch_of(triple):
    """'x86' / 'aarch64' / 'other' for an LLVM target triple."""
    arch = triple.split("-", 1)[0]
    if arch in ("x86_64", "i386", "i686"):
        return "x86"
    if arch in ("aarch64", "arm64"):
        return "aarch64"
    return "other"


def host_build_cpu():
    """``(cpu, features)`` the host build compiles for: Numba's
    ``NUMBA_CPU_NAME`` / ``NUMBA_CPU_FEATURES`` where set (a build for
    ``x86-64`` on an AMD host has no SSE4A), else the host CPU (features
    None: its own)."""
    from numba.core import config

    if config.CPU_NAME:
        return config.CPU_NAME, config.CPU_FEATURES or ""
    return llvm.get_host_cpu_name(), (config.CPU_FEATURES or None)


def scalar_fp_through_integer_register(triple, cpu, features):
    """Whether scalar floating-point NT stores must go through an integer
    register for ``triple``/``cpu``/``features`` (features None: the host
    CPU's own): x86 has ``movnti`` for 32- and 64-bit integers, and
    ``movntss``/``movntsd`` only with AMD's SSE4A; without it LLVM emits a
    tagged ``double`` store as a plain ``movsd`` (and folds a bitcast to
    ``i64`` back into one), so only inline assembly keeps the hint
    (measured: bench/README.md)."""
    if features is None:  # (the host CPU's own features)
        sse4a = llvm.get_host_cpu_features().get("sse4a", False)
    else:
        sse4a = "+sse4a" in features or bool(re.match(r"(znver|bdver|btver|amdfam10|barcelona)", cpu or ""))
    return triple.startswith(("x86_64", "i686")) and not sse4a


@dataclass(frozen=True)
class Target:
    """The machine a module is compiled for, as the post-O3 stages need it:
    the host (``triple`` None) or another one (`cross_target.py`). What "the
    host" is, is resolved here and nowhere else (`resolved`)."""

    triple: str = None
    cpu: str = None
    features: str = None

    @functools.cached_property
    def resolved(self):
        """``(triple, cpu, features)``: the host's where ``triple`` is None
        (the process's triple and `host_build_cpu`), else the fields."""
        if self.triple is None:
            return (llvm.get_process_triple(), *host_build_cpu())
        return self.triple, self.cpu, self.features

    @property
    def arch(self):
        return arch_of(self.resolved[0])

    @property
    def linux(self):
        return "linux" in self.resolved[0]

    @functools.cached_property
    def fp_through_integers(self):
        """See `scalar_fp_through_integer_register`."""
        return scalar_fp_through_integer_register(*self.resolved)


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


def nt_store_forms(asm):
    """The distinct vector non-temporal stores in assembly text, each as its
    mnemonic and register class: ``vmovntps %zmm``, ``stnp q``, ``stnt1w``."""
    forms = set()
    for mnemonic, operands in _NT_STORE_ASM.findall(asm):
        if mnemonic.startswith("stnt1"):
            forms.add(mnemonic[:6])
        elif re.fullmatch(r"v?movnt(?:ps|pd|dq)", mnemonic) and re.match(r"%[xyz]mm", operands):
            forms.add(f"{mnemonic} {operands[:4]}")
        elif mnemonic == "stnp" and operands.startswith("q"):
            forms.add("stnp q")
    return forms


def fence_forms(asm):
    """The distinct store fences (`emit_store_fence`) in assembly text."""
    return {re.sub(r"\s+", " ", fence) for fence in _FENCE_ASM.findall(asm)}


def count_asm_streaming(asm):
    """Count (vector NT stores, scalar NT stores, fences) in assembly text."""
    vector = scalar = 0
    for mnemonic, operands in _NT_STORE_ASM.findall(asm):
        if mnemonic not in _SCALAR_NT and _VECTOR_REG.search(operands):
            vector += 1
        else:
            scalar += 1
    return vector, scalar, len(_FENCE_ASM.findall(asm))
