"""The pool of freed array blocks that `array_pool` routes kernels' large allocations to.

Its state lives in memory from libc's ``calloc`` that is never freed, and
its functions are compiled once, with ``llvmlite.ir``, into an engine of
their own that is never disposed: arrays are released through them until
the very end of the interpreter's teardown (a module imported before
streamjit that keeps pooled arrays in its globals releases them after
streamjit's modules are gone), so neither may belong to a Python object.
Kernels reach the pool through one symbol, `SYMBOL`, the state's address:
its words `ALLOCATOR` onwards are the pool's ``NRT_ExternalAllocator``
(``malloc``, ``realloc``, ``free``, opaque), which kernels pass to
``NRT_MemInfo_alloc_external``.

- ``malloc`` takes a held block of the size needed, up to an eighth more,
  else one from libc's ``malloc`` (with NumPy's huge-page advice where
  NumPy gives it); ``free`` gives it back, into a free slot while the
  bytes held stay under the cap, else to libc. Taking and giving back are
  lock-free (``cmpxchg`` on the slots), as arrays are freed from any
  thread.
- Blocks given out are traced by ``tracemalloc`` (domain 0, as Numba's own
  allocations through ``PyMem_RawMalloc`` are) where the allocating thread
  holds the GIL: ``PyTraceMalloc_Track`` takes the GIL itself, which a
  ``prange`` worker must not wait for while the calling thread holds it,
  and on Python 3.13 it does so even when nothing traces. Untracking needs
  no GIL. Held blocks are the pool's, not an array's: not traced.
- A held block that nothing took for `IDLE_SECONDS` is freed, checked at
  each of the pool's allocations and after each of Python's garbage
  collections (a process that stops calling kernels still runs Python).
- The cap (`cap_bytes`): ``STREAMJIT_POOL_BYTES``, else a quarter of the
  memory the process may use (its cgroup's limit in a container), at most
  8 GiB; and 0 (the pool off) in a process that shares its node with
  sibling workers it cannot count (`shares_the_node`: multiprocessing's
  and Dask's workers), each of which would hold up to the cap.
"""

import ctypes
import functools
import gc
import os
import sys

import llvmlite.binding as llvm
import llvmlite.ir as ir
import numpy as np

from ..errors import StreamConfigError
from ..machine.profile import environment_bytes
from ..numba_internals.runtime import nrt_function_address
from ..protocol.targets import PAGE_BYTES

SYMBOL = "streamjit_array_pool"
ENV_VAR = "STREAMJIT_POOL_BYTES"
ALLOCATE_EXTERNAL = "NRT_MemInfo_alloc_external"
SLOTS = 16
# Chosen, not measured: far longer than the gaps between a time loop's
# iterations or a pipeline's calls, short against a worker left idle.
IDLE_SECONDS = 10
# Numba's struct MemInfo (numba/core/runtime/nrt.cpp: refct, dtor,
# dtor_info, data, size, external_allocator, 8 bytes each), which
# NRT_MemInfo_alloc_external puts just before the data
MEMINFO_BYTES = 48
# The data of a pooled array starts on a cache line (Numba asks for 32
# bytes or its dtype's size; larger requests are not pooled).
DATA_ALIGN_BYTES = 64
# A block holds its size at its start and, 8 bytes before what the
# allocator returns, its start; with the alignment, 128 bytes more than
# NRT asks for.
SLACK_BYTES = 128
MADV_HUGEPAGE = 14
CLOCK_MONOTONIC = 1
TRACEMALLOC_DOMAIN = 0
# The memory limit of the process's cgroup, as a container sees it: cgroup
# v2's, then v1's (where the machine's memory is the host's, not the container's)
CGROUP_MEMORY_LIMITS = ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")

# The state's words: bytes held, the cap (0: off), 1 where fresh blocks get
# huge-page advice, blocks taken from the pool, blocks from libc, the idle
# time in ns; the allocator (4 words); per slot its block's address (0:
# free), its size (a hint read before taking) and when it was given back
# (CLOCK_MONOTONIC, ns).
HELD, CAP, ADVISE, HITS, MISSES, IDLE_NS, ALLOCATOR = range(7)
BLOCKS = ALLOCATOR + 4
HINTS = BLOCKS + SLOTS
STAMPS = HINTS + SLOTS
STATE_WORDS = STAMPS + SLOTS

