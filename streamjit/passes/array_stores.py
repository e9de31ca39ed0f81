"""Whole-array stores become element loops.

Real Numba code writes arrays whole: row stores (``out[i] = x[i]``), slice
assignments of array expressions (``B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] +
...)``, ``out[:] = a * x + y``, through a view ``inner[...] = ...``),
in-place operators on arrays and slices (``C *= beta``, ``A[1:] += c *
B[:-1]``) and array expressions whose result is a new array (``r = a * x +
y``, ``return expr``). Numba runs each as a call the stream passes cannot
see into, computing the right-hand side into temporary arrays first. Where
the result is exactly an element loop this pass rewrites the store (typed
IR), whether or not the array's stores stream: an array the rules keep
plain keeps plain stores, but loses Numba's temporaries too:

    view = B[1:-1, 1:-1]                       # the destination (B itself for C *= ...)
    if copies_elementwise(view, A1) & ...:     # every array operand: the same (trailing) shape,
                                               # disjoint memory (or the very same elements)
        for i in range(view.shape[0]):
            for j in range(view.shape[1]):
                view[i, j] = 0.2 * (A1[i, j] + A2[i, j] + ...)   # fused: no temporary
    else:
        <the original statements>              # Numba's own: broadcasting, overlap, errors

(for a new array: ``r = np.empty(A1.shape, dtype)`` before the loop, the
check only of shapes). What one element computes, and which of the
kernel's temporaries are computed inside the loop instead of into arrays
(producer-consumer fusion), is `array_expressions.py`'s: operators,
comparisons, ufunc calls and ``np.where`` on arrays (of the destination's
dimensions or fewer, broadcast along the leading ones) and scalars, each
element computed as Numba computes an array-expression element, with
scalar arithmetic under NumPy's error model (`codegen.with_numpy_errors`),
so the values are Numba's. Anything else in it is an operand Numba computes
first. With
``parallel=True`` the outer loop is a ``prange``, so the expression still
runs on all threads, as Numba's parfors would run it. The passes after this
one align, stream and fence the element loop like one the user wrote; the
view is registered as a root of its array (`accesses.py`), and each store
made or kept is recorded with what it came from (``store_origin`` of
`passes/analysis/facts.py`: `stream_stores=True` leaves updates in place plain).
The new statements are typed here, for the scan.
"""

import operator
from dataclasses import replace

import numpy as np
from numba import prange
from numba.core import ir, types
from numba.np.numpy_support import as_dtype

from ..errors import warn_in_kernel
from .. import codegen
from .accesses import streamed_store_names
from .analysis.indices import (disjoint_subscripts, index_atoms, is_element_index, is_int, is_slice,
                               reads_what_it_writes, subscript_key)
from ..plan import FUSED_TEMPORARY
from .rewrite.array_expressions import apply, element, expression, fusable
from .analysis.scan import scan_kernel, views_array
from .rewrite.ir_build import Emitter, loop_nest, new_block
from .analysis.rebindings import version_name
from .retype import retype

# The `StreamFacts` fields this pass reads, sets and leaves stale (`passes/analysis/facts.py`).
REQUIRES = ("options", "typed")
PRODUCES = ("views", "store_notes", "store_origin", "fallbacks", "typed")
INVALIDATES = ()

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


def _owner(scan, found, leaf):
    """The array a view read in the loop is taken of (a parameter or a
    ping-pong variable's name), or None for an operand that is no view."""
    base = found.view_of[leaf][0] if leaf in found.view_of else None
    root = scan.definition(base or leaf)
    if isinstance(root, ir.Expr) and root.op in ("getitem", "static_getitem"):
        source = scan.canonical(root.value.name)
    elif base is not None:
        source = scan.canonical(base)
    else:
        return None
    return scan.array_bound_to(source) or scan.group_name(source)


