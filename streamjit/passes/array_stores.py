"""Whole-array stores of streamed arrays become element loops.

Real Numba code writes arrays whole: row stores (``out[i] = x[i]``), slice
assignments of array expressions (``B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] +
...)``, ``out[:] = a * x + y``, through a view ``inner[...] = ...``),
in-place operators on arrays and slices (``C *= beta``, ``A[1:] += c *
B[:-1]``) and array expressions whose result is a new array (``r = a * x +
y``, ``return expr``). Numba runs each as a call the stream passes cannot
see into, computing the right-hand side into temporary arrays first. Where
the result is exactly an element loop this pass rewrites the store (typed
IR):

    view = B[1:-1, 1:-1]                       # the destination (B itself for C *= ...)
    if copies_elementwise(view, A1) & ...:     # every array operand: the same (trailing) shape,
                                               # disjoint memory (or the very same elements)
        for i in range(view.shape[0]):
            for j in range(view.shape[1]):
                view[i, j] = 0.2 * (A1[i, j] + A2[i, j] + ...)   # fused: no temporary
    else:
        <the original statements>              # Numba's own: broadcasting, overlap, errors

(for a new array: ``r = np.empty(A1.shape, dtype)`` before the loop, the
check only of shapes). The expression fused is built of operators and ufunc
calls on arrays (of the destination's dimensions or fewer, broadcast along
the leading ones) and scalars, through copies; each element is computed as
Numba computes an array-expression element, with scalar arithmetic under
NumPy's error model (`codegen.with_numpy_errors`), so the values are
Numba's. Anything else in it is an operand Numba computes first. With
``parallel=True`` the outer loop is a ``prange``, so the expression still
runs on all threads, as Numba's parfors would run it. The passes after this
one align, stream and fence the element loop like one the user wrote; the
view is registered as a root of its array (`accesses.py`), and each store
made or kept is recorded with what it came from (``store_origin`` of
`passes/facts.py`: `stream_stores=True` leaves updates in place plain).
The new statements are typed here, for the scan.
"""

import operator

import numpy as np
from numba import prange
from numba.core import ir, types
from numba.np.numpy_support import as_dtype

from ..errors import warn_in_kernel
from .. import codegen
from .accesses import streamed_store_names
from .indices import index_atoms, is_element_index, is_slice, subscript_key
from .scan import is_array_expression, scan_kernel
from .ir_build import Emitter, loop_nest, new_block
from .retype import retype

_ELEMENTWISE = {operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod,
                operator.pow, operator.neg, operator.pos}
# Operators that raise under Python's error model (ZeroDivisionError) where
# an array expression, computed under NumPy's, gives inf or nan.
_NUMPY_ERRORS = {operator.truediv, operator.floordiv, operator.mod, operator.pow}
_INPLACE = {operator.iadd: operator.add, operator.isub: operator.sub, operator.imul: operator.mul,
            operator.itruediv: operator.truediv, operator.ifloordiv: operator.floordiv, operator.imod: operator.mod,
            operator.ipow: operator.pow}
_HOW = {"inplace": "an in-place operator", "update": "an update of what the block read before it",
        "row": "a row store", "slice": "a slice assignment",
        "view": "a slice assignment through a view"}


def _use_counts(blocks):
    counts = {}
    for block in blocks.values():
        for stmt in block.body:
            for var in stmt.list_vars():
                counts[var.name] = counts.get(var.name, 0) + 1
    return counts


def _operands(value):
    if isinstance(value, ir.Var):  # a copy (an inlined helper's arguments and result)
        return (value,)
    return {"binop": lambda: (value.lhs, value.rhs), "unary": lambda: (value.value,)}.get(value.op,
                                                                                       lambda: value.args)()


def _fusable(typemap, expr):
    """An elementwise operator, or a ufunc called with positional arrays and scalars."""
    if not is_array_expression(expr, typemap):
        return False
    if expr.op == "call":  # (no output argument, positional or named)
        return (not expr.kws and expr.vararg is None and expr.varkwarg is None
                and len(expr.args) == typemap[expr.func.name].typing_key.nin)
    return expr.fn in _ELEMENTWISE


