"""Row stores of streamed arrays become element loops.

``out[i] = x[i]`` on a 2-D ``out`` stores a whole row through Numba's array
setitem, a call the stream passes cannot see into: the row would stay plain
though each execution of the ``i`` loop writes each element once. When the
value is a scalar, or an array of the row's shape whose memory does not
overlap the row (checked at run time), the store is exactly an element
loop, so this pass rewrites it (typed IR) into

    row = out[i]                               # a view: out[i][j] is out[i, j]
    if copies_elementwise(row, x[i]):
        for j in range(row.shape[0]): row[j] = x[i][j]     # one loop per row dimension
    else:
        assign(out, i, x[i])                   # Numba's own setitem: broadcasting, overlap, errors

and the passes after it align, stream and fence the element loop like one
the user wrote. The fallback (``typing/intrinsics.assign``) is Numba's row
store, out of the passes' sight. The new statements are typed here, so
`accesses.py` sees the loops with their types.
"""

from numba.core import ir, types

from ..typing import intrinsics
from .accesses import scan_kernel, streamed_store_names
from .ir_build import Emitter, loop_nest, new_block
from .retype import retype


def _rewrite(state, access):
    blocks, typemap, stmt = state.func_ir.blocks, state.typemap, access.stmt
    # (an earlier rewrite may have moved it to a block of its own)
    block = next(b for b in blocks.values() if any(s is stmt for s in b.body))
    scope, loc = block.scope, stmt.loc
    at = next(k for k, s in enumerate(block.body) if s is stmt)
    head, tail = block.body[:at], block.body[at + 1:]
    emit = Emitter(scope, loc, head)
    index = stmt.index if isinstance(stmt, ir.SetItem) else stmt.index_var or emit.const(stmt.index)
    if isinstance(stmt, ir.SetItem):
        row = emit.assign(ir.Expr.getitem(stmt.target, index, loc), hint="row")
    else:
        row = emit.assign(ir.Expr.static_getitem(stmt.target, stmt.index, index, loc), hint="row")
    ndim = typemap[access.array_var].ndim - len(access.index)
    shape = emit.assign(ir.Expr.getattr(row, "shape", loc), hint="shape")
    extents = [emit.assign(ir.Expr.static_getitem(shape, d, None, loc), hint="extent") for d in range(ndim)]
    ok = emit.call(intrinsics.copies_elementwise, row, stmt.value)
    after = new_block(blocks, scope, loc, tail)
    fallback = Emitter(scope, loc)
    fallback.expr_stmt(intrinsics.assign, stmt.target, index, stmt.value)
    fallback.stmts.append(ir.Jump(after, loc))
    body_label = new_block(blocks, scope, loc, [])
    entry, innermost, indices = loop_nest(blocks, scope, loc, extents, body_label, after)
    body = Emitter(scope, loc)
    element = body.value(indices[0]) if ndim == 1 else body.tuple_(indices)
    value = stmt.value
    if isinstance(typemap[stmt.value.name], types.Array):
        value = body.assign(ir.Expr.getitem(stmt.value, element, loc), hint="element")
    body.stmts.append(ir.SetItem(row, element, value, loc))
    body.stmts.append(ir.Jump(innermost, loc))
    blocks[body_label].body = body.stmts
    emit.stmts.append(ir.Branch(ok, entry, new_block(blocks, scope, loc, fallback.stmts), loc))
    block.body = emit.stmts


def run_pass(state):
    scan = scan_kernel(state.func_ir, state.typemap, state.stream_options.parallel)
    streamed = streamed_store_names(state.stream_options, scan)
    rows = [a for a in scan.stores() if a.array in streamed and a.kind == "row" and not a.chained
            and isinstance(state.typemap[a.stmt.value.name], (types.Array, types.Number, types.Boolean))]
    for access in rows:
        _rewrite(state, access)
    if rows:
        retype(state)
    return bool(rows)
