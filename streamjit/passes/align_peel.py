"""Split streamed loops so their stores can be aligned vector NT stores.

A vector non-temporal store must be aligned to its width, but a kernel's
destination may be any view (``out[1:]``) and its loop may start anywhere.
For each innermost ``range`` loop with streamed stores whose last index is
the loop variable plus an invariant offset, this pass rewrites

    for j in range(lo, hi): BODY

into (names shortened)

    sv = aligned_start(out, idx(lo), lo, hi,   # hi if no aligned loop
                       in_bounds(...) & ...)   # every rewritten access, at j=lo and j=hi-1
    for j in range(lo, sv): BODY           # head: plain code, Python semantics
    if hi > sv:
        p = aligned_pointer(out, idx(sv))  # alignment proven above, handed to LLVM
        for j in range(sv, hi): BODY'      # aligned loop

``BODY'`` stores to the streamed arrays with ``stream_store`` (addressed
as ``p[j - sv]``, so every vector store derives from the aligned pointer).
When streamed loads (``stream_loads``) read their own unit-stride stream, a
second aligned loop, taken when those sources are aligned at ``sv`` too,
reads them through aligned pointers as well (non-temporal vector loads). It
reads
affine elements with ``direct_load``: both skip negative-index wraparound,
which the bounds check made exact, so LLVM sees consecutive addresses and
vectorizes. LLVM's vectorizer ends the aligned loop with its own remainder
loop, so no separate tail copy is needed. When the check fails (an index out
of range, a non-contiguous or unaligned array, a short loop), the head loop
runs the whole range exactly as Numba would.

Several streamed destinations in one loop are aligned together only when
they share their offset within a cache line (checked at run time).
"""

import ast
import copy
import functools
from dataclasses import dataclass, replace

from .affine import AffineAnalyzer, to_ast
from .source import HELPERS_NAME


@dataclass(eq=False)
class PeelPlan:
    loop: object
    aligned_stores: list  # [(Access, dims)]
    loads: list  # [(Access, dims)]

    @property
    def nest_root(self):
        return self.aligned_stores[0][0].loops[0]

    @property
    def depth(self):
        return len(self.aligned_stores[0][0].loops)


def helper_call(name, *args):
    func = ast.Attribute(value=ast.Name(id=HELPERS_NAME, ctx=ast.Load()), attr=name, ctx=ast.Load())
    return ast.Call(func=func, args=list(args), keywords=[])


def _name(id_):
    return ast.Name(id=id_, ctx=ast.Load())


