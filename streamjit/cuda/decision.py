"""Which arrays a numba-cuda kernel (`sj.cuda.jit`) streams, by the CPU's rule.

A loop function (``target="cuda"``) gets the CPU's own decision from its
typed IR (`legality.py`). A numba-cuda kernel cannot: the CPU front end
cannot type ``cuda.grid``, ``cuda.shared.array`` and the rest, and
numba-cuda's own IR is a separate copy of Numba's that the CPU passes do
not accept. So its syntax tree is read here, for the facts the CPU's rule
(`passes.accesses.streamed_store_names`) asks of the typed IR, and the rule
is the CPU's: ``stream_stores=True`` streams every array parameter the
kernel stores to except those only updated in place (``a[i] += x``,
``a[i] = a[i] * s``; stores to one constant element, boundary values, aside)
and those a loop loads back at another element (``out[i] = out[i - 1] +
a[i]``), with the CPU's notes; ``stream_loads=True`` every array parameter loaded and
never stored. Under ``threshold="auto"`` (the default, as on the CPU),
named arrays follow the same rule: those only updated in place or loaded
back stay plain, with the CPU's notes (`passes.accesses.AUTO_NOTE`); with
``threshold=None`` what is named streams. (A numba-cuda kernel allocates
no NumPy arrays, so the CPU's other exception, fresh arrays, never
applies.) A variable is an alias of a
parameter as on the CPU (`rebindings.rebinding_roots`): whichever of its
assignments ran, it holds that array, through chains of copies
(``o = out; p = o``) and in-place operators (a loop function takes its
aliases from the CPU's typed IR, `legality.py`). ``tests/test_cuda_decision.py``
compares both targets' decisions and aliases on the same kernels.
"""

import ast

from ..passes.accesses import AUTO_NOTE, IN_PLACE_NOTE, READ_BACK_NOTE
from .source import assigned_names, element, used_names


def aliases(tree, types):
    """{name: array parameter} for each variable that holds the one array
    parameter ``types`` names whichever of its assignments ran: each is a
    copy of the parameter or of such a variable, or an in-place operator on
    it (``o += 1`` leaves ``o`` holding its array); the parameter itself is
    bound only by in-place operators."""
    copies, kept = {}, set()  # name -> the names copied into it; the Name nodes of copies and in-place operators
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and isinstance(node.value, ast.Name):
            copies.setdefault(node.targets[0].id, []).append(node.value.id)
            kept.add(id(node.targets[0]))
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            kept.add(id(node.target))
    rebound = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)
               and isinstance(node.ctx, (ast.Store, ast.Del)) and id(node) not in kept}
    found = {}
    for name in copies:
        roots, stack, seen = set(), [name], set()
        while stack:
            var = stack.pop()
            if var not in seen:
                seen.add(var)
                stack.extend(copies.get(var, ()))
                if var in rebound or var not in copies:
                    roots.add(None if var in rebound else var)
        root = roots.pop() if len(roots) == 1 else None
        if hasattr(types.get(root), "ndim"):
            found[name] = root
    return found


def _constant(index):
    """``0``, ``-1``: an index the kernel does not compute."""
    if isinstance(index, ast.UnaryOp) and isinstance(index.op, ast.USub):
        index = index.operand
    return isinstance(index, ast.Constant) and isinstance(index.value, int)


def _key(indices):
    """The indices when each is a variable (the CPU compares index
    variables, not expressions: two ``i + 1`` are two values), else None."""
    return tuple(i.id for i in indices) if all(isinstance(i, ast.Name) for i in indices) else None


def _straight(stmt):
    """A statement that runs all of itself in one basic block."""
    return isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr)) and not any(
        isinstance(n, (ast.IfExp, ast.BoolOp, ast.Lambda, ast.comprehension, ast.NamedExpr)) for n in ast.walk(stmt))


def _loads_of(kernel, node, array):
    return [hit[1] for sub in ast.walk(node) if isinstance(sub, ast.Subscript) and isinstance(sub.ctx, ast.Load)
            for hit in [element(sub, kernel)] if hit and hit[0] == array]


def _updates_in_place(kernel, body, at, array, indices):
    """Whether the element store to ``array[indices]`` in ``body[at]``
    writes what that basic block read of the same element before it: an
    ``a[i] += x``, or a load of ``a[i]`` in the statement's value or in a
    statement before it in the block, with ``i`` not rebound in between
    (the CPU's `accesses._rewrites_what_it_read`)."""
    key, stmt = _key(indices), body[at]
    if key is None or not _straight(stmt):
        return False
    if isinstance(stmt, ast.AugAssign):
        return True
    for start in range(at, -1, -1):
        if not _straight(body[start]):
            return False
        reads = body[start].value if start == at else body[start]
        if key in map(_key, _loads_of(kernel, reads, array)) and (
                start == at or not set(key) & assigned_names(body[start:at])):
            return True
    return False


