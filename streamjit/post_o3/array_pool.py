"""Large arrays a kernel allocates reuse the memory of freed ones, instead of fresh pages.

Numba's runtime takes each array from ``malloc``, and glibc serves every
block above 32 MiB (its largest mmap threshold) with fresh pages from the
kernel, which fault in 4 KiB at a time on first touch and are given back on
``free``. A kernel that makes a large temporary on every iteration or call
(``pn = p.copy()`` in a time loop, ``return a + 1.0``) pays those faults
each time: NPBench's cavity_flow pressure loop (3000x3000 float64, 10
iterations) ran 772 ms with ``pn = p.copy()`` against 450 ms with ``pn[:] =
p`` into a buffer made once (Intel Xeon VM, family 6 model 167,
``/tmp``-free script in bench/README.md "Fresh memory"). DaCe allocates
such arrays once per program; PyTorch's caching allocator keeps freed
blocks for the next request of their size. This stage does the latter for
the arrays streamjit kernels allocate.

What it rewrites: every call to Numba's allocation of an array's memory
(``NRT_MemInfo_alloc_aligned``: the kernel's own and those of the Numba
functions linked into it) becomes a call to ``streamjit.pool.alloc``,
defined once per module. From `POOLED_FROM_BYTES` on it allocates through
NRT's external-allocator interface (``NRT_MemInfo_alloc_external``, whose
counters stay balanced) with the pool as the allocator: its ``malloc``
takes a held block of the size needed, up to an eighth more, else one from
libc's ``malloc``, and its ``free``, which Numba's release of the array
calls (``NRT_dealloc``), hands the block back to the pool. Below that size,
Numba's allocation as before.

The pool (`STATE`, shared by every module through one symbol) holds up to
`SLOTS` blocks and at most the cap in bytes (`cap_bytes`: a quarter of
the memory the process may use, its cgroup's limit in a container); a block that
does not fit is freed. Taking and giving back are lock-free (``cmpxchg`` on
the slots), as arrays are freed from any thread. A block's contents are
whatever its last array left: ``np.empty`` promises nothing more, and
``np.zeros`` writes its zeros itself. A fresh block gets NumPy's huge-page
advice (``madvise(MADV_HUGEPAGE)``, all blocks being from NumPy's 4 MiB
threshold on) wherever NumPy gives its own arrays that advice, and not
where ``NUMPY_MADVISE_HUGEPAGE=0`` turns it off (none where NumPy has no
``_get_madvise_hugepage`` to ask). The pool is off (every block freed)
until a kernel that allocates is compiled or loaded in the process, and
off where ``STREAMJIT_POOL_BYTES=0``. `release_memory` frees what it holds.
"""

import ctypes
import functools
import os
import re

import llvmlite.binding as llvm
import numpy as np

from ..errors import StreamConfigError
from ..machine import environment_bytes
from ..numba_internals.runtime import nrt_function_address
from ..protocol.targets import PAGE_BYTES
from .module import Inst, Module, top_level_name

ALLOCATE = "NRT_MemInfo_alloc_aligned"
POOLED = "streamjit.pool.alloc"
SYMBOL = "streamjit_array_pool"
ENV_VAR = "STREAMJIT_POOL_BYTES"
# From NumPy's huge-page threshold (numpy/_core/src/multiarray/alloc.c):
# below it glibc's heap keeps freed memory anyway, and faults cost little.
# Chosen, not measured, as are SLOTS and the cap (`cap_bytes`): no CPU
# enters, only the operating system's page faults.
POOLED_FROM_BYTES = 4 << 20
SLOTS = 16
ALLOCATE_EXTERNAL = "NRT_MemInfo_alloc_external"
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
MADVISE = "madvise"
MADV_HUGEPAGE = 14
# The memory limit of the process's cgroup, as a container sees it: cgroup
# v2's, then v1's (where the machine's memory is the host's, not the container's)
CGROUP_MEMORY_LIMITS = ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")

