"""Find every load and store of the kernel's arrays (its array parameters
and the arrays it allocates with NumPy, under the names the user gave
them) and the loops around each: the facts `accesses.py` decides from.

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

from dataclasses import dataclass, field

import numpy as np
from numba.core import ir, types
from numba.core.analysis import compute_cfg_from_blocks
from numba.core.ir_utils import find_callname, guard

from .indices import classify_index, index_atoms, is_int, without_ellipsis
from .rebindings import definitions, find_rebindings, version_name

PRANGE_NAMES = ("prange", "internal_prange")
# The name stream_stores gives an array the kernel returns without naming it
# (``return a * x + y``): Python's own key for a function's return annotation,
# never a variable's name.
RETURN_NAME = "return"
# NumPy calls whose array result is new memory: arrays the kernel makes.
# ``np.where(c, x, y)`` and ``np.copy`` too, so that a fused loop reading
# their results (NPBench hdiff's ``flx_field[1:] - flx_field[:-1]``) reads
# known arrays, proven in bounds and contiguous, and vectorizes (unknown,
# they kept Python's wraparound and a run-time stride: a scalar loop).
ALLOCATORS = {(name, "numpy") for name in ("empty", "empty_like", "zeros", "zeros_like", "ones", "ones_like", "full",
                                           "full_like", "where", "copy")}


@dataclass(eq=False)
class Loop:
    """One loop of the kernel's CFG: its header and blocks, where it is
    left and entered, its parent loop, and for a ``range`` loop the
    variables holding each iteration's value (``kind`` says which loop it
    is: ``range``, ``prange``, another iterator, or ``while``)."""

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
        return version_name(user[0]) if user else "<loop>"

    @property
    def described(self):
        """The loop in a message: ``'i'``, or the element loop a slice
        expression became (its variable is not the user's)."""
        return f"'{self.var}'" if self.var != "<loop>" else "the element loop of a slice expression"

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
    """What `scan_kernel` found in one typed function IR: its arrays (the
    parameters and those it allocates), its loops (outermost first), every
    access to an array with the loops around it, every variable's
    definitions, and the variables rebound to arrays (ping-pong buffers
    included); the other passes query it."""

    func_ir: ir.FunctionIR
    typemap: dict
    arrays: dict  # array name -> variable bound to it: parameters, and arrays the kernel allocates
    fresh: frozenset = frozenset()  # names of the arrays the kernel allocates
    results: frozenset = frozenset()  # of those, the ones an array expression computes (Numba's own code)
    versions: dict = field(default_factory=dict)  # another variable a fresh array's name is allocated into -> name
    views: dict = field(default_factory=dict)  # view variable made by `array_stores.py` -> array name
    loops: list = field(default_factory=list)
    accesses: list = field(default_factory=list)
    defs: dict = field(default_factory=dict)  # variable -> [(label, statement)]
    rebound: dict = field(default_factory=dict)  # variable -> the one array it holds (`rebindings.py`)
    # ping-pong buffers (`rebindings.py`): variable -> the arrays it may hold,
    # and the kernel's name of such a variable -> the arrays any version may hold
    groups: dict = field(default_factory=dict)
    group_roots: dict = field(default_factory=dict)
    aliased_groups: frozenset = frozenset()  # names of ping-pong variables that may hold one array at once
    cfg: object = None

    def stores(self, array=None):
        return [a for a in self.accesses if a.is_store and (array is None or a.array == array)]

    def loads(self, array=None):
        return [a for a in self.accesses if not a.is_store and (array is None or a.array == array)]

    def array_bound_to(self, var):
        """The array ``var`` is bound to (a parameter, or an allocation of one the kernel makes), or None."""
        return next((name for name, bound in self.arrays.items() if bound == var), None) or self.versions.get(var)

    def canonical(self, name):
        """The variable at the end of ``name``'s chain of single copies (or
        the array a rebound variable holds, `rebindings.py`)."""
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


def root_array(scan, var):
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
    array = scan.array_bound_to(name)
    if array is not None:
        return array, name, [], None
    value = scan.definition(var.name)
    base = _same_elements_view_of(scan, value)
    if base is not None:
        root = root_array(scan, base)
        if root and not root[2] and root[3] is None:
            return root[0], name, [], None
    if isinstance(value, ir.Expr) and value.op in ("getitem", "static_getitem") \
            and isinstance(scan.typemap.get(var.name), types.Array):
        root = root_array(scan, value.value)
        index = index_atoms(scan, value)
        if root and root[3] is None and index is not None and all(is_int(scan, a) for a in index):
            return root[0], root[1], root[2] + index, None
        if root:
            return root[0], root[1], [], root[3] or value
    return None


def views_array(scan, var, array):
    """Whether ``var`` is the kernel's array whose root variable is
    ``array``, or a view of it (`scan.root_array`)."""
    root = root_array(scan, var)
    return root is not None and root[1] == array


def _record(scan, label, stmt, target, node, is_store):
    root = root_array(scan, target)
    if root is None:
        return
    array, root_var, prefix, view = root
    index = index_atoms(scan, node)
    ndim = scan.typemap[root_var if view is None else target.name].ndim
    full = None if index is None else without_ellipsis(scan, prefix + index, ndim)
    scan.accesses.append(Access(
        array=array, array_var=root_var, label=label, stmt=stmt, index=full or [],
        kind="view" if view is not None else classify_index(scan, root_var, full), is_store=is_store,
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
    name = version_name(var)
    return name if name in local_names else None


def _allocates(func_ir, call, typemap):
    """Whether ``call`` makes a new array: a NumPy allocation, or an array's ``copy()``."""
    callname = guard(find_callname, func_ir, call, typemap)
    return callname in ALLOCATORS or callname is not None and callname[0] == "copy" \
        and isinstance(callname[1], ir.Var) and isinstance(typemap.get(callname[1].name), types.Array)


def _fresh_arrays(func_ir, typemap):
    """({user name: variable}, {variable: user name}, result names) of the arrays the kernel makes: allocated
    (``np.empty_like(x)``, ``x.copy()``) or computed by an array expression (``a * x + y``), under the name the user
    gave them, or RETURN_NAME for one returned unnamed. A name made again (``pn = p.copy()`` in a loop) is one array
    bound to several variables: the first in the first dict, the others in the second. The result names are those of
    arrays only computed (not yet rewritten to an allocation and a loop by `array_stores.py`)."""
    local_names = set(func_ir.func_id.code.co_varnames) | set(func_ir.func_id.code.co_cellvars)
    assigns = [s for block in func_ir.blocks.values() for s in block.body if isinstance(s, ir.Assign)]
    arrays = [s for s in assigns
              if isinstance(s.value, ir.Expr) and isinstance(typemap.get(s.target.name), types.Array)]
    allocated = {s.target.name for s in arrays if s.value.op == "call" and _allocates(func_ir, s.value, typemap)}
    computed = {s.target.name for s in arrays if is_array_expression(s.value, typemap)} - allocated
    made = allocated | computed
    named = {s.target.name: s.value.name for s in assigns if isinstance(s.value, ir.Var)
             and s.value.name in made and _user_name(s.target.name, local_names)}
    named.update((v, v) for v in made if _user_name(v, local_names))
    casts = {s.target.name: s.value.value.name for s in arrays if s.value.op == "cast"}
    returned = {casts.get(s.value.name) for block in func_ir.blocks.values() for s in block.body
                if isinstance(s, ir.Return)}
    found, versions = {}, {}
    for user, var in sorted(named.items()):
        name = _user_name(user, local_names)
        if found.setdefault(name, var) != var:
            versions[var] = name
    for var in sorted(returned & made):
        if var not in found.values() and var not in versions:
            found.setdefault(RETURN_NAME, var)
    return found, versions, frozenset(name for name, var in found.items() if var in computed)


def scan_kernel(func_ir, typemap, parallel=False, views=None):
    """Loops and array accesses of a typed, phi-free function IR;
    ``views``: {view variable: array name} made by `array_stores.py`."""
    arrays = {}
    for stmt in func_ir.blocks[min(func_ir.blocks)].body:
        if isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Arg) \
                and isinstance(typemap.get(stmt.target.name), types.Array):
            arrays[stmt.value.name] = stmt.target.name
    made, versions, results = _fresh_arrays(func_ir, typemap)
    fresh = {name: var for name, var in made.items() if name not in arrays}
    defs = definitions(func_ir.blocks)
    scan = KernelScan(func_ir=func_ir, typemap=typemap, arrays={**arrays, **fresh}, fresh=frozenset(fresh),
                      results=results & set(fresh),
                      versions={var: name for var, name in versions.items() if name in fresh},
                      views=dict(views or {}),
                      defs=defs, cfg=compute_cfg_from_blocks(func_ir.blocks))
    find_rebindings(scan)
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
                    root = root_array(scan, expr.lhs)
                    if root and root[3] is None and not root[2]:
                        for is_store in (False, True):
                            scan.accesses.append(Access(
                                array=root[0], array_var=root[1], label=label, stmt=stmt, index=[],
                                kind="inplace", is_store=is_store, loops=scan.loops_of(label), loc=stmt.loc))
    return scan
