"""Large copies above glibc's own streaming size: `np.copyto` against
`streamjit.copyto` (which times its ways and takes the faster), the
streamed copies it chooses between (one thread; as many threads as
Numba's, taking blocks as they come free) and the split it made before
(a `prange`: each thread's half fixed in advance), in one process,
interleaved rounds, medians with their spread.

Run: python bench/copy_threads.py [MiB] [--busy] [--first-calls] [--at-import] [--load]
(default 256 MiB, float32, destination misaligned by one element; --busy
keeps one core busy with another process, `python -c "while 1: pass"`,
while it runs; --first-calls times each of the first `streamjit.copyto`
calls of this fresh process instead, against np.copyto's median;
--at-import times the copies a fresh process makes at once after `import
streamjit`, its arrays made before: the first starts loading the copy
kernel on a thread, and copies run np.copyto until it is there; --load
times, in fresh processes, how long after its first large copy starts the
copy kernel is there (the second copy streams only if it is there when it
starts), then profiles the loading thread once)
"""

import os
import subprocess
import sys

# The prange runner's OpenMP workers spin after each parallel region
# (libgomp's default wait policy), on the core the next runners' threads
# need: with one core busy, streamjit.copyto measured 0.34x np.copyto
# beside it and 1.27x with passive workers (16 MiB, AMD EPYC Zen 2 VM).
# Passive, so each runner is timed alone.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numba  # noqa: E402  (after the wait policy, which OpenMP reads when Numba starts it)
import numpy as np

import streamjit as sj
from streamjit.dropins import copy as dropins
from streamjit import measure


def _copy_in_halves(dst, src):
    for i in numba.prange(dst.shape[0]):
        dst[i] = src[i]


copy_in_halves = sj.stream_kernel(stream_stores=["dst"], parallel=True, nogil=True, threshold=None)(_copy_in_halves)


def main(mib=256, rounds=11, busy=False):
    n = (mib << 20) // 4
    src = np.random.default_rng(0).random(n + 1, dtype=np.float32)[1:]
    dst = np.empty(n + 1, np.float32)[:-1]
    threads = numba.get_num_threads()
    runners = {
        "np.copyto": lambda: np.copyto(dst, src),
        "streamjit.copyto": lambda: sj.copyto(dst, src),
        f"streamed, {threads} threads, blocks": lambda: dropins.copy_in_blocks(dst, src, threads),
        f"streamed, {threads} threads, halves": lambda: copy_in_halves(dst, src),
        "streamed, one thread": lambda: dropins._copy_elements(dst, src),
    }
    for run in runners.values():
        dst[:] = 0
        run()
        assert np.array_equal(dst, src)
    spinner = subprocess.Popen([sys.executable, "-c", "while 1: pass"]) if busy else None
    try:
        times = measure.interleaved_times(runners, rounds)
    finally:
        if spinner:
            spinner.kill()
    print(measure.host_description())
    print(f"{mib} MiB float32 copy, {'one core busy' if busy else 'no other load started'}; read + written bytes per "
          f"second and speed relative to np.copyto, medians (min-max) of {rounds} interleaved rounds")
    gbs, ratios = measure.rates(times, 2 * n * 4 / 1e9), measure.speedups(times, "np.copyto")
    for name in runners:
        print(f"{name:32s} {gbs[name]:5.1f} ({gbs[name].low:.1f}-{gbs[name].high:.1f}) GB/s  "
              f"{ratios[name]:.2f}x ({ratios[name].low:.2f}-{ratios[name].high:.2f})")


