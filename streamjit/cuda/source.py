"""The kernel's source as the GPU passes see it, and what they share.

The GPU passes rewrite the Python syntax tree of the user's function (the
CPU passes rewrite Numba IR, but numba-cuda has an IR of its own, so
streamjit's typed-IR rewrites cannot run inside its pipeline; what to
stream is still decided on the CPU front end's typed IR, `legality.py`).
The rewritten function is built with the user's globals and closure
values, under the user's file name and line numbers, so numba-cuda's
errors point at the user's code. `Kernel` carries what every pass needs:
the signature's array types, the arrays to stream, and the names of the
intrinsics the passes call (`intrinsics.py`), bound in `build`.
"""

import ast
import copy
import inspect
import itertools
import textwrap
from dataclasses import dataclass, field

from ..errors import StreamError
from . import intrinsics

PREFIX = "__sj_"


@dataclass
class Kernel:
    """One signature's compile: its syntax tree, types and decisions."""

    func: object  # the user's Python function
    tree: ast.FunctionDef
    types: dict  # parameter -> Numba type
    stores: frozenset  # arrays whose stores stream
    loads: frozenset  # arrays whose loads stream
    simulated: bool
    cuda: object  # the numba.cuda module (the simulator's, when simulated)
    threads_per_block: int = 256  # the launch's block size (rings are sized by it)
    load_cache: str = "cs"  # the cache operator of streamed loads (`intrinsics.LOAD_CACHE`)
    grid_loops: dict = field(default_factory=dict)  # id(For) -> LoopShape of a grid-stride loop (`grid.py`)
    grid_dims: int = 1  # dimensions of the grid the prange nest became
    pipelined: set = field(default_factory=set)  # id(For) of the loops `async_loads.py` made
    peeled_loops: int = 0  # loops `vector.py` split into a head, aligned groups and a tail
    bindings: dict = field(default_factory=dict)  # global name -> intrinsic or value
    notes: list = field(default_factory=list)  # (array, text) for the report
    aliases: dict = field(default_factory=dict)  # local name -> the array parameter it always holds (`decision.py`)
    hinted_stores: set = field(default_factory=set)  # arrays some hinted store writes
    hinted_loads: set = field(default_factory=set)  # arrays some hinted load reads
    _names: object = field(default_factory=itertools.count)

    def fresh(self, stem):
        """A new variable name no user code uses."""
        return f"{PREFIX}{stem}{next(self._names)}"

    def intrinsic(self, kind, *args):
        """The global name of intrinsic ``kind`` (made with ``args``, the first
        an array's name for the accesses), bound in `build`."""
        if kind.startswith("store"):
            self.hinted_stores.add(args[0])
        elif kind in ("load", "load_vector", "copy_async"):
            self.hinted_loads.add(args[0])
        name = PREFIX + "_".join([kind, *map(str, args)])
        if name not in self.bindings:
            self.bindings[name] = intrinsics.factories(self.simulated)[kind](*args)
        return name

    def bind(self, stem, value):
        """A global name for ``value`` in the rewritten function."""
        self.bindings[PREFIX + stem] = value
        return PREFIX + stem

    def namespace(self):
        """The user function's globals and closure values."""
        func = self.func
        found = dict(func.__globals__)
        if func.__closure__:
            found.update(zip(func.__code__.co_freevars, (c.cell_contents for c in func.__closure__)))
        return found

    def hinted(self, array, vector=False):
        """Whether ``array`` is a parameter whose elements take PTX hints (the
        vector and asynchronous forms, with ``vector``)."""
        ty = self.types.get(array)
        return ty is not None and hasattr(ty, "dtype") and intrinsics.hinted_dtype(
            ty.dtype, intrinsics.VECTOR_BITS if vector else intrinsics.HINTED_BITS)


