"""Size-aware streaming inside the kernel: one test at entry.

With a ``threshold``, streaming must only happen when the kernel's streamed
arrays are larger than the threshold (in bytes); smaller data stays in cache
and is faster with plain stores. Rather than compiling a second, plain
variant and choosing in Python on every call, the kernel itself computes, at
entry, whether its streamed arrays exceed the threshold (all its array
parameters, when it streams an array it allocates), and every aligned
loop tests that flag (`align_peel.SIZE_GATE`) with its other run-time
checks. Below the threshold the plain head loop runs the whole range,
exactly the code `numba.njit` would run; no dispatch cost is added, and the
kernel stays callable from other jitted code.
"""

from numba.core import ir

from ..plan import METADATA_KEY
from .. import codegen
from .align_peel import SIZE_GATE
from .ir_build import Emitter


def run_pass(state):
    threshold = state.stream_options.threshold
    if threshold is None:
        return False
    scan, result = state.stream_scan, state.metadata[METADATA_KEY]
    # arrays the kernel allocates do not exist yet at entry: with such a
    # streamed array, every array parameter counts (a fresh output is
    # usually shaped like the inputs)
    fresh = sorted(result.fresh_arrays & result.streamed_stores)
    # (a ping-pong variable's own name is not an array: the arrays it may hold are streamed too)
    result.size_arrays = tuple(a for a in (scan.arrays if fresh else result.streamed_arrays())
                               if a in scan.arrays and a not in scan.fresh)
    if not state.stream_peels:
        return False
    if fresh:
        result.note(fresh[0], 0, "threshold: compared with the bytes of the array parameters")
    entry = state.func_ir.blocks[min(state.func_ir.blocks)]
    emit = Emitter(entry.scope, entry.loc)
    arrays = emit.tuple_([ir.Var(entry.scope, scan.arrays[a], entry.loc) for a in result.size_arrays])
    emit.call(codegen.exceeds, threshold, arrays, target=SIZE_GATE)
    # after the arguments are bound
    at = next(i for i, s in enumerate(entry.body) if not (isinstance(s, ir.Assign) and isinstance(s.value, ir.Arg)))
    entry.body[at:at] = emit.stmts
    return True