_libc = ctypes.CDLL(None)
_libc.calloc.restype, _libc.calloc.argtypes = ctypes.c_void_p, (ctypes.c_size_t, ctypes.c_size_t)
STATE_ADDRESS = _libc.calloc(STATE_WORDS, 8)  # never freed
STATE = (ctypes.c_int64 * STATE_WORDS).from_address(STATE_ADDRESS)
llvm.add_symbol(SYMBOL, STATE_ADDRESS)
# NRT's allocation through an external allocator (numba/core/runtime/
# nrt_external.h), which Numba does not make known to LLVM itself
llvm.add_symbol(ALLOCATE_EXTERNAL, nrt_function_address(ALLOCATE_EXTERNAL))

_I8P, _I64, _I32 = ir.IntType(8).as_pointer(), ir.IntType(64), ir.IntType(32)


def _c_address(library, name):
    """The address of the C function ``name`` of this process (None where absent)."""
    return ctypes.cast(getattr(library, name), ctypes.c_void_p).value if hasattr(library, name) else None


def _c_function(module, library, name, returns, *arguments):
    """A declaration of the C function ``name`` under a name of the pool's
    own, made known to LLVM at its address (None where absent)."""
    address = _c_address(library, name)
    if address is None:
        return None
    llvm.add_symbol(f"streamjit.pool.{name}", address)
    return ir.Function(module, ir.FunctionType(returns, arguments), f"streamjit.pool.{name}")


def _word(builder, index):
    """A pointer to the state's word ``index`` (an int or an i64 value)."""
    state = ir.Constant(_I64, STATE_ADDRESS).inttoptr(_I64.as_pointer())
    return builder.gep(state, [index if isinstance(index, ir.Value) else _I64(index)], inbounds=True)


def _for_each_slot(builder, body):
    """Emit ``for slot in range(SLOTS): body(slot)`` at the builder, which
    ``body`` leaves where the next iteration begins (it may return from
    blocks of its own); the builder ends after the loop."""
    function, before = builder.function, builder.block
    loop, done = function.append_basic_block("slot"), function.append_basic_block("slots.done")
    builder.branch(loop)
    builder.position_at_end(loop)
    slot = builder.phi(_I64, "slot")
    slot.add_incoming(_I64(0), before)
    body(slot)
    following = builder.add(slot, _I64(1))
    slot.add_incoming(following, builder.block)
    builder.cbranch(builder.icmp_unsigned("<", following, _I64(SLOTS)), loop, done)
    builder.position_at_end(done)


