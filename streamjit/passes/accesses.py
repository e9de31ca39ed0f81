"""Find every load and store of the kernel's arrays (its array parameters
and the arrays it allocates with NumPy, under the names the user gave
them), the loops around each, and which arrays the options stream.

Runs on typed Numba IR, so it sees the program Numba compiles, not the
text the user wrote: stores made in inlined helpers, through local aliases
(``o = out``) and chained subscripts (``arr[y][x] = v``, the index (y, x)
of ``arr``), indices Numba folded to constants, and loops whatever their
iterator is called (``prange`` under any name). Loops come from the CFG;
a loop over a ``range`` object (Numba's ``RangeType``) has an induction
variable, every other loop (``while``, iteration over other objects) has
none. Whether an access reads or writes one element, a row or a slice is
read off the types, not guessed from the syntax.

The other passes ask: which accesses touch which array, inside which loops
(outermost first), with which index; and where is each variable defined.
"""

import re
from dataclasses import dataclass, field

import numpy as np
from numba.core import ir, types
from numba.core.analysis import compute_cfg_from_blocks
from numba.core.ir_utils import find_callname, guard

from ..errors import StreamConfigError, warn_in_kernel
from ..plan import LOOP_NOTE, METADATA_KEY, StreamResult

PRANGE_NAMES = ("prange", "internal_prange")
# The name stream_stores gives an array the kernel returns without naming it
# (``return a * x + y``): Python's own key for a function's return annotation,
# never a variable's name.
RETURN_NAME = "return"
ALLOCATORS = {(name, "numpy") for name in ("empty", "empty_like", "zeros", "zeros_like", "ones", "ones_like", "full",
                                           "full_like")}


@dataclass(eq=False)
class Loop:
    header: int
    body: frozenset  # block labels, header included
    exits: frozenset  # labels outside the loop that its blocks jump to
    entries: frozenset  # labels outside the loop that jump to its header
    serial: int
    parent: "Loop | None" = None
    for_block: int = None  # the block that tests iternext: the header, or reached from it by jumps
    kind: str = "while"  # "range", "prange" (parallel=True), "iterator" (other for loops) or "while"
    induction: str | None = None  # the header's variable holding the iteration's value
    names: frozenset = frozenset()  # the induction variable and its copies
    iterator: str | None = None  # the variable iternext reads
    range_call: ir.Expr | None = None
    loc: ir.Loc | None = None

    @property
    def is_range(self):
        return self.induction is not None

    @property
    def var(self):
        """The user's name for the loop variable (for messages)."""
        user = sorted(n for n in self.names if not n.startswith("$"))
        return re.sub(r"\.\d+$", "", user[0]) if user else "<loop>"

    @property
    def start(self):
        args = self.range_call.args
        return args[0] if len(args) > 1 else 0

    @property
    def stop(self):
        args = self.range_call.args
        return args[1] if len(args) > 1 else args[0]

    @property
    def step(self):
        args = self.range_call.args
        return args[2] if len(args) > 2 else 1

    @property
    def line(self):
        return self.loc.line if self.loc else 0

    def enclosing_headers(self):
        return {loop.header for loop in self.enclosing()}

    def enclosing(self):
        """This loop and those around it, outermost first."""
        chain, loop = [], self
        while loop is not None:
            chain.append(loop)
            loop = loop.parent
        return tuple(reversed(chain))


@dataclass(eq=False)
class Access:
    """One load or store of an array parameter."""

    array: str  # parameter name
    array_var: str  # the variable bound to the parameter
    label: int
    stmt: ir.Stmt
    index: list  # per indexed dimension: an ir.Var, an int, or a slice object
    kind: str  # "element", "row", "slice", "inplace", "view" (through a sliced view) or "opaque"
    is_store: bool
    loops: tuple  # Loop, outermost first
    loc: ir.Loc
    chained: bool = False  # through a subscript of a subscript
    view: object = None  # for kind "view": the subscript that made the view

    @property
    def line(self):
        return self.loc.line

    @property
    def is_element(self):
        return self.kind == "element"


