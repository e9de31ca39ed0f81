"""Array variables that are rebound, found on typed, phi-free Numba IR: a
variable that, whichever of its definitions ran, holds one array another
variable was bound to (copies, what in-place operators returned), and the
ping-pong buffers of a time loop (``A, B = B, A``; ``tmp = A; A = B;
B = tmp``): variables that hold one of several of the kernel's arrays.
`scan.py` asks, so that a store through such a variable is a store to the
array (or to one of the arrays) it holds.
"""

import re

from numba.core import ir, types


def definitions(blocks):
    """``{variable name: [(block label, assignment)]}``: every assignment to each variable in
    ``blocks``, in block order (several where Numba's SSA merges versions of a variable)."""
    defs = {}
    for label, block in blocks.items():
        for stmt in block.body:
            if isinstance(stmt, ir.Assign):
                defs.setdefault(stmt.target.name, []).append((label, stmt))
    return defs


def rebinding_roots(defs, typemap):
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


def swaps_permute(blocks, defs, group_vars):
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
    """The kernel's name of an SSA version (``B`` of ``B.2`` and of ``B.1.1``)."""
    return re.sub(r"(\.\d+)+$", "", var)


def find_rebindings(scan):
    """Fill ``scan.rebound`` (a variable that holds one array) and the
    ping-pong groups (one that holds one of several of the kernel's arrays,
    swapped by a time loop)."""
    for var, roots in rebinding_roots(scan.defs, scan.typemap).items():
        names = [scan.array_bound_to(r) for r in roots]
        if len(roots) == 1:
            scan.rebound[var] = next(iter(roots))
        elif None not in names:
            scan.groups[var] = frozenset(names)
    aliased = set()
    for var, names in scan.groups.items():
        name = version_name(var)
        scan.group_roots[name] = scan.group_roots.get(name, frozenset()) | names
        phis = {v for v, n in scan.groups.items() if n & names and len(scan.defs[v]) > 1}
        if not swaps_permute(scan.func_ir.blocks, scan.defs, phis):
            aliased.add(name)
    scan.aliased_groups = frozenset(aliased)