def _pool_module():
    """The pool's functions: ``pool.malloc`` and ``pool.free`` (the allocator's),
    ``release(before)`` (free the held blocks given back before then, in
    CLOCK_MONOTONIC ns; returns their bytes) and ``sweep()`` (those idle
    for the state's idle time)."""
    module = ir.Module("streamjit.pool")
    libc, python, void = _libc, ctypes.pythonapi, ir.VoidType()
    c_malloc, c_free = _c_function(module, libc, "malloc", _I8P, _I64), _c_function(module, libc, "free", void, _I8P)
    madvise = _c_function(module, libc, "madvise", _I32, _I8P, _I64, _I32)
    clock_gettime = _c_function(module, libc, "clock_gettime", _I32, _I32, _I64.as_pointer())
    holds_gil = _c_function(module, python, "PyGILState_Check", _I32)
    track = _c_function(module, python, "PyTraceMalloc_Track", _I32, _I32, _I64, _I64)
    untrack = _c_function(module, python, "PyTraceMalloc_Untrack", _I32, _I32, _I64)

    def define(name, returns, *arguments):
        function = ir.Function(module, ir.FunctionType(returns, arguments), name)
        return function, ir.IRBuilder(function.append_basic_block("entry"))

    def block_size(b, block):
        return b.load(b.bitcast(block, _I64.as_pointer()))

    def slot_word(b, first, slot):
        return _word(b, b.add(slot, _I64(first)))

    now, b = define("now", _I64)
    spec = b.alloca(_I64, 2)
    b.call(clock_gettime, [_I32(CLOCK_MONOTONIC), spec])
    b.ret(b.add(b.mul(b.load(spec), _I64(10 ** 9)), b.load(b.gep(spec, [_I64(1)]))))

    give, b = define("give", void, _I8P)  # (block): into a free slot under the cap, else freed
    block = give.args[0]
    size = block_size(b, block)
    held = b.add(b.atomic_rmw("add", _word(b, HELD), size, "monotonic"), size)
    drop, start = give.append_basic_block("drop"), give.append_basic_block("start")
    b.cbranch(b.icmp_unsigned(">", held, b.load_atomic(_word(b, CAP), "monotonic", 8)), drop, start)
    b.position_at_end(start)
    given_at = b.call(now, [])

    def keep(slot):
        swap = b.cmpxchg(slot_word(b, BLOCKS, slot), _I64(0), b.ptrtoint(block, _I64), "acq_rel", "monotonic")
        with b.if_then(b.extract_value(swap, 1)):
            b.store_atomic(size, slot_word(b, HINTS, slot), "monotonic", 8)
            b.store_atomic(given_at, slot_word(b, STAMPS, slot), "monotonic", 8)
            b.ret_void()

    _for_each_slot(b, keep)
    b.branch(drop)
    b.position_at_end(drop)
    b.atomic_rmw("sub", _word(b, HELD), size, "monotonic")
    b.call(c_free, [block])
    b.ret_void()

    take, b = define("take", _I8P, _I64)  # (need): a held block of need bytes up to an eighth more, else null
    need = take.args[0]
    limit = b.add(need, b.lshr(need, _I64(3)))

    def fits(value):
        return b.and_(b.icmp_unsigned(">=", value, need), b.icmp_unsigned("<=", value, limit))

    def claim(slot):
        with b.if_then(fits(b.load_atomic(slot_word(b, HINTS, slot), "monotonic", 8))):
            address = slot_word(b, BLOCKS, slot)
            held = b.load_atomic(address, "monotonic", 8)
            with b.if_then(b.icmp_unsigned("!=", held, _I64(0))):
                with b.if_then(b.extract_value(b.cmpxchg(address, held, _I64(0), "acq_rel", "monotonic"), 1)):
                    taken = b.inttoptr(held, _I8P)
                    size = block_size(b, taken)
                    b.atomic_rmw("sub", _word(b, HELD), size, "monotonic")
                    # the hint may have been another block's: the header is the truth
                    with b.if_else(fits(size)) as (right, wrong):
                        with right:
                            b.ret(taken)
                        with wrong:
                            b.call(give, [taken])

    _for_each_slot(b, claim)
    b.ret(ir.Constant(_I8P, None))

    release, b = define("release", _I64, _I64)
    freed = b.alloca(_I64)
    b.store(_I64(0), freed)

    def free_if_older(slot):
        stamp = b.load_atomic(slot_word(b, STAMPS, slot), "monotonic", 8)
        with b.if_then(b.icmp_signed("<", stamp, release.args[0])):
            held = b.atomic_rmw("xchg", slot_word(b, BLOCKS, slot), _I64(0), "acq_rel")
            with b.if_then(b.icmp_unsigned("!=", held, _I64(0))):
                taken = b.inttoptr(held, _I8P)
                size = block_size(b, taken)
                b.atomic_rmw("sub", _word(b, HELD), size, "monotonic")
                b.call(c_free, [taken])
                b.store(b.add(b.load(freed), size), freed)

    _for_each_slot(b, free_if_older)
    b.ret(b.load(freed))

    sweep, b = define("sweep", _I64)
    b.ret(b.call(release, [b.sub(b.call(now, []), b.load_atomic(_word(b, IDLE_NS), "monotonic", 8))]))

    malloc, b = define("pool.malloc", _I8P, _I64, _I8P)  # (bytes, opaque)
    need = b.add(malloc.args[0], _I64(SLACK_BYTES))
    taken = b.call(take, [need])
    b.call(sweep, [])
    hit, fresh, place = (malloc.append_basic_block(name) for name in ("hit", "fresh", "place"))
    b.cbranch(b.icmp_unsigned("==", taken, ir.Constant(_I8P, None)), fresh, hit)
    b.position_at_end(hit)
    b.atomic_rmw("add", _word(b, HITS), _I64(1), "monotonic")
    b.branch(place)
    b.position_at_end(fresh)
    b.atomic_rmw("add", _word(b, MISSES), _I64(1), "monotonic")
    new = b.call(c_malloc, [need])
    with b.if_then(b.icmp_unsigned("==", new, ir.Constant(_I8P, None)), likely=False):
        b.ret(new)
    if madvise is not None:
        with b.if_then(b.icmp_unsigned("!=", b.load_atomic(_word(b, ADVISE), "monotonic", 8), _I64(0))):
            start = b.ptrtoint(new, _I64)
            first = b.and_(b.add(start, _I64(PAGE_BYTES - 1)), _I64(-PAGE_BYTES))
            last = b.and_(b.add(start, need), _I64(-PAGE_BYTES))
            b.call(madvise, [b.inttoptr(first, _I8P), b.sub(last, first), _I32(MADV_HUGEPAGE)])
    b.store(need, b.bitcast(new, _I64.as_pointer()))
    fresh_end = b.block
    b.branch(place)
    b.position_at_end(place)
    block = b.phi(_I8P)
    block.add_incoming(taken, hit)
    block.add_incoming(new, fresh_end)
    start = b.ptrtoint(block, _I64)
    data = b.and_(b.add(start, _I64(MEMINFO_BYTES + 16 + DATA_ALIGN_BYTES - 1)), _I64(-DATA_ALIGN_BYTES))
    result = b.inttoptr(b.sub(data, _I64(MEMINFO_BYTES)), _I8P)
    b.store(block, b.bitcast(b.gep(result, [_I64(-8)]), _I8P.as_pointer()))
    with b.if_then(b.icmp_unsigned("!=", b.call(holds_gil, []), _I32(0))):
        b.call(track, [_I32(TRACEMALLOC_DOMAIN), start, need])
    b.ret(result)

    free, b = define("pool.free", void, _I8P, _I8P)  # (what malloc returned, opaque), as NRT_dealloc calls it
    block = b.load(b.bitcast(b.gep(free.args[0], [_I64(-8)]), _I8P.as_pointer()))
    b.call(untrack, [_I32(TRACEMALLOC_DOMAIN), b.ptrtoint(block, _I64)])
    b.call(give, [block])
    b.ret_void()
    return module