def _fuse(state, scan, block, stmt, how, found, ndim, head, element_of, check=codegen.copies_elementwise,
          fast=None, done=(), streamed=True):
    """Split ``block`` at ``stmt``: the statements before it (and the views
    of fused temporaries' operands), then a run-time test that every array
    operand can be read element for element (and each fused temporary's
    operands have one shape); if it passes, a loop nest over the
    destination storing ``element_of(body, index_for)``, else the
    `Expression`'s original statements and ``stmt`` (Numba's own code).
    ``head(emit)`` emits the destination's shape source and returns (it, the
    destination); ``fast(emit, shape)`` runs before the loop (an
    allocation); ``done`` after it; ``streamed``: whether the destination's
    stores stream (a failed check then counts as a fallback). Returns the
    destination."""
    blocks, scope, loc = state.func_ir.blocks, block.scope, stmt.loc
    at = next(k for k, s in enumerate(block.body) if s is stmt)
    moved = {id(n) for n in found.nodes}
    emit = Emitter(scope, loc, [s for s in block.body[:at] if id(s) not in moved] + found.views)
    for view in found.views:
        if view.target.name in found.view_of:  # (not the globals of `codegen.sliced`'s calls)
            state.typemap[view.target.name] = found.view_of[view.target.name][1]
    source, destination = head(emit)
    shape = emit.assign(ir.Expr.getattr(source, "shape", loc), hint="shape")
    extents = [emit.assign(ir.Expr.static_getitem(shape, d, None, loc), hint="extent") for d in range(ndim)]
    checks = [emit.call(check, source, ir.Var(scope, a, loc)) for a in found.arrays]
    checks += [emit.call(codegen.leads, source, ir.Var(scope, a, loc)) for a in found.leading]
    checks += [emit.call(codegen.same_shape, ir.Var(scope, a, loc), ir.Var(scope, b, loc))
               for a, b in found.same_shapes]
    ok = checks[0] if checks else emit.const(True)
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

    def index_for(k, lead=False, shift=()):
        """The index of an operand of k dimensions: the last k indices (broadcasting), each plus its ``shift``."""
        if lead:  # (np.outer's first operand: the next-to-last index)
            return indices[ndim - 2]
        if (k, shift) not in by_ndim:
            by_ndim[(k, shift)] = body.index([body.add(i, s) if s else i
                                              for i, s in zip(indices[ndim - k:], shift or (0,) * k)])
        return by_ndim[(k, shift)]

    value = element_of(body, index_for)
    store = ir.SetItem(destination, index_for(ndim), value, loc)
    state.stream_facts.store_origin[id(store)] = (store, how)
    body.stmts += [store, ir.Jump(innermost, loc)]
    blocks[body_label].body = body.stmts
    emit.stmts.append(ir.Branch(ok, entry, fallback, loc))
    if streamed:
        state.stream_facts.fallbacks.append(ok.name)
    block.body = emit.stmts
    state.stream_facts.store_origin[id(stmt)] = (stmt, how)  # {id: (store this pass made or kept, what it stores)}
    for leaf in found.arrays:  # sliced views read in the loop are roots too: their loads align and vectorize
        owner = _owner(scan, found, leaf)
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


def _overlaps_itself(state, scan, access, arrays, streamed):
    """Whether the right-hand side reads other elements of the array it
    stores to (``u[1:-1] = u[1:-1] + c * (u[2:] - ...)``), noted and warned
    about where the array is ``streamed``: the operands overlap on every
    call (NumPy semantics need a temporary), so the store stays Numba's own,
    plain, whatever the size; no element loop is made that could never
    run."""
    stmt = access.stmt
    if not isinstance(stmt, (ir.SetItem, ir.StaticSetItem)):
        return False
    views, written = [], subscript_key(scan, stmt)
    for leaf in arrays:
        view = scan.definition(leaf)
        if isinstance(view, ir.Expr) and view.op in ("getitem", "static_getitem") \
                and scan.canonical(view.value.name) == scan.canonical(stmt.target.name):
            read = subscript_key(scan, view)
            if None not in (read, written) and read != written and not disjoint_subscripts(read, written):
                views.append(view)
    if not views or not streamed:
        return bool(views)
    name = access.array
    text = (f"its right-hand side reads other elements of '{name}' than it writes (shifted views of it): the "
            "operands overlap, so every call runs Numba's plain store (NumPy semantics need a temporary); to "
            f"stream, write into a second buffer and swap them after each step: {name}_next[...] = <expression of "
            f"{name}>; {name}, {name}_next = {name}_next, {name}")
    state.stream_facts.store_notes.append((name, access.line, text))
    state.stream_facts.store_origin[id(stmt)] = (stmt, "overlap")  # (kept: the note above says why)
    warn_in_kernel(state.func_id, text, access.line)
    return True


