"""Size-aware streaming: the threshold's sources (environment, calibration,
cache size) and the size test compiled into the kernel."""

import contextlib
import json
import os
import re
import subprocess

import numba
import numpy as np
import pytest

import streamjit as sj
from streamjit import measure
from streamjit.machine import threshold as th
from streamjit.__main__ import main


def copy_source(dst, src):
    for i in range(dst.shape[0]):
        dst[i] = src[i]


SMALL = sj.stream_kernel(stream_stores=["dst"], threshold=4096)(copy_source)


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    monkeypatch.delenv(th.ENV_VAR, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    return tmp_path


def trisolv_rows(L, x, b):
    for i in range(x.shape[0]):
        dot = 0.0
        for j in range(i):
            dot += L[i, j] * x[j]
        x[i] = (b[i] - dot) / L[i, i]


def test_a_large_streamed_load_does_not_make_a_small_output_stream():
    """NPBench trisolv (0.94x with stream_loads): the threshold
    added L's bytes, so x's few KB streamed and were read back from memory
    by the next row. It counts the arrays whose stores stream; the
    streamed loads only where no store streams."""
    kernel = sj.stream_kernel(stream_stores=["x"], stream_loads=["L"], threshold=64 << 10)(trisolv_rows)
    rng = np.random.default_rng(5)
    L, b = np.tril(rng.random((300, 300))) + 300 * np.eye(300), rng.random(300)   # L: 720 KB, x: 2.4 KB
    x = np.zeros(300)
    kernel(L, x, b)
    np.testing.assert_allclose(x, np.linalg.solve(L, b))
    assert not kernel.above_threshold(L, x, b)
    assert kernel.stream_calls()["below_threshold"] == 1
    loads_only = sj.stream_kernel(stream_loads=["src"], threshold=4096)(copy_source)
    src = rng.random(1000)
    loads_only(np.empty_like(src), src)
    assert loads_only.above_threshold(np.empty_like(src), src)


@pytest.mark.parametrize("n", [0, 1, 511, 512, 513, 100_003])   # 512 float64 = 4096 bytes
def test_both_sides_of_the_threshold_are_correct(n):
    src = np.random.default_rng(n).standard_normal(n)
    dst = np.zeros(n + 1)[1:]
    SMALL(dst, src)
    np.testing.assert_array_equal(dst, src)
    assert SMALL.above_threshold(dst, src) == (n * 8 > 4096)
    assert SMALL.above_threshold(src=src, dst=dst) == (n * 8 > 4096)


def test_above_threshold_with_a_default_argument_left_out():
    """NPBench's crc16: a call that leaves out an argument with a
    default is typed as Numba types it (Omitted), not compiled again with
    too few arguments."""
    @sj.stream_kernel(stream_stores=["dst"], threshold=4096)
    def scaled(dst, src, factor=2.0):
        for i in range(dst.shape[0]):
            dst[i] = src[i] * factor

    src, dst = np.ones(1000), np.zeros(1000)
    scaled(dst, src)
    assert scaled.above_threshold(dst, src) and not scaled.above_threshold(dst[:10], src[:10])
    assert len(scaled.signatures) == 1


def test_size_test_is_compiled_in_and_gates_the_aligned_loop():
    a = np.zeros(10)
    SMALL(a, a.copy())
    llvm_ir = SMALL.inspect_llvm(SMALL.signatures[0])
    # the streamed arrays' bytes compared with the threshold, once, at entry
    assert len(re.findall(r"icmp sgt i64 %[\w.]+, 4096\b", llvm_ir)) == 1
    assert SMALL.stream_report(SMALL.signatures[0]).peeled_loops == 1


def test_threshold_in_the_cache_key():
    other = sj.stream_kernel(stream_stores=["dst"], threshold=8192)(copy_source)
    assert SMALL.stream_options.cache_key() != other.stream_options.cache_key()


@pytest.mark.parametrize("kind", ["kernel", "copy"])
def test_environment_overrides(clean_env, monkeypatch, kind):
    env_var = th.KINDS[kind][0]
    monkeypatch.setenv(env_var, "12345")
    assert th.threshold_for(kind) == (12345, f"environment variable {env_var}")
    monkeypatch.setenv(env_var, "lots")
    with pytest.raises(ValueError, match=env_var):
        th.threshold_for(kind)


def test_auto_kernels_take_the_kernel_threshold_at_the_first_call(clean_env, monkeypatch):
    """STREAMJIT_THRESHOLD was read at decoration; a notebook user
    sets it after defining the kernel. It is read when the kernel first
    compiles (its first call), as copyto reads its variables."""
    kernel = sj.stream_kernel(stream_stores=["dst"], threshold="auto")(copy_source)
    stencil = sj.stencil(_halves)
    monkeypatch.setenv(th.ENV_VAR, "12345")  # after decoration
    monkeypatch.setenv("STREAMJIT_COPY_THRESHOLD", "999")
    src = np.arange(1000.0)
    assert not kernel.above_threshold(np.empty_like(src), src)      # 8000 bytes, below 12345
    assert kernel.stream_options.threshold == 12345
    big = np.ones((40, 40))
    stencil(big)
    assert stencil._pipeline.stream_options.threshold == 12345
    monkeypatch.setenv(th.ENV_VAR, "lots")
    bad = sj.stream_kernel(stream_stores=["dst"], threshold="auto")(copy_source)  # decorating reads nothing
    with pytest.raises(sj.StreamConfigError, match=th.ENV_VAR):
        bad(np.empty_like(src), src)


def test_calibration_file_is_used(clean_env, monkeypatch):
    monkeypatch.setattr(th, "last_level_cache_bytes", lambda: None)
    path = th.save_calibration({"kernel": 777}, {"kernel": [{"bytes": 1, "always streamed": 1.2}]})
    assert path.startswith(str(clean_env))
    assert th.default_threshold() == (777, f"calibration in {path}")
    assert th.copy_threshold()[1].startswith("fallback")              # not calibrated: the next source
    th.save_calibration({"kernel": 777, "copy": 888}, {})
    assert th.copy_threshold() == (888, f"calibration in {path}")
    with open(path, "w") as f:
        f.write("{not json")
    with pytest.warns(sj.StreamWarning, match=f"machine profile {path}: not JSON"):
        assert th.default_threshold()[1] != f"calibration in {path}"      # a broken file is skipped


@pytest.mark.parametrize("llc, cpus, plausible", [
    (32 << 20, 2, True), (480 << 20, 2, False), (1 << 30, 128, True), (None, 4, False), (8 << 20, None, True)])
def test_plausible_cache(llc, cpus, plausible):
    assert th.plausible_cache_bytes(llc, cpus) == (llc if plausible else None)


def test_cache_size_defaults(clean_env, monkeypatch):
    monkeypatch.setattr(th.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(th, "last_level_cache_bytes", lambda: 32 << 20)
    assert th.default_threshold()[0] == (32 << 20) // 3
    assert th.copy_threshold() == (16 << 20, "0.5 of the 32 MiB last-level cache")
    monkeypatch.setattr(th, "last_level_cache_bytes", lambda: 480 << 20)     # a VM reporting its host's L3
    threshold, source = th.default_threshold()
    assert threshold == th.KINDS["kernel"][3] and "implausible (480 MiB for 2 CPUs)" in source
    monkeypatch.setattr(th, "last_level_cache_bytes", lambda: None)
    assert th.copy_threshold()[0] == th.KINDS["copy"][3]
    assert "unknown" in th.copy_threshold()[1]


def _sweep(*ratios_per_size):
    """Envelope rows at sizes 1, 2, 4, ... whose column ``s`` holds the given per-round ratios."""
    return [{"bytes": 1 << k, "s": measure.Spread(r)} for k, r in enumerate(ratios_per_size)]


def test_winning_band():
    rows = _sweep((0.5, 0.6), (1.1, 1.2), (0.9, 0.8), (1.0, 1.1), (1.4, 1.3), (1.2, 1.1), (0.9, 0.9))
    assert measure.winning_band(rows, "s")[0] == (4, 32)          # stream above 4 up to 32: the longest run
    assert measure.winning_band(rows[:6], "s")[0] == (4, None)    # ... up to the largest size
    assert measure.winning_band(rows[1:3] + rows[3:4], "s")[0] is None   # two sizes apart: not a band
    assert measure.winning_band(_sweep((1.1, 1.2), (1.3, 1.2)), "s")[0] == (0, None)  # wins from the first size on
    band, why = measure.winning_band(rows[:1], "s")
    assert band is None and why == "streaming never won up to the largest size"


def test_winning_band_only_from_agreeing_rounds():
    """With one round, a single 1.10 at 3 MiB next to
    0.55 at 4 MiB set the band. Sizes won in only some rounds are no band,
    one round decides nothing, and the answer says so."""
    noisy = _sweep((0.5, 0.6, 0.5), (1.1, 0.7, 0.8), (1.2, 0.9, 1.0), (0.55, 0.6, 0.5))
    band, why = measure.winning_band(noisy, "s")
    assert band is None and why.startswith("could not decide") and "2 B, 4 B" in why
    one_round = _sweep((0.5,), (1.1,), (1.2,), (1.3,))
    band, why = measure.winning_band(one_round, "s")
    assert band is None and "one round" in why
    agreeing = _sweep((0.5, 0.6, 0.5), (1.1, 0.7, 0.8), (1.2, 1.1, 1.0), (1.3, 1.2, 1.1))
    assert measure.winning_band(agreeing, "s")[0] == (2, None)     # above the size some rounds lost
    # one round dipping at the largest size does not end the band there (its median wins); a loss does
    dipped = _sweep((0.5, 0.6, 0.5), (1.2, 1.1, 1.3), (1.3, 1.2, 1.4), (1.7, 0.88, 1.9))
    assert measure.winning_band(dipped, "s")[0] == (1, None)
    lost = _sweep((0.5, 0.6, 0.5), (1.2, 1.1, 1.3), (1.3, 1.2, 1.4), (0.9, 0.88, 1.1), (1.5, 1.4, 1.6))
    assert measure.winning_band(lost, "s")[0] == (1, 4)


def test_calibrate_that_decides_nothing_keeps_the_stored_values(clean_env, monkeypatch, capsys,
                                                               profile_rows_measured_apart):
    """A sweep that printed "streaming never won; not
    saved" erased the value stored before."""
    from streamjit.measure import calibration

    th.save_calibration({"copy": 12345, "kernel": 23456}, {}, copy_limit=34567)
    monkeypatch.setattr(calibration, "measure_load_stages", lambda **kwargs: ())
    monkeypatch.setattr(calibration, "save_load_stages", lambda *stages: "profile")
    never = [{"bytes": row["bytes"], "streamed": row["s"], "always streamed": row["s"]}
             for row in _sweep((0.5, 0.6), (0.7, 0.8), (0.9, 0.8))]
    monkeypatch.setattr(measure, "copy_envelope", lambda sizes, rounds, stop: never)
    monkeypatch.setattr(measure, "stencil_envelope", lambda sizes, rounds, stop: never)
    assert main(["calibrate", "--max-mib", "2", "--rounds", "2", "--profile-mib", "1"]) == 1
    assert "copyto: streaming never won up to the largest size; not saved" in capsys.readouterr().out
    assert th.copy_threshold() == (12345, f"calibration in {th.calibration_file()}")
    assert th.default_threshold()[0] == 23456 and th.numpy_streaming_bytes()[0] == 34567


def test_where_numpy_streams_by_itself(clean_env, monkeypatch):
    monkeypatch.setattr(th, "glibc_streaming_bytes", lambda: None)  # (a loader that does not say)
    monkeypatch.setattr(th.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(th, "last_level_cache_bytes", lambda: 480 << 20)
    assert th.numpy_streaming_bytes()[0] == 180 << 20         # glibc's rule, from the cache as reported
    monkeypatch.setattr(th, "last_level_cache_bytes", lambda: None)
    assert th.numpy_streaming_bytes()[0] is None
    path = th.save_calibration({"copy": 5}, {}, copy_limit=4321)
    assert th.numpy_streaming_bytes() == (4321, f"calibration in {path}")


LISTING = """glibc.cpu.x86_shared_cache_size: 0x10000000 (min: 0x0, max: 0xffffffffffffffff)
glibc.cpu.x86_non_temporal_threshold: 0xc000000 (min: 0x4040, max: 0xfffffffffffffff)
glibc.malloc.mxfast: 0x0 (min: 0x0, max: 0xffffffffffffffff)
"""


@pytest.mark.parametrize("listing, expected", [
    (LISTING, 192 << 20), ("", None), ("glibc.cpu.x86_non_temporal_threshold: ?", None),
], ids=["reported", "not listed", "unreadable"])
def test_where_glibc_says_it_streams(clean_env, monkeypatch, listing, expected):
    """AMD EPYC Zen 2 VM: glibc 2.36 streams from 192 MiB, where
    the 3/4-of-the-cache rule said 6 MiB; what its loader reports wins over
    the rule, and a listing without it leaves the rule."""
    th.glibc_streaming_bytes.cache_clear()
    monkeypatch.setattr(th, "_dynamic_loader", lambda: "/lib64/ld-linux-x86-64.so.2")
    monkeypatch.setattr(th.subprocess, "run", lambda *args, **kwargs: subprocess.CompletedProcess(args, 0, listing, ""))
    monkeypatch.setattr(th, "last_level_cache_bytes", lambda: 16 << 20)
    monkeypatch.setattr(th.os, "cpu_count", lambda: 2)
    try:
        assert th.glibc_streaming_bytes() == expected
        assert th.numpy_streaming_bytes()[0] == (expected or 6 << 20)
    finally:
        th.glibc_streaming_bytes.cache_clear()


def test_this_machines_glibc_threshold_is_read_where_it_is_listed(clean_env):
    loader = th._dynamic_loader()
    listed = loader and th.GLIBC_TUNABLE in subprocess.run([loader, "--list-tunables"], capture_output=True,
                                                           text=True).stdout
    assert (th.glibc_streaming_bytes() is not None) == bool(listed)
    if listed:
        assert th.numpy_streaming_bytes() == (th.glibc_streaming_bytes(),
                                              "glibc's x86_non_temporal_threshold (ld.so --list-tunables)")


def test_calibrate_command(clean_env, capsys, monkeypatch, profile_rows_measured_apart):
    status = main(["calibrate", "--max-mib", "2", "--rounds", "1", "--profile-mib", "2"])
    out = capsys.readouterr().out
    assert len(re.findall(r"^ *(1|1.5|2) MiB ", out, re.M)) == 6    # 1, 1.5, 2 MiB; copy and stencil
    # one round decides no band (rounds must agree), and says so; the profile is saved
    assert status == 1 and out.count("could not decide from one round") == 2
    with open(th.calibration_file()) as f:
        record = json.load(f)
    assert not {key for _, key, _, _ in th.KINDS.values()} & set(record)


def _fill_fresh(x):
    r = np.empty_like(x)
    for i in range(x.shape[0]):
        r[i] = x[i] * 2.0
    return r


def _scale_in_place(C, b):
    C *= b


def _return_expression(x):
    return x * 2.0


def _copy_slices(out, x):
    out[:] = x * 2.0


# (an array the kernel makes, by its name or as "return", streams when named,
# as a parameter does: the name says streaming is wanted; the threshold decides per call)
@pytest.mark.parametrize("func, name, streamed", [(_fill_fresh, "r", True), (_return_expression, "return", True),
                                                  (_scale_in_place, "C", False), (_copy_slices, "out", True)])
def test_auto_threshold_leaves_what_measured_slower_plain_even_when_named(func, name, streamed):
    kernel = sj.stream_kernel(stream_stores=[name], threshold="auto")(func)
    args = (np.arange(1001.0),) if func in (_fill_fresh, _return_expression) else (np.arange(1001.0), 2.0)
    theirs = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    with contextlib.nullcontext() if streamed else pytest.warns(sj.StreamWarning, match="'auto' leaves it plain"):
        np.testing.assert_array_equal(kernel(*args), numba.njit(func)(*theirs))
    np.testing.assert_array_equal(args[0], theirs[0])
    row = kernel.stream_report().arrays[name]
    assert (row.nt_vector_stores > 0) == streamed
    assert any("threshold='auto' leaves it plain" in n for n in row.notes) != streamed
    assert kernel.stream_calls()["streamed"] == streamed  # (the suite's threshold is 0 bytes)


def _halves(a):
    return 0.5 * (a[0, 1] + a[0, -1])


@pytest.mark.parametrize("make", ["kernel", "stencil"])
def test_thresholds_too_large_for_64_bits(clean_env, monkeypatch, make):
    """`threshold=2**64`, `STREAMJIT_THRESHOLD=
    99999999999999999999999` and 1e30 in the calibration file were
    accepted, and every call then failed with Numba's "Int value is too
    large" (with the stencils' default "auto", one bad value broke every
    stencil). Options and the environment are refused, naming the value or
    the variable; the file's value is skipped."""
    build = {"kernel": lambda **options: sj.stream_kernel(copy_source, stream_stores=["dst"], **options),
             "stencil": lambda **options: sj.stencil(_halves, **options)}[make]
    with pytest.raises(sj.StreamConfigError, match=r"2\*\*63-1, got 18446744073709551616"):
        build(threshold=2 ** 64)
    monkeypatch.setenv(th.ENV_VAR, "99999999999999999999999")
    with pytest.raises(sj.StreamConfigError, match=f"environment variable {th.ENV_VAR} must be a number of bytes"):
        call = {"kernel": lambda k: k(np.zeros(3), np.ones(3)), "stencil": lambda k: k(np.ones((3, 3)))}[make]
        call(build(threshold="auto"))  # (read at the first call)
    monkeypatch.delenv(th.ENV_VAR)
    th.save_calibration({"kernel": 0}, {})
    with open(th.calibration_file()) as f:
        record = json.load(f)
    with open(th.calibration_file(), "w") as f:
        json.dump({**record, "threshold_bytes": 1e30}, f)
    with pytest.warns(sj.StreamWarning, match="threshold_bytes is 1e[+]30, not a number of bytes; ignored"):
        assert "calibration" not in th.default_threshold()[1]          # skipped
    a = np.random.default_rng(0).random((6, 9))
    # "auto" (the stencils' default) and the largest threshold that fits both compile and run
    for kernel in (build(threshold="auto"), build(threshold=(1 << 63) - 1)):
        if make == "stencil":
            np.testing.assert_array_equal(kernel(a), numba.stencil(_halves)(a))
        else:
            dst = np.zeros_like(a[0])
            # (the largest threshold: no size reaches it, so no loop is aligned)
            with contextlib.nullcontext() if kernel.stream_options.threshold != (1 << 63) - 1 else \
                    pytest.warns(sj.StreamWarning, match="no store to it could be aligned"):
                kernel(dst, a[0])
            np.testing.assert_array_equal(dst, a[0])
