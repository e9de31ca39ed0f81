"""Find every array subscript of a kernel and the loops around it.

The other passes ask three questions of a kernel's syntax tree: which
subscripts read or write which names, inside which loops (and whether those
are `range`/`prange` loops with a known loop variable), and where each name
is assigned. This module answers them once, in one walk.
"""

import ast
from dataclasses import dataclass, field

RANGE_FUNCTIONS = ("range", "prange")


@dataclass(eq=False)
class Loop:
    """A ``for`` or ``while`` loop; ``var`` is set for ``range``/``prange`` loops."""

    node: ast.AST
    serial: int
    var: str | None = None
    range_args: tuple = ()

    @property
    def is_range(self):
        return self.var is not None

    @property
    def start(self):
        return self.range_args[0] if len(self.range_args) > 1 else None

    @property
    def stop(self):
        return self.range_args[1] if len(self.range_args) > 1 else self.range_args[0]

    @property
    def unit_step(self):
        if len(self.range_args) < 3:
            return True
        step = self.range_args[2]
        return isinstance(step, ast.Constant) and step.value == 1 and not isinstance(step.value, bool)


@dataclass(eq=False)
class Access:
    """One subscript ``array[...]`` that reads or writes a named value."""

    array: str
    node: ast.Subscript
    stmt: ast.stmt
    loops: tuple
    is_store: bool

    @property
    def lineno(self):
        return self.node.lineno

    @property
    def dims(self):
        """The index expressions, one per indexed dimension."""
        index = self.node.slice
        return list(index.elts) if isinstance(index, ast.Tuple) else [index]


@dataclass
class KernelScan:
    tree: ast.FunctionDef
    params: list
    loops: list = field(default_factory=list)
    accesses: list = field(default_factory=list)
    parents: dict = field(default_factory=dict)
    assignments: dict = field(default_factory=dict)  # name -> [assigning statement]

    def stores(self, array=None):
        return [a for a in self.accesses if a.is_store and (array is None or a.array == array)]

    def loads(self, array=None):
        return [a for a in self.accesses if not a.is_store and (array is None or a.array == array)]

    def statement_of(self, node):
        while not isinstance(node, ast.stmt):
            node = self.parents[node]
        return node

    def is_inside(self, node, ancestor):
        while node is not None:
            if node is ancestor:
                return True
            node = self.parents.get(node)
        return False

    def block_of(self, stmt):
        """The statement list that holds ``stmt``."""
        owner = self.parents[stmt]
        for name in ("body", "orelse", "finalbody", "handlers"):
            block = getattr(owner, name, None)
            if isinstance(block, list) and any(s is stmt for s in block):
                return block
        raise ValueError(f"statement at line {stmt.lineno} is not in a block")

    def replace_statement(self, stmt, replacement):
        """Put the generated statements ``replacement`` where ``stmt`` was,
        giving every generated node without a location ``stmt``'s line."""
        for new in replacement:
            for sub in ast.walk(new):
                if isinstance(sub, (ast.stmt, ast.expr)) and not hasattr(sub, "lineno"):
                    ast.copy_location(sub, stmt)
        block = self.block_of(stmt)
        at = block.index(stmt)
        block[at:at + 1] = replacement

    def assignments_within(self, name, root):
        return [s for s in self.assignments.get(name, []) if self.is_inside(s, root)]


def _range_call(node):
    """The arguments of ``range(...)``/``prange(...)`` if ``node`` is such a call."""
    if not isinstance(node, ast.Call) or node.keywords or not 1 <= len(node.args) <= 3:
        return None
    func = node.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
    return tuple(node.args) if name in RANGE_FUNCTIONS else None


def scan_kernel(tree):
    """Walk a kernel's FunctionDef and record its loops, subscripts and assignments."""
    params = [a.arg for a in (*tree.args.posonlyargs, *tree.args.args, *tree.args.kwonlyargs)]
    scan = KernelScan(tree=tree, params=params)
    for parent in ast.walk(tree):
        for child in ast.iter_child_nodes(parent):
            scan.parents[child] = parent

    def visit(node, loops):
        if isinstance(node, (ast.For, ast.While)):
            loop = Loop(node=node, serial=len(scan.loops))
            if isinstance(node, ast.For):
                args = _range_call(node.iter)
                if args is not None and isinstance(node.target, ast.Name):
                    loop.var, loop.range_args = node.target.id, args
                visit(node.iter, loops)  # evaluated once, outside the loop's iterations
            scan.loops.append(loop)
            inner = loops + (loop,)
            for child in ast.iter_child_nodes(node):
                if child is not getattr(node, "iter", None):
                    visit(child, inner)
            return
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            stmt = scan.statement_of(node)
            scan.assignments.setdefault(node.id, []).append(stmt)
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
            stmt = scan.statement_of(node)
            is_store = isinstance(node.ctx, ast.Store)
            scan.accesses.append(Access(node.value.id, node, stmt, loops, is_store))
            if is_store and isinstance(stmt, ast.AugAssign):
                scan.accesses.append(Access(node.value.id, node, stmt, loops, False))
        for child in ast.iter_child_nodes(node):
            visit(child, loops)

    for stmt in tree.body:
        visit(stmt, ())
    return scan
