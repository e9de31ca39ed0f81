"""Place one store fence after each streamed loop nest.

Non-temporal stores are weakly ordered, so a later load (on this or another
thread, once the kernel returns) could see stale data without a fence. As
in Halide, the fence goes right after the outermost loop of every nest that
may execute streamed stores: that point post-dominates all of them and
precedes any later load in the kernel. A ``return`` or ``raise`` inside the
nest leaves it early, so each gets a fence of its own.
"""

import ast

from .align_peel import helper_call
from .parallel_blocks import is_prange


def _fence():
    return ast.Expr(value=helper_call("store_fence"))


def _exits_within(node):
    """``return``/``raise`` statements inside ``node``, not in nested functions."""
    found = []
    stack = list(ast.iter_child_nodes(node))
    while stack:
        child = stack.pop()
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(child, (ast.Return, ast.Raise)):
            found.append(child)
        stack.extend(ast.iter_child_nodes(child))
    return found


def place_fences(scan, nest_roots, parallel=False):
    """Insert fences for the given outermost loops.
    With ``parallel``, a `prange` nest's iterations run on worker threads:
    each iteration ends with a fence, so every worker fences its own stores
    before the join, whatever the thread pool does."""
    for root in dict.fromkeys(nest_roots):
        for exit_stmt in _exits_within(root.node):
            block = scan.block_of(exit_stmt)
            block.insert(block.index(exit_stmt), ast.copy_location(_fence(), exit_stmt))
        if parallel and is_prange(root):
            root.node.body.append(ast.copy_location(_fence(), root.node.body[-1]))
        else:
            block = scan.block_of(root.node)
            block.insert(block.index(root.node) + 1, ast.copy_location(_fence(), root.node))