def parse(func):
    """The ``FunctionDef`` of ``func``, at the user's line numbers, without decorators."""
    try:
        lines, first = inspect.getsourcelines(func)
    except (OSError, TypeError) as exc:
        raise StreamError(f"target='cuda' compiles {func.__qualname__} from its source, which is not "
                          f"available ({exc})") from None
    tree = ast.parse(textwrap.dedent("".join(lines)))
    ast.increment_lineno(tree, first - 1)
    fn = tree.body[0]
    if not isinstance(fn, ast.FunctionDef):
        raise StreamError(f"target='cuda' needs a function defined with def, got {func.__qualname__}")
    fn.decorator_list = []
    return fn


def build(kernel):
    """The rewritten function, with the user's globals, closure values and
    the intrinsics the passes named."""
    func = kernel.func
    namespace = kernel.namespace()
    namespace.update(kernel.bindings)
    module = ast.fix_missing_locations(ast.Module(body=[kernel.tree], type_ignores=[]))
    exec(compile(module, inspect.getsourcefile(func) or "<streamjit>", "exec"), namespace)
    built = namespace[kernel.tree.name]
    built.__qualname__ = func.__qualname__
    return built


def name(id_):
    """An `ast.Name` loading ``id_``."""
    return ast.Name(id=id_, ctx=ast.Load())


def store_to(id_):
    """An `ast.Name` storing to ``id_`` (an assignment's target)."""
    return ast.Name(id=id_, ctx=ast.Store())


def call(func_name, *args):
    """An `ast.Call` of the function named ``func_name`` with positional ``args``."""
    return ast.Call(func=name(func_name), args=list(args), keywords=[])


def statement(code):
    """One statement parsed from text (the names in it are the passes' own),
    without positions: `build` gives it those of the statement it is in."""
    stmt = ast.parse(code).body[0]
    for node in ast.walk(stmt):
        for attr in ("lineno", "end_lineno", "col_offset", "end_col_offset"):
            if hasattr(node, attr):
                delattr(node, attr)
    return stmt


def element(node, kernel):
    """(array, [index nodes]) when ``node`` is a subscript of a parameter (or
    of an alias of one, `decision.aliases`) reading or writing one element: ``a[i]``,
    ``a[i, j]``, ``a[i][j]``; else None (a row, a slice, another name)."""
    indices = []
    while isinstance(node, ast.Subscript):
        index = node.slice
        items = index.elts if isinstance(index, ast.Tuple) else [index]
        if any(isinstance(item, (ast.Slice, ast.Starred)) or _is_ellipsis(item) for item in items):
            return None
        indices[:0] = items
        node = node.value
    if not (isinstance(node, ast.Name) and indices):
        return None
    array = kernel.aliases.get(node.id, node.id)
    ty = kernel.types.get(array)
    if ty is None or getattr(ty, "ndim", None) != len(indices):
        return None
    return array, indices


def _is_ellipsis(node):
    return isinstance(node, ast.Constant) and node.value is Ellipsis


def index_node(indices):
    """The subscript of an element access: the one index node, or a tuple of them."""
    return indices[0] if len(indices) == 1 else ast.Tuple(elts=list(indices), ctx=ast.Load())


def assigned_names(nodes):
    """Every name the statements bind (targets, loop variables)."""
    found = set()
    for node in nodes:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, (ast.Store, ast.Del)):
                found.add(sub.id)
    return found


def used_names(node):
    """Every name (loaded, stored or deleted) in the syntax tree ``node``."""
    return {sub.id for sub in ast.walk(node) if isinstance(sub, ast.Name)}


def range_args(loop):
    """(start, stop) nodes of ``for v in range(stop)`` / ``range(start, stop)``
    over a plain name, else None."""
    it = loop.iter
    if not (isinstance(loop.target, ast.Name) and isinstance(it, ast.Call) and isinstance(it.func, ast.Name)
            and it.func.id == "range" and not it.keywords and 1 <= len(it.args) <= 2):
        return None
    return (it.args[0], it.args[1]) if len(it.args) == 2 else (ast.Constant(0), it.args[0])


