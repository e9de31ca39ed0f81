"""The machine profile: per-CPU defaults, the calibrated file, each lowering
it can choose, and what users see of it (report, info, calibrate)."""

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import types
from pathlib import Path

import numpy as np
import pytest

import streamjit as sj
from streamjit.measure import calibration, info
from streamjit import measure
from streamjit.machine import profile as machine
from streamjit.machine.cpu_defaults import STALLING_PAGE_ALIAS_BYTES, UNMEASURED
from streamjit.machine.profile import LoadStage
from helpers import needs_x86_avx


@pytest.fixture
def profile_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    return tmp_path


def test_defaults_per_vendor_never_use_a_hint_measured_to_lose():
    intel = machine.default_profile("GenuineIntel", 6)
    # prefetchnta capped one core's stream on the Intel Xeon; NT loads cost 20% there
    for stage in (intel.stream_loads, intel.sources):
        assert stage.hint != "nta" and not stage.nt_loads
    assert "not calibrated" in intel.origin
    amd = machine.default_profile("AuthenticAMD", 26)
    assert amd.stream_loads.hint == "nta" and not amd.sources.prefetches()
    # Zen 5's prefetchnta cost copy 0.84x and triad 0.88x of the stores alone on a Zen 2
    zen2 = machine.default_profile("AuthenticAMD", 23)
    assert not zen2.stream_loads.prefetches() and not zen2.sources.prefetches()
    assert "Zen 2" in zen2.reasons["stream_loads"]
    # Zen 4: prefetchnta 2 KiB ahead gained copy 1.23x and triad 1.09x, lost nowhere; Zen 3 (model 0x01): loads unmeasured
    zen4 = machine.default_profile("AuthenticAMD", 25, 17)
    assert zen4.sources == zen4.stream_loads == LoadStage("nta", 2048) and "Zen 4" in zen4.reasons["sources"]
    assert not machine.default_profile("AuthenticAMD", 25, 0x01).stream_loads.prefetches()
    other = machine.default_profile("aarch64", None)
    assert not other.stream_loads.prefetches() and not other.sources.prefetches()


def test_page_alias_row_per_cpu_kind():
    # measured: no stall on Intel Xeon, Zen 3 and Zen 4; a stall on Zen 2; unmeasured kinds keep Zen 2's check
    for vendor, family, model, expected in (("GenuineIntel", 6, 167, 0), ("AuthenticAMD", 25, 17, 0),
                                            ("AuthenticAMD", 25, 0x61, 0), ("AuthenticAMD", 25, 0x01, 0),
                                            ("AuthenticAMD", 25, 0x21, 0), ("AuthenticAMD", 25, None, 192),
                                            ("AuthenticAMD", 23, 49, 192), ("AuthenticAMD", 26, 2, 192),
                                            ("aarch64", None, None, 192)):
        profile = machine.default_profile(vendor, family, model)
        assert profile.page_alias_bytes == expected, (vendor, family, model)
        assert profile.reasons["page_alias_bytes"]
    zen4 = machine.default_profile("AuthenticAMD", 25, 17)
    assert "Zen 4" in zen4.reasons["page_alias_bytes"] and "family 25 model 17" in zen4.origin
    zen3 = machine.default_profile("AuthenticAMD", 25, 0x01)
    assert "Zen 3" in zen3.reasons["page_alias_bytes"] and "bench/machine_profile.py" in zen3.reasons["page_alias_bytes"]
    assert "no measurement" in machine.default_profile("AuthenticAMD", 25).reasons["page_alias_bytes"]
    assert "no measurement" in machine.default_profile("AuthenticAMD", 26).reasons["page_alias_bytes"]


def test_cpu_identity_reads_vendor_family_and_model_of_the_first_processor():
    vendor, family, model = machine.cpu_identity()
    with open("/proc/cpuinfo") as f:
        first = f.read().split("\n\n")[0]
    fields = {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in first.splitlines())}
    assert vendor == fields.get("vendor_id", vendor)
    assert (family, model) == tuple(int(fields[k]) if k in fields else None for k in ("cpu family", "model"))


def test_strip_row_per_cpu_kind():
    # measured on the Intel Xeon VM and a Zen 4; elsewhere Intel's strip, said to be unmeasured there
    for vendor, family in (("GenuineIntel", 6), ("AuthenticAMD", 23), ("AuthenticAMD", 25), ("aarch64", None)):
        profile = machine.default_profile(vendor, family)
        assert profile.strip_bytes == 512, (vendor, family)
        assert ("bench/staging.py" in profile.reasons["strip_bytes"]
                and ("no measurement" in profile.reasons["strip_bytes"]) == (vendor != "GenuineIntel"))
    zen4 = machine.default_profile("AuthenticAMD", 25, 17)
    assert zen4.strip_bytes == 256 and "bench/machine_profile.py" in zen4.reasons["strip_bytes"]


def test_scalar_store_row_per_cpu_kind():
    # measured: 64-bit scalar NT stores gain on Intel and Zen 5; 32-bit ones on Intel only with its source
    # prefetch (0.38x without), not on Zen 5 (no source prefetch there); unmeasured kinds: 64-bit only
    for vendor, family, sizes in (("GenuineIntel", 6, (4, 8)), ("AuthenticAMD", 26, (8,)), ("AuthenticAMD", 23, (8,)),
                                  ("aarch64", None, (8,))):
        profile = machine.default_profile(vendor, family)
        assert profile.scalar_nt_bytes == sizes, (vendor, family)
        assert "bench/scalar_nt_stores.py" in profile.reasons["scalar_nt_bytes"]
    zen4 = machine.default_profile("AuthenticAMD", 25, 17)    # float32 gained nothing there (1.00x, 1.01x)
    assert zen4.scalar_nt_bytes == (8,) and "Zen 4" in zen4.reasons["scalar_nt_bytes"]
    assert "0.38-0.39x" in machine.default_profile("GenuineIntel", 6).reasons["scalar_nt_bytes"]
    zen3 = machine.default_profile("AuthenticAMD", 25, 0x01)   # float32 gained there too (1.02-1.30x)
    assert zen3.scalar_nt_bytes == (4, 8) and "Zen 3" in zen3.reasons["scalar_nt_bytes"]


