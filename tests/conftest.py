import os
import sys
import tempfile

import pytest
from hypothesis import settings
from numba.core.runtime import _nrt_python

sys.path.insert(0, os.path.dirname(__file__))

# The machine profile the suite is written against, the same on every CPU:
# streamed loads prefetchnta 2 KiB ahead and non-temporal where aligned,
# sources of streamed stores (in stencils' loops too) left to the hardware prefetcher. Written before
# any test module decorates a kernel (kernels read the profile then), into a
# cache directory of the suite's own, so no calibration of the user's is
# read or changed. tests/test_machine_profile.py tests the profiles
# themselves: per-CPU defaults, calibrated files, each lowering.
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="streamjit-tests-")
# threshold="auto", the default, streams from 0 bytes here: the suite's small
# arrays run the streamed code they test (under the machine's "auto", tens of
# MiB, they would run the plain loop). Tests of "auto" itself clear it.
os.environ["STREAMJIT_THRESHOLD"] = "0"
from streamjit.machine.profile import LoadStage, stage_record, update_profile_file  # noqa: E402
from helpers import staged_profile  # noqa: E402

# and no run-time 4K-aliasing check, as on the CPUs where trailing sources do
# not stall streamed stores (Zen 3 and 4, Intel): the staged copy it adds to
# every loop made a triad's first compile 0.71-0.82 s against 0.49-0.55 s
# without (bench/README.md, "the suite's staged copy", AMD EPYC Zen 3 VM), so
# only the tests of the staged loop and the generated kernels placed in a page
# compile it (`staged_profile`, the ``page_alias_check`` fixture); and scalar
# NT stores of every item size,
# so that 32-bit ones are emitted (and checked) on CPUs whose row leaves them plain,
# in loops computing up to 64 operations per element (the suite's kernels: one or two);
# and LLVM's own vector width for every loop, as on CPUs that have no wide_stencil_bytes row.
SUITE_PROFILE = {"stream_loads": LoadStage("nta", 2048, True), "sources": LoadStage(), "stencil_sources": LoadStage()}
update_profile_file({"profile": {**{name: stage_record(stage) for name, stage in SUITE_PROFILE.items()},
                                 "page_alias_bytes": 0, "scalar_nt_bytes": [4, 8],
                                 "scalar_nt_ops": 64, "wide_stencil_bytes": []}})

# Fuzz budget: short with the suite, long when asked for (`-m fuzz`).
settings.register_profile("suite", max_examples=60, deadline=None)
settings.register_profile("fuzz", max_examples=3000, deadline=None)


def pytest_configure(config):
    config.addinivalue_line("markers", "fuzz: property tests; `-m fuzz` runs them with a long budget")
    settings.load_profile("fuzz" if "fuzz" in (config.option.markexpr or "") else "suite")


@pytest.fixture
def page_alias_check():
    """Kernels decorated in the test run the 4K-aliasing check of Zen 2 and stage the calls whose sources
    trail their streamed stores (`helpers.staged_profile`)."""
    with staged_profile():
        yield


@pytest.fixture
def allocation_stats():
    """Numba's runtime counting its allocations, meminfos and frees."""
    was = _nrt_python.memsys_stats_enabled()
    _nrt_python.memsys_enable_stats()
    yield
    if not was:
        _nrt_python.memsys_disable_stats()


@pytest.fixture
def profile_rows_measured_apart(monkeypatch):
    """`python -m streamjit calibrate` without timing the machine profile's
    rows, each of which has a test of its own measurement
    (tests/test_machine_profile.py): the load stages keep the stored ones,
    the stencil sources too, no 4K-aliasing check, the first strip, and the scalar and wide-stencil
    rows measure nothing. For tests of what calibrate does around them."""
    from streamjit.measure import calibration, calibration_stencils
    monkeypatch.setattr(calibration, "measure_load_stages", lambda **kwargs: None)
    monkeypatch.setattr(calibration_stencils, "measure_stencil_sources", lambda **kwargs: None)
    monkeypatch.setattr(calibration, "measure_page_alias", lambda **kwargs: (0, calibration.STRIPS[0], {}, []))
    for row in ("measure_scalar_stores", "measure_scalar_ops", "measure_wide_stencils"):
        monkeypatch.setattr(calibration, row, lambda **kwargs: None)
