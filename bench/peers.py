"""NPBench's memory-bound kernels side by side: NumPy, numba.njit, streamjit, JAX, Pythran and DaCe,
and NPBench's parallel Numba sources under numba.njit and streamjit.

The peers' sources are NPBench's own (vendored beside its Numba kernels in
bench/npbench/benchmarks/, BSD 3-Clause, see bench/npbench/README.md), run
the way NPBench's frameworks run them:

- ``numpy``: ``<module>_numpy.py``;
- ``numba``: the ``numba_n`` source under ``numba.jit`` as NPBench has it
  (`npbench.load_kernel`'s ``njit``);
- ``streamjit``: the same source under ``stream_kernel(stream_stores=True)``
  (`npbench.load_kernel`'s ``stream``);
- ``numba_np``: NPBench's parallel nopython source, ``<module>_numba_np.py``
  ("nopython-mode-parallel": ``nb.jit(nopython=True, parallel=True,
  fastmath=True)``, Numba's parallel array expressions and reductions),
  under ``numba.jit`` as NPBench has it; cavity_flow's names its function
  ``nopython_mode`` upstream (NPBench's loader, asking for ``cavity_flow``,
  skips it), run under that name (`PARALLEL_FUNCS`); a kernel with no such
  source upstream says so in its cells;
- ``streamjit_np``: the same source under
  ``stream_kernel(stream_stores=True)``, ``parallel=True`` and the other
  options kept (`load_parallel`, `npbench.VARIANTS`'s ``stream``, as
  ``streamjit`` is made);
- ``jax``: ``<module>_jax.py`` (``jax.jit``), CPU, float64 enabled
  (``jax_enable_x64``), arguments made JAX arrays before timing, each call
  waited for (``jax.block_until_ready``);
- ``pythran``: ``<module>_pythran.py`` compiled ahead of time with NPBench's
  flags (``-DUSE_XSIMD -fopenmp -march=native -ffast-math``), BLAS from
  ``scipy-openblas64`` when installed; the module is cached in
  ``bench/out/peers/pythran/<hash of source, flags, version>/``;
- ``dace``: ``<module>_dace.py``'s program parsed, simplified and
  ``auto_optimize``\\ d for the CPU as NPBench's ``dace_cpu`` does, compiled
  into ``bench/out/peers/dace/`` (named by the SDFG's hash, reused).

Each kernel runs in a process of its own with every framework asked for.
Each framework's first call (it compiles) is validated against NumPy's
result as NPBench validates (``np.allclose``, else a relative error under the
benchmark's ``norm_error``; JAX's returned arrays against NumPy's in-place
outputs); a framework that fails to import, build or run, or whose result
differs, is reported in its cell and the others go on. Then 7 interleaved
rounds, the in-place inputs restored before each call (untimed), medians.

Threads: numba, streamjit and Pythran run one thread; NumPy one, but its
matrix products (gemver's) call BLAS with all its threads, as do njit's and
streamjit's; JAX (XLA's CPU thread pool), DaCe (OpenMP), numba_np and
streamjit_np (Numba's threading layer, ``NUMBA_NUM_THREADS``) run as they
run, on every core. Speeds stay against the one-thread ``numba`` column.
``--threads 1`` sets ``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``,
``MKL_NUM_THREADS``, ``NUMBA_NUM_THREADS`` to 1 and ``XLA_FLAGS`` to
``--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1`` in the
kernel processes: everything on one thread. The table's head says which.

Sizes: `SIZES`, arrays of 200-300 MiB per kernel (bench/npbench.py's SIZES
where they fall in that range). ``--scale`` multiplies the arrays' bytes
(each scaled dimension by scale to the power 1/dimensions), time steps
unchanged: ``--scale 0.05`` for a smoke run.

Run: python bench/peers.py [--kernels a,b] [--frameworks numpy,numba,...] [--scale S] [--rounds 7]
                           [--threads 1] [--json F]
(frameworks: numpy, numba, streamjit, jax, pythran, dace, numba_np, streamjit_np; all by default;
numpy, numba, streamjit, numba_np and streamjit_np need only streamjit's own dependencies)
Installs: pip install ".[peers]" (see pyproject.toml's note on DaCe and NumPy 2)
"""

