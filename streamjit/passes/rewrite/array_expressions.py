"""Array expressions as one element computation, with the kernel's
temporaries fused into the expressions that read them.

`array_stores.py` turns a whole-array store into an element loop; this
module says what that loop computes per element and which statements it
replaces. An expression is walked from the stored value back through the
statements of its block:

- an **operation**: an operator (arithmetic, comparison) or a ufunc call on
  arrays and scalars, ``np.where(c, x, y)``, or a copy, whose result is an
  array used nowhere but in this expression: computed per element;
- a **view of a fused temporary** (below): the temporary's own expression,
  computed at the view's element;
- anything else of array type is an **operand**: an array Numba computes
  (or the caller passed), read at the loop's index (of at most the
  destination's dimensions, broadcast along the leading ones); scalars are
  read as they are.

Producer-consumer fusion (Halide's ``compute_inline``, XLA's loop fusion).
Kernels name their temporaries and read them through shifted views:

    lap = 4.0 * f[1:-1, 1:-1] - (f[2:, 1:-1] + f[:-2, 1:-1] + ...)
    flx = np.where(lap[1:, :] - lap[:-1, :] > 0, 0, ...)
    out[:] = f[2:-2, 2:-2] - c * (flx[1:, :] - flx[:-1, :])

Numba computes ``lap`` and ``flx`` into full-size arrays: their traffic, and
the page faults of fresh memory, cost more than the stencil itself. A
temporary ``T`` is *fused* into the loop that reads it when

- it is defined once, in the consumer's block, by an operation (above) whose
  arrays all have ``T``'s dimensions (no broadcasting inside ``T``; at run
  time every operand of ``T`` is checked to have the same shape, so that
  Numba's own code, which would broadcast or raise, runs otherwise);
- every use of ``T`` (and of every statement moved with it) is inside the
  fused expression: never returned, stored, or handed to a call;
- no statement between ``T``'s definition and the consumer may write memory
  (a store, an in-place operator, a call that is not a ufunc or a NumPy
  constructor, `_PURE_CALLS`): the fused loop reads ``T``'s operands later
  than Numba would;
- no statement between ``T``'s definition and the consumer may raise or
  print (`analysis/raises.why_may_raise`): ``T``'s own error (shapes that do not broadcast),
  raised by Numba's statements at the consumer, would come after it;
- none of ``T``'s operands is a view of the array the consumer stores to:
  the loop would read elements it already wrote (Numba's temporary is what
  makes that exact), and the overlap check would send every call to Numba's
  code.

Slicing commutes with elementwise operations on arrays of one shape: for
``V = T[s]`` with ``T = f(A, B)``, ``V[i] == f(A[s][i], B[s][i])``. So a
view of ``T`` is computed from views of ``T``'s operands, sliced by the
same index (``A[s]``, chained for temporaries of temporaries), made before
the loop and checked like any operand; ``T`` is *recomputed* at each view
that reads it, and a temporary read twice at the same element (``res`` in
``np.where(res * g > 0, 0, res)``) is computed once. Types follow
Numba's array expressions: an unnamed operation read by another operation
is computed in scalar types inside it (int32 * int32 is int64), any other
result (a named temporary, ``np.where``'s, the stored value itself) is
cast to its array's dtype, as Numba stores it (int32 wraps, uint8 wraps at
256), before the store converts it to the destination's. Results equal
Numba's: the same scalar operations on the same values. With a failed
run-time check the call runs Numba's own statements, the temporaries
included. Operands that are slices of one array are read
from that array at shifted indices (`view_shifts.py`), so that LLVM sees
the views of one element as one load.

Cost rule. Recomputing trades memory traffic for arithmetic: each view of
``T`` repeats ``T``'s operations. The fused element may hold at most
`MAX_OPERATIONS` operations and `MAX_OPERANDS` array operands (chosen, not
measured: NPBench's hdiff, whose temporaries are read at 8 offsets, needs
about 60 operations and 50 operands); beyond that the temporaries are
computed into their arrays, as Numba computes them, and only the
expression itself is fused. No temporary is kept in a cache-resident tile
or row buffer: where recomputing costs too much, the temporary stays a
full array.
"""

import operator
from dataclasses import dataclass, field

import numpy as np
from numba.core import ir, types
from numba.np.numpy_support import as_dtype

from ... import codegen
from .ir_build import Emitter
from ..analysis.raises import SCALAR_BUILTINS, why_may_raise
from ..analysis.scan import views_array
from .view_shifts import shift

ELEMENTWISE = {operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod,
               operator.pow, operator.neg, operator.pos, operator.lt, operator.le, operator.gt, operator.ge,
               operator.eq, operator.ne}
