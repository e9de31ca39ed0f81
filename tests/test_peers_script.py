"""bench/peers.py (NPBench's kernels in NumPy, numba.njit, streamjit, JAX,
Pythran and DaCe, and NPBench's parallel Numba sources under numba.njit and
streamjit) at a tiny size: its table has a row per kernel and the geometric
means. Runs only the frameworks every install has (NumPy, Numba, streamjit,
and the parallel numba_np and streamjit_np); JAX, Pythran and DaCe are
optional (the ``peers`` extra), and a framework not installed is named in
the table, not an error."""

import importlib.util
import pathlib
import subprocess
import sys

import pytest

_ROOT = pathlib.Path(__file__).resolve().parent.parent
_PATH = _ROOT / "bench" / "peers.py"
_spec = importlib.util.spec_from_file_location("peers_script", _PATH)
peers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(peers)


# (every framework every install has, in one run of the script: each kernel's process compiles it once for all)
FRAMEWORKS = ["numpy", "numba", "streamjit", "numba_np", "streamjit_np"]


def test_table_has_a_row_per_kernel():
    """The script's table at a tiny size, for a kernel whose parallel
    sources streamjit compiles (each kernel runs in a process of its own,
    about 6 s)."""
    done = subprocess.run([sys.executable, str(_PATH), "--kernels", "jacobi_1d", "--scale",
                           "0.001", "--rounds", "1", "--frameworks", ",".join(FRAMEWORKS)],
                          capture_output=True, text=True, timeout=600, cwd=_ROOT)
    assert done.returncode == 0, done.stderr
    table = done.stdout.splitlines()
    assert (f"| kernel | size | MiB | {' | '.join(f'{f} ms' for f in FRAMEWORKS)} | "
            f"{' | '.join(f'{f} / njit' for f in FRAMEWORKS if f != 'numba')} |") in table, table
    cells = _cells(table, "jacobi_1d")
    assert len(cells) == 3 + 2 * len(FRAMEWORKS) - 1 and not any("failed" in c or "invalid" in c for c in cells), cells
    assert all(c.endswith("x") for c in cells[-4:])
    assert any(line.startswith(f"geomean / njit over the 1 kernels where all of {', '.join(FRAMEWORKS)} ran")
               for line in table), table
    # the parallel sources ran under njit and streamjit, and the threads are named
    parallel = [3 + FRAMEWORKS.index(f) for f in ("numba_np", "streamjit_np")]
    assert all(float(cells[k]) > 0 for k in parallel)
    assert any(line.startswith("threads: ") and "numba_np, streamjit_np: Numba's threading layer" in line
               for line in table), table


def _cells(lines, name):
    row = next(line for line in lines if line.startswith(f"| {name} |"))
    return [c.strip() for c in row.strip("|").split("|")]


def test_a_framework_not_installed_is_noted_not_run(monkeypatch):
    monkeypatch.setitem(peers.OPTIONAL, "jax", "no_such_module_for_peers")
    skipped = peers.available(["numpy", "numba", "jax"])
    assert list(skipped) == ["jax"] and skipped["jax"].startswith("not installed")
    row = dict(kernel="go_fast", size="paper N=190", mib=0.3, seconds={"numpy": 2e-4, "numba": 1e-4},
               failed={})
    line = peers.format_row(row, ["numpy", "numba", "jax"], skipped)
    assert line.startswith("| go_fast | paper N=190 | 0.3 | 0.2 | 0.1 | not installed") and "0.50x" in line
    assert "not run: jax: not installed" in peers.summary([row], ["numpy", "numba", "jax"], skipped)


def test_peer_sources_are_vendored_and_sizes_scale_the_bytes():
    for name in peers.KERNELS:
        for suffix in ("numpy", "jax", "pythran", "dace", "numba_n", "numba_np"):
            assert peers._source(name, suffix).is_file(), (name, suffix)
    assert peers.parameters("heat_3d")[1]["N"] == 256
    label, params = peers.parameters("heat_3d", scale=1 / 8)       # a cube: each side halves
    assert label == "L N=128 TSTEPS=3" and params["TSTEPS"] == 3
    assert peers.parameters("fdtd_2d", scale=0.25)[1]["NX"] == 1500


def test_parallel_sources_load_with_their_options():
    import numba
    import streamjit
    for name in peers.KERNELS:                       # (cavity_flow's under its upstream name, nopython_mode)
        njit = peers.load_parallel(name, "njit")
        stream = peers.load_parallel(name, "stream")
        assert isinstance(njit, numba.core.registry.CPUDispatcher) and not isinstance(njit, streamjit.StreamDispatcher)
        assert isinstance(stream, streamjit.StreamDispatcher), name
        for kernel in (njit, stream):                # NPBench's options, parallel=True among them
            assert {k: kernel.targetoptions[k] for k in ("nopython", "parallel", "fastmath")} == \
                dict(nopython=True, parallel=True, fastmath=True), name
    assert peers.ONE_THREAD["NUMBA_NUM_THREADS"] == "1" and "NUMBA_NUM_THREADS=1" in peers.thread_note(1)


def test_a_kernel_without_a_parallel_source_says_so(monkeypatch, tmp_path):
    monkeypatch.setattr(peers, "_source", lambda name, suffix: tmp_path / f"{name}_{suffix}.py")
    try:
        peers.load_parallel("go_fast", "stream")
    except peers.NoParallelSource as error:
        why = str(error)
    assert why == "no parallel source upstream (NPBench has no go_fast_numba_np.py)"
    row = dict(kernel="go_fast", size="paper N=190", mib=0.3, seconds={"numba": 1e-4},
               failed={"numba_np": why, "streamjit_np": why})
    line = peers.format_row(row, ["numba", "numba_np", "streamjit_np"], {})
    assert line == f"| go_fast | paper N=190 | 0.3 | 0.1 | {why} | {why} | - | - |"
