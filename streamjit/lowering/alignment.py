"""Alignment proofs for the aligned (peeled) streamed loop.

A vector non-temporal store must be aligned to its width or it faults, and
LLVM only emits one when it *knows* the alignment. The stream pass peels
each streamed loop until the destination is `STREAM_ALIGN_BYTES`-aligned
and checks that at run time; this module hands that fact to LLVM.

LLVM's AlignmentFromAssumptions pass, which runs after the loop vectorizer,
only reads `llvm.assume(i1 true) ["align"(ptr p, i64 A)]` operand bundles,
and llvmlite cannot build operand bundles. So lowering emits a call to a
placeholder function (`emit_alignment_promise`), and
`bundle_alignment_promises` rewrites those calls into the bundle form in the
module text, before O3 runs.

The promise is made on a *laundered* copy of the element pointer
(`llvm.launder.invariant.group`: same address, but LLVM cannot fold it back
into the array's data pointer). Every store of the aligned loop is addressed
from that one pointer, so the pass can prove each vector store's alignment
by scalar evolution from it; addresses re-derived from the data pointer
often reach the loop through phis that the proof cannot see into.
"""

import re

import llvmlite.ir as llir

from .targets import STREAM_ALIGN_BYTES

PLACEHOLDER = "streamjit.alignment_promise"
_LAUNDER = "llvm.launder.invariant.group.p0"
_CALL = re.compile(r'call void @"?%s"?\((ptr [^)]+)\)' % re.escape(PLACEHOLDER))
_DECLARATION = re.compile(r'^declare void @"?%s"?\(.*$' % re.escape(PLACEHOLDER), re.M)


def emit_alignment_promise(builder, element_ptr):
    """Return a laundered copy of ``element_ptr`` promised stream-aligned."""
    module = builder.module
    byte_ptr = llir.IntType(8).as_pointer()
    launder = module.globals.get(_LAUNDER) or llir.Function(module, llir.FunctionType(byte_ptr, (byte_ptr,)), _LAUNDER)
    pointer = builder.bitcast(builder.call(launder, (builder.bitcast(element_ptr, byte_ptr),)), element_ptr.type)
    fnty = llir.FunctionType(llir.VoidType(), (pointer.type,))
    fn = module.globals.get(PLACEHOLDER) or llir.Function(module, fnty, PLACEHOLDER)
    builder.call(fn, (pointer,))
    return pointer


def bundle_alignment_promises(llvm_text):
    """Rewrite placeholder calls into `llvm.assume` alignment bundles."""
    if PLACEHOLDER not in llvm_text:
        return llvm_text
    text = _CALL.sub(
        lambda m: f'call void @llvm.assume(i1 true) [ "align"({m.group(1)}, i64 {STREAM_ALIGN_BYTES}) ]',
        llvm_text,
    )
    text = _DECLARATION.sub("", text)
    if not re.search(r"^declare void @llvm\.assume\(", text, re.M):
        text += "\ndeclare void @llvm.assume(i1 noundef)\n"
    return text