def innermost_loops(tree):
    """``for`` loops whose bodies hold no other loop."""
    return [node for node in ast.walk(tree) if isinstance(node, ast.For)
            and not any(isinstance(sub, (ast.For, ast.While)) for stmt in node.body for sub in ast.walk(stmt))]


def straight_line(body):
    """Whether a loop body leaves only at its end (no break, continue, return)."""
    return not any(isinstance(sub, (ast.Break, ast.Continue, ast.Return, ast.Yield, ast.YieldFrom))
                   for stmt in body for sub in ast.walk(stmt))


@dataclass
class LoopShape:
    """Thread ``thread`` of a loop runs ``range(start + thread, stop, stride)``."""

    var: str
    start: ast.expr
    stop: ast.expr
    thread: ast.expr
    stride: ast.expr


def loop_shape(kernel, loop):
    """The shape of a grid-stride loop (`grid.py`) or of a per-thread
    ``range`` loop with step 1; None for other loops."""
    if id(loop) in kernel.grid_loops:
        return kernel.grid_loops[id(loop)]
    bounds = range_args(loop)
    return LoopShape(loop.target.id, *bounds, ast.Constant(0), ast.Constant(1)) if bounds else None


def loop_over(shape, body, start=None, stop=None):
    """``for var in range(start + thread, stop, stride): body`` (the shape's
    bounds unless given)."""
    begin = ast.BinOp(left=start or shape.start, op=ast.Add(), right=copy.deepcopy(shape.thread))
    return ast.For(target=store_to(shape.var), iter=call("range", begin, stop or shape.stop,
                                                         copy.deepcopy(shape.stride)), body=body, orelse=[])


def replace(tree, old, statements):
    """Put ``statements`` where statement ``old`` is in ``tree``."""
    for node in ast.walk(tree):
        for field_name in ("body", "orelse"):
            body = getattr(node, field_name, None)
            if isinstance(body, list) and any(s is old for s in body):
                at = next(k for k, s in enumerate(body) if s is old)
                body[at:at + 1] = statements
                return
    raise AssertionError("statement not in the tree")


def _unconditional(stmt):
    """Whether every part of the statement runs whenever it does."""
    return isinstance(stmt, (ast.Assign, ast.AugAssign, ast.Expr)) and not any(
        isinstance(n, (ast.IfExp, ast.BoolOp, ast.Lambda, ast.comprehension)) for n in ast.walk(stmt))


def streamed_loads(kernel, loop, shape):
    """[(load node, array, prefix indices, last index)]: the element loads of
    streamed arrays that every iteration of the loop makes (in a statement
    of its straight-line body that always runs all of itself), whose
    indices but the last the body does not change. Every iteration of the
    loop reads those elements, so reading them earlier, or several
    iterations' at once, reads nothing the loop would not."""
    changed = assigned_names(loop.body)
    if not straight_line(loop.body) or shape.var in changed:
        return []
    found = []
    for stmt in filter(_unconditional, loop.body):
        for node in ast.walk(stmt):
            hit = element(node, kernel) if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) \
                else None
            if hit and hit[0] in kernel.loads and kernel.hinted(hit[0], vector=True) \
                    and not any(used_names(i) & (changed | {shape.var}) for i in hit[1][:-1]):
                found.append((node, hit[0], hit[1][:-1], hit[1][-1]))
    return found


def substitute(node, new):
    """A deep copy of ``node`` (a node or a list of them) in which each node
    whose id is in ``new`` is a copy of its replacement."""
    if id(node) in new:
        return ast.copy_location(copy.deepcopy(new[id(node)]), node)
    if isinstance(node, list):
        return [substitute(item, new) for item in node]
    if not isinstance(node, ast.AST):
        return node
    clone = type(node)(**{f: substitute(v, new) for f, v in ast.iter_fields(node)})
    return ast.copy_location(clone, node)

