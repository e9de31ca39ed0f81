"""Numba IR: the fields of an expression and a function's table of
definitions, which passes that insert statements keep up to date."""

from numba.core.ir_utils import build_definitions


def rebuild_definitions(func_ir):
    """Rebuild ``func_ir``'s table of each variable's definitions from its
    blocks (which ``ir_utils.get_definition`` and ``find_callname`` read),
    as Numba's own passes do after inserting statements."""
    func_ir._definitions = build_definitions(func_ir.blocks)


def expr_fields(expr):
    """The ``{field: value}`` dict of an ``ir.Expr`` (``op``, ``loc`` and its
    operands: ``fn``/``lhs``/``rhs``, ``value``/``index``, ``func``/``args``, ...)."""
    return expr._kws


def set_expr_fields(expr, fields):
    """Replace the fields (``fn``, ``args``, ``index``...) of the Numba IR
    expression ``expr`` with the dict ``fields``, as a pass rewriting it in
    place does."""
    expr._kws = fields