def test_calibrated_scalar_store_row_is_read_shown_and_checked(profile_dir):
    calibration.save_row("scalar_nt_bytes", (4, 8), "calibrated here: 1.2x", [{4: {"w": 1.2}, 8: {"w": 1.3}}])
    profile = machine.machine_profile()
    assert profile.scalar_nt_bytes == (4, 8) and profile.reasons["scalar_nt_bytes"] == "calibrated here: 1.2x"
    assert sj.stream_kernel(stream_stores=["a"])(measure.stream_copy).stream_options.machine.scalar_nt_bytes == (4, 8)
    assert info.machine_info()["scalar NT stores"].startswith("items of 4 and 8 bytes, where a streamed loop")
    calibration.save_row("scalar_nt_bytes", (), "calibrated here: 0.4x", [])
    assert machine.machine_profile().scalar_nt_bytes == ()
    assert info.machine_info()["scalar NT stores"].startswith("none, where")
    machine.update_profile_file({"profile": {"scalar_nt_bytes": [2]}})
    with pytest.warns(sj.StreamWarning, match=r"profile.scalar_nt_bytes is \[2\], not a list of the item sizes 4 and 8"):
        assert machine.machine_profile().scalar_nt_bytes == machine.default_profile(*machine.cpu_identity()).scalar_nt_bytes


def test_scalar_operations_row_per_cpu_kind():
    # measured on the Intel Xeon VM: up to 8 operations per element gained with its source prefetch, 2 lost without
    # one; unmeasured kinds, which prefetch no source, allow what gained everywhere
    for vendor, family, model, ops in (("GenuineIntel", 6, 167, 8), ("AuthenticAMD", 25, 17, 8), ("AuthenticAMD", 25, 1, 4),
                                       ("AuthenticAMD", 26, 2, 1), ("AuthenticAMD", 23, 49, 1), ("aarch64", None, None, 1)):
        profile = machine.default_profile(vendor, family, model)
        assert profile.scalar_nt_ops == ops and "bench/machine_profile.py" in profile.reasons["scalar_nt_ops"]
        assert ("no measurement" in profile.reasons["scalar_nt_ops"]) == (ops == 1)


def test_calibrated_scalar_operations_row_is_read_shown_and_checked(profile_dir):
    calibration.save_row("scalar_nt_ops", 4, "calibrated here: 1.1x", [{4: 1.1}])
    profile = machine.machine_profile()
    assert profile.scalar_nt_ops == 4 and profile.reasons["scalar_nt_ops"] == "calibrated here: 1.1x"
    assert sj.stream_kernel(stream_stores=["a"])(measure.stream_copy).stream_options.machine.scalar_nt_ops == 4
    assert info.machine_info()["scalar NT loops"].startswith("those computing at most 4 floating-point operations")
    machine.update_profile_file({"profile": {"scalar_nt_ops": -1}})
    with pytest.warns(sj.StreamWarning, match=r"profile.scalar_nt_ops is -1, not a number of operations from 0 to 64"):
        assert machine.machine_profile().scalar_nt_ops == machine.default_profile(*machine.cpu_identity()).scalar_nt_ops


def test_calibrate_measures_scalar_stores_per_operation(profile_dir):
    printed = []
    ops, reason, rows = calibration.measure_scalar_ops(mib=1, rounds=1, report=printed.append)
    assert ops in calibration.SCALAR_OPS and reason.startswith("calibrated on")
    assert set(rows[0]) == set(calibration.SCALAR_OPS)
    assert printed[0].startswith("scalar NT stores against plain stores per operation computed per element stored")


def test_calibrate_measures_scalar_stores_per_item_size(profile_dir):
    printed = []
    sizes, reason, rows = calibration.measure_scalar_stores(mib=1, rounds=1, report=printed.append)
    assert set(sizes) <= {4, 8} and reason.startswith("calibrated on")
    assert set(rows[0]) == {4, 8} and all(len(speeds) == 2 for speeds in rows[0].values())
    assert "scalar NT stores against plain stores" in printed[0]


def test_calibrate_measures_page_alias_and_strips(profile_dir):
    printed = []
    page_alias_bytes, strip, reasons, rows = calibration.measure_page_alias(mib=1, rounds=1, report=printed.append)
    assert page_alias_bytes in (0, STALLING_PAGE_ALIAS_BYTES) and strip in calibration.STRIPS
    assert set(reasons) == {"page_alias_bytes", "strip_bytes"} and all(r.startswith("calibrated on") for r in
                                                                       reasons.values())
    assert [row["row"] for row in rows] == ["page_alias_bytes", "strip_bytes"]
    assert all(set(speeds) == set(map(str, calibration.STRIPS)) for name, speeds in rows[1].items() if name != "row")
    assert printed[0].startswith("sources trailing a streamed store modulo 4 KiB (1 MiB float32)")
    assert calibration.save_page_alias(page_alias_bytes, strip, reasons, rows)
    assert (machine.machine_profile().page_alias_bytes, machine.machine_profile().strip_bytes) == (page_alias_bytes,
                                                                                                   strip)


def test_calibrate_measures_the_stencil_sources(profile_dir, monkeypatch):
    from streamjit.measure import calibration_stencils
    candidates = (LoadStage(), LoadStage("t1", 4096))
    monkeypatch.setattr(calibration, "SOURCE_CANDIDATES", candidates)
    # the two 5-point sweeps of calibrate's stencil workloads: the procedure's
    # test (hdiff, the suite's longest compile, runs in test_temporaries.py)
    every = calibration_stencils.stencil_workloads
    monkeypatch.setattr(calibration_stencils, "stencil_workloads", lambda mib, rng, with_hdiff: {
        k: v for k, v in every(mib, rng, with_hdiff).items() if k.startswith("5-point")})
    printed = []
    stage, reason, rows = calibration_stencils.measure_stencil_sources(mib=1, rounds=1, report=printed.append)
    assert stage in candidates and reason.startswith("calibrated on") and "5-point float64 rows of 4000" in reason
    assert [row["choice"] for row in rows] == [c.describe() for c in candidates]
    assert printed[0].startswith("sources of streamed stencil loops, speed relative to no software prefetch")
    assert sum(line.startswith("  * ") for line in printed) == 1
    calibration_stencils.save_stencil_sources(stage, reason, rows)
    profile = machine.machine_profile()
    assert profile.stencil_sources == stage and profile.reasons["stencil_sources"] == reason
    assert info.machine_info()["stencil sources"].startswith(stage.describe())