def _expression(typingctx, scan, block, end, value, ndim, uses, top=False):
    """(statements computing ``value`` elementwise, in block order; {array
    leaf: its ndim}) or None when ``value`` is not such an expression over
    arrays of at most ``ndim`` dimensions (broadcast along the leading ones)
    and scalars. The statements lie in ``block`` before position ``end``, and
    each result but ``value``'s (with ``top``) is used once, by the next."""
    nodes, arrays = [], {}
    before = {id(s) for s in block.body[:end]}

    def visit(var, top=False):
        ty = scan.typemap[var.name]
        found = scan.defs.get(var.name, [])
        stmt = found[0][1] if len(found) == 1 else None
        if (isinstance(ty, types.Array) and stmt is not None and id(stmt) in before
                and (top or uses.get(var.name) == 2)
                and (isinstance(stmt.value, ir.Var) or _fusable(scan.typemap, stmt.value))):
            nodes.append(stmt)
            return all(visit(operand) for operand in _operands(stmt.value))
        if isinstance(ty, types.Array):
            arrays[var.name] = ty.ndim
            return 1 <= ty.ndim <= ndim and isinstance(ty.dtype, (types.Number, types.Boolean))
        return isinstance(ty, (types.Number, types.Boolean))

    if not visit(value, top) or _element_type(typingctx, scan, value, {n.target.name: n for n in nodes}) is None:
        return None
    order = {id(s): k for k, s in enumerate(block.body)}
    return sorted(nodes, key=lambda n: order[id(n)]), arrays


def _element_type(typingctx, scan, var, nodes_by_target):
    """The scalar type of ``var``'s element as the fused loop computes it,
    or None where Numba cannot type that scalar operation (the rewrite must
    never turn a kernel Numba compiles into one it does not)."""
    ty = scan.typemap[var.name]
    node = nodes_by_target.get(var.name)
    if node is None:
        return ty.dtype if isinstance(ty, types.Array) else ty
    args = tuple(_element_type(typingctx, scan, v, nodes_by_target) for v in _operands(node.value))
    if isinstance(node.value, ir.Var):
        return args[0]
    if any(a is None for a in args):
        return None
    fn = scan.typemap[node.value.func.name] if node.value.op == "call" else node.value.fn
    found = typingctx.resolve_function_type(fn, args, {})
    return found.return_type if found is not None and isinstance(found.return_type, (types.Number, types.Boolean)) \
        else None


def _element(emit, var, nodes_by_target, arrays, index_for):
    """The value of ``var`` at the loop's index, computed from scalars as
    Numba computes an array expression element (NumPy's error model)."""
    node = nodes_by_target.get(var.name)
    if node is None:
        if var.name not in arrays:
            return var
        return emit.assign(ir.Expr.getitem(var, index_for(arrays[var.name]), emit.loc), hint="element")
    expr = node.value
    args = [_element(emit, v, nodes_by_target, arrays, index_for) for v in _operands(expr)]
    if isinstance(expr, ir.Var):
        return args[0]
    if expr.op == "call":
        return emit.call(codegen.with_numpy_errors, expr.func, *args)
    return _apply(emit, expr.fn, args)


def _apply(emit, fn, args):
    """The operator ``fn`` on scalar ``args``, under NumPy's error model."""
    if fn in _NUMPY_ERRORS:
        return emit.call(codegen.with_numpy_errors, emit.global_(fn.__name__, fn), *args)
    if len(args) == 2:
        return emit.binop(fn, *args)
    return emit.assign(ir.Expr.unary(fn, args[0], emit.loc), hint="element")


