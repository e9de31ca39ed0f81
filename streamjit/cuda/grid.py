"""``prange`` nest -> grid-stride loops.

The outermost ``prange`` loop of the kernel, or a perfect nest of up to
three (each loop's body is the next loop alone), becomes the grid: the
innermost ``prange`` is the grid's x dimension (consecutive threads take
consecutive iterations, so a row-major array is read and written
coalesced), the next y, then z. Each loop becomes a grid-stride loop,

    for i in prange(lo, hi):      ->   for i in range(lo + t0, hi, n0):

with ``t0, t1, ... = cuda.grid(d)`` and ``n0, ... = cuda.gridsize(d)``, so
any launch configuration covers every iteration exactly once. Loops inside
the nest run per thread, as written (a ``prange`` there as a ``range``).
What the grid cannot express is rejected with a `StreamError`: a second
``prange`` nest or one inside another loop (each would need a grid-wide
barrier before it), a store to an array outside the nest (every thread
would run it), and a returned value (a kernel returns nothing).
"""

import ast
import builtins

import numba

from ..errors import StreamError
from .source import LoopShape, name, statement

MAX_DIMS = 3


def _resolve(node, namespace):
    """The object a name or attribute chain refers to, or None."""
    if isinstance(node, ast.Name):
        return namespace.get(node.id, getattr(builtins, node.id, None))
    if isinstance(node, ast.Attribute):
        return getattr(_resolve(node.value, namespace), node.attr, None)
    return None


def _is_prange(node, namespace):
    return (isinstance(node, ast.For) and isinstance(node.iter, ast.Call) and not node.iter.keywords
            and 1 <= len(node.iter.args) <= 3 and isinstance(node.target, ast.Name)
            and _resolve(node.iter.func, namespace) is numba.prange)


def _fail(kernel, node, reason):
    raise StreamError(f"{kernel.func.__code__.co_filename}:{node.lineno}: target='cuda' cannot run "
                      f"{kernel.func.__qualname__} on the grid: {reason}")


def _check(kernel, nest_stmt, namespace):
    fn = kernel.tree
    for node in ast.walk(fn):
        if isinstance(node, ast.Return) and node.value is not None \
                and not (isinstance(node.value, ast.Constant) and node.value.value is None):
            _fail(kernel, node, "a GPU kernel returns nothing; store the result into an array parameter")
        if _is_prange(node, namespace) and node is not nest_stmt and not any(node is n for n in ast.walk(nest_stmt)):
            _fail(kernel, node, "a second prange nest, or one inside another loop, needs a grid-wide barrier "
                  "before it; launch one kernel per nest")
    for stmt in fn.body:
        if stmt is nest_stmt:
            continue
        for node in ast.walk(stmt):
            if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
                _fail(kernel, node, "a store outside the prange nest would run once per GPU thread; move it "
                      "into the nest or to the host")


def run_pass(kernel):
    """Rewrite the kernel's prange nest into grid-stride loops; record each
    as a `LoopShape` in ``kernel.grid_loops``, and the grid's dimensions."""
    fn = kernel.tree
    namespace = kernel.namespace()
    top = next((stmt for stmt in fn.body if _is_prange(stmt, namespace)), None)
    if top is None:
        nested = next((n for n in ast.walk(fn) if _is_prange(n, namespace)), None)
        _fail(kernel, nested or fn, "the prange loop must be a statement of the function body, not inside another "
              "loop or branch" if nested else "it has no prange loop to spread over the grid")
    _check(kernel, top, namespace)
    nest = [top]
    while len(nest) < MAX_DIMS and len(nest[-1].body) == 1 and _is_prange(nest[-1].body[0], namespace):
        nest.append(nest[-1].body[0])
    dims = kernel.grid_dims = len(nest)
    for node in ast.walk(top):  # a prange below the grid's nest runs per thread
        if _is_prange(node, namespace) and not any(node is loop for loop in nest):
            node.iter.func = name("range")
    threads, counts = [kernel.fresh("t") for _ in nest], [kernel.fresh("n") for _ in nest]
    for dim, loop in enumerate(reversed(nest)):  # the innermost prange is x
        args = loop.iter.args
        start, stop = (args[0], args[1]) if len(args) > 1 else (ast.Constant(0), args[0])
        thread, count = name(threads[dim]), name(counts[dim])
        if len(args) == 3:  # a step: thread t starts t steps in
            thread = ast.BinOp(left=thread, op=ast.Mult(), right=args[2])
            count = ast.BinOp(left=count, op=ast.Mult(), right=args[2])
        shape = LoopShape(loop.target.id, start, stop, thread, count)
        loop.iter = ast.Call(func=name("range"), keywords=[], args=[
            ast.BinOp(left=start, op=ast.Add(), right=thread), stop, count])
        if len(args) < 3:  # (vector.py and async_loads.py take step-1 loops only)
            kernel.grid_loops[id(loop)] = shape
    cuda = kernel.bind("cuda", kernel.cuda)
    at = fn.body.index(top)
    fn.body[at:at] = [statement(f"{', '.join(threads)} = {cuda}.grid({dims})"),
                      statement(f"{', '.join(counts)} = {cuda}.gridsize({dims})")]
