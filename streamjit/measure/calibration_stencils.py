"""Measuring the ``stencil_sources`` row: how the sources of a stencil's
loop are best lowered on this machine.

A stencil's loop that loads rows of one array again
(`passes/stream_loads.reads_rows_again`: a 2-D or 3-D sweep) reads each
row again, from the cache, as the next rows' neighbours. A prefetch that brings the
rows ahead into a level read several times can pay there where the same
prefetch of a copy's or a gather's sources, each line read once, does not:
on the AMD EPYC Zen 4 VM (bench/load_stages.py --stencils) prefetcht1 4 KiB
ahead ran a swap Jacobi 1.59x and prefetchnta 2 KiB 1.10x, while the copy
and the gather from L2 lost under prefetcht1. So these loops have a row of
their own, measured here as `calibration.measure_load_stages` measures the
``sources`` row: every candidate of `calibration.SOURCE_CANDIDATES` on
5-point sweeps (float32 rows of 4096 items, the output misaligned by one;
float64 rows of 4000, the output a copy of the grid, as callers allocate
it), a 7-point 3-D sweep and NPBench's hdiff (about 13 source streams of
160-item rows, where the NTA hint gains and a prefetch into L2 loses: 64
MiB float64, `prefetchnta` 2 KiB 1.07x, `prefetcht1` 4 KiB 0.76-0.79x
against no prefetch on the Zen 4 VM), against no software prefetch,
chosen by `calibration.choose` (a candidate that loses on one loses).
"""

import numpy as np

from . import calibration
from .. import measure
from ..machine.profile import LoadStage, cpu_name, machine_profile, stage_record, update_profile_file


def heat7(out, u):
    """A 7-point 3-D heat sweep of ``u`` into the interior of ``out``."""
    for i in range(1, u.shape[0] - 1):
        for j in range(1, u.shape[1] - 1):
            for k in range(1, u.shape[2] - 1):
                out[i, j, k] = u[i, j, k] + 0.1 * (u[i - 1, j, k] + u[i + 1, j, k] + u[i, j - 1, k] + u[i, j + 1, k]
                                                   + u[i, j, k - 1] + u[i, j, k + 1] - 6.0 * u[i, j, k])


def hdiff(in_field, out_field, coeff):
    """NPBench's hdiff (numba_n, without fastmath): fused, a stencil loop of
    about 13 source streams over rows of K items."""
    I, J = out_field.shape[0], out_field.shape[1]
    lap_field = 4.0 * in_field[1:I + 3, 1:J + 3, :] - (
        in_field[2:I + 4, 1:J + 3, :] + in_field[0:I + 2, 1:J + 3, :] +
        in_field[1:I + 3, 2:J + 4, :] + in_field[1:I + 3, 0:J + 2, :])
    res = lap_field[1:, 1:J + 1, :] - lap_field[:-1, 1:J + 1, :]
    flx_field = np.where((res * (in_field[2:I + 3, 2:J + 2, :] - in_field[1:I + 2, 2:J + 2, :])) > 0, 0, res)
    res = lap_field[1:I + 1, 1:, :] - lap_field[1:I + 1, :-1, :]
    fly_field = np.where((res * (in_field[2:I + 2, 2:J + 3, :] - in_field[2:I + 2, 1:J + 2, :])) > 0, 0, res)
    out_field[:, :, :] = in_field[2:I + 2, 2:J + 2, :] - coeff[:, :, :] * (
        flx_field[1:, :, :] - flx_field[:-1, :, :] + fly_field[:, 1:, :] - fly_field[:, :-1, :])


def grid_of_rows(mib, rng, items):
    """A random float64 grid of about ``mib`` MiB whose rows hold ``items`` items."""
    return rng.random(mib * measure.MIB // 8 // items * items).reshape(-1, items)


def hdiff_case(mib, rng, rows=160):
    """NPBench's hdiff as a workload ``(function, arguments, streamed
    output)``: float64 fields of about ``mib`` MiB whose rows (its K, 160
    in NPBench's sizes) hold ``rows`` items."""
    plane = max(1, int((mib * measure.MIB / 8 / rows) ** 0.5))
    return hdiff, (rng.random((plane + 4, plane + 4, rows)), rng.random((plane, plane, rows)),
                   rng.random((plane, plane, rows))), "out_field"


def stencil_workloads(mib, rng, with_hdiff=True):
    """``{name: (function, arguments, streamed output)}``: the sweeps of the
    module doc, ``mib`` MiB per array; hdiff last, left out without
    ``with_hdiff``."""
    g32 = rng.random(mib * measure.MIB // 4 // 4096 * 4096, dtype=np.float32).reshape(-1, 4096)
    out32 = np.empty((g32.shape[0], 4097), np.float32)[:, 1:]
    g64 = grid_of_rows(mib, rng, 4000)
    side = max(3, int((mib * measure.MIB / 8) ** (1 / 3)))
    cube = rng.random((side,) * 3)
    found = {"5-point float32 rows of 4096": (calibration.jacobi5_f32, (out32, g32), "out"),
             "5-point float64 rows of 4000": (measure.jacobi5, (g64.copy(), g64), "out"),
             f"7-point float64 {side}^3": (heat7, (cube.copy(), cube), "out")}
    if with_hdiff:
        function, fields, output = hdiff_case(mib, rng)
        found["hdiff {}x{}x{}".format(*fields[1].shape)] = (function, fields, output)
    return found


# hdiff's compile takes 15-25 s per candidate (the AMD EPYC 2-CPU VM, one
# build: 14 s under numba.njit), the three other sweeps' about 1 s: calibrate
# times hdiff only with --hdiff
HDIFF_COMPILE_SECONDS = 20


def measure_stencil_sources(mib=64, rounds=5, report=print, loaded=False, with_hdiff=True):
    """Measure the ``stencil_sources`` row (with hdiff where ``with_hdiff``);
    return ``(stage, reason, table rows)``, or None where the rounds kept
    disagreeing. The stage stored by an earlier calibration stays unless
    beaten; on a loaded machine (``loaded``) only by a clear gain."""
    none, profile = LoadStage(), machine_profile()
    previous = profile.stencil_sources if profile.reasons["stencil_sources"].startswith("calibrated") else None
    builds = {stage: (False, none, stage) for stage in calibration.SOURCE_CANDIDATES}
    table, agreed = calibration.racing_compare(builds, none, stencil_workloads(mib, np.random.default_rng(0),
                                                                                 with_hdiff), rounds, report,
                                               keep=(previous,))
    if not agreed:
        return None
    chosen = calibration.choose(table, none, previous, calibration.CLEAR_GAIN if loaded else calibration.GAIN)
    report(f"sources of streamed stencil loops, speed relative to no software prefetch ({mib} MiB per array"
           + ("" if with_hdiff else "; NPBench's hdiff left out, --hdiff times it") + "):")
    for stage, ratios in table.items():
        report(("  * " if stage == chosen else "    ") + calibration.describe_ratios(stage, ratios))
    return (chosen, f"calibrated on {cpu_name()}: " + calibration.describe_ratios(chosen, table[chosen]),
            [{"stage": "stencil_sources", "choice": stage.describe(), **ratios} for stage, ratios in table.items()])


def save_stencil_sources(stage, reason, rows):
    """Store the stage `measure_stencil_sources` chose, with its reason and measurements, in the profile file."""
    return update_profile_file({"profile": {"stencil_sources": stage_record(stage),
                                            "reasons": {"stencil_sources": reason}}}, {"stencil_sources": rows})
