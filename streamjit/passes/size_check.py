"""Size-aware streaming inside the kernel: one test at entry.

With a ``threshold``, streaming must only happen when the kernel's streamed
arrays are larger than the threshold (in bytes); smaller data stays in cache
and is faster with plain stores. Rather than compiling a second, plain
variant and choosing in Python on every call, the kernel itself computes, at
entry, whether the arrays whose stores stream exceed the threshold (the
streamed loads' where no store streams; all its array parameters, when it
streams an array it allocates), and every aligned
loop tests that flag (`align_peel.SIZE_GATE`) with its other run-time
checks. Below the threshold the plain head loop runs the whole range,
exactly the code `numba.njit` would run; no dispatch cost is added, and the
kernel stays callable from other jitted code.
"""

import functools
import operator

from numba.core import ir

from ..plan import METADATA_KEY
from .. import codegen
from .align_peel import SIZE_GATE
from .rewrite.ir_build import Emitter

# The `StreamFacts` fields this pass reads, sets and leaves stale (`passes/analysis/facts.py`).
REQUIRES = ("options", "scan", "peels")
PRODUCES = ()
INVALIDATES = ()


def run_pass(state):
    """With a threshold, insert one size test at entry: whether the bytes of the arrays whose
    stores stream (of the streamed loads where no store streams; of every array parameter where
    the kernel streams an array it allocates) exceed it. Every aligned loop's check tests it, so
    below the threshold the plain head runs. True when inserted."""
    threshold = state.stream_facts.options.threshold
    if threshold is None:
        return False
    scan, result = state.stream_facts.scan, state.metadata[METADATA_KEY]
    # arrays the kernel allocates do not exist yet at entry: with such a
    # streamed array, every array parameter counts (a fresh output is
    # usually shaped like the inputs)
    fresh = sorted(result.fresh_arrays & result.streamed_stores)
    # Otherwise the arrays whose stores stream: the threshold is where a
    # streamed store starts to pay (measured on stores alone), and a large
    # streamed load must not make a small output's stores stream (NPBench's
    # trisolv, bench/npbench.py: L's 275 MiB made x's 48 KB stream, then read
    # back from memory, 0.94x). The streamed loads count only where no store streams.
    # (a ping-pong variable's own name is not an array: the arrays it may hold are streamed too)
    counted = scan.arrays if fresh else sorted(result.streamed_stores or result.streamed_loads)
    result.size_arrays = tuple(a for a in counted if a in scan.arrays and a not in scan.fresh)
    if not state.stream_facts.peels:
        return False
    if fresh:
        result.note(fresh[0], 0, "threshold: compared with the bytes of the array parameters")
    entry = state.func_ir.blocks[min(state.func_ir.blocks)]
    emit = Emitter(entry.scope, entry.loc)
    sizes = [emit.call(codegen.nbytes_of, ir.Var(entry.scope, scan.arrays[a], entry.loc)) for a in result.size_arrays]
    total = functools.reduce(emit.add, sizes) if sizes else emit.const(0)
    emit.assign(ir.Expr.binop(operator.gt, total, emit.const(threshold), entry.loc), target=SIZE_GATE)
    # after the arguments are bound
    at = next(i for i, s in enumerate(entry.body) if not (isinstance(s, ir.Assign) and isinstance(s.value, ir.Arg)))
    entry.body[at:at] = emit.stmts
    return True
