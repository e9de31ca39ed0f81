"""The tables the CLI (`python -m streamjit demo|bench|calibrate`) and the
scripts in `bench/` print: STREAM bandwidth, stencils, compile times, size
sweeps and where streaming wins among them, as rows of dicts that print as
text, save as CSV and plot (`plots.py`); every table names the size and the
dtype."""

import os

import numba
import numpy as np

from ..api import stream_kernel
from .kernels import (STREAM_KERNELS, avg3_loop, avg3_stencil, jacobi4, jacobi5, jacobi5_stencil, kernel_args,
                      laplace7_loop, laplace7_stencil, numba_stencil, stream_builds)
from .timing import MIB, Spread, human_size, interleaved_medians, interleaved_times, rates, repeated, speedups

def stream_table(mib=256, dtype=np.float32, rounds=7, offset=1, kernels=tuple(STREAM_KERNELS), verify=True,
                 progress=print):
    """Bandwidth of streamed vs plain vs NumPy STREAM kernels.

    Arrays are views starting ``offset`` elements into their buffer, so
    destinations are only element-aligned (the peel must do its work).
    Returns a list of row dicts.
    """
    dtype = np.dtype(dtype)
    n = mib * MIB // dtype.itemsize
    rng = np.random.default_rng(0)
    buffers = [rng.random(n + offset, dtype=np.float64).astype(dtype) for _ in range(3)]
    a, b, c = (buf[offset:] for buf in buffers)
    q = dtype.type(3.0)
    rows = []
    for name in kernels:
        streamed, plain = stream_builds(name)
        numpy_impl = STREAM_KERNELS[name][1]
        args = kernel_args(name, a, b, c, q)
        streamed(*args)
        plain(*args)
        if verify:
            expected = np.empty_like(a)
            numpy_impl(expected, b, c, q)
            streamed(*args)
            if not np.array_equal(a, expected) and not np.allclose(a, expected, rtol=1e-6):
                raise AssertionError(f"streamed {name} differs from NumPy")
        times = interleaved_times({
            "streamjit": lambda: streamed(*args),
            "numba.njit": lambda: plain(*args),
            "numpy": lambda: numpy_impl(a, b, c, q),
        }, rounds)
        moved = (STREAM_KERNELS[name][2] + 1) * n * dtype.itemsize
        row = {"kernel": name, "dtype": dtype.name, "MiB/array": mib}
        row.update({f"{impl} GB/s": gbs for impl, gbs in rates(times, moved / 1e9).items()})
        row["streamjit/njit"] = speedups(times, "numba.njit")["streamjit"]
        row["streamjit/numpy"] = speedups(times, "numpy")["streamjit"]
        rows.append(row)
        progress(format_row(row))
    return rows


def stencil_dims_table(mib=256, rounds=7, dtype=np.float64):
    """1-D, 2-D and 3-D stencils: `streamjit.stencil`, `numba.stencil` and a
    streamed loop, as speed relative to the plain loop under numba.njit.
    Stencils write into a preallocated ``out=`` (their result type)."""
    from ..dropins.stencil import stencil

    n = mib * MIB // np.dtype(dtype).itemsize
    side2, side3 = int(n ** 0.5), int(round(n ** (1 / 3)))
    cases = [("1-D 3-point", avg3_loop, avg3_stencil, (n,)),
             ("2-D 5-point", jacobi5, jacobi5_stencil, (side2, side2)),
             ("3-D 7-point", laplace7_loop, laplace7_stencil, (side3, side3, side3))]
    rows = []
    rng = np.random.default_rng(0)
    for name, loop, kernel, shape in cases:
        a = rng.random(shape).astype(dtype)
        out_loop = np.zeros_like(a)
        plain, streamed = numba.njit(loop), stream_kernel(stream_stores=["out"], threshold=None)(loop)
        ours, theirs = stencil(kernel), numba_stencil(kernel)
        result = ours(a)
        if not np.array_equal(result, numba.stencil(kernel)(a)):
            raise AssertionError(f"streamjit.stencil differs from numba.stencil on {name}")
        plain(out_loop, a)
        streamed(out_loop, a)
        times = interleaved_times({
            "numba.njit loop": lambda: plain(out_loop, a), "streamjit loop": lambda: streamed(out_loop, a),
            "streamjit.stencil": lambda: ours(a, out=result), "numba.stencil": lambda: theirs(a, result)},
            rounds)
        row = {"stencil": name, "shape": "x".join(map(str, shape)), "dtype": np.dtype(dtype).name}
        row.update({f"{impl} / njit": ratio for impl, ratio in speedups(times, "numba.njit loop").items()})
        rows.append(row)
    return rows