LEAVES = ("array", "lead", "scalar")
MAX_OPERATIONS = 256
MAX_OPERANDS = 64
# Calls that write no memory (besides ufuncs without an output argument,
# `math`'s functions and scalar constructors such as ``np.float64(x)``):
# Python's scalar built-ins, the operations fused here and NumPy's
# constructors. Any other call may write, through an array or an integer
# address (``a.ctypes.data`` handed to a ctypes or cffi function).
_PURE_CALLS = SCALAR_BUILTINS | {range, np.where, np.outer, np.empty, np.zeros, np.ones, np.full, np.empty_like,
                                  np.zeros_like, np.ones_like, np.full_like, np.arange}


@dataclass
class Expression:
    """One element of an array expression, and what computing it replaces."""

    value: ir.Var
    # the statements the element loop replaces, in block order (run only
    # when a run-time check sends the call to Numba's own code)
    nodes: list
    # {array operand read at the loop's index: its dimensions}
    arrays: dict
    # {1-D array operand read at the index of the next-to-last dimension: 1} (np.outer's first)
    leading: dict = field(default_factory=dict)
    # new statements before the loop: views of fused temporaries' operands,
    # and {their variable: (the operand they view, their type)}
    views: list = field(default_factory=list)
    view_of: dict = field(default_factory=dict)
    # (a, b) pairs of arrays checked to have one shape: a fused temporary's operands
    same_shapes: list = field(default_factory=list)
    # {array operand that is a shifted view of another array: (that array's variable, the shift per dimension)}
    shifted: dict = field(default_factory=dict)
    # {the kernel's array computed in the loop, never stored: how many times per element}
    fused: dict = field(default_factory=dict)
    # the temporaries read through views (recomputed per view: the cost rule's subject)
    recomputed: set = field(default_factory=set)
    # the moved operations Numba computes into arrays where they stand (raising there: shapes that do not broadcast)
    placed: set = field(default_factory=set)
    # {(variable, views applied): node}: ("array", name, ndim) | ("lead", name) | ("scalar", var)
    # | ("alias", key, dtype or None) | ("op" or "where", expr, [keys], dtype or None)
    graph: dict = field(default_factory=dict)
    types: dict = field(default_factory=dict)


class _NotFused(Exception):
    """A temporary that cannot be computed inside the loop (``args[0]``), or
    None: no element loop at all."""


def operands(value):
    """The variables an operation (or a copy) reads."""
    if isinstance(value, ir.Var):  # a copy (an inlined helper's arguments and result)
        return (value,)
    return {"binop": lambda: (value.lhs, value.rhs), "unary": lambda: (value.value,)}.get(value.op,
                                                                                       lambda: value.args)()


def _calls(typemap, expr, function):
    func = typemap.get(expr.func.name) if isinstance(expr, ir.Expr) and expr.op == "call" else None
    return isinstance(func, types.Function) and func.typing_key is function


def _is_where(typemap, expr):
    return _calls(typemap, expr, np.where)


def fusable(typemap, expr):
    """An elementwise operator, ``np.where(c, x, y)``, ``np.outer(u, v)``, or a ufunc called with
    positional arrays and scalars."""
    if not isinstance(expr, ir.Expr) or expr.op not in ("binop", "unary", "call"):
        return False
    if expr.op == "call":  # (no output argument, positional or named)
        if expr.kws or expr.vararg is not None or expr.varkwarg is not None:
            return False
        func = typemap[expr.func.name]
        if _is_where(typemap, expr):
            return len(expr.args) == 3
        if _calls(typemap, expr, np.outer):
            return len(expr.args) == 2
        return (isinstance(func, types.Function) and isinstance(func.typing_key, np.ufunc)
                and len(expr.args) == func.typing_key.nin)
    return expr.fn in ELEMENTWISE


def _may_write(typemap, stmt):
    """Whether a statement may write memory an array operand reads."""
    if isinstance(stmt, (ir.SetItem, ir.StaticSetItem, ir.SetAttr, ir.DelItem, ir.DelAttr)):
        return True
    value = getattr(stmt, "value", None)
    if not isinstance(value, ir.Expr):
        return False
    if value.op == "inplace_binop":
        return not isinstance(typemap.get(value.lhs.name), (types.Number, types.Boolean))
    return value.op == "call" and not _pure_call(typemap.get(value.func.name), value)


