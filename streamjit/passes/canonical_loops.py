"""Loops over arrays become ``range`` loops (untyped IR, before typing).

``for i, x in enumerate(a)`` and ``for x in a`` iterate an array parameter
through Numba's array iterator, which hides the element index from every
later pass: the loop has no induction variable, so a store ``out[i]`` in it
could not be proved to write each element once, nor be aligned. Over an
array the two are exactly

    for k in range(a.shape[0]): i, x = k + start, a[k]      # enumerate(a, start)
    for k in range(a.shape[0]): x = a[k]                    # for x in a

(the iterator reads ``a[k]`` when the iteration runs and fixes the length
when the loop starts, as ``range`` does), so this pass rewrites the first
form into the second in Numba's IR, as Numba's own loop canonicalization
does for ``literal_unroll``. Only array parameters are rewritten (their
types are known before type inference, from the signature), also after an
in-place operator rebound them.

``for idx in np.ndindex(shape)`` and ``numba.pndindex(shape)`` visit every
index tuple once, in C order; they become the loop nest that says so,

    for i0 in range(shape[0]):          # prange for pndindex
        for i1 in range(shape[1]): idx = (i0, i1); BODY

so each store ``out[idx]`` is seen as ``out[i0, i1]`` (with ``parallel=True``
Numba's parfor pass then runs the outer loop on its threads, as it would
have run the pndindex loop).
"""

from numba import prange
from numba.core import ir, types
from numba.core.analysis import compute_cfg_from_blocks
from numba.core.ir_utils import find_callname, get_definition, guard

from ..numba_internals.ir import rebuild_definitions
from .rewrite.ir_build import Emitter, loop_nest, retarget

# The `StreamFacts` fields this pass reads, sets and leaves stale (`passes/analysis/facts.py`).
REQUIRES = ()
PRODUCES = ()
INVALIDATES = ()

_NDINDEX = {("ndindex", "numpy"): range, ("pndindex", "numba"): prange}


def _array_param(state, var):
    """The type of the array parameter ``var`` is, or an in-place operator
    on one returned (``C -= s``: the same array, rebound); else None."""
    value = guard(get_definition, state.func_ir, var)
    if isinstance(value, ir.Expr) and value.op == "inplace_binop":
        return _array_param(state, value.lhs)
    return state.args[value.index] if isinstance(value, ir.Arg) and isinstance(state.args[value.index],
                                                                               types.Array) else None


def _iterated_array(state, getiter):
    """(array var, start or None, is_enumerate) for a canonicalizable loop."""
    source = getiter.value
    if _array_param(state, source) is not None:
        return source, None, False
    call = guard(get_definition, state.func_ir, source)
    if not (isinstance(call, ir.Expr) and call.op == "call" and not call.kws and 1 <= len(call.args) <= 2):
        return None
    if guard(find_callname, state.func_ir, call) == ("enumerate", "builtins") \
            and _array_param(state, call.args[0]) is not None:
        return call.args[0], (call.args[1] if len(call.args) == 2 else None), True
    return None


def _ndindex_dims(state, call, emit):
    """Variables holding the extents of an ndindex/pndindex call, or None."""
    if len(call.args) > 1:
        return list(call.args)
    shape = guard(get_definition, state.func_ir, call.args[0])
    if isinstance(shape, ir.Expr) and shape.op == "build_tuple":
        return list(shape.items)
    if isinstance(shape, ir.Expr) and shape.op in ("static_getitem", "getitem"):
        extents = guard(get_definition, state.func_ir, shape.value)   # a.shape[k]: one extent
        if isinstance(extents, ir.Expr) and extents.op == "getattr" and extents.attr == "shape":
            return [call.args[0]]
    if isinstance(shape, ir.Expr) and shape.op == "getattr" and shape.attr == "shape" \
            and _array_param(state, shape.value) is not None:
        ndim = _array_param(state, shape.value).ndim
        return [emit.assign(ir.Expr.static_getitem(call.args[0], k, None, emit.loc)) for k in range(ndim)]
    return None


def _header_parts(header, at):
    """(copy of the iteration value, branch) of a for-loop header."""
    nxt = header.body[at].target
    first = next((s for s in header.body if isinstance(s, ir.Assign) and isinstance(s.value, ir.Expr)
                  and s.value.op == "pair_first" and s.value.value.name == nxt.name), None)
    copy_stmt = next((s for s in header.body if isinstance(s, ir.Assign) and first is not None
                      and isinstance(s.value, ir.Var) and s.value.name == first.target.name), None)
    branch = header.body[-1]
    return (copy_stmt, branch) if copy_stmt is not None and isinstance(branch, ir.Branch) else None


