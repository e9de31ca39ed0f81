"""What one iteration of a loop computes: its inner loops, the operations
over arrays it runs (loops of their own), and its floating-point operations.

`stream_loads.py` leaves a load without a prefetch where its loop does much
work per element (the load waits for nothing); `loop_copies.py` keeps the
stores of a loop that stays scalar plain where it computes more per element
than the machine profile's ``scalar_nt_ops`` row allows.
"""

from numba.core import ir, types

from ... import codegen

# Floating-point operations per loaded element from which `stream_loads.py`
# takes a loop as compute-bound (a call to a function, np.exp or math.sqrt,
# counts as that many by itself): an estimate (a vectorized core does about
# 16 such operations in the time one core's share of memory bandwidth brings
# an element in). On the Intel Xeon VM (family 6 model 167), in a chain of
# dependent operations per load, a source prefetch gained up to 12 (1.74-1.80x
# njit against 1.23-1.46x) and nothing from 16 on (bench/dependent_chains.py,
# 128 MiB float32): the cut-off lies there; not yet a row of the machine profile.
COMPUTE_BOUND_OPS = 16
_ARITHMETIC = ("binop", "inplace_binop", "unary")


def own_labels(scan, loop):
    """``(the blocks of loop outside its inner loops, the inner loops)``."""
    inner = [l for l in scan.loops if l.parent is loop]
    return loop.body.difference(*(l.body for l in inner)), inner


def _statements(scan, labels):
    """The assignments in the blocks ``labels``, as scanned (before
    `align_peel.py` adds its own calls)."""
    return [stmt for defs in scan.defs.values() for label, stmt in defs if label in labels]


def array_operation_line(scan, labels):
    """The line of an operation over arrays (``A[i, :i] @ y[:i]``,
    ``np.sum(row)``, ``row.sum()``, ``row * 2.0``: a loop of its own, in
    Numba's code or a library's) in the blocks ``labels``, or None. Slicing
    is not one."""
    for stmt in _statements(scan, labels):
        value = stmt.value
        if not isinstance(value, ir.Expr) or value.op not in ("call", *_ARITHMETIC):
            continue
        operands = [scan.typemap.get(v.name) for v in (value.args if value.op == "call" else value.list_vars())]
        if value.op == "call":  # (a method's array: ``row.sum()``)
            operands.append(getattr(scan.typemap.get(value.func.name), "this", None))
        if any(isinstance(t, types.Array) for t in operands) \
                and not isinstance(scan.typemap.get(stmt.target.name), (types.Integer, types.Boolean)):
            return stmt.loc.line
    return None


def float_operations(scan, loop):
    """The floating-point operations one iteration of ``loop`` computes
    outside its inner loops: one per arithmetic operation with a float (or
    complex) result, `COMPUTE_BOUND_OPS` per call returning one; a call to a
    number type (``np.float32(0.2)``), a conversion, counts none."""
    ops = 0
    for stmt in _statements(scan, own_labels(scan, loop)[0]):
        value = stmt.value
        if not (isinstance(value, ir.Expr) and isinstance(scan.typemap.get(stmt.target.name), (types.Float,
                                                                                               types.Complex))):
            continue
        if value.op in _ARITHMETIC or _operator_applied(scan, value):
            ops += 1
        elif value.op == "call" and not isinstance(scan.typemap.get(value.func.name), types.NumberClass):
            ops += COMPUTE_BOUND_OPS
    return ops


def _operator_applied(scan, value):
    """Whether ``value`` applies an operator (``operator.mul``) through a
    call, as a fused element does (`codegen.with_numpy_errors`): one
    operation, not a function's many."""
    if value.op != "call" or not value.args:
        return False
    called, applied = scan.definition(value.func.name), scan.definition(value.args[0].name)
    return (isinstance(called, ir.Global) and called.value is codegen.with_numpy_errors
            and isinstance(applied, ir.Global) and getattr(applied.value, "__module__", None) == "_operator")