# [0] bytes held, [1] cap in bytes, [2] 1 where fresh blocks get NumPy's
# huge-page advice, [3, 3 + SLOTS) block addresses (0: free slot), [3 +
# SLOTS, 3 + 2 * SLOTS) their sizes, as a hint read before taking
FIRST_BLOCK = 3
STATE_WORDS = FIRST_BLOCK + 2 * SLOTS
STATE = (ctypes.c_int64 * STATE_WORDS)()
llvm.add_symbol(SYMBOL, ctypes.addressof(STATE))
try:  # (libc's madvise, made known to LLVM so compiled and cached code calling it links)
    llvm.add_symbol(MADVISE, ctypes.cast(ctypes.CDLL(None).madvise, ctypes.c_void_p).value)
    _MADVISE_KNOWN = True
except (OSError, AttributeError):
    _MADVISE_KNOWN = False
# NRT's allocation through an external allocator (numba/core/runtime/
# nrt_external.h), which Numba does not make known to LLVM itself
# (exported by its runtime module, the one Numba loads for NRT)
llvm.add_symbol(ALLOCATE_EXTERNAL, nrt_function_address(ALLOCATE_EXTERNAL))


def _slot(k):
    return f"getelementptr inbounds ([{STATE_WORDS} x i64], ptr @{SYMBOL}, i64 0, i64 {k})"


HELD, CAP, ADVISE = _slot(0), _slot(1), _slot(2)


def _block(i):
    return _slot(FIRST_BLOCK + i)


def _hint(i):
    return _slot(FIRST_BLOCK + SLOTS + i)


def _take():
    """``take(need)``: a held block of ``need`` bytes up to an eighth more,
    claimed by swapping its slot to 0, else null."""
    lines = [f'define linkonce_odr ptr @"streamjit.pool.take"(i64 %need) {{',
             "entry:", "  %extra = lshr i64 %need, 3", "  %limit = add i64 %need, %extra", "  br label %slot0"]
    for i in range(SLOTS):
        address, hint, after = _block(i), _hint(i), f"slot{i + 1}"
        lines += [
            f"slot{i}:",
            f"  %hint{i} = load atomic i64, ptr {hint} monotonic, align 8",
            f"  %above{i} = icmp uge i64 %hint{i}, %need",
            f"  %below{i} = icmp ule i64 %hint{i}, %limit",
            f"  %fits{i} = and i1 %above{i}, %below{i}",
            f"  br i1 %fits{i}, label %try{i}, label %{after}",
            f"try{i}:",
            f"  %held{i} = load atomic i64, ptr {address} monotonic, align 8",
            f"  %some{i} = icmp ne i64 %held{i}, 0",
            f"  br i1 %some{i}, label %claim{i}, label %{after}",
            f"claim{i}:",
            f"  %swap{i} = cmpxchg ptr {address}, i64 %held{i}, i64 0 acq_rel monotonic",
            f"  %won{i} = extractvalue {{ i64, i1 }} %swap{i}, 1",
            f"  br i1 %won{i}, label %got{i}, label %{after}",
            f"got{i}:",
            f"  %block{i} = inttoptr i64 %held{i} to ptr",
            f"  %bytes{i} = load i64, ptr %block{i}, align 8",
            f"  %ignored{i} = atomicrmw sub ptr {HELD}, i64 %bytes{i} monotonic",
            # the hint may have been another block's: the header is the truth
            f"  %ok.above{i} = icmp uge i64 %bytes{i}, %need",
            f"  %ok.below{i} = icmp ule i64 %bytes{i}, %limit",
            f"  %ok{i} = and i1 %ok.above{i}, %ok.below{i}",
            f"  br i1 %ok{i}, label %take{i}, label %back{i}",
            f"take{i}:",
            f"  ret ptr %block{i}",
            f"back{i}:",
            f'  call void @"streamjit.pool.give"(ptr %block{i})',
            f"  br label %{after}",
        ]
    lines += [f"slot{SLOTS}:", "  ret ptr null", "}"]
    return "\n".join(lines)


