"""Control around the streamed loops: keep a head loop scalar, the
per-target store fence, a flag LLVM cannot see through, and the per-call
record of which path ran (`passes/call_record.py`), which tells Python the
first time each run-time check sends a kernel's call to its plain code
(`on_first_fallback`)."""

import ctypes

import llvmlite.binding as llvm
import llvmlite.ir as llir
from numba import types
from numba.core import cgutils
from numba.core.typing import signature

from ..numba_internals.codegen import target_machine
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
        emit_store_fence(builder, target_machine(context.codegen()).triple)
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


@intrinsic
def counter_cells(typingctx, count):
    """The address (an intp) of ``count`` zeroed 64-bit counters in the
    calling function's frame: what `prange` workers update (`update_cell`)
    where a sum in a variable would be a parfor reduction (Numba compiles
    ``np.empty`` and a reduction function for those, and carries each sum
    out of every worker)."""
    if not isinstance(count, types.IntegerLiteral):
        return None

    def codegen(context, builder, sig, args):
        cells = cgutils.alloca_once(builder, llir.ArrayType(llir.IntType(64), count.literal_value))
        builder.store(cells.type.pointee(None), cells)
        return builder.ptrtoint(cells, context.get_value_type(types.intp))

    return signature(types.intp, count), codegen


def _cell(builder, cells, slot):
    """The address of counter ``slot`` (an int) of ``cells``."""
    return builder.gep(builder.inttoptr(cells, llir.IntType(64).as_pointer()), [cells.type(slot)])


@intrinsic(prefer_literal=True)
def update_cell(typingctx, cells, slot, op, value):
    """``op`` ("add" or "or") ``value`` (a boolean or an integer) into
    counter ``slot`` of `counter_cells`' ``cells``, atomically (workers
    update at once)."""
    if not (isinstance(cells, types.Integer) and isinstance(slot, types.IntegerLiteral)
            and isinstance(op, types.StringLiteral) and op.literal_value in ("add", "or")
            and isinstance(value, (types.Boolean, types.Integer))):
        return None

    def codegen(context, builder, sig, args):
        value = context.cast(builder, args[3], sig.args[3], types.int64)
        builder.atomic_rmw(op.literal_value, _cell(builder, args[0], slot.literal_value), value, "monotonic")
        return context.get_dummy_value()

    return signature(types.none, cells, slot, op, types.unliteral(value)), codegen


@intrinsic
def cell(typingctx, cells, slot):
    """Counter ``slot`` of `counter_cells`' ``cells``, read where no worker runs."""
    if not (isinstance(cells, types.Integer) and isinstance(slot, types.IntegerLiteral)):
        return None

    def codegen(context, builder, sig, args):
        return builder.load(_cell(builder, args[0], slot.literal_value))

    return signature(types.int64, cells, slot), codegen


# The paths `count_call` counts, in the order of its counters.
CALL_PATHS = ("streamed", "below_threshold", "after_check", "plain", "staged", "unprefetched")
# The run-time checks that can send a loop to its plain version, one bit
# each in the call record's ``fell`` mask; counted after CALL_PATHS, for
# the calls counted ``after_check`` (`passes/call_record.py`).
FALLBACK_CHECKS = ("bounds", "alignment", "contiguous", "page_alias", "operands")


# The symbols the call record's compiled code calls, made known to LLVM at
# import (before any kernel, compiled or loaded from the cache, is linked):
# whether the calling thread holds the GIL (CPython's own test), and the
# notice of a first fallback (`_first_fallback`).
_HOLDS_GIL = "streamjit_holds_gil"
_FALLBACK_NOTICE = "streamjit_first_fallback"
# counter global's name -> function of the check's name, called on its first fallback
_fallback_listeners = {}


def on_first_fallback(counter_name, listener):
    """Call ``listener(check)`` (a name of FALLBACK_CHECKS) the first time
    that check sends a call counted by the global ``counter_name`` to the
    plain code, in a thread holding the GIL (a call made without it, from a
    ``nogil`` kernel's thread or a parallel worker, leaves the notice to the
    next such call made with it). ``listener`` runs inside the kernel's call."""
    _fallback_listeners[counter_name] = listener


