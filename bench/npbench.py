"""NPBench's 54 Numba kernels under `numba.njit` and `streamjit.stream_kernel`.

Each kernel (vendored unchanged in bench/npbench/, see its README) runs in a
process of its own, once per variant, its ``@nb.jit(...)`` decorators
replaced, same options:

- ``njit``: ``numba.jit`` as NPBench has it;
- ``stream``: ``stream_kernel(stream_stores=True)``;
- ``never``: the same with a threshold no call reaches: the rewritten
  (fused) code, never streamed, so ``stream / never`` is streaming's own share;
- ``loads``: ``stream_kernel(stream_stores=True, stream_loads=True)``;
- ``again``: ``numba.jit`` once more, a second dispatcher of the same code:
  ``njit / again`` is what this machine's noise makes of identical code,
  the yardstick for the other ratios.

Every variant's first call (it compiles) is checked against njit's as
NPBench validates (``np.allclose``, else a relative error under the
benchmark's ``norm_error``) and warms up the exact call; then 7 interleaved
rounds, the inputs restored before each call (untimed, as NPBench copies
them), medians. Ratios are njit's median over the variant's (above 1:
faster than njit).

Sizes: `SIZES` gives each kernel an NPBench preset and the parameters changed
from it, so that its arrays total about 250 MiB-1 GiB or one njit call takes
0.05-3 s; the table names what ran.

Run: python bench/npbench.py [--kernels a,b] [--preset S] [--scale 0.5] [--rounds 7] [--json F]
     python bench/npbench.py --compare BEFORE.json AFTER.json
(``--preset`` runs NPBench's preset instead of `SIZES`; ``--scale``
multiplies the parameters `SIZES` changes, for a shorter run)
"""

import argparse
import json
import math
import statistics
import subprocess
import sys
from pathlib import Path

import numba
import numpy as np

import streamjit as sj
from streamjit import measure

HERE = Path(__file__).resolve().parent / "npbench"
NEVER = 1 << 62  # a threshold no call reaches: fused, never streamed
VARIANTS = {
    "njit": lambda **options: numba.jit(**options),
    "stream": lambda **options: sj.stream_kernel(stream_stores=True, **options),
    "never": lambda **options: sj.stream_kernel(stream_stores=True, threshold=NEVER, **options),
    "loads": lambda **options: sj.stream_kernel(stream_stores=True, stream_loads=True, **options),
    "again": lambda **options: numba.jit(**options),
}
DECORATOR = "@nb.jit("  # how every NPBench Numba kernel is decorated

# kernel -> (NPBench preset, parameters changed from it): the smaller of arrays
# of ~250 MiB-1 GiB and a 0.05-3 s njit call on the Intel Xeon VM
# (bench/README.md), 32 calls a kernel; the time-stepped stencils at the
# sizes where streaming matters: arrays of 250-500 MiB, a few steps (NPBench's
# presets keep them in cache: 5 MiB for heat_3d's "L", which no call streams).
# Kernels not listed run NPBench's "paper" preset.
SIZES = {
    "arc_distance": ("paper", {"N": 2_500_000}),          # paper: 3.1 s a call
    "atax": ("paper", {"M": 6000, "N": 6000}),            # paper: 3 GiB, 145 s to initialize
    "bicg": ("paper", {"M": 6000, "N": 6000}),
    "azimint_hist": ("paper", {"N": 10_000_000}),         # paper: 15 MiB, 0.05 s
    "azimint_naive": ("paper", {"N": 50_000}),            # paper: 13.6 s a call
    "cavity_flow": ("L", {"nx": 3000, "ny": 3000, "nt": 2, "nit": 10}),      # L: 1 MiB
    "channel_flow": ("S", {}),                            # runs to convergence: 0.37 s at S
    "cholesky": ("L", {}),
    "compute": ("paper", {"M": 6000, "N": 6000}),         # paper: 2.3 GiB
    "conv2d_bias": ("L", {}),
    "crc16": ("paper", {"N": 10_000_000}),                # paper: 1 MB
    "fdtd_2d": ("L", {"NX": 3000, "NY": 3000, "TMAX": 3}),            # L: 16 MiB
    "floyd_warshall": ("L", {}),                          # paper: N^3 = 22e9 steps
    "gesummv": ("paper", {"N": 6000}),                    # paper: 1.9 GiB
    "go_fast": ("paper", {"N": 8000}),                    # paper: 1.2 GiB
    "gramschmidt": ("L", {}),                             # paper: milliseconds; M=1200 N=1000: 12 s a call
    "heat_3d": ("L", {"N": 256, "TSTEPS": 3}),                        # L: 5 MiB
    "jacobi_2d": ("L", {"N": 4000, "TSTEPS": 3}),                      # L: 7 MiB
    "jacobi_1d": ("L", {"N": 16_000_000, "TSTEPS": 3}),              # L: 0.5 MiB
    "k2mm": ("paper", {"NI": 1600, "NJ": 1800, "NK": 2200, "NL": 2400}),   # paper: 2e11 flops
    "k3mm": ("paper", {"NI": 1600, "NJ": 1800, "NK": 2000, "NL": 2200, "NM": 2400}),
    "lenet": ("L", {}),
    "lu": ("L", {}),                                      # paper: N^3 in scalar loops, seconds
    "ludcmp": ("L", {}),
    "mlp": ("S", {}),                                     # S: 245 MiB already (paper: 1.2 GiB of weights)
    "mvt": ("paper", {"N": 8000}),                        # paper: 2 GiB
    "resnet": ("L", {}),
    "softmax": ("paper", {"SM": 256}),                    # paper: 2 GiB
    "spmv": ("paper", {"M": 500_000, "N": 500_000, "nnz": 10_000_000}),   # paper: 5 MiB
    "trisolv": ("paper", {"N": 6000}),                    # paper: 2 GiB
}


