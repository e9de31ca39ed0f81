"""Place the streamed arrays the kernel allocates apart from its array
arguments modulo a page.

A large ``np.empty`` starts at the same offset within its page as every
other large allocation, a few dozen bytes from the NumPy arrays the kernel
was called with. A streamed loop ``out[i] = u[i - 1] + u[i] + u[i + 1]``
then stores a few bytes ahead of its loads modulo 4 KiB, where the loads
wait for the non-temporal stores in flight (4K aliasing), and the aligned
loop's check sends the call to the plain loop: measured on an AMD EPYC
Zen 2 VM (bench/README.md, its Zen 2 sections), a named fresh output of a 3-point stencil fell back on
every call (``stream_fallbacks()["page_alias"]``), at every size.

For each array named in ``stream_stores`` that the kernel allocates with
``np.empty`` / ``np.empty_like`` (or that `array_stores.py` allocates for
an array expression's result), this pass rewrites

    out = np.empty_like(u)

into

    $allocated = np.empty_like(u)
    out = placed_apart($allocated, (u, v, ...))   # the array parameters of out's dtype

(`codegen/placement.py`: a second allocation, placed apart, only where
the first lies near a parameter and is large). Allocations that set their
elements (``np.zeros``, ``np.full``, ...) are left where they are: moving
them would cost the copy the stream saves.
"""

from numba.core import ir, types
from numba.core.ir_utils import find_callname, guard

from ..numba_internals.ir import rebuild_definitions
from ..plan import METADATA_KEY
from .. import codegen
from .rewrite.ir_build import Emitter

# The `StreamFacts` fields this pass reads, sets and leaves stale (`passes/analysis/facts.py`).
REQUIRES = ("scan",)
PRODUCES = ()
INVALIDATES = ()

UNINITIALIZED = {("empty", "numpy"), ("empty_like", "numpy")}


def _allocations(func_ir, typemap, var):
    """``(block, statement)`` of each uninitialized allocation into ``var``."""
    return [(block, stmt) for block in func_ir.blocks.values() for stmt in block.body
            if isinstance(stmt, ir.Assign) and stmt.target.name == var and isinstance(stmt.value, ir.Expr)
            and stmt.value.op == "call" and guard(find_callname, func_ir, stmt.value, typemap) in UNINITIALIZED]


def run_pass(state):
    """Wrap each allocation of a streamed array the kernel allocates uninitialized, where it has
    array parameters of its dtype, in `placed_apart`, which allocates again, apart from those
    parameters modulo a page, where the first allocation lies near one and is large. True when
    any allocation was wrapped."""
    scan, result = state.stream_facts.scan, state.metadata[METADATA_KEY]
    parameters = [scan.arrays[name] for name in sorted(scan.arrays) if name not in scan.fresh]
    placed = [scan.arrays[name] for name in sorted(result.fresh_arrays & result.streamed_stores)
              if name in scan.arrays and isinstance(state.typemap[scan.arrays[name]], types.Array)
              and state.typemap[scan.arrays[name]].ndim >= 1]
    func_ir = state.func_ir
    rebuild_definitions(func_ir)  # (the calls array_stores.py inserted)
    changed = False
    for var in placed:
        # the parameters of the fresh array's dtype, of any layout: sources of
        # another item size drift away from the store anyway (`align_peel.py`
        # checks only those of the store's)
        alike = [p for p in parameters if state.typemap[p].dtype == state.typemap[var].dtype]
        for block, stmt in _allocations(func_ir, state.typemap, var) if alike else ():
            emit = Emitter(block.scope, stmt.loc)
            allocated = emit.temp("allocated")
            state.typemap[allocated.name] = state.typemap[var]
            stmt.target = allocated  # (the typed allocation keeps its call type; only what follows is new)
            inputs = emit.tuple_([ir.Var(block.scope, p, stmt.loc) for p in alike])
            emit.call(codegen.placed_apart, allocated, inputs, target=var)
            at = next(k for k, s in enumerate(block.body) if s is stmt)
            block.body[at + 1:at + 1] = emit.stmts
            changed = True
    return changed