def _pure_call(func, call):
    """Whether calling ``func`` (its Numba type) as ``call`` writes no memory (`_PURE_CALLS`)."""
    if isinstance(func, types.NumberClass):
        return True
    if not isinstance(func, types.Function):  # (a dispatcher, a ctypes or cffi function, a method)
        return False
    key = func.typing_key
    if isinstance(key, np.ufunc):
        return len(call.args) <= key.nin and not call.kws and call.vararg is None
    return getattr(key, "__module__", None) == "math" or key in _PURE_CALLS


def _cast_to(typemap, ty, var_name):
    """The dtype the array ``var_name`` stores, where an element computed as
    ``ty`` differs from it; else None."""
    dtype = typemap[var_name].dtype
    return None if types.unliteral(ty) == dtype else dtype


def _walk(typingctx, scan, block, end, value, ndim, top, kept, destination, consumers):
    """The `Expression` of ``value``, fusing temporaries not in ``kept``;
    raises `_NotFused`."""
    typemap = scan.typemap
    order = {id(s): k for k, s in enumerate(block.body)}
    skip = {id(s) for s in consumers}  # (an in-place operator writes, as the loop will)
    first = max((k + 1 for k, s in enumerate(block.body[:end]) if id(s) not in skip and _may_write(typemap, s)),
                default=0)
    expression = Expression(value, [], {})
    # (inside: the fused temporaries being walked, innermost last, with the
    # views their top is read through; shapes: {temporary: its operands, unsliced})
    nodes, inside, shapes = {}, [], {}
    getitems = {}  # {a view's variable: the getitem it computes}

    def movable(name):
        found = scan.defs.get(name, [])
        stmt = found[0][1] if len(found) == 1 and isinstance(found[0][1], ir.Assign) else None
        return stmt if stmt is not None and first <= order.get(id(stmt), -1) < end else None

    def view(name, chain):
        """``name`` sliced by each index of ``chain`` in turn (a new statement per prefix)."""
        if not chain:
            return name
        if (name, chain) not in expression.view_of:
            base = view(name, chain[:-1])
            index = ir.Var(block.scope, chain[-1], block.loc)
            found = typingctx.resolve_function_type(operator.getitem, (typemap.get(base) or
                                                                       expression.view_of[base][1],
                                                                       typemap[index.name]), {})
            if found is None or not isinstance(found.return_type, types.Array):
                raise _NotFused(inside[-1][0])
            emit = Emitter(block.scope, block.loc)
            target = emit.temp(f"operand.{name}")  # (unique in the function)
            getitems[target.name] = ir.Expr.getitem(ir.Var(block.scope, base, block.loc), index, block.loc)
            if _step_one_slices(typemap[index.name]):
                emit.call(codegen.sliced, ir.Var(block.scope, base, block.loc), index, target=target)
            else:
                emit.assign(getitems[target.name], target=target)
            expression.views += emit.stmts
            expression.view_of[(name, chain)] = target.name
            expression.view_of[target.name] = (name, found.return_type)
        return expression.view_of[(name, chain)]

    def operand_type(name):
        return typemap[name] if name in typemap else expression.view_of[name][1]

    def fail():
        raise _NotFused(inside[-1][0] if inside else None)

    def visit(var, chain, top=False, in_operation=False):
        ty = typemap[var.name]
        if not isinstance(ty, types.Array):
            if not isinstance(ty, (types.Number, types.Boolean)):
                fail()
            key = (var.name, ())
            expression.graph[key], expression.types[key] = ("scalar", var), ty
            return key
        key = (var.name, chain)
        if key in expression.graph:
            return key
        if inside and ty.ndim != typemap[inside[-1][0]].ndim:  # (broadcasting inside a fused temporary)
            fail()
        stmt = movable(var.name) if var.name not in kept or top else None
        if stmt is not None and _calls(typemap, stmt.value, np.outer):
            # np.outer(u, v) of 1-D arrays: u[i] * v[j] over the last two dimensions
            u, v = stmt.value.args
            if inside or ndim < 2 or not all(isinstance(typemap[a.name], types.Array) and typemap[a.name].ndim == 1
                                            and isinstance(typemap[a.name].dtype, types.Number) for a in (u, v)):
                fail()
            nodes[id(stmt)] = stmt
            expression.leading[u.name] = 1
            expression.arrays[v.name] = 1
            children = [(u.name, "lead"), (v.name, ())]
            expression.graph[children[0]], expression.types[children[0]] = ("lead", u.name), typemap[u.name].dtype
            expression.graph[children[1]], expression.types[children[1]] = ("array", v.name, 1), typemap[v.name].dtype
            sig = typingctx.resolve_function_type(operator.mul, tuple(expression.types[c] for c in children), {})
            if sig is None:
                fail()
            dtype = _cast_to(typemap, sig.return_type, var.name)
            expression.graph[key] = ("op", ir.Expr.binop(operator.mul, u, v, stmt.loc), children, dtype)
            expression.types[key] = dtype or sig.return_type
            return key
        if stmt is not None and (isinstance(stmt.value, ir.Var) or fusable(typemap, stmt.value)):
            nodes[id(stmt)] = stmt
            operation = not isinstance(stmt.value, ir.Var) and not _is_where(typemap, stmt.value)
            children = [visit(v, chain, in_operation=operation) for v in operands(stmt.value)]
            if isinstance(stmt.value, ir.Var):
                node, found = ("alias", children[0], None), expression.types[children[0]]
            elif _is_where(typemap, stmt.value):
                args = [types.unliteral(expression.types[c]) for c in children]
                found = typingctx.unify_types(*args[1:])
                node = ("where", stmt.value, children, None)
            else:
                fn = typemap[stmt.value.func.name] if stmt.value.op == "call" else stmt.value.fn
                sig = typingctx.resolve_function_type(fn, tuple(expression.types[c] for c in children), {})
                found = sig.return_type if sig is not None else None
                node = ("op", stmt.value, children, None)
            if not isinstance(found, (types.Number, types.Boolean)):
                fail()
            # Numba computes an unnamed operation inside the array expression
            # of the operation reading it, in scalar types (int32 * int32 is
            # int64); anything else it stores in an array of its dtype first
            if not (in_operation and var.name.startswith("$") and node[0] == "op"):
                dtype = _cast_to(typemap, found, var.name)
                node, found = node[:-1] + (dtype,), dtype or found
                expression.placed.add(var.name)
            expression.graph[key], expression.types[key] = node, found
            return key
        view_stmt = movable(var.name)
        source = view_stmt.value if view_stmt is not None else None
        if (isinstance(source, ir.Expr) and source.op in ("getitem", "static_getitem")
                and source.value.name not in kept and movable(source.value.name) is not None
                and fusable(typemap, movable(source.value.name).value)):
            index = source.index if source.op == "getitem" else source.index_var
            temporary = source.value
            if index is not None and _basic_index(typemap[index.name]):
                nodes[id(view_stmt)] = view_stmt
                inside.append((temporary.name, (index.name,) + chain))
                expression.recomputed.add(temporary.name)
                inner = visit(temporary, (index.name,) + chain, top=True)
                inside.pop()
                dtype = _cast_to(typemap, expression.types[inner], temporary.name)
                expression.graph[key] = ("alias", inner, dtype)
                expression.types[key] = dtype or expression.types[inner]
                return key
        if inside and destination is not None and views_array(scan, var, destination):
            fail()
        name = view(var.name, chain)
        leaf = operand_type(name)
        if not isinstance(leaf.dtype, (types.Number, types.Boolean)) or not 1 <= leaf.ndim <= ndim:
            fail()
        for temporary, at in inside:
            shapes.setdefault(temporary, []).append(view(var.name, chain[:len(chain) - len(at)]))
        expression.arrays[name] = leaf.ndim
        expression.graph[key], expression.types[key] = ("array", name, leaf.ndim), leaf.dtype
        return key

    visit(value, (), top)
    expression.nodes = sorted(nodes.values(), key=lambda s: order[id(s)])
    for name, _ in expression.graph:  # the kernel's own arrays computed in the loop, and how often
        if name != value.name and not name.startswith("$") and expression.graph[(name, _)][0] not in LEAVES \
                and isinstance(typemap[name], types.Array):
            expression.fused[name] = expression.fused.get(name, 0) + 1
    made = {name: (getitem, expression.view_of[name][1]) for name, getitem in getitems.items()}
    for name in expression.arrays:
        shifted = shift(scan, block, made, name, destination)
        if shifted is not None:
            expression.shifted[name] = shifted
    for arrays in shapes.values():  # each fused temporary's operands: one shape
        arrays = list(dict.fromkeys(arrays))
        expression.same_shapes += [(arrays[0], other) for other in arrays[1:]]
    return expression