def _breaks_directly(statements):
    for stmt in statements:
        if isinstance(stmt, ast.Break):
            return True
        if isinstance(stmt, (ast.For, ast.While, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list) and _breaks_directly(inner):
                return True
    return False


def _why_not_peelable(scan, loop):
    if not loop.unit_step:
        return "its loop step is not 1"
    if loop.node.orelse:
        return "its loop has an 'else' clause"
    if _breaks_directly(loop.node.body):
        return "its loop contains 'break'"
    if scan.assignments_within(loop.var, loop.node) != [loop.node]:
        return f"its loop variable '{loop.var}' is reassigned"
    return None


def _is_simple_store(access):
    stmt = access.stmt
    if isinstance(stmt, ast.Assign):
        return len(stmt.targets) == 1 and stmt.targets[0] is access.node
    return isinstance(stmt, ast.AugAssign) and stmt.target is access.node


def _affine_dims(analyzer, access):
    if any(isinstance(d, ast.Slice) for d in access.dims):
        return None
    dims = [analyzer.of(d, access.loops) for d in access.dims]
    return dims if all(d is not None for d in dims) else None


def plan_peels(scan, streamed, notes):
    """Choose the loops to split; record why other streamed stores stay plain."""
    plans = []
    for loop in scan.loops:
        direct = [s for s in scan.stores() if s.array in streamed and s.loops and s.loops[-1] is loop]
        if not direct:
            continue
        reason = _why_not_peelable(scan, loop)
        if reason:
            for s in direct:
                notes.setdefault(s.array, []).append(f"line {s.lineno}: not aligned because {reason}; plain stores")
            continue
        analyzer = AffineAnalyzer(scan, direct[0].loops[0])
        aligned = []
        for s in direct:
            dims = _affine_dims(analyzer, s) if _is_simple_store(s) else None
            if dims and dims[-1].coeffs == {loop: 1}:
                aligned.append((s, dims))
            else:
                notes.setdefault(s.array, []).append(
                    f"line {s.lineno}: the last index is not '{loop.var}' plus a loop-invariant offset; plain stores")
        if not aligned:
            continue
        loads = []
        for a in scan.loads():
            if a.loops and a.loops[-1] is loop and isinstance(a.node.ctx, ast.Load) and a.array not in scan.assignments:
                dims = _affine_dims(analyzer, a)
                if dims:
                    loads.append((a, dims))
        plans.append(PeelPlan(loop, aligned, loads))
    return plans


class _RewriteAccesses(ast.NodeTransformer):
    """In a copied loop body, turn planned loads/stores into helper calls."""

    def __init__(self, loads, stores, offset, stream_loads, aligned_loads=None):
        self.loads = loads  # id(copied Subscript) -> array name
        self.stores = stores  # id(copied statement) -> (array name, copied Subscript, aligned pointer name)
        self.offset = offset  # elements from the aligned pointer, as an expression
        self.stream_loads = stream_loads
        self.aligned_loads = aligned_loads or {}  # id(copied Subscript) -> aligned pointer name

    def visit_Subscript(self, node):
        self.generic_visit(node)
        if id(node) not in self.loads:
            return node
        distance = self.stream_loads.distance(node)
        if id(node) in self.aligned_loads:
            return helper_call("load_at", _name(self.aligned_loads[id(node)]), copy.deepcopy(self.offset),
                               ast.Constant(value=distance))
        if distance is None:
            return helper_call("direct_load", _name(self.loads[id(node)]), node.slice)
        return helper_call("direct_stream_load", _name(self.loads[id(node)]), node.slice, ast.Constant(value=distance))

    def _store(self, node):
        self.generic_visit(node)
        if id(node) not in self.stores:
            return node
        array, target, pointer = self.stores[id(node)]
        value = node.value
        if isinstance(node, ast.AugAssign):
            old = helper_call("direct_load", _name(array), copy.deepcopy(target.slice))
            value = ast.BinOp(left=old, op=node.op, right=value)
        return ast.Expr(value=helper_call("stream_store", _name(array), target.slice, value,
                                          _name(pointer), copy.deepcopy(self.offset)))

    visit_Assign = visit_AugAssign = _store


def _index_at(dims, loop, value):
    elts = [to_ast(d, {loop: value}) for d in dims]
    return elts[0] if len(elts) == 1 else ast.Tuple(elts=elts, ctx=ast.Load())


def _alignable_stream_loads(plan, loop, stream_loads):
    """Streamed loads that could be read through an aligned pointer: unit
    stride in the loop and the only access of their array in the loop (two
    offsets of one array cannot both be aligned)."""
    counts = {}
    for access, _ in plan.loads:
        counts[access.array] = counts.get(access.array, 0) + 1
    return [(a, d) for a, d in plan.loads
            if stream_loads.distance(a.node) is not None and d[-1].coeffs == {loop: 1} and counts[a.array] == 1]


def _gated(gate, test):
    return test if gate is None else ast.BoolOp(op=ast.And(), values=[gate, test])


def _bounds_checks(accesses, loop, first, last):
    """As few ``in_bounds`` calls as the accesses allow.

    Accesses of one array whose indices differ only by constants (a
    stencil's ``g[r, c-1]``, ``g[r, c]``, ``g[r+1, c]``) share one check: per
    dimension, the index is monotone in the loop variable, so its extremes
    over the loop and the group are the constant extremes taken at the first
    and last iteration (swapped where the coefficient is negative). Arrays
    whose extremes come out identical (``a[i]``, ``b[i]``, ``c[i]``) share one
    call, on a tuple of the arrays.
    """
    groups = {}
    for access, dims in accesses:
        key = (access.array, tuple(d.key() for d in dims))
        groups.setdefault(key, []).append(dims)
    extremes = {}  # (low, high) as text -> (arrays, low, high)
    for (array, _), members in groups.items():
        low, high = [], []
        for k, dim in enumerate(members[0]):
            consts = [m[k].const for m in members]
            ascending = dim.coeffs.get(loop, 0) >= 0
            low.append(replace(dim, const=min(consts) if ascending else max(consts)))
            high.append(replace(dim, const=max(consts) if ascending else min(consts)))
        low_at, high_at = _index_at(low, loop, first), _index_at(high, loop, last)
        entry = extremes.setdefault((ast.dump(low_at), ast.dump(high_at)), ([], low_at, high_at))
        entry[0].append(array)
    return [helper_call("in_bounds", _name(arrays[0]) if len(arrays) == 1 else
                        ast.Tuple(elts=[_name(a) for a in arrays], ctx=ast.Load()), low_at, high_at)
            for arrays, low_at, high_at in extremes.values()]


def apply_peel(scan, plan, stream_loads, gate=None, scalar_head=False):
    """Replace the planned loop in the tree by its head and aligned loops;
    ``stream_loads`` (`stream_loads.StreamLoads`) learns the copies made;
    ``gate`` (an expression) must also hold for the aligned loop to run, and
    is tested first, so the other checks cost nothing when it fails;
    ``scalar_head`` keeps the head loop out of LLVM's vectorizer (when it
    only ever runs the peel or a rare fallback)."""
    loop, node = plan.loop, plan.loop.node
    n = loop.serial
    lo, hi, sv = (f"__streamjit_{part}{n}" for part in ("lo", "hi", "start"))
    pointers = [f"__streamjit_ptr{n}_{k}" for k in range(len(plan.aligned_stores))]
    # a literal start needs no variable (each statement costs compile time)
    start = loop.start if loop.start is not None else ast.Constant(value=0)
    constant_start = isinstance(start, ast.Constant)
    first = copy.deepcopy(start) if constant_start else _name(lo)
    last = ast.BinOp(left=_name(hi), op=ast.Sub(), right=ast.Constant(value=1))
    anchor, anchor_dims = plan.aligned_stores[0]

    checks = _bounds_checks(plan.aligned_stores + plan.loads, loop, first, last)
    checks += [helper_call("same_alignment", _name(a.array), _index_at(d, loop, first),
                           _name(anchor.array), _index_at(anchor_dims, loop, first))
               for a, d in plan.aligned_stores[1:]]

    def assign(name, value):
        return ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=value)

    offset = ast.BinOp(left=_name(loop.var), op=ast.Sub(), right=_name(sv))

    def streamed_body(source_pointers=()):
        """A copy of the body for the aligned loop; ``source_pointers``:
        (load, pointer name) pairs read through aligned pointers."""
        memo = {}
        body = copy.deepcopy(node.body, memo)
        stream_loads.follow_copies(memo)
        loads = {id(memo[id(a.node)]): a.array for a, _ in plan.loads}
        stores = {id(memo[id(a.stmt)]): (a.array, memo[id(a.node)], p)
                  for (a, _), p in zip(plan.aligned_stores, pointers)}
        aligned = {id(memo[id(a.node)]): p for (a, _), p in source_pointers}
        return [_RewriteAccesses(loads, stores, offset, stream_loads, aligned).visit(s) for s in body]

    def loop_over(begin, stop, body):
        call = ast.Call(func=copy.deepcopy(node.iter.func), args=[copy.deepcopy(begin), _name(stop)], keywords=[])
        return ast.For(target=ast.Name(id=loop.var, ctx=ast.Store()), iter=call, body=body, orelse=[])

    aligned_pointers = [assign(p, helper_call("aligned_pointer", _name(a.array), _index_at(d, loop, _name(sv))))
                        for (a, d), p in zip(plan.aligned_stores, pointers)]
    aligned_loop = [loop_over(_name(sv), hi, streamed_body())]
    sources = _alignable_stream_loads(plan, loop, stream_loads)
    if sources:
        # a second aligned loop for when the streamed sources are aligned too,
        # so their vector loads can be non-temporal (`vmovntdqa`, `ldnp`)
        source_pointers = [((a, d), f"__streamjit_src{n}_{k}") for k, (a, d) in enumerate(sources)]
        sources_aligned = functools.reduce(lambda x, y: ast.BinOp(left=x, op=ast.BitAnd(), right=y), [
            helper_call("is_stream_aligned", _name(a.array), _index_at(d, loop, _name(sv))) for a, d in sources])
        aligned_loop = [ast.If(test=sources_aligned, orelse=aligned_loop, body=[
            assign(p, helper_call("aligned_pointer", _name(a.array), _index_at(d, loop, _name(sv))))
            for (a, d), p in source_pointers] + [loop_over(_name(sv), hi, streamed_body(source_pointers))])]
    # `&`, not `and`: no short-circuit branches to lower and optimize, except
    # after the gate
    ok = _gated(gate, functools.reduce(lambda x, y: ast.BinOp(left=x, op=ast.BitAnd(), right=y), checks))
    replacement = ([] if constant_start else [assign(lo, start)]) + [
        assign(hi, loop.stop),
        assign(sv, helper_call("aligned_start", _name(anchor.array), _index_at(anchor_dims, loop, first),
                               copy.deepcopy(first), _name(hi), ok)),
        loop_over(first, sv, ([ast.Expr(value=helper_call("keep_scalar"))] if scalar_head else []) + node.body),
        ast.If(test=ast.Compare(left=_name(hi), ops=[ast.Gt()], comparators=[_name(sv)]),
               body=aligned_pointers + aligned_loop, orelse=[]),
    ]
    scan.replace_statement(node, replacement)
