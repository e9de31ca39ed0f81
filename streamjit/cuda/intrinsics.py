"""Typing and PTX lowering of the GPU stream intrinsics, and their Python
fallbacks for numba-cuda's simulator.

NVVM drops LLVM's ``!nontemporal`` metadata, so every hint is inline PTX.
The scalar forms are numba-cuda's own public cache hints, which take 8- to
64-bit numbers; the rest are streamjit's (``llvmlite.ir.InlineAsm`` in an
``@intrinsic``), for 32- and 64-bit numbers unless said otherwise:

- ``store(name)``: ``numba.cuda.stcs``, ``st.global.cs`` (evict-first: SASS
  ``STG.E.EF``);
- ``store_vector(name, width)``: ``st.global.cs.v4.b32`` / ``.v2.b64``, one
  16-byte store of a tuple of ``width`` consecutive elements (``STG.E.EF.128``); the
  callers (`vector.py`) prove the address 16-byte aligned before they call it;
- ``load(name, cache)``: ``numba.cuda.ldcs``, ``ld.global.cs`` (``LDG.E.EF``)
  by default, or ``ld.global.nc.L1::no_allocate`` (``LDG.E.NA...CONSTANT``:
  the read-only path, not kept in L1; 8 to 64 bits) when asked for: which is
  faster is for ``bench/gpu.py`` to measure, and ``.nc`` is only correct
  when no parameter the kernel writes aliases the array;
- ``load_vector(name, width, cache)``: the same as one 16-byte load of a
  tuple of ``width`` consecutive elements (``LDG.E.EF.128``), at an address
  `vector.py` has proven 16-byte aligned;
- ``copy_async(name)``, ``commit()``, ``wait(n)``: ``cp.async.ca.shared.global``
  (``LDGSTS``), ``cp.async.commit_group`` (``LDGDEPBAR``) and
  ``cp.async.wait_group n`` (``DEPBAR.LE SB0, n``; ``n`` must be a literal in
  PTX, so each ``n`` is an intrinsic of its own);
- ``address()``: the address of an element (alignment tests).

`ptx.py` counts loads and stores per array by their addresses; the
``cp.async`` instructions, which write shared memory, carry a comment
``// sj:<kind>:<array>`` it counts them by. All asm has a memory clobber: a
ring slot must not be read before its ``wait`` nor rewritten before it was
read. The simulator runs no inline asm (nor has it ``stcs`` / ``ldcs``), so
`factories` hands it plain Python functions with the same meaning instead.
"""

import functools

import numpy as np

from ..numba_internals.cuda_simulator import host_array

# Numbers the scalar hints apply to: the widths of integers and floats
# numba-cuda's ``ldcs`` / ``stcs`` take (`numba.cuda.cache_hints.CONSTRAINT_MAP`).
HINTED_BITS = (8, 16, 32, 64)
# The vector forms move 16 bytes in 4 or 2 registers, and cp.async copies 4,
# 8 or 16 bytes: 32- and 64-bit numbers.
VECTOR_BITS = (32, 64)
VECTOR_BYTES = 16
# load_cache option -> the PTX cache operator of a streamed load
LOAD_CACHE = {"cs": "cs", "nc": "nc.L1::no_allocate"}


def hinted_dtype(dtype, bits=HINTED_BITS):
    """Whether loads and stores of this Numba dtype get PTX hints (with
    ``bits=VECTOR_BITS``: the vector and asynchronous forms)."""
    from numba.core import types
    return isinstance(dtype, (types.Integer, types.Float)) and dtype.bitwidth in bits


