"""bench/load_stages.py: the script times each way to lower loads on
calibrate's workloads (or the ping-pong stencils), as sources of streamed
stores or as streamed loads, against no software prefetch."""

import os
import sys

import numpy as np
import pytest

from streamjit.measure import calibration
from streamjit.machine.profile import LoadStage

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "bench"))
import load_stages  # noqa: E402


@pytest.mark.parametrize("loads, stencils", [(False, False), (True, False), (False, True)])
def test_the_script_times_every_candidate_on_every_workload(loads, stencils, capsys, monkeypatch):
    monkeypatch.setattr(calibration, "SOURCE_CANDIDATES", (LoadStage(), LoadStage("nta", 512)))
    # (two of calibrate's workloads: its tests time them all)
    every = calibration.workloads
    monkeypatch.setattr(calibration, "workloads", lambda mib, rng: dict(list(every(mib, rng).items())[:2]))
    load_stages.main(mib=1, rounds=2, loads=loads, stencils=stencils)
    out = capsys.readouterr().out
    assert ("streamed loads" if loads else "sources of streamed stores") in out
    rows = [line for line in out.splitlines() if line.startswith("  ")]
    workloads = load_stages.stencil_workloads if stencils else calibration.workloads
    assert [row.split(" (spread")[0].strip() for row in rows] == list(workloads(1, np.random.default_rng(0)))
    assert all("no software prefetch 1.00x, prefetchnta 512 bytes ahead " in row for row in rows)


def test_the_row_workloads_hold_the_rows_they_name():
    cases = load_stages.row_workloads(1, np.random.default_rng(0))
    for name, (function, args, output) in cases.items():
        items = int(name.rsplit(" ", 1)[1])
        assert all(a.shape[-1] == items for a in args) and output in ("out", "out_field"), name
    assert sum(name.startswith("hdiff") for name in cases) == 2 and len(cases) == 8


def test_rows_time_the_long_row_candidates_too(capsys, monkeypatch):
    """``--rows`` times prefetcht1 4 KiB once more, in rows of 4 KiB or more only."""
    monkeypatch.setattr(calibration, "SOURCE_CANDIDATES", (LoadStage(), LoadStage("t1", 4096)))
    every = load_stages.row_workloads
    monkeypatch.setattr(load_stages, "row_workloads", lambda mib, rng: dict(list(every(mib, rng).items())[:1]))
    load_stages.main(mib=1, rounds=1, rows=True)
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("  5-point rows of 160"))
    assert "prefetcht1 4096 bytes ahead " in row and "prefetcht1 4096 bytes ahead in rows of 4096 bytes or more " in row