def _rewrite_ndindex(state, label, at, getiter_stmt, call, loop_func):
    """Turn the ndindex loop at header ``label`` into a range loop nest."""
    blocks = state.func_ir.blocks
    header = blocks[label]
    parts = _header_parts(header, at)
    pre = Emitter(header.scope, getiter_stmt.loc)
    dims = _ndindex_dims(state, call, pre) if parts else None
    if not dims:
        return False
    copy_stmt, branch = parts
    loc, scope = copy_stmt.loc, header.scope
    # the outermost loop keeps the user's header and call, now range(dims[0])
    call.func = pre.global_(loop_func.__name__, loop_func)
    call.args = [dims[0]]
    # before the call, which now reads them
    block, at_call = next((b, b.body.index(s)) for b in blocks.values() for s in b.body
                          if isinstance(s, ir.Assign) and s.value is call)
    block.body[at_call:at_call] = pre.stmts
    indices = [ir.Var(scope, f"$streamjit_nd{label}_0", loc)]
    value_var, copy_stmt.target = copy_stmt.target, indices[0]
    body_entry = branch.truebr
    loop_body = compute_cfg_from_blocks(blocks).loops()[label].body
    if len(dims) > 1:  # inner loops, one per further dimension
        entry, innermost, inner = loop_nest(blocks, scope, loc, dims[1:], body_entry, label)
        indices += inner
        retarget(header, {body_entry: entry})
        for b in loop_body - {label}:
            retarget(blocks[b], {label: innermost})
    rebuild = Emitter(scope, loc)
    rebuild.assign(ir.Expr.build_tuple(indices, loc), target=value_var)
    blocks[body_entry].body[0:0] = rebuild.stmts
    return True


def _rewrite(state, label, at, getiter_stmt, found):
    array, start, is_enumerate = found
    blocks = state.func_ir.blocks
    header = blocks[label]
    parts = _header_parts(header, at)
    if parts is None:
        return False
    copy_stmt, branch = parts
    # the iterator: range(a.shape[0]) in place of the array (or enumerate) iterator
    owner = next(b for b in blocks.values() if getiter_stmt in b.body)
    pre = Emitter(owner.scope, getiter_stmt.loc)
    length = pre.assign(ir.Expr.static_getitem(pre.assign(ir.Expr.getattr(array, "shape", pre.loc)), 0, None,
                                               pre.loc))
    rng = pre.call(range, length)
    iterated = getiter_stmt.value.value
    getiter_stmt.value = ir.Expr.getiter(rng, getiter_stmt.loc)
    owner.body[owner.body.index(getiter_stmt):owner.body.index(getiter_stmt)] = pre.stmts
    if is_enumerate:  # the enumerate object is no longer iterated: drop its call
        for b in blocks.values():
            b.body = [s for s in b.body if not (isinstance(s, ir.Assign) and s.target.name == iterated.name)]
    # the loop value, rebuilt from the index at the start of the body
    value_var = copy_stmt.target
    index = ir.Var(header.scope, f"$streamjit_index.{label}", copy_stmt.loc)
    copy_stmt.target = index
    body = blocks[branch.truebr]
    emit = Emitter(body.scope, copy_stmt.loc)
    item = emit.assign(ir.Expr.getitem(array, index, emit.loc), hint="item")
    if is_enumerate:
        count = emit.add(index, start) if start is not None else index
        emit.assign(ir.Expr.build_tuple([count, item], emit.loc), target=value_var)
    else:
        emit.assign(item, target=value_var)
    body.body[0:0] = emit.stmts
    return True


def run_pass(state):
    """Rewrite each loop over an array (``enumerate(a)``, ``for x in a``) and each
    ``np.ndindex``/``numba.pndindex`` loop in the untyped IR into ``range`` loop nests. True
    when any loop was rewritten."""
    changed = False
    for label, block in list(state.func_ir.blocks.items()):
        for at, stmt in enumerate(block.body):
            if not (isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr) and stmt.value.op == "iternext"):
                continue
            getiter = guard(get_definition, state.func_ir, stmt.value.value)
            if not (isinstance(getiter, ir.Expr) and getiter.op == "getiter"):
                continue
            getiter_stmt = next((s for b in state.func_ir.blocks.values() for s in b.body
                                 if isinstance(s, ir.Assign) and s.value is getiter), None)
            if getiter_stmt is None:
                continue
            found = _iterated_array(state, getiter)
            call = guard(get_definition, state.func_ir, getiter.value)
            callname = guard(find_callname, state.func_ir, call) if isinstance(call, ir.Expr) else None
            if found:
                changed |= _rewrite(state, label, at, getiter_stmt, found)
            elif callname in _NDINDEX and not call.kws:
                changed |= _rewrite_ndindex(state, label, at, getiter_stmt, call, _NDINDEX[callname])
    if changed:
        rebuild_definitions(state.func_ir)
    return changed