def first_calls(mib=256, calls=12, rounds=7):
    """Each of the first ``calls`` copies of this process, in ms: no call
    may pay a compilation or wait for measurements (they once took 82, 397,
    21, 21, ..., 11.6 ms). The destination's pages are touched first, so
    that the first call does not pay for faulting them in."""
    n = (mib << 20) // 4
    src = np.random.default_rng(0).random(n + 1, dtype=np.float32)[1:]
    dst = np.full(n + 1, -1.0, np.float32)[:-1]  # (written: np.zeros would leave its pages to fault in)
    times = [measure.wall_seconds(lambda: sj.copyto(dst, src)) for _ in range(calls)]
    assert np.array_equal(dst, src)
    numpy = np.median([measure.wall_seconds(lambda: np.copyto(dst, src)) for _ in range(rounds)])
    steady = np.median(times[calls // 2:])
    print(measure.host_description())
    print(f"{mib} MiB float32 copy, fresh process; streamjit.copyto per call (ms): "
          + ", ".join(f"{t * 1e3:.1f}" for t in times))
    print(f"np.copyto median of {rounds}: {numpy * 1e3:.1f} ms; second call {numpy / times[1]:.2f}x np.copyto; "
          f"slowest call {max(times) / steady:.2f}x the steady time ({steady * 1e3:.1f} ms)")


AT_IMPORT = """
import sys, time
import numpy as np
n = (int(sys.argv[1]) << 20) // 4
src = np.random.default_rng(0).random(n + 1, dtype=np.float32)[1:]
dst = np.full(n + 1, -1.0, np.float32)[:-1]
numpy = []
for _ in range(5):
    start = time.perf_counter(); np.copyto(dst, src); numpy.append(time.perf_counter() - start)
start = time.perf_counter()
import streamjit as sj
imported = time.perf_counter()
times = []
while time.perf_counter() - imported < 1.0:
    t = time.perf_counter(); sj.copyto(dst, src); times.append(time.perf_counter() - t)
assert np.array_equal(dst, src)
print(f"import {(imported - start) * 1e3:.0f} ms; np.copyto before it {np.median(numpy) * 1e3:.1f} ms; "
      "copies in the next second (ms): " + ", ".join(f"{t * 1e3:.1f}" for t in times))
"""


def at_import(mib=256, runs=3):
    """Copies made at once after `import streamjit` in fresh processes (the
    first starts loading the copy kernel on a thread), against np.copyto's
    time in the same process before the import."""
    for _ in range(runs):
        print(subprocess.run([sys.executable, "-c", AT_IMPORT, str(mib)], capture_output=True, text=True,
                             check=True).stdout.strip())


LOAD = """
import cProfile, pstats, sys, time
import numpy as np
import streamjit as sj
from streamjit.dropins import copy as dropins
n, profile = (int(sys.argv[1]) << 20) // 4, sys.argv[2] == "profile"
src = np.random.default_rng(0).random(n, dtype=np.float32)
dst = np.full(n, -1.0, np.float32)
load, profiler, loaded = dropins.load_copy_kernel, cProfile.Profile(), []
def timed_load():
    if profile:
        profiler.enable()
    try:
        load()
    finally:
        profiler.disable()
        loaded.append(time.perf_counter())
dropins.load_copy_kernel = timed_load
start = time.perf_counter()
sj.copyto(dst, src)
copied = time.perf_counter()
dropins._kernel_loaded.wait()
print(f"first copy {(copied - start) * 1e3:.1f} ms, kernel there {(loaded[0] - start) * 1e3:.1f} ms after it started; "
      f"SciPy's BLAS imported: {'scipy.linalg' in sys.modules}, np.ma: {'numpy.ma' in sys.modules}")
if profile:
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(r"streamjit|numba|llvmlite|numpy", 25)
"""


def load_latency(mib=256, runs=5):
    """How long after a fresh process's first large copy starts the copy
    kernel is loaded (on its thread), in ``runs`` processes, then the
    loading thread's profile (cProfile: its times are inflated)."""
    for _ in range(runs):
        print(subprocess.run([sys.executable, "-c", LOAD, str(mib), "time"], capture_output=True, text=True,
                             check=True).stdout.strip())
    print(subprocess.run([sys.executable, "-c", LOAD, str(mib), "profile"], capture_output=True, text=True,
                         check=True).stdout.strip())


if __name__ == "__main__":
    mib = [int(a) for a in sys.argv[1:2] if a.isdigit()]
    if "--first-calls" in sys.argv:
        first_calls(*mib)
    elif "--load" in sys.argv:
        print(measure.host_description())
        load_latency(*mib)
    elif "--at-import" in sys.argv:
        print(measure.host_description())
        at_import(*mib)
    else:
        main(*mib, busy="--busy" in sys.argv)