def _basic_index(ty):
    """An index of integers and slices (a view, not a gather)."""
    parts = list(ty) if isinstance(ty, types.BaseTuple) else [ty]
    return all(isinstance(p, (types.Integer, types.SliceType)) for p in parts)


def _step_one_slices(ty):
    """An index of slices without a step (`codegen.sliced` makes the view)."""
    parts = list(ty) if isinstance(ty, types.BaseTuple) else [ty]
    return bool(parts) and all(p == types.slice2_type for p in parts)


def _escaped(func_ir, expression, consumers, top):
    """The variables the moved statements define that a statement outside
    them (and the consumers) reads: they must stay computed as arrays."""
    inside = {id(s) for s in expression.nodes} | {id(s) for s in consumers}
    defined = {s.target.name for s in expression.nodes if not (top and s.target.name == expression.value.name)}
    return {v.name for block in func_ir.blocks.values() for s in block.body if id(s) not in inside
            for v in s.list_vars() if v.name in defined}


def _placed_before_a_raise(typemap, block, end, found, consumers):
    """The moved operations Numba computes where they stand (`Expression.placed`)
    before a statement that stays and may raise: moved to the consumer, their
    errors would come after that statement's (its ZeroDivisionError before the
    temporary's ValueError), so they stay arrays."""
    moved = {id(s) for s in found.nodes} | {id(s) for s in consumers}
    raising = [k for k, s in enumerate(block.body[:end]) if id(s) not in moved and why_may_raise(typemap, s)]
    before = {id(s) for s in block.body[:raising[-1]]} if raising else set()
    return {s.target.name for s in found.nodes if id(s) in before and s.target.name in found.placed}