import argparse
import hashlib
import importlib.util
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "out" / "peers"
FRAMEWORKS = ("numpy", "numba", "streamjit", "jax", "pythran", "dace", "numba_np", "streamjit_np")
PARALLEL = {"numba_np": "njit", "streamjit_np": "stream"}  # framework -> npbench.VARIANTS' decorator
OPTIONAL = {"jax": "jax", "pythran": "pythran", "dace": "dace"}  # framework -> module it needs
KERNELS = ("heat_3d", "jacobi_1d", "jacobi_2d", "fdtd_2d", "cavity_flow", "hdiff", "gemver", "go_fast",
           "arc_distance", "softmax")
PYTHRAN_FLAGS = ("-DUSE_XSIMD", "-fopenmp", "-march=native", "-ffast-math")  # NPBench's
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1",
              "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"}

# kernel -> (NPBench preset, {parameter: (value, its power in the bytes)}): arrays of 200-300 MiB.
# bench/npbench.py's SIZES where they fit (heat_3d, jacobi_1d/2d, fdtd_2d, cavity_flow, softmax);
# go_fast and gemver N=6000 (8000 there: 488 MiB); arc_distance N=8e6 (2.5e6 there: 76 MiB);
# hdiff NPBench's paper preset (246 MiB). Time steps as bench/npbench.py has them, never scaled.
SIZES = {
    "heat_3d": ("L", {"N": (256, 3)}, {"TSTEPS": 3}),                         # 2 x 128 MiB
    "jacobi_1d": ("L", {"N": (16_000_000, 1)}, {"TSTEPS": 3}),                # 2 x 122 MiB
    "jacobi_2d": ("L", {"N": (4000, 2)}, {"TSTEPS": 3}),                      # 2 x 122 MiB
    "fdtd_2d": ("L", {"NX": (3000, 1), "NY": (3000, 1)}, {"TMAX": 3}),        # 3 x 69 MiB
    "cavity_flow": ("L", {"nx": (3000, 1), "ny": (3000, 1)}, {"nt": 2, "nit": 10}),  # 3 x 69 MiB
    "hdiff": ("paper", {"I": (256, 1), "J": (256, 1), "K": (160, 1)}, {}),    # 246 MiB
    "gemver": ("paper", {"N": (6000, 2)}, {}),                                # A: 275 MiB
    "go_fast": ("paper", {"N": (6000, 2)}, {}),                               # 275 MiB
    "arc_distance": ("paper", {"N": (8_000_000, 1)}, {}),                     # 4 x 61 MiB
    "softmax": ("paper", {"SM": (256, 2)}, {}),                               # float32, 256 MiB
}
# JAX's kernels return their outputs (NumPy's change them in place): the names of what they
# return, where not NPBench's output_args in order
JAX_RETURNS = {"gemver": ("A", "x", "w"), "fdtd_2d": ("ex", "ey", "hz", "_fict_")}
# the parallel sources' kernel functions, where not NPBench's func_name: upstream's cavity_flow_numba_np.py
# defines nopython_mode (the numba_n source's cavity_flow, renamed)
PARALLEL_FUNCS = {"cavity_flow": "nopython_mode"}