def _stores_a_column(state, scan, access, streamed):
    """Whether the store writes a column of a C array (``p[:, 0] = ...``: an
    integer index in its last dimension), whose elements lie a row apart:
    a streamed loop would fail its contiguity check on every call, so the
    store stays Numba's own, plain, with a note (no warning)."""
    ty, index = state.typemap[access.array_var], access.index
    if not (isinstance(ty, types.Array) and ty.layout == "C" and ty.ndim >= 2 and len(index) == ty.ndim
            and is_int(scan, index[-1])):
        return False
    if streamed:
        state.stream_facts.store_notes.append((access.array, access.line, "a column (an integer index in the last "
                                               "dimension of a C array): its elements lie a row apart, so Numba "
                                               "stores it, plain"))
    state.stream_facts.store_origin[id(access.stmt)] = (access.stmt, "column")
    return True


def _views_itself_through_a_call(scan, access, arrays):
    """Whether an operand is a call's result made of the array stored to
    (NPBench durbin's ``y[:k] += alpha * np.flip(y[:k])``): a view of it,
    most likely, so the run-time check would send every call to Numba's
    code, after paying for itself (durbin, whose ``y`` stays plain: 0.84x
    numba.njit with the loop made; Intel Xeon VM, bench/npbench.py)."""
    array = scan.canonical(access.array_var)
    for leaf in arrays:
        made = scan.definition(leaf)
        if isinstance(made, ir.Expr) and made.op == "call" and any(views_array(scan, a, array) for a in made.args):
            return True
    return False


def _note_fused(state, found, array, line):
    """Record each temporary computed inside the loop storing ``array``."""
    for temporary, views in sorted(found.fused.items()):
        state.stream_facts.store_notes.append((version_name(temporary), line, FUSED_TEMPORARY.format(
            array=array, line=line, views=views, s="s" if views > 1 else "")))


def _rewrite_store(state, scan, access, uses, streamed):
    """A row store, slice assignment or in-place operator on an array
    (``streamed``: one whose stores stream)."""
    typemap, stmt = state.typemap, access.stmt
    if _stores_a_column(state, scan, access, streamed):
        return False
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
        found = expression(state.typingctx, scan, state.func_ir, block, at, inplace.value.rhs, ndim,
                           [inplace, stmt], destination=scan.canonical(access.array_var))
    else:
        # the view keeps a dimension per slice and per dimension not indexed
        # (of the store's own index: a chained store's starts after its prefix, `A[2][1:]`)
        target_ndim = typemap[stmt.target.name].ndim
        own = access.index if access.kind == "view" else access.index[typemap[access.array_var].ndim - target_ndim:]
        ndim = target_ndim - sum(not is_slice(typemap, x) for x in own)
        found = expression(state.typingctx, scan, state.func_ir, block, at, stmt.value, ndim, [stmt],
                           destination=scan.canonical(access.array_var))
    if found is None:
        return False
    if _overlaps_itself(state, scan, access, found.arrays, streamed):
        return False
    if not streamed and _views_itself_through_a_call(scan, access, found.arrays):
        return False
    how = "update" if how not in ("inplace", "update") and reads_what_it_writes(scan, stmt, found.arrays) else how
    if inplace is not None:
        found = replace(found, nodes=found.nodes + ([inplace] if inplace is not stmt else []),
                        arrays={**found.arrays, view.name: ndim})

        def element_of(body, index_for):
            value = element(body, found, index_for)  # (in the right-hand side's dtype, as Numba computes it)
            current = body.assign(ir.Expr.getitem(view, index_for(ndim), stmt.loc), hint="element")
            return apply(body, _INPLACE[inplace.value.fn], [current, value])

        def head(emit):
            return view, view
    else:
        def element_of(body, index_for):
            return element(body, found, index_for)

        def head(emit):
            index = stmt.index if isinstance(stmt, ir.SetItem) else stmt.index_var
            if isinstance(typemap[index.name], types.EllipsisType):  # (Numba indexes with `...` only in a tuple)
                index = emit.tuple_([index])
            view = emit.assign(ir.Expr.getitem(stmt.target, index, stmt.loc), hint="view")
            return view, view
    destination = _fuse(state, scan, block, stmt, how, found, ndim, head, element_of, done=done, streamed=streamed)
    state.stream_facts.views[destination.name] = access.array
    state.stream_facts.store_notes.append((access.array, access.line, "{} stored by {} element loop where the operands "
                                           "allow it".format(_HOW[how], "a fused" if inplace is not None or any(
                                               not isinstance(n.value, ir.Var) for n in found.nodes) else "an")))
    _note_fused(state, found, access.array, access.line)
    return True


