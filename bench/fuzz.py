"""Differential fuzzer, long mode: generated kernels (tests/kernel_grammar.py)
compiled with numba.njit and with streamjit.stream_kernel, run on the same
inputs, compared bit for bit (ulp-bounded under fastmath).

    python bench/fuzz.py --minutes 15 [--seed S] [--log fuzz.log] [--quick]

Prints counts per feature (statement shapes, dtypes, placements, options,
the call paths streamjit took) and every difference with its kernel's
source; the same goes to the log (default: fuzz-<seed>.log in the current
directory). Seeds run S, S+1, ... until the time is up.
"""

import argparse
import collections
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

import kernel_grammar as G  # noqa: E402


def suite_profile(page_alias_bytes):
    """The test suite's machine profile (tests/conftest.py) with the
    run-time 4K-aliasing check on, as its differential test has it
    (`helpers.staged_profile`), in a cache directory of our own: the staged
    loop runs for operands a few bytes apart modulo 4 KiB, on every CPU."""
    import tempfile
    os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="streamjit-fuzz-")
    from streamjit.machine.profile import LoadStage, stage_record, update_profile_file
    stages = {"stream_loads": LoadStage("nta", 2048, True), "sources": LoadStage(), "stencil_sources": LoadStage()}
    update_profile_file({"profile": {**{name: stage_record(stage) for name, stage in stages.items()},
                                     "page_alias_bytes": page_alias_bytes, "scalar_nt_bytes": [4, 8],
                                     "scalar_nt_ops": 64, "wide_stencil_bytes": []}})


def candidate(func, case):
    return sj.stream_kernel(**case.stream_options, **case.numba_options)(func)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--seed", type=int, default=1_000_000)
    parser.add_argument("--log", default=None)
    parser.add_argument("--quick", action="store_true", help="the test suite's budget per kernel (no parallel=True)")
    parser.add_argument("--threshold-env", default="0",
                        help="STREAMJIT_THRESHOLD for threshold='auto' (default 0: 'auto' streams the small "
                             "arrays too; '' leaves the machine's own)")
    parser.add_argument("--page-alias-bytes", type=int, default=192,
                        help="the profile's 4K-aliasing distance, as the test suite's (-1: the machine's own profile)")
    args = parser.parse_args(argv)
    if args.page_alias_bytes >= 0:
        suite_profile(args.page_alias_bytes)
    global sj
    import streamjit as sj
    if args.threshold_env:
        os.environ["STREAMJIT_THRESHOLD"] = args.threshold_env
    warnings.simplefilter("ignore")
    log_path = args.log or f"fuzz-{args.seed}.log"
    log = open(log_path, "w")

    def emit(text):
        print(text, flush=True)
        log.write(text + "\n")
        log.flush()

    counts = collections.defaultdict(collections.Counter)
    failing = []
    deadline = time.monotonic() + 60 * args.minutes
    try:
        from tqdm import tqdm
        bar = tqdm(total=int(60 * args.minutes), unit="s", file=sys.stderr, mininterval=5)
    except ImportError:
        bar = None
    start = time.monotonic()
    seed = args.seed
    emit(f"differential fuzzer: seeds from {args.seed}, {args.minutes} minutes, streamjit {sj.__version__ if hasattr(sj, '__version__') else ''}")
    while time.monotonic() < deadline:
        case = G.generate(seed, quick=args.quick)
        seed += 1
        try:
            result = G.run_case(case, candidate)
        except Exception as exc:      # noqa: BLE001 -- the harness itself failing is reported, not fatal
            emit(f"--- seed {case.seed}: harness error {type(exc).__name__}: {exc}\n{case.source}")
            counts["harness errors"][type(exc).__name__] += 1
            continue
        if result.njit_rejected:
            counts["njit rejected (generator limits)"][result.njit_rejected.split(":")[0]] += 1
            continue
        counts["kernels"]["compared"] += 1
        counts["shapes"][case.shape] += 1
        for f in case.features:
            counts["features"][f] += 1
        for name, dt in case.dtypes.items():
            counts[f"dtype of {name}"][dt.name] += 1
        counts["mixed dtypes"]["mixed" if len({case.dtypes[n] for n in ('out', 'a', 'b')}) > 1 else "same"] += 1
        for p in result.placements_run:
            counts["placements (calls)"][p] += 1
        opts = case.stream_options
        counts["options"][f"stream_stores={opts['stream_stores']!r}"] += 1
        counts["options"][f"threshold={opts['threshold']!r}"] += 1
        if opts.get("stream_loads"):
            counts["options"]["stream_loads=True"] += 1
        for k, v in case.numba_options.items():
            counts["options"][f"{k}={v}"] += 1
        for k, v in result.paths.items():
            counts["streamjit call paths (calls)"][k] += v
        for e in result.exceptions:
            counts["exceptions raised (both)"][e] += 1
        if result.parallel_njit_deviations:  # (njit(parallel=True) unlike serial njit; streamjit as serial njit)
            counts["njit(parallel) unlike serial njit, streamjit as serial njit"][case.shape] += 1
        if result.differences:
            counts["kernels"]["with a difference"] += 1
            counts["differences by shape"][case.shape] += 1
            failing.append(case.seed)
            emit(G.describe(result))
        if bar is not None:
            bar.n = min(int(time.monotonic() - start), bar.total)
            bar.set_postfix(kernels=counts["kernels"]["compared"], diffs=len(failing), refresh=False)
            bar.refresh()
    if bar is not None:
        bar.close()
    elapsed = time.monotonic() - start
    emit(f"\n=== {counts['kernels']['compared']} kernels compared in {elapsed / 60:.1f} min "
         f"(seeds {args.seed}..{seed - 1}), {len(failing)} with a difference: {failing}")
    for group, counter in counts.items():
        emit(f"{group}: " + ", ".join(f"{k} {v}" for k, v in sorted(counter.items(), key=lambda kv: -kv[1])))
    log.close()
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
