"""Plots of the benchmark tables (`bench.py`), for the CLI and notebooks.

Each function takes the rows a `bench` function returned, draws one figure,
saves it as PNG when given a path (with a non-interactive backend), and
returns it, so a notebook shows it inline.
"""

from .bench import MIB
from .machine import cpu_name
from .threshold import default_threshold, last_level_cache_bytes


def _pyplot(path):
    import matplotlib

    if path is not None:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _finish(fig, path):
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=100)
    return fig


def memcpy_sweep(rows, path=None):
    """Bandwidth and speedup over np.copyto against size (`bench.memcpy_sweep`),
    with the last-level cache size and the auto threshold marked."""
    plt = _pyplot(path)
    sizes = [r["bytes"] / MIB for r in rows]
    impls = [k[:-5] for k in rows[0] if k.endswith(" GB/s")]
    fig, (bw, ratio) = plt.subplots(2, 1, figsize=(8, 7), sharex=True)
    for impl in impls:
        bw.plot(sizes, [r[f"{impl} GB/s"] for r in rows], marker="o", label=impl)
        ratio.plot(sizes, [r[f"{impl} GB/s"] / r["np.copyto GB/s"] for r in rows], marker="o", label=impl)
    llc = last_level_cache_bytes()
    threshold, _ = default_threshold()
    for axis in (bw, ratio):
        axis.set_xscale("log")
        if llc:
            axis.axvline(llc / MIB, color="grey", linestyle="--", label=f"last-level cache {llc / MIB:g} MiB")
        axis.axvline(threshold / MIB, color="red", linestyle=":", label=f"auto threshold {threshold / MIB:.3g} MiB")
    bw.set_ylabel("GB/s (read + write)")
    ratio.set_ylabel("speed / np.copyto")
    ratio.axhline(1.0, color="black", linewidth=0.5)
    ratio.set_xlabel("MiB per array (float32)")
    bw.legend(fontsize=8)
    bw.set_title(f"copy on {cpu_name()}")
    return _finish(fig, path)


def _bars(rows, columns, labels, ylabel, title, path, legend=None, unit_line=False):
    plt = _pyplot(path)
    fig, axis = plt.subplots(figsize=(max(6, 1.6 * len(rows)), 4))
    width = 0.8 / len(columns)
    for k, column in enumerate(columns):
        axis.bar([i + k * width for i in range(len(rows))], [r[column] for r in rows], width,
                 label=(legend or columns)[k])
    axis.set_xticks([i + width * (len(columns) - 1) / 2 for i in range(len(rows))], labels)
    if unit_line:
        axis.axhline(1.0, color="black", linewidth=0.5)
    axis.set_ylabel(ylabel)
    axis.set_title(f"{title}, {cpu_name()}")
    axis.legend()
    return _finish(fig, path)


def stream_table(rows, path=None):
    """GB/s per STREAM kernel and implementation (`bench.stream_table`)."""
    columns = [k for k in rows[0] if k.endswith(" GB/s")]
    return _bars(rows, columns, [f"{r['kernel']}\n{r['dtype']}" for r in rows], "GB/s (read + write)",
                 f"STREAM, {rows[0]['MiB/array']} MiB per array", path, legend=[c[:-5] for c in columns])


def ratios(rows, label_key, title, path=None):
    """The ``* / njit`` columns of ``rows`` (e.g. `bench.stencil_dims_table`)."""
    columns = [k for k in rows[0] if k.endswith(" / njit")]
    return _bars(rows, columns, [r[label_key] for r in rows], "speed / numba.njit loop", title, path,
                 legend=[c[:-7] for c in columns], unit_line=True)
