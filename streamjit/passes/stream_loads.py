"""``stream_loads``: which loads are streamed, and which are prefetched.

Every load ``a[...]`` of a streamed array becomes a tagged load
(``stream_load``, or ``direct_stream_load`` inside an aligned loop) so the
LLVM rewrite can give it a non-temporal hint and a software prefetch. The
prefetch needs an address stream that advances: it is issued only for loads
whose index is affine in the innermost enclosing ``range`` loop's variable.
A broadcast (``a[i]`` inside a ``j`` loop), a gather (``a[idx[k]]``) or a
load outside every loop keeps only the hint; the report says why.

``plan_stream_loads`` decides, per subscript node, the prefetch distance
(0 for none); ``rewrite_stream_loads`` replaces the subscripts left in the
tree after the alignment peel, which itself rewrites the copies it makes
(`align_peel.py`, through the shared ``StreamLoads`` map).
"""

import ast

from .affine import AffineAnalyzer
from .align_peel import helper_call


class StreamLoads:
    """Subscript nodes to stream, with their prefetch distance; copies made
    by the peel are added under their own ids (nodes kept alive here)."""

    def __init__(self):
        self._by_id = {}

    def add(self, node, distance):
        self._by_id[id(node)] = (node, distance)

    def distance(self, node):
        entry = self._by_id.get(id(node))
        return None if entry is None or entry[0] is not node else entry[1]

    def follow_copies(self, memo):
        """Register the deep copies (``copy.deepcopy`` memo) of known nodes."""
        for key, (node, distance) in list(self._by_id.items()):
            if key in memo:
                self.add(memo[key], distance)


def plan_stream_loads(scan, arrays, distance, notes):
    """Decide each streamed load's prefetch distance; note the exceptions."""
    plan = StreamLoads()
    for access in scan.loads():
        if access.array not in arrays or not isinstance(access.node.ctx, ast.Load):
            continue
        reason = _why_not_prefetched(scan, access) if distance else None
        if reason:
            notes.setdefault(access.array, []).append(f"line {access.lineno}: {reason}: not prefetched")
        plan.add(access.node, 0 if reason else distance)
    return plan


def _why_not_prefetched(scan, access):
    if not access.loops:
        return "outside every loop"
    innermost = access.loops[-1]
    if not innermost.is_range:
        return "the innermost loop is not a range() loop"
    if any(isinstance(d, ast.Slice) for d in access.dims):
        return "a slice is not a single element"
    analyzer = AffineAnalyzer(scan, access.loops[0])
    dims = [analyzer.of(d, access.loops) for d in access.dims]
    if any(d is None for d in dims):
        return "the index is not an affine function of the loop variables (a gather)"
    if not any(innermost in d.coeffs for d in dims):
        return f"the index does not advance with the innermost loop '{innermost.var}'"
    return None


class _RewriteLoads(ast.NodeTransformer):
    def __init__(self, plan):
        self.plan = plan

    def visit_Subscript(self, node):
        self.generic_visit(node)
        distance = self.plan.distance(node)
        if distance is None:
            return node
        return helper_call("stream_load", node.value, node.slice, ast.Constant(value=distance))


def rewrite_stream_loads(tree, plan):
    """Replace the planned subscripts still in ``tree`` by ``stream_load`` calls."""
    _RewriteLoads(plan).visit(tree)