@ctypes.CFUNCTYPE(None, ctypes.c_char_p, ctypes.c_int64)
def _first_fallback(counter_name, check):
    listener = _fallback_listeners.get(counter_name.decode())
    if listener is not None:
        listener(FALLBACK_CHECKS[check])


llvm.add_symbol(_HOLDS_GIL, ctypes.cast(ctypes.pythonapi.PyGILState_Check, ctypes.c_void_p).value)
llvm.add_symbol(_FALLBACK_NOTICE, ctypes.cast(_first_fallback, ctypes.c_void_p).value)


# A call's count, as `count_call` keeps it: the path's index in its low
# bits, and, on the after_check path, one bit per failed check above them
# (-1: not counted yet).
_PATH_BITS = 3
_COUNT_CALL = "streamjit.count_call"


def _count_function(module, counters_type):
    """``i64 count(counters, name, counted, ran, staged, unprefetched,
    fell, large)``, defined once per module: `count_call`'s work, out of
    line and never inlined, so that a kernel carries one call per count
    instead of its code at each (the call record was a quarter of a small
    kernel's first compile: bench/README.md,
    "What the call record costs to compile"), and each
    return's call record stays one straight block (LLVM merges the returns'
    identical tails, their store fence among them, where branches in them
    would keep a fence per return). ``name`` (a C string, null but at a
    return or raise) asks for the notice of first fallbacks."""
    function = module.globals.get(_COUNT_CALL)
    if function is not None:
        return function
    i64, i32, i8, text = llir.IntType(64), llir.IntType(32), llir.IntType(8), llir.IntType(8).as_pointer()
    function = llir.Function(module, llir.FunctionType(i64, [counters_type, text] + [i64] * 5 + [i8]), _COUNT_CALL)
    function.linkage = "linkonce_odr"
    function.attributes.add("noinline")
    function.attributes.add("nounwind")
    counters, name, counted, ran, staged, unprefetched, fell, large = function.args
    builder = llir.IRBuilder(function.append_basic_block("entry"))
    path = builder.select(builder.icmp_unsigned("!=", ran, i64(0)), i64(0),
                          builder.select(builder.icmp_unsigned("!=", large, i8(0)),
                                         builder.select(builder.icmp_unsigned("!=", fell, i64(0)), i64(2), i64(3)),
                                         i64(1)))
    for copy, count in (("unprefetched", unprefetched), ("staged", staged)):  # (staged, where both ran)
        path = builder.select(builder.icmp_unsigned("!=", count, i64(0)), i64(CALL_PATHS.index(copy)), path)
    # (the failed checks, kept only on the after_check path: `fell` is already their mask)
    fallbacks = builder.select(builder.icmp_unsigned("==", path, i64(2)), fell, i64(0))
    new = builder.or_(path, builder.shl(fallbacks, i64(_PATH_BITS)))

    def add(slot, amount):
        # (atomic: calls from several threads, nogil kernels and copyto's
        # threads, each count; a lock'ed add per change, no measurable cost)
        builder.atomic_rmw("add", builder.gep(counters, [i32(0), slot]), amount, "monotonic")

    def move(count, amount):
        add(builder.and_(count, i64((1 << _PATH_BITS) - 1)), amount)
        for k in range(len(FALLBACK_CHECKS)):
            bit = builder.and_(builder.lshr(count, i64(_PATH_BITS + k)), i64(1))
            add(i64(len(CALL_PATHS) + k), builder.mul(bit, amount))

    # (moved only where the count changes: a count per row of a 2-D loop moves the call once)
    with builder.if_then(builder.icmp_signed("!=", counted, new), likely=False):
        with builder.if_then(builder.icmp_signed(">=", counted, i64(0))):
            move(counted, i64(-1))
        move(new, i64(1))
    # (at a return or raise: the first failure of each check, in a thread holding the GIL, told to Python)
    holds_gil = cgutils.get_or_insert_function(module, llir.FunctionType(i32, []), _HOLDS_GIL)
    notice = cgutils.get_or_insert_function(module, llir.FunctionType(llir.VoidType(), [text, i64]), _FALLBACK_NOTICE)
    final_failed = builder.and_(builder.icmp_unsigned("!=", name, text(None)),
                                builder.icmp_unsigned("!=", fallbacks, i64(0)))
    with builder.if_then(final_failed, likely=False):
        for k in range(len(FALLBACK_CHECKS)):
            slot = builder.gep(counters, [i32(0), i32(len(CALL_PATHS) + len(FALLBACK_CHECKS) + k)])
            check_failed = builder.and_(builder.lshr(fallbacks, i64(k)), i64(1))
            first = builder.and_(builder.icmp_unsigned("!=", check_failed, i64(0)),
                                 builder.icmp_unsigned("==", builder.load(slot), i64(0)))
            with builder.if_then(first, likely=False):
                with builder.if_then(builder.icmp_unsigned("!=", builder.call(holds_gil, []), i32(0))):
                    builder.store(i64(1), slot)
                    builder.call(notice, [name, i64(k)])
    builder.ret(new)
    return function


