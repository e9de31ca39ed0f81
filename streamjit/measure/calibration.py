"""Measuring this machine: the machine profile's rows (`info.py` shows them).

Sits above the dispatcher (it compiles and runs kernels); `machine/profile.py`
below it only stores and reads what is measured here.

`measure_load_stages` decides, as FFTW's planner does, by timing the
candidates on this machine: each way to lower loads (no software prefetch;
``prefetch{nta,t0,t1,t2}`` at several distances; non-temporal loads) runs
on sequential streams (STREAM copy and triad, a 5-point stencil) and on
cache-sensitive workloads (a gather from a table that stays in L2, and from
one that does not, while a large input streams past), interleaved, medians.

- ``sources``: the loads of a loop whose stores stream (``stream_stores``
  alone), against no software prefetch;
- ``stream_loads``: the loads the user streams (``stream_loads=True``),
  against the same kernel with ``stream_stores`` alone (which runs with
  the ``sources`` choice just made): a streamed load may cost nothing.

A candidate wins only where it is at least `NO_LOSS` of the baseline on
every workload and its geometric mean beats the incumbent's by `GAIN`
(more than the run-to-run spread); otherwise the incumbent stays: the
choice stored by an earlier calibration where there is one, else the
baseline. On a loaded machine (`load_note`) a win must be clear:
`CLEAR_GAIN`. Where the rounds of one build disagree by more than `NOISE`,
the workload is measured again, up to `RETRIES` times; rounds that still
disagree choose nothing, and `calibrate` saves no load profile from them.
The workloads run one after the other (`racing_compare`): a candidate that
lost on one is not compiled for the next (compiles, 0.3-1 s each, are most
of calibrate's time).

The ``stencil_sources`` row is measured so on stencils (`calibration_stencils.py`).

`measure_scalar_stores` times scalar NT stores against plain ones in loops
that do not vectorize, per item size: the ``scalar_nt_bytes`` row;
`measure_scalar_ops` the same per operation computed per element stored:
the ``scalar_nt_ops`` row; `measure_wide_stencils` streamed stencil sweeps
at 512 bits against LLVM's width, per item size: ``wide_stencil_bytes``.
`measure_page_alias` times the aligned loop against the staged loop (at
each of `STRIPS`) with sources a few bytes behind the streamed store
modulo 4 KiB: the ``page_alias_bytes`` row (a check where the aligned loop
stalls) and the ``strip_bytes`` row (the staged loop's fastest strip).
"""

import dataclasses
import math
import os
import statistics

import numpy as np

from .. import measure
from ..machine.cpu_defaults import STALLING_PAGE_ALIAS_BYTES
from ..kernel.dispatcher import StreamDispatcher
from ..machine.profile import (ROWS, SCALAR_NT_ITEM_BYTES, LoadStage, cache_sizes, cpu_name, machine_profile,
                               stage_record, update_profile_file, vector_isa)
from ..options import validate_options

NO_LOSS = 0.97
GAIN = 1.02
# Rounds of one build further apart than this (`measure.spread`, the
# quartiles) are noise, not the build: on loaded 2-CPU VMs the slowest and
# fastest round differed by 1.3-2x
NOISE = 1.15
CLEAR_GAIN = 1.08
# How often a comparison whose rounds disagree is measured again before
# calibrate gives up on it (chosen, not measured: each takes a minute or two)
RETRIES = 2
# Load average over the last minute, in CPUs taken by other processes, from
# which timings here are not the machine's own
LOADED = 0.5
# What calibrate's estimate of its time assumes (the AMD EPYC 2-CPU VM, CPU
# seconds of first calls: a streamed loop's compile 0.25-0.5 s, 1 s with its
# staged loop; a 64 MiB copy 6-10 ms)
COMPILE_SECONDS = 0.4
MIB_PER_SECOND = 10_000
SOURCE_CANDIDATES = (LoadStage(),) + tuple(LoadStage(h, d) for h, d in (
    ("nta", 512), ("nta", 2048), ("t0", 512), ("t0", 4096), ("t1", 512), ("t1", 1024), ("t1", 4096),
    ("t2", 4096)))
