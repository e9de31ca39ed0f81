"""Whole-array stores of streamed arrays become element loops.

Real Numba code writes arrays whole: row stores (``out[i] = x[i]``), slice
assignments of array expressions (``B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] +
...)``, ``out[:] = a * x + y``) and in-place operators (``C *= beta``,
``C += alpha * A``). Numba runs each as a call the stream passes cannot see
into, computing the right-hand side into temporary arrays first. Where the
result is exactly an element loop this pass rewrites the store (typed IR):

    view = B[1:-1, 1:-1]                       # the destination (B itself for C *= ...)
    if copies_elementwise(view, A1) & ...:     # every array operand: same shape, and
                                               # disjoint memory (or the very same elements)
        for i in range(view.shape[0]):
            for j in range(view.shape[1]):
                view[i, j] = 0.2 * (A1[i, j] + A2[i, j] + ...)   # fused: no temporary
    else:
        <the original statements>              # Numba's own: broadcasting, overlap, errors

The expression is fused when it is built of elementwise arithmetic on
floating-point arrays of the destination's dimensions and scalars (Numba
types those array operations with the same loops as the scalar ones, so
the values are the same); otherwise only a plain copy or fill is turned
into a loop. With ``parallel=True`` the outer loop is a ``prange``, so the
expression still runs on all threads, as Numba's parfors would run it. The
passes after this one align, stream and fence the element loop like one the
user wrote; the view is registered as a root of its
array (`accesses.py`). The new statements are typed here, for the scan.
"""

import operator

from numba import prange
from numba.core import ir, types

from ..typing import intrinsics
from .accesses import is_slice, scan_kernel, streamed_store_names
from .ir_build import Emitter, loop_nest, new_block
from .retype import retype

_ELEMENTWISE = {operator.add, operator.sub, operator.mul, operator.truediv, operator.pow, operator.neg,
                operator.pos}
_INPLACE = {operator.iadd: operator.add, operator.isub: operator.sub, operator.imul: operator.mul,
            operator.itruediv: operator.truediv}


def _use_counts(blocks):
    counts = {}
    for block in blocks.values():
        for stmt in block.body:
            for var in stmt.list_vars():
                counts[var.name] = counts.get(var.name, 0) + 1
    return counts


def _expression(scan, block, position, value, ndim, uses):
    """(statements computing ``value`` elementwise, to move; array leaves;
    all leaves) or None when the value is not such an expression."""
    nodes, arrays, leaves = [], [], []
    before = {id(s) for s in block.body[:position]}

    def visit(var):
        ty = scan.typemap[var.name]
        found = scan.defs.get(var.name, [])
        stmt = found[0][1] if len(found) == 1 else None
        expr = stmt.value if stmt is not None else None
        if (isinstance(ty, types.Array) and isinstance(expr, ir.Expr) and expr.op in ("binop", "unary")
                and expr.fn in _ELEMENTWISE and id(stmt) in before and uses.get(var.name) == 2):
            nodes.append(stmt)
            for operand in ((expr.lhs, expr.rhs) if expr.op == "binop" else (expr.value,)):
                if not visit(operand):
                    return False
            return True
        leaves.append(var)
        if isinstance(ty, types.Array):
            arrays.append(var)
            return ty.ndim == ndim
        return isinstance(ty, (types.Number, types.Boolean))

    if not visit(value):
        return None
    if nodes and not all(isinstance(scan.typemap[v.name].dtype, (types.Float, types.Complex)) for v in arrays):
        return None  # integer array arithmetic may promote differently from scalar arithmetic
    return nodes, arrays, leaves


def _element(emit, var, nodes_by_target, arrays, index):
    """The value of ``var`` at ``index``, computed from scalars."""
    node = nodes_by_target.get(var.name)
    if node is None:
        return emit.assign(ir.Expr.getitem(var, index, emit.loc), hint="element") if var.name in arrays else var
    expr = node.value
    if expr.op == "binop":
        return emit.binop(expr.fn, _element(emit, expr.lhs, nodes_by_target, arrays, index),
                          _element(emit, expr.rhs, nodes_by_target, arrays, index))
    return emit.assign(ir.Expr.unary(expr.fn, _element(emit, expr.value, nodes_by_target, arrays, index),
                                     emit.loc), hint="element")