def _element_stores(kernel):
    """[(array, indices, statement body, position)] of every element store."""
    found = []
    for node in ast.walk(kernel.tree):
        for field_name in ("body", "orelse", "finalbody"):
            body = getattr(node, field_name, None)
            for at, stmt in enumerate(body if isinstance(body, list) else ()):
                # (an annotation without a value stores nothing)
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] \
                    if isinstance(stmt, ast.AugAssign) or isinstance(stmt, ast.AnnAssign) and stmt.value else []
                for target in targets:
                    for sub in ast.walk(target):
                        hit = isinstance(sub, ast.Subscript) and isinstance(sub.ctx, ast.Store) \
                            and element(sub, kernel)
                        if hit:
                            found.append((hit[0], hit[1], body, at))
    return found


def _read_back(kernel, array):
    """``(load line, store line)``: an element load of ``array`` at another
    index than an element store beside it, inside the store's innermost
    ``for`` loop (``out[i] = out[i - 1] + a[i]``: the CPU's
    `accesses.read_back`, indices compared as expressions); None if none."""
    parents = {child: node for node in ast.walk(kernel.tree) for child in ast.iter_child_nodes(node)}
    for sub in ast.walk(kernel.tree):
        hit = isinstance(sub, ast.Subscript) and isinstance(sub.ctx, ast.Store) and element(sub, kernel)
        if not hit or hit[0] != array:
            continue
        loop = parents.get(sub)
        while loop is not None and not isinstance(loop, ast.For):
            loop = parents.get(loop)
        if loop is None:
            continue
        key = [ast.dump(i) for i in hit[1]]
        # (a name bound twice in the loop may hold two values: ``i = k; t =
        # b[i]; i = k + 1; b[i] = t`` reads another element than it writes)
        bound = [n.id for n in ast.walk(loop) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]
        rebound = {n for n in bound if bound.count(n) > 1}
        for load in ast.walk(loop):
            other = isinstance(load, ast.Subscript) and isinstance(load.ctx, ast.Load) and element(load, kernel)
            if other and other[0] == array and ([ast.dump(i) for i in other[1]] != key
                                                or rebound & set().union(*map(used_names, hit[1]))):
                return load.lineno, sub.lineno
    return None


def _measured_slower(kernel, accesses, arrays):
    """``(only updated in place, {array: (load line, store line)} loaded
    back)`` among ``arrays``: what the CPU's rule leaves plain
    (`accesses._measured_slower`, for parameters)."""
    in_place = set()
    for array in arrays:
        mine = [(indices, body, at) for a, indices, body, at in accesses
                if a == array and not all(map(_constant, indices))]
        if mine and all(_updates_in_place(kernel, body, at, array, indices) for indices, body, at in mine):
            in_place.add(array)
    read_backs = {array: lines for array in sorted(set(arrays) - in_place)
                  for lines in [_read_back(kernel, array)] if lines}
    return in_place, read_backs


def named(kernel, stores, loads, measured=False):
    """``(streamed stores, streamed loads, notes)`` for the options
    ``stores`` / ``loads`` (True, False or names): True by the CPU's rule
    above, and names too when ``measured`` (``threshold="auto"``); notes
    are (array, text) for the report."""
    accesses = _element_stores(kernel)
    stored = {array for array, *_ in accesses}
    loaded = {array for sub in ast.walk(kernel.tree) if isinstance(sub, ast.Subscript)
              and isinstance(sub.ctx, ast.Load) for array, _ in [element(sub, kernel) or (None, None)] if array}
    notes = []
    if stores is True or measured and stores:
        candidates = stored if stores is True else stored & set(stores)
        in_place, read_backs = _measured_slower(kernel, accesses, candidates)
        in_place_note = IN_PLACE_NOTE if stores is True else AUTO_NOTE.format("an update in place")
        notes = [(array, in_place_note) for array in sorted(in_place)] + [
            (array, READ_BACK_NOTE.format(load=lines[0], store=lines[1])) for array, lines in read_backs.items()]
        stores = (stored if stores is True else set(stores)) - in_place - set(read_backs)
    loads = loaded - stored if loads is True else loads
    return frozenset(stores or ()), frozenset(loads or ()), notes
