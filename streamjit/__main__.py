"""Command line: `python -m streamjit demo|bench|info|calibrate`."""

import argparse
import os
import sys

import numpy as np

from . import bench


def demo(args):
    print(f"streamjit demo: STREAM kernels, {args.mib} MiB per array, float32, destinations misaligned by one "
          f"element\n{bench.host_description()}\n")
    rows = bench.stream_table(mib=args.mib, dtype=np.float32, rounds=args.rounds, progress=lambda row: None)
    print(bench.format_table(rows))
    print("\nratios > 1 mean streamjit is faster; every streamed result was checked against NumPy.")


def run_bench(args):
    from . import plots

    os.makedirs(args.out, exist_ok=True)
    written = []
    print(f"{bench.host_description()}\n")
    stream_rows = []
    for dtype in args.dtypes:
        rows = bench.stream_table(mib=args.mib, dtype=dtype, rounds=args.rounds, progress=lambda row: None)
        print(bench.format_table(rows), "\n", flush=True)
        stream_rows += rows
    written.append(bench.write_csv(stream_rows, os.path.join(args.out, "stream.csv")))
    plots.stream_table(stream_rows, os.path.join(args.out, "stream.png"))
    written.append(os.path.join(args.out, "stream.png"))
    print("5-point stencil, output rows misaligned by one element:")
    stencil_rows = bench.stencil_table(mib=args.mib, rounds=args.rounds)
    print(bench.format_table(stencil_rows), "\n")
    written.append(bench.write_csv(stencil_rows, os.path.join(args.out, "stencil.csv")))
    print("first-call compile time (median of interleaved fresh compiles):")
    compile_rows = bench.compile_times(rounds=max(1, args.rounds // 2))
    print(bench.format_table(compile_rows), "\n")
    written.append(bench.write_csv(compile_rows, os.path.join(args.out, "compile.csv")))
    if args.sweep:
        from tqdm import tqdm

        sizes = bench.copy_sizes(args.mib << 20)
        rows = bench.memcpy_sweep(sizes, rounds=args.rounds,
                                  progress=lambda it: tqdm(it, desc="copy sweep", unit="size"))
        print(bench.format_table(rows))
        written.append(bench.write_csv(rows, os.path.join(args.out, "sweep.csv")))
        plots.memcpy_sweep(rows, os.path.join(args.out, "sweep.png"))
        written.append(os.path.join(args.out, "sweep.png"))
    print("wrote " + ", ".join(written))


def info(args):
    from .machine import machine_info

    for key, value in machine_info().items():
        print(f"{key + ':':20s}{value}")


def calibrate(args):
    from .threshold import save_calibration

    sizes = [2 ** k for k in range(-2, 20) if 2 ** k <= args.max_mib]
    print(f"copy sweep, streamed vs plain, {sizes[0]}-{sizes[-1]} MiB per array\n{bench.host_description()}")
    rows = bench.copy_sweep(sizes, rounds=args.rounds, progress=lambda row: print(bench.format_row(row), flush=True))
    threshold = bench.crossover_bytes(rows)
    if threshold is None:
        print("streaming never won up to the largest size; not saving a threshold")
        return 1
    path = save_calibration(threshold, rows)
    print(f"threshold: {threshold} bytes ({threshold / bench.MIB:g} MiB per array), saved to {path}")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m streamjit", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("demo", help="compile, verify and time the STREAM kernels (under a minute)")
    p.add_argument("--mib", type=int, default=256, help="MiB per array (default 256)")
    p.add_argument("--rounds", type=int, default=5, help="interleaved timing rounds (default 5)")
    p.set_defaults(run=demo)
    p = commands.add_parser("bench", help="STREAM, stencil and compile-time tables, written as CSV and PNG")
    p.add_argument("--mib", type=int, default=256, help="MiB per array, and the largest sweep size (default 256)")
    p.add_argument("--rounds", type=int, default=9, help="interleaved timing rounds (default 9)")
    p.add_argument("--dtypes", nargs="+", default=["float32", "float64"], help="dtypes to run")
    p.add_argument("--sweep", action="store_true", help="also sweep copy sizes from 64 KiB (with a progress bar)")
    p.add_argument("--out", default="streamjit-bench", help="directory for CSV and PNG files (default ./streamjit-bench)")
    p.set_defaults(run=run_bench)
    p = commands.add_parser("info", help="CPU, vector ISA, streaming instructions, caches, threshold, versions")
    p.set_defaults(run=info)
    p = commands.add_parser("calibrate", help="measure where streaming starts to pay (copy sweep) and save it "
                                              "for threshold='auto'")
    p.add_argument("--max-mib", type=int, default=256, help="largest size per array (default 256)")
    p.add_argument("--rounds", type=int, default=5, help="interleaved timing rounds (default 5)")
    p.set_defaults(run=calibrate)
    args = parser.parse_args(argv)
    return args.run(args) or 0


if __name__ == "__main__":
    sys.exit(main())
