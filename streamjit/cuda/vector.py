"""Innermost loops whose streamed stores are contiguous -> 16-byte vector
stores (``st.global.cs.v4.b32`` / ``.v2.b64``) and loads, peeled to alignment.

A loop qualifies when each thread's elements are contiguous in every
array it streams: the loop has step 1 (a grid-stride loop over a step-1
``prange``, or a per-thread ``range``), its body runs straight through,
and every store to a streamed array is an unconditional statement of the
body, ``a[..., v] = expr``, whose last index is the loop variable ``v``,
whose other indices the body does not change, into a C-contiguous array of
32- or 64-bit numbers that the body does not read (the stores are
deferred to the end of a group of iterations). The arrays must share one
element size. Then each thread runs groups of ``W = 16 / itemsize``
consecutive iterations:

    a0 = address(a, (..., lo))                     # where the loop starts
    h = hi                                         # unproven: every iteration scalar
    if lo >= 0 and a0 % itemsize == 0 and (address(b, ...) - a0) % 16 == 0 ...:
        h = min(hi, lo + (-a0 % 16) // itemsize)   # the first 16-byte aligned iteration
    for v in range(lo + t, h, n): body             # head, scalar stores
    for j in range(t, (hi - h) // W, n):           # aligned groups
        v = h + W*j;     body, stores -> x0 = expr
        ...
        v = h + W*j+W-1; body, stores -> xW-1 = expr
        store_vector_a(a, (..., h + W*j), (x0, ..., xW-1))
    for v in range(h + W*nv + t, hi, n): body      # tail, scalar stores

The streamed loads every iteration makes from the stores' rows
(``b[..., v]``, the same other indices, in statements that always run)
become one 16-byte vector load per group (``ld.global.cs.v4``), in a copy
of the group loop taken when those sources share the stores' alignment
(``(address(b, ...) - a0) % 16 == 0``); otherwise the groups load scalars.

The run-time tests are the alignment proof: a vector store or load is
only reached at an address shown to be a multiple of 16 (numba-cuda's
device allocations are; views may not be, and then every access stays
scalar). The CPU path peels the same way (`passes/align_peel.py`).
"""

import ast
import copy

from .intrinsics import VECTOR_BYTES
from .source import (assigned_names, call, element, index_node, innermost_loops, loop_over, loop_shape, name,
                     replace, statement, store_to, straight_line, streamed_loads, substitute, used_names)


def _vector_stores(kernel, loop, shape):
    """{statement index: (array, prefix indices)} of the body's streamed
    stores when the loop qualifies, else None."""
    body = loop.body
    changed = assigned_names(body)
    if not straight_line(body) or shape.var in changed:
        return None
    found = {}
    for at, stmt in enumerate(body):
        for node in ast.walk(stmt):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
                if isinstance(node, ast.AugAssign) else []
            hits = [hit for hit in (element(t, kernel) for t in targets) if hit and hit[0] in kernel.stores]
            if not hits:
                continue
            array, indices = hits[0]
            last = indices[-1]
            if not (node is stmt and isinstance(node, ast.Assign) and len(targets) == 1
                    and isinstance(last, ast.Name) and last.id == shape.var and kernel.hinted(array, vector=True)
                    and kernel.types[array].layout == "C"
                    and not any(used_names(i) & (changed | {shape.var}) for i in indices[:-1])):
                return None
            found[at] = (array, indices[:-1])
    arrays = {array for array, _ in found.values()}
    if not found or len({kernel.types[a].dtype.bitwidth for a in arrays}) != 1 \
            or any(_reads(kernel, stmt, arrays, stmt.targets[0] if at in found else None)
                   for at, stmt in enumerate(body)):
        return None
    return found


def _reads(kernel, stmt, arrays, own_target):
    """Whether the statement reads one of ``arrays``, under any of its names
    (its own store target aside)."""
    for node in ast.walk(stmt):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) \
                and kernel.aliases.get(node.id, node.id) in arrays and not _inside(own_target, node):
            return True
    return False


def _inside(outer, node):
    return outer is not None and any(n is node for n in ast.walk(outer))


def _vector_loads(kernel, loop, shape, stores, bits):
    """{(array, prefix): (prefix, [load nodes])}: the streamed loads
    ``b[..., v]`` every iteration makes from a C-contiguous array of
    ``bits``-bit numbers, with the other indices of a streamed store (the
    same row, where alignments are likeliest to agree: one load that does
    not sends every group to scalar loads, and a stencil's neighbouring
    rows often do not)."""
    rows = {tuple(ast.dump(i) for i in prefix) for _, prefix in stores.values()}
    found = {}
    for node, array, prefix, last in streamed_loads(kernel, loop, shape):
        key = tuple(ast.dump(i) for i in prefix)
        if isinstance(last, ast.Name) and last.id == shape.var and kernel.types[array].layout == "C" \
                and kernel.types[array].dtype.bitwidth == bits and key in rows:
            found.setdefault((array, key), (prefix, []))[1].append(node)
    return found