def _npbench():
    """bench/npbench.py as a module (its kernel loading, arguments and validation)."""
    module = sys.modules.get("bench_npbench")
    if module is None:
        spec = importlib.util.spec_from_file_location("bench_npbench", HERE / "npbench.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["bench_npbench"] = module
        spec.loader.exec_module(module)
    return module


def parameters(name, scale=1.0):
    """``(label, parameters)``: the kernel's `SIZES` entry over its NPBench
    preset, the array dimensions scaled so the bytes scale by ``scale``."""
    npb = _npbench()
    info = npb.kernel_info(name)
    preset, sized, fixed = SIZES[name]
    dims = sum(power for _, power in sized.values())
    changed = {k: max(4, round(v * scale ** (1 / dims))) for k, (v, _) in sized.items()}
    changed.update(fixed)
    label = preset + "".join(f" {k}={v}" for k, v in changed.items())
    return label, {**info["parameters"][preset], **changed}


def _module(path, name):
    """``path`` imported as module ``name`` (DaCe reads the source of its programs)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _source(name, suffix):
    npb = _npbench()
    info = npb.kernel_info(name)
    return npb._source_dir(info) / f"{info['module_name']}_{suffix}.py"


class NoParallelSource(LookupError):
    """The kernel has no ``<module>_numba_np.py`` in NPBench: its cell says so."""


def load_parallel(name, variant):
    """The kernel's parallel Numba source (``<module>_numba_np.py``), loaded
    by bench/npbench.py's `load_kernel`: its decorators made ``variant``'s
    (one of its ``VARIANTS``), options kept."""
    if not _source(name, "numba_np").is_file():
        raise NoParallelSource(f"no parallel source upstream (NPBench has no {_source(name, 'numba_np').name})")
    return _npbench().load_kernel(name, variant, "numba_np", PARALLEL_FUNCS.get(name))[0]


def _short(error):
    text = f"{type(error).__name__}: {error}" if isinstance(error, BaseException) else str(error)
    return " ".join(text.split())[:160]


def pythran_module(name):
    """The kernel's Pythran module, compiled once into the cache."""
    import pythran
    path = _source(name, "pythran")
    flags = list(PYTHRAN_FLAGS)
    if importlib.util.find_spec("scipy_openblas64"):
        flags += ["--config", "compiler.blas=scipy-openblas"]
    key = hashlib.sha256("\0".join([path.read_text(), *flags, pythran.__version__, sys.version]).encode())
    folder = OUT / "pythran" / key.hexdigest()[:16]
    module_name = path.stem
    built = [p for p in folder.glob(f"{module_name}*.so")] if folder.exists() else []
    if not built:
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / f"{module_name}.so"
        done = subprocess.run([sys.executable, "-m", "pythran.run", *flags, str(path), "-o", str(target)],
                              capture_output=True, text=True)
        if done.returncode or not target.exists():
            text = done.stderr + done.stdout
            lines = [l.split("error: ", 1)[-1] for l in text.splitlines() if "error: " in l or "Error" in l]
            raise RuntimeError("pythran: " + (lines or text.strip().splitlines() or ["?"])[0].strip())
        built = [target]
    return _module(built[0], module_name)


def dace_program(name):
    """The kernel's DaCe program, auto-optimized for the CPU as NPBench's
    ``dace_cpu`` framework does (its "auto_opt" SDFG), compiled."""
    import dace
    import numpy as np
    from dace.transformation.auto import auto_optimize as opt
    dace.Config.set("default_build_folder", value=str(OUT / "dace"))
    dace.Config.set("cache", value="hash")
    dace.Config.set("compiler", "use_cache", value=True)
    dace.Config.set("debugprint", value=False)
    npb = _npbench()
    module = _module(_source(name, "dace"), f"peers_{name}_dace")
    program = getattr(module, npb.kernel_info(name)["func_name"])
    # DaCe 1.0 writes NumPy scalars into its symbolic expressions by repr: NumPy 1's ("1"), not 2's ("np.int64(1)")
    printing = np.get_printoptions()
    np.set_printoptions(legacy="1.25")
    try:
        sdfg = program.to_sdfg(simplify=False)
        sdfg.simplify()
        opt.auto_optimize(sdfg, dace.dtypes.DeviceType.CPU)
        return sdfg.compile()
    finally:
        np.set_printoptions(**printing)


def thread_note(threads):
    cores = len(os.sched_getaffinity(0))
    if threads == 1:
        return ("threads: all 1 (OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=MKL_NUM_THREADS=NUMBA_NUM_THREADS=1, "
                f"XLA_FLAGS={ONE_THREAD['XLA_FLAGS']!r})")
    omp = os.environ.get("OMP_NUM_THREADS", str(cores))
    numba_threads = os.environ.get("NUMBA_NUM_THREADS", str(cores))
    return (f"threads: numba, streamjit, Pythran 1, NumPy 1 (BLAS calls: {cores}, also njit's and streamjit's); "
            f"JAX: XLA's CPU pool, {cores} cores; DaCe: OpenMP, {omp} threads; numba_np, streamjit_np: "
            f"Numba's threading layer, {numba_threads} threads")


def run_kernel(name, frameworks, scale=1.0, rounds=7):
    """One kernel, every framework in ``frameworks``: a dict for the table
    (times in seconds; ``failed``: framework -> reason)."""
    import numpy as np
    from streamjit import measure
    npb = _npbench()
    info = npb.kernel_info(name)
    label, params = parameters(name, scale)
    originals = npb.arguments(name, params)
    work = [np.copy(a) if isinstance(a, np.ndarray) else a for a in originals]
    names = info["input_args"]
    outputs = info.get("output_args", [])
    norm_error = info.get("norm_error", 1e-5)

    def restore():
        for w, a in zip(work, originals):
            if isinstance(a, np.ndarray):
                np.copyto(w, a)

    def named(result, inplace=True, returns=None):
        returned = list(result) if isinstance(result, (tuple, list)) else [] if result is None else [result]
        if returns is None:
            out = {f"return{i}": np.array(v) for i, v in enumerate(returned)}
        else:
            out = {n: np.array(v) for n, v in zip(returns, returned) if n}
        if inplace:
            out.update({a: np.copy(work[names.index(a)]) for a in outputs})
        return out

    # each framework: (call, outputs of a call's result)
    runners, failed, loaded, seconds_load = {}, {}, {}, {}
    reference = None
    for fw in ("numpy",) + tuple(f for f in frameworks if f != "numpy"):
        start = time.perf_counter()
        try:
            if fw == "numpy":
                func = getattr(_module(_source(name, "numpy"), f"peers_{name}_numpy"), info["func_name"])
                call, outs = (lambda f=func: f(*work)), named
            elif fw in ("numba", "streamjit"):
                func, _ = npb.load_kernel(name, "njit" if fw == "numba" else "stream")
                call, outs = (lambda f=func: f(*work)), named
            elif fw in PARALLEL:
                func = load_parallel(name, PARALLEL[fw])
                call, outs = (lambda f=func: f(*work)), named
            elif fw == "jax":
                import jax
                jax.config.update("jax_enable_x64", True)
                import jax.numpy as jnp
                func = getattr(_module(_source(name, "jax"), f"peers_{name}_jax"), info["func_name"])
                jargs = [jnp.array(a) if isinstance(a, np.ndarray) else a for a in originals]
                returns = JAX_RETURNS.get(name, outputs or None)
                call = lambda f=func, j=jargs: jax.block_until_ready(f(*j))
                outs = lambda result, r=returns: named(result, inplace=False, returns=r)
            elif fw == "pythran":
                func = getattr(pythran_module(name), info["func_name"])
                call, outs = (lambda f=func: f(*work)), named
            elif fw == "dace":
                # NPBench passes the program its arrays and scalars by name, and its size symbols
                symbols = {p: params[p] for p in info["parameters"]["L"] if p not in names}
                compiled = dace_program(name)
                kwargs = dict(zip(names, work), **symbols)
                call, outs = (lambda c=compiled, k=kwargs: c(**k)), named
            else:
                raise ValueError(f"unknown framework {fw}")
            restore()
            result = outs(call())
            seconds_load[fw] = time.perf_counter() - start
            if fw == "numpy":
                reference = result
            if fw in frameworks:
                missing = [k for k in reference if k not in result]
                if missing:
                    failed[fw] = f"invalid: no {', '.join(missing)} in its result"
                elif not npb.validate([reference[k] for k in reference], [result[k] for k in reference],
                                      norm_error):
                    bad = [k for k in reference if not npb.validate([reference[k]], [result[k]], norm_error)]
                    failed[fw] = f"invalid: {', '.join(bad)} differ from NumPy's"
                else:
                    runners[fw] = call
            del result
        except NoParallelSource as error:
            failed[fw] = str(error)
        except Exception as error:  # a framework that cannot build or run: say why, go on
            if fw == "numpy" and reference is None:
                raise
            failed[fw] = "failed: " + _short(error)
            print(traceback.format_exc(), file=sys.stderr)
    reference = None
    times = measure.interleaved_times(runners, rounds, warmups={fw: restore for fw in runners})
    medians = {fw: statistics.median(t) for fw, t in times.items()}
    versions = {}
    for fw, module in (("jax", "jax"), ("pythran", "pythran"), ("dace", "dace")):
        if fw in frameworks and module in sys.modules:
            versions[fw] = getattr(sys.modules[module], "__version__", "?")
    return dict(kernel=name, size=label, mib=sum(a.nbytes for a in originals if isinstance(a, np.ndarray)) / 2**20,
                seconds=medians, failed=failed, first_call_seconds=seconds_load, versions=versions,
                rounds=rounds, threads=thread_note(1 if os.environ.get("XLA_FLAGS") == ONE_THREAD["XLA_FLAGS"] else None))


def available(frameworks):
    """``{framework: why it cannot run}`` for those whose package is not importable here."""
    missing = {}
    for fw in frameworks:
        module = OPTIONAL.get(fw)
        if module and importlib.util.find_spec(module) is None:
            missing[fw] = f"not installed ({module}; pip install \".[peers]\")"
        elif fw == "pythran" and not (shutil.which("g++") or shutil.which("c++")):
            missing[fw] = "failed: no C++ compiler (g++)"
    return missing


def run_in_process(name, args, frameworks, timeout):
    """`run_kernel` in a fresh Python process; its row, or one saying why not."""
    command = [sys.executable, __file__, "--one", name, "--frameworks", ",".join(frameworks),
               "--scale", str(args.scale), "--rounds", str(args.rounds)]
    env = dict(os.environ, **(ONE_THREAD if args.threads == 1 else {}))
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return dict(kernel=name, error=f"over {timeout} s")
    if done.returncode:
        lines = done.stderr.strip().splitlines() or [f"exit status {done.returncode}"]
        return dict(kernel=name, error=" ".join(lines[-1].split())[:200])
    return json.loads(done.stdout.strip().splitlines()[-1])


def geomean(values):
    values = list(values)
    return math.exp(sum(map(math.log, values)) / len(values)) if values else float("nan")


def ran(row, fw):
    return "error" not in row and fw in row["seconds"]


def speed(row, fw):
    """njit's median over ``fw``'s (above 1: faster than numba.njit)."""
    return row["seconds"]["numba"] / row["seconds"][fw]


def cell(row, fw, skipped):
    if fw in skipped:
        return skipped[fw]
    if "error" in row:
        return "-"
    if fw in row["failed"]:
        return row["failed"][fw][:80]
    return f"{row['seconds'][fw] * 1e3:.4g}" if fw in row["seconds"] else "-"


def format_row(row, frameworks, skipped):
    if "error" in row:
        return f"| {row['kernel']} | {row.get('size', '')} | | failed: {row['error']} |"
    cells = [row["kernel"], row["size"], f"{row['mib']:.3g}", *(cell(row, fw, skipped) for fw in frameworks)]
    if "numba" in frameworks:
        cells += [f"{speed(row, fw):.2f}x" if ran(row, fw) and ran(row, "numba") else "-"
                  for fw in frameworks if fw != "numba"]
    return "| " + " | ".join(cells) + " |"


def table_head(frameworks):
    heads = ["kernel", "size", "MiB", *(f"{fw} ms" for fw in frameworks)]
    if "numba" in frameworks:
        heads += [f"{fw} / njit" for fw in frameworks if fw != "numba"]
    return "| " + " | ".join(heads) + " |\n|" + "---|" * len(heads)


def summary(rows, frameworks, skipped):
    """Geometric means of the speed against njit: over the kernels where
    every framework that could run ran (and validated), and each framework's
    over those it ran."""
    if "numba" not in frameworks:
        return "(no numba column: no speeds against njit)"
    present = [fw for fw in frameworks if fw not in skipped]
    others = [fw for fw in present if fw != "numba"]
    complete = [r for r in rows if all(ran(r, fw) for fw in present)]
    lines = [f"geomean / njit over the {len(complete)} kernels where all of {', '.join(present)} ran: "
             + ", ".join(f"{fw} {geomean(speed(r, fw) for r in complete):.2f}x" for fw in others)]
    lines.append("each over the kernels it ran: " + ", ".join(
        f"{fw} {geomean(speed(r, fw) for r in rows if ran(r, fw) and ran(r, 'numba')):.2f}x "
        f"({sum(ran(r, fw) and ran(r, 'numba') for r in rows)})" for fw in others))
    if skipped:
        lines.append("not run: " + "; ".join(f"{fw}: {why}" for fw, why in skipped.items()))
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kernels", help=f"comma-separated (default: {','.join(KERNELS)})")
    parser.add_argument("--frameworks", default=",".join(FRAMEWORKS), help="comma-separated (default: all eight)")
    parser.add_argument("--scale", type=float, default=1.0, help="times the arrays' bytes (smoke run: 0.05)")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--threads", type=int, choices=(1,), help="1: every framework on one thread")
    parser.add_argument("--timeout", type=int, default=3600, help="seconds per kernel process")
    parser.add_argument("--json", help="also write the rows to this file")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # the child process: one kernel, its row as JSON
    args = parser.parse_args(argv)
    frameworks = [f for f in args.frameworks.split(",") if f]
    unknown = [f for f in frameworks if f not in FRAMEWORKS]
    if unknown:
        parser.error(f"unknown frameworks {unknown}: choose from {', '.join(FRAMEWORKS)}")
    if args.one:
        print(json.dumps(run_kernel(args.one, frameworks, args.scale, args.rounds)))
        return
    names = args.kernels.split(",") if args.kernels else list(KERNELS)
    unknown = [k for k in names if k not in SIZES]
    if unknown:
        parser.error(f"unknown kernels {unknown}: choose from {', '.join(KERNELS)}")
    skipped = available(frameworks)
    runnable = [fw for fw in frameworks if fw not in skipped]
    sys.path.insert(0, str(HERE.parent))
    from streamjit import measure
    print(measure.host_description())
    print(f"NPBench kernels, one process each, {args.rounds} interleaved rounds, medians; ms per call, and "
          f"njit's time over each framework's (above 1: faster than numba.njit); scale {args.scale:g}")
    print(thread_note(args.threads) + "\n")
    print(table_head(frameworks), flush=True)
    rows = []
    for name in names:
        rows.append(run_in_process(name, args, runnable, args.timeout))
        print(format_row(rows[-1], frameworks, skipped), flush=True)
        if args.json:
            Path(args.json).write_text(json.dumps(rows, indent=1))
    versions = {}
    for row in rows:
        versions.update(row.get("versions", {}))
    print("\n" + summary(rows, frameworks, skipped))
    if versions:
        print("versions: " + ", ".join(f"{k} {v}" for k, v in versions.items()))


if __name__ == "__main__":
    main()