def _rewrite_result(state, scan, name, streamed, moved):
    """``r = <array expression>`` (or its return) as a new array filled by a
    fused element loop (``streamed``: its stores stream), unless an earlier
    rewrite ``moved`` its statement into another's fallback (it is computed
    in that loop)."""
    var = scan.arrays[name]
    stmt = scan.defs[var][0][1]
    if id(stmt) in moved or state.typemap[var].layout != "C":  # (np.empty makes C; `-X` of an F array is F)
        return False
    block, at = _place(state, stmt)
    ndim = state.typemap[var].ndim
    found = expression(state.typingctx, scan, state.func_ir, block, at + 1, stmt.target, ndim, [], top=True)
    full = [a for a, k in found.arrays.items() if k == ndim] if found and any(n is stmt for n in found.nodes) else []
    if not full:
        if streamed:
            state.stream_facts.store_notes.append((name, stmt.loc.line, "an array expression Numba computes itself "
                                                   "(not arithmetic and ufuncs on arrays and scalars): not streamed"))
        return False
    moved.update(id(n) for n in found.nodes)
    dtype = state.typemap[var].dtype

    def allocate(emit, shape):
        kind = emit.global_(str(dtype), as_dtype(dtype).type)
        emit.call(np.empty, shape, kind, target=stmt.target)

    _fuse(state, scan, block, stmt, "result", replace(found, nodes=[n for n in found.nodes if n is not stmt]), ndim,
          lambda emit: (ir.Var(block.scope, full[0], stmt.loc), stmt.target),
          lambda body, index_for: element(body, found, index_for), check=codegen.same_shape, fast=allocate,
          streamed=streamed)
    _note_fused(state, found, name, stmt.loc.line)
    state.stream_facts.store_notes.append((name, stmt.loc.line, "the result of {} array expression, stored by a fused "
                                           "element loop into a new array where the operands allow it".format(
                                               "a returned" if name == "return" else "an")))
    return True


def _position(state, stmt):
    """Where ``stmt`` lies: (block label, index in the block)."""
    return next((label, k) for label, block in state.func_ir.blocks.items() for k, s in enumerate(block.body)
                if s is stmt)


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
    """Whether any statement stores more than one element, computes an
    array expression, or a local array is named: a cheap test before the
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
                    and stmt.value.op in ("inplace_binop", "binop", "unary", "call") \
                    and isinstance(typemap.get(stmt.target.name), types.Array) \
                    and (stmt.value.op != "call" or fusable(typemap, stmt.value)):
                return True  # (an update in place, or an array expression: maybe a result)
    return False


def run_pass(state):
    """Rewrite the row stores, slice assignments and in-place operators of arrays, and the
    array-expression results of streamed arrays, into fused element loops, each guarded by a run-time check that falls
    back to Numba's own code; retype what was inserted. True when anything was rewritten."""
    options = state.stream_facts.options
    named = set(options.stream_stores) if isinstance(options.stream_stores, tuple) else set()
    if not _stores_arrays(state, named):
        return False
    scan = scan_kernel(state.func_ir, state.typemap, options.parallel)
    streamed = streamed_store_names(options, scan)
    uses = _use_counts(state.func_ir.blocks)
    candidates = [a for a in scan.stores()
                  if a.kind in ("row", "slice") or _whole_store_through_view(scan, a)
                  or (a.kind == "inplace" and a.array_var == scan.canonical(a.stmt.value.lhs.name))]
    rewritten = sum(_rewrite_store(state, scan, access, uses, access.array in streamed) for access in candidates)
    # (the last first: a result an earlier one reads is computed in the later one's loop)
    results = sorted(scan.results, key=lambda name: _position(state, scan.defs[scan.arrays[name]][0][1]), reverse=True)
    moved = set()
    rewritten += sum(_rewrite_result(state, scan, name, name in named or name in streamed, moved)
                     for name in results)
    if rewritten:
        retype(state)
    return bool(rewritten)