@dataclass
class KernelScan:
    func_ir: ir.FunctionIR
    typemap: dict
    arrays: dict  # array name -> variable bound to it: parameters, and arrays the kernel allocates
    fresh: frozenset = frozenset()  # names of the arrays the kernel allocates
    results: frozenset = frozenset()  # of those, the ones an array expression computes (Numba's own code)
    views: dict = field(default_factory=dict)  # view variable made by `array_stores.py` -> array name
    loops: list = field(default_factory=list)
    accesses: list = field(default_factory=list)
    defs: dict = field(default_factory=dict)  # variable -> [(label, statement)]
    rebound: dict = field(default_factory=dict)  # variable -> the one array it holds (`_rebinding_roots`)
    # ping-pong buffers (`_rebinding_roots`): variable -> the arrays it may hold,
    # and the kernel's name of such a variable -> the arrays any version may hold
    groups: dict = field(default_factory=dict)
    group_roots: dict = field(default_factory=dict)
    aliased_groups: frozenset = frozenset()  # names of ping-pong variables that may hold one array at once
    cfg: object = None

    def stores(self, array=None):
        return [a for a in self.accesses if a.is_store and (array is None or a.array == array)]

    def loads(self, array=None):
        return [a for a in self.accesses if not a.is_store and (array is None or a.array == array)]

    def canonical(self, name):
        """The variable at the end of ``name``'s chain of single copies (or
        the array a rebound variable holds, `_rebinding_roots`)."""
        seen = set()
        while name not in seen:
            seen.add(name)
            if name in self.rebound:
                name = self.rebound[name]
                continue
            found = self.defs.get(name, [])
            if len(found) != 1 or not isinstance(found[0][1].value, ir.Var):
                return name
            name = found[0][1].value.name
        return name

    def definition(self, name):
        """The single value assigned to ``name`` (through copies), or None."""
        found = self.defs.get(self.canonical(name), [])
        return found[0][1].value if len(found) == 1 and not isinstance(found[0][1].value, ir.Var) else None

    def def_labels(self, name):
        return {label for label, _ in self.defs.get(name, [])}

    def roots(self, name):
        """The arrays stores to the array (or ping-pong variable) ``name`` may write."""
        return self.group_roots.get(name, frozenset((name,)))

    def group_name(self, var):
        """The kernel's name of a ping-pong variable (``B`` of ``B.2``), or None."""
        return version_name(var) if var in self.groups else None

    def loops_of(self, label):
        """Loops containing block ``label``, outermost first."""
        inner = None
        for loop in self.loops:
            if label in loop.body and (inner is None or len(loop.body) < len(inner.body)):
                inner = loop
        return inner.enclosing() if inner else ()

    def loop_of_induction(self, name):
        """The range loop whose induction variable ``name`` copies, if any."""
        name = self.canonical(name)
        return next((loop for loop in self.loops if loop.induction == name), None)


def _definitions(blocks):
    defs = {}
    for label, block in blocks.items():
        for stmt in block.body:
            if isinstance(stmt, ir.Assign):
                defs.setdefault(stmt.target.name, []).append((label, stmt))
    return defs


def _rebinding_roots(defs, typemap):
    """{variable: set of variables} for array variables that, whichever
    definition ran, hold an array another variable was bound to: copies and
    what in-place operators on it returned (``B += s`` in a time loop
    rebinds ``B`` every iteration, and Numba's SSA merges the versions), and
    the ping-pong buffers of a time loop (``A, B = B, A``: after phi removal
    ``A`` and ``B`` are each defined as the parameter and as the other one)."""
    sources = {}
    for name, found in defs.items():
        if isinstance(typemap.get(name), types.Array):
            values = [stmt.value for _, stmt in found]
            if all(isinstance(v, ir.Var) or isinstance(v, ir.Expr) and v.op == "inplace_binop" for v in values):
                sources[name] = [v.name if isinstance(v, ir.Var) else v.lhs.name for v in values]
    found = {}
    for name in sources:
        roots, stack, seen = set(), [name], set()
        while stack:
            var = stack.pop()
            if var in seen:
                continue
            seen.add(var)
            if var in sources:
                stack.extend(sources[var])
            else:
                roots.add(var)
        found[name] = roots
    return found


