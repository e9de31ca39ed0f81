"""A 2-D stencil over a large Dask array on a local cluster (2 worker
processes): `streamjit.stencil` streamed, the same stencil with plain stores,
and `numba.stencil` through `map_overlap`. Each run reduces the result to a
sum, so no variant ships its output back. Interleaved medians.

Run: python bench/dask_stencil.py [MiB]   (default 2048, float32, 4096 x 4096 chunks)
"""

import sys

import dask.array as da
import distributed
import numpy as np

import streamjit as sj
from streamjit import bench


def main(mib):
    side = int((mib * bench.MIB // 4) ** 0.5)
    print(f"{bench.host_description()}\n{side} x {side} float32 ({side * side * 4 / bench.MIB:.0f} MiB), "
          "4096 x 4096 chunks, LocalCluster(2 processes)")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  memory_limit=0) as cluster, distributed.Client(cluster):
        grid = da.random.random((side, side), chunks=(4096, 4096)).astype(np.float32).persist()
        distributed.wait(grid)
        streamed = sj.stencil(bench.jacobi4_stencil, threshold=0)
        plain = sj.stencil(bench.jacobi4_stencil, stream_stores=False)
        variants = {
            "streamjit.stencil (streamed)": lambda: streamed(grid).sum(),
            "streamjit.stencil (plain)": lambda: plain(grid).sum(),
            "numba.stencil": lambda: da.map_overlap(bench.numba_stencil_block, grid, depth=1, boundary="none",
                                                    dtype=np.float32).sum(),
        }
        sums = {name: build().compute() for name, build in variants.items()}
        print("sums agree:", np.allclose(list(sums.values()), list(sums.values())[0], rtol=1e-4))
        medians = bench.interleaved_medians({name: (lambda b=build: b().compute()) for name, build in variants.items()},
                                            5)
        base = medians["streamjit.stencil (plain)"]
        for name, seconds in medians.items():
            print(f"{name:30s} {seconds:7.3f} s   {base / seconds:.2f}x plain")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2048)
