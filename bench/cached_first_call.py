"""A kernel's first call in a fresh process with ``cache=True`` (its entry
loaded from disk, no compilation): `streamjit.stream_kernel` against
`numba.njit`, the same loop, in alternating fresh processes, medians
(min-max) of the import of the decorator's package plus the first call,
and of the first call alone.

Numba refreshes its CPU target before it loads an entry (every registry
of implementations, and SciPy where installed); streamjit loads an entry
without that where every symbol its code declares resolves already
(`streamjit/cache.py`).

Run: python bench/cached_first_call.py [rounds]   (default 9)
"""

import os
import subprocess
import sys
import tempfile

import numpy as np

# Each decorator in a module file of its own: Numba's cache sits beside
# the source it was compiled from.
KERNEL = """
import time
start = time.perf_counter()
import numpy as np
{imports}

@{decorator}
def smooth(u):
    out = np.empty_like(u)
    out[0], out[-1] = u[0], u[-1]
    for i in range(1, u.shape[0] - 1):
        out[i] = 0.25 * u[i - 1] + 0.5 * u[i] + 0.25 * u[i + 1]
    return out

set_up = time.perf_counter()  # (the array's set-up is left out of the total)
u = np.random.default_rng(0).random(1 << 20)
called = time.perf_counter()
out = smooth(u)
end = time.perf_counter()
assert np.allclose(out[1:-1], 0.25 * u[:-2] + 0.5 * u[1:-1] + 0.25 * u[2:])
print(end - start - (called - set_up), end - called)
"""

BUILDS = {
    "numba.njit(cache=True)": dict(imports="import numba", decorator="numba.njit(cache=True)"),
    "stream_kernel(cache=True)": dict(imports="import streamjit as sj",
                                      decorator='sj.stream_kernel(stream_stores=["out"], cache=True)'),
}


def run(path):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, path], capture_output=True, text=True, check=True, env=env)
    return tuple(float(x) for x in done.stdout.split())


def main(rounds=9):
    from streamjit import measure
    totals, calls = {name: [] for name in BUILDS}, {name: [] for name in BUILDS}
    with tempfile.TemporaryDirectory() as folder:
        scripts = {}
        for number, (name, parts) in enumerate(BUILDS.items()):
            scripts[name] = os.path.join(folder, f"kernel_{number}.py")
            with open(scripts[name], "w") as f:
                f.write(KERNEL.format(**parts))
            run(scripts[name])  # compiles and writes the entry
        for _ in range(rounds):
            for name, path in scripts.items():
                total, call = run(path)
                totals[name].append(total)
                calls[name].append(call)
    print(measure.host_description())
    print(f"first call of a cached kernel (3-point stencil into a fresh array, 1 Mi float64) in a fresh process, "
          f"medians (min-max) of {rounds} alternating processes")
    for name in BUILDS:
        print(f"{name:26s} import + first call {1e3 * np.median(totals[name]):4.0f} ms "
              f"({1e3 * min(totals[name]):.0f}-{1e3 * max(totals[name]):.0f}); first call "
              f"{1e3 * np.median(calls[name]):5.1f} ms ({1e3 * min(calls[name]):.1f}-{1e3 * max(calls[name]):.1f})")


if __name__ == "__main__":
    main(*[int(a) for a in sys.argv[1:2]])
