"""Whether Numba's own code for a statement may raise: the one answer that
fusion (a temporary's error must not move past another statement's) and the
staged loop (a strip held in its buffer is lost when the loop leaves) share.

Calls are judged by a whitelist, as fusion's "may write" is: a scalar
constructor (``np.float64(x)``), a ufunc or a `math` function on scalars,
Python's scalar built-ins and streamjit's own intrinsics raise nothing; any
other call (a dispatcher, a method, a ctypes or cffi function, an overload)
may. Operators: a division, remainder or power may raise ZeroDivisionError
under the ``python`` error model, and under either where an operand is not
a float (integer division, an integer power, a complex division), unless
its divisor is a non-zero constant (an exponent a constant >= 0); an
operation on arrays may raise where shapes do not broadcast; an index may
raise IndexError under boundscheck; a ``print`` is observable as a raise is.
"""

import operator

import numpy as np
from numba.core import ir, types

# Python's scalar built-ins that Numba compiles without a raise on scalars
SCALAR_BUILTINS = frozenset({slice, len, abs, min, max, int, float, bool, complex, round})
RAISING_OPERATORS = frozenset({operator.truediv, operator.floordiv, operator.mod, operator.pow,
                               operator.itruediv, operator.ifloordiv, operator.imod, operator.ipow})
_POWERS = (operator.pow, operator.ipow)
_INDEX = "indexes under boundscheck, which may raise IndexError"


def _constant(definition, var):
    value = definition(var.name) if definition else None
    return value.value if isinstance(value, ir.Const) and isinstance(value.value, (int, float)) else None


def _raising_operator(typemap, expr, definition, raise_on_fp_zero_division):
    """Why ``expr`` (a binop or inplace_binop) may raise ZeroDivisionError, or None."""
    fn = expr.fn if expr.op == "binop" else expr.immutable_fn
    if fn not in RAISING_OPERATORS and expr.fn not in RAISING_OPERATORS:
        return None
    divisor = _constant(definition, expr.rhs)
    if divisor is not None and (divisor >= 0 if fn in _POWERS or expr.fn in _POWERS else divisor != 0):
        return None
    floats = all(isinstance(typemap.get(v.name), types.Float) for v in (expr.lhs, expr.rhs))
    if floats and not raise_on_fp_zero_division:
        return None
    return f"computes '{getattr(expr.fn, '__name__', expr.fn)}', which may raise ZeroDivisionError"


def _raising_call(typemap, expr):
    """Why the call ``expr`` may raise, or None (the whitelist above)."""
    func = typemap.get(expr.func.name)
    if isinstance(func, types.NumberClass):
        return None
    key = func.typing_key if isinstance(func, types.Function) else None
    module = getattr(key, "__module__", None) or ""
    if isinstance(key, np.ufunc) or module == "math" or key in SCALAR_BUILTINS or module.startswith("streamjit."):
        return None
    if isinstance(func, types.Dispatcher):
        return "calls another kernel, which may raise"
    return f"calls {getattr(key, '__name__', None) or func}, which may raise"


def why_may_raise(typemap, stmt, definition=None, raise_on_fp_zero_division=True, boundscheck=False):
    """Why Numba's own code for ``stmt`` may raise (or print), or None: a
    verb phrase ('computes ...', 'calls ...', 'prints').
    ``definition``: a variable's defining value by name, for constant
    divisors (None: no divisor is taken as constant); the other two: the
    compile's error model and boundscheck."""
    if isinstance(stmt, ir.Print):
        return "prints"
    if isinstance(stmt, (ir.SetItem, ir.StaticSetItem)):
        return _INDEX if boundscheck else None
    value = getattr(stmt, "value", None)
    if not isinstance(value, ir.Expr):
        return None
    if value.op in ("getitem", "static_getitem"):
        return _INDEX if boundscheck else None
    if value.op not in ("binop", "inplace_binop", "unary", "call"):
        return None
    if any(isinstance(typemap.get(v.name), types.Array) for v in value.list_vars()):
        return "operates on arrays, whose shapes may not broadcast"
    if value.op == "call":
        return _raising_call(typemap, value)
    if value.op == "unary":
        return None
    return _raising_operator(typemap, value, definition, raise_on_fp_zero_division)