def _swaps_permute(blocks, defs, group_vars):
    """Whether every block that rebinds the variables of a ping-pong group
    rebinds all of them to a permutation of what they held on entry to the
    block (``A, B = B, A``; ``tmp = A; A = B; B = tmp``), so two of them
    never hold one array at once (given distinct parameters): stores through
    two of them in one stage write two arrays. ``B = A`` alone does not."""
    labels = {label for var in group_vars for label, _ in defs[var]}
    for label in labels:
        held = {}  # variable -> what it held on entry to the block (its name), or a new value (its statement's id)
        for stmt in blocks[label].body:
            if isinstance(stmt, ir.Assign):
                value = stmt.value
                source = value if isinstance(value, ir.Var) else \
                    value.lhs if isinstance(value, ir.Expr) and value.op == "inplace_binop" else None
                held[stmt.target.name] = id(stmt) if source is None else held.get(source.name, source.name)
        after = [held.get(var, var) for var in sorted(group_vars)]
        # (the entry block binds them to the arrays they start as: distinct ones)
        if set(after) != set(group_vars) if label != min(blocks) else len(set(after)) < len(after):
            return False
    return True


def version_name(var):
    """The kernel's name of an SSA version (``B`` of ``B.2``)."""
    return re.sub(r"\.\d+$", "", var)


def _find_rebindings(scan):
    """Fill ``scan.rebound`` (a variable that holds one array) and the
    ping-pong groups (one that holds one of several of the kernel's arrays,
    swapped by a time loop)."""
    by_var = {var: name for name, var in scan.arrays.items()}
    for var, roots in _rebinding_roots(scan.defs, scan.typemap).items():
        if len(roots) == 1:
            scan.rebound[var] = next(iter(roots))
        elif roots <= set(by_var):
            scan.groups[var] = frozenset(by_var[r] for r in roots)
    aliased = set()
    for var, names in scan.groups.items():
        name = version_name(var)
        scan.group_roots[name] = scan.group_roots.get(name, frozenset()) | names
        phis = {v for v, n in scan.groups.items() if n & names and len(scan.defs[v]) > 1}
        if not _swaps_permute(scan.func_ir.blocks, scan.defs, phis):
            aliased.add(name)
    scan.aliased_groups = frozenset(aliased)


def _first_loc(blocks, labels, header_label):
    """The loop's location as the user sees it: its first line (the ``for``
    or ``while``). Python 3.11 starts a ``while`` loop's header block at its
    body, and tests the condition again at the end of it, on the loop's line."""
    header = blocks[header_label].loc
    # (statements of inlined helpers carry their own file's lines)
    locs = [s.loc for label in labels for s in blocks[label].body
            if s.loc is not None and s.loc.line and s.loc.filename == header.filename]
    return min(locs, key=lambda loc: loc.line) if locs else header


def _find_loops(scan, parallel):
    cfg = scan.cfg
    raw = sorted(cfg.loops().values(), key=lambda lp: -len(lp.body))
    loops = []
    for serial, lp in enumerate(raw):
        loop = Loop(header=lp.header, body=frozenset(lp.body), exits=frozenset(lp.exits),
                    entries=frozenset(lp.entries), serial=serial,
                    loc=_first_loc(scan.func_ir.blocks, lp.body, lp.header))
        loop.parent = next((o for o in reversed(loops) if lp.header in o.body and o.header != lp.header), None)
        _classify(scan, loop, parallel)
        loops.append(loop)
    # the induction variables and their copies (the user's loop variable), in one pass
    by_induction = {loop.induction: loop for loop in loops if loop.is_range}
    copies = {}
    for name, found in scan.defs.items():
        if len(found) == 1 and isinstance(found[0][1].value, ir.Var):
            copies.setdefault(scan.canonical(name), set()).add(name)
    for induction, loop in by_induction.items():
        loop.names = frozenset(copies.get(induction, set()) | {induction})
    scan.loops = loops