@functools.lru_cache(maxsize=1)
def _functions():
    """The pool's functions, compiled on first use into an engine that is
    never disposed (one reference more than anything drops); the
    allocator's words set to them, and idle blocks swept after each of
    Python's garbage collections."""
    llvm.initialize_native_target()  # (Numba does it as it compiles; a process may not have yet)
    llvm.initialize_native_asmprinter()
    module = llvm.parse_assembly(str(_pool_module()))
    module.verify()
    # machine code without optimization: they run once per large array allocated or freed,
    # and a cached kernel's load waits for them (7 ms at -O0 against 23 ms at LLVM's default
    # -O2, AMD EPYC Zen 3 VM, bench/compile_time.py --cached)
    engine = llvm.create_mcjit_compiler(module, llvm.Target.from_default_triple().create_target_machine(opt=0))
    engine.finalize_object()
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(engine))
    STATE[ALLOCATOR] = engine.get_function_address("pool.malloc")
    STATE[ALLOCATOR + 2] = engine.get_function_address("pool.free")
    release = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)(engine.get_function_address("release"))
    sweep = ctypes.CFUNCTYPE(ctypes.c_int64)(engine.get_function_address("sweep"))
    gc.callbacks.append(_sweeper(sweep))
    return release, sweep


def _sweeper(sweep):
    """A garbage collector callback that frees idle blocks; it reads no
    module global, as it may run while modules are torn down."""
    state = STATE

    def sweep_idle_blocks(phase, info):
        if phase == "stop" and state[HELD]:
            sweep()

    return sweep_idle_blocks