def _fuse(state, scan, block, stmt, how, nodes, arrays, ndim, head, element, check=codegen.copies_elementwise,
          fast=None, done=()):
    """Split ``block`` at ``stmt``: the statements before it, then a run-time
    test that every array operand can be read element for element; if it
    passes, a loop nest over the destination storing ``element``, else the
    original ``nodes`` and ``stmt`` (Numba's own code). ``head(emit)``
    emits the destination's shape source and returns (it, the destination);
    ``fast(emit, shape)`` runs before the loop (an allocation); ``done``
    after it. Returns the destination."""
    blocks, scope, loc = state.func_ir.blocks, block.scope, stmt.loc
    at = next(k for k, s in enumerate(block.body) if s is stmt)
    moved = {id(n) for n in nodes}
    emit = Emitter(scope, loc, [s for s in block.body[:at] if id(s) not in moved])
    source, destination = head(emit)
    shape = emit.assign(ir.Expr.getattr(source, "shape", loc), hint="shape")
    extents = [emit.assign(ir.Expr.static_getitem(shape, d, None, loc), hint="extent") for d in range(ndim)]
    checks = [emit.call(check, source, ir.Var(scope, a, loc)) for a in arrays] or [emit.const(True)]
    ok = checks[0]
    for more in checks[1:]:
        ok = emit.binop(operator.and_, ok, more)
    after = new_block(blocks, scope, loc, block.body[at + 1:])
    fallback = new_block(blocks, scope, loc, [n for n in block.body[:at] if id(n) in moved] + [stmt, ir.Jump(after, loc)])
    exit_label = new_block(blocks, scope, loc, list(done) + [ir.Jump(after, loc)]) if done else after
    body_label = new_block(blocks, scope, loc, [])
    # with parallel=True the outer loop is a prange, as Numba's parfors would run the expression
    entry, innermost, indices = loop_nest(blocks, scope, loc, extents, body_label, exit_label,
                                          prange if state.stream_facts.options.parallel else range)
    if fast is not None:
        pre = Emitter(scope, loc)
        fast(pre, shape)
        entry = new_block(blocks, scope, loc, pre.stmts + [ir.Jump(entry, loc)])
    body = Emitter(scope, loc)
    by_ndim = {}

    def index_for(k):  # an operand of k dimensions is indexed by the last k indices (broadcasting)
        if k not in by_ndim:
            by_ndim[k] = body.index(indices[ndim - k:])
        return by_ndim[k]

    value = element(body, index_for)
    store = ir.SetItem(destination, index_for(ndim), value, loc)
    state.stream_facts.store_origin[id(store)] = (store, how)
    body.stmts += [store, ir.Jump(innermost, loc)]
    blocks[body_label].body = body.stmts
    emit.stmts.append(ir.Branch(ok, entry, fallback, loc))
    state.stream_facts.fallbacks.append(ok.name)
    block.body = emit.stmts
    state.stream_facts.store_origin[id(stmt)] = (stmt, how)  # {id: (store this pass made or kept, what it stores)}
    for leaf in arrays:  # sliced views read in the loop are roots too: their loads align and vectorize
        root = scan.definition(leaf)
        if isinstance(root, ir.Expr) and root.op in ("getitem", "static_getitem"):
            source_array = scan.canonical(root.value.name)
            owner = next((name for name, var in scan.arrays.items() if var == source_array), None) \
                or scan.group_name(source_array)
            if owner is not None:
                state.stream_facts.views[leaf] = owner
    return destination


def _inplace_on_view(scan, block, at, stmt, uses):
    """For ``A[s] = t`` where ``t`` is ``v op= rhs`` of the view ``v = A[s]``
    (how Python runs ``A[s] op= rhs``): the in-place statement, else None."""
    found = scan.defs.get(stmt.value.name, [])
    if len(found) != 1 or uses.get(stmt.value.name) != 2 or not any(s is found[0][1] for s in block.body[:at]):
        return None
    inplace = found[0][1]
    expr = inplace.value
    if not (isinstance(expr, ir.Expr) and expr.op == "inplace_binop" and expr.fn in _INPLACE):
        return None
    view = scan.definition(expr.lhs.name)
    index = stmt.index_var if isinstance(stmt, ir.StaticSetItem) else stmt.index
    if not (isinstance(view, ir.Expr) and view.op in ("getitem", "static_getitem") and uses.get(expr.lhs.name) == 2
            and scan.canonical(view.value.name) == scan.canonical(stmt.target.name)):
        return None
    view_index = view.index_var if view.op == "static_getitem" else view.index
    return inplace if index is not None and view_index is not None and index.name == view_index.name else None


def _place(state, stmt):
    """(block, position) of ``stmt``; an earlier rewrite may have moved it
    to a block of its own."""
    block = next(b for b in state.func_ir.blocks.values() if any(s is stmt for s in b.body))
    return block, next(k for k, s in enumerate(block.body) if s is stmt)


def _reads_its_destination_first(scan, block, at, stmt):
    """Whether the block reads the row or slice ``stmt`` stores to before
    it, through the same subscript (NPBench's doitgen: ``tmp = A[r, q, :]
    @ C4; A[r, q, :] = tmp``), or hands the whole array to a function
    (cholesky2: ``A[:] = np.linalg.cholesky(A) + np.triu(A, k=1)``): an
    update in place through a temporary, its lines in cache when they are
    written (streamed: 0.96x and 0.92x the same code never streamed)."""
    written, array = subscript_key(scan, stmt), scan.canonical(stmt.target.name)

    def reads(value):
        if value.op in ("getitem", "static_getitem"):
            return scan.canonical(value.value.name) == array and subscript_key(scan, value) == written
        return value.op == "call" and any(scan.canonical(a.name) == array for a in value.args)

    return written is not None and any(isinstance(s, ir.Assign) and isinstance(s.value, ir.Expr) and reads(s.value)
                                       for s in block.body[:at])