def _classify(scan, loop, parallel):
    """Set the induction variable of a loop over a ``range`` object."""
    blocks = scan.func_ir.blocks
    # (Python 3.11's bytecode can start a for loop with a block that only jumps on)
    label = loop.header
    while (label in loop.body and len(blocks[label].body) == 1 and isinstance(blocks[label].body[0], ir.Jump)
           and blocks[label].body[0].target in loop.body and blocks[label].body[0].target != loop.header):
        label = blocks[label].body[0].target
    loop.for_block = label
    header = blocks[label]
    nxt = next((s for s in header.body if isinstance(s, ir.Assign) and isinstance(s.value, ir.Expr)
                and s.value.op == "iternext"), None)
    if nxt is None:
        return
    loop.kind = "iterator"
    getiter = scan.definition(nxt.value.value.name)
    if not (isinstance(getiter, ir.Expr) and getiter.op == "getiter"
            and isinstance(scan.typemap.get(getiter.value.name), types.RangeType)):
        return
    call = scan.definition(getiter.value.name)
    if not (isinstance(call, ir.Expr) and call.op == "call" and not call.kws and call.vararg is None
            and 1 <= len(call.args) <= 3):
        return
    first = next((s for s in header.body if isinstance(s, ir.Assign) and isinstance(s.value, ir.Expr)
                  and s.value.op == "pair_first" and s.value.value.name == nxt.target.name), None)
    if first is None:
        return
    callname = guard(find_callname, scan.func_ir, call, scan.typemap)
    loop.kind = "prange" if parallel and callname and callname[0] in PRANGE_NAMES else "range"
    loop.induction = first.target.name
    loop.iterator, loop.range_call = nxt.value.value.name, call
    loop.loc = call.loc


def _same_elements_view_of(scan, value):
    """The array that ``value`` is another view of, every element once
    (``a.T``, ``a.transpose()``, ``a.reshape(...)``, and ``a.ravel()`` of a
    C-contiguous ``a``, which Numba's typing proves a view, not a copy), or
    None. Its stores are the array's: distinct indices of the view are
    distinct elements, so the legality rule holds on the view's own indices."""
    if not isinstance(value, ir.Expr):
        return None
    if value.op == "getattr" and value.attr == "T":
        base = value.value
    elif value.op == "call":
        method = scan.typemap.get(value.func.name)
        # (Numba keys its array methods "array.ravel", its overloads (types.Array, "name"))
        key = getattr(method, "typing_key", None)
        kind = key[1] if isinstance(key, tuple) else str(key).rpartition(".")[2]
        if not isinstance(method, types.BoundFunction) or not isinstance(method.this, types.Array) \
                or kind not in ("ravel", "reshape", "transpose") or (kind == "ravel" and method.this.layout != "C"):
            return None
        found = scan.definition(value.func.name)
        base = found.value if isinstance(found, ir.Expr) and found.op == "getattr" else None
    else:
        return None
    return base if base is not None and isinstance(scan.typemap.get(base.name), types.Array) else None


def _root_array(scan, var):
    """(array name, root variable, index prefix, view) when ``var`` is one
    of the kernel's arrays, a view `array_stores.py` made of one (its own
    root), or a subscript of either: ``arr[y]`` of ``arr[y][x]`` gives the
    prefix (y,); a slice (``out[::-1]``) gives the subscript that made the
    view."""
    name = scan.canonical(var.name)
    if name in scan.views:
        return scan.views[name], name, [], None
    if name in scan.groups:
        return scan.group_name(name), name, [], None
    for array, bound in scan.arrays.items():
        if name == bound:
            return array, bound, [], None
    value = scan.definition(var.name)
    base = _same_elements_view_of(scan, value)
    if base is not None:
        root = _root_array(scan, base)
        if root and not root[2] and root[3] is None:
            return root[0], name, [], None
    if isinstance(value, ir.Expr) and value.op in ("getitem", "static_getitem") \
            and isinstance(scan.typemap.get(var.name), types.Array):
        root = _root_array(scan, value.value)
        index = index_atoms(scan, value)
        if root and root[3] is None and index is not None and all(_is_int(scan, a) for a in index):
            return root[0], root[1], root[2] + index, None
        if root:
            return root[0], root[1], [], root[3] or value
    return None