def memory_bytes():
    """The memory this process may use: the machine's, or its cgroup's
    limit where that is lower (``max`` or v1's page-counter maximum: no
    limit)."""
    try:
        limits = [os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")]
    except (ValueError, OSError, AttributeError):
        limits = []
    for path in CGROUP_MEMORY_LIMITS:
        try:
            with open(path) as f:
                limit = f.read().strip()
        except OSError:
            continue
        if limit.isdigit():
            limits.append(int(limit))
    return min(limits, default=0)


_forked = False


def shares_the_node():
    """Whether this process is one of several workers on its node, which it
    cannot count: forked (after the pool came into use: `_forget_in_a_child`),
    started by ``multiprocessing`` (its pools, ``concurrent.futures``'
    process pool, Dask's nanny), or running a Dask worker's tasks."""
    multiprocessing = sys.modules.get("multiprocessing")
    if _forked or (multiprocessing is not None and multiprocessing.parent_process() is not None):
        return True
    distributed = sys.modules.get("distributed")
    try:
        return distributed is not None and distributed.get_worker() is not None
    except ValueError:  # (not in a worker)
        return False


def cap_bytes():
    """The most bytes the pool holds: ``STREAMJIT_POOL_BYTES``, else 0
    where the process shares its node with sibling workers
    (`shares_the_node`), else a quarter of the memory this process may use
    (`memory_bytes`), at most 8 GiB."""
    try:
        value = environment_bytes(ENV_VAR)
    except ValueError as exc:
        raise StreamConfigError(str(exc)) from None
    if value is not None:
        return value
    if shares_the_node():
        return 0
    return min(memory_bytes() // 4, 8 << 30)


def numpy_advises_huge_pages():
    """Whether NumPy gives its large arrays huge-page advice now (Linux,
    unless ``NUMPY_MADVISE_HUGEPAGE=0`` or
    ``np._core.multiarray._set_madvise_hugepage(False)``); False where
    NumPy has no such (private) getter to ask: no advice."""
    multiarray = getattr(getattr(np, "_core", None) or np.core, "multiarray", None)
    getter = getattr(multiarray, "_get_madvise_hugepage", None)
    return bool(getter and getter())


def switch_on():
    """Set the pool's cap (it holds nothing until then; its functions are
    compiled the first time the cap is not 0), whether its fresh blocks get
    huge-page advice, as NumPy's arrays do, and its idle time: called as a
    kernel that allocates is compiled or loaded."""
    cap = cap_bytes()
    if cap:
        _functions()
    STATE[ADVISE] = int(_c_address(_libc, "madvise") is not None and numpy_advises_huge_pages())
    STATE[IDLE_NS] = IDLE_SECONDS * 10 ** 9
    STATE[CAP] = cap


def release_memory():
    """Free the blocks the pool holds (memory of large arrays streamjit
    kernels allocated and released), returning how many bytes. Safe while
    kernels run in other threads: each block is taken out atomically.
    Arrays still referenced are untouched: their blocks enter the pool
    when they are freed."""
    if not any(STATE[BLOCKS:BLOCKS + SLOTS]):  # (nothing held: nothing to compile either)
        return 0
    return int(_functions()[0](2 ** 63 - 1))


def memory_stats():
    """What streamjit's pool of freed array blocks holds now.

    Returns
    -------
    dict
        ``blocks`` and ``bytes`` held (memory of large arrays kernels
        allocated and released, kept for the next ones), ``cap_bytes``
        (the most it holds; 0: off), ``hits`` and ``misses`` (arrays given
        a held block, and a fresh one, since the process started).
    """
    return {"blocks": sum(1 for k in range(SLOTS) if STATE[BLOCKS + k]), "bytes": int(STATE[HELD]),
            "cap_bytes": int(STATE[CAP]), "hits": int(STATE[HITS]), "misses": int(STATE[MISSES])}


def _forget_in_a_child():
    """In a forked child: the blocks held are the parent's copies, freed;
    and the child shares its node with its parent (`shares_the_node`)."""
    global _forked
    _forked = True
    if STATE[CAP]:
        STATE[CAP] = cap_bytes()
    release_memory()


os.register_at_fork(after_in_child=_forget_in_a_child)
