"""What ``python -m streamjit info`` prints: whether the machine profile
in force was measured, this machine's facts, the profile's rows (with
``--why``, each row's reason), and the instructions a streamed copy
compiles to here (compiled, never assumed).

Sits above the dispatcher (it compiles a probe kernel), beside
`calibration.py`, which measures the rows shown here.
"""

import os
import platform

import llvmlite
import llvmlite.binding as llvm
import numba
import numpy as np

from ..api import stream_kernel
from ..machine.cpu_defaults import measured_rows
from ..machine.profile import ROWS, cache_sizes, cpu_identity, cpu_name, machine_profile, vector_isa
from ..protocol.targets import fence_forms, nt_store_forms


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


# How long `python -m streamjit calibrate` takes with its defaults
CALIBRATE_TIME = "about a minute on an idle machine"


def profile_state(profile):
    """One line: whether ``profile``'s choices were calibrated here,
    measured on this kind of CPU, or neither, with the command that
    measures them."""
    command = f"`python -m streamjit calibrate` measures this machine ({CALIBRATE_TIME})"
    if profile.origin.startswith("calibrated"):
        return f"{profile.origin}; {command} again"
    if measured_rows(*cpu_identity()):
        return f"measured on this kind of CPU, not calibrated here ({profile.origin}); {command}"
    return (f"neither measured on this kind of CPU nor calibrated here ({profile.origin}): each choice one never "
            f"much slower than numba.njit on the CPUs measured; {command}")


def _plural(count, noun):
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _threshold_line(threshold, source):
    return f"{threshold} bytes ({threshold / (1 << 20):.3g} MiB), from {source}"


def _parallel_line(parallel, source):
    return "never" if parallel is None else f"from {parallel / (1 << 20):.4g} MiB ({source})"


def _items(sizes):
    return " and ".join(map(str, sizes))


# How ``info`` phrases each row it knows: row -> (label, its value in words).
# A row missing here is shown as its name and value, so that a new row
# (`machine/profile.py`) is shown before anyone phrases it.
ROW_LINES = {
    "stream_loads": ("streamed loads", lambda p: p.stream_loads.describe()),
    "sources": ("sources of stores", lambda p: p.sources.describe()),
    "stencil_sources": ("stencil sources", lambda p: f"{p.stencil_sources.describe()}, the sources of a stencil's "
                                                     "loop"),
    "page_alias_bytes": ("4K aliasing check", lambda p: f"sources 1-{p.page_alias_bytes} bytes behind a streamed "
                         "store modulo 4 KiB run the staged loop" if p.page_alias_bytes else "none"),
    "strip_bytes": ("staged strips", lambda p: f"{p.strip_bytes} bytes per destination"),
    "scalar_nt_bytes": ("scalar NT stores", lambda p: (f"items of {_items(p.scalar_nt_bytes)} bytes"
                                                       if p.scalar_nt_bytes else "none")
                        + ", where a streamed loop does not vectorize"),
    "scalar_nt_ops": ("scalar NT loops", lambda p: f"those computing at most "
                      f"{_plural(p.scalar_nt_ops, 'floating-point operation')} per element stored"),
    "wide_stencil_bytes": ("wide stencils", lambda p: f"items of {_items(p.wide_stencil_bytes)} bytes: streamed "
                           "stencil loops vectorized 512 bits wide" if p.wide_stencil_bytes else
                           "none: streamed stencil loops at LLVM's own vector width"),
}


def row_lines(profile, why=False):
    """``{label: value}`` of each row of ``profile``, in the order of
    `ROWS` (with ``why``, each with its reason)."""
    lines = {}
    for row in ROWS:
        label, words = ROW_LINES.get(row, (row, None))
        value = words(profile) if words else str(getattr(profile, row))
        lines[label] = value + (f" ({profile.reasons.get(row, '')})" if why else "")
    return lines


def machine_info(why=False):
    """Everything ``python -m streamjit info`` prints, as a dict, the
    profile's state first (with ``why``, each row of the profile with its
    reason: the measurements that chose it)."""
    from ..machine.threshold import copy_threshold, default_threshold, parallel_copy_bytes

    stores, fences, widest = streaming_instructions()
    profile = machine_profile()
    return {
        "profile": profile_state(profile),
        "CPU": f"{cpu_name()} ({os.cpu_count()} CPUs, LLVM CPU {llvm.get_host_cpu_name()})",
        "target": llvm.get_process_triple(),
        "vector ISA": vector_isa(),
        "vector NT stores": ", ".join(stores) or "none: streamed stores are plain on this CPU",
        "widest NT store": widest,
        "store fence": ", ".join(fences) or "none",
        "caches": ", ".join(f"{k} {v >> 10} KiB" for k, v in cache_sizes().items()) or "unknown",
        **row_lines(profile, why),
        "threshold (auto)": _threshold_line(*default_threshold()),
        "copyto streams": f"above {_threshold_line(*copy_threshold())}; on all threads "
                          + _parallel_line(*parallel_copy_bytes()),
        "versions": f"numba {numba.__version__}, llvmlite {llvmlite.__version__}, numpy {np.__version__}, "
                    f"python {platform.python_version()}",
    }
