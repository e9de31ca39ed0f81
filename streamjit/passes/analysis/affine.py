"""Affine index analysis on typed Numba IR: is an index ``c1*i + c2*j + e + k``?

An index is affine when it is a sum of integer-constant multiples of the
induction variables of enclosing ``range`` loops, *invariant* terms
(variables with one value for a whole execution of the loop nest: defined
outside it, or computed inside it purely from such values), and an integer
constant. Numba's IR makes the chains explicit: ``k = i + 1; out[k - 1]``
is a chain of single definitions, and constants Numba folded are ``const``
nodes. Invariant terms are keyed by their structure, so ``a.shape[1] - 1``
computed in two places is one term.

Legality (`legality.py`) proves from this form that distinct iterations
write distinct elements; the peel (`align_peel.py`) evaluates it at the
first and last iteration to check bounds and alignment before the loop
(`emit_affine`).
"""

import copy
import math
import operator
from dataclasses import dataclass, field

from numba.core import ir, types

from ... import codegen
from ...numba_internals.ir import expr_fields, set_expr_fields

_ADD = (operator.add, operator.iadd)
_SUB = (operator.sub, operator.isub)
_MUL = (operator.mul, operator.imul)
# Calls allowed inside an invariant term: pure functions of their arguments.
_PURE_CALLS = (len, min, max, int, abs, slice, codegen.smaller, codegen.larger)
_PURE_EXPRS = ("binop", "unary", "getattr", "static_getitem", "build_tuple", "cast", "getitem", "call")


@dataclass
class Affine:
    """An affine index ``sum(coeffs[loop] * loop variable) + sum(terms[key] * invariant) + const``:
    integer coefficients of the enclosing loops' variables and of invariant terms (keyed by
    their structure, ``names`` holding a variable with each one's value), and a constant."""
    coeffs: dict = field(default_factory=dict)  # Loop -> int (nonzero)
    terms: dict = field(default_factory=dict)  # structural key of an invariant value -> int
    names: dict = field(default_factory=dict)  # key -> a variable holding that value
    const: int = 0

    def key(self):
        """Everything but the constant: two indices with equal keys differ by a constant."""
        return (frozenset((l.serial, c) for l, c in self.coeffs.items()), frozenset(self.terms.items()))

    def stride_gcd(self):
        return math.gcd(*self.coeffs.values()) if self.coeffs else 0

    def only_loop(self):
        """The single loop whose variable this index depends on, if exactly one."""
        return next(iter(self.coeffs)) if len(self.coeffs) == 1 else None


def _combine(a, b, sign=1):
    out = Affine(dict(a.coeffs), dict(a.terms), {**a.names, **b.names}, a.const + sign * b.const)
    for loop, c in b.coeffs.items():
        out.coeffs[loop] = out.coeffs.get(loop, 0) + sign * c
    for k, c in b.terms.items():
        out.terms[k] = out.terms.get(k, 0) + sign * c
    out.coeffs = {l: c for l, c in out.coeffs.items() if c}
    out.terms = {k: c for k, c in out.terms.items() if c}
    return out


def _scale(a, factor):
    return Affine({l: c * factor for l, c in a.coeffs.items() if c * factor},
                  {k: c * factor for k, c in a.terms.items() if c * factor}, dict(a.names), a.const * factor)


def _is_constant(a):
    return not a.coeffs and not a.terms


def _int_const(value):
    return isinstance(value, ir.Const) and isinstance(value.value, int) and not isinstance(value.value, bool)


