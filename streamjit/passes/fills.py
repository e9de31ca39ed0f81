"""``arr.fill(value)`` becomes ``arr[...] = value``.

Numba compiles ``ndarray.fill`` as a separate function (an
``@overload_method`` whose body is ``arr[:] = val``) that the stream passes
never see into: the best-known request for streamed stores (``arr.fill(0.0)``
on a 1 GiB array, Numba issue #7534) streamed nothing. Written as the
store it is, the fill is a whole-array store of a scalar like any other:
`array_stores.py` turns it into an element loop, and the passes after it
align and stream it. The semantics are the method's own (its body is that
store: the value cast to the array's dtype, every element written).

Runs first on typed IR; the statements it makes are typed here.
"""

import operator

from numba.core import ir, types

# The `StreamFacts` fields this pass reads, sets and leaves stale (`passes/analysis/facts.py`).
REQUIRES = ()
PRODUCES = ()
INVALIDATES = ()


def _is_fill(typemap, expr):
    if not (isinstance(expr, ir.Expr) and expr.op == "call" and len(expr.args) == 1 and not expr.kws):
        return False
    method = typemap.get(expr.func.name)
    return isinstance(method, types.BoundFunction) and method.typing_key == (types.Array, "fill") \
        and isinstance(method.this, types.Array)


def _array_of(func_ir, expr):
    """The array a bound ``fill`` was read from (``getattr(arr, 'fill')``)."""
    found = func_ir.get_definition(expr.func)
    return found.value if isinstance(found, ir.Expr) and found.op == "getattr" else None


def run_pass(state):
    """Rewrite every ``arr.fill(value)`` on an array into ``arr[...] = value``."""
    typemap, calltypes, func_ir = state.typemap, state.calltypes, state.func_ir
    changed = False
    for block in func_ir.blocks.values():
        body = []
        for stmt in block.body:
            array = _array_of(func_ir, stmt.value) if isinstance(stmt, ir.Assign) and \
                _is_fill(typemap, stmt.value) else None
            if array is None:
                body.append(stmt)
                continue
            value, loc = stmt.value.args[0], stmt.loc
            everything = ir.Var(block.scope, f"$streamjit_fill_index.{len(body)}", loc)
            typemap[everything.name] = types.ellipsis
            store = ir.SetItem(array, everything, value, loc)
            calltypes[store] = state.typingctx.resolve_function_type(
                operator.setitem, (typemap[array.name], types.ellipsis, typemap[value.name]), {})
            # the call's result, None, stays defined for whatever used it
            body += [ir.Assign(ir.Const(Ellipsis, loc), everything, loc), store,
                     ir.Assign(ir.Const(None, loc), stmt.target, loc)]
            changed = True
        block.body = body
    return changed
