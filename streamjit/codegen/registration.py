"""Registering streamjit's intrinsics with Numba, cheaply.

Numba's ``@intrinsic`` refreshes the whole target context on *every* typing
of every call (to find the registry to install the lowering into), about
0.2 ms each; a rewritten kernel makes a dozen such calls, a visible share of
its first-call compile time. ``intrinsic`` here keeps ``@intrinsic``'s
contract (a typer ``(typingctx, *arg_types) -> (signature, codegen)``) but
registers a plain typing template and one generic lowering once, at import.
"""

from numba.core import types
from numba.core.imputils import lower_builtin
from numba.core.typing.templates import AbstractTemplate, infer_global


def intrinsic(typer=None, *, prefer_literal=False, python=None):
    """Decorator: ``typer`` becomes a function callable from jitted code
    (and from Python, where ``python`` says what the call does there)."""
    if typer is None:
        return lambda typer: intrinsic(typer, prefer_literal=prefer_literal, python=python)
    codegens = {}  # signature arguments -> codegen

    def stub(*args):
        if python is None:
            raise NotImplementedError(f"{typer.__name__} can only be called from compiled code")
        return python(*args)

    stub.__name__ = stub.__qualname__ = typer.__name__
    stub.__doc__ = typer.__doc__
    stub.__module__ = typer.__module__

    class Template(AbstractTemplate):
        key = stub

        def generic(self, args, kws):
            if kws:
                return None
            result = typer(self.context, *args)
            if result is None:
                return None
            sig, codegen = result
            codegens[sig.args] = codegen
            return sig

    Template.prefer_literal = prefer_literal
    infer_global(stub, types.Function(Template))

    @lower_builtin(stub, types.VarArg(types.Any))
    def lower(context, builder, sig, args):
        return codegens[sig.args](context, builder, sig, args)

    return stub
