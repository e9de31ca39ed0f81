"""Every NPBench kernel that ``numba.jit`` compiles compiles under
``stream_kernel(stream_stores=True)`` (and with ``stream_loads=True``), with
njit's results: one fresh process per kernel, NPBench's preset "S" (small:
this checks compiling and results, not speed), results compared as NPBench
validates (`npbench.validate`) and also bit for bit.

Run: python bench/npbench_compiles.py [--kernels a,b] [--preset S] [--timeout 900]
Prints a row per kernel (compiles, equal to njit, bit for bit) and a count.
"""

import argparse
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import npbench  # noqa: E402

CHECKED = ("stream", "loads")  # npbench.VARIANTS compared with "njit"


def check_kernel(name, preset):
    """``{variant: "equal" | "bit for bit" | "differs" | "error: ..."}`` for one kernel."""
    params = npbench.parameters(name, preset)[1]
    originals = npbench.arguments(name, params)
    norm_error = npbench.kernel_info(name).get("norm_error", 1e-5)
    results = {}
    for variant in ("njit",) + CHECKED:
        work = [np.copy(a) if isinstance(a, np.ndarray) else a for a in originals]
        try:
            kernel, _ = npbench.load_kernel(name, variant)
            results[variant] = npbench._outputs(kernel(*work), work)
        except Exception as exc:  # (the row says what failed; njit's own failures are the kernel's)
            results[variant] = f"error: {type(exc).__name__}: {str(exc).splitlines()[0][:150] if str(exc) else ''}"
    reference = results["njit"]
    row = {}
    for variant in CHECKED:
        got = results[variant]
        if isinstance(reference, str) or isinstance(got, str):
            row[variant] = got if isinstance(got, str) else f"njit {reference}"
        elif all(np.array_equal(r, g, equal_nan=True) for r, g in zip(reference, got)) and len(reference) == len(got):
            row[variant] = "bit for bit"
        else:
            row[variant] = "equal" if npbench.validate(reference, got, norm_error) else "differs"
    return row


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kernels", help="comma-separated kernel names (default: all 54)")
    parser.add_argument("--preset", default="S")
    parser.add_argument("--timeout", type=int, default=900, help="seconds per kernel process")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(check_kernel(args.one, args.preset)))
        return 0
    names = args.kernels.split(",") if args.kernels else npbench.kernel_names()
    counts = {}
    print(f"| kernel | {' | '.join(CHECKED)} |\n|---|" + "---|" * len(CHECKED), flush=True)
    for name in names:
        command = [sys.executable, __file__, "--one", name, "--preset", args.preset]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout)
            row = json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else \
                dict.fromkeys(CHECKED, "error: " + ((done.stderr.strip().splitlines() or ["?"])[-1][:150]))
        except subprocess.TimeoutExpired:
            row = dict.fromkeys(CHECKED, f"error: over {args.timeout} s")
        print(f"| {name} | " + " | ".join(row[v] for v in CHECKED) + " |", flush=True)
        for variant, verdict in row.items():
            key = (variant, verdict.split(":")[0])
            counts[key] = counts.get(key, 0) + 1
    for variant in CHECKED:
        print(f"{variant}: " + ", ".join(f"{n} {verdict}" for (v, verdict), n in sorted(counts.items()) if v == variant))
    return 0 if all(verdict in ("bit for bit", "equal") for (_, verdict) in counts) else 1


if __name__ == "__main__":
    sys.exit(main())