def _overlaps_itself(state, scan, access, arrays):
    """Whether the right-hand side reads other elements of the array it
    stores to (``u[1:-1] = u[1:-1] + c * (u[2:] - ...)``), noted and warned
    about: the operands overlap on every call (NumPy semantics need a
    temporary), so the store stays Numba's own, plain, whatever the size;
    no element loop is made that could never run."""
    stmt = access.stmt
    if not isinstance(stmt, (ir.SetItem, ir.StaticSetItem)):
        return False
    views, written = [], subscript_key(scan, stmt)
    for leaf in arrays:
        view = scan.definition(leaf)
        if isinstance(view, ir.Expr) and view.op in ("getitem", "static_getitem") \
                and scan.canonical(view.value.name) == scan.canonical(stmt.target.name):
            read = subscript_key(scan, view)
            if None not in (read, written) and read != written:
                views.append(view)
    if not views:
        return False
    name = access.array
    text = (f"its right-hand side reads other elements of '{name}' than it writes (shifted views of it): the "
            "operands overlap, so every call runs Numba's plain store (NumPy semantics need a temporary); to "
            f"stream, write into a second buffer and swap them after each step: {name}_next[...] = <expression of "
            f"{name}>; {name}, {name}_next = {name}_next, {name}")
    state.stream_facts.store_notes.append((name, access.line, text))
    state.stream_facts.store_origin[id(stmt)] = (stmt, "overlap")  # (kept: the note above says why)
    warn_in_kernel(state.func_id, text, access.line)
    return True


def _rewrite_store(state, scan, access, uses):
    """A row store, slice assignment or in-place operator on a streamed array."""
    typemap, stmt = state.typemap, access.stmt
    block, at = _place(state, stmt)
    inplace, how = None, access.kind
    if access.kind == "inplace":
        inplace, view, done = stmt, stmt.value.lhs, [ir.Assign(stmt.value.lhs, stmt.target, stmt.loc)]
    elif not (isinstance(stmt, ir.StaticSetItem) and stmt.index_var is None):
        inplace, done = _inplace_on_view(scan, block, at, stmt, uses), ()
        view = inplace.value.lhs if inplace is not None else None
        how = "inplace" if inplace is not None else "update" if _reads_its_destination_first(scan, block, at, stmt) \
            else how
    else:
        return False
    if inplace is not None:
        if inplace.value.fn not in _INPLACE:
            return False
        ndim = typemap[view.name].ndim
        found = _expression(state.typingctx, scan, block, at, inplace.value.rhs, ndim, uses)
        rhs = inplace.value.rhs
    else:
        # the view keeps a dimension per slice and per dimension not indexed
        # (of the store's own index: a chained store's starts after its prefix, `A[2][1:]`)
        target_ndim = typemap[stmt.target.name].ndim
        own = access.index if access.kind == "view" else access.index[typemap[access.array_var].ndim - target_ndim:]
        ndim = target_ndim - sum(not is_slice(typemap, x) for x in own)
        found = _expression(state.typingctx, scan, block, at, stmt.value, ndim, uses)
    if found is None:
        return False
    nodes, arrays = found
    if _overlaps_itself(state, scan, access, arrays):
        return False
    by_target = {n.target.name: n for n in nodes}
    if inplace is not None:
        nodes = nodes + ([inplace] if inplace is not stmt else [])
        arrays = {**arrays, view.name: ndim}

        def element(body, index_for):
            value = _element(body, rhs, by_target, arrays, index_for)
            if rhs.name in by_target:  # Numba computes the right-hand side into an array of its dtype first
                dtype = typemap[rhs.name].dtype
                value = body.call(as_dtype(dtype).type, value, name=str(dtype))
            current = body.assign(ir.Expr.getitem(view, index_for(ndim), stmt.loc), hint="element")
            return _apply(body, _INPLACE[inplace.value.fn], [current, value])

        def head(emit):
            return view, view
    else:
        def element(body, index_for):
            return _element(body, stmt.value, by_target, arrays, index_for)

        def head(emit):
            index = stmt.index if isinstance(stmt, ir.SetItem) else stmt.index_var
            if isinstance(typemap[index.name], types.EllipsisType):  # (Numba indexes with `...` only in a tuple)
                index = emit.tuple_([index])
            view = emit.assign(ir.Expr.getitem(stmt.target, index, stmt.loc), hint="view")
            return view, view
    destination = _fuse(state, scan, block, stmt, how, nodes, arrays, ndim, head, element, done=done)
    state.stream_facts.views[destination.name] = access.array
    state.stream_facts.store_notes.append((access.array, access.line, "{} stored by {} element loop where the operands "
                                           "allow it".format(_HOW[how], "a fused" if inplace is not None or any(
                                               not isinstance(n.value, ir.Var) for n in by_target.values()) else "an")))
    return True


