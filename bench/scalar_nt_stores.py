"""Scalar non-temporal stores vs plain stores in a loop that cannot vectorize.

The issue asks streamjit to use whichever is faster where a streamed loop
does not vectorize. Two kernels LLVM keeps scalar: a running sum (a
dependence from one iteration to the next) and a scale with a range check
that raises (an early exit). Their stores are marked for streaming like any
other. Two builds of each kernel differ only in `SCALAR_NONTEMPORAL`; they
are timed interleaved.

Run: python bench/scalar_nt_stores.py [MiB]   (default 256, float32 and float64)
"""

import sys

import numpy as np

import streamjit as sj
from streamjit import measure
from streamjit.post_o3 import nontemporal


def running_sum(out, a):
    acc = a.dtype.type(0)
    for i in range(a.shape[0]):
        acc += a[i]
        out[i] = acc


def checked_scale(out, a):
    for i in range(a.shape[0]):
        x = a[i]
        if x > 2:
            raise ValueError("value out of range")
        out[i] = 2 * x


def build(func, scalar_nt, dtype):
    nontemporal.SCALAR_NONTEMPORAL = scalar_nt
    kernel = sj.stream_kernel(stream_stores=["out"], threshold=None)(func)
    probe = np.zeros(256, dtype)
    kernel(probe, probe.copy())   # compile now, under this setting
    nontemporal.SCALAR_NONTEMPORAL = True
    return kernel


def main(mib):
    print(measure.host_description())
    for func, dtype in [(f, d) for f in (running_sum, checked_scale) for d in (np.float32, np.float64)]:
        plain, streamed = build(func, False, dtype), build(func, True, dtype)
        rep_plain, rep_nt = plain.stream_report(), streamed.stream_report()
        assert rep_plain.arrays["out"].nt_scalar_stores == 0 and rep_nt.arrays["out"].nt_scalar_stores > 0
        n = mib * measure.MIB // np.dtype(dtype).itemsize
        a = np.random.default_rng(0).random(n).astype(dtype)
        out = np.empty(n + 1, dtype)[1:]
        med = measure.interleaved_medians({"plain": lambda: plain(out, a), "scalar NT": lambda: streamed(out, a)}, 9)
        gbs = {k: 2 * a.nbytes / t / 1e9 for k, t in med.items()}
        print(f"{func.__name__} {np.dtype(dtype).name} {mib} MiB: plain {gbs['plain']:.1f} GB/s, scalar NT {gbs['scalar NT']:.1f} GB/s,"
              f" scalar NT / plain = {med['plain'] / med['scalar NT']:.2f}x")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 256)