class AffineAnalyzer:
    """Affine forms of index variables inside the nest rooted at ``root``
    (a `Loop`, or None outside every loop)."""

    def __init__(self, scan, root):
        self.scan = scan
        self.inside = root.body if root is not None else frozenset()
        self.stored = {a.array_var for a in scan.stores()}

    def _outside(self, name):
        return not (self.scan.def_labels(name) & self.inside)

    def term_key(self, name):
        """Structural key of an invariant variable, or None if it varies in the nest."""
        name = self.scan.canonical(name)
        if self._outside(name):
            return ("var", name)
        value = self.scan.definition(name)
        if isinstance(value, ir.Const):
            return ("const", repr(value.value))
        if isinstance(value, (ir.Global, ir.FreeVar)):
            return ("global", id(value.value))
        if not isinstance(value, ir.Expr) or value.op not in _PURE_EXPRS:
            return None
        if value.op == "call":
            func = self.scan.definition(value.func.name)
            if not isinstance(func, (ir.Global, ir.FreeVar)) or func.value not in _PURE_CALLS or value.kws:
                return None
        if value.op == "getitem" and self.scan.canonical(value.value.name) in self.stored:
            return None  # an element of an array the kernel writes may change
        parts = [value.op]
        for attr, operand in sorted(expr_fields(value).items()):
            if isinstance(operand, ir.Var):
                operand = self.term_key(operand.name)
                if operand is None:
                    return None
            elif isinstance(operand, (list, tuple)):
                operand = tuple(self.term_key(v.name) if isinstance(v, ir.Var) else repr(v) for v in operand)
                if None in operand:
                    return None
            elif attr not in ("fn", "attr", "index", "immutable_fn"):
                continue
            parts.append((attr, operand if isinstance(operand, tuple) else repr(operand)))
        return tuple(parts)

    def of(self, atom):
        """Affine form of an index atom (Var or int), or None."""
        if isinstance(atom, bool):
            return None
        if isinstance(atom, int):
            return Affine(const=atom)
        if not isinstance(atom, ir.Var):
            return None
        name = self.scan.canonical(atom.name)
        loop = self.scan.loop_of_induction(name)
        if loop is not None:
            return Affine(coeffs={loop: 1})
        value = self.scan.definition(name)
        if _int_const(value):
            return Affine(const=value.value)
        if isinstance(value, ir.Expr) and value.op in ("binop", "inplace_binop"):
            left, right = self.of(value.lhs), self.of(value.rhs)
            if left is not None and right is not None:
                if value.fn in _ADD:
                    return _combine(left, right)
                if value.fn in _SUB:
                    return _combine(left, right, -1)
                if value.fn in _MUL and _is_constant(left):
                    return _scale(right, left.const)
                if value.fn in _MUL and _is_constant(right):
                    return _scale(left, right.const)
        if isinstance(value, ir.Expr) and value.op == "static_getitem" and isinstance(value.index, int):
            # an element of a tuple built in the IR (`i, x = k, a[k]` from `canonical_loops.py`)
            items = self.scan.definition(value.value.name)
            if isinstance(items, ir.Expr) and items.op == "exhaust_iter":
                items = self.scan.definition(items.value.name)
            if isinstance(items, ir.Expr) and items.op == "build_tuple" and 0 <= value.index < len(items.items):
                return self.of(items.items[value.index])
        if isinstance(value, ir.Expr) and value.op == "unary" and value.fn in (operator.neg, operator.pos):
            inner = self.of(value.value)
            if inner is not None:
                return _scale(inner, -1 if value.fn is operator.neg else 1)
        if not isinstance(self.scan.typemap.get(name), types.Integer):
            return None
        key = self.term_key(name)
        return None if key is None else Affine(terms={key: 1}, names={key: name})


def _emit_value(scan, name, emitter, inside):
    """A variable holding ``name``'s value at a point before the loop whose
    blocks are ``inside``: the variable itself when defined outside that
    loop, else its (pure, invariant) definition re-emitted."""
    name = scan.canonical(name)
    if not (scan.def_labels(name) & inside):
        return ir.Var(emitter.scope, name, emitter.loc)
    value = copy.copy(scan.definition(name))
    if isinstance(value, ir.Expr):
        fields = dict(expr_fields(value))
        set_expr_fields(value, fields)
        for attr, operand in fields.items():
            if isinstance(operand, ir.Var):
                fields[attr] = _emit_value(scan, operand.name, emitter, inside)
            elif isinstance(operand, list):
                fields[attr] = [_emit_value(scan, v.name, emitter, inside) if isinstance(v, ir.Var) else v
                                    for v in operand]
    return emitter.assign(value, hint="term")


def emit_affine(scan, affine, loop, value, emitter):
    """Emit ``affine`` with ``loop``'s variable replaced by ``value`` (a Var
    or int), at ``loop``'s preheader; other loops' variables are read from
    their induction variables. Returns a Var."""
    parts = []
    for other, c in affine.coeffs.items():
        parts.append((c, value if other is loop else ir.Var(emitter.scope, other.induction, emitter.loc)))
    for key, c in affine.terms.items():
        parts.append((c, _emit_value(scan, affine.names[key], emitter, loop.body)))
    # start from a positive term, so no `0 - x` changes an unsigned type
    parts.sort(key=lambda p: p[0] < 0)
    total = None
    for c, term in parts:
        term = emitter.value(term)
        scaled = term if abs(c) == 1 else emitter.binop(operator.mul, abs(c), term)
        if total is None:
            total = scaled if c > 0 else emitter.sub(0, scaled)
        else:
            total = emitter.add(total, scaled) if c > 0 else emitter.sub(total, scaled)
    if total is None:
        return emitter.const(affine.const)
    return emitter.add(total, affine.const) if affine.const else total


def emit_index(scan, dims, loop, value, emitter):
    """Emit the index whose dimensions are the affine ``dims``, with
    ``loop``'s variable replaced by ``value`` (`emit_affine`). Returns a Var
    (a tuple for several dimensions)."""
    return emitter.index([emit_affine(scan, d, loop, value, emitter) for d in dims])