def kernel_names():
    return sorted(p.stem for p in (HERE / "bench_info").glob("*.json"))


def kernel_info(name):
    return json.loads((HERE / "bench_info" / f"{name}.json").read_text())["benchmark"]


def _source_dir(info):
    return HERE / "benchmarks" / info["relative_path"]


def load_kernel(name, variant, source="numba_n", func_name=None, module_dir=None):
    """The kernel's function (``func_name``, else NPBench's name for it) from
    ``<module>_<source>.py`` (``numba_n``; ``numba_np``: the parallel one), its
    module's Numba decorators made ``variant``'s (one of `VARIANTS`, the
    decorator's options kept); helpers it calls are decorated alike. With
    ``module_dir``, the module is written there and imported, as a file
    Numba's ``cache=True`` can locate and load again in another process."""
    info = kernel_info(name)
    path = _source_dir(info) / f"{info['module_name']}_{source}.py"
    text = path.read_text()
    assert DECORATOR in text, f"{path} has no {DECORATOR}"
    # (on the same line: Numba and the report name loops by their line)
    text = text.replace(DECORATOR, "@_variant_jit(")
    module_name = f"npbench_{name}_{variant}_{source}"
    if module_dir is None:
        namespace = {"__name__": module_name, "__file__": str(path), "_variant_jit": VARIANTS[variant]}
        exec(compile(text, str(path), "exec"), namespace)
        return namespace[func_name or info["func_name"]], namespace
    import importlib.util
    module_path = Path(module_dir) / f"{module_name}.py"
    module_path.write_text(text)
    spec = importlib.util.spec_from_file_location(module_name, module_path)
    module = importlib.util.module_from_spec(spec)
    module._variant_jit = VARIANTS[variant]
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return getattr(module, func_name or info["func_name"]), vars(module)


def parameters(name, preset=None, scale=1.0):
    """``(label, parameters)``: NPBench's ``preset``, or `SIZES` (its
    changed parameters times ``scale``)."""
    info = kernel_info(name)
    if preset:
        return preset, dict(info["parameters"][preset])
    base, changed = SIZES.get(name, ("paper", {}))
    changed = {k: type(v)(max(1, round(v * scale))) for k, v in changed.items()}
    label = base + "".join(f" {k}={v}" for k, v in changed.items())
    return label, {**info["parameters"][base], **changed}


def arguments(name, params):
    """The kernel's arguments, made by NPBench's ``initialize``."""
    info = kernel_info(name)
    data = dict(params)
    init = info.get("init")
    if init:
        namespace = {"__name__": f"npbench_{name}_init"}
        path = _source_dir(info) / f"{info['module_name']}.py"
        exec(compile(path.read_text(), str(path), "exec"), namespace)
        made = namespace[init["func_name"]](*(params[a] for a in init["input_args"]))
        made = made if len(init["output_args"]) > 1 else (made,)
        data.update(zip(init["output_args"], made))
    return [data[a] for a in info["input_args"]]


def _outputs(result, args):
    """What a call produced, copied: its return values and every array
    argument (in-place outputs; the others compare equal anyway)."""
    returned = list(result) if isinstance(result, tuple) else [] if result is None else [result]
    return [np.copy(v) for v in returned + [a for a in args if isinstance(a, np.ndarray)]]


def validate(ref, val, norm_error=1e-5):
    """NPBench's check: ``np.allclose``, else a relative (2-norm) error
    under ``norm_error``."""
    if len(ref) != len(val):
        return False
    for r, v in zip(ref, val):
        if np.shape(r) != np.shape(v):
            return False
        if not np.allclose(r, v, rtol=1e-5, atol=1e-8, equal_nan=True):  # (NaN where njit has NaN: equal)
            norm = np.linalg.norm(np.asarray(r, dtype=np.float64).ravel())
            if not np.linalg.norm(np.asarray(r - v, dtype=np.float64).ravel()) / norm < norm_error:
                return False
    return True


