"""Legality of ``stream_stores``: can two stores to a streamed array alias?

As in Halide, a stage may stream its stores only if every element is written
at most once per execution of the loop nest. This pass proves that from the
syntax tree, conservatively, and otherwise raises `StreamLegalityError` at
the offending line. Accepted:

- every store index is affine (`affine.py`) in the enclosing ``range`` loop
  variables, and for each enclosing loop some dimension of the index is
  ``c*var + invariant`` with ``c != 0`` and no other loop variable, so
  distinct iterations write distinct elements;
- two store statements to the same array in one nest either have the same
  index in mutually exclusive ``if``/``else`` branches, or differ in some
  dimension by a constant that no iteration step can make up (``out[2*i]``
  and ``out[2*i+1]``);
- a store outside every loop runs once per call.

Rejected: scatter (``out[idx[i]]``), stores that do not depend on an
enclosing loop (``out[0]`` in a loop, ``out[i]`` in an inner ``j`` loop),
stores inside ``while`` or non-``range`` loops, and a streamed parameter
reassigned in the body.
"""

import ast

from ..errors import StreamLegalityError
from .affine import Affine, AffineAnalyzer


def _fail(filename, line, array, reason):
    raise StreamLegalityError(f"{filename}:{line}: cannot stream stores to '{array}': {reason}")


def store_index(scan, store):
    """Affine forms of a store's index dimensions (None where not affine)."""
    analyzer = AffineAnalyzer(scan, store.loops[0] if store.loops else None)
    dims = []
    for dim in store.dims:
        if isinstance(dim, ast.Slice):
            # A slice with invariant bounds covers the same elements in every
            # iteration: like an invariant index, other dimensions must differ.
            bounds = [b for b in (dim.lower, dim.upper, dim.step) if b is not None]
            invariant = all(analyzer.is_invariant(b) for b in bounds)
            dims.append(Affine(terms={ast.dump(dim): 1}) if invariant else None)
        else:
            dims.append(analyzer.of(dim, store.loops))
    return dims


def _check_single_store(scan, store, filename):
    for loop in store.loops:
        if not loop.is_range:
            kind = "while" if isinstance(loop.node, ast.While) else "non-range for"
            _fail(filename, store.lineno, store.array,
                  f"the store is inside a {kind} loop (line {loop.node.lineno}), whose iterations may write the same element")
    dims = store_index(scan, store)
    if any(d is None for d in dims):
        _fail(filename, store.lineno, store.array,
              "the index is not an affine function of range() loop variables (a scatter or computed index "
              "may write one element twice)")
    for loop in store.loops:
        if not any(d.only_loop() is loop for d in dims):
            if not any(loop in d.coeffs for d in dims):
                reason = (f"the index does not depend on the loop variable '{loop.var}' (line {loop.node.lineno}), "
                          "so every iteration of that loop writes the same element")
            else:
                reason = (f"the loop variable '{loop.var}' only appears mixed with other loop variables, "
                          "so distinct iterations may write the same element")
            _fail(filename, store.lineno, store.array, reason)
    return dims


def _exclusive(scan, a, b):
    """True if statements ``a`` and ``b`` sit in opposite branches of one ``if``."""
    ancestors_a = []
    node = a
    while node is not None:
        ancestors_a.append(node)
        node = scan.parents.get(node)
    node, child = b, None
    while node is not None and node not in ancestors_a:
        node, child = scan.parents.get(node), node
    if not isinstance(node, ast.If) or child is None:
        return False
    child_a = ancestors_a[ancestors_a.index(node) - 1]
    return (child_a in node.body) != (child in node.body)


def _provably_disjoint(dims_a, dims_b):
    if len(dims_a) != len(dims_b):
        return False
    for da, db in zip(dims_a, dims_b):
        if da.key() == db.key():
            diff, step = da.const - db.const, da.stride_gcd()
            if diff and (step == 0 or diff % step):
                return True
    return False


def _same_index(dims_a, dims_b):
    return len(dims_a) == len(dims_b) and all(
        da.key() == db.key() and da.const == db.const for da, db in zip(dims_a, dims_b))


def check_stream_stores(scan, arrays, filename):
    """Raise `StreamLegalityError` unless streaming stores to ``arrays`` is safe."""
    for array in arrays:
        for stmt in scan.assignments.get(array, []):
            _fail(filename, stmt.lineno, array, "the parameter is reassigned in the kernel")
        indexed = [(s, _check_single_store(scan, s, filename)) for s in scan.stores(array)]
        for n, (a, dims_a) in enumerate(indexed):
            for b, dims_b in indexed[n + 1:]:
                if not a.loops or not b.loops or a.loops[0] is not b.loops[0]:
                    continue
                if _provably_disjoint(dims_a, dims_b):
                    continue
                if _same_index(dims_a, dims_b) and _exclusive(scan, a.stmt, b.stmt):
                    continue
                _fail(filename, b.lineno, array,
                      f"this store and the one at line {a.lineno} may write the same element")
