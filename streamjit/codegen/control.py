"""Control around the streamed loops: keep a head loop scalar, the
per-target store fence, a flag LLVM cannot see through, and the per-call
record of which path ran (`passes/call_record.py`)."""

import functools

import llvmlite.ir as llir
from numba import types
from numba.core import cgutils
from numba.core.typing import signature

from ..protocol.keep_scalar import emit_keep_scalar
from ..protocol.targets import emit_store_fence
from .registration import intrinsic


@intrinsic
def keep_scalar(typingctx):
    """Keep the enclosing loop scalar (see ``protocol/keep_scalar.py``)."""
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
    ``streamed`` (a count of aligned loops that ran) is not zero, else
    ``below_threshold`` (not ``large``), else ``after_check`` (``fell``,
    how often each of FALLBACK_CHECKS failed, is not all zero: a run-time
    check sent a loop to its plain version), else ``plain``. An
    ``after_check`` call also adds one to the counter of each check that
    failed, after the paths' counters."""
    if not (isinstance(name, types.StringLiteral) and isinstance(streamed, types.Integer)
            and isinstance(fell, types.BaseTuple) and len(fell) == len(FALLBACK_CHECKS)
            and all(isinstance(t, types.Integer) for t in fell)):
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
        failed = [builder.zext(builder.icmp_unsigned("!=", count, count.type(0)), i64)
                  for count in cgutils.unpack_tuple(builder, fell_value, len(FALLBACK_CHECKS))]
        fell_any = builder.icmp_unsigned("!=", functools.reduce(builder.or_, failed), i64(0))
        path = builder.select(builder.icmp_unsigned("!=", ran, ran.type(0)), i64(0),
                              builder.select(large_value, builder.select(fell_any, i64(2), i64(3)), i64(1)))

        def add(index, amount):
            # (atomic: calls from several threads, nogil kernels and copyto's
            # threads, each count; a lock'ed add per call, no measurable cost)
            builder.atomic_rmw("add", builder.gep(counters, [i32(0), index]), amount, "monotonic")

        add(path, i64(1))
        # (no branches: which checks failed, added only on the after_check path)
        counted = builder.icmp_unsigned("==", path, i64(2))
        for k, check_failed in enumerate(failed):
            add(i64(len(CALL_PATHS) + k), builder.select(counted, check_failed, i64(0)))
        return context.get_dummy_value()

    return signature(types.none, name, streamed, types.boolean, fell), codegen