@functools.cache
def _device():
    """The intrinsic factories, built on first use (they import numba.cuda)."""
    from llvmlite import ir
    from numba.core import types
    from numba.core.errors import TypingError
    from numba.cuda import cgutils
    # (the intrinsics behind numba.cuda.stcs / ldcs: those are overloads,
    # compiled as device functions for the current GPU, so they would need
    # one even for inspect_ptx)
    from numba.cuda.cache_hints import CONSTRAINT_MAP, ldcs_intrinsic, stcs_intrinsic
    from numba.cuda.extending import intrinsic

    def check_index(array, index, what, bits=VECTOR_BITS):
        if not isinstance(array, types.Array) or not hinted_dtype(array.dtype, bits):
            raise TypingError(f"{what}: needs an array of {'-, '.join(map(str, bits))}-bit numbers, got {array}")
        count = len(index) if isinstance(index, types.BaseTuple) else 1
        items = index.types if isinstance(index, types.BaseTuple) else (index,)
        if count != array.ndim or not all(isinstance(t, types.Integer) for t in items):
            raise TypingError(f"{what}: needs {array.ndim} integer indices, got {index}")

    def element_pointer(context, builder, array_type, array, index_type, index):
        items = cgutils.unpack_tuple(builder, index) if isinstance(index_type, types.BaseTuple) else [index]
        item_types = index_type.types if isinstance(index_type, types.BaseTuple) else (index_type,)
        items = [context.cast(builder, v, t, types.intp) for v, t in zip(items, item_types)]
        ary = context.make_array(array_type)(context, builder, array)
        return cgutils.get_item_pointer(context, builder, array_type, ary, items, wraparound=True)

    def bits_of(dtype):
        return ir.IntType(dtype.bitwidth)

    def asm(builder, result, operands, text, constraints):
        fnty = ir.FunctionType(result, [op.type for op in operands])
        clobbered = ",".join(filter(None, [constraints, "~{memory}"]))
        return builder.call(ir.InlineAsm(fnty, text, clobbered, side_effect=True), operands)

    def as_bits(context, builder, value, from_type, dtype):
        return builder.bitcast(context.cast(builder, value, from_type, dtype), bits_of(dtype))

    def reg(dtype):
        return "l" if dtype.bitwidth == 64 else "r"

    def store_vector(name, width):
        @intrinsic
        def sj_store_vector(typingctx, array, index, values):
            check_index(array, index, "a streamed vector store")
            if not isinstance(values, types.BaseTuple) or len(values) != width \
                    or array.dtype.bitwidth * width != VECTOR_BYTES * 8:
                raise TypingError(f"a streamed vector store writes {VECTOR_BYTES} bytes from a tuple of {width}")

            def codegen(context, builder, sig, args):
                ptr = element_pointer(context, builder, sig.args[0], args[0], sig.args[1], args[1])
                dtype = sig.args[0].dtype
                bits = [as_bits(context, builder, v, t, dtype)
                        for v, t in zip(cgutils.unpack_tuple(builder, args[2]), sig.args[2].types)]
                regs = ", ".join(f"${k + 1}" for k in range(width))
                asm(builder, ir.VoidType(), [ptr] + bits,
                    f"st.global.cs.v{width}.b{dtype.bitwidth} [$0], {{{regs}}};",
                    ",".join(["l"] + [reg(dtype)] * width))
                return context.get_dummy_value()
            return types.void(array, index, values), codegen
        return sj_store_vector

    def load_nc(name):
        @intrinsic
        def sj_load_nc(typingctx, array, index):
            check_index(array, index, "a streamed load", HINTED_BITS)

            def codegen(context, builder, sig, args):
                ptr = element_pointer(context, builder, sig.args[0], args[0], sig.args[1], args[1])
                bits = sig.args[0].dtype.bitwidth
                value_type = context.get_value_type(sig.args[0].dtype)
                return asm(builder, value_type, [ptr], f"ld.global.{LOAD_CACHE['nc']}.b{bits} $0, [$1];",
                           f"={CONSTRAINT_MAP[bits]},l")
            return array.dtype(array, index), codegen
        return sj_load_nc

    def load_vector(name, width, cache):
        @intrinsic
        def sj_load_vector(typingctx, array, index):
            check_index(array, index, "a streamed vector load")
            if array.dtype.bitwidth * width != VECTOR_BYTES * 8:
                raise TypingError(f"a streamed vector load reads {VECTOR_BYTES} bytes")

            def codegen(context, builder, sig, args):
                ptr = element_pointer(context, builder, sig.args[0], args[0], sig.args[1], args[1])
                dtype = sig.args[0].dtype
                regs = ", ".join(f"${k}" for k in range(width))
                both = asm(builder, ir.LiteralStructType([bits_of(dtype)] * width), [ptr],
                           f"ld.global.{LOAD_CACHE[cache]}.v{width}.b{dtype.bitwidth} {{{regs}}}, [${width}];",
                           ",".join([f"={reg(dtype)}"] * width + ["l"]))
                values = [builder.bitcast(builder.extract_value(both, k), context.get_value_type(dtype))
                          for k in range(width)]
                return context.make_tuple(builder, sig.return_type, values)
            return types.UniTuple(array.dtype, width)(array, index), codegen
        return sj_load_vector

    def copy_async(name):
        @intrinsic
        def sj_copy_async(typingctx, ring, slot, lane, array, index):
            check_index(array, index, "an asynchronous load")
            if not isinstance(ring, types.Array) or ring.ndim != 2 or ring.dtype != array.dtype:
                raise TypingError(f"an asynchronous load needs a 2-D ring of {array.dtype}")

            def codegen(context, builder, sig, args):
                dst = element_pointer(context, builder, sig.args[0], args[0], types.UniTuple(types.intp, 2),
                                      context.make_tuple(builder, types.UniTuple(types.intp, 2), [
                                          context.cast(builder, args[1], sig.args[1], types.intp),
                                          context.cast(builder, args[2], sig.args[2], types.intp)]))
                src = element_pointer(context, builder, sig.args[3], args[3], sig.args[4], args[4])
                size = sig.args[3].dtype.bitwidth // 8
                # the ring is a generic pointer to shared memory; cp.async wants its shared address
                asm(builder, ir.VoidType(), [dst, src],
                    "{ .reg .u64 sjg; .reg .u32 sjs; cvta.to.shared.u64 sjg, $0; cvt.u32.u64 sjs, sjg; "
                    f"cp.async.ca.shared.global [sjs], [$1], {size}; }} // sj:cp:{name}", "l,l")
                return context.get_dummy_value()
            return types.void(ring, slot, lane, array, index), codegen
        return sj_copy_async

    @intrinsic
    def commit(typingctx):
        def codegen(context, builder, sig, args):
            asm(builder, ir.VoidType(), [], "cp.async.commit_group; // sj:commit:", "")
            return context.get_dummy_value()
        return types.void(), codegen

    def wait(pending):
        @intrinsic
        def sj_wait(typingctx):
            def codegen(context, builder, sig, args):
                asm(builder, ir.VoidType(), [], f"cp.async.wait_group {pending}; // sj:wait:", "")
                return context.get_dummy_value()
            return types.void(), codegen
        return sj_wait

    @intrinsic
    def address(typingctx, array, index):
        if not isinstance(array, types.Array):
            raise TypingError(f"an element address needs an array, got {array}")

        def codegen(context, builder, sig, args):
            ptr = element_pointer(context, builder, sig.args[0], args[0], sig.args[1], args[1])
            return builder.ptrtoint(ptr, context.get_value_type(types.uintp))
        return types.uintp(array, index), codegen

    def load(name, cache):
        return ldcs_intrinsic if cache == "cs" else load_nc(name)

    return dict(store=lambda name: stcs_intrinsic, store_vector=store_vector, load=load, load_vector=load_vector,
                copy_async=copy_async, commit=lambda: commit, wait=wait, address=lambda: address)


