"""Large arrays a kernel allocates get the kernel's huge-page advice, as NumPy's do.

NumPy advises the kernel to back each allocation of 4 MiB or more with
huge pages (``madvise(MADV_HUGEPAGE)``, where the machine's transparent
huge pages are set to ``madvise``; ``NUMPY_MADVISE_HUGEPAGE=0`` turns it
off). Numba's runtime does not, so the first touch of a fresh array
faults in 4 KiB pages one by one: ``a + 1.0`` on 275 MiB took 166 ms under
``numba.njit`` against NumPy's 43 ms (AMD EPYC Zen 4 VM, bench/README.md),
nearly all of it page faults. This stage makes every call to Numba's
allocation of an array's memory (``NRT_MemInfo_alloc_aligned``, the kernel's
own and those of the Numba functions linked into it: ``np.empty``,
``.copy()``, array expressions) a call to a wrapper defined once in the
module, which allocates as before and then advises the page-aligned
interior of the data, from NumPy's 4 MiB on, exactly as NumPy does. The
arrays stay Numba's: the same meminfo, freed as before.

Whether it runs is the machine profile's ``huge_pages`` row: off by default
on every CPU. On the one measured (an Intel Xeon VM) it made fresh arrays
as fast as NumPy's (``a + 1.0`` on 256 MiB: 116-129 -> 62-64 ms) but
NPBench's softmax 0.64x and deriche 0.67-0.87x slower, their calls after
the first, so it waits for a rule measured never to lose.
"""

import ctypes

import llvmlite.binding as llvm
import numpy as np

from ..machine import machine_profile
from .module import Inst

ALLOCATE = "NRT_MemInfo_alloc_aligned"
ADVISED = "streamjit.alloc_advised"
MADVISE = "madvise"
MADV_HUGEPAGE = 14
# NumPy's threshold (numpy/_core/src/multiarray/alloc.c: HUGEPAGE_THRESHOLD)
HUGEPAGE_BYTES = 4 << 20
# Where NRT_MemInfo keeps its data pointer: after the reference count, the
# destructor and its argument (numba/core/runtime/nrt.cpp, struct MemInfo)
_DATA_OFFSET = 24


def _advice_available():
    """Whether NumPy advises huge pages here (Linux, and not turned off),
    with ``madvise`` made known to LLVM, so compiled and cached code calling
    it links."""
    getter = getattr(getattr(np, "_core", np.core).multiarray, "_get_madvise_hugepage", None)
    if getter is None or not getter():
        return False
    try:
        address = ctypes.cast(ctypes.CDLL(None).madvise, ctypes.c_void_p).value
    except (OSError, AttributeError):
        return False
    llvm.add_symbol(MADVISE, address)
    return True


ADVISE = _advice_available()

_WRAPPER = f"""
define linkonce_odr ptr @"{ADVISED}"(i64 %size, i32 %align) {{
entry:
  %mi = call ptr @{ALLOCATE}(i64 %size, i32 %align)
  %large = icmp uge i64 %size, {HUGEPAGE_BYTES}
  %got = icmp ne ptr %mi, null
  %advise = and i1 %large, %got
  br i1 %advise, label %advise.pages, label %done
advise.pages:
  %field = getelementptr i8, ptr %mi, i64 {_DATA_OFFSET}
  %data = load ptr, ptr %field, align 8
  %start = ptrtoint ptr %data to i64
  %start.up = add i64 %start, 4095
  %first = and i64 %start.up, -4096
  %end = add i64 %start, %size
  %last = and i64 %end, -4096
  %bytes = sub i64 %last, %first
  %pages = inttoptr i64 %first to ptr
  %ignored = call i32 @{MADVISE}(ptr %pages, i64 %bytes, i32 {MADV_HUGEPAGE})
  br label %done
done:
  ret ptr %mi
}}
"""


def has_work(text):
    """Whether the module ``text`` allocates array memory and this machine's
    profile turns the advice on (`stages.run_post_o3` parses no module
    otherwise: first-call compile time)."""
    return ALLOCATE in text and ADVISE and machine_profile().huge_pages


def run(module, target):
    """Route every allocation of array memory through the advising wrapper
    (defined once: a module linked in may bring it along)."""
    if not (ADVISE and machine_profile().huge_pages) or not module.declares(ALLOCATE) \
            or "linux" not in (target.triple or llvm.get_process_triple()):
        return False
    changed = False
    for function in module.functions:
        if function.name.startswith(ADVISED):
            continue
        for block, k, inst in function.instructions():
            if inst.opcode == "call" and inst.callee == ALLOCATE:
                block.insts[k] = Inst(inst.text.replace(f"@{ALLOCATE}(", f'@"{ADVISED}"(', 1))
                changed = True
    if changed and module.function(ADVISED) is None:
        module.append(_WRAPPER + ("" if module.declares(MADVISE) else f"declare i32 @{MADVISE}(ptr, i64, i32)\n"))
    return changed
