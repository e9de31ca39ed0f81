"""Size-aware streaming: the threshold's sources (environment, calibration,
cache size) and the size test compiled into the kernel."""

import json
import os
import re

import numpy as np
import pytest

import streamjit as sj
from streamjit import threshold as th
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


@pytest.mark.parametrize("n", [0, 1, 511, 512, 513, 100_003])   # 512 float64 = 4096 bytes
def test_both_sides_of_the_threshold_are_correct(n):
    src = np.random.default_rng(n).standard_normal(n)
    dst = np.zeros(n + 1)[1:]
    SMALL(dst, src)
    np.testing.assert_array_equal(dst, src)
    assert SMALL.above_threshold(dst, src) == (n * 8 > 4096)
    assert SMALL.above_threshold(src=src, dst=dst) == (n * 8 > 4096)


def test_size_test_is_compiled_in_and_gates_the_aligned_loop():
    a = np.zeros(10)
    SMALL(a, a.copy())
    llvm_ir = SMALL.inspect_llvm(SMALL.signatures[0])
    # the streamed arrays' bytes compared with the threshold, once, at entry
    assert len(re.findall(r"icmp sgt i64 %[\w.]+, 4096\b", llvm_ir)) == 1
    assert SMALL.stream_report(SMALL.signatures[0]).peeled_loops == 1


def test_threshold_in_the_cache_key():
    other = sj.stream_kernel(stream_stores=["dst"], threshold=8192)(copy_source)
    assert SMALL.stream_plan.cache_key() != other.stream_plan.cache_key()


def test_environment_overrides(clean_env, monkeypatch):
    monkeypatch.setenv(th.ENV_VAR, "12345")
    assert th.default_threshold() == (12345, f"environment variable {th.ENV_VAR}")
    assert sj.stream_kernel(stream_stores=["dst"], threshold="auto")(copy_source).stream_plan.threshold == 12345
    monkeypatch.setenv(th.ENV_VAR, "lots")
    with pytest.raises(sj.StreamConfigError, match=th.ENV_VAR):
        sj.stream_kernel(stream_stores=["dst"], threshold="auto")(copy_source)


def test_calibration_file_is_used(clean_env):
    path = th.save_calibration(777, [{"MiB/array": 1, "streamed/plain": 1.2}])
    assert path.startswith(str(clean_env))
    assert th.default_threshold() == (777, f"calibration in {path}")
    with open(path, "w") as f:
        f.write("{not json")
    assert th.default_threshold()[1] != f"calibration in {path}"      # a broken file is skipped


def test_cache_size_default(clean_env):
    llc = th.last_level_cache_bytes()
    if llc is None:
        assert th.default_threshold() == (8 << 20, "fallback (cache size unknown)")
    else:
        assert llc >= 64 * 1024
        assert th.default_threshold()[0] == llc // 3


def test_calibrate_command(clean_env, capsys):
    status = main(["calibrate", "--max-mib", "2", "--rounds", "1"])
    out = capsys.readouterr().out
    assert len(re.findall(r"streamed/plain=", out)) == 4           # 0.25, 0.5, 1, 2 MiB
    saved = os.path.exists(th.calibration_file())
    assert (status == 0) == saved
    if saved:
        with open(th.calibration_file()) as f:
            assert json.load(f)["threshold_bytes"] == th.default_threshold()[0]
