"""First-call compile time of NPBench kernels: ``numba.jit`` against
``stream_kernel(stream_stores=True)``, each in a fresh process.

Each measurement is a child process that imports Numba and streamjit,
compiles one trivial function (so Numba's own first-use costs, typing
templates and the LLVM target, are paid before the clock starts), loads the
kernel from bench/npbench/ with its decorators made the variant's
(`npbench.load_kernel`, same options), and times the first call on NPBench's
"S" arguments (compile plus a call of milliseconds). Caching is off (a new
``NUMBA_CACHE_DIR`` per child, and the decorators' ``cache=`` dropped) unless
``--cached``: then a first child fills the cache and a second child's first
call, the load, is timed. Rounds interleave the variants; the table gives
medians of wall time and of the child's CPU time (a loaded machine stretches
wall time; CPU time is what the compile costs).

``--source numba_np`` takes NPBench's ``parallel=True`` sources (kernels
that have one). ``--profile KERNEL`` prints where one streamjit compile's
time goes: Numba's pass timings (typing, lowering, streamjit's passes) and
the post-lowering stages under cProfile (O3, streamjit's LLVM stages, machine
code).

Run: python bench/compile_time.py [--kernels a,b] [--rounds 3] [--source numba_np] [--cached]
     python bench/compile_time.py --profile hdiff
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
# the kernels streamjit exists for, then a spread of others (bench/README.md lists them with their ratios)
KERNELS = ("hdiff", "heat_3d", "jacobi_2d", "cavity_flow", "vadv", "fdtd_2d", "gemver", "nbody", "adi", "softmax")
VARIANTS = ("njit", "stream")

CHILD = r"""
import json, os, resource, sys, time
sys.path.insert(0, {here!r})
import numba, numpy as np
import npbench
numba.njit(lambda x: x + 1)(1)          # Numba's first-use costs, paid before the clock
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
name, variant, source, cached = {name!r}, {variant!r}, {source!r}, {cached!r}
# NPBench's decorators name no cache=: every variant gets cache=cached
npbench.VARIANTS = {{k: (lambda f: lambda **o: f(**{{**o, "cache": cached}}))(f) for k, f in npbench.VARIANTS.items()}}
kernel, _ = npbench.load_kernel(name, variant, source, module_dir=os.environ["NUMBA_CACHE_DIR"] if cached else None)
args = npbench.arguments(name, npbench.parameters(name, "S")[1])
wall, used = time.perf_counter(), cpu()
kernel(*args)
print(json.dumps(dict(wall=time.perf_counter() - wall, cpu=cpu() - used)))
"""


def first_call(name, variant, source="numba_n", cached=False, cache_dir=None):
    """``{"wall": s, "cpu": s}`` of the kernel's first call in a fresh process."""
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir or tempfile.mkdtemp(prefix="compile-time-"))
    code = CHILD.format(here=HERE, name=name, variant=variant, source=source, cached=cached)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=1800)
    if done.returncode:
        raise RuntimeError(f"{name} {variant}: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure_kernel(name, rounds, source, cached):
    """``{variant: [{"wall", "cpu"}, ...]}``, variants interleaved round by round."""
    times = {v: [] for v in VARIANTS}
    for _ in range(rounds):
        for variant in VARIANTS:
            cache_dir = tempfile.mkdtemp(prefix="compile-time-")
            if cached:  # the first process fills the cache; the second's first call is its load
                first_call(name, variant, source, True, cache_dir)
            times[variant].append(first_call(name, variant, source, cached, cache_dir))
    return times


def table(rows):
    lines = ["| kernel | njit wall s | streamjit wall s | ratio (wall) | njit CPU s | streamjit CPU s | ratio (CPU) |",
             "|---|---|---|---|---|---|---|"]
    ratios = []
    for name, times in rows.items():
        med = {v: {k: statistics.median(t[k] for t in times[v]) for k in ("wall", "cpu")} for v in VARIANTS}
        wall, cpu = (med["stream"][k] / med["njit"][k] for k in ("wall", "cpu"))
        ratios.append(cpu)
        digits = 3 if med["njit"]["wall"] < 1 else 2  # (a cached load takes tens of ms)
        lines.append(f"| {name} | {med['njit']['wall']:.{digits}f} | {med['stream']['wall']:.{digits}f} | {wall:.2f}x | "
                     f"{med['njit']['cpu']:.{digits}f} | {med['stream']['cpu']:.{digits}f} | {cpu:.2f}x |")
    geomean = statistics.geometric_mean(ratios)
    return "\n".join(lines) + f"\n\ngeomean of the CPU-time ratios: {geomean:.2f}x, worst {max(ratios):.2f}x"


def profile(name, source):
    """Where one streamjit first call's time goes, printed."""
    import cProfile
    import pstats

    sys.path.insert(0, HERE)
    import numba
    import npbench

    numba.njit(lambda x: x + 1)(1)
    kernel, _ = npbench.load_kernel(name, "stream", source)
    args = npbench.arguments(name, npbench.parameters(name, "S")[1])
    profiler = cProfile.Profile()
    profiler.runcall(kernel, *args)
    for sig in kernel.signatures:
        times = kernel.overloads[sig].metadata["pipeline_times"]
        for pipeline, passes in times.items():
            ranked = sorted(passes.items(), key=lambda p: -p[1].run)[:12]
            print(f"{pipeline}: {sum(p.run for _, p in passes.items()):.2f} s in its passes; the slowest:")
            for pass_name, t in ranked:
                print(f"  {t.run:7.3f} s  {pass_name}")
    stats = pstats.Stats(profiler)
    stats.sort_stats("cumulative")
    interesting = ("_optimize_final_module", "run_post_o3", "o3", "loop_widths", "_finalize_specific",
                   "finalize", "lower", "type_inference_stage", "compile_extra", "_compile_core")
    print("\ncumulative seconds (cProfile):")
    stats.print_stats("|".join(interesting))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kernels", default=",".join(KERNELS))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--source", default="numba_n", help="numba_n, or numba_np for the parallel=True sources")
    parser.add_argument("--cached", action="store_true", help="time the load of a cached kernel instead")
    parser.add_argument("--profile", metavar="KERNEL", help="where one streamjit compile's time goes")
    args = parser.parse_args(argv)
    if args.profile:
        return profile(args.profile, args.source)
    sys.path.insert(0, HERE)
    import npbench
    from streamjit import measure

    print(measure.host_description())
    print(f"first call ({'cached load' if args.cached else 'compile, cache off'}), {args.source} sources, "
          f"NPBench preset S, medians of {args.rounds} rounds, each variant in its own process")
    rows = {}
    for name in args.kernels.split(","):
        info = npbench.kernel_info(name)
        path = os.path.join(npbench._source_dir(info), f"{info['module_name']}_{args.source}.py")
        if not os.path.exists(path):
            print(f"{name}: no {args.source} source")
            continue
        rows[name] = measure_kernel(name, args.rounds, args.source, args.cached)
        print(f"{name}: " + ", ".join(f"{v} {statistics.median(t['cpu'] for t in rows[name][v]):.2f} s CPU"
                                      for v in VARIANTS), flush=True)
    print(table(rows))


if __name__ == "__main__":
    main()