def _is_int(scan, atom):
    if isinstance(atom, ir.Var):
        return isinstance(scan.typemap.get(atom.name), types.Integer)
    return isinstance(atom, int) and not isinstance(atom, bool)


def is_slice(typemap, atom):
    """Whether an index atom (a Var or a constant) is a slice."""
    if isinstance(atom, ir.Var):
        return isinstance(typemap.get(atom.name), types.SliceType)
    return isinstance(atom, slice)


def index_atoms(scan, node):
    """The index of a getitem/setitem as a list of per-dimension atoms, or
    None when its components are not visible (a tuple from elsewhere)."""
    if isinstance(node, (ir.StaticSetItem,)) or (isinstance(node, ir.Expr) and node.op == "static_getitem"):
        index = node.index
        return list(index) if isinstance(index, tuple) else [index]
    index = node.index
    value = scan.definition(index.name)
    if isinstance(value, ir.Expr) and value.op == "build_tuple":
        return list(value.items)
    if isinstance(value, ir.Const) and isinstance(value.value, tuple):
        return list(value.value)
    if isinstance(scan.typemap.get(index.name), types.BaseTuple):
        return None
    return [index]


def _without_ellipsis(scan, atoms, ndim):
    """``...`` in an index as the whole-dimension slices it stands for."""
    for k, atom in enumerate(atoms):
        if atom is Ellipsis or isinstance(atom, ir.Var) and isinstance(scan.typemap.get(atom.name), types.EllipsisType):
            return atoms[:k] + [slice(None)] * (ndim - len(atoms) + 1) + atoms[k + 1:]
    return atoms


def _classify_index(scan, root_var, index):
    ndim = scan.typemap[root_var].ndim
    if index is None:
        return "opaque"
    if all(_is_int(scan, a) for a in index):
        return "element" if len(index) == ndim else "row"
    if all(_is_int(scan, a) or is_slice(scan.typemap, a) for a in index):
        return "slice"
    return "opaque"


def _record(scan, label, stmt, target, node, is_store):
    root = _root_array(scan, target)
    if root is None:
        return
    array, root_var, prefix, view = root
    index = index_atoms(scan, node)
    ndim = scan.typemap[root_var if view is None else target.name].ndim
    full = None if index is None else _without_ellipsis(scan, prefix + index, ndim)
    scan.accesses.append(Access(
        array=array, array_var=root_var, label=label, stmt=stmt, index=full or [],
        kind="view" if view is not None else _classify_index(scan, root_var, full), is_store=is_store,
        loops=scan.loops_of(label), loc=stmt.loc, chained=bool(prefix), view=view))


def is_array_expression(expr, typemap):
    """Whether ``expr`` is one operation of a NumPy array expression (an
    operator or a ufunc call), as Numba's array-expression rewrite sees it."""
    if not isinstance(expr, ir.Expr):
        return False
    if expr.op in ("binop", "unary"):
        return True
    func = typemap.get(expr.func.name) if expr.op == "call" else None
    return isinstance(func, types.Function) and isinstance(func.typing_key, np.ufunc)


def _user_name(var, local_names):
    """The kernel's own variable name of an IR variable (without Numba's
    version suffix), or None for Numba's temporaries and an inlined helper's
    variables."""
    name = re.sub(r"\.\d+$", "", var)
    return name if name in local_names else None