def _rewrite(state, scan, access, uses):
    blocks, typemap, stmt = state.func_ir.blocks, state.typemap, access.stmt
    # (an earlier rewrite may have moved it to a block of its own)
    block = next(b for b in blocks.values() if any(s is stmt for s in b.body))
    scope, loc = block.scope, stmt.loc
    at = next(k for k, s in enumerate(block.body) if s is stmt)
    inplace = access.kind == "inplace"
    # the view keeps a dimension per slice and per dimension not indexed
    ndim = typemap[access.array_var].ndim - sum(not is_slice(typemap, x) for x in access.index)
    if inplace:
        expr = stmt.value
        if expr.fn not in _INPLACE:
            return False
        found = _expression(scan, block, at, expr.rhs, ndim, uses)
        if found is None:
            return False
        nodes, arrays, _ = found
        arrays = arrays + [expr.lhs]
    else:
        found = _expression(scan, block, at, stmt.value, ndim, uses)
        if found is None or (isinstance(stmt, ir.StaticSetItem) and stmt.index_var is None):
            return False
        nodes, arrays, _ = found
    moved = {id(n) for n in nodes}
    head = [s for s in block.body[:at] if id(s) not in moved]
    emit = Emitter(scope, loc, head)
    if inplace:
        view = expr.lhs
    elif isinstance(stmt, ir.SetItem):
        view = emit.assign(ir.Expr.getitem(stmt.target, stmt.index, loc), hint="view")
    else:
        view = emit.assign(ir.Expr.static_getitem(stmt.target, stmt.index, stmt.index_var, loc), hint="view")
    shape = emit.assign(ir.Expr.getattr(view, "shape", loc), hint="shape")
    extents = [emit.assign(ir.Expr.static_getitem(shape, d, None, loc), hint="extent") for d in range(ndim)]
    checks = [emit.call(intrinsics.copies_elementwise, view, a) for a in arrays] or [emit.const(True)]
    ok = checks[0]
    for check in checks[1:]:
        ok = emit.binop(operator.and_, ok, check)
    after = new_block(blocks, scope, loc, block.body[at + 1:])
    fallback = new_block(blocks, scope, loc, [n for n in block.body[:at] if id(n) in moved] + [stmt,
                                                                                              ir.Jump(after, loc)])
    done = after
    if inplace:  # the operator's result is the array itself
        done = new_block(blocks, scope, loc, [ir.Assign(expr.lhs, stmt.target, loc), ir.Jump(after, loc)])
    body_label = new_block(blocks, scope, loc, [])
    # with parallel=True the outer loop is a prange, as Numba's parfors would run the expression
    entry, innermost, indices = loop_nest(blocks, scope, loc, extents, body_label, done,
                                          prange if state.stream_options.parallel else range)
    body = Emitter(scope, loc)
    index = body.index(indices)
    names = {a.name for a in arrays}
    by_target = {n.target.name: n for n in nodes}
    if inplace:
        value = body.binop(_INPLACE[expr.fn], _element(body, expr.lhs, by_target, names, index),
                           _element(body, expr.rhs, by_target, names, index))
    else:
        value = _element(body, stmt.value, by_target, names, index)
    body.stmts += [ir.SetItem(view, index, value, loc), ir.Jump(innermost, loc)]
    blocks[body_label].body = body.stmts
    emit.stmts.append(ir.Branch(ok, entry, fallback, loc))
    block.body = emit.stmts
    state.stream_views[view.name] = access.array
    state.stream_fallbacks[id(stmt)] = stmt
    for leaf in arrays:  # sliced views read in the loop are roots too: their loads align and vectorize
        root = scan.definition(leaf.name)
        if isinstance(root, ir.Expr) and root.op in ("getitem", "static_getitem"):
            source = scan.canonical(root.value.name)
            owner = next((name for name, var in scan.arrays.items() if var == source), None)
            if owner is not None:
                state.stream_views[leaf.name] = owner
    state.stream_store_notes.append((access.array, access.line, "{} stored by {} element loop where the operands "
                                     "allow it".format({"inplace": "an in-place operator", "row": "a row store"}.get(
                                         access.kind, "a slice assignment"), "a fused" if nodes else "an")))
    return True


def _is_element_index(typemap, stmt, ndim):
    index = stmt.index_var if isinstance(stmt, ir.StaticSetItem) else stmt.index
    if index is None:
        value = stmt.index
        parts = list(value) if isinstance(value, tuple) else [value]
        return len(parts) == ndim and all(isinstance(p, int) for p in parts)
    ty = typemap[index.name]
    parts = list(ty) if isinstance(ty, types.BaseTuple) else [ty]
    return len(parts) == ndim and all(isinstance(p, types.Integer) for p in parts)


def _stores_arrays(state):
    """Whether any statement stores more than one element: a cheap test
    before the scan, which most kernels (element loops only) skip."""
    typemap = state.typemap
    for block in state.func_ir.blocks.values():
        for stmt in block.body:
            if isinstance(stmt, (ir.SetItem, ir.StaticSetItem)):
                target = typemap.get(stmt.target.name)
                if isinstance(target, types.Array) and not _is_element_index(typemap, stmt, target.ndim):
                    return True
            elif isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr) \
                    and stmt.value.op == "inplace_binop" and isinstance(typemap.get(stmt.value.lhs.name), types.Array):
                return True
    return False


def run_pass(state):
    state.stream_views, state.stream_store_notes, state.stream_fallbacks = {}, [], {}
    if not _stores_arrays(state):
        return False
    scan = scan_kernel(state.func_ir, state.typemap, state.stream_options.parallel)
    streamed = streamed_store_names(state.stream_options, scan)
    uses = _use_counts(state.func_ir.blocks)
    candidates = [a for a in scan.stores() if a.array in streamed and not a.chained
                  and (a.kind in ("row", "slice") or (a.kind == "inplace" and a.array_var == scan.canonical(
                      a.stmt.value.lhs.name)))]
    rewritten = sum(_rewrite(state, scan, access, uses) for access in candidates)
    if rewritten:
        retype(state)
    return bool(rewritten)