def test_stencil_sources_row_per_cpu_kind():
    # measured apart on the Zen 4 VM: prefetcht1 4 KiB gained on 2-D sweeps where the sources row's prefetchnta
    # lost, and both lost on short rows (hdiff's among them), which run without prefetches, as the reason says
    zen4 = machine.default_profile("AuthenticAMD", 25, 17)
    assert zen4.stencil_sources == LoadStage("t1", 4096, min_row_bytes=4096) != zen4.sources
    assert "--rows" in zen4.reasons["stencil_sources"] and "hdiff" in zen4.reasons["stencil_sources"]
    intel = machine.default_profile("GenuineIntel", 6)
    assert intel.stencil_sources == intel.sources and "the sources row" in intel.reasons["stencil_sources"]
    for vendor, family in (("AuthenticAMD", 26), ("AuthenticAMD", 23), ("aarch64", None)):
        profile = machine.default_profile(vendor, family)
        assert profile.stencil_sources == LoadStage() and "no measurement" in profile.reasons["stencil_sources"]


def test_wide_stencil_row_per_cpu_kind():
    # measured: 512-bit float64 stencils gained on the Intel Xeon VM; unmeasured kinds keep LLVM's width
    intel = machine.default_profile("GenuineIntel", 6)
    assert intel.wide_stencil_bytes == (8,) and "bench/vector_width.py" in intel.reasons["wide_stencil_bytes"]
    for vendor, family in (("AuthenticAMD", 26), ("AuthenticAMD", 25), ("AuthenticAMD", 23), ("aarch64", None)):
        profile = machine.default_profile(vendor, family)
        assert profile.wide_stencil_bytes == () and "no measurement" in profile.reasons["wide_stencil_bytes"]
    zen4 = machine.default_profile("AuthenticAMD", 25, 17)    # LLVM's znver4 width already stores zmm
    assert zen4.wide_stencil_bytes == () and "zmm" in zen4.reasons["wide_stencil_bytes"]


def test_calibrated_wide_stencil_row_is_read_shown_and_checked(profile_dir, monkeypatch):
    calibration.save_row("wide_stencil_bytes", (4, 8), "calibrated here: 1.05x", [{8: {"w": 1.05}}])
    monkeypatch.setattr(machine, "vector_isa", lambda: "AVX-512")
    profile = machine.machine_profile()
    assert profile.wide_stencil_bytes == (4, 8) and profile.reasons["wide_stencil_bytes"] == "calibrated here: 1.05x"
    assert sj.stream_kernel(stream_stores=["a"])(measure.stream_copy).stream_options.machine.wide_stencil_bytes == (4, 8)
    assert info.machine_info()["wide stencils"].startswith("items of 4 and 8 bytes: streamed stencil loops")
    monkeypatch.setattr(machine, "vector_isa", lambda: "AVX2")
    machine.update_profile_file({"profile": {"wide_stencil_bytes": [8]}})  # (a new file version: read again)
    profile = machine.machine_profile()
    assert profile.wide_stencil_bytes == () and "no AVX-512 (AVX2)" in profile.reasons["wide_stencil_bytes"]
    machine.update_profile_file({"profile": {"wide_stencil_bytes": [3]}})
    with pytest.warns(sj.StreamWarning, match=r"profile.wide_stencil_bytes is \[3\], not a list of the item sizes"):
        machine.machine_profile()


def test_calibrate_measures_wide_stencils_per_item_size(profile_dir):
    printed = []
    measured = calibration.measure_wide_stencils(mib=2, rounds=1, report=printed.append)
    if machine.vector_isa() != "AVX-512":
        assert measured is None and "no AVX-512" in printed[0]
        return
    sizes, reason, rows = measured
    assert set(sizes) <= {4, 8} and reason.startswith("calibrated on")
    assert set(rows[0]) == {4, 8} and "jacobi5 float64" in rows[0][8]
    assert "streamed stencils 512 bits wide against LLVM's width" in printed[0]


def test_calibrated_page_alias_and_strip_rows_are_read_kept_and_shown(profile_dir):
    calibration.save_page_alias(64, 1024, {"page_alias_bytes": "calibrated here: triad 0.5x",
                                           "strip_bytes": "calibrated here: 1024 B 0.9x"},
                                [{"row": "page_alias_bytes", "triad": 0.5}])
    calibration.save_load_stages(LoadStage("t1", 512), LoadStage(), {"sources": "why"}, [])  # keeps the rows
    profile = machine.machine_profile()
    assert profile.page_alias_bytes == 64 and profile.reasons["page_alias_bytes"] == "calibrated here: triad 0.5x"
    assert profile.strip_bytes == 1024 and profile.reasons["strip_bytes"] == "calibrated here: 1024 B 0.9x"
    assert profile.sources == LoadStage("t1", 512) and profile.reasons["sources"] == "why"
    options = sj.stream_kernel(stream_stores=["a"])(measure.stream_copy).stream_options
    assert (options.machine.page_alias_bytes, options.machine.strip_bytes) == (64, 1024)
    shown = info.machine_info(why=True)
    assert shown["4K aliasing check"].startswith("sources 1-64 bytes behind")
    assert shown["staged strips"] == "1024 bytes per destination (calibrated here: 1024 B 0.9x)"
    default = machine.default_profile(*machine.cpu_identity())
    machine.update_profile_file({"profile": {"page_alias_bytes": 5000, "strip_bytes": 100}})
    with pytest.warns(sj.StreamWarning, match="profile.page_alias_bytes is 5000") as caught:
        profile = machine.machine_profile()
    assert (profile.page_alias_bytes, profile.strip_bytes) == (default.page_alias_bytes, default.strip_bytes)
    assert any("profile.strip_bytes is 100, not a number of bytes from 64 to 65536, a multiple of 64"
               in str(w.message) for w in caught)


def test_uncalibrated_machine_gets_its_cpu_default(profile_dir):
    assert machine.machine_profile() == machine.default_profile(*machine.cpu_identity())


