"""Type the rewritten IR: Numba's type inference, run again.

The rewriting passes insert untyped statements (intrinsic calls, loop
copies, range iterators). Running Numba's own type inference over the whole
function types them exactly as the user's code is typed, and keeps every
invariant the later Numba passes rely on (typemap, calltypes, return type).
It costs one more type inference per signature, only for kernels that were
rewritten.

Numba's phi removal leaves ``x = null()`` where a variable is undefined on
some path; type inference does not accept those (they only exist after it),
so they are left out while it runs and put back after, with the type the
first inference gave their variable.
"""

from numba.core import ir
from numba.core.ir_utils import build_definitions
from numba.core.typed_passes import type_inference_stage


def _is_null(stmt):
    return isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr) and stmt.value.op == "null"


def retype(state):
    blocks = state.func_ir.blocks
    bodies = {label: block.body for label, block in blocks.items()}
    for block in blocks.values():
        block.body = [s for s in block.body if not _is_null(s)]
    state.func_ir._definitions = build_definitions(blocks)
    try:
        typemap, return_type, calltypes, _ = type_inference_stage(
            state.typingctx, state.targetctx, state.func_ir, state.args, state.return_type, state.locals,
            raise_errors=True)
    finally:
        for label, body in bodies.items():
            blocks[label].body = body
    for body in bodies.values():
        for stmt in body:
            if _is_null(stmt):
                typemap.setdefault(stmt.target.name, state.typemap[stmt.target.name])
    state.func_ir._definitions = build_definitions(blocks)
    state.typemap, state.return_type, state.calltypes = typemap, return_type, calltypes


def run_pass(state):
    if not getattr(state, "stream_rewritten", False):
        return False
    retype(state)
    return True
