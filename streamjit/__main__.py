"""Command line: `python -m streamjit demo|bench|info|calibrate`.

streamjit compiles NumPy loop functions with Numba and streams the stores
to the arrays you name (aligned vector non-temporal stores). These commands
show what that does on this machine, and tune it.
"""

import argparse
import json
import os
import sys
import textwrap
import warnings

import numpy as np

from . import measure
from .errors import StreamWarning


def demo(args):
    from .measure.info import profile_state
    from .machine.profile import machine_profile

    print(f"streamjit demo: STREAM kernels, {args.mib} MiB per array, float32, destinations misaligned by one "
          f"element\n{measure.host_description()}\nmachine profile: {profile_state(machine_profile())}\n")
    rows = measure.stream_table(mib=args.mib, dtype=np.float32, rounds=args.rounds, progress=lambda row: None)
    print(measure.format_table(rows))
    print(f"\ntimes: medians (min-max) of {args.rounds} interleaved rounds; streamjit/njit: the median (min-max) of "
          "the ratios within each round (njit's time over streamjit's, run back to back under the same load), which "
          "can differ from the ratio of the medians; > 1 means streamjit is faster; every streamed result was "
          "checked against NumPy.")


def _plots():
    """`streamjit.measure.plots`, or None, with one line saying how to get plots,
    where matplotlib is not installed (``pip install .`` alone)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print('(plots skipped: matplotlib is not installed; pip install "streamjit[bench]" adds it)')
        return None
    from .measure import plots

    return plots


def _progress(name):
    """A tqdm progress bar over the sizes of a sweep where tqdm is installed."""
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return lambda sizes: tqdm(sizes, desc=f"{name} sweep", unit="size")


def run_bench(args):
    os.makedirs(args.out, exist_ok=True)
    written = []
    print(f"{measure.host_description()}\nevery cell: the median (min-max) of {args.rounds} interleaved rounds\n")
    plots = _plots()
    stream_rows = []
    for dtype in args.dtypes:
        rows = measure.stream_table(mib=args.mib, dtype=dtype, rounds=args.rounds, progress=lambda row: None)
        print(measure.format_table(rows), "\n", flush=True)
        stream_rows += rows
    written.append(measure.write_csv(stream_rows, os.path.join(args.out, "stream.csv")))
    if plots:
        plots.stream_table(stream_rows, os.path.join(args.out, "stream.png"))
        written.append(os.path.join(args.out, "stream.png"))
    print("5-point stencil, output rows misaligned by one element:")
    stencil_rows = measure.stencil_table(mib=args.mib, rounds=args.rounds)
    print(measure.format_table(stencil_rows), "\n")
    written.append(measure.write_csv(stencil_rows, os.path.join(args.out, "stencil.csv")))
    print("first-call compile time (median of interleaved fresh compiles):")
    compile_rows = measure.compile_times(rounds=max(1, args.rounds // 2))
    print(measure.format_table(compile_rows), "\n")
    written.append(measure.write_csv(compile_rows, os.path.join(args.out, "compile.csv")))
    if args.sweep:
        written += envelopes(measure.sweep_sizes(args.mib << 20, 4 << 10), args.rounds, args.out, plots)
    print("wrote " + ", ".join(written))


def info(args):
    from .measure.info import machine_info

    for key, value in machine_info(why=args.why).items():
        print(f"{key + ':':20s}{value}")
    if not args.why:
        print("(`python -m streamjit info --why` adds the measurements that chose each row of the profile)")


def envelopes(sizes, rounds, out, plots):
    """Print, and write as CSV (and PNG, given `plots`), the copy and
    stencil envelopes; return the paths."""
    written = []
    for name, sweep in (("copy", measure.copy_envelope), ("stencil", measure.stencil_envelope)):
        rows = sweep(sizes, rounds=rounds, progress=_progress(name))
        print(f"{name}: speed relative to {list(rows[0])[1][:-5]} (float32, one process, interleaved medians, "
              f"(min-max) over {rounds} rounds)")
        print(measure.format_table(rows), "\n")
        written.append(measure.write_csv(rows, os.path.join(out, f"{name}_sweep.csv")))
        if plots:
            written.append(os.path.join(out, f"{name}_sweep.png"))
            getattr(plots, f"{name}_envelope")(rows, written[-1])
    return written


def _failed(save, measured):
    """1 where `_saved` could not save, else None."""
    return 1 if _saved(save, measured) is None else None


def _saved(save, measured):
    """``save()``'s path; None, having printed ``measured`` (what would have
    been saved) and one line with the path, when the file cannot be written."""
    from .machine.profile import profile_file

    try:
        return save()
    except OSError as exc:
        print(json.dumps(measured, indent=1, default=str))
        print(f"calibrate: could not save the measurements above to {profile_file()}: {exc.strerror or exc}")
        return None


def calibrate(args):
    # (its measurements send calls to the plain loops on purpose: their fallback warnings say nothing to the user)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="a call of .* ran plain stores", category=StreamWarning)
        warnings.filterwarnings("ignore", message="stream_stores names .* but no store to it is streamed",
                                category=StreamWarning)
        return _calibrate(args)


def _stages_progress(plan):
    """Print how long the stages of ``plan`` (``[(name, estimated seconds,
    run)]``) should take; return ``done(name, seconds)``, called after each
    stage: a tqdm bar over the estimated seconds (its rate, and so the time
    it shows left, from the stages done) where tqdm is installed, else one
    line per stage with the time elapsed and an estimate of the time left
    (the estimate scaled as the stages done ran against theirs)."""
    import time

    total = sum(seconds for _, seconds, _ in plan)
    print(f"calibrate: {len(plan)} stages, about {_minutes(total)} on an idle machine (an estimate from the kernels "
          "it compiles and the bytes it moves)", flush=True)
    try:
        from tqdm import tqdm
    except ImportError:
        tqdm = None
    bar = tqdm(total=round(total), unit="s", desc="calibrate", bar_format="{l_bar}{bar}| {n:.0f}/{total:.0f} "
               "estimated s [{elapsed}<{remaining}]") if tqdm else None
    start, estimated, count = time.perf_counter(), [0.0], [0]

    def done(name, seconds):
        estimated[0] += seconds
        count[0] += 1
        if bar is not None:
            bar.set_postfix_str(name)
            bar.update(min(round(estimated[0]), bar.total) - bar.n)
            if count[0] == len(plan):
                bar.close()
            return
        elapsed = time.perf_counter() - start
        left = (total - estimated[0]) * elapsed / max(estimated[0], 1e-9)
        print(f"[stage {count[0]}/{len(plan)} done: {name}; {_minutes(elapsed)} elapsed, about {_minutes(left)} left]",
              flush=True)
    return done


def _minutes(seconds):
    """``seconds`` as "45 s" or "2 min 5 s"."""
    seconds = round(seconds)
    return f"{seconds} s" if seconds < 60 else f"{seconds // 60} min {seconds % 60} s"


def _calibrate(args):
    from .measure import calibration as cal
    from .measure.calibration_stencils import HDIFF_COMPILE_SECONDS, measure_stencil_sources, save_stencil_sources
    from .machine.profile import check_writable, profile_file, vector_isa
    from .machine.threshold import glibc_streaming_bytes, save_calibration, stored_thresholds, usable_cache_bytes

    try:
        check_writable()
    except OSError as exc:
        print(f"calibrate: cannot write the machine profile {profile_file()}: {exc.strerror or exc}; nothing measured "
              "(set XDG_CACHE_HOME to a writable directory)")
        return 1
    loaded = cal.load_note()
    llc = usable_cache_bytes()
    # the profile's arrays: the last-level cache each, so none stays in it; the sweeps: up to 4x it, and past
    # where glibc's memcpy streams by itself, where the copy band ends
    mib = args.profile_mib or max(16, -(-(llc or 64 << 20) >> 20))
    max_mib = args.max_mib or max(4 * (llc or 64 << 20), 3 * (glibc_streaming_bytes() or 0) // 2) >> 20
    sizes = measure.sweep_sizes(max_mib << 20, 1 << 20)
    found = {}

    def load_stages():
        found["stages"] = stages = cal.measure_load_stages(mib=mib, rounds=args.rounds, previous=cal.previous_stages(),
                                                           loaded=bool(loaded))
        if stages is None:
            print("calibrate: the rounds kept disagreeing, so no load lowering is saved from them (the stored one, "
                  "if any, is kept); calibrate again when the machine is idle")
            return None
        return _failed(lambda: cal.save_load_stages(*stages), dict(zip(("sources", "stream_loads"), stages)))

    def stencil_sources():
        stencils = measure_stencil_sources(mib=mib, rounds=args.rounds, loaded=bool(loaded), with_hdiff=args.hdiff)
        if stencils is None:
            print("calibrate: the stencil sweeps' rounds kept disagreeing, so no stencil_sources row is saved from "
                  "them (the stored one, if any, is kept)")
            return None
        return _failed(lambda: save_stencil_sources(*stencils), {"stencil_sources": stencils[0]})

    def page_alias():
        alias = cal.measure_page_alias(mib=mib, rounds=args.rounds)
        return _failed(lambda: cal.save_page_alias(*alias), {"page_alias_bytes": alias[0], "strip_bytes": alias[1]})

    def own_row(row, measure_row, row_mib):
        def run():
            sizes = measure_row(mib=row_mib, rounds=args.rounds)
            return None if sizes is None else _failed(lambda: cal.save_row(row, *sizes), {row: sizes[0]})
        return run

    def sweep(name, envelope, column, past):
        def run():
            found[name] = envelope(sizes, rounds=args.rounds, stop=measure.band_settled(column, past))
        return run

    def estimate(compiles, moved_mib, compile_seconds=cal.COMPILE_SECONDS):
        return compiles * compile_seconds + moved_mib * (args.rounds + 1) / cal.MIB_PER_SECOND

    workloads, candidates = 5, len(cal.SOURCE_CANDIDATES) + len(cal.LOAD_CANDIDATES)
    wide = 4 if vector_isa() == "AVX-512" else 0
    sweep_mib = len(sizes) * 256 * 7   # 4 copies and 3 stencil loops per size, batches of 256 MiB
    plan = [("load stages", estimate(workloads * candidates, workloads * candidates * 3 * mib), load_stages),
            ("stencil sources", estimate(3 * len(cal.SOURCE_CANDIDATES), 4 * len(cal.SOURCE_CANDIDATES) * 2 * mib)
             + (HDIFF_COMPILE_SECONDS * len(cal.SOURCE_CANDIDATES) if args.hdiff else 0), stencil_sources),
            ("page alias", estimate(2 * (1 + len(cal.STRIPS)), 2 * (1 + len(cal.STRIPS)) * 3 * mib, 1.0), page_alias),
            ("scalar stores", estimate(8, 8 * 2 * mib), own_row("scalar_nt_bytes", cal.measure_scalar_stores, mib)),
            ("scalar ops", estimate(2 * len(cal.SCALAR_OPS), 2 * len(cal.SCALAR_OPS) * 2 * mib),
             own_row("scalar_nt_ops", cal.measure_scalar_ops, mib)),
            ("wide stencils", estimate(wide, wide * 2 * cal.WIDE_STENCIL_SCALE * mib),
             own_row("wide_stencil_bytes", cal.measure_wide_stencils, cal.WIDE_STENCIL_SCALE * mib)),
            ("copy sweep", estimate(4, sweep_mib * 4 // 7), sweep("copies", measure.copy_envelope, "streamed", None)),
            ("stencil sweep", estimate(3, sweep_mib * 3 // 7),
             sweep("stencils", measure.stencil_envelope, "always streamed", 2 * (llc or 64 << 20)))]
    print(f"how loads are lowered: every candidate timed on this machine, {mib} MiB per array; then the copy and "
          f"stencil sweeps, streamed vs not, {sizes[0] >> 20}-{sizes[-1] >> 20} MiB per array\n"
          f"{measure.host_description()}" + (f"\n{loaded}" if loaded else ""))
    done = _stages_progress(plan)
    for name, seconds, run in plan:
        failed = run()
        done(name, seconds)
        if failed:
            return failed
    print(f"profile saved to {profile_file()}\n")
    copies, stencils = found["copies"], found["stencils"]
    print(measure.format_table(copies), "\n", measure.format_table(stencils), sep="")
    (copy_band, copy_why), (kernel_band, kernel_why) = (measure.winning_band(copies, "streamed"),
                                                        measure.winning_band(stencils, "always streamed"))
    stored = stored_thresholds()
    for name, kind, band, why in (("copyto", "copy", copy_band, copy_why),
                                  ('threshold="auto"', "kernel", kernel_band, kernel_why)):
        if band is None:
            print(f"{name}: {why}; not saved (the stored value, if any, is kept)")
        else:
            limit = "" if band[1] is None else f" up to {measure.human_size(band[1])}"
            print(f"{name}: streams above {band[0]} bytes ({measure.human_size(band[0])} per array){limit}: {why}")
    if loaded and stored:  # noisy rounds on a loaded machine do not move choices every later kernel uses
        print(f"{loaded}\nthe stored thresholds are kept ({', '.join(f'{k}: {v} bytes' for k, v in stored.items())});"
              " calibrate again when the machine is idle")
        return 1
    if copy_band is None and kernel_band is None:
        return 1
    thresholds = {kind: band[0] for kind, band in (("copy", copy_band), ("kernel", kernel_band)) if band}
    # copies stream only where measured to win: up to the band's end, or the largest size measured
    copy_limit = copy_band and (copy_band[1] or copies[-1]["bytes"])
    path = _saved(lambda: save_calibration(thresholds, {"copy": copies, "kernel": stencils}, copy_limit=copy_limit),
                  {"thresholds": thresholds, "copy_limit": copy_limit})
    if path is None:
        return 1
    print(f"saved to {path}")
    return 1 if found["stages"] is None else 0  # (the thresholds' own sweeps agreed: saved; the load lowering was not)


# What each command does: the subcommand's description, and the list `--help` ends with
COMMANDS = {
    "demo": "compiles the STREAM kernels (copy, scale, add, triad), checks them against NumPy and prints "
            "streamed vs plain bandwidth at 256 MiB per array (under a minute). Writes nothing.",
    "bench": "the STREAM tables in float32 and float64, the 5-point stencil table and first-call compile times "
             "(with --sweep, the copy and stencil envelopes from 4 KiB), printed and written as CSV (and PNG, "
             "with matplotlib) under --out.",
    "info": "whether the machine profile in force was measured on this kind of CPU or calibrated here, then what "
            "this machine gives streamjit: CPU, vector ISA, the non-temporal store and fence instructions a copy "
            "compiles to, caches, the profile's choices (with --why, the measurements behind each), the thresholds "
            "and where they come from, versions. Quick.",
    "calibrate": "measures how loads are best lowered here and from which sizes streaming pays (copies and "
                 "stencils), and saves the winners in the machine profile every later kernel reads (about a "
                 "minute on an idle machine: it prints its estimate first, then its progress stage by stage; on a "
                 "loaded one it says so, and keeps the stored choices unless beaten clearly).",
}


def _epilog():
    lines = ["commands:"]
    for name, text in COMMANDS.items():
        wrapped = textwrap.wrap(text, 76)
        lines += [f"  {name:11s}{wrapped[0]}"] + [f"  {'':11s}{line}" for line in wrapped[1:]]
    return "\n".join(lines + ["", "`python -m streamjit COMMAND --help` lists a command's options."])


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m streamjit", description=__doc__.split("\n", 2)[2],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=_epilog())
    commands = parser.add_subparsers(dest="command", required=True, metavar="command",
                                     help="one of the commands below")
    p = commands.add_parser("demo", description=COMMANDS["demo"])
    p.add_argument("--mib", type=int, default=256, help="MiB per array (default 256)")
    p.add_argument("--rounds", type=int, default=5, help="interleaved timing rounds (default 5)")
    p.set_defaults(run=demo)
    p = commands.add_parser("bench", description=COMMANDS["bench"])
    p.add_argument("--mib", type=int, default=256, help="MiB per array, and the largest sweep size (default 256)")
    p.add_argument("--rounds", type=int, default=9, help="interleaved timing rounds (default 9)")
    p.add_argument("--dtypes", nargs="+", default=["float32", "float64"], help="dtypes to run")
    p.add_argument("--sweep", action="store_true", help="also sweep sizes from 4 KiB: the copy and stencil envelopes "
                                                         "(with progress bars)")
    p.add_argument("--out", default="streamjit-bench", help="directory for CSV and PNG files (default ./streamjit-bench)")
    p.set_defaults(run=run_bench)
    p = commands.add_parser("info", description=COMMANDS["info"])
    p.add_argument("--why", action="store_true", help="each row of the machine profile with the measurements that "
                                                       "chose it (on which CPU, by which script)")
    p.set_defaults(run=info)
    p = commands.add_parser("calibrate", description=COMMANDS["calibrate"])
    p.add_argument("--max-mib", type=int, default=None, help="largest size per array of the sweeps (default: 4x the "
                   "last-level cache, or 1.5x the size from which glibc's memcpy streams where that is more; the "
                   "stencil sweep stops once streaming wins past 2x the cache)")
    p.add_argument("--rounds", type=int, default=3, help="interleaved timing rounds (default 3)")
    p.add_argument("--profile-mib", type=int, default=None,
                   help="MiB per array for the profile's measurements (default: the last-level cache, at least 16; "
                        "the wide-stencil sweeps 4x that)")
    p.add_argument("--hdiff", action="store_true", help="the stencil_sources row timed on NPBench's hdiff too "
                   "(its compile adds about 20 s per candidate, 3 minutes)")
    p.set_defaults(run=calibrate)
    args = parser.parse_args(argv)
    return args.run(args) or 0


if __name__ == "__main__":
    sys.exit(main())
