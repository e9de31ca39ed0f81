"""How loads are best lowered on this CPU, at the sizes users stream: the
candidates `python -m streamjit calibrate` times (`calibration.SOURCE_CANDIDATES`),
on its workloads (STREAM copy and triad, a 5-point stencil, gathers from a
table in L2 and from one four times larger), as the sources of streamed
stores (``stream_stores`` alone) or, with ``--loads``, as the loads the user
streams (``stream_loads=True``, sources not prefetched); with ``--stencils``,
on the ping-pong sweeps of bench/ping_pong.py instead (a 2-D Jacobi and a
3-D heat stencil, float64, the arrays made by ``.copy()``), where a
stencil's rows are loaded again from the cache as the next rows' neighbours;
with ``--rows``, on 5-point float64 sweeps over rows of 160 to 4000 items
and NPBench's hdiff with rows (its K) of 160 and 4000 items, where a
prefetch a fixed distance ahead lands rows ahead of a short row (with the
candidates prefetching 4 KiB ahead into L2 once more, in rows of 4 KiB or
more only: shorter rows run a copy of the loop without prefetches, as
Zen 4's ``stencil_sources`` row does). Speed relative to no
software prefetch, medians of interleaved rounds, with the largest
`measure.spread` of a build's rounds per workload; the machine profile's
``sources``, ``stream_loads`` and (``--stencils``) ``stencil_sources`` rows in `cpu_defaults.py` cite these
tables. `calibrate` runs the same at 64 MiB and stops where rounds disagree.

Run: python bench/load_stages.py [MiB] [rounds] [--loads] [--stencils | --rows]   (default 256 9)
"""

import dataclasses
import sys

import numpy as np

from streamjit.measure import calibration, calibration_stencils
from streamjit import measure
from streamjit.machine.profile import LoadStage

from ping_pong import STEPS, heat3d_swap, jacobi_swap


def stencil_workloads(mib, rng):
    """``{name: (function, arguments, streamed output)}``: the swap Jacobi
    and 3-D heat of bench/ping_pong.py, ``mib`` MiB of float64 per array."""
    side, cube = int((mib * measure.MIB / 8) ** 0.5), int((mib * measure.MIB / 8) ** (1 / 3))
    grid, block = rng.random((side, side)), rng.random((cube,) * 3)
    return {f"swap Jacobi {side}x{side}": (jacobi_swap, (grid, grid.copy(), STEPS), "B"),
            f"heat_3d {cube}^3": (heat3d_swap, (block, block.copy(), 0.1, STEPS), "un")}


def row_workloads(mib, rng):
    """``{name: (function, arguments, streamed output)}``: the sweeps of
    ``--rows`` (see the module doc), ``mib`` MiB of float64 per array."""
    cases = {}
    for items in (160, 320, 640, 1280, 2560, 4000):
        grid = calibration_stencils.grid_of_rows(mib, rng, items)
        cases[f"5-point rows of {items}"] = (measure.jacobi5, (grid.copy(), grid), "out")
    for items in (160, 4000):
        cases[f"hdiff rows of {items}"] = calibration_stencils.hdiff_case(mib, rng, items)
    return cases


def main(mib=256, rounds=9, loads=False, stencils=False, rows=False):
    print(measure.host_description())
    none = LoadStage()
    candidates = calibration.SOURCE_CANDIDATES
    if rows:  # (prefetching 4 KiB ahead into L2 once more, in rows at least that long only)
        candidates += tuple(dataclasses.replace(stage, min_row_bytes=stage.distance) for stage in candidates
                            if stage.hint in ("t1", "t2") and stage.distance >= 4096)
    stages = {stage: (loads, stage if loads else none, none if loads else stage) for stage in candidates}
    workloads = row_workloads if rows else stencil_workloads if stencils else calibration.workloads
    cases = workloads(mib, np.random.default_rng(0))
    print(f"{'streamed loads' if loads else 'sources of streamed stores'}, {mib} MiB "
          f"{'float64' if stencils or rows else 'float32'} per array, speed "
          f"relative to no software prefetch, medians of {rounds} interleaved rounds")
    for name, case in cases.items():
        table, noise = calibration.compare_stages(stages, none, {name: case}, rounds)
        print(f"  {name} (spread up to {noise:.2f}): "
              + ", ".join(f"{stage.describe()} {table[stage][name]:.2f}x" for stage in stages), flush=True)


if __name__ == "__main__":
    flags = [a for a in sys.argv[1:] if a.startswith("--")]
    numbers = [int(a) for a in sys.argv[1:] if not a.startswith("--")]
    main(*numbers, loads="--loads" in flags, stencils="--stencils" in flags, rows="--rows" in flags)