def _fresh_arrays(func_ir, typemap):
    """({user name: variable}, result names) of the arrays the kernel makes:
    allocated with NumPy (``r = np.empty_like(x)``) or computed by an array
    expression (``r = a * x + y``), under the name the user gave them, or
    RETURN_NAME for one returned unnamed (``return a * x + y``); the result
    names are those of arrays only computed (not yet rewritten to an
    allocation and a loop by `array_stores.py`)."""
    local_names = set(func_ir.func_id.code.co_varnames) | set(func_ir.func_id.code.co_cellvars)
    assigns = [s for block in func_ir.blocks.values() for s in block.body if isinstance(s, ir.Assign)]
    arrays = [s for s in assigns if isinstance(s.value, ir.Expr) and isinstance(typemap.get(s.target.name), types.Array)]
    allocated = {s.target.name for s in arrays
                 if s.value.op == "call" and guard(find_callname, func_ir, s.value, typemap) in ALLOCATORS}
    computed = {s.target.name for s in arrays if is_array_expression(s.value, typemap)} - allocated
    made = allocated | computed
    named = {s.target.name: s.value.name for s in assigns if isinstance(s.value, ir.Var)
             and s.value.name in made and _user_name(s.target.name, local_names)}
    named.update((v, v) for v in made if _user_name(v, local_names))
    casts = {s.target.name: s.value.value.name for s in arrays if s.value.op == "cast"}
    returned = {casts.get(s.value.name) for block in func_ir.blocks.values() for s in block.body
                if isinstance(s, ir.Return)}
    found = {}
    for user, var in sorted(named.items()):
        found.setdefault(_user_name(user, local_names), var)
    for var in sorted(returned & made):
        if var not in found.values():
            found.setdefault(RETURN_NAME, var)
    return found, frozenset(name for name, var in found.items() if var in computed)


def scan_kernel(func_ir, typemap, parallel=False, views=None):
    """Loops and array accesses of a typed, phi-free function IR;
    ``views``: {view variable: array name} made by `array_stores.py`."""
    arrays = {}
    for stmt in func_ir.blocks[min(func_ir.blocks)].body:
        if isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Arg) \
                and isinstance(typemap.get(stmt.target.name), types.Array):
            arrays[stmt.value.name] = stmt.target.name
    made, results = _fresh_arrays(func_ir, typemap)
    fresh = {name: var for name, var in made.items() if name not in arrays}
    defs = _definitions(func_ir.blocks)
    scan = KernelScan(func_ir=func_ir, typemap=typemap, arrays={**arrays, **fresh}, fresh=frozenset(fresh),
                      results=results & set(fresh),
                      views=dict(views or {}),
                      defs=defs, cfg=compute_cfg_from_blocks(func_ir.blocks))
    _find_rebindings(scan)
    _find_loops(scan, parallel)
    for label, block in func_ir.blocks.items():
        for stmt in block.body:
            if isinstance(stmt, (ir.SetItem, ir.StaticSetItem)):
                _record(scan, label, stmt, stmt.target, stmt, True)
            elif isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr):
                expr = stmt.value
                if expr.op in ("getitem", "static_getitem"):
                    _record(scan, label, stmt, expr.value, expr, False)
                elif expr.op == "inplace_binop" and isinstance(typemap.get(expr.lhs.name), types.Array):
                    root = _root_array(scan, expr.lhs)
                    if root and root[3] is None and not root[2]:
                        for is_store in (False, True):
                            scan.accesses.append(Access(
                                array=root[0], array_var=root[1], label=label, stmt=stmt, index=[],
                                kind="inplace", is_store=is_store, loops=scan.loops_of(label), loc=stmt.loc))
    return scan


def _named(option, candidates):
    return set(candidates) if option is True else set(option or ())


# Why ``stream_stores=True`` leaves the arrays a kernel allocates plain: a
# fresh allocation's pages are zeroed by the kernel on first touch, in cache,
# and a streamed store to such a line costs more than a cached one
# (bench/array_expressions.py: 0.68x numba.njit for a 200 MB fresh output).
FRESH_NOTE = ("allocated by the kernel: not streamed under stream_stores=True (its pages are zeroed in cache on "
              "first touch; streaming measured slower, bench/array_expressions.py); name it in stream_stores "
              "('return' for a returned unnamed array) to stream it anyway")


