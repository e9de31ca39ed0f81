"""Alignment proofs for the aligned (peeled) streamed loop.

A vector non-temporal store must be aligned to its width or it faults, and
LLVM only emits one when it *knows* the alignment. The stream pass peels
each streamed loop until the destination is `STREAM_ALIGN_BYTES`-aligned
and checks that at run time; this module hands that fact to LLVM.

LLVM's AlignmentFromAssumptions pass, which runs after the loop vectorizer,
only reads `llvm.assume(i1 true) ["align"(ptr base, i64 A, i64 off)]`
operand bundles (meaning `base - off` is A-aligned), and llvmlite cannot
build operand bundles. So lowering emits a call to a placeholder function,
`emit_alignment_promise`, and `bundle_alignment_promises` rewrites those
calls into the bundle form in the module text, before O3 runs. The bundle is
stated on the array's data pointer, which every address in the loop is
computed from, so LLVM can propagate it to each vectorized store.
"""

import re

import llvmlite.ir as llir

from .targets import STREAM_ALIGN_BYTES

PLACEHOLDER = "streamjit.alignment_promise"
_CALL = re.compile(r'call void @"?%s"?\((ptr [^,]+), (i64 [^)]+)\)' % re.escape(PLACEHOLDER))
_DECLARATION = re.compile(r'^declare void @"?%s"?\(.*$' % re.escape(PLACEHOLDER), re.M)


def emit_alignment_promise(builder, base, element_ptr):
    """Promise that ``element_ptr`` (derived from ``base``) is stream-aligned."""
    fnty = llir.FunctionType(llir.VoidType(), (base.type, llir.IntType(64)))
    fn = builder.module.globals.get(PLACEHOLDER) or llir.Function(builder.module, fnty, PLACEHOLDER)
    i64 = llir.IntType(64)
    offset = builder.sub(builder.ptrtoint(base, i64), builder.ptrtoint(element_ptr, i64))
    builder.call(fn, (base, offset))


def bundle_alignment_promises(llvm_text):
    """Rewrite placeholder calls into `llvm.assume` alignment bundles."""
    if PLACEHOLDER not in llvm_text:
        return llvm_text
    text = _CALL.sub(
        lambda m: f'call void @llvm.assume(i1 true) [ "align"({m.group(1)}, i64 {STREAM_ALIGN_BYTES}, {m.group(2)}) ]',
        llvm_text,
    )
    text = _DECLARATION.sub("", text)
    if not re.search(r"^declare void @llvm\.assume\(", text, re.M):
        text += "\ndeclare void @llvm.assume(i1 noundef)\n"
    return text
