"""The host's LLVM module before O3, made compilable for another target.

`cross_target.py` builds a kernel for another CPU from the module the host's
code generation emitted, *before* O3 (kept by `library.StreamCodeLibrary`):
what O3 vectorizes depends on the target. For a target other than x86,
that module's text (not the optimized module the post-O3 stages read
through `llvm_text/module.py`'s `Module`) is rewritten here, before any
stage, by whole-line patterns over the few host-specific things it holds
(the host's data layout and triple, x86's store fence, the x86-only atomic
intrinsics x86's middle end made of Numba's reference counts), with the
reader's identifier grammar (`NAME`).
"""

import re

from ..llvm_text.module import NAME, unquoted
from ..protocol.targets import arch_of

_TARGET_HEADER = re.compile(r"^target (?:datalayout|triple) = .*$", re.M)
_X86_SFENCE_CALL = re.compile(r"(?:tail )?call void @llvm\.x86\.sse\.sfence\(\)")
_X86_SFENCE_DECL = re.compile(r"^declare void @llvm\.x86\.sse\.sfence\(\).*$", re.M)
# x86's middle end turns Numba's reference-count decrement (atomic sub, then
# test for zero) into `llvm.x86.atomic.sub.cc`; condition code 4 is "equal to
# zero", 5 "not equal".
_X86_ATOMIC_CC = re.compile(r"^(\s*)(%" + NAME + r") = call i8 @llvm\.x86\.atomic\.(add|sub)\.cc\.(i\d+)"
                            r"\(ptr ([^,]+), \4 ([^,]+), i32 ([45])\)\s*$", re.M)
_X86_ATOMIC_CC_DECL = re.compile(r"^declare i8 @llvm\.x86\.atomic\.\w+\.cc\.i\d+\(.*$", re.M)


def _generic_atomic_cc(match):
    indent, result, op, ty, ptr, value, cc = match.groups()
    stem = re.sub(r"[^-$\w]", "_", unquoted(result))
    tmp = f"%streamjit.atomic.{stem}"
    predicate = "eq" if cc == "4" else "ne"
    return (f"{indent}{tmp}.old = atomicrmw {op} ptr {ptr}, {ty} {value} seq_cst\n"
            f"{indent}{tmp}.new = {op} {ty} {tmp}.old, {value}\n"
            f"{indent}{tmp}.cc = icmp {predicate} {ty} {tmp}.new, 0\n"
            f"{indent}{result} = zext i1 {tmp}.cc to i8")


def retarget_host_text(llvm_text, triple):
    """Make the host's LLVM text before O3 compilable for ``triple``, not an
    x86 one (`cross_target.py` clones the module for those): without the
    host's data layout and triple, its store fences that target's, and
    x86-only atomic intrinsics generic atomics."""
    text = _TARGET_HEADER.sub("", llvm_text)
    arch = arch_of(triple)
    text = _X86_ATOMIC_CC_DECL.sub("", _X86_ATOMIC_CC.sub(_generic_atomic_cc, text))
    if arch == "aarch64":
        fence, declaration = "call void @llvm.aarch64.dmb(i32 10)", "\ndeclare void @llvm.aarch64.dmb(i32 immarg)\n"
    else:
        fence, declaration = "fence release", ""
    fenced, count = _X86_SFENCE_CALL.subn(fence, text)
    text = _X86_SFENCE_DECL.sub("", fenced) + (declaration if count else "")
    unknown = re.search(r"@llvm\.x86\.[\w.]+", text)
    if unknown:
        raise ValueError(f"cannot compile for {triple}: the module uses the x86 intrinsic {unknown.group(0)}")
    return text
