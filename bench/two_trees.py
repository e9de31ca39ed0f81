"""Two checkouts of streamjit side by side: first-call compile times, the
STREAM copy and triad at 256 MiB float32 and the 5-point stencil drop-in,
each round a fresh process per tree, the trees alternating, medians.

    python bench/two_trees.py BEFORE_DIR AFTER_DIR [ROUNDS]

(`git archive <rev> | tar -x -C BEFORE_DIR` makes a checkout of a revision.)
"""

import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

MIB = 1 << 20


def _median_seconds(run, calls=5):
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def one_round():
    """One round in this process: what the checkout on ``sys.path`` does."""
    import streamjit as sj
    try:
        from streamjit import measure
    except ImportError:  # a checkout from before streamjit/bench/ was named measure/
        from streamjit import bench as measure

    small, grid = np.zeros(64, np.float32), np.zeros((16, 64), np.float32)
    copy = sj.stream_kernel(stream_stores=["a"], threshold=None)(measure.stream_copy)
    triad = sj.stream_kernel(stream_stores=["a"], threshold=None)(measure.stream_triad)
    jacobi = sj.stream_kernel(stream_stores=["out"], threshold=None)(measure.jacobi5)
    stencil = sj.stencil(measure.jacobi5_stencil)
    result = {f"first call {name} s": _median_seconds(lambda: run(*args), calls=1) for name, run, args in (
        ("copy", copy, (small, small.copy())), ("triad", triad, (small, small.copy(), small.copy(), np.float32(2))),
        ("jacobi5", jacobi, (grid.copy(), grid)), ("stencil", stencil, (grid,)))}
    n = 256 * MIB // 4
    a, b, c = np.zeros(n + 1, np.float32)[1:], np.random.default_rng(0).random(n, np.float32), np.ones(n, np.float32)
    result["copy GB/s"] = 2 * a.nbytes / _median_seconds(lambda: copy(a, b)) / 1e9
    result["triad GB/s"] = 3 * a.nbytes / _median_seconds(lambda: triad(a, b, c, np.float32(3))) / 1e9
    del a, b, c
    g = np.random.default_rng(0).random((8192, 8192), np.float32)
    out = stencil(g)
    result["stencil GB/s"] = (g.nbytes + out.nbytes) / _median_seconds(lambda: stencil(g, out=out)) / 1e9
    print(json.dumps(result))


def main(before, after, rounds=4):
    trees = {"before": before, "after": after}
    results = {name: [] for name in trees}
    for r in range(rounds):
        for name in (("before", "after") if r % 2 == 0 else ("after", "before")):
            done = subprocess.run([sys.executable, __file__, "--measure"], env=dict(os.environ, PYTHONPATH=trees[name]),
                                  capture_output=True, text=True, check=True)
            results[name].append(json.loads(done.stdout.strip().splitlines()[-1]))
    for key in results["before"][0]:
        b, a = (statistics.median(r[key] for r in results[name]) for name in ("before", "after"))
        print(f"{key:22s} before {b:8.3f}  after {a:8.3f}  after/before {a / b:5.3f}")


if __name__ == "__main__":
    if sys.argv[1:] == ["--measure"]:
        one_round()
    else:
        main(sys.argv[1], sys.argv[2], *map(int, sys.argv[3:]))