def _give():
    """``give(block)``: the block back into a free slot while the pool's
    bytes stay under its cap, else freed; and ``free(meminfo, _)``, the
    pool's ``free`` as NRT's external allocator (``NRT_dealloc`` calls it
    with what ``malloc`` returned, 8 bytes after which the block's start
    is kept)."""
    lines = ['define linkonce_odr void @"streamjit.pool.free"(ptr %given, ptr %unused) {',
             "entry:",
             "  %base.field = getelementptr i8, ptr %given, i64 -8",
             "  %block = load ptr, ptr %base.field, align 8",
             '  call void @"streamjit.pool.give"(ptr %block)',
             "  ret void", "}",
             'define linkonce_odr void @"streamjit.pool.give"(ptr %block) {',
             "entry:",
             "  %bytes = load i64, ptr %block, align 8",
             "  %address = ptrtoint ptr %block to i64",
             f"  %cap = load atomic i64, ptr {CAP} monotonic, align 8",
             f"  %before = atomicrmw add ptr {HELD}, i64 %bytes monotonic",
             "  %after = add i64 %before, %bytes",
             "  %over = icmp ugt i64 %after, %cap",
             "  br i1 %over, label %drop, label %slot0"]
    for i in range(SLOTS):
        lines += [
            f"slot{i}:",
            f"  %swap{i} = cmpxchg ptr {_block(i)}, i64 0, i64 %address acq_rel monotonic",
            f"  %won{i} = extractvalue {{ i64, i1 }} %swap{i}, 1",
            f"  br i1 %won{i}, label %kept{i}, label %{'slot' + str(i + 1) if i + 1 < SLOTS else 'drop'}",
            f"kept{i}:",
            f"  store atomic i64 %bytes, ptr {_hint(i)} monotonic, align 8",
            "  ret void",
        ]
    lines += ["drop:",
              f"  %ignored = atomicrmw sub ptr {HELD}, i64 %bytes monotonic",
              "  call void @free(ptr %block)",
              "  ret void", "}"]
    return "\n".join(lines)


_ALLOC = f"""
@"streamjit.pool.allocator" = linkonce_odr global {{ ptr, ptr, ptr, ptr }} {{ ptr @"streamjit.pool.malloc", ptr null, ptr @"streamjit.pool.free", ptr null }}

define linkonce_odr ptr @"{POOLED}"(i64 %size, i32 %align) {{
entry:
  %large = icmp uge i64 %size, {POOLED_FROM_BYTES}
  %aligned = icmp ule i32 %align, {DATA_ALIGN_BYTES}
  %pooled = and i1 %large, %aligned
  br i1 %pooled, label %pool, label %numba
numba:
  %mi = call ptr @{ALLOCATE}(i64 %size, i32 %align)
  ret ptr %mi
pool:
  %pool.mi = call ptr @{ALLOCATE_EXTERNAL}(i64 %size, ptr @"streamjit.pool.allocator")
  ret ptr %pool.mi
}}

define linkonce_odr ptr @"streamjit.pool.malloc"(i64 %bytes, ptr %unused) {{
entry:
  %need = add i64 %bytes, {SLACK_BYTES}
  %taken = call ptr @"streamjit.pool.take"(i64 %need)
  %missed = icmp eq ptr %taken, null
  br i1 %missed, label %fresh, label %place
fresh:
  %new = call ptr @malloc(i64 %need)
  %failed = icmp eq ptr %new, null
  br i1 %failed, label %out.of.memory, label %fresh.sized
out.of.memory:
  ret ptr null
fresh.sized:
  %advise = load atomic i64, ptr {ADVISE} monotonic, align 8
  %advised = icmp ne i64 %advise, 0
  br i1 %advised, label %advise.pages, label %fresh.ready
advise.pages:
  %new.start = ptrtoint ptr %new to i64
  %new.up = add i64 %new.start, {PAGE_BYTES - 1}
  %first = and i64 %new.up, -{PAGE_BYTES}
  %new.end = add i64 %new.start, %need
  %last = and i64 %new.end, -{PAGE_BYTES}
  %pages.bytes = sub i64 %last, %first
  %pages = inttoptr i64 %first to ptr
  %ignored = call i32 @{MADVISE}(ptr %pages, i64 %pages.bytes, i32 {MADV_HUGEPAGE})
  br label %fresh.ready
fresh.ready:
  store i64 %need, ptr %new, align 8
  br label %place
place:
  %block = phi ptr [ %taken, %entry ], [ %new, %fresh.ready ]
  %start = ptrtoint ptr %block to i64
  %past = add i64 %start, {MEMINFO_BYTES + 16 + DATA_ALIGN_BYTES - 1}
  %data = and i64 %past, -{DATA_ALIGN_BYTES}
  %given = sub i64 %data, {MEMINFO_BYTES}
  %result = inttoptr i64 %given to ptr
  %base.field = getelementptr i8, ptr %result, i64 -8
  store ptr %block, ptr %base.field, align 8
  ret ptr %result
}}
"""