LOAD_CANDIDATES = SOURCE_CANDIDATES + (LoadStage(nt_loads=True), LoadStage("nta", 2048, True),
                                       LoadStage("t1", 4096, True))


def jacobi5_f32(out, g):
    """The 5-point Jacobi sweep of float32 the profile is measured with."""
    for r in range(1, g.shape[0] - 1):
        for c in range(1, g.shape[1] - 1):
            out[r, c] = np.float32(0.2) * (g[r, c] + g[r, c - 1] + g[r, c + 1] + g[r - 1, c] + g[r + 1, c])


def workloads(mib, rng):
    """``{name: (function, arguments, streamed output)}``: float32 arrays of
    ``mib`` MiB, destinations misaligned by one element."""
    n = mib * measure.MIB // 4
    a, b, c = (rng.random(n + 1, dtype=np.float32)[1:] for _ in range(3))
    width = 4096
    g = rng.random(n // width * width, dtype=np.float32).reshape(-1, width)
    out = np.empty((g.shape[0], width + 1), np.float32)[:, 1:]
    l2 = cache_sizes().get("L2", 1 << 20)
    found = {"copy": (measure.stream_copy, (a, b), "a"), "triad": (measure.stream_triad, (a, b, c, np.float32(3)), "a"),
             "5-point stencil": (jacobi5_f32, (out, g), "out")}
    for label, table_bytes in (("L2", l2 // 2), ("4xL2", 4 * l2)):
        lut = rng.random(table_bytes // 4, dtype=np.float32)
        key = rng.integers(0, lut.shape[0], n, dtype=np.int32)
        found[f"gather, {table_bytes >> 10} KiB table ({label})"] = (measure.gather, (a, lut, key, b), "out")
    return found


def kernel_with_stages(function, output, stream_loads, loads, sources=None, **rows):
    """A kernel streaming stores to ``output`` (and its loads, if
    ``stream_loads``) with its streamed loads lowered as ``loads`` says and
    its sources, in a stencil's loop too, as ``sources`` says (None: as the
    machine profile's ``sources`` and ``stencil_sources`` rows say), and the
    other `StreamOptions` fields and machine profile rows in ``rows``
    (``threshold``, ``page_alias_bytes``) as given."""
    options, forwarded = validate_options(function, [output], stream_loads, None, None, None, {})
    stages = {} if sources is None else {"sources": sources, "stencil_sources": sources}
    machine = dataclasses.replace(options.machine, **{k: v for k, v in rows.items() if k in ROWS})
    fields = {k: v for k, v in rows.items() if k not in ROWS}
    return StreamDispatcher(function, dataclasses.replace(options, loads=loads, machine=machine, **stages, **fields),
                            forwarded, {})


def load_note():
    """A line saying the machine is busy with other work (its load average
    over the last minute), or "" when it is not."""
    try:
        load = os.getloadavg()[0]
    except OSError:
        return ""
    if load < LOADED:
        return ""
    return (f"note: this machine is loaded (load average {load:.2f} over the last minute, {os.cpu_count()} CPUs): "
            "timings are noisy, so only clear wins replace the stored choices")


def compare_stages(builds, baseline, cases, rounds):
    """``({build: {workload: speed relative to the baseline build}}, noise)``:
    ``builds`` is ``{key: (stream_loads, loads stage, sources stage)}``,
    ``noise`` the largest `measure.spread` of a build's rounds."""
    table, noise = {}, 1.0
    for name, (function, args, output) in cases.items():
        kernels = {key: kernel_with_stages(function, output, *how) for key, how in builds.items()}
        times = measure.interleaved_times({k: (lambda k=k: kernels[k](*args)) for k in kernels}, rounds)
        noise = max(noise, *map(measure.spread, times.values()))
        medians = {key: statistics.median(t) for key, t in times.items()}
        for key in kernels:
            table.setdefault(key, {})[name] = medians[baseline] / medians[key]
    return table, noise


def racing_compare(builds, baseline, cases, rounds, report, keep=(), kernels=None):
    """``(table, agreed)``: ``{build: {workload: speed relative to the
    baseline build}}`` of `compare_stages`, the workloads timed one after
    the other, each build compiled once (a retry reuses it, and builds
    alike, ``(stream_loads, loads stage, sources stage)`` equal, share one)
    into the streamed loop alone (``threshold=None``, no page-alias check:
    arrays allocated alike trail by chance, and the check would time the
    staged or plain loop instead). A workload whose rounds disagree by more
    than `NOISE` is timed again, at most `RETRIES` times; ``agreed`` is
    False when they still do. A build that lost on a workload (below
    `NO_LOSS`: `choose` never picks it) is not compiled for the workloads
    after it, unless it is the baseline or in ``keep`` (the incumbent):
    the table holds the workloads it was timed on. ``kernels``:
    ``{(workload, build): kernel}`` compiled by an earlier call, added to."""
    table, kernels = {key: {} for key in builds}, {} if kernels is None else kernels
    for name, (function, args, output) in cases.items():
        racing = [key for key in builds
                  if key == baseline or key in keep or min(table[key].values(), default=1) >= NO_LOSS]
        for key in racing:
            if (name, builds[key]) not in kernels:
                kernels[name, builds[key]] = kernel_with_stages(function, output, *builds[key], threshold=None,
                                                                page_alias_bytes=0)
        medians = agreeing_medians({key: (lambda k=kernels[name, builds[key]]: k(*args)) for key in racing}, rounds,
                                   report)
        if medians is None:
            return table, False
        for key in racing:
            table[key][name] = medians[baseline] / medians[key]
    return table, True


def agreeing_medians(runners, rounds, report):
    """The medians of `measure.interleaved_times`, timed again while the
    rounds of one runner disagree by more than `NOISE`, at most `RETRIES`
    times; None when they still do."""
    for attempt in range(RETRIES + 1):
        times = measure.interleaved_times(runners, rounds)
        noise = max(map(measure.spread, times.values()))
        if noise <= NOISE:
            return {key: statistics.median(t) for key, t in times.items()}
        report(f"note: rounds of one build disagree by up to {noise:.2f}x (more than {NOISE}x): "
               + (f"measuring again ({attempt + 1} of {RETRIES})" if attempt < RETRIES else "giving up"))
    return None


def choose(table, baseline, incumbent=None, gain=GAIN):
    """The winning key of a `compare_stages` table (see the module doc): the best
    candidate that loses nowhere, where it beats ``incumbent`` (a key of
    ``table``, by default the baseline) by ``gain``."""
    def geomean(ratios):
        return math.exp(sum(map(math.log, ratios.values())) / len(ratios))

    incumbent = incumbent if incumbent in table else baseline
    fair = {s: r for s, r in table.items() if s != incumbent and min(r.values()) >= NO_LOSS}
    best = max(fair, key=lambda s: geomean(fair[s]), default=None)
    if best is None or geomean(fair[best]) < gain * geomean(table[incumbent]):
        return incumbent
    return best


def previous_stages():
    """``(sources, stream_loads)`` an earlier calibration stored (None where none)."""
    profile = machine_profile()
    calibrated = profile.origin.startswith("calibrated")
    return tuple(getattr(profile, name) if calibrated and profile.reasons.get(name, "").startswith("calibrated")
                 else None for name in ("sources", "stream_loads"))


def describe_ratios(stage, ratios):
    """A stage and its speed per workload, as calibrate prints and stores them."""
    return f"{stage.describe()}: " + ", ".join(f"{w} {r:.2f}x" for w, r in ratios.items())


def measure_load_stages(mib=64, rounds=5, report=print, previous=(None, None), loaded=False):
    """Measure both load stages; return ``(sources, stream_loads, reasons,
    table rows)``, or None where the rounds kept disagreeing (see the module
    doc). ``previous``: the stored ``(sources, stream_loads)``, kept unless
    beaten; ``loaded``: the machine is busy (see the module doc)."""
    cases = workloads(mib, np.random.default_rng(0))
    none = LoadStage()
    gain, kernels = CLEAR_GAIN if loaded else GAIN, {}
    sources_table, agreed = racing_compare({stage: (False, none, stage) for stage in SOURCE_CANDIDATES}, none, cases,
                                           rounds, report, keep=previous[:1], kernels=kernels)
    if not agreed:
        return None
    sources = choose(sources_table, none, previous[0], gain)
    report(f"sources of streamed stores, speed relative to no software prefetch ({mib} MiB float32 per array):")
    for stage, ratios in sources_table.items():
        report(("  * " if stage == sources else "    ") + describe_ratios(stage, ratios))
    # candidates for stream_loads, against stream_stores alone (which lowers its sources as just chosen)
    alone = "stream_stores alone"
    loads_table, agreed = racing_compare({alone: (False, none, sources),
                                           **{stage: (True, stage, sources) for stage in LOAD_CANDIDATES}}, alone,
                                          cases, rounds, report, keep=(sources, previous[1]), kernels=kernels)
    if not agreed:
        return None
    del loads_table[alone]
    loads = choose(loads_table, sources, previous[1], gain)
    report("streamed loads (stream_loads=True), speed relative to stream_stores alone:")
    for stage, ratios in loads_table.items():
        report(("  * " if stage == loads else "    ") + describe_ratios(stage, ratios))
    reasons = {
        "sources": f"calibrated on {cpu_name()}: " + describe_ratios(sources, sources_table[sources]),
        "stream_loads": f"calibrated on {cpu_name()}: " + describe_ratios(loads, loads_table[loads])
        + ("" if loads != sources else " (the same as stream_stores alone: no other lowering gained here)"),
    }
    rows = [{"stage": kind, "choice": s.describe(), **r} for kind, tbl in (("sources", sources_table),
                                                                           ("stream_loads", loads_table))
            for s, r in tbl.items()]
    return sources, loads, reasons, rows


def save_load_stages(sources, loads, reasons, rows):
    """Store the two load stages `measure_load_stages` chose, with their
    reasons and measurements, in the profile file."""
    return update_profile_file({"profile": {"sources": stage_record(sources), "stream_loads": stage_record(loads),
                                            "reasons": reasons}}, {"profile": rows})


def at_page_offset(shape, offset, rng):
    """Random float32 data of ``shape`` starting ``offset`` bytes into a 4 KiB page."""
    n = math.prod(shape)
    buffer = np.empty(n + 2048, np.float32)
    skip = (offset - buffer.ctypes.data) % 4096 // 4
    array = buffer[skip:skip + n].reshape(shape)
    array[...] = rng.random(shape, dtype=np.float32)
    return array


def page_alias_workloads(mib, rng):
    """``{name: (function, arguments, streamed output)}`` whose sources trail
    the streamed store by a few bytes modulo 4 KiB, as arrays allocated
    alike do: triad with its destination 12 bytes past its sources, the
    5-point stencil with its output at its input's offset (4 bytes past
    the left neighbour it reads)."""
    n = mib * measure.MIB // 4
    b, c = at_page_offset((n,), 16, rng), at_page_offset((n,), 16, rng)
    width = 4096
    g = at_page_offset((n // width, width), 64, rng)
    return {"triad, destination 12 bytes past its sources":
            (measure.stream_triad, (at_page_offset((n,), 28, rng), b, c, np.float32(3)), "a"),
            "5-point stencil, output at its input's offset": (jacobi5_f32, (at_page_offset(g.shape, 64, rng), g),
                                                              "out")}


def page_alias_choice(speeds):
    """``(page_alias_bytes, table)`` for ``{workload: staged loop's time /
    aligned loop's time}`` with sources a few bytes behind: the check (such
    calls then run staged, `cpu_defaults.STALLING_PAGE_ALIAS_BYTES`) where
    the staged loop wins as `choose` lets a load stage win over the one in
    force (at least `NO_LOSS` of the aligned loop on every workload, `GAIN`
    on their geometric mean), else 0. A win on one workload does not decide:
    on the AMD EPYC Zen 4 VM (bench/machine_profile.py, 256 MiB) the staged
    triad ran 1.08x the aligned loop and the staged stencil 0.71x, 0.78x
    `numba.njit`."""
    table = ", ".join(f"{w} {r:.2f}x" for w, r in speeds.items())
    speed_against_aligned = {0: dict.fromkeys(speeds, 1.0),
                             STALLING_PAGE_ALIAS_BYTES: {w: 1 / r for w, r in speeds.items()}}
    return choose(speed_against_aligned, 0), table


# The strips (bytes per destination) calibrate runs the staged loop with;
# bench/staging.py sweeps more.
STRIPS = (256, 512, 1024, 2048)


def staging_builds(function, output, strips, **rows):
    """``{None: the aligned loop, strip: the staged loop}`` of a kernel
    streaming ``output``, its sources lowered as this machine's profile says:
    no page-alias check, and the check of the CPUs where trailing sources
    stall (so every call whose sources trail closely stages) in strips of
    each of ``strips`` bytes; other `StreamOptions` fields in ``rows``."""
    builds = {None: kernel_with_stages(function, output, False, LoadStage(), page_alias_bytes=0, **rows)}
    builds.update({strip: kernel_with_stages(function, output, False, LoadStage(),
                                             page_alias_bytes=STALLING_PAGE_ALIAS_BYTES, strip_bytes=strip, **rows)
                   for strip in strips})
    return builds


def measure_page_alias(mib=64, rounds=5, report=print):
    """Measure whether sources trailing a streamed store modulo 4 KiB stall
    it here (as `page_alias_choice` decides, the staged loop at its best
    strip against the aligned loop) and which of `STRIPS` the staged loop
    runs fastest with; return ``(page_alias_bytes, strip_bytes, reasons,
    table rows)``."""
    aligned_speed = {}  # workload -> {strip: the staged loop's time / the aligned loop's}
    for name, (function, args, output) in page_alias_workloads(mib, np.random.default_rng(0)).items():
        kernels = staging_builds(function, output, STRIPS)
        medians = measure.interleaved_medians({k: (lambda k=k: kernels[k](*args)) for k in kernels}, rounds)
        paths = {k: kernel.stream_calls()["streamed" if k is None else "staged"] for k, kernel in kernels.items()}
        if not all(paths.values()):
            raise RuntimeError(f"{name}: calls on their path per build (None: the aligned loop) {paths}: the "
                               "workload does not measure the check")
        aligned_speed[name] = {strip: medians[strip] / medians[None] for strip in STRIPS}
    value, table, strip, strips = staging_choice(aligned_speed)
    report(f"sources trailing a streamed store modulo 4 KiB ({mib} MiB float32), the aligned loop against the "
           f"staged loop the check runs, {strip}-byte strips: {table}: " + (f"stalls, check {value} bytes" if value
                                                                             else "no stall, no check")
           + f"\nthe aligned loop against the staged loop per strip (geometric mean): {strips}: {strip} bytes")
    reasons = {"page_alias_bytes": f"calibrated on {cpu_name()}: aligned against staged loop with sources a few bytes "
                                   f"behind modulo 4 KiB: {table}",
               "strip_bytes": f"calibrated on {cpu_name()}: the aligned loop against the staged loop per strip: "
                              f"{strips}"}
    rows = [{"row": "page_alias_bytes", **{n: s[strip] for n, s in aligned_speed.items()}},
            {"row": "strip_bytes", **{n: {str(k): v for k, v in s.items()} for n, s in aligned_speed.items()}}]
    return value, strip, reasons, rows


def staging_choice(aligned_speed):
    """``(page_alias_bytes, its table, strip_bytes, the strips' table)`` for
    ``{workload: {strip: the staged loop's time / the aligned loop's}}``:
    the strip whose staged loop is fastest (geometric mean over the
    workloads), and `page_alias_choice` of that strip's staged loop."""
    strips = list(next(iter(aligned_speed.values())))
    by_strip = {strip: statistics.geometric_mean([s[strip] for s in aligned_speed.values()]) for strip in strips}
    strip = min(strips, key=by_strip.get)
    value, table = page_alias_choice({name: speeds[strip] for name, speeds in aligned_speed.items()})
    return value, table, strip, ", ".join(f"{s} B {by_strip[s]:.2f}x" for s in strips)


def save_page_alias(page_alias_bytes, strip_bytes, reasons, rows):
    """Store the ``page_alias_bytes`` and ``strip_bytes`` rows
    `measure_page_alias` chose, with their reasons and measurements, in the
    profile file."""
    return update_profile_file({"profile": {"page_alias_bytes": page_alias_bytes, "strip_bytes": strip_bytes,
                                            "reasons": reasons}}, {"page_alias": rows})


# How much larger than calibrate's --profile-mib the sweeps of
# measure_wide_stencils are (256 MiB at its default): their gain depends on
# the size (the Intel Xeon VM, family 6 model 167, float64, 512 bits against
# 256: 1.14x at 32 MiB, 1.00x at 64, 1.08x at 128, 1.05x at 256, 1.03x at
# 512), so they run at the sizes users stream
WIDE_STENCIL_SCALE = 4


def _row_speeds(row, every, cases, rounds, **fixed):
    """``{item bytes: {workload: the kernel's time with the machine-profile
    row ``row`` empty / with it ``every``}}``: ``cases`` is ``[(function,
    arguments)]``, each streaming its stores to its first argument, whose
    item size the ratio is filed under; sources prefetched as the machine
    profile says, the rows ``fixed`` as given in both builds."""
    speeds = {}
    for function, args in cases:
        output = function.__code__.co_varnames[0]
        kernels = {sizes: kernel_with_stages(function, output, False, LoadStage(), threshold=None,
                                             **fixed, **{row: sizes}) for sizes in ((), every)}
        medians = measure.interleaved_medians({k: (lambda k=k: kernels[k](*args)) for k in kernels}, rounds)
        speeds.setdefault(args[0].itemsize, {})[f"{function.__name__} {args[0].dtype.name}"] = \
            medians[()] / medians[every]
    return speeds


def _gains(ratios, on_now):
    """Whether a choice, on (``ratios``: workload -> speed with it / without), loses nowhere and gains
    (`choose`), the value in force the incumbent (``on_now``): a choice changes side only by a gain."""
    return choose({"off": {w: 1.0 for w in ratios}, "on": ratios}, "off", "on" if on_now else "off") == "on"


def _gaining_sizes(speeds, row):
    """The item sizes of `_row_speeds` where the row, on, lost nowhere and
    gained (`_gains`), and the table as text."""
    current = getattr(machine_profile(), row)
    chosen = tuple(n for n, s in speeds.items() if _gains(s, n in current))
    return chosen, ", ".join(f"{w} {r:.2f}x" for s in speeds.values() for w, r in s.items())


def measure_scalar_stores(mib=64, rounds=5, report=print):
    """Measure scalar non-temporal stores against plain stores in loops that
    do not vectorize (`measure.running_sum`, `measure.checked_scale`) per
    item size (float32, float64), sources prefetched as the profile in
    force says (on the Intel Xeon VM, float32 gained 1.11-1.17x with
    prefetcht1 and lost 0.35-0.40x without); return ``(scalar_nt_bytes, reason, table
    rows)``: the sizes where scalar NT stores lose nowhere and gain (`choose`)."""
    cases = []
    for function in (measure.running_sum, measure.checked_scale):
        for dtype in (np.float32, np.float64):
            a = np.random.default_rng(0).random(mib * measure.MIB // np.dtype(dtype).itemsize).astype(dtype)
            cases.append((function, (np.empty_like(a), a)))
    speeds = _row_speeds("scalar_nt_bytes", SCALAR_NT_ITEM_BYTES, cases, rounds)
    chosen, table = _gaining_sizes(speeds, "scalar_nt_bytes")
    report(f"scalar NT stores against plain stores in loops that do not vectorize ({mib} MiB): {table}: "
           + (f"scalar NT stores of {'- and '.join(map(str, chosen))}-byte items" if chosen else "plain stores"))
    return chosen, f"calibrated on {cpu_name()}: scalar NT against plain stores: {table}", [speeds]


# The operations per element stored `measure_scalar_ops` times scalar NT stores at
SCALAR_OPS = (0, 1, 2, 4, 8, 16)


def measure_scalar_ops(mib=64, rounds=5, report=print):
    """Measure scalar non-temporal stores of 64-bit items against plain
    stores in a loop that does not vectorize computing each element by 0 to
    16 dependent operations (`measure.chain`), its source prefetched
    as the profile in force says (on the Intel Xeon VM, 2 to 8 operations
    gained 1.15-1.50x with prefetcht1 and lost 0.35-0.78x without); return ``(scalar_nt_ops,
    reason, table rows)``: the most operations up to which scalar NT stores
    lose nowhere and gain (`choose`); 0 where they gain only in the copy
    (whether they gain there is the ``scalar_nt_bytes`` row's measurement)."""
    a = np.random.default_rng(0).random(mib * measure.MIB // 8)
    args, profile = (np.empty_like(a), a, 0.25), machine_profile()
    speeds = {ops: _row_speeds("scalar_nt_bytes", (8,), [(measure.chain(ops, checked=True), args)], rounds,
                               scalar_nt_ops=ops)[8] for ops in SCALAR_OPS}
    chosen = 0
    for ops in SCALAR_OPS[1:]:
        if not _gains(speeds[ops], ops <= profile.scalar_nt_ops):
            break
        chosen = ops
    table = ", ".join(f"{ops} operations {r:.2f}x" for ops, s in speeds.items() for r in s.values())
    report(f"scalar NT stores against plain stores per operation computed per element stored ({mib} MiB float64): "
           f"{table}: scalar NT stores in loops computing at most {chosen}")
    return chosen, f"calibrated on {cpu_name()}: scalar NT against plain stores, checked loops: {table}", [speeds]


def measure_wide_stencils(mib=256, rounds=5, report=print):
    """Measure streamed 5-point Jacobi sweeps (`jacobi5_f32`, and
    `measure.jacobi5` in float64; the output a copy of the grid, as callers
    allocate it) vectorized `machine.WIDE_VECTOR_BYTES` wide against LLVM's
    own width, sources prefetched as the profile in force says; return
    ``(wide_stencil_bytes, reason, table rows)``: the item sizes where the
    wide vectors lose nowhere and gain (`choose`). None on a CPU without
    AVX-512. ``mib``: the two arrays of each sweep together."""
    if vector_isa() != "AVX-512":
        report(f"wide stencils: not measured, this CPU has no AVX-512 ({vector_isa()})")
        return None
    rng, cases = np.random.default_rng(0), []
    for function, dtype in ((jacobi5_f32, np.float32), (measure.jacobi5, np.float64)):
        side = int((mib * measure.MIB // 2 // np.dtype(dtype).itemsize) ** 0.5)
        g = rng.random((side, side)).astype(dtype)
        cases.append((function, (g.copy(), g)))
    speeds = _row_speeds("wide_stencil_bytes", (4, 8), cases, rounds)
    chosen, table = _gaining_sizes(speeds, "wide_stencil_bytes")
    report(f"streamed stencils 512 bits wide against LLVM's width ({mib} MiB): {table}: "
           + (f"wide vectors for {'- and '.join(map(str, chosen))}-byte items" if chosen else "LLVM's width"))
    return chosen, f"calibrated on {cpu_name()}: streamed 5-point sweeps 512 bits wide: {table}", [speeds]


def save_row(row, value, reason, rows):
    """Store a row measured on its own (``scalar_nt_bytes`` from `measure_scalar_stores`, ``scalar_nt_ops`` from
    `measure_scalar_ops`, ``wide_stencil_bytes`` from `measure_wide_stencils`), with its reason and measurements."""
    return update_profile_file({"profile": {row: list(value) if isinstance(value, tuple) else value,
                                            "reasons": {row: reason}}},
                               {row: [{str(n): s for n, s in table.items()} for table in rows]})