def _simulated():
    """The same operations on the simulator's arrays (NumPy underneath)."""
    def element(array, index):
        return index if isinstance(index, tuple) else (index,)

    def contiguous(array, index, width):
        """The elements one vector access reaches: the first wraps around if
        negative, as the device's address does, and the rest follow it."""
        *head, last = element(array, index)
        last += array.shape[-1] if last < 0 else 0
        return [(*head, last + k) for k in range(width)]

    def store_vector(name, width):
        def sj_store_vector(array, index, values):
            for at, value in zip(contiguous(array, index, width), values):
                array[at] = value
        return sj_store_vector

    def store(name):
        def sj_store(array, index, value):
            array[element(array, index)] = value
        return sj_store

    def load(name, cache):
        def sj_load(array, index):
            return array[element(array, index)]
        return sj_load

    def load_vector(name, width, cache):
        def sj_load_vector(array, index):
            return tuple(array[at] for at in contiguous(array, index, width))
        return sj_load_vector

    def copy_async(name):
        def sj_copy_async(ring, slot, lane, array, index):
            ring[slot, lane] = array[element(array, index)]
        return sj_copy_async

    def address():
        def sj_address(array, index):
            base = np.asarray(host_array(array))
            index = [i + n if i < 0 else i for i, n in zip(element(array, index), base.shape)]
            return base.__array_interface__["data"][0] + sum(i * s for i, s in zip(index, base.strides))
        return sj_address

    return dict(store=store, store_vector=store_vector, load=load, load_vector=load_vector, copy_async=copy_async,
                commit=lambda: lambda: None, wait=lambda pending: lambda: None, address=address)


def factories(simulated):
    """{kind: factory} of the intrinsics, for the device or the simulator."""
    return _simulated() if simulated else _device()
