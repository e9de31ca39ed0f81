"""Which loops of a kernel call the C math library one element at a time,
for `stream_report` (``report.math_calls``): read off the final LLVM IR
(calls of ``sin``, ``llvm.sin.v4f64`` the backend splits) and placed at the
kernel's source lines by its typed Numba IR. A function whose loops call
glibc's vector versions (``_ZGVdN4v_sin``: `post_o3/vector_math.py`, under
fastmath) is vectorized for that function: its scalar calls are the vector
loop's remainder and the peeled head loops."""

from numba import types
from numba.core import config, ir
from numba.core.analysis import compute_cfg_from_blocks

from ..llvm_text.math_names import math_call, vector_version_of
from ..post_o3 import vector_math

# NumPy's names for the math functions, where NumPy's differ (`math_call_lines`
# reads NumPy's ufuncs and Python's math module)
_NUMPY_NAMES = {"asin": "arcsin", "acos": "arccos", "atan": "arctan", "atan2": "arctan2", "asinh": "arcsinh",
                "acosh": "arccosh", "atanh": "arctanh", "pow": "power"}


def _math_function(callee):
    """The math-library function ``callee`` (an LLVM function name) calls, or None."""
    call = math_call(callee)
    return call[0] if call else None


def scalar_math_calls(functions):
    """The math-library functions (`math_names.MATH_FUNCTIONS`) that loops of the LLVM
    ``functions`` call one element at a time: scalar calls, and vector
    intrinsics the backend splits into scalar calls, in a function whose
    loops call no vector version of that function (libmvec's)."""
    found = set()
    for function in functions:
        loops = {label for _, body in function.loops() for label in body}
        calls = [inst.callee for block in function.blocks if block.label in loops for inst in block.insts
                 if inst.opcode == "call"]
        vectorized = set(filter(None, map(vector_version_of, calls)))
        found.update(name for name in map(_math_function, calls) if name and name not in vectorized)
    return found


def _expression_functions(expr):
    """The functions an ``arrayexpr`` tree (`numba.np.ufunc.array_exprs`) applies."""
    if isinstance(expr, tuple) and len(expr) == 2 and isinstance(expr[1], list):
        yield expr[0]
        for operand in expr[1]:
            yield from _expression_functions(operand)


def math_call_lines(blocks, typemap, names):
    """``{line: {name as called: its `math_names.MATH_FUNCTIONS` name}}``: where the
    typed Numba IR ``blocks`` call the math functions ``names``, by Python's
    math module's or NumPy's name, in a call inside a loop or on an array,
    or in an array expression."""
    wanted = {alias: name for name in names for alias in (name, _NUMPY_NAMES.get(name, name))}
    in_loops = {label for loop in compute_cfg_from_blocks(blocks).loops().values() for label in loop.body}
    lines = {}
    for label, block in blocks.items():
        for stmt in block.body:
            if not (isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr)):
                continue
            expr = stmt.value
            if expr.op == "call":
                if label not in in_loops and not any(isinstance(typemap.get(a.name), types.Array) for a in expr.args):
                    continue
                functions = [getattr(typemap.get(expr.func.name), "typing_key", None)]
            elif expr.op == "arrayexpr":
                functions = list(_expression_functions(expr.expr))
            else:
                continue
            for function in functions:
                alias = getattr(function, "__name__", None)
                if alias in wanted:
                    lines.setdefault(stmt.loc.line, {})[alias] = wanted[alias]
    return lines


def math_calls(functions, annotation=None):
    """``[(line or None, names)]``: the scalar math calls in loops of the
    LLVM ``functions`` (`scalar_math_calls`), by the source line that calls
    them where the typed IR (``annotation``, Numba's ``TypeAnnotation``;
    a string for a compile loaded from the cache) shows one; None for the rest."""
    found = scalar_math_calls(functions)
    if not found:
        return []
    typed = hasattr(annotation, "blocks")
    lines = math_call_lines(annotation.blocks, annotation.typemap, found) if typed else {}
    placed = {name for called in lines.values() for name in called.values()}
    rows = [(line, tuple(sorted(called))) for line, called in sorted(lines.items())]
    return rows + ([(None, tuple(sorted(found - placed)))] if found - placed else [])


# Numba's one vector math library was Intel's SVML (``config.USING_SVML``);
# Numba 0.62 and later have no SVML support (its release notes: the LLVM
# patch it needs no longer applies), and the LLVM 22 of llvmlite 0.50 takes
# no ``-vector-library`` option, so installing SVML's runtime changes nothing
# (checked on the Intel Xeon VM: bench/README.md, "arc_distance with SVML").
# streamjit's own route is glibc's libmvec (`post_o3/vector_math.py`).
def math_call_notes(rows):
    """The report's lines for `math_calls`' rows: where, and why no vector version ran."""
    if not rows:
        return []
    if config.USING_SVML:
        why = "although Numba uses SVML (numba.config.USING_SVML), the loop did not vectorize"
    elif vector_math.available():
        why = ("glibc's libmvec replaces a vectorized loop's calls only in a kernel that names something to stream "
               "and is compiled with fastmath=True (or fastmath={'afn'}), and has no vector version for some functions")
    else:
        why = "no vector math library: numba.config.USING_SVML is False; Numba 0.62 and later have no SVML support"
    return [f"math: {f'the loop at line {line}' if line is not None else 'a loop'} calls {', '.join(names)} from the "
            f"math library one element at a time" for line, names in rows] + [f"  ({why})"]


def vector_math_functions(callees):
    """The `math_names.MATH_FUNCTIONS` names whose vector versions (libmvec's) the
    called functions ``callees`` include, sorted."""
    return sorted({vector_version_of(callee) for callee in callees} - {None})