def _rewrite_result(state, scan, name, uses):
    """``r = <array expression>`` (or its return) as a new array filled by a
    fused element loop, where ``name`` is streamed."""
    var = scan.arrays[name]
    stmt = scan.defs[var][0][1]
    block, at = _place(state, stmt)
    ndim = state.typemap[var].ndim
    found = _expression(state.typingctx, scan, block, at + 1, stmt.target, ndim, uses, top=True)
    full = [a for a, k in found[1].items() if k == ndim] if found and any(n is stmt for n in found[0]) else []
    if not full:
        state.stream_facts.store_notes.append((name, stmt.loc.line, "an array expression Numba computes itself (not "
                                               "arithmetic and ufuncs on arrays and scalars): not streamed"))
        return False
    nodes, arrays = found
    by_target = {n.target.name: n for n in nodes}
    dtype = state.typemap[var].dtype

    def allocate(emit, shape):
        kind = emit.global_(str(dtype), as_dtype(dtype).type)
        emit.call(np.empty, shape, kind, target=stmt.target)

    _fuse(state, scan, block, stmt, "result", [n for n in nodes if n is not stmt], arrays, ndim,
          lambda emit: (ir.Var(block.scope, full[0], stmt.loc), stmt.target),
          lambda body, index_for: _element(body, stmt.target, by_target, arrays, index_for),
          check=codegen.same_shape, fast=allocate)
    state.stream_facts.store_notes.append((name, stmt.loc.line, "the result of {} array expression, stored by a fused "
                                           "element loop into a new array where the operands allow it".format(
                                               "a returned" if name == "return" else "an")))
    return True


def _whole_store_through_view(scan, access):
    """A slice or row store through a view the kernel made of a streamed
    array (``interior = B[1:-1, 1:-1]; interior[...] = expr``)."""
    if access.kind != "view" or not isinstance(access.stmt, (ir.SetItem, ir.StaticSetItem)):
        return False
    atoms = access.index
    ints = [isinstance(a, int) or isinstance(a, ir.Var) and isinstance(scan.typemap[a.name], types.Integer)
            for a in atoms]
    return bool(atoms) and all(i or is_slice(scan.typemap, a) for i, a in zip(ints, atoms)) and not all(ints)


def _stores_arrays(state, named):
    """Whether any statement stores more than one element, or a local array
    is named (maybe an array expression's result): a cheap test before the
    scan, which most kernels (element loops only) skip."""
    typemap = state.typemap
    if named - set(state.func_id.arg_names):
        return True
    for block in state.func_ir.blocks.values():
        for stmt in block.body:
            if isinstance(stmt, (ir.SetItem, ir.StaticSetItem)):
                target = typemap.get(stmt.target.name)
                if isinstance(target, types.Array) and not is_element_index(typemap, stmt, target.ndim):
                    return True
            elif isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr) \
                    and stmt.value.op == "inplace_binop" and isinstance(typemap.get(stmt.value.lhs.name), types.Array):
                return True
    return False


def run_pass(state):
    """Rewrite the row stores, slice assignments, in-place operators and array-expression results
    of streamed arrays into fused element loops, each guarded by a run-time check that falls
    back to Numba's own code; retype what was inserted. True when anything was rewritten."""
    options = state.stream_facts.options
    named = set(options.stream_stores) if isinstance(options.stream_stores, tuple) else set()
    if not _stores_arrays(state, named):
        return False
    scan = scan_kernel(state.func_ir, state.typemap, options.parallel)
    streamed = streamed_store_names(options, scan)
    uses = _use_counts(state.func_ir.blocks)
    candidates = [a for a in scan.stores() if a.array in streamed
                  and (a.kind in ("row", "slice") or _whole_store_through_view(scan, a)
                       or (a.kind == "inplace" and a.array_var == scan.canonical(a.stmt.value.lhs.name)))]
    rewritten = sum(_rewrite_store(state, scan, access, uses) for access in candidates)
    rewritten += sum(_rewrite_result(state, scan, name, uses) for name in sorted(scan.results & named))
    if rewritten:
        retype(state)
    return bool(rewritten)
