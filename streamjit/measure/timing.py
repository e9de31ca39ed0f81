"""How implementations are timed side by side: machines are shared and
noisy, so they run in one process, interleaved round by round (rotated, each
once untimed first), and are compared by medians and ratios; each median
keeps the spread of its rounds (`Spread`: smallest to largest)."""

import os
import statistics
import time

import numba
import numpy as np

from ..machine.profile import cpu_name

MIB = 1 << 20

def host_description():
    """One line naming the host: the CPU model, its CPU count, the Numba target CPU, and the Numba
    and NumPy versions (the head of every table)."""
    return (f"{cpu_name()} ({os.cpu_count()} CPUs, {numba.config.CPU_NAME or 'host'} target); "
            f"numba {numba.__version__}, numpy {np.__version__}")


def repeated(function, args, times):
    """A callable calling ``function(*args)`` (two arguments) ``times``
    times: one timing of a small size. The call is written out as user
    code writes it: through `functools.partial` or ``*args`` a Python
    function's call costs 20-40 ns more than a C function's."""
    first, second = args

    def batch():
        for _ in range(times):
            function(first, second)
    return batch


def wall_seconds(run):
    """The wall-clock seconds one call of ``run()`` takes (`time.perf_counter`)."""
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


class Spread(float):
    """A median (the float itself) that keeps the smallest and largest of
    the values it is the median of (one per round) and how many there were:
    tables show ``median (low-high)``, CSV files three columns, plots error
    bars, and `winning_band` asks whether all rounds agree."""

    def __new__(cls, values):
        values = list(values)
        self = super().__new__(cls, statistics.median(values))
        self.low, self.high, self.count = min(values), max(values), len(values)
        return self


def interleaved_times(runners, rounds, warmups=None, seconds=wall_seconds, warm=True):
    """Run each callable once per round, in turn (rotated); return
    ``{key: [seconds(runner) per round]}`` (by default its wall time).
    ``warmups`` (some of the same keys) run untimed just before their
    runner, so no run pays for the cache state the one before it left (data
    that streamed stores evicted). With ``warm``, each other runner first
    runs once untimed: no timed call is a first call (which compiles a
    signature not seen yet, and touches fresh pages: 0.23-0.29 s against
    0.0005 s for a stencil table's loop nest)."""
    times = {key: [] for key in runners}
    keys = list(runners)
    for key in keys if warm else ():
        if not (warmups and key in warmups):
            runners[key]()
    for round_ in range(rounds):
        # each round starts with the next runner, so none always follows the same one
        for key in keys[round_ % len(keys):] + keys[:round_ % len(keys)]:
            if warmups and key in warmups:
                warmups[key]()
            times[key].append(seconds(runners[key]))
    return times


def spread(times):
    """How far a build's rounds disagree: its upper quartile over its lower
    one. The median decides, and one slow round moves it little; on the
    AMD EPYC Zen 4 VM (2 vCPUs) the slowest round over the fastest kept
    `python -m streamjit calibrate` from choosing any load stage
    (1.32-1.75x in three tries), where the quartiles let it choose."""
    if len(times) < 2:
        return 1.0  # one round cannot disagree with itself
    low, _, high = statistics.quantiles(times, n=4, method="inclusive")
    return high / low


def interleaved_medians(runners, rounds, warmups=None, seconds=wall_seconds):
    """The median of each runner's `interleaved_times`."""
    return {key: statistics.median(t) for key, t in interleaved_times(runners, rounds, warmups, seconds).items()}


def rates(times, amount):
    """``amount`` per second of each runner, as a `Spread` over the rounds."""
    return {key: Spread(amount / t for t in runs) for key, runs in times.items()}


def speedups(times, reference):
    """Each runner's speed relative to ``reference`` as a `Spread` of the
    ratios within each round (the runners of one round ran back to back,
    under the same load)."""
    return {key: Spread(r / t for r, t in zip(times[reference], runs)) for key, runs in times.items()}


def human_size(nbytes):
    """``nbytes`` in the largest binary unit it fills: "4 KiB", "1.5 MiB"."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if nbytes >= 1 << shift:
            return f"{nbytes / (1 << shift):.4g} {unit}"
    return f"{nbytes} B"
