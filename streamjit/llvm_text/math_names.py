"""The names math functions go by in LLVM IR, read and written here only:
the C library's transcendental functions (``sin``, and ``sinf`` for
``float``), LLVM's intrinsics for them (``llvm.sin.f64``,
``llvm.sin.v4f64``) and the names of their vector versions in the x86-64
vector function ABI (glibc's libmvec: ``_ZGVdN4v_sin``). The post-O3 stage
that calls libmvec (`post_o3/vector_math.py`) writes them; the report's
count of math calls made one element at a time (`inspection/math_calls.py`)
reads them back.
"""

import re

# Transcendental functions of the C math library, which no CPU has an
# instruction for: a vectorized loop calls them one lane at a time unless a
# vector math library has versions of them.
MATH_FUNCTIONS = ("sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh", "acosh",
                  "atanh", "exp", "exp2", "exp10", "expm1", "log", "log2", "log10", "log1p", "pow", "cbrt", "hypot",
                  "erf", "erfc", "lgamma", "tgamma")
# Those libmvec has vector versions of (glibc 2.35 and later; older ones
# have fewer, which `post_o3/vector_math.py` asks the library for).
LIBMVEC_FUNCTIONS = ("sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "exp", "exp2",
                     "exp10", "log", "log2", "log10", "pow")
_TWO_ARGUMENTS = ("atan2", "pow", "hypot")
# an intrinsic: llvm.<function>.<f32 or f64, or v<lanes> of them>
_INTRINSIC = re.compile(r"llvm\.(\w+)\.(?:v(\d+))?(f32|f64)")
# a vector version (``_ZGV<isa><mask>N<lanes><parameters>_<name>``), as libmvec's
_VECTOR_VERSION = re.compile(r"_ZGV[a-z][MN]\d+[a-z]+_(\w+)")
# the suffix of a function's name for an element kind (C's ``sinf``)
_SUFFIX = {"f64": "", "f32": "f"}


def math_call(callee):
    """``(function, "f32" or "f64", lanes)`` of a call of ``callee`` (an LLVM
    function name): a math function's intrinsic (lanes 0: scalar) or its C
    library function (lanes 0); None for any other callee."""
    intrinsic = _INTRINSIC.fullmatch(callee or "")
    if intrinsic:
        name, lanes, kind = intrinsic.groups()
        return (name, kind, int(lanes or 0)) if name in MATH_FUNCTIONS else None
    if callee in MATH_FUNCTIONS:
        return callee, "f64", 0
    if callee and callee.endswith("f") and callee[:-1] in MATH_FUNCTIONS:
        return callee[:-1], "f32", 0
    return None


def arguments(function):
    """How many arguments the math function ``function`` takes."""
    return 2 if function in _TWO_ARGUMENTS else 1


def vector_version(isa, lanes, function, kind):
    """The vector function ABI's name of ``function``'s unmasked version for
    ``lanes`` lanes of ``kind`` ("f32", "f64") in the registers of ``isa``
    (``b`` SSE, ``c`` AVX, ``d`` AVX2, ``e`` AVX-512)."""
    return f"_ZGV{isa}N{lanes}{'v' * arguments(function)}_{function}{_SUFFIX[kind]}"


def vector_version_of(callee):
    """The `MATH_FUNCTIONS` name of the vector version ``callee`` names, or None."""
    version = _VECTOR_VERSION.fullmatch(callee or "")
    call = version and math_call(version.group(1))
    return call[0] if call else None
