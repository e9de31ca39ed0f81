"""Plots of the benchmark tables (`tables.py`), for the CLI and notebooks.

Each function takes the rows a `measure` function returned, draws one figure,
saves it as PNG when given a path (with a non-interactive backend), and
returns it, so a notebook shows it inline.
"""

from ..machine.profile import cpu_name
from . import MIB
from ..machine.threshold import default_threshold, usable_cache_bytes


def _pyplot(path):
    import matplotlib

    if path is not None:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _legend_beside(axis, **options):
    """The legend to the right of the axes, where it covers no bar or line."""
    axis.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, **options)


def _spread(values):
    """Error bars from each `measure.Spread`'s min and max (none for plain floats)."""
    return [[v - getattr(v, "low", v) for v in values], [getattr(v, "high", v) - v for v in values]]


def _finish(fig, path):
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=100)
    return fig


def _envelope(rows, switches, what, path):
    """Bandwidth and speed relative to the reference (the row's ``* GB/s``
    column) against size, for every implementation, with the switches
    (``{label: bytes}``) and a plausible last-level cache marked."""
    plt = _pyplot(path)
    sizes = [r["bytes"] / MIB for r in rows]
    gbs = next(k for k in rows[0] if k.endswith(" GB/s"))
    ratios = {gbs[:-5]: [1.0] * len(rows)}
    ratios.update({k: [r[k] for r in rows] for k in rows[0] if k not in ("bytes", gbs)})
    fig, (bw, ratio) = plt.subplots(2, 1, figsize=(11, 7), sharex=True)
    for impl, values in ratios.items():
        bw.plot(sizes, [r[gbs] * v for r, v in zip(rows, values)], marker="o", label=impl)
        ratio.errorbar(sizes, values, yerr=_spread(values), marker="o", capsize=2, label=impl)
    llc = usable_cache_bytes()
    for axis in (bw, ratio):
        axis.set_xscale("log")
        if llc:
            axis.axvline(llc / MIB, color="grey", linestyle="--", label=f"last-level cache {llc / MIB:g} MiB")
        for (label, switch), color in zip(switches.items(), ("red", "purple")):
            if switch < float("inf"):
                axis.axvline(switch / MIB, color=color, linestyle=":", label=f"{label} {switch / MIB:.4g} MiB")
    bw.set_ylabel("GB/s (read + write)")
    ratio.set_ylabel(f"speed / {gbs[:-5]}")
    ratio.set_xlabel("MiB per array (float32)")
    _legend_beside(bw, fontsize=8)
    bw.set_title(f"{what} on {cpu_name()}")
    return _finish(fig, path)


def copy_envelope(rows, path=None):
    """`measure.copy_envelope`, with the band where `copyto` streams marked."""
    from ..dropins.copy import copy_bands

    streams_above, threads_from = copy_bands(threads=True)
    return _envelope(rows, {"copyto streams above": streams_above, "on all threads from": threads_from}, "copy",
                     path)


def stencil_envelope(rows, path=None):
    """`measure.stencil_envelope`, with the ``threshold="auto"`` switch marked."""
    return _envelope(rows, {'threshold="auto"': default_threshold()[0]}, "4-point Jacobi sweep", path)


def _bars(rows, columns, labels, ylabel, title, path, legend=None, unit_line=False):
    plt = _pyplot(path)
    fig, axis = plt.subplots(figsize=(max(6, 1.6 * len(rows)) + 2.5, 4))
    width = 0.8 / len(columns)
    for k, column in enumerate(columns):
        values = [r[column] for r in rows]
        axis.bar([i + k * width for i in range(len(rows))], values, width, yerr=_spread(values), capsize=2,
                 label=(legend or columns)[k])
    axis.set_xticks([i + width * (len(columns) - 1) / 2 for i in range(len(rows))], labels)
    if unit_line:
        axis.axhline(1.0, color="black", linewidth=0.5)
    axis.set_ylabel(ylabel)
    axis.set_title(f"{title}, {cpu_name()}")
    _legend_beside(axis)
    return _finish(fig, path)


def stream_table(rows, path=None):
    """GB/s per STREAM kernel and implementation (`measure.stream_table`)."""
    columns = [k for k in rows[0] if k.endswith(" GB/s")]
    return _bars(rows, columns, [f"{r['kernel']}\n{r['dtype']}" for r in rows], "GB/s (read + write)",
                 f"STREAM, {rows[0]['MiB/array']} MiB per array", path, legend=[c[:-5] for c in columns])


def ratios(rows, label_key, title, path=None):
    """The ``* / njit`` columns of ``rows`` (e.g. `measure.stencil_dims_table`)."""
    columns = [k for k in rows[0] if k.endswith(" / njit")]
    return _bars(rows, columns, [r[label_key] for r in rows], "speed / numba.njit loop", title, path,
                 legend=[c[:-7] for c in columns], unit_line=True)
