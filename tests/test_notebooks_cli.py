"""The benchmark notebooks run top to bottom and draw their plots; the
command line's subcommands run and write what they say."""

import glob
import os
import re
import sys

import nbformat
import pytest
from nbclient import NotebookClient

from streamjit import __main__ as cli
from streamjit.__main__ import main

NOTEBOOKS = sorted(glob.glob(os.path.join(os.path.dirname(__file__), "..", "bench", "*.ipynb")))


def test_there_are_three_notebooks():
    assert {os.path.basename(p) for p in NOTEBOOKS} >= {"memcpy.ipynb", "stream.ipynb", "stencil.ipynb"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_notebook_outputs_are_cleared_in_the_repository(path):
    nb = nbformat.read(path, as_version=4)
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in nb.cells if c.cell_type == "code")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_notebook_runs_and_plots(path, monkeypatch, tmp_path):
    monkeypatch.setenv("STREAMJIT_BENCH_MIB", "4")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")]))
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    images = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
              if "image/png" in o.get("data", {})]
    assert images, "the notebook drew no plot"


def test_info(capsys):
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    for key in ("CPU:", "vector ISA:", "vector NT stores:", "widest NT store:", "store fence:", "caches:",
                "threshold (auto):", "copyto streams:", "versions:"):
        assert key in out
    # on AVX-512 the widest NT store is zmm, whether or not the kernels here use it (and the line says which)
    widest = next(line for line in out.splitlines() if line.startswith("widest NT store:"))
    if "AVX-512" in out:
        assert "zmm" in widest


def test_demo(capsys):
    assert main(["demo", "--mib", "2", "--rounds", "1"]) == 0
    out = capsys.readouterr().out
    assert all(k in out for k in ("copy", "scale", "add", "triad", "streamjit/njit"))


def test_bench_writes_csv_and_png(tmp_path, capsys):
    assert main(["bench", "--mib", "2", "--rounds", "1", "--dtypes", "float32", "--sweep", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for name in ("stream.csv", "stream.png", "stencil.csv", "compile.csv", "copy_sweep.csv", "copy_sweep.png",
                 "stencil_sweep.csv", "stencil_sweep.png"):
        assert (tmp_path / name).stat().st_size > 0, name
    spread = lambda *columns: ",".join(f"{c},{c} min,{c} max" for c in columns)  # noqa: E731
    with open(tmp_path / "copy_sweep.csv") as f:
        assert f.readline().strip() == "bytes," + spread("np.copyto GB/s", "streamjit.copyto", "numba.njit loop",
                                                         "streamed")
        assert len(f.readlines()) == 19          # 4 KiB to 2 MiB: powers of two and midpoints
    with open(tmp_path / "stencil_sweep.csv") as f:
        assert f.readline().strip() == "bytes," + spread("numba.njit loop GB/s", "threshold=auto", "always streamed")
    # the envelope tables are printed, one row per size, in human sizes, each median with its spread
    assert len(re.findall(r"^ *4 KiB ", out, re.M)) == 2 and len(re.findall(r"^ *2 MiB ", out, re.M)) == 2
    assert re.search(r"^ *1.5 MiB +\d+\.\d\d \(\d+\.\d\d-\d+\.\d\d\) ", out, re.M)


def test_the_cli_runs_without_matplotlib_and_tqdm(tmp_path, capsys, monkeypatch):
    """After `pip install .` alone (no matplotlib), `bench` skips the plots
    and says in one line how to get them, instead of dying with
    ModuleNotFoundError."""
    monkeypatch.setitem(sys.modules, "matplotlib", None)     # import matplotlib raises ImportError
    monkeypatch.setitem(sys.modules, "tqdm", None)
    # (the sweeps' progress bar is tqdm's only use: without it, none; the
    # sweeps themselves are left out, test_bench_writes_csv_and_png runs them)
    assert cli._progress("copy") is None
    assert main(["bench", "--mib", "1", "--rounds", "1", "--dtypes", "float32", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.count("plots skipped: matplotlib is not installed") == 1
    assert {p.name for p in tmp_path.iterdir()} == {"stream.csv", "stencil.csv", "compile.csv"}


@pytest.mark.parametrize("command", ["demo", "bench", "info", "calibrate"])
def test_help(command, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([command, "--help"])
    assert exit_info.value.code == 0
    assert "usage:" in capsys.readouterr().out


def test_benchmarks_never_time_a_first_call():
    """Each runner runs once untimed, so no table times the call that
    compiles a new loop nest (0.23-0.29 s against 0.0005 s)."""
    from streamjit import measure

    calls, timed = [], []
    measure.interleaved_times({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}, 2,
                              seconds=lambda run: timed.append(len(calls)) or run() or 1.0)
    assert timed == [2, 3, 4, 5]  # both ran before the first timed call
    first_calls = []
    measure.interleaved_times({"compile": lambda: first_calls.append(1)}, 2, warm=False,
                              seconds=lambda run: run() or 1.0)  # (compile_times: the first call is the subject)
    assert first_calls == [1, 1]
