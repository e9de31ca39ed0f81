"""``min`` and ``max`` of two integers, for the bounds the stream passes
compute (a prange block's end, a staging strip's span).

Numba's ``min``/``max`` are ``@overload``\\ s: each use compiles a small
dispatcher once per argument types and per compile flags, so a kernel paid
for two helper compiles, and a ``parallel=True`` kernel for two more under
its prange worker's flags (about 0.05 s of CPU time each, a prange triad,
bench/compile_time.py on an AMD EPYC Zen 3 VM). These are emitted inline:
one compare and one select, the value Python's ``min``/``max`` give.
"""

from numba import types
from numba.core.typing import signature

from .registration import intrinsic


def _typer(typingctx, a, b):
    a, b = types.unliteral(a), types.unliteral(b)
    both = typingctx.unify_types(a, b)
    if not (isinstance(a, types.Integer) and isinstance(b, types.Integer) and isinstance(both, types.Integer)):
        return None
    return signature(both, a, b)


def _select(op):
    """``b if b <op> a else a``, as Python's ``min`` (``<``) and ``max`` (``>``) choose."""
    def codegen(context, builder, sig, args):
        a, b = (context.cast(builder, v, t, sig.return_type) for v, t in zip(args, sig.args))
        compare = builder.icmp_signed if sig.return_type.signed else builder.icmp_unsigned
        return builder.select(compare(op, b, a), b, a)
    return codegen


@intrinsic(python=min)
def smaller(typingctx, a, b):
    """``min(a, b)`` of two integers."""
    sig = _typer(typingctx, a, b)
    return None if sig is None else (sig, _select("<"))


@intrinsic(python=max)
def larger(typingctx, a, b):
    """``max(a, b)`` of two integers."""
    sig = _typer(typingctx, a, b)
    return None if sig is None else (sig, _select(">"))
