"""Facts about this machine that decide and explain streaming: CPU, vector
instruction set, caches, the threshold in use, and whether this CPU's build
really emits vector non-temporal stores and a store fence (checked by
compiling a tiny streamed copy and reading its machine code)."""

import glob
import os
import platform
import re

import llvmlite
import llvmlite.binding as llvm
import numba
import numpy as np


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("model name", "Model")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def vector_isa():
    """The widest vector instruction set LLVM may use for this host build."""
    features = llvm.get_host_cpu_features()
    for name, label in (("avx512f", "AVX-512"), ("avx2", "AVX2"), ("avx", "AVX"), ("sve", "SVE"),
                        ("neon", "NEON"), ("sse2", "SSE2")):
        if features.get(name, False):
            return label
    return "none known"


_UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def _read(path):
    with open(path) as f:
        return f.read().strip()


def cache_sizes():
    """``{"L1d": bytes, "L2": bytes, ...}`` of CPU 0 from sysfs (Linux), else {}."""
    sizes = {}
    for index in sorted(glob.glob("/sys/devices/system/cpu/cpu0/cache/index*")):
        try:
            level, kind, size = (_read(os.path.join(index, f)) for f in ("level", "type", "size"))
            value = int(size[:-1]) * _UNITS[size[-1]] if size[-1:] in _UNITS else int(size)
        except (OSError, ValueError):
            continue
        sizes[f"L{level}{'d' if kind == 'Data' else 'i' if kind == 'Instruction' else ''}"] = value
    return sizes


def streaming_instructions():
    """Which NT store and fence instructions a streamed copy uses here."""
    from .dispatcher import stream_kernel

    def probe(dst, src):
        for i in range(dst.shape[0]):
            dst[i] = src[i]

    kernel = stream_kernel(stream_stores=["dst"])(probe)
    a = np.zeros(256, np.float32)
    kernel(a, a.copy())
    asm = kernel.inspect_asm(kernel.signatures[0])
    stores = sorted(set(re.findall(r"^\s*(v?movnt(?:ps|pd|dq)\s+%[xyz]mm|stnp\s+q|stnt1\w)", asm, re.M)))
    fences = sorted(set(re.findall(r"^\s*(sfence|dmb\s+ishst)\b", asm, re.M)))
    return [re.sub(r"\s+", " ", s) for s in stores], [re.sub(r"\s+", " ", f) for f in fences]


def _threshold_line(threshold, source):
    return f"{threshold} bytes ({threshold / (1 << 20):.3g} MiB), from {source}"


def machine_info():
    """Everything ``python -m streamjit info`` prints, as a dict."""
    from .dropins import PARALLEL_BYTES
    from .threshold import copy_threshold, default_threshold   # threshold reads this module's cache sizes

    stores, fences = streaming_instructions()
    return {
        "CPU": f"{cpu_name()} ({os.cpu_count()} CPUs, LLVM CPU {llvm.get_host_cpu_name()})",
        "target": llvm.get_process_triple(),
        "vector ISA": vector_isa(),
        "vector NT stores": ", ".join(stores) or "none: streamed stores are plain on this CPU",
        "store fence": ", ".join(fences) or "none",
        "caches": ", ".join(f"{k} {v >> 10} KiB" for k, v in cache_sizes().items()) or "unknown",
        "threshold (auto)": _threshold_line(*default_threshold()),
        "copyto streams": f"above {_threshold_line(*copy_threshold())}; on all threads from "
                          f"{PARALLEL_BYTES / (1 << 20):.4g} MiB",
        "versions": f"numba {numba.__version__}, llvmlite {llvmlite.__version__}, numpy {np.__version__}, "
                    f"python {platform.python_version()}",
    }