def stencil_table(mib=256, width=8192, dtype=np.float32, rounds=7, offset=1):
    """5-point Jacobi on a (mib MiB / width) x width grid: a streamed loop,
    `streamjit.stencil`, `numba.stencil`, and the plain loop under numba.njit.

    The loops' output is a C-contiguous array starting ``offset`` elements
    into its buffer, so no row starts aligned; the stencils write into a
    preallocated ``out=`` (float64, their result type), so no run pays for
    allocating and first touching its output."""
    from ..dropins.stencil import stencil   # the stencil module imports this one's users

    dtype = np.dtype(dtype)
    rows_n = mib * MIB // (width * dtype.itemsize)
    g = np.random.default_rng(0).random((rows_n, width)).astype(dtype)
    out = np.zeros(rows_n * width + offset, dtype)[offset:].reshape(rows_n, width)
    streamed, plain = stream_kernel(stream_stores=["out"], threshold=None)(jacobi5), numba.njit(jacobi5)
    ours, theirs = stencil(jacobi5_stencil), numba_stencil(jacobi5_stencil)
    expected = np.zeros_like(out)
    plain(expected, g)
    streamed(out, g)
    if not np.array_equal(out, expected) or not np.array_equal(ours(g), numba.stencil(jacobi5_stencil)(g)):
        raise AssertionError("streamed jacobi differs from numba.njit / numba.stencil")
    del expected
    result = ours(g)            # float64 (0.2 * float32); stencils write into it, as out=
    times = interleaved_times({
        "streamjit loop": lambda: streamed(out, g), "numba.njit loop": lambda: plain(out, g),
        "streamjit.stencil": lambda: ours(g, out=result), "numba.stencil": lambda: theirs(g, result)}, rounds)
    row = {"kernel": f"jacobi5 {rows_n}x{width}", "dtype": dtype.name}
    row.update({f"{impl} / njit": ratio for impl, ratio in speedups(times, "numba.njit loop").items()})
    return [row]


def compile_times(rounds=5, kernels=tuple(STREAM_KERNELS)):
    """Median first-call compile seconds: streamjit vs numba.njit, per kernel."""
    a = np.zeros(64, np.float32)
    rows = []
    for name in kernels:
        args = kernel_args(name, a, a.copy(), a.copy(), np.float32(2))

        def first_call(build):
            return lambda: build(name)(*args)

        times = interleaved_times({
            "streamjit": first_call(lambda k: stream_builds(k)[0]),
            "numba.njit": first_call(lambda k: stream_builds(k)[1]),
        }, rounds, warm=False)  # (each run builds and compiles a fresh kernel: a first call is what is timed)
        seconds = {impl: Spread(runs) for impl, runs in times.items()}
        rows.append({"kernel": name, "streamjit s": seconds["streamjit"], "numba.njit s": seconds["numba.njit"],
                     "ratio": Spread(s / n for s, n in zip(times["streamjit"], times["numba.njit"]))})
    return rows


