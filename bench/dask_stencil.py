"""A 2-D stencil then a sum over a large Dask array on a local cluster (2
worker processes), per chunk size: `streamjit.stencil` with its defaults,
streamed (``threshold=0``), with plain stores, and `numba.stencil` through
`map_overlap`. Each run reduces the result to a sum, so no variant ships
its output back. Interleaved medians of two measures: the wall time, and
the seconds the workers spent computing the per-chunk tasks (Dask's task
stream; Dask fuses each chunk's halo, stencil, trim and partial sum into
one task). The wall time also depends on the order Dask runs the tasks in,
which follows the task names and so differs between variants that run
identical code (it differed by up to 1.6x here); the task time does not.

Run: python bench/dask_stencil.py [MiB [chunk sides...]]
     (default 1024 MiB, float32, chunks 1024 2048 4096 8192)
"""

import sys

import dask.array as da
import distributed
import numpy as np

import streamjit as sj
from streamjit import measure


def chunk_task_seconds(build):
    """Compute what ``build()`` returns; return the seconds workers spent
    computing its per-chunk tasks (named ``overlap-...``)."""
    with distributed.get_task_stream() as stream:
        build().compute()
    return sum(part["stop"] - part["start"] for task in stream.data if task["key"][0].startswith("overlap")
               for part in task["startstops"] if part["action"] == "compute")


def main(mib, chunk_sides, rounds=9):
    side = int((mib * measure.MIB // 4) ** 0.5)
    print(f"{measure.host_description()}\n{side} x {side} float32 ({side * side * 4 / measure.MIB:.0f} MiB), "
          f"LocalCluster(2 processes, 1 thread each), stencil then sum, {rounds} interleaved rounds")
    stencils = {"streamjit.stencil (default)": sj.stencil(measure.jacobi4_stencil),
                "streamjit.stencil (streamed)": sj.stencil(measure.jacobi4_stencil, threshold=0),
                "streamjit.stencil (plain)": sj.stencil(measure.jacobi4_stencil, stream_stores=False)}
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  memory_limit=0) as cluster, distributed.Client(cluster):
        for chunk in chunk_sides:
            grid = da.random.random((side, side), chunks=(chunk, chunk)).astype(np.float32).persist()
            distributed.wait(grid)
            variants = {name: (lambda s=s: s(grid).sum()) for name, s in stencils.items()}
            variants["numba.stencil"] = lambda: da.map_overlap(measure.numba_stencil_block, grid, depth=1,
                                                               boundary="none", dtype=np.float32).sum()
            sums = [build().compute() for build in variants.values()]      # also compiles on the workers
            assert np.allclose(sums, sums[0], rtol=1e-4), sums
            walls = measure.interleaved_medians({name: (lambda b=build: b().compute())
                                                 for name, build in variants.items()}, rounds)
            tasks = measure.interleaved_medians(variants, rounds, seconds=chunk_task_seconds)
            print(f"\nchunks {chunk} x {chunk} ({chunk * chunk * 4 / measure.MIB:g} MiB): wall time, per-chunk task time")
            for name in variants:
                print(f"  {name:30s} {walls[name]:7.3f} s {walls['streamjit.stencil (plain)'] / walls[name]:5.2f}x plain"
                      f"   {tasks[name]:7.3f} s {tasks['streamjit.stencil (plain)'] / tasks[name]:5.2f}x plain")
            del grid


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    main(args[0] if args else 1024, args[1:] or [1024, 2048, 4096, 8192])