# Why ``stream_stores=True`` leaves arrays only updated in place plain
# (``C *= beta``, ``A[1:] += B[:-1]``, ``a[i] = a[i] * b`` in a loop): each
# element is read just before it is written, so its line is in cache and a
# streamed store saves no read-for-ownership; it measured slower
# (bench/array_expressions.py).
IN_PLACE_NOTE = ("only updated in place: not streamed under stream_stores=True (each element is read just before it "
                 "is written, so there is no read to save; streaming measured 0.75-0.94x, bench/array_expressions.py);"
                 " name it in stream_stores to stream it anyway")


def _atom_key(scan, atom):
    return scan.canonical(atom.name) if isinstance(atom, ir.Var) else atom


def _rewrites_what_it_read(scan, store):
    """Whether an element store writes the element its block read just
    before (``a[i] = a[i] * b``): an update in place written as a loop."""
    if store.kind != "element":
        return False
    body = scan.func_ir.blocks[store.label].body
    at = next(k for k, s in enumerate(body) if s is store.stmt)
    key = [_atom_key(scan, a) for a in store.index]
    return any(load.label == store.label and load.kind == "element" and any(s is load.stmt for s in body[:at])
               and [_atom_key(scan, a) for a in load.index] == key for load in scan.loads(store.array))


def _one_constant_element(scan, store):
    """``u[0] = 0``, ``u[-1] = v``: a boundary value, a plain store whatever the options."""
    def constant(atom):
        value = scan.definition(atom.name) if isinstance(atom, ir.Var) else None
        return isinstance(atom, int) or isinstance(value, ir.Const) and isinstance(value.value, int)
    return store.kind == "element" and all(constant(a) for a in store.index)


def _only_in_place(scan, name, origin):
    """Whether every store to ``name`` updates in place (its boundary
    values aside)."""
    stores = [a for a in scan.stores(name) if not _one_constant_element(scan, a)]
    return bool(stores) and all(a.kind == "inplace" or origin.get(id(a.stmt), (None, None))[1] == "inplace"
                                or _rewrites_what_it_read(scan, a) for a in stores)


# Why threshold="auto" leaves them plain even when named.
AUTO_NOTE = ("threshold='auto' leaves it plain: streaming {} measured slower at every size tried "
             "(bench/array_expressions.py); give a byte threshold, or none, to stream it anyway")


def _measured_slower(scan, name, origin):
    """Whether ``name`` is an array the kernel makes (every array a ping-pong
    variable may hold, for one) or (once `array_stores.py` has made its
    loops: ``origin``) one only updated in place."""
    return scan.roots(name) <= scan.fresh or origin is not None and _only_in_place(scan, name, origin)


def stored_names(scan):
    """The names stores go to, and the arrays ping-pong variables among them may hold."""
    stored = {a.array for a in scan.stores()}
    return stored.union(*(scan.roots(name) for name in stored))


def streamed_store_names(options, scan, origin=None):
    """The arrays whose stores the options stream: with True, the array
    parameters stored to, except those only updated in place; a list names
    parameters or arrays the kernel makes, and with threshold="auto" it
    keeps the same exceptions. A ping-pong variable (``A, B = B, A`` in a
    time loop) streams when the arrays it may hold are named; they join the
    streamed arrays."""
    stored = {a.array for a in scan.stores()}
    option = set(options.stream_stores or ()) if options.stream_stores is not True else None
    named = stored if option is None else {n for n in stored if n in option or scan.roots(n) <= option}
    if options.stream_stores is True or options.measured:
        named = {name for name in named if not _measured_slower(scan, name, origin)}
    return named.union(*(scan.roots(name) for name in named))


def _passed_to_functions(scan):
    """{array name: [(line, function name)]} for arrays handed to a jitted
    function Numba compiles on its own (not inlined at the IR level), whose
    stores no pass sees."""
    passed = {}
    for block in scan.func_ir.blocks.values():
        for stmt in block.body:
            if isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr) and stmt.value.op == "call" \
                    and isinstance(scan.typemap.get(stmt.value.func.name), types.Dispatcher):
                callee = scan.typemap[stmt.value.func.name].dispatcher.py_func.__name__
                for arg in stmt.value.args:
                    root = _root_array(scan, arg) if isinstance(scan.typemap.get(arg.name), types.Array) else None
                    if root is not None:
                        passed.setdefault(root[0], []).append((stmt.loc.line, callee))
    return passed


