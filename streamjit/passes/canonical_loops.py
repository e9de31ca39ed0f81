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
types are known before type inference, from the signature).
"""

from numba.core import ir, types
from numba.core.ir_utils import build_definitions, get_definition, guard

from .ir_build import Emitter


def _array_param(state, var):
    value = guard(get_definition, state.func_ir, var)
    return isinstance(value, ir.Arg) and isinstance(state.args[value.index], types.Array)


def _iterated_array(state, getiter):
    """(array var, start or None, is_enumerate) for a canonicalizable loop."""
    source = getiter.value
    if _array_param(state, source):
        return source, None, False
    call = guard(get_definition, state.func_ir, source)
    if not (isinstance(call, ir.Expr) and call.op == "call" and not call.kws and 1 <= len(call.args) <= 2):
        return None
    func = guard(get_definition, state.func_ir, call.func)
    if isinstance(func, (ir.Global, ir.FreeVar)) and func.value is enumerate and _array_param(state, call.args[0]):
        return call.args[0], (call.args[1] if len(call.args) == 2 else None), True
    return None


def _rewrite(state, label, at, getiter_stmt, found):
    array, start, is_enumerate = found
    blocks = state.func_ir.blocks
    header = blocks[label]
    nxt = header.body[at].target
    first = next((s for s in header.body if isinstance(s, ir.Assign) and isinstance(s.value, ir.Expr)
                  and s.value.op == "pair_first" and s.value.value.name == nxt.name), None)
    copy_stmt = next((s for s in header.body if isinstance(s, ir.Assign) and first is not None
                      and isinstance(s.value, ir.Var) and s.value.name == first.target.name), None)
    branch = header.body[-1]
    if copy_stmt is None or not isinstance(branch, ir.Branch):
        return False
    # the iterator: range(a.shape[0]) in place of the array (or enumerate) iterator
    owner = next(b for b in blocks.values() if getiter_stmt in b.body)
    pre = Emitter(owner.scope, getiter_stmt.loc)
    length = pre.assign(ir.Expr.static_getitem(pre.assign(ir.Expr.getattr(array, "shape", pre.loc)), 0, None,
                                               pre.loc))
    rng = pre.call(range, length)
    getiter_stmt.value = ir.Expr.getiter(rng, getiter_stmt.loc)
    owner.body[owner.body.index(getiter_stmt):owner.body.index(getiter_stmt)] = pre.stmts
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
            found = _iterated_array(state, getiter)
            if found and getiter_stmt is not None:
                changed |= _rewrite(state, label, at, getiter_stmt, found)
    if changed:
        state.func_ir._definitions = build_definitions(state.func_ir.blocks)
    return changed
