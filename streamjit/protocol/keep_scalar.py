"""Loops LLVM should leave scalar: the peeled head of an always-streamed loop.

Without a size threshold, the plain head loop in front of each aligned loop
runs only the few iterations before the destination is aligned (or, rarely,
a whole loop the aligned path cannot take: a non-contiguous last dimension,
unaligned data, out-of-range indices, a very short loop), yet LLVM would
vectorize it like the aligned loop, with runtime alias checks and remainder
loops, nearly doubling the optimizer's and code generator's work. A call to
an opaque function in its body keeps the vectorizer away (it cannot widen a
call with unknown effects); `post_o3/keep_scalar.py` deletes the call from
the optimized module, before machine code is generated, so it costs nothing
at run time.
"""

import llvmlite.ir as llir

MARKER = "streamjit.keep_scalar"


def emit_keep_scalar(builder):
    """Emit a call to the opaque ``streamjit.keep_scalar`` function (declared once per module) at
    the builder's position, keeping the vectorizer out of the loop it is in."""
    fn = builder.module.globals.get(MARKER) or llir.Function(
        builder.module, llir.FunctionType(llir.VoidType(), ()), MARKER)
    builder.call(fn, ())
