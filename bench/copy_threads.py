"""Large copies above glibc's own streaming size: `np.copyto` against the
streamed copy kernels `copyto` chooses between, one thread and all of
Numba's threads, in one process, interleaved rounds, medians.

Run: python bench/copy_threads.py [MiB]   (default 256, float32, destination misaligned by one element)
"""

import sys

import numba
import numpy as np

from streamjit import bench, dropins


def main(mib=256, rounds=9):
    n = (mib << 20) // 4
    src = np.random.default_rng(0).random(n + 1, dtype=np.float32)[1:]
    dst = np.empty(n + 1, np.float32)[:-1]
    for kernel in (dropins._copy_elements_parallel, dropins._copy_elements):
        kernel(dst, src)
        assert np.array_equal(dst, src)
    medians = bench.interleaved_medians({
        "np.copyto": lambda: np.copyto(dst, src),
        f"streamed, {numba.get_num_threads()} threads": lambda: dropins._copy_elements_parallel(dst, src),
        "streamed, one thread": lambda: dropins._copy_elements(dst, src),
    }, rounds)
    print(bench.host_description())
    print(f"{mib} MiB float32 copy, read + written bytes per second, medians of {rounds}")
    for name, seconds in medians.items():
        print(f"{name:24s} {2 * n * 4 / seconds / 1e9:6.1f} GB/s  {medians['np.copyto'] / seconds:5.2f}x np.copyto")


if __name__ == "__main__":
    main(*map(int, sys.argv[1:2]))