def expression(typingctx, scan, func_ir, block, end, value, ndim, consumers, top=False, destination=None):
    """The `Expression` computing ``value`` per element from statements of
    ``block`` before position ``end``, over arrays of at most ``ndim``
    dimensions (broadcast along the leading ones) and scalars, or None.
    ``consumers``: the statements that read ``value`` (they may read what the
    loop replaces); ``top``: ``value``'s own statement is the consumer;
    ``destination``: the array the loop stores to (no fused temporary reads
    it)."""
    kept = set()  # temporaries and results computed into arrays as Numba computes them
    while True:
        try:
            found = _walk(typingctx, scan, block, end, value, ndim, top, kept, destination, consumers)
        except _NotFused as failed:
            if failed.args[0] is None:
                return None
            kept.add(failed.args[0])
            continue
        escaped = _placed_before_a_raise(scan.typemap, block, end, found, consumers) - kept
        if escaped:
            kept |= escaped
            continue
        escaped = _escaped(func_ir, found, consumers, top)
        operations = sum(node[0] in ("op", "where") for node in found.graph.values())
        if not escaped and found.recomputed and (operations > MAX_OPERATIONS or len(found.arrays) > MAX_OPERANDS):
            escaped = found.recomputed  # recomputing costs more than the temporaries' traffic
        if not escaped:
            return found
        kept |= escaped


def apply(emit, fn, args):
    """The operator ``fn`` on scalar ``args``, under NumPy's error model.
    Every binary operator goes through it, not only those NumPy's model
    changes (division, ``%``, ``**``): Numba compiles some of them as subroutines
    (complex ``*``) that it keeps per error model but not per fastmath
    flag, so the first kernel to compile one decides its flags for the
    process; computed under the array expression's own model, a fused
    element shares the subroutine that njit's array expression calls."""
    if len(args) == 2:
        return emit.call(codegen.with_numpy_errors, emit.global_(fn.__name__, fn), *args)
    return emit.assign(ir.Expr.unary(fn, args[0], emit.loc), hint="element")


def element(emit, expression, index_for):
    """The expression's value at the loop's index (``index_for(ndim)``: the
    index of an operand of ``ndim`` dimensions), computed from scalars as
    Numba computes an array-expression element (NumPy's error model), each
    node once."""
    values = {}

    def cast(value, dtype):
        return value if dtype is None else emit.call(as_dtype(dtype).type, value, name=str(dtype))

    def value_of(key):
        if key not in values:
            node = expression.graph[key]
            if node[0] == "scalar":
                values[key] = node[1]
            elif node[0] in ("array", "lead"):
                array, offsets = expression.shifted.get(node[1], (node[1], ()))
                index = index_for(node[2], shift=offsets) if node[0] == "array" else index_for(2, lead=True)
                values[key] = emit.assign(ir.Expr.getitem(ir.Var(emit.scope, array, emit.loc), index, emit.loc),
                                          hint="element")
            elif node[0] == "alias":
                values[key] = cast(value_of(node[1]), node[2])
            else:
                kind, expr, children, dtype = node
                args = [value_of(k) for k in children]
                if kind == "where":
                    result = emit.call(codegen.where_element, *args)
                elif expr.op == "call":
                    result = emit.call(codegen.with_numpy_errors, expr.func, *args)
                else:
                    result = apply(emit, expr.fn, args)
                values[key] = cast(result, dtype)
        return values[key]

    return value_of((expression.value.name, ()))
