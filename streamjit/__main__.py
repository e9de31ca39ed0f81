"""Command line: `python -m streamjit demo` and `python -m streamjit bench`."""

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
    args = parser.parse_args(argv)
    args.run(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
