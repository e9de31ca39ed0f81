"""Affine index analysis: is an index ``c1*i + c2*j + e + k``?

An index is affine when it is a sum of integer-constant multiples of the
loop variables of enclosing ``range`` loops, *invariant* terms (expressions
whose names are not assigned anywhere in the loop nest, so they have one
value for the whole nest), and an integer constant. Locals assigned once in
the nest from an affine expression, before their use, are substituted.

Legality (`legality.py`) proves from this form that distinct iterations
write distinct elements; the peel (`align_peel.py`) evaluates it at the
first and last iteration to check bounds and alignment before the loop.
"""

import ast
import math
from dataclasses import dataclass, field

# Calls allowed inside an invariant term: pure functions of their arguments.
_PURE_CALLS = ("len", "min", "max", "int", "abs")


@dataclass
class Affine:
    coeffs: dict = field(default_factory=dict)  # Loop -> int (nonzero)
    terms: dict = field(default_factory=dict)  # ast.dump of an invariant expr -> int
    exprs: dict = field(default_factory=dict)  # ast.dump -> the expr itself
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
    out = Affine(dict(a.coeffs), dict(a.terms), {**a.exprs, **b.exprs}, a.const + sign * b.const)
    for loop, c in b.coeffs.items():
        out.coeffs[loop] = out.coeffs.get(loop, 0) + sign * c
    for k, c in b.terms.items():
        out.terms[k] = out.terms.get(k, 0) + sign * c
    out.coeffs = {l: c for l, c in out.coeffs.items() if c}
    out.terms = {k: c for k, c in out.terms.items() if c}
    return out


def _scale(a, factor):
    return Affine({l: c * factor for l, c in a.coeffs.items() if c * factor},
                  {k: c * factor for k, c in a.terms.items() if c * factor}, dict(a.exprs), a.const * factor)


def _is_constant(a):
    return not a.coeffs and not a.terms


class AffineAnalyzer:
    """Affine forms of index expressions inside one loop nest."""

    def __init__(self, scan, nest_root):
        self.scan = scan
        self.root = nest_root

    def _assigned_in_nest(self, name):
        return self.root is not None and bool(self.scan.assignments_within(name, self.root.node))

    def is_invariant(self, expr):
        """True if ``expr`` has one value for the whole nest and no side effects."""
        for node in ast.walk(expr):
            if isinstance(node, ast.Name) and self._assigned_in_nest(node.id):
                return False
            if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id in _PURE_CALLS):
                return False
            if isinstance(node, (ast.NamedExpr, ast.Lambda, ast.Await, ast.Yield, ast.YieldFrom)):
                return False
            if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and self.scan.stores(node.value.id):
                return False  # an element of an array the kernel writes may change
        return True

    def of(self, expr, loops):
        """Affine form of ``expr`` used inside ``loops`` (outermost first), or None."""
        if isinstance(expr, ast.Constant) and type(expr.value) is int:
            return Affine(const=expr.value)
        if isinstance(expr, ast.Name):
            return self._of_name(expr, loops)
        if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, (ast.USub, ast.UAdd)):
            inner = self.of(expr.operand, loops)
            return None if inner is None else _scale(inner, -1 if isinstance(expr.op, ast.USub) else 1)
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Add, ast.Sub)):
            left, right = self.of(expr.left, loops), self.of(expr.right, loops)
            if left is None or right is None:
                return None
            return _combine(left, right, 1 if isinstance(expr.op, ast.Add) else -1)
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mult):
            left, right = self.of(expr.left, loops), self.of(expr.right, loops)
            if left is not None and right is not None:
                if _is_constant(left):
                    return _scale(right, left.const)
                if _is_constant(right):
                    return _scale(left, right.const)
        return self._invariant_term(expr)

    def _invariant_term(self, expr):
        if not self.is_invariant(expr):
            return None
        key = ast.dump(expr)
        return Affine(terms={key: 1}, exprs={key: expr})

    def _of_name(self, expr, loops):
        name = expr.id
        loop = next((l for l in reversed(loops) if l.var == name), None)
        defs = self.scan.assignments_within(name, self.root.node) if self.root is not None else []
        if loop is not None:
            return Affine(coeffs={loop: 1}) if defs == [loop.node] else None
        if not defs:
            return self._invariant_term(expr)
        if len(defs) == 1 and self._dominates_use(defs[0], expr):
            definition = defs[0]
            outer = tuple(l for l in loops if self.scan.is_inside(definition, l.node))
            return self.of(definition.value, outer)
        return None

    def _dominates_use(self, definition, use):
        """A plain ``name = value`` that runs before ``use`` in every iteration."""
        if not (isinstance(definition, ast.Assign) and len(definition.targets) == 1
                and isinstance(definition.targets[0], ast.Name)):
            return False
        block_owner = self.scan.parents[definition]
        node = use
        while node is not None and self.scan.parents.get(node) is not block_owner:
            node = self.scan.parents.get(node)
        if node is None:
            return False
        for block in ("body", "orelse", "finalbody"):
            stmts = getattr(block_owner, block, None)
            if isinstance(stmts, list) and definition in stmts and node in stmts:
                return stmts.index(definition) < stmts.index(node)
        return False


def to_ast(affine, values):
    """Build the expression for ``affine`` with loop variables replaced by
    ``values`` (Loop -> ast.expr); other loops keep their variable names."""
    parts = []
    for loop, c in affine.coeffs.items():
        parts.append((c, values.get(loop) or ast.Name(id=loop.var, ctx=ast.Load())))
    for key, c in affine.terms.items():
        parts.append((c, affine.exprs[key]))
    if affine.const or not parts:
        parts.append((1 if affine.const >= 0 else -1, ast.Constant(value=abs(affine.const))))
    # Start from a positive term where possible, so no spurious `0 + x` changes
    # the type Numba infers for an unsigned `x`.
    parts.sort(key=lambda p: p[0] < 0)
    expr = None
    for c, term in parts:
        scaled = term if abs(c) == 1 else ast.BinOp(left=ast.Constant(value=abs(c)), op=ast.Mult(), right=term)
        if expr is None:
            expr = scaled if c > 0 else ast.UnaryOp(op=ast.USub(), operand=scaled)
        else:
            expr = ast.BinOp(left=expr, op=ast.Add() if c > 0 else ast.Sub(), right=scaled)
    return expr