def streamed_stores(namespace):
    """``{function: streamed store names}`` over the module's stream kernels."""
    found = {}
    for name, value in namespace.items():
        if isinstance(value, sj.StreamDispatcher):
            for sig in value.signatures:
                found.setdefault(name, set()).update(value.stream_result(sig).streamed_stores)
    return {k: sorted(v) for k, v in found.items() if v}


def run_kernel(name, preset=None, scale=1.0, rounds=7, variants=tuple(VARIANTS)):
    """One kernel, every variant: a dict for the table (times in seconds)."""
    label, params = parameters(name, preset, scale)
    originals = arguments(name, params)
    work = [np.copy(a) if isinstance(a, np.ndarray) else a for a in originals]

    def restore():
        for w, a in zip(work, originals):
            if isinstance(a, np.ndarray):
                np.copyto(w, a)

    norm_error = kernel_info(name).get("norm_error", 1e-5)
    kernels, valid, reference, streams, above = {}, {}, None, {}, None
    for variant in variants:
        kernels[variant], namespace = load_kernel(name, variant)
        restore()
        out = _outputs(kernels[variant](*work), work)
        reference = out if reference is None else reference
        valid[variant] = validate(reference, out, norm_error)
        if variant == "stream":
            streams = streamed_stores(namespace)
            above = kernels[variant].above_threshold(*work)
    del out, reference
    times = measure.interleaved_times({v: (lambda k=kernels[v]: k(*work)) for v in variants}, rounds,
                                      warmups={v: restore for v in variants})
    medians = {v: statistics.median(t) for v, t in times.items()}
    # the per-call record of the stream variant's kernel: which path each call took, and why
    calls = kernels["stream"].stream_calls() if "stream" in kernels else None
    fallbacks = kernels["stream"].stream_fallbacks() if calls else None
    return dict(kernel=name, size=label, mib=sum(a.nbytes for a in originals if isinstance(a, np.ndarray)) / 2**20,
                seconds=medians, valid=valid, streamed=streams, above_threshold=above, calls=calls,
                fallbacks=fallbacks)


def calls_cell(row):
    """``streamed/all`` calls of the stream variant, with the staged and
    unprefetched ones, each fallback's check, and the calls that reached no
    aligned loop or stayed below the threshold."""
    calls = row.get("calls")
    if not calls:
        return "-"
    # (not in rows from before the staged loop and the copies without prefetches)
    copies = {path: calls.get(path, 0) for path in ("staged", "unprefetched")}
    why = ", ".join([f"{n} {path}" for path, n in copies.items() if n]
                    + [f"{n} {k}" for k, n in (row.get("fallbacks") or {}).items() if n]
                    + [f"{calls[path]} {path.replace('_', ' ')}" for path in ("plain", "below_threshold") if calls[path]])
    return f"{calls['streamed'] + sum(copies.values())}/{sum(calls.values())}" + (f" ({why})" if why else "")


def ratio(row, variant, over="njit"):
    return row["seconds"][over] / row["seconds"][variant]


def geomean(values):
    values = list(values)
    return math.exp(sum(map(math.log, values)) / len(values)) if values else float("nan")


def format_row(row):
    if "error" in row:
        return f"| {row['kernel']} | {row.get('size', '')} | failed: {row['error']} |"
    bad = [v for v, ok in row["valid"].items() if not ok]
    streams = "yes" if row["streamed"] and row["above_threshold"] else "no"
    again = f"{ratio(row, 'again'):.2f}x" if "again" in row["seconds"] else "-"   # (not in older rows)
    cells = [row["kernel"], row["size"], f"{row['mib']:.0f}", f"{row['seconds']['njit'] * 1e3:.1f}",
             *(f"{ratio(row, v):.2f}x" for v in ("stream", "never", "loads")),
             f"{ratio(row, 'stream', 'never'):.2f}x", again, streams, calls_cell(row), ", ".join(bad) or "yes"]
    return "| " + " | ".join(cells) + " |"


TABLE_HEAD = ("| kernel | size | MiB | njit ms | stream | never streamed | stream+loads | stream / never "
              "| njit again | streams | calls streamed | results equal |\n" + "|---" * 12 + "|")