_DEFINITIONS = "\n".join((_ALLOC, _take(), _give()))
_DECLARATIONS = ("declare ptr @malloc(i64)", "declare void @free(ptr)", f"declare i32 @{MADVISE}(ptr, i64, i32)", f"declare ptr @{ALLOCATE_EXTERNAL}(i64, ptr)",
                 f"@{SYMBOL} = external global [{STATE_WORDS} x i64]")


@functools.lru_cache(maxsize=1)
def _pool_module():
    """The pool's definitions and declarations, parsed once."""
    return Module(_DEFINITIONS + "\n" + "\n".join(_DECLARATIONS) + "\n")


def _missing_definitions(module):
    """The pool's definitions and declarations that ``module`` lacks: a
    module linked in brings some along, and O3 may have inlined and dropped
    its functions while keeping the allocator they referenced."""
    present = module.defined_names()
    return "\n".join(str(part) if isinstance(part, str) else "\n".join(part.lines())
                     for part in _pool_module().parts if top_level_name(part) not in present)


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


def cap_bytes():
    """The most bytes the pool holds: ``STREAMJIT_POOL_BYTES``, else a
    quarter of the memory this process may use (`memory_bytes`), at most
    8 GiB."""
    try:
        value = environment_bytes(ENV_VAR)
    except ValueError as exc:
        raise StreamConfigError(str(exc)) from None
    if value is not None:
        return value
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
    """Set the pool's cap (it holds nothing until then) and whether its
    fresh blocks get huge-page advice, as NumPy's arrays do: called as a
    kernel that allocates is compiled or loaded."""
    STATE[1] = cap_bytes()
    STATE[2] = int(_MADVISE_KNOWN and numpy_advises_huge_pages())


def has_work(text):
    """Whether the module ``text`` allocates array memory (`stages.run_post_o3`
    parses no module otherwise: first-call compile time)."""
    return ALLOCATE in text


_SHARED_LINKAGES = ("define linkonce_odr ", "define weak_odr ")


def _keep_pooled_code_local(module, rewritten):
    """Rename the functions in ``rewritten`` (names of functions whose
    allocations now go through the pool), and the functions calling them,
    where they are linked copies of Numba's shared helpers (``linkonce_odr``:
    its array allocator and what calls it), to module-local names with
    ``internal`` linkage. The JIT binds a call to such a helper to its
    first loaded definition, in whichever module: the kernel's calls would
    reach Numba's own copy, which skips the pool (as they do wherever the
    call is not inlined: under ``NUMBA_DEBUGINFO=1``), and `numba.njit`
    code could reach the kernel's copy, which uses it. The kernel's own
    functions (external linkage) keep their names."""
    frontier = set(rewritten)
    while frontier:
        fresh = {}
        for function in module.functions:
            if function.name in frontier and function.header.startswith(_SHARED_LINKAGES) \
                    and f"@{function.name}(" in function.header:
                new = f"{function.name}.pooled"
                linkage = function.header.split(" ", 2)[1]
                function.header = function.header.replace(f"{linkage} ", "internal ", 1).replace(
                    f"@{function.name}(", f"@{new}(", 1)
                fresh[function.name], function.name = new, new
        frontier = set()
        if fresh:
            reference = re.compile(r"@(" + "|".join(map(re.escape, fresh)) + r")(?![-a-zA-Z$._0-9])")
            for function in module.functions:
                for block, k, inst in function.instructions():
                    if reference.search(inst.text):
                        block.insts[k] = Inst(reference.sub(lambda m: "@" + fresh[m.group(1)], inst.text))
                        frontier.add(function.name)