CALL_NOTE = ("passed to '{}', which Numba compiles as a function of its own: the stores it makes are plain, and no "
             "pass sees them; decorate it @numba.njit(inline='always') (its stores are then the kernel's) to stream "
             "them")


def _warn_unused(option, used, option_name, verb, func_id):
    """A StreamWarning for each name in a list option that the kernel never
    ``verb``s, shown at the kernel's ``def``."""
    if isinstance(option, tuple):
        for name in sorted(set(option) - used):
            warn_in_kernel(func_id, f"{option_name} names '{name}', but {func_id.func_qualname} never {verb} it")


def run_pass(state):
    """Scan the kernel; decide the streamed arrays (`StreamResult`)."""
    options = state.stream_options
    scan = scan_kernel(state.func_ir, state.typemap, options.parallel, state.stream_views)
    func_name = state.func_id.func_qualname
    stored = stored_names(scan)
    loaded = {a.array for a in scan.loads()}
    streamed = streamed_store_names(options, scan, state.stream_store_origin)
    # arrays only handed to functions: named ones, or (under True) those the kernel neither loads nor stores
    passed = {name: calls for name, calls in _passed_to_functions(scan).items() if name not in stored and (
        name in options.stream_stores if isinstance(options.stream_stores, tuple)
        else options.stream_stores is True and name not in loaded)}
    # (named ones are warned about, with the note below, by `nothing_streamed.py`)
    # (a result named but not fused is noted by array_stores.py)
    locals_named = set(options.stream_stores) - set(state.func_id.arg_names) - stored - scan.results \
        if isinstance(options.stream_stores, tuple) else set()
    _warn_unused(options.stream_stores, stored | scan.results | locals_named | set(passed), "stream_stores",
                 "stores to", state.func_id)
    for name in sorted(locals_named):
        warn_in_kernel(state.func_id, f"stream_stores names '{name}', but {func_name} neither allocates it with NumPy "
                       "(np.empty, np.zeros, ...) and stores to it, nor computes it by an array expression: it stays "
                       "plain")
    loads = _named(options.stream_loads, loaded - stored)
    self_loads = sorted(loads & stored)
    if self_loads:
        raise StreamConfigError(f"stream_loads names '{self_loads[0]}', which {func_name} also stores to: "
                                "a kernel cannot stream its own self-loads")
    _warn_unused(options.stream_loads, loaded | stored, "stream_loads", "loads", state.func_id)
    result = StreamResult(streamed_stores=frozenset(streamed), streamed_loads=frozenset(loads & loaded),
                          fresh_arrays=frozenset(scan.fresh & stored | scan.results), views=dict(scan.views),
                          ping_pong=dict(scan.group_roots))
    if options.stream_stores is True:
        for name in sorted((scan.fresh & stored | scan.results) - streamed):
            result.note(name, 0, FRESH_NOTE)
        for name in sorted(stored - scan.fresh - streamed):
            result.note(name, 0, IN_PLACE_NOTE)
    elif options.measured:
        for name in sorted(set(options.stream_stores) & (stored | scan.results) - streamed):
            result.note(name, 0, AUTO_NOTE.format("an array the kernel makes" if name in scan.fresh
                                                  else "an update in place"))
    for array, line, text in state.stream_store_notes:
        result.note(array, line, text)
    for name, calls in sorted(passed.items()):
        for line, callee in calls:
            result.note(name, line, CALL_NOTE.format(callee))
    for name in sorted(streamed):  # how the rest of its stores were made
        in_loops = [a for a in scan.stores(name) if a.loops and id(a.stmt) not in state.stream_store_origin
                    and a.kind not in ("inplace", "opaque")]
        if in_loops:
            result.note(name, in_loops[0].line, LOOP_NOTE)
    state.metadata[METADATA_KEY] = result
    state.stream_scan = scan
    return False
