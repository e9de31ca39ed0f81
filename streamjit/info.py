"""What ``python -m streamjit info`` prints: this machine's facts, the
machine profile in force with each row's reason, and the instructions a
streamed copy compiles to here (compiled, never assumed).

Sits above the dispatcher (it compiles a probe kernel), beside
`calibration.py`, which measures the rows shown here.
"""

import os
import platform

import llvmlite
import llvmlite.binding as llvm
import numba
import numpy as np

from .api import stream_kernel
from .machine import cache_sizes, cpu_name, machine_profile, vector_isa
from .protocol.targets import fence_forms, nt_store_forms


_REGISTER_BITS = {"xmm": 128, "ymm": 256, "zmm": 512}


def _nt_stores(asm):
    """The distinct NT store instructions in ``asm``, narrowest register first."""
    return sorted(nt_store_forms(asm), key=lambda s: (_REGISTER_BITS.get(s[-3:], 0), s))


def streaming_instructions():
    """``(NT stores, fences, widest)``: the NT store and fence instructions
    a streamed float32 copy compiles to here, and a line on the widest NT
    store the CPU has, against the widest the copy uses. On x86 LLVM's
    tuning for many AVX-512 CPUs prefers 256-bit vectors, so kernels store
    ymm where the CPU has zmm; the line says so by compiling the same kernel
    without that preference (``-prefer-256-bit``), never assuming."""
    def probe(dst, src):
        for i in range(dst.shape[0]):
            dst[i] = src[i]

    kernel = stream_kernel(stream_stores=["dst"], threshold=None)(probe)
    signature = "void(float32[::1], float32[::1])"
    asm = kernel.inspect_asm(signature)
    stores = _nt_stores(asm)
    fences = sorted(fence_forms(asm))
    widest = stores[-1] if stores else "none"
    if llvm.get_host_cpu_features().get("avx512f", False) and not widest.endswith("zmm"):
        unpreferred = _nt_stores(kernel.inspect_asm(signature, cpu=llvm.get_host_cpu_name(),
                                                    features="-prefer-256-bit"))
        if unpreferred and unpreferred[-1].endswith("zmm"):
            return stores, fences, (f"{unpreferred[-1]} (AVX-512); kernels here use up to {widest}: LLVM's tuning "
                                    f"for {llvm.get_host_cpu_name()} prefers 256-bit vectors (compiled without that "
                                    f"preference, features='-prefer-256-bit', the same copy stores zmm)")
    return stores, fences, widest


def _threshold_line(threshold, source):
    return f"{threshold} bytes ({threshold / (1 << 20):.3g} MiB), from {source}"


def _parallel_line(parallel, source):
    return "never" if parallel is None else f"from {parallel / (1 << 20):.4g} MiB ({source})"


def machine_info():
    """Everything ``python -m streamjit info`` prints, as a dict."""
    from .threshold import copy_threshold, default_threshold, parallel_copy_bytes

    stores, fences, widest = streaming_instructions()
    profile = machine_profile()
    return {
        "CPU": f"{cpu_name()} ({os.cpu_count()} CPUs, LLVM CPU {llvm.get_host_cpu_name()})",
        "target": llvm.get_process_triple(),
        "vector ISA": vector_isa(),
        "vector NT stores": ", ".join(stores) or "none: streamed stores are plain on this CPU",
        "widest NT store": widest,
        "store fence": ", ".join(fences) or "none",
        "caches": ", ".join(f"{k} {v >> 10} KiB" for k, v in cache_sizes().items()) or "unknown",
        "profile": profile.origin,
        "streamed loads": f"{profile.stream_loads.describe()} ({profile.reasons.get('stream_loads', '')})",
        "sources of stores": f"{profile.sources.describe()} ({profile.reasons.get('sources', '')})",
        "stencil sources": f"{profile.stencil_sources.describe()}, the sources of a stencil's loop "
                           f"({profile.reasons.get('stencil_sources', '')})",
        "4K aliasing check": (f"sources 1-{profile.page_alias_bytes} bytes behind a streamed store modulo 4 KiB run "
                              "the staged loop" if profile.page_alias_bytes else "none")
                             + f" ({profile.reasons.get('page_alias_bytes', '')})",
        "staged strips": f"{profile.strip_bytes} bytes per destination ({profile.reasons.get('strip_bytes', '')})",
        "scalar NT stores": (f"items of {' and '.join(map(str, profile.scalar_nt_bytes))} bytes"
                             if profile.scalar_nt_bytes else "none")
                            + f", where a streamed loop does not vectorize ({profile.reasons.get('scalar_nt_bytes', '')})",
        "scalar NT loops": f"those computing at most {profile.scalar_nt_ops} floating-point operations per element "
                           f"stored ({profile.reasons.get('scalar_nt_ops', '')})",
        "wide stencils": (f"items of {' and '.join(map(str, profile.wide_stencil_bytes))} bytes"
                          if profile.wide_stencil_bytes else "none")
                         + f": streamed stencil loops vectorized 512 bits wide "
                           f"({profile.reasons.get('wide_stencil_bytes', '')})",
        "threshold (auto)": _threshold_line(*default_threshold()),
        "copyto streams": f"above {_threshold_line(*copy_threshold())}; on all threads "
                          + _parallel_line(*parallel_copy_bytes()),
        "versions": f"numba {numba.__version__}, llvmlite {llvmlite.__version__}, numpy {np.__version__}, "
                    f"python {platform.python_version()}",
    }