def test_calibrated_file_is_read_and_bad_entries_fall_back(profile_dir):
    machine.update_profile_file({"profile": {"sources": machine.stage_record(LoadStage("t2", 1024)),
                                             "stream_loads": {"hint": "bogus", "distance": 64}}})
    with pytest.warns(sj.StreamWarning, match="profile.stream_loads is {'hint': 'bogus', 'distance': 64}, not a"):
        profile = machine.machine_profile()
    default = machine.default_profile(*machine.cpu_identity())
    assert profile.sources == LoadStage("t2", 1024)
    assert profile.stream_loads == default.stream_loads            # the invalid entry is skipped
    assert profile.origin.startswith("calibrated in") and "sources only" in profile.origin


def test_profile_writes_merge_under_a_lock(profile_dir, monkeypatch):
    from streamjit.machine import threshold as th
    monkeypatch.delenv(th.ENV_VAR, raising=False)    # (the suite's conftest sets it)
    th.save_calibration({"kernel": 777}, {"kernel": [1]})
    calibration.save_load_stages(LoadStage("t1", 512), LoadStage(), {"sources": "why"}, [])
    threads = [threading.Thread(target=machine.update_profile_file, args=({f"key{k}": k},)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with open(machine.profile_file()) as f:
        record = json.load(f)
    assert record["threshold_bytes"] == 777 and record["measurements"]["kernel"] == [1]
    assert record["profile"]["sources"]["hint"] == "t1"
    assert all(record[f"key{k}"] == k for k in range(8))           # no writer lost another's value
    assert th.default_threshold()[0] == 777


def test_choose_never_takes_a_loss_or_noise():
    base, good, lossy, noise = LoadStage(), LoadStage("t1", 4096), LoadStage("nta", 2048), LoadStage("t0", 512)
    table = {base: {"copy": 1.0, "triad": 1.0}, good: {"copy": 1.2, "triad": 1.0},
             lossy: {"copy": 1.5, "triad": 0.9}, noise: {"copy": 1.01, "triad": 1.0}}
    assert calibration.choose(table, base) == good
    del table[good]
    assert calibration.choose(table, base) == base                 # the rest lose somewhere or gain only noise


def test_the_check_is_chosen_only_where_the_staged_loop_wins_without_losing_anywhere():
    """``page_alias_choice`` gets the staged loop's time over the aligned
    loop's per workload (sources a few bytes behind the streamed store)."""
    stalls = {"triad": 0.55, "stencil": 0.70}                       # the aligned loop stalls on both
    assert calibration.page_alias_choice(stalls)[0] == STALLING_PAGE_ALIAS_BYTES
    zen4 = {"triad": 0.93, "stencil": 1.40}                         # staged wins one, loses the other
    assert calibration.page_alias_choice(zen4)[0] == 0
    assert calibration.page_alias_choice({"triad": 0.995, "stencil": 1.0})[0] == 0   # noise, not a stall
    assert calibration.page_alias_choice(zen4)[1] == "triad 0.93x, stencil 1.40x"


def test_one_slow_round_is_not_noise_but_disagreeing_rounds_are():
    assert measure.spread([1.0, 1.01, 1.75, 0.99, 1.0]) < calibration.NOISE
    assert measure.spread([1.0, 1.3, 1.5, 0.99, 1.0]) > calibration.NOISE
    assert measure.spread([2.0]) == 1.0


def triad(a, b, c, q):
    for i in range(a.shape[0]):
        a[i] = b[i] + q * c[i]


def _prefetches(kernel):
    return sorted(set(re.findall(r"^\s*(prefetch\w+)\s", kernel.inspect_asm(kernel.signatures[0]), re.M)))


@pytest.fixture(scope="module")
def triad_args():
    rng = np.random.default_rng(3)
    b, c = rng.standard_normal(5001), rng.standard_normal(5001)
    return b, c, b[1:] + 2.5 * c[1:]


@needs_x86_avx
@pytest.mark.parametrize("hint", ["nta", "t0", "t1", "t2"])
def test_prefetch_hint_is_the_instruction(hint, triad_args):
    b, c, expected = triad_args
    kernel = sj.stream_kernel(stream_stores=["a"], stream_loads=True, prefetch_hint=hint)(triad)
    out = np.empty(5001)
    kernel(out[1:], b[1:], c[1:], 2.5)
    np.testing.assert_array_equal(out[1:], expected)
    assert _prefetches(kernel) == [f"prefetch{hint}"]
    assert f"prefetch{hint}" in str(kernel.stream_report())


def test_hint_none_and_distance_zero_prefetch_nothing(triad_args):
    b, c, expected = triad_args
    for options in ({"prefetch_hint": "none"}, {"prefetch_distance": 0}):
        kernel = sj.stream_kernel(stream_stores=["a"], stream_loads=True, **options)(triad)
        out = np.empty(5000)
        kernel(out, b[1:], c[1:], 2.5)
        np.testing.assert_array_equal(out, expected)
        report = kernel.stream_report()
        assert report.arrays["b"].prefetches == report.arrays["c"].prefetches == 0


def test_hint_and_distance_are_validated_and_in_the_cache_key():
    for bad in ({"prefetch_hint": "t3"}, {"prefetch_hint": 1}, {"prefetch_distance": -1},
                {"prefetch_distance": 1 << 30}):
        with pytest.raises(sj.StreamConfigError, match=next(iter(bad))):
            sj.stream_kernel(stream_stores=["a"], **bad)(triad)
    keys = {sj.stream_kernel(stream_stores=["a"], prefetch_hint=h)(triad).stream_options.cache_key()
            for h in ("nta", "t1", "none")}
    assert len(keys) == 3


@needs_x86_avx
def test_sources_of_stores_alone_are_prefetched_as_the_profile_says(triad_args):
    """The asynchronous load stage of a stores-only loop: its unit-stride
    sources prefetched, as plain (never non-temporal) loads."""
    b, c, expected = triad_args
    kernel = calibration.kernel_with_stages(triad, "a", False, LoadStage(), LoadStage("t1", 4096))
    out = np.empty(5001)
    kernel(out[1:], b[1:], c[1:], 2.5)
    np.testing.assert_array_equal(out[1:], expected)
    assert _prefetches(kernel) == ["prefetcht1"]
    assert re.search(r"getelementptr i8, ptr %[\w.\-]+, i64 4096", kernel.inspect_llvm(kernel.signatures[0]))
    report = kernel.stream_report()
    assert report.arrays["b"].prefetches > 0 and report.arrays["b"].nt_loads == 0
    assert report.arrays["a"].prefetches == 0                     # the streamed destination is not


def test_non_temporal_loads_only_where_the_profile_says(triad_args):
    b, c, expected = triad_args
    lowered = {}
    for nt in (False, True):
        kernel = calibration.kernel_with_stages(triad, "a", True, LoadStage("nta", 2048, nt), LoadStage())
        out = np.zeros(5008)
        kernel(out[8:], b[1:5001], c[1:5001], 2.5)          # co-aligned: the aligned-source loop runs
        np.testing.assert_array_equal(out[8:], expected[:5000])
        lowered[nt] = kernel.stream_report().arrays["b"].nt_loads
    assert lowered[False] == 0
    assert lowered[True] > 0


def test_report_and_info_name_the_profile(profile_dir):
    profile = machine.machine_profile()
    stores_only = sj.stream_kernel(stream_stores=["a"])(triad)
    loads_too = sj.stream_kernel(stream_stores=["a"], stream_loads=True)(triad)
    for kernel in (stores_only, loads_too):
        kernel(np.empty(100), np.ones(100), np.ones(100), 1.0)
    text = str(stores_only.stream_report())
    stencils = ("" if profile.stencil_sources == profile.sources else
                f"; in a stencil's loop: {profile.stencil_sources.describe()}")
    assert f"loads: sources of streamed stores: {profile.sources.describe()}{stencils} ({profile.origin})" in text
    text = str(loads_too.stream_report())
    if profile.stream_loads == profile.sources:     # the report says that stream_loads adds nothing here
        measured = profile.reasons["stream_loads"] != UNMEASURED["stream_loads"][1]
        assert ("loads: streamed loads: as the sources (" + ("no other lowering measured faster on this CPU)"
                                                             if measured else "not measured on this CPU)")) in text
    else:
        assert f"loads: streamed loads: {profile.stream_loads.describe()};" in text
    shown = info.machine_info()
    assert f"({profile.origin})" in shown["profile"]
    assert shown["stencil sources"].startswith(f"{profile.stencil_sources.describe()}, the sources of a stencil's loop")
    assert shown["streamed loads"].startswith(profile.stream_loads.describe())


def test_calibrate_profile_measures_and_saves_every_choice(profile_dir, monkeypatch):
    # (every kind of candidate, not all of them: each compiles 5 kernels; calibrate times them all)
    monkeypatch.setattr(calibration, "SOURCE_CANDIDATES", (LoadStage(), LoadStage("nta", 512), LoadStage("t1", 4096)))
    monkeypatch.setattr(calibration, "LOAD_CANDIDATES", calibration.SOURCE_CANDIDATES + calibration.LOAD_CANDIDATES[-2:])
    printed = []
    sources, loads, reasons, rows = calibration.measure_load_stages(mib=1, rounds=1, report=printed.append)
    assert sources in calibration.SOURCE_CANDIDATES and loads in calibration.LOAD_CANDIDATES
    # every candidate is shown with its ratio on every workload, the winners starred
    assert len(rows) == len(calibration.SOURCE_CANDIDATES) + len(calibration.LOAD_CANDIDATES)
    assert sum(line.startswith("  * ") for line in printed) == 2
    calibration.save_load_stages(sources, loads, reasons, rows)
    profile = machine.machine_profile()
    assert (profile.sources, profile.stream_loads) == (sources, loads)
    assert profile.reasons["sources"].startswith("calibrated on")


def test_prange_workers_prefetch_each_line_once():
    """A worker's prefetches survive its second optimization in the kernel's
    module under other names; none may be added again."""
    @sj.stream_kernel(stream_stores=["a"], parallel=True, prefetch_hint="t1", prefetch_distance=4096)
    def parallel_copy(a, b):
        for i in sj.prange(a.shape[0]):
            a[i] = b[i]

    b = np.random.default_rng(5).standard_normal(100_001)
    a = np.empty_like(b)
    parallel_copy(a, b)
    np.testing.assert_array_equal(a, b)
    llvm_ir = parallel_copy.inspect_llvm(parallel_copy.signatures[0])
    blocks = re.split(r"\n(?=[\w.\-]+:)", llvm_ir)
    prefetched = [re.findall(r"call void @llvm\.prefetch\.p0\(ptr (%[\w.\-]+)", block) for block in blocks]
    assert any(prefetched)
    assert all(len(p) == len(set(p)) for p in prefetched)


# Damaged profile files, each as (file text, the keys it damages).
_STAGE = {"hint": "t1", "distance": 64}
DAMAGED = [
    ("{not json", [""]), ("[1, 2]", [""]), ('"text"', [""]), ("null", [""]), ("\udcff", [""]),
    ({"profile": [1, 2]}, ["profile"]), ({"profile": "x"}, ["profile"]),
    ({"profile": {"stream_loads": [1, 2]}}, ["profile.stream_loads"]),
    ({"profile": {"stream_loads": "t1"}}, ["profile.stream_loads"]),
    ({"profile": {"stream_loads": {**_STAGE, "hint": ["t1"]}}}, ["profile.stream_loads"]),
    ({"profile": {"stream_loads": {**_STAGE, "distance": "64"}}}, ["profile.stream_loads"]),
    ({"profile": {"stream_loads": {**_STAGE, "distance": True}}}, ["profile.stream_loads"]),
    ({"profile": {"stream_loads": {**_STAGE, "distance": -1}}}, ["profile.stream_loads"]),
    ({"profile": {"stream_loads": {**_STAGE, "distance": 64.5}}}, ["profile.stream_loads"]),
    ({"profile": {"stream_loads": {**_STAGE, "nt_loads": "no"}}}, ["profile.stream_loads"]),
    ({"profile": {"sources": {**_STAGE, "nt_loads": 1}}}, ["profile.sources"]),
    ({"profile": {"sources": {**_STAGE, "hint": None}}}, ["profile.sources"]),
    ({"profile": {"sources": {}}}, ["profile.sources"]),
    ({"profile": {"stencil_sources": {**_STAGE, "hint": "t9"}}}, ["profile.stencil_sources"]),
    ({"profile": {"stencil_sources": {**_STAGE, "min_row_bytes": -1}}}, ["profile.stencil_sources"]),
    ({"profile": {"stencil_sources": {**_STAGE, "min_row_bytes": True}}}, ["profile.stencil_sources"]),
    ({"profile": {"reasons": "why"}}, ["profile.reasons"]), ({"profile": {"reasons": ["why"]}}, ["profile.reasons"]),
    ({"profile": {"reasons": {"sources": 3}}}, ["profile.reasons"]),
    ({"threshold_bytes": "16M"}, ["threshold_bytes"]), ({"threshold_bytes": [1]}, ["threshold_bytes"]),
    ({"threshold_bytes": True}, ["threshold_bytes"]), ({"threshold_bytes": -5}, ["threshold_bytes"]),
    ({"copy_threshold_bytes": {"a": 1}}, ["copy_threshold_bytes"]), ({"copy_limit_bytes": 1e30}, ["copy_limit_bytes"]),
    ({"measurements": [1, 2]}, ["measurements"]), ({"measurements": "x"}, ["measurements"]),
    ({"profile": {"stream_loads": [1], "sources": {**_STAGE, "nt_loads": "no"}, "reasons": "r"},
      "threshold_bytes": "x", "measurements": []},
     ["profile.stream_loads", "profile.sources", "profile.reasons", "threshold_bytes", "measurements"]),
]


@pytest.mark.parametrize("content, keys", DAMAGED, ids=[f"damaged-{k}" for k in range(len(DAMAGED))])
def test_a_damaged_profile_file_is_ignored_entry_by_entry_with_one_warning_each(profile_dir, monkeypatch, content,
                                                                                keys):
    from streamjit.machine import threshold as th
    monkeypatch.delenv(th.ENV_VAR, raising=False)
    path = machine.profile_file()
    machine.os.makedirs(machine.os.path.dirname(path))
    with open(path, "w", errors="surrogateescape") as f:
        f.write(content if isinstance(content, str) else json.dumps(content))
    with pytest.warns(sj.StreamWarning) as warned:
        profile = machine.machine_profile()  # what every streaming kernel reads (import streamjit too)
        thresholds = th.default_threshold(), th.copy_threshold(), th.numpy_streaming_bytes()
        kernel = sj.stream_kernel(lambda a: None, stream_stores=["a"])
        machine.update_profile_file({"copy_threshold_bytes": 1}, {"copy": [1]})  # calibrate's save
    messages = [str(w.message) for w in warned]
    assert len(messages) == len(keys)  # once each, however often the file is read
    for key in keys:
        assert sum(m.startswith(f"machine profile {path}: {key + ' is ' if key else 'not '}") for m in messages) == 1
    assert profile.stream_loads == machine.default_profile(*machine.cpu_identity()).stream_loads
    assert "calibration" not in thresholds[0][1] and kernel.stream_options is not None
    assert machine.read_profile_file()["copy_threshold_bytes"] == 1  # the save rewrote a valid file


def test_a_damaged_entry_leaves_its_neighbours_in_force(profile_dir):
    machine.update_profile_file({"profile": {"sources": {"hint": "t2", "distance": 1024},
                                             "stream_loads": {"hint": "t0", "distance": 512, "nt_loads": "no"}}})
    with pytest.warns(sj.StreamWarning, match="profile.stream_loads is .*'nt_loads': 'no'"):
        profile = machine.machine_profile()
    assert profile.sources == LoadStage("t2", 1024) and not profile.stream_loads.nt_loads


def test_import_streamjit_survives_a_damaged_profile_file(tmp_path):
    import subprocess
    import sys

    from helpers import checkout_env
    os_path = tmp_path / "streamjit"
    os_path.mkdir()
    (os_path / "calibration.json").write_text(json.dumps(DAMAGED[-1][0]))
    code = ("import numpy as np, streamjit as sj\n"
            "k = sj.stream_kernel(lambda a, b: None, stream_stores=['a'])\nprint(sj.copyto(np.ones(3), np.zeros(3)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=checkout_env(XDG_CACHE_HOME=str(tmp_path)))
    assert done.returncode == 0 and done.stdout == "None\n", done.stderr
    assert done.stderr.count("StreamWarning: machine profile") == 5


def test_calibrate_into_an_unwritable_directory_fails_fast_with_one_line(monkeypatch, tmp_path, capsys):
    from streamjit.__main__ import main
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "file"))  # the cache directory would be under a file
    monkeypatch.setattr(calibration, "measure_load_stages", lambda **kwargs: pytest.fail("measured"))
    assert main(["calibrate"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out == [f"calibrate: cannot write the machine profile {tmp_path}/file/streamjit/calibration.json: Not a "
                   "directory; nothing measured (set XDG_CACHE_HOME to a writable directory)"]


def test_calibrate_that_cannot_save_prints_what_it_measured(profile_dir, monkeypatch, capsys):
    from streamjit.__main__ import main

    def fails(*args):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(calibration, "measure_load_stages",
                        lambda **kwargs: (LoadStage("t1", 512), LoadStage(), {}, []))
    monkeypatch.setattr(calibration, "save_load_stages", fails)
    assert main(["calibrate"]) == 1
    out = capsys.readouterr().out
    assert '"sources": "LoadStage(hint=\'t1\', distance=512, nt_loads=False, min_row_bytes=0)"' in out
    assert out.rstrip().splitlines()[-1] == (f"calibrate: could not save the measurements above to "
                                             f"{machine.profile_file()}: Permission denied")


def test_a_stored_choice_is_kept_unless_beaten_clearly():
    none, t1, t2 = LoadStage(), LoadStage("t1", 512), LoadStage("t2", 4096)
    table = {none: {"copy": 1.0}, t1: {"copy": 1.08}, t2: {"copy": 1.09}}
    assert calibration.choose(table, none) == t2
    assert calibration.choose(table, none, incumbent=t1) == t1             # 1.01x over the stored: not clear
    assert calibration.choose(table, none, gain=calibration.CLEAR_GAIN) == t2  # 1.09x over the baseline
    assert calibration.choose(table, none, incumbent=t1, gain=calibration.CLEAR_GAIN) == t1


def test_calibrate_says_when_the_machine_is_loaded_and_keeps_the_stored_thresholds(profile_dir, monkeypatch, capsys,
                                                                                      profile_rows_measured_apart):
    from streamjit.machine import threshold as th
    from streamjit.__main__ import main
    monkeypatch.delenv(th.ENV_VAR, raising=False)
    th.save_calibration({"copy": 12345, "kernel": 23456}, {})
    monkeypatch.setattr(calibration.os, "getloadavg", lambda: (1.9, 1.0, 0.5))
    measured = []
    monkeypatch.setattr(calibration, "measure_load_stages", lambda **kwargs: measured.append(kwargs) or
                        (LoadStage(), LoadStage(), {}, []))
    wins = [{"bytes": b << 20, "streamed": measure.Spread([1.5, 1.6]), "always streamed": measure.Spread([1.5, 1.6])}
            for b in (1, 2, 3)]
    monkeypatch.setattr(measure, "copy_envelope", lambda sizes, rounds, stop: wins)
    monkeypatch.setattr(measure, "stencil_envelope", lambda sizes, rounds, stop: wins)
    assert main(["calibrate", "--max-mib", "2", "--profile-mib", "1"]) == 1
    out = capsys.readouterr().out
    assert "note: this machine is loaded (load average 1.90 over the last minute" in out
    assert "the stored thresholds are kept (kernel: 23456 bytes, copy: 12345 bytes)" in out
    assert measured[0]["loaded"] and th.stored_thresholds() == {"copy": 12345, "kernel": 23456}


def test_rounds_that_keep_disagreeing_choose_nothing_and_say_so(monkeypatch):
    """A workload whose rounds disagree is timed again, up to RETRIES times,
    with the kernels already compiled; still disagreeing, no load lowering
    is chosen (calibrate then saves none)."""
    timed, built = [], []
    monkeypatch.setattr(calibration.measure, "interleaved_times", lambda runners, rounds: timed.append(runners) or
                        {key: [1.0, 1.0, 3.0, 3.0] for key in runners})
    every = calibration.kernel_with_stages
    monkeypatch.setattr(calibration, "kernel_with_stages",
                        lambda *args, **rows: built.append(args) or every(*args, **rows))
    monkeypatch.setattr(calibration, "workloads", lambda mib, rng: dict(list(EVERY_WORKLOAD(mib, rng).items())[:1]))
    printed = []
    assert calibration.measure_load_stages(mib=1, rounds=3, report=printed.append) is None
    assert len(timed) == calibration.RETRIES + 1 and len(built) == len(calibration.SOURCE_CANDIDATES)
    assert all(runners.keys() == timed[0].keys() for runners in timed)
    assert printed[-1] == "note: rounds of one build disagree by up to 3.00x (more than 1.15x): giving up"
    assert printed[0].endswith(f"measuring again (1 of {calibration.RETRIES})")


EVERY_WORKLOAD = calibration.workloads


def test_a_candidate_that_lost_is_not_compiled_for_the_next_workloads(monkeypatch):
    """`racing_compare`: a build below NO_LOSS on one workload is left out of
    the next, the baseline and the incumbent (``keep``) never; builds alike
    share one kernel across calls."""
    none, nta, t1 = LoadStage(), LoadStage("nta", 512), LoadStage("t1", 4096)
    seconds = {none: 1.0, nta: 1.5, t1: 1.1}    # nta loses (0.67x), t1 loses (0.91x) but is kept
    timed = []
    monkeypatch.setattr(calibration.measure, "interleaved_times", lambda runners, rounds: timed.append(list(runners))
                        or {key: [seconds.get(key, 1.0)] * 3 for key in runners})
    cases = dict(list(EVERY_WORKLOAD(1, np.random.default_rng(0)).items())[:3])
    kernels = {}
    table, agreed = calibration.racing_compare({s: (False, none, s) for s in seconds}, none, cases, 3, print,
                                               keep=(t1,), kernels=kernels)
    assert agreed and timed == [[none, nta, t1], [none, t1], [none, t1]]
    assert list(table[nta]) == list(cases)[:1] and list(table[t1]) == list(cases)
    assert table[t1][list(cases)[2]] == pytest.approx(1 / 1.1) and len(kernels) == 7
    calibration.racing_compare({"alone": (False, none, t1)}, "alone", cases, 3, print, kernels=kernels)
    assert len(kernels) == 7


def _calibrate_with_markers(monkeypatch, capsys):
    """`python -m streamjit calibrate` with each stage's measurement printing
    its name only (rows and sweeps not timed); its output lines."""
    from streamjit.__main__ import main
    from streamjit.measure import calibration_stencils

    def marked(name, result=None):
        return lambda *args, **kwargs: print(f"<{name}>") or result

    monkeypatch.setattr(calibration, "measure_load_stages", marked("load stages"))
    monkeypatch.setattr(calibration_stencils, "measure_stencil_sources", marked("stencil sources"))
    monkeypatch.setattr(calibration, "measure_page_alias", marked("page alias", (0, calibration.STRIPS[0], {}, [])))
    for row, name in (("measure_scalar_stores", "scalar stores"), ("measure_scalar_ops", "scalar ops"),
                      ("measure_wide_stencils", "wide stencils")):
        monkeypatch.setattr(calibration, row, marked(name))
    lost = [{"bytes": b << 20, "streamed": measure.Spread([0.5, 0.6]), "always streamed": measure.Spread([0.5, 0.6])}
            for b in (1, 2)]
    monkeypatch.setattr(measure, "copy_envelope", lambda *args, **kwargs: print("<copy sweep>") or lost)
    monkeypatch.setattr(measure, "stencil_envelope", lambda *args, **kwargs: print("<stencil sweep>") or lost)
    main(["calibrate", "--max-mib", "2", "--profile-mib", "1"])
    return capsys.readouterr().out.splitlines()


STAGES = ["load stages", "stencil sources", "page alias", "scalar stores", "scalar ops", "wide stencils", "copy sweep",
          "stencil sweep"]


def test_calibrate_says_how_long_it_takes_then_one_line_per_stage_without_tqdm(profile_dir, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "tqdm", None)     # import tqdm raises ImportError
    out = _calibrate_with_markers(monkeypatch, capsys)
    estimate = next(k for k, line in enumerate(out) if line.startswith("calibrate: 8 stages, about "))
    assert re.fullmatch(r"calibrate: 8 stages, about (\d+ min )?\d+ s on an idle machine .*", out[estimate])
    assert estimate < out.index("<load stages>")
    done = [line for line in out if line.startswith("[stage ")]
    assert [re.match(r"\[stage (\d)/8 done: (.*?);", line).groups() for line in done] == [
        (str(k + 1), name) for k, name in enumerate(STAGES)]
    for name, line in zip(STAGES, done):      # each line follows its stage
        assert out.index(f"<{name}>") < out.index(line)
    assert all(re.search(r"; \d+ s elapsed, about \d+ s left\]$", line) for line in done) and done[-1].endswith(
        "about 0 s left]")


def test_calibrate_advances_a_tqdm_bar_per_stage(profile_dir, monkeypatch, capsys):
    bars = []

    class Bar:
        def __init__(self, total, **kwargs):
            self.total, self.n, self.stages, self.closed = total, 0, [], False
            print("<bar>")
            bars.append(self)

        def set_postfix_str(self, name):
            self.stages.append(name)

        def update(self, n):
            self.n += n
            print(f"<bar at {self.n}>")

        def close(self):
            self.closed = True

    monkeypatch.setitem(sys.modules, "tqdm", types.SimpleNamespace(tqdm=Bar))
    out = _calibrate_with_markers(monkeypatch, capsys)
    [bar] = bars
    assert bar.stages == STAGES and bar.n == bar.total > 0 and bar.closed
    steps = [int(line[8:-1]) for line in out if line.startswith("<bar at ")]
    assert steps == sorted(steps) and len(steps) == len(STAGES) and steps[0] > 0
    assert [line for line in out if line.startswith(("calibrate: 8 stages", "<bar>", "<load stages>"))] == [
        next(line for line in out if line.startswith("calibrate: 8 stages")), "<bar>", "<load stages>"]


def test_a_sweep_stops_once_a_larger_size_cannot_move_its_band():
    def rows(*ratios):
        return [{"bytes": (k + 1) << 20, "s": measure.Spread(r)} for k, r in enumerate(ratios)]

    copy, stencil = measure.band_settled("s"), measure.band_settled("s", past_bytes=3 << 20)
    lose, win = (0.5, 0.6), (1.2, 1.3)
    assert not copy(rows(lose, win)) and not copy(rows(lose, win, win))         # the band may go on
    assert not copy(rows(lose, win, win, lose)) and copy(rows(lose, win, win, lose, lose))   # ended: two lost
    assert not stencil(rows(lose, win)) and stencil(rows(lose, win, win))        # won at 3 MiB, past the cache
    assert not stencil(rows(lose, lose, win, win)[:3]) and not stencil(rows(win, lose, lose))
    # the envelope stops there: no larger size is set up
    set_up = []
    measure.tables._envelope([1 << 20, 2 << 20, 3 << 20, 4 << 20],
                             lambda n: set_up.append(n) or {"a": (lambda x, y: None, (1, 2))}, "a", lambda n: n, 2,
                             None, lambda found: len(found) == 2)
    assert set_up == [1 << 20, 2 << 20]


def test_the_profile_reads_at_its_path_from_before_the_folder():
    """``from streamjit.machine import machine_profile``, as the guide once showed, still works."""
    from streamjit.machine import LoadStage as OldStage, machine_profile as old_profile

    assert old_profile is machine.machine_profile and OldStage is LoadStage


# Run on a copy of the package with one more row, `demo_bytes`, declared in
# two files only: what reads the rows must take it in by iterating them.
NEW_ROW_CHECKS = """
import dataclasses, json, os, warnings
import numpy as np
from streamjit.machine.profile import ROWS, machine_profile, profile_file
from streamjit.measure import calibration, info
from streamjit.options import validate_options

def copy(dst, src):
    for i in range(src.shape[0]):
        dst[i] = src[i]

assert ROWS[-1] == "demo_bytes"
assert machine_profile().demo_bytes == 64 and machine_profile().reasons["demo_bytes"] == "unmeasured demo"
os.makedirs(os.path.dirname(profile_file()), exist_ok=True)
with open(profile_file(), "w") as f:
    json.dump({"profile": {"demo_bytes": 128}}, f)
assert machine_profile().demo_bytes == 128                        # read back from the profile file
assert info.machine_info(why=True)["demo_bytes"] == "128 (calibrated)"
options, _ = validate_options(copy, ["dst"], False, None, None, None, {})
assert options.machine.demo_bytes == 128                         # every kernel's options carry the row
other = dataclasses.replace(options, machine=dataclasses.replace(options.machine, demo_bytes=256))
assert other.cache_key() != options.cache_key()                  # and their cache key
kernel = calibration.kernel_with_stages(copy, "dst", False, options.loads, demo_bytes=512)
a = np.arange(1000.0); b = np.empty_like(a); kernel(b, a)
assert (b == a).all() and kernel.stream_options.machine.demo_bytes == 512
with open(profile_file(), "w") as f:
    json.dump({"profile": {"demo_bytes": -1}}, f)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    assert machine_profile().demo_bytes == 64                    # a damaged value is dropped, with a warning
assert any("profile.demo_bytes is -1, not a multiple of 64" in str(w.message) for w in caught)
print("ok")
"""


def test_a_new_row_declared_in_two_files_reaches_options_cache_key_info_and_calibration(tmp_path):
    package = tmp_path / "streamjit"
    shutil.copytree(Path(machine.__file__).parents[1], package, ignore=shutil.ignore_patterns("__pycache__"))
    edits = {"machine/profile.py": ("    origin: str = field(", "    demo_bytes: int = _row_field(lambda v: "
                                    "isinstance(v, int) and v > 0 and v % 64 == 0, 'a multiple of 64')\n"),
             "machine/cpu_defaults.py": ("UNMEASURED = {\n", '    "demo_bytes": (64, "unmeasured demo"),\n')}
    for name, (before, added) in edits.items():
        path = package / name
        text = path.read_text()
        at = text.index(before) + (len(before) if before.endswith("\n") else 0)
        path.write_text(text[:at] + added + text[at:])
    env = dict(os.environ, PYTHONPATH=str(tmp_path), XDG_CACHE_HOME=str(tmp_path / "cache"))
    done = subprocess.run([sys.executable, "-c", NEW_ROW_CHECKS], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]
