"""Operands read from the array they view, at shifted indices.

A fused element loop (`array_stores.py`) reads each array operand of its
expression at the loop's index. A stencil written with slices reads one
array through many views (``f[2:, 1:-1]``, ``f[:-2, 1:-1]``, and the
views `array_expressions.py` makes of a fused temporary's operands, chained
per temporary), and each view is its own base pointer in the loop: LLVM
cannot see that ``f[1:][1:]`` and ``f[2:]`` read one element (each start is
clamped at run time), so it loads both, and NPBench's hdiff kept some 45
pointers live in a loop with 16 registers (spilled, reloaded every
iteration).

`shift` rewrites an operand ``V = A[a0:, a1:, ...]`` (slices of step 1 with
literal starts >= 0, chained) to ``A[i0 + a0, i1 + a1, ...]``. That is exact
where the loop runs at all: every operand has the destination's extents
(checked at run time before the loop), so where the loop runs, every extent
is above 0 and no start was clamped to its array's length. One pointer per
array and shift is left, equal views share their loads, and hdiff's fused
loop went from 82 to 30 ms (256x256x160 float64, Intel Xeon VM, `/tmp`
script around NPBench's source: bench/README.md, hdiff). ``A`` must be
defined once, as an argument or in the loop's block (so it holds at the
loop what it held when the view was made), and must not be the
destination's array (a read of the destination stays a read of its view,
whose overlap check is made).
"""

from numba.core import ir, types

from ..analysis.indices import index_atoms, int_constant, is_slice
from ..analysis.scan import views_array


def _slice_starts(scan, value):
    """The start of each slice of the getitem ``value`` when its index is
    slices only, each of step 1 and a literal start >= 0, else None."""
    starts = []
    for atom in index_atoms(scan, value) or ():
        if isinstance(atom, slice):
            start, step = atom.start, atom.step
        elif is_slice(scan.typemap, atom) and _slice_call_arguments(scan, atom) is not None:
            start, _, step = _slice_call_arguments(scan, atom)
        else:
            return None
        start = 0 if _is_none(scan, start) else int_constant(scan, start)
        if start is None or start < 0 or not (_is_none(scan, step) or int_constant(scan, step) == 1):
            return None
        starts.append(start)
    return starts or None


def _slice_call_arguments(scan, var):
    """(start, stop, step) of ``slice(start, stop[, step])`` (what ``a[x:y]``
    builds), or None (``slice(stop)``, or no call visible)."""
    made = scan.definition(var.name)
    if isinstance(made, ir.Expr) and made.op == "call" and len(made.args) in (2, 3) and not made.kws:
        return (list(made.args) + [None])[:3]
    return None


def _is_none(scan, atom):
    return atom is None or (isinstance(atom, ir.Var) and isinstance(scan.definition(atom.name), ir.Const)
                            and scan.definition(atom.name).value is None)


def shift(scan, block, made, name, destination):
    """(array, shift per dimension) when the operand ``name`` reads
    ``array[i + shift]`` at the loop's index ``i`` (the module's rule),
    else None. ``made``: {a view `array_expressions.py` made: (its getitem,
    its type)}; ``destination``: the array the loop stores to, or None."""
    ndim, offsets = scan.typemap.get(name, made.get(name, (None, None))[1]).ndim, None
    while True:
        value = made[name][0] if name in made else scan.definition(name)
        if not (isinstance(value, ir.Expr) and value.op in ("getitem", "static_getitem")):
            break
        starts = _slice_starts(scan, value)
        if starts is None or len(starts) > ndim:
            return None
        offsets = [a + b for a, b in zip(offsets or [0] * ndim, starts + [0] * (ndim - len(starts)))]
        name = value.value.name
    ty, found = scan.typemap.get(name), scan.defs.get(name, ())
    if offsets is None or not isinstance(ty, types.Array) or ty.ndim != ndim or len(found) != 1 \
            or not (isinstance(found[0][1].value, ir.Arg) or any(s is found[0][1] for s in block.body)) \
            or (destination is not None and views_array(scan, ir.Var(block.scope, name, block.loc), destination)):
        return None
    return name, tuple(offsets)
