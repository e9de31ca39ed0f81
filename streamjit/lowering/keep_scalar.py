"""Loops LLVM should leave scalar: the peeled head of an always-streamed loop.

Without a size threshold, the plain head loop in front of each aligned loop
runs only the few iterations before the destination is aligned (or, rarely,
a whole loop the aligned path cannot take: a non-contiguous last dimension,
unaligned data, out-of-range indices, a very short loop), yet LLVM would
vectorize it like the aligned loop, with runtime alias checks and remainder
loops, nearly doubling the optimizer's and code generator's work. A call to
an opaque function in its body keeps the vectorizer away (it cannot widen a
call with unknown effects); the call is deleted from the optimized module,
before machine code is generated, so it costs nothing at run time.
"""

import re

import llvmlite.ir as llir

MARKER = "streamjit.keep_scalar"
_MARKER_LINE = re.compile(r'^\s*(?:tail )?call void @"?%s"?\(\)[^\n]*\n' % re.escape(MARKER), re.M)
_MARKER_DECLARATION = re.compile(r'^declare void @"?%s"?\(\)[^\n]*\n' % re.escape(MARKER), re.M)


def emit_keep_scalar(builder):
    fn = builder.module.globals.get(MARKER) or llir.Function(
        builder.module, llir.FunctionType(llir.VoidType(), ()), MARKER)
    builder.call(fn, ())


def remove_keep_scalar_calls(llvm_text):
    """Delete the marker calls (and declaration) from optimized LLVM text."""
    if MARKER not in llvm_text:
        return llvm_text
    return _MARKER_DECLARATION.sub("", _MARKER_LINE.sub("", llvm_text))
