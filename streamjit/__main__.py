"""Command line: `python -m streamjit demo|bench|calibrate`."""

import argparse
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
    print(f"{bench.host_description()}\n")
    for dtype in args.dtypes:
        rows = bench.stream_table(mib=args.mib, dtype=dtype, rounds=args.rounds, progress=lambda row: None)
        print(bench.format_table(rows), "\n", flush=True)
    print("5-point stencil, output rows misaligned by one element:")
    print(bench.format_table(bench.stencil_table(mib=args.mib, rounds=args.rounds)), "\n")
    print("first-call compile time (median of interleaved fresh compiles):")
    print(bench.format_table(bench.compile_times()))


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
    p = commands.add_parser("bench", help="STREAM float32/float64 table and compile-time comparison")
    p.add_argument("--mib", type=int, default=256, help="MiB per array (default 256)")
    p.add_argument("--rounds", type=int, default=9, help="interleaved timing rounds (default 9)")
    p.add_argument("--dtypes", nargs="+", default=["float32", "float64"], help="dtypes to run")
    p.set_defaults(run=run_bench)
    p = commands.add_parser("calibrate", help="measure where streaming starts to pay (copy sweep) and save it "
                                              "for threshold='auto'")
    p.add_argument("--max-mib", type=int, default=256, help="largest size per array (default 256)")
    p.add_argument("--rounds", type=int, default=5, help="interleaved timing rounds (default 5)")
    p.set_defaults(run=calibrate)
    args = parser.parse_args(argv)
    return args.run(args) or 0


if __name__ == "__main__":
    sys.exit(main())