def _name_text(builder, name):
    """``name`` as a C string constant of the module (an ``i8*``)."""
    module = builder.module
    text = bytearray(name.encode() + b"\0")
    constant = module.globals.get(f"{name}.name") or cgutils.global_constant(
        module, f"{name}.name", llir.Constant(llir.ArrayType(llir.IntType(8), len(text)), text))
    return builder.bitcast(constant, llir.IntType(8).as_pointer())


@intrinsic(prefer_literal=True)
def count_call(typingctx, name, final, counted, streamed, staged, unprefetched, large, fell):
    """Count the call under the path its counters give so far, in the
    module global ``name`` (an ``[n x i64]``, zero at load, read by the
    dispatcher), moving it from ``counted`` (what an earlier `count_call`
    returned, -1 at entry) where that changed; returns the new count.
    Counted where the counters change, not only at the returns, a call
    ended by an exception Numba's own code raises (a division by zero, an
    index out of bounds) is counted too. The path: ``staged`` or else
    ``unprefetched`` where that count (of aligned loops that ran staged,
    `passes/staging.py`, and that ran without prefetches,
    `passes/stream_loads.py`) is not zero, else ``streamed`` (a count of
    aligned loops that ran) is not zero, else ``below_threshold`` (not
    ``large``), else ``after_check`` (``fell``, bit k set where check k of
    FALLBACK_CHECKS failed, is not zero: a run-time check sent a loop to
    its plain version), else ``plain``. An ``after_check`` call is also
    counted under each check that failed, after the paths' counters;
    ``final`` (a return or raise statement), the first failure of each
    check is told to Python (`on_first_fallback`), marked in a slot after
    those (not before: a later loop may still stream)."""
    counts = (counted, streamed, staged, unprefetched, fell)
    if not (isinstance(name, types.StringLiteral) and isinstance(final, types.BooleanLiteral)
            and isinstance(large, types.Boolean) and all(isinstance(t, types.Integer) for t in counts)):
        return None

    def codegen(context, builder, sig, args):
        i64 = llir.IntType(64)
        counters = builder.module.globals.get(name.literal_value)
        if counters is None:
            ty = llir.ArrayType(i64, len(CALL_PATHS) + 2 * len(FALLBACK_CHECKS))
            counters = llir.GlobalVariable(builder.module, ty, name.literal_value)
            counters.initializer = ty(None)
            counters.linkage = "linkonce_odr"  # (one counter where a caller links this kernel in)
        *_, counted_value, ran, staged, unprefetched, large_value, fell_value = args
        counts = zip((counted_value, ran, staged, unprefetched, fell_value), sig.args[2:6] + sig.args[7:])
        text = _name_text(builder, name.literal_value) if final.literal_value else llir.IntType(8).as_pointer()(None)
        return builder.call(_count_function(builder.module, counters.type),
                            [counters, text, *(context.cast(builder, value, ty, types.int64) for value, ty in counts),
                             builder.zext(large_value, llir.IntType(8))])

    return signature(types.int64, name, final, *map(types.unliteral, counts[:4]), types.boolean,
                     types.unliteral(fell)), codegen
