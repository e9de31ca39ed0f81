"""Alignment proofs for the aligned (peeled) streamed loop.

A vector non-temporal store must be aligned to its width or it faults, and
LLVM only emits one when it *knows* the alignment. The stream pass peels
each streamed loop until the destination is `STREAM_ALIGN_BYTES`-aligned
and checks that at run time; this module hands that fact to LLVM.

LLVM's AlignmentFromAssumptions pass, which runs after the loop vectorizer,
only reads `llvm.assume(i1 true) ["align"(ptr p, i64 A)]` operand bundles
(an `icmp` on the pointer's low bits reached some vector stores but not
others). llvmlite cannot build operand bundles, so `AlignmentAssumption` is
an instruction of our own that prints one.

The promise is made on a *laundered* copy of the element pointer
(`llvm.launder.invariant.group`: same address, but LLVM cannot fold it back
into the array's data pointer). Every store of the aligned loop is addressed
from that one pointer, so the pass can prove each vector store's alignment
by scalar evolution from it; addresses re-derived from the data pointer
often reach the loop through phis that the proof cannot see into.
"""

import llvmlite.ir as llir

from .targets import STREAM_ALIGN_BYTES

LAUNDER = "llvm.launder.invariant.group.p0"


class AlignmentAssumption(llir.Instruction):
    """``call void @llvm.assume(i1 true) ["align"(ptr %p, i64 A)]``."""

    def __init__(self, parent, assume, pointer, alignment):
        super().__init__(parent, llir.VoidType(), "call", [assume, pointer])
        self.alignment = alignment

    def descr(self, buf):
        assume, pointer = self.operands
        buf.append(f'call void {assume.get_reference()}(i1 true) '
                   f'[ "align"({pointer.type} {pointer.get_reference()}, i64 {self.alignment}) ]\n')


def emit_alignment_promise(builder, element_ptr):
    """Return a laundered copy of ``element_ptr``, promised stream-aligned."""
    module = builder.module
    byte_ptr = llir.IntType(8).as_pointer()
    launder = module.globals.get(LAUNDER) or llir.Function(module, llir.FunctionType(byte_ptr, (byte_ptr,)), LAUNDER)
    pointer = builder.bitcast(builder.call(launder, (builder.bitcast(element_ptr, byte_ptr),)), element_ptr.type)
    assume = module.declare_intrinsic("llvm.assume", (), llir.FunctionType(llir.VoidType(), (llir.IntType(1),)))
    builder._insert(AlignmentAssumption(builder.block, assume, pointer, STREAM_ALIGN_BYTES))
    return pointer