def summary(rows):
    """Geometric means, and the kernels under each bar (0.97x njit, 0.98x never streamed)."""
    ok = [r for r in rows if "error" not in r]
    streaming = [r for r in ok if r["streamed"] and r["above_threshold"]]
    lines = [f"geomean over {len(ok)}: stream {geomean(ratio(r, 'stream') for r in ok):.3f}x, never streamed "
             f"{geomean(ratio(r, 'never') for r in ok):.3f}x, stream+loads {geomean(ratio(r, 'loads') for r in ok):.3f}x",
             f"over the {len(streaming)} that streamed: stream {geomean(ratio(r, 'stream') for r in streaming):.3f}x, "
             f"stream / never {geomean(ratio(r, 'stream', 'never') for r in streaming):.3f}x"]
    again = [r for r in ok if "again" in r["seconds"]]
    if again:   # (identical code: how far this machine's noise moves a ratio)
        spread = sorted(ratio(r, "again") for r in again)
        lines.append(f"njit again (the same code) over {len(again)}: {spread[0]:.2f}x-{spread[-1]:.2f}x, "
                     f"geomean {geomean(spread):.3f}x")
    for what, pool, pair, bar in (("stream under 0.97x njit", ok, ("stream",), 0.97),
                                  ("njit again under 0.97x njit", again, ("again",), 0.97),
                                  ("stream+loads under 0.97x njit", ok, ("loads",), 0.97),
                                  ("streamed, under 0.98x never streamed", streaming, ("stream", "never"), 0.98)):
        low = [f"{r['kernel']} {ratio(r, *pair):.2f}x" for r in pool if ratio(r, *pair) < bar]
        lines.append(f"{what}: {', '.join(low) or 'none'}")
    return "\n".join(lines)


def compare(before_rows, after_rows):
    """A table of two runs' ratios (``--json`` files), kernel by kernel."""
    before = {r["kernel"]: r for r in before_rows}
    lines = ["| kernel | size | stream | never streamed | stream+loads | stream / never | streams | results equal |",
             "|---|---|---|---|---|---|---|---|"]

    def cell(row, *pair):
        return f"{ratio(row, *pair):.2f}x" if row and "error" not in row else "failed" if row else "not run"

    for row in after_rows:
        old = before.get(row["kernel"])
        size = row.get("size", "") if not old or old.get("size") == row.get("size") \
            else f"{old.get('size', '')} → {row.get('size', '')}"
        cells = [f"{cell(old, *pair)} → {cell(row, *pair)}"
                 for pair in (("stream",), ("never",), ("loads",), ("stream", "never"))]
        streams = "yes" if "error" not in row and row["streamed"] and row["above_threshold"] else "no"
        bad = ", ".join(v for v, ok in row.get("valid", {}).items() if not ok) or ("yes" if "valid" in row else "")
        lines.append("| " + " | ".join([row["kernel"], size, *cells, streams, bad]) + " |")
    return "\n".join(lines)


def run_in_process(name, args, timeout):
    """`run_kernel` in a fresh Python process (no kernel warms another's
    caches or compiles its helpers); its row, or one saying why not."""
    command = [sys.executable, __file__, "--one", name, "--scale", str(args.scale), "--rounds", str(args.rounds)]
    command += ["--preset", args.preset] if args.preset else []
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return dict(kernel=name, error=f"over {timeout} s")
    if done.returncode:
        return dict(kernel=name, error=(done.stderr.strip().splitlines() or ["?"])[-1][:200])
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kernels", help="comma-separated kernel names (default: all 54)")
    parser.add_argument("--preset", choices=("S", "M", "L", "paper"), help="NPBench's preset instead of SIZES")
    parser.add_argument("--scale", type=float, default=1.0, help="times the parameters SIZES changes")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--timeout", type=int, default=1800, help="seconds per kernel process")
    parser.add_argument("--json", help="also write the rows to this file")
    parser.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"),
                        help="print two runs' --json files side by side (runs nothing)")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # the child process: one kernel, its row as JSON
    args = parser.parse_args(argv)
    if args.compare:
        before, after = (json.loads(Path(f).read_text()) for f in args.compare)
        print(compare(before, after) + "\n\nafter: " + summary(after).replace("\n", "\nafter: "))
        return
    if args.one:
        print(json.dumps(run_kernel(args.one, args.preset, args.scale, args.rounds)))
        return
    names = args.kernels.split(",") if args.kernels else kernel_names()
    print(measure.host_description())
    print(f"NPBench Numba kernels, one process each, {args.rounds} interleaved rounds, medians; njit ms and "
          f"njit / variant (above 1: faster than numba.njit)\n")
    print(TABLE_HEAD, flush=True)
    rows = []
    for name in names:
        rows.append(run_in_process(name, args, args.timeout))
        print(format_row(rows[-1]), flush=True)
        if args.json:
            Path(args.json).write_text(json.dumps(rows, indent=1))
    print("\n" + summary(rows))


if __name__ == "__main__":
    main()
