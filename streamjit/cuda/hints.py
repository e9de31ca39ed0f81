"""Element stores and loads of streamed arrays -> PTX-hinted intrinsics.

Every remaining ``a[i] = v`` / ``a[i, j] = v`` / ``a[i][j] = v`` to an array
that streams its stores becomes ``store_a(a, (i, j), v)``
(numba-cuda's ``stcs``: ``st.global.cs``), ``a[i] += v`` the same with the
plain self-load, and every element read ``b[i, j]`` of an array that streams
its loads becomes ``load_b(b, (i, j))`` (``ldcs``: ``ld.global.cs``, or
``.nc.L1::no_allocate``),
wherever they are in the body, so the hint needs no change to the kernel
body. Runs last: `vector.py` and `async_loads.py` have already taken the
accesses they turn into wider or asynchronous ones. A row or slice access
stays numba-cuda's own (plain), and so does an array of other than 8- to
64-bit numbers, or one accessed only in a helper function or through a
name other than its own or an alias of it (`decision.aliases`): the syntax
tree shows no element access of it, and the report's notes say so.
"""

import ast
import copy

from numba.core import types

from .source import call, element, index_node, used_names


class _Hints(ast.NodeTransformer):
    def __init__(self, kernel):
        self.kernel = kernel

    def _index(self, indices):
        """The index of a hinted access: numba-cuda's ``ldcs`` / ``stcs`` take
        one integer or a tuple of integers of one type, and ``a[i, j]`` may
        mix them (``cuda.threadIdx.x`` is 32-bit, a range's variable 64)."""
        if len(indices) == 1:
            return indices[0]
        intp = self.kernel.bind("intp", types.intp)
        return index_node([call(intp, i) for i in indices])

    def _streamed(self, node, arrays):
        found = element(node, self.kernel)
        return found if found and found[0] in arrays and self.kernel.hinted(found[0]) else None

    def visit_Assign(self, node):
        self.generic_visit(node)
        found = self._streamed(node.targets[0], self.kernel.stores) if len(node.targets) == 1 else None
        if found is None:
            return node
        array, indices = found
        store = self.kernel.intrinsic("store", array)
        return ast.copy_location(ast.Expr(call(store, ast.Name(array, ast.Load()), self._index(indices),
                                               node.value)), node)

    def visit_AugAssign(self, node):
        self.generic_visit(node)
        found = self._streamed(node.target, self.kernel.stores)
        # (the index is evaluated twice: only names and constants in it)
        if found is None or any(isinstance(n, ast.Call) for i in found[1] for n in ast.walk(i)):
            return node
        array, indices = found
        old = ast.Subscript(value=ast.Name(array, ast.Load()), slice=index_node(copy.deepcopy(indices)),
                            ctx=ast.Load())
        value = ast.BinOp(left=old, op=node.op, right=node.value)
        store = self.kernel.intrinsic("store", array)
        return ast.copy_location(ast.Expr(call(store, ast.Name(array, ast.Load()), self._index(indices), value)),
                                 node)

    def visit_Subscript(self, node):
        found = self._streamed(node, self.kernel.loads) if isinstance(node.ctx, ast.Load) else None
        if found is None:
            return self.generic_visit(node)
        array, indices = found
        indices = [self.visit(i) for i in indices]
        load = self.kernel.intrinsic("load", array, self.kernel.load_cache)
        return ast.copy_location(call(load, ast.Name(array, ast.Load()), self._index(indices)), node)


def run_pass(kernel):
    """Rewrite the streamed element accesses of ``kernel.tree`` in place."""
    for array in sorted((kernel.stores | kernel.loads) & used_names(kernel.tree)):
        if array in kernel.types and not kernel.hinted(array):
            kernel.notes.append((array, f"{kernel.types[array].dtype} elements: no PTX cache hint (8- to 64-bit "
                                        "numbers only)"))
    _Hints(kernel).visit(kernel.tree)
    for arrays, hinted, what in ((kernel.stores, kernel.hinted_stores, "stores"),
                                 (kernel.loads, kernel.hinted_loads, "loads")):
        for array in sorted(a for a in arrays - hinted if kernel.hinted(a)):
            kernel.notes.append((array, f"streamed, but none of its {what} is an element access written on its own "
                                        "name (a[i], a[i, j], a[i][j]) in the kernel body: they stay plain"))
