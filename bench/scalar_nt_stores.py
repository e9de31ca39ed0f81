"""Scalar non-temporal stores vs plain stores in a loop that cannot vectorize.

The issue asks streamjit to use whichever is faster where a streamed loop
does not vectorize. Two kernels LLVM keeps scalar: a running sum (a
dependence from one iteration to the next) and a scale with a range check
that raises (an early exit). Their stores are marked for streaming like any
other. Two builds of each kernel differ only in the machine profile's
``scalar_nt_bytes`` row (every size or none; `calibrate` measures the same
at 64 MiB and keeps the sizes where scalar NT stores win); they
are timed interleaved, their source not prefetched and prefetched as the
machine profile's ``sources`` row says (calibrate measures with the
latter). The kernels are `streamjit.measure`'s.

Run: python bench/scalar_nt_stores.py [MiB]   (default 256, float32 and float64)
"""

import sys

import numpy as np

from streamjit import measure
from streamjit.measure.calibration import kernel_with_stages
from streamjit.machine.profile import SCALAR_NT_ITEM_BYTES, LoadStage, machine_profile


def build(func, scalar_nt, dtype, sources):
    """The kernel streaming ``out``, compiled now with or without scalar NT stores, its source prefetched as
    ``sources`` says."""
    kernel = kernel_with_stages(func, "out", False, LoadStage(), sources, threshold=None,
                                scalar_nt_bytes=SCALAR_NT_ITEM_BYTES if scalar_nt else ())
    probe = np.zeros(256, dtype)
    kernel(probe, probe.copy())
    return kernel


def main(mib):
    print(measure.host_description())
    cases = [(f, d, s) for f in (measure.running_sum, measure.checked_scale) for d in (np.float32, np.float64)
             for s in {LoadStage(), machine_profile().sources}]
    for func, dtype, sources in cases:
        plain, streamed = build(func, False, dtype, sources), build(func, True, dtype, sources)
        rep_plain, rep_nt = plain.stream_report(), streamed.stream_report()
        assert rep_plain.arrays["out"].nt_scalar_stores == 0 and rep_nt.arrays["out"].nt_scalar_stores > 0
        n = mib * measure.MIB // np.dtype(dtype).itemsize
        a = np.random.default_rng(0).random(n).astype(dtype)
        out = np.empty(n + 1, dtype)[1:]
        med = measure.interleaved_medians({"plain": lambda: plain(out, a), "scalar NT": lambda: streamed(out, a)}, 9)
        gbs = {k: 2 * a.nbytes / t / 1e9 for k, t in med.items()}
        print(f"{func.__name__} {np.dtype(dtype).name} {mib} MiB, source: {sources.describe()}: plain "
              f"{gbs['plain']:.1f} GB/s, scalar NT {gbs['scalar NT']:.1f} GB/s, scalar NT / plain = "
              f"{med['plain'] / med['scalar NT']:.2f}x")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 256)
