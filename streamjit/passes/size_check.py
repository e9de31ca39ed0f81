"""Size-aware streaming inside the kernel: one test at entry.

With a ``threshold``, streaming must only happen when the kernel's streamed
arrays are larger than the threshold (in bytes); smaller data stays in cache
and is faster with plain stores. Rather than compiling a second, plain
variant and choosing in Python on every call, the kernel itself computes, at
entry, whether its streamed arrays exceed the threshold, and every aligned
loop tests that flag before its other run-time checks. Below the threshold
the plain head loop runs the whole range, exactly the code `numba.njit`
would run; no dispatch cost is added, and the kernel stays callable from
other jitted code.
"""

import ast

from .align_peel import helper_call

FLAG = "__streamjit_large"


def insert_size_check(tree, arrays, threshold):
    """Insert the entry test into ``tree``; return the gate the peels test
    (None without a threshold)."""
    if threshold is None:
        return None
    operands = ast.Tuple(elts=[ast.Name(id=a, ctx=ast.Load()) for a in arrays], ctx=ast.Load())
    test = ast.Assign(targets=[ast.Name(id=FLAG, ctx=ast.Store())],
                      value=helper_call("exceeds", ast.Constant(value=threshold), operands))
    tree.body.insert(0, ast.copy_location(test, tree.body[0]))
    return ast.Name(id=FLAG, ctx=ast.Load())
