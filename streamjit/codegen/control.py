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
    """``flag`` (a boolean or an integer), through an empty inline assembly
    block LLVM cannot see into: where the call record's flags are known
    (zero at entry, the aligned loop's test), LLVM would duplicate the
    blocks after a branch on them (the store fence after a nest) to fold
    them."""
    if not isinstance(flag, (types.Boolean, types.Integer)):
        return None

    def codegen(context, builder, sig, args):
        value = args[0]
        width = max(value.type.width, 8)  # (no 1-bit register)
        wide = llir.IntType(width)
        hidden = builder.asm(llir.FunctionType(wide, [wide]), "", "=r,0", [builder.zext(value, wide)], False)
        return builder.trunc(hidden, value.type) if width != value.type.width else hidden

    flag = types.unliteral(flag)
    return flag(flag), codegen


# The paths `record_call` counts, in the order of its counters.
CALL_PATHS = ("streamed", "below_threshold", "after_check", "plain")
# The run-time checks that can send a loop to its plain version, one bit
# each in the call record's ``fell`` mask; counted after CALL_PATHS, for
# the calls counted ``after_check`` (`passes/call_record.py`).
FALLBACK_CHECKS = ("bounds", "alignment", "contiguous", "page_alias", "operands")


@intrinsic(prefer_literal=True)
def record_call(typingctx, name, streamed, large, fell):
    """Add one to counter ``CALL_PATHS.index(path)`` of the module global
    ``name`` (an ``[n x i64]``, zero at load, read by the dispatcher):
    ``streamed`` (an aligned loop ran), else ``below_threshold`` (not
    ``large``), else ``after_check`` (``fell``, a mask of FALLBACK_CHECKS
    bits, is not zero: a run-time check sent a loop to its plain version),
    else ``plain``. An ``after_check`` call also adds one to the counter of
    each check that failed, after the paths' counters."""
    if not isinstance(name, types.StringLiteral) or not isinstance(fell, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        i64, i32 = llir.IntType(64), llir.IntType(32)
        counters = builder.module.globals.get(name.literal_value)
        if counters is None:
            ty = llir.ArrayType(i64, len(CALL_PATHS) + len(FALLBACK_CHECKS))
            counters = llir.GlobalVariable(builder.module, ty, name.literal_value)
            counters.initializer = ty(None)
            counters.linkage = "linkonce_odr"  # (one counter where a caller links this kernel in)
        _, ran, large_value, fell_value = args
        fell_value = builder.zext(fell_value, i64) if fell_value.type.width < 64 else fell_value
        fell_any = builder.icmp_unsigned("!=", fell_value, i64(0))
        path = builder.select(ran, i64(0), builder.select(large_value, builder.select(fell_any, i64(2), i64(3)),
                                                          i64(1)))

        def add(index, amount):
            slot = builder.gep(counters, [i32(0), index])
            builder.store(builder.add(builder.load(slot), amount), slot)

        add(path, i64(1))
        # (no branches: which checks failed, added only on the after_check path)
        counted = builder.select(builder.icmp_unsigned("==", path, i64(2)), fell_value, i64(0))
        for bit in range(len(FALLBACK_CHECKS)):
            add(i64(len(CALL_PATHS) + bit), builder.and_(builder.lshr(counted, i64(bit)), i64(1)))
        return context.get_dummy_value()

    return signature(types.none, name, types.boolean, types.boolean, fell), codegen
