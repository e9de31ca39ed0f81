"""Streamed stores in loops whose elements take a chain of dependent operations.

``out[i] = f(a[i])`` with ``f`` a chain of ``ops`` dependent operations
(`streamjit.measure.chain`), one load and one store per element, 256 MiB
per array, ``stream_stores`` against `numba.njit` (NT / njit: above 1,
streaming is faster), interleaved rounds, medians; for each chain length:

- the source not prefetched and prefetched as the machine profile's
  ``sources`` row says (the profile's ``prefetcht1`` on Intel);
- at LLVM's vector width and at 512 bits (``--wide``; AVX-512 only),
  where one vector store writes a whole cache line.

On the Intel Xeon VM (family 6 model 167) streaming gained up to 16
operations and lost from 17 at 256 bits (float32 0.76x, 0.41x at 24);
512-bit vectors moved the loss to 24 operations (bench/README.md has the
tables). No rule of streamjit's uses this yet.

Run: python bench/dependent_chains.py [MiB] [rounds] [--wide] [--float64]
"""

import re
import sys

import numba
import numpy as np

from streamjit import measure
from streamjit.measure.calibration import kernel_with_stages
from streamjit.machine.profile import WIDE_VECTOR_BYTES, LoadStage, machine_profile
from streamjit.passes import loop_copies

CHAINS = (8, 12, 16, 17, 20, 24, 32)


def main(mib=256, rounds=7, wide=False, dtype=np.float32):
    if wide:  # (every streamed loop at 512 bits, as the wide_stencil_bytes row makes stencils)
        loop_copies.vector_lanes = lambda scan, plan, access, options: WIDE_VECTOR_BYTES // np.dtype(dtype).itemsize
    print(measure.host_description())
    a = np.random.default_rng(0).random(mib * measure.MIB // np.dtype(dtype).itemsize).astype(dtype) * 0.5
    out, want, c = np.empty_like(a), np.empty_like(a), np.dtype(dtype).type(0.25)
    print(f"{np.dtype(dtype).name}, {mib} MiB, {'512-bit vectors' if wide else 'LLVM vector width'}: NT / njit")
    for ops in CHAINS:
        function = measure.chain(ops)
        builds = {"njit": numba.njit(function)}
        for sources in (LoadStage(), machine_profile().sources):
            builds[sources.describe()] = kernel_with_stages(function, "out", False, LoadStage(), sources,
                                                            threshold=None)
        builds["njit"](want, a, c)
        for build in builds.values():
            build(out, a, c)
            np.testing.assert_array_equal(out, want)
        stores = re.findall(r"vmovnt\w+\s+%(\w)mm", builds[LoadStage().describe()].inspect_asm(
            builds[LoadStage().describe()].signatures[0]))
        medians = measure.interleaved_medians({k: (lambda b=b: b(out, a, c)) for k, b in builds.items()}, rounds)
        print(f"  {ops:2d} operations (NT stores: {', '.join(sorted(set(s + 'mm' for s in stores))) or 'none'}): "
              + ", ".join(f"{k} {medians['njit'] / medians[k]:.2f}x" for k in builds if k != "njit"), flush=True)


if __name__ == "__main__":
    numbers = [int(x) for x in sys.argv[1:] if x.isdigit()]
    main(*numbers, wide="--wide" in sys.argv, dtype=np.float64 if "--float64" in sys.argv else np.float32)