def run(module, target):
    """Route every allocation of array memory through the pool (its
    functions defined once: a module linked in may bring them along)."""
    if not module.declares(ALLOCATE) or "linux" not in (target.triple or llvm.get_process_triple()):
        return False
    rewritten = set()
    for function in module.functions:
        if function.name.startswith("streamjit.pool."):
            continue
        for block, k, inst in function.instructions():
            if inst.opcode == "call" and inst.callee == ALLOCATE:
                block.insts[k] = Inst(inst.text.replace(f"@{ALLOCATE}(", f'@"{POOLED}"(', 1))
                rewritten.add(function.name)
    changed = bool(rewritten)
    if changed:
        _keep_pooled_code_local(module, rewritten)
        module.append(_missing_definitions(module) + "\n")
        switch_on()
    return changed


_RELEASE = f"""
@{SYMBOL} = external global [{STATE_WORDS} x i64]
declare void @free(ptr)
define i64 @release() {{
entry:
  br label %slot0
""" + "\n".join(f"""slot{i}:
  %freed{i} = phi i64 [ {0 if i == 0 else f'%total{i - 1}'}, %{'entry' if i == 0 else f'next{i - 1}'} ]
  %held{i} = atomicrmw xchg ptr {_block(i)}, i64 0 acq_rel
  %some{i} = icmp ne i64 %held{i}, 0
  br i1 %some{i}, label %free{i}, label %next{i}
free{i}:
  %block{i} = inttoptr i64 %held{i} to ptr
  %bytes{i} = load i64, ptr %block{i}, align 8
  %ignored{i} = atomicrmw sub ptr {HELD}, i64 %bytes{i} monotonic
  call void @free(ptr %block{i})
  br label %next{i}
next{i}:
  %counted{i} = phi i64 [ 0, %slot{i} ], [ %bytes{i}, %free{i} ]
  %total{i} = add i64 %freed{i}, %counted{i}
  br label %slot{i + 1}""" for i in range(SLOTS)) + f"""
slot{SLOTS}:
  ret i64 %total{SLOTS - 1}
}}
"""


@functools.lru_cache(maxsize=1)
def _releaser():
    """``release()`` compiled on first use, in an engine of its own."""
    llvm.initialize_native_target()  # (Numba does it as it compiles; a process may not have yet)
    llvm.initialize_native_asmprinter()
    module = llvm.parse_assembly(_RELEASE)
    machine = llvm.Target.from_default_triple().create_target_machine()
    engine = llvm.create_mcjit_compiler(module, machine)
    engine.finalize_object()
    return engine, ctypes.CFUNCTYPE(ctypes.c_int64)(engine.get_function_address("release"))


def release_memory():
    """Free the blocks the pool holds (memory of large arrays streamjit
    kernels allocated and released), returning how many bytes. Safe while
    kernels run in other threads: each block is taken out atomically."""
    if not any(STATE[FIRST_BLOCK:FIRST_BLOCK + SLOTS]):  # (nothing held: nothing to compile either)
        return 0
    return int(_releaser()[1]())


def pool_state():
    """``{"blocks", "bytes", "cap_bytes"}``: what the pool holds now, and its cap."""
    return {"blocks": sum(1 for k in range(SLOTS) if STATE[FIRST_BLOCK + k]), "bytes": int(STATE[0]), "cap_bytes": int(STATE[1])}
