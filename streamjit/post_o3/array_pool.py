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
defined once per module: from `POOLED_FROM_BYTES` on, while the pool is on
(its cap is not 0), it allocates through NRT's external-allocator interface
(``NRT_MemInfo_alloc_external``, whose counters stay balanced) with the
pool (`pool.py`) as the allocator: its ``malloc`` takes a held block of
the size needed, else a fresh one, and its ``free``, which Numba's release
of the array calls (``NRT_dealloc``), hands the block back. Below that
size, or with the pool off, Numba's allocation as before. A block's
contents are whatever its last array left: ``np.empty`` promises nothing
more, and ``np.zeros`` writes its zeros itself. The pool is off until a
kernel that allocates is compiled or loaded in the process (`switch_on`).
"""

import functools
import re

from ..llvm_text.module import Inst, Module, top_level_name
from .pool import ALLOCATE_EXTERNAL, ALLOCATOR, CAP, DATA_ALIGN_BYTES, STATE_WORDS, SYMBOL, switch_on

ALLOCATE = "NRT_MemInfo_alloc_aligned"
POOLED = "streamjit.pool.alloc"
# From NumPy's huge-page threshold (numpy/_core/src/multiarray/alloc.c):
# below it glibc's heap keeps freed memory anyway, and faults cost little.
# Chosen, not measured, as are the pool's SLOTS, cap and idle time: no CPU
# enters, only the operating system's page faults.
POOLED_FROM_BYTES = 4 << 20

_STATE_TYPE = f"[{STATE_WORDS} x i64]"
_ALLOC = f"""
@{SYMBOL} = external global {_STATE_TYPE}

declare ptr @{ALLOCATE_EXTERNAL}(i64, ptr)

define linkonce_odr ptr @"{POOLED}"(i64 %size, i32 %align) {{
entry:
  %large = icmp uge i64 %size, {POOLED_FROM_BYTES}
  %aligned = icmp ule i32 %align, {DATA_ALIGN_BYTES}
  %fits = and i1 %large, %aligned
  br i1 %fits, label %ask, label %numba
ask:
  %cap = load atomic i64, ptr getelementptr inbounds ({_STATE_TYPE}, ptr @{SYMBOL}, i64 0, i64 {CAP}) monotonic, align 8
  %on = icmp ne i64 %cap, 0
  br i1 %on, label %pool, label %numba
numba:
  %mi = call ptr @{ALLOCATE}(i64 %size, i32 %align)
  ret ptr %mi
pool:
  %pool.mi = call ptr @{ALLOCATE_EXTERNAL}(i64 %size, ptr getelementptr inbounds ({_STATE_TYPE}, ptr @{SYMBOL}, i64 0, i64 {ALLOCATOR}))
  ret ptr %pool.mi
}}
"""


@functools.lru_cache(maxsize=1)
def _pool_module():
    """The pool's definitions and declarations, parsed once."""
    return Module(_ALLOC)


def _missing_definitions(module):
    """The pool's definitions and declarations that ``module`` lacks: a
    module linked in brings some along, and O3 may have inlined and dropped
    its functions while keeping the allocator they referenced."""
    present = module.defined_names()
    return "\n".join(str(part) if isinstance(part, str) else "\n".join(part.lines())
                     for part in _pool_module().parts if top_level_name(part) not in present)


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
    functions defined once: a module linked in may bring them along; run
    on Linux only: `stages.APPLIES`)."""
    if not module.declares(ALLOCATE):
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