def sweep_sizes(max_bytes, min_bytes=64 << 10):
    """Sizes for a sweep: powers of two and their midpoints, log spaced."""
    sizes, size = [], min_bytes
    while size <= max_bytes:
        sizes.append(size)
        if size * 3 // 2 <= max_bytes:
            sizes.append(size * 3 // 2)
        size *= 2
    return sizes


def _float32s(n, offset=1, fill=True):
    """A length-``n`` float32 view ``offset`` elements into its buffer (random or empty)."""
    buffer = np.random.default_rng(n).random(n + offset, dtype=np.float32) if fill else np.empty(n + offset, np.float32)
    return buffer[offset:]


def _envelope(sizes_bytes, setup, reference, moved, rounds, progress, stop):
    """For each size, ``setup(nbytes)`` gives ``{name: (function, args)}``;
    they are timed interleaved in batches of about 256 MiB moved, each
    after one untimed call, and a row holds the reference's GB/s and every
    implementation's speed relative to it (`Spread`s over the rounds).
    ``stop(rows)`` true ends the sweep before its larger sizes."""
    rows = []
    for nbytes in (progress or iter)(sizes_bytes):
        impls = setup(nbytes)
        once = {k: repeated(function, args, 1) for k, (function, args) in impls.items()}
        repeats = max(1, (256 << 20) // moved(nbytes))
        times = interleaved_times({k: repeated(f, args, repeats) for k, (f, args) in impls.items()}, rounds,
                                  warmups=once)
        row = {"bytes": nbytes, f"{reference} GB/s": rates(times, moved(nbytes) * repeats / 1e9)[reference]}
        row.update({k: ratio for k, ratio in speedups(times, reference).items() if k != reference})
        rows.append(row)
        if stop and stop(rows):
            break
    return rows


def copy_envelope(sizes_bytes, rounds=5, progress=None, stop=None):
    """Copies of float32 arrays (destination and source misaligned by one
    element) per size, as speed relative to ``np.copyto``:
    `streamjit.copyto`, the plain loop under numba.njit, and the streamed
    copy `copyto` runs above its threshold (`dropins.stream_copy`: one
    thread, all of Numba's from `PARALLEL_BYTES`). ``progress`` wraps the
    size iterable (e.g. ``tqdm``); ``stop``: see `_envelope`."""
    from ..dropins import copy as dropins

    plain = stream_builds("copy")[1]

    def setup(nbytes):
        n = max(1, nbytes // 4)
        src, dst = _float32s(n), _float32s(n, fill=False)
        return {"np.copyto": (np.copyto, (dst, src)), "streamjit.copyto": (dropins.copyto, (dst, src)),
                "numba.njit loop": (plain, (dst, src)), "streamed": (dropins.stream_copy, (dst, src))}

    return _envelope(sizes_bytes, setup, "np.copyto", lambda nbytes: 2 * nbytes, rounds, progress, stop)


def stencil_envelope(sizes_bytes, rounds=5, width=2048, progress=None, stop=None):
    """A 4-point Jacobi sweep in float32 (memory-bound) on grids of ``width``
    columns per size (bytes per array), as speed relative to the same loop
    under numba.njit: with ``threshold="auto"`` (what `streamjit.stencil`
    compiles) and always streamed. Input and output are separate
    allocations, as a user's arrays are (an output 4 bytes past its input
    modulo 4 KiB, e.g. a view one element into a buffer allocated like the
    input, ran the streamed loop at 0.56x here: 4K aliasing)."""
    auto = stream_kernel(stream_stores=["out"], threshold="auto")(jacobi4)
    always, plain = stream_kernel(stream_stores=["out"], threshold=None)(jacobi4), numba.njit(jacobi4)

    def setup(nbytes):
        rows_n = max(3, nbytes // (4 * width))
        g = _float32s(rows_n * width, offset=0).reshape(rows_n, width)
        out = _float32s(rows_n * width, offset=0, fill=False).reshape(rows_n, width)
        return {"numba.njit loop": (plain, (out, g)), "threshold=auto": (auto, (out, g)),
                "always streamed": (always, (out, g))}

    return _envelope(sizes_bytes, setup, "numba.njit loop", lambda nbytes: 2 * nbytes, rounds, progress, stop)


# A band of sizes where streaming wins must hold at least this many
# consecutive sizes, each won in every round, measured in at least
# `AGREEING_ROUNDS` rounds: one fast reading at 3 MiB next to 0.55x at
# 4 MiB set "auto" to 2 MiB from a single round.
BAND_SIZES = 2
AGREEING_ROUNDS = 2


def winning_band(rows, column):
    """Where streaming wins, decided only from agreeing rounds: ``(band,
    why)``. ``band`` is ``(threshold, last)``: stream above ``threshold``
    (the largest size below the band) up to ``last`` (None when the band
    reaches the largest size measured), the band being the longest run of
    at least `BAND_SIZES` consecutive sizes whose ``column`` (a `Spread`)
    is at least 1.0 (as fast as the reference) in every round, extended
    over the larger sizes after it whose median is. Otherwise
    ``band`` is None and ``why`` says whether streaming never won, or the
    rounds could not decide."""
    ratios = [row[column] for row in rows]
    rounds = min(getattr(ratio, "count", 1) for ratio in ratios)
    if rounds < AGREEING_ROUNDS:
        return None, f"could not decide from one round (rounds must agree): run at least {AGREEING_ROUNDS}"
    runs, start = [], None
    for k, ratio in enumerate(ratios + [0.0]):
        won = getattr(ratio, "low", ratio) >= 1.0
        if won and start is None:
            start = k
        elif not won and start is not None:
            runs.append((start, k - 1))
            start = None
    runs = [run for run in runs if run[1] - run[0] + 1 >= BAND_SIZES]
    if not runs:
        mixed = [human_size(row["bytes"]) for row, ratio in zip(rows, ratios) if getattr(ratio, "high", ratio) >= 1.0]
        if not mixed:
            return None, "streaming never won up to the largest size"
        return None, (f"could not decide: streaming won in some rounds only, or at fewer than {BAND_SIZES} "
                      f"consecutive sizes ({', '.join(mixed)})")
    first, last = max(runs, key=lambda run: run[1] - run[0])
    # the band ends where streaming loses (the median), not where one round
    # dipped: on the AMD EPYC Zen 4 VM a 256 MiB copy won 1.67x (one round
    # 0.88x), which would have ended the copy band at 192 MiB
    while last + 1 < len(ratios) and ratios[last + 1] >= 1.0:
        last += 1
    threshold = rows[first - 1]["bytes"] if first else rows[0]["bytes"] - 1
    band = threshold, None if last == len(rows) - 1 else rows[last]["bytes"]
    return band, (f"won in all {rounds} rounds from {human_size(rows[first]['bytes'])} "
                  f"to {human_size(rows[last]['bytes'])}")


def band_settled(column, past_bytes=None):
    """A ``stop`` for the sweeps: true once a larger size can no longer
    change the band `winning_band` finds in ``column``: the band ended, its
    last `BAND_SIZES` sizes losing (median), or, given ``past_bytes``, the
    band reaches the largest size measured and that is ``past_bytes`` or
    more (where only the band's start is used: past the last-level cache,
    streaming keeps winning)."""
    def stop(rows):
        band = winning_band(rows, column)[0]
        if band is None:
            return False
        if band[1] is None:
            return past_bytes is not None and rows[-1]["bytes"] >= past_bytes
        return all(row[column] < 1.0 for row in rows[-BAND_SIZES:])
    return stop


def copy_call_overhead(nbytes=1024, rounds=9, calls=20000):
    """Nanoseconds per call of `streamjit.copyto` and ``np.copyto`` on a
    float32 copy of ``nbytes`` (both below the threshold)."""
    from ..dropins.copy import copyto

    src = np.ones(nbytes // 4, np.float32)
    dst = np.empty_like(src)
    medians = interleaved_medians({"np.copyto": repeated(np.copyto, (dst, src), calls),
                                   "streamjit.copyto": repeated(copyto, (dst, src), calls)}, rounds)
    return {k: t / calls * 1e9 for k, t in medians.items()}


def _csv_row(row):
    """A row with each `Spread` as three columns: the median, min and max."""
    flat = {}
    for key, value in row.items():
        flat[key] = value
        if isinstance(value, Spread):
            flat[f"{key} min"], flat[f"{key} max"] = value.low, value.high
    return flat


def write_csv(rows, path):
    """Write ``rows`` (dicts with the same keys) to the CSV file ``path``, each `Spread` as three
    columns (the median, min and max); returns ``path``."""
    import csv

    rows = [_csv_row(row) for row in rows]
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def bench_mib(default):
    """The largest size to use: ``STREAMJIT_BENCH_MIB`` when set (notebooks
    and their tests), else ``default``."""
    value = os.environ.get("STREAMJIT_BENCH_MIB")
    return int(value) if value else default


def _cell(key, value, digits):
    if key == "bytes":
        return human_size(value)
    if isinstance(value, Spread):
        return f"{value:.{digits}f} ({value.low:.{digits}f}-{value.high:.{digits}f})"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def format_row(row):
    """One row as ``key=value`` pairs on one line (sizes in KiB/MiB, a `Spread` as ``median
    (min-max)``): the progress lines of the CLI."""
    return "  ".join(f"{k}={_cell(k, v, 3)}" for k, v in row.items())


def format_table(rows):
    """Rows as a text table: sizes in KiB/MiB (the ``bytes`` column, headed
    ``size``), each `Spread` as ``median (min-max)``."""
    if not rows:
        return ""
    keys = list(rows[0])
    cells = [[_cell(k, r[k], 2) for k in keys] for r in rows]
    heads = ["size" if k == "bytes" else k for k in keys]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(heads)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(heads, widths))]
    lines += ["  ".join(c.rjust(w) for c, w in zip(cell, widths)) for cell in cells]
    return "\n".join(lines)
