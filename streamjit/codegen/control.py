"""Control around the streamed loops: keep a head loop scalar, the
per-target store fence, a flag LLVM cannot see through, and the per-call
record of which path ran (`passes/call_record.py`)."""

import llvmlite.ir as llir
from numba import types
from numba.core.typing import signature

from ..lowering.keep_scalar import emit_keep_scalar
from ..lowering.targets import emit_store_fence
from .registration import intrinsic


@intrinsic
def keep_scalar(typingctx):
    """Keep the enclosing loop scalar (see ``lowering/keep_scalar.py``)."""
    def codegen(context, builder, sig, args):
        emit_keep_scalar(builder)
        return context.get_dummy_value()

    return signature(types.none), codegen


@intrinsic
def store_fence(typingctx):
    """Order this thread's streamed stores before anything that follows."""
    def codegen(context, builder, sig, args):
        emit_store_fence(builder, context.codegen()._tm.triple)
        return context.get_dummy_value()

    return signature(types.none), codegen


@intrinsic
def opaque(typingctx, flag):
    """``flag``, through an empty inline assembly block LLVM cannot see
    into: where the call record's flags are known (False at entry, the
    aligned loop's test), LLVM would duplicate the blocks after a branch on
    them (the store fence after a nest) to fold them."""
    if not isinstance(flag, types.Boolean):
        return None

    def codegen(context, builder, sig, args):
        byte = llir.IntType(8)
        hidden = builder.asm(llir.FunctionType(byte, [byte]), "", "=r,0", [builder.zext(args[0], byte)], False)
        return builder.trunc(hidden, llir.IntType(1))

    return types.boolean(flag), codegen


# The paths `record_call` counts, in the order of its counters.
CALL_PATHS = ("streamed", "below_threshold", "after_check", "plain")


@intrinsic(prefer_literal=True)
def record_call(typingctx, name, streamed, large, fell):
    """Add one to counter ``CALL_PATHS.index(path)`` of the module global
    ``name`` (an ``[n x i64]``, zero at load, read by the dispatcher):
    ``streamed`` (an aligned loop ran), else ``below_threshold`` (not
    ``large``), else ``after_check`` (``fell``: a run-time check sent a
    loop to its plain version), else ``plain``."""
    if not isinstance(name, types.StringLiteral):
        return None

    def codegen(context, builder, sig, args):
        counters = builder.module.globals.get(name.literal_value)
        if counters is None:
            ty = llir.ArrayType(llir.IntType(64), len(CALL_PATHS))
            counters = llir.GlobalVariable(builder.module, ty, name.literal_value)
            counters.initializer = ty(None)
            counters.linkage = "linkonce_odr"  # (one counter where a caller links this kernel in)
        i64 = llir.IntType(64)
        _, ran, large_value, fell_value = args
        path = builder.select(ran, i64(0), builder.select(large_value, builder.select(fell_value, i64(2), i64(3)),
                                                          i64(1)))
        slot = builder.gep(counters, [llir.IntType(32)(0), path])
        builder.store(builder.add(builder.load(slot), i64(1)), slot)
        return context.get_dummy_value()

    return signature(types.none, name, types.boolean, types.boolean, types.boolean), codegen