def _group(kernel, loop, shape, stores, loads, width, names):
    """The loop over aligned groups: each runs ``width`` iterations, the
    streamed stores of each gathered into one vector store; with ``loads``
    ({(array, prefix): (prefix, nodes)}) their loads one vector load each.
    ``names``: the first aligned iteration, a group's first, the group and
    the number of groups."""
    head, base, group, groups = names
    body = [statement(f"{base} = {head} + {width} * {group}")]
    vectors = {}
    for (array, _), (prefix, nodes) in loads.items():
        vectors[array, id(nodes[0])] = kernel.fresh("v")
        body.append(ast.Assign(targets=[store_to(vectors[array, id(nodes[0])])], value=call(
            kernel.intrinsic("load_vector", array, width, kernel.load_cache), name(array),
            index_node([*copy.deepcopy(prefix), name(base)]))))
    lanes = {at: [] for at in stores}
    for lane in range(width):
        new = {id(node): ast.Subscript(value=name(vectors[array, id(nodes[0])]), slice=ast.Constant(lane),
                                       ctx=ast.Load())
               for (array, _), (prefix, nodes) in loads.items() for node in nodes}
        body.append(statement(f"{shape.var} = {base} + {lane}"))
        for at, stmt in enumerate(loop.body):
            if at in stores:
                lanes[at].append(kernel.fresh("x"))
                body.append(ast.Assign(targets=[store_to(lanes[at][-1])], value=substitute(stmt.value, new)))
            else:
                body.append(substitute(stmt, new))
    for at, (array, prefix) in stores.items():
        body.append(ast.Expr(call(kernel.intrinsic("store_vector", array, width), name(array),
                                  index_node([*copy.deepcopy(prefix), name(base)]),
                                  ast.Tuple(elts=list(map(name, lanes[at])), ctx=ast.Load()))))
    return ast.For(target=store_to(group), iter=call("range", copy.deepcopy(shape.thread), name(groups),
                                                     copy.deepcopy(shape.stride)), body=body, orelse=[])


def _rewrite(kernel, loop, shape, stores):
    bits = kernel.types[next(iter(stores.values()))[0]].dtype.bitwidth
    width, itemsize = VECTOR_BYTES * 8 // bits, bits // 8
    lo, hi, head, base, group, groups = (kernel.fresh(s) for s in ("lo", "hi", "h", "b", "j", "nv"))
    out = [ast.Assign(targets=[store_to(lo)], value=shape.start), ast.Assign(targets=[store_to(hi)], value=shape.stop),
           ast.Assign(targets=[store_to(head)], value=name(hi))]
    address = kernel.intrinsic("address")

    def start_of(array, prefix):  # where the array's row starts
        var = kernel.fresh("a")
        out.append(ast.Assign(targets=[store_to(var)],
                              value=call(address, name(array), index_node([*copy.deepcopy(prefix), name(lo)]))))
        return var
    starts = [start_of(array, prefix) for array, prefix in stores.values()]
    loads = _vector_loads(kernel, loop, shape, stores, bits)
    load_starts = [start_of(array, prefix) for (array, _), (prefix, _) in loads.items()]
    anchor = starts[0]  # every streamed store must share its alignment
    # (a negative index wraps around per element, so a group starting at one
    # would not be contiguous: such a loop stays scalar)
    tests = [f"{lo} >= 0", f"{anchor} % {itemsize} == 0"] + [f"({v} - {anchor}) % {VECTOR_BYTES} == 0"
                                                           for v in starts[1:]]
    out += [statement(f"if {' and '.join(tests)}:\n"
                      f"    {head} = min({hi}, {lo} + (({VECTOR_BYTES} - {anchor} % {VECTOR_BYTES}) % "
                      f"{VECTOR_BYTES}) // {itemsize})"),
            statement(f"{groups} = max(0, ({hi} - {head}) // {width})"),
            loop_over(shape, copy.deepcopy(loop.body), name(lo), name(head))]
    names = (head, base, group, groups)
    scalar_loads = _group(kernel, loop, shape, stores, {}, width, names)
    if loads:  # the loads' vectors only where they share the stores' alignment
        same = " and ".join(f"({v} - {anchor}) % {VECTOR_BYTES} == 0" for v in load_starts)
        choice = statement(f"if {same}:\n    pass\nelse:\n    pass")
        choice.body = [_group(kernel, loop, shape, stores, loads, width, names)]
        choice.orelse = [scalar_loads]
        out.append(choice)
    else:
        out.append(scalar_loads)
    tail_start = ast.BinOp(left=name(head), op=ast.Add(),
                           right=ast.BinOp(left=ast.Constant(width), op=ast.Mult(), right=name(groups)))
    out.append(loop_over(shape, copy.deepcopy(loop.body), tail_start, name(hi)))
    return out


def run_pass(kernel):
    """Vectorize the qualifying innermost loops of ``kernel.tree``."""
    for loop in innermost_loops(kernel.tree):
        shape = loop_shape(kernel, loop) if id(loop) not in kernel.pipelined and not loop.orelse else None
        stores = _vector_stores(kernel, loop, shape) if shape else None
        if stores is None:
            continue
        replace(kernel.tree, loop, _rewrite(kernel, loop, shape, stores))
        kernel.peeled_loops += 1
