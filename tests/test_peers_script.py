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

_ROOT = pathlib.Path(__file__).resolve().parent.parent
_PATH = _ROOT / "bench" / "peers.py"
_spec = importlib.util.spec_from_file_location("peers_script", _PATH)
peers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(peers)


def test_table_has_a_row_per_kernel():
    done = subprocess.run([sys.executable, str(_PATH), "--kernels", "go_fast,jacobi_1d", "--scale", "0.001",
                           "--rounds", "1", "--frameworks", "numpy,numba,streamjit"],
                          capture_output=True, text=True, timeout=600, cwd=_ROOT)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "| kernel | size | MiB | numpy ms | numba ms | streamjit ms | numpy / njit | streamjit / njit |" in lines
    for name in ("go_fast", "jacobi_1d"):
        row = next(line for line in lines if line.startswith(f"| {name} |"))
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert len(cells) == 8 and not any("failed" in c or "invalid" in c for c in cells), row
        assert cells[-1].endswith("x") and cells[-2].endswith("x")
    assert any(line.startswith("geomean / njit over the 2 kernels where all of numpy, numba, streamjit ran")
               for line in lines), done.stdout
    assert any(line.startswith("threads: ") for line in lines)


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


def test_parallel_sources_run_under_njit_and_streamjit():
    # jacobi_1d and arc_distance: kernels whose parallel source streamjit compiles
    done = subprocess.run([sys.executable, str(_PATH), "--kernels", "jacobi_1d,arc_distance", "--scale", "0.001",
                           "--rounds", "1", "--frameworks", "numba,numba_np,streamjit_np"],
                          capture_output=True, text=True, timeout=600, cwd=_ROOT)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert ("| kernel | size | MiB | numba ms | numba_np ms | streamjit_np ms | numba_np / njit "
            "| streamjit_np / njit |") in lines, done.stdout
    for name in ("jacobi_1d", "arc_distance"):
        row = next(line for line in lines if line.startswith(f"| {name} |"))
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert len(cells) == 8 and not any("failed" in c or "invalid" in c for c in cells), row
        assert cells[-1].endswith("x") and cells[-2].endswith("x")
    assert any(line.startswith("threads: ") and "numba_np, streamjit_np: Numba's threading layer" in line
               for line in lines), done.stdout


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
