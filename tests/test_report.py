"""How a `StreamReport` shows itself: what was done and what the calls
did first, the table with its legend under ``verbose`` (in a REPL,
``repr``, and as HTML in Jupyter), and counts that agree with the summary
line or say why they differ."""

import dataclasses
import warnings

import numpy as np
import pytest

import streamjit as sj
from streamjit.codegen import CALL_PATHS
from streamjit.inspection.report import COLUMN_HEADS, LEGEND, ArrayReport, StreamReport
import kernels as K
from helpers import compiled


def test_the_first_lines_say_what_was_done_and_what_the_calls_did():
    kernel = sj.stream_kernel(stream_stores=["dst"])(K.copy_source)   # (K.copy's calls are other tests' too)
    kernel(np.zeros(1001, np.float32), np.ones(1001, np.float32))
    report = kernel.stream_report()
    assert repr(report) == str(report)                           # not the raw dataclass
    lines = str(report).splitlines()
    assert lines[:3] == ["copy_source: no slice or array expression fused; streamed stores to dst",
                         "calls: 1 streamed, 0 plain below the threshold, 0 plain after a run-time check, 0 plain "
                         "without reaching an aligned loop",
                         "speed from: streamed stores to dst"]
    assert lines[-1] == "(stream_report(verbose=True) adds the instructions per array in the compiled code)"
    assert LEGEND not in lines and not any(line.startswith("fences: ") for line in lines)
    assert "<p>copy_source: no slice or array expression fused" in report._repr_html_()


def test_verbose_adds_the_table_with_its_legend_last_in_the_repl_and_jupyter():
    # (this signature's: the kernel is shared, and the latest compiled may be another test's, whose
    # machine code can hold more vector NT stores than its LLVM IR, adding a note after the last line)
    sig = compiled(K.copy, np.zeros(1001, np.float32), np.ones(1001, np.float32))
    short, report = K.copy.stream_report(sig), K.copy.stream_report(sig, verbose=True)
    lines = str(report).splitlines()
    assert lines[:len(str(short).splitlines()) - 1] == str(short).splitlines()[:-1]
    title = lines.index(next(line for line in lines if line.startswith("stream report for (")))
    assert lines[title + 1].split() == ["array", "NT", "vec", "st", "NT", "scal", "st", "plain", "st", "NT", "ld",
                                        "plain", "ld", "prefetch"]
    assert LEGEND in lines[title:] and "NT: non-temporal" in LEGEND and "not executions" in LEGEND
    assert lines[-1].startswith("fences: 1   peeled loops: 1   machine NT stores: ")
    page = report._repr_html_()
    assert page.count("<tr>") == 1 + len(report.arrays) and all(head in page for head in COLUMN_HEADS)
    assert 'title="non-temporal (streamed) vector stores"' in page and "fences: 1" in page


def test_the_speed_line_names_the_pool_libmvec_and_fusion_where_they_ran():
    @sj.stream_kernel(stream_stores=["return"], threshold=None, fastmath=True)
    def waves(x):
        return np.sin(x) * 2.0

    waves(np.ones(1 << 20))
    speed = next(line for line in str(waves.stream_report()).splitlines() if line.startswith("speed from: "))
    assert speed.startswith("speed from: fusion (1 expression computed in loops, no temporary arrays); the array pool "
                            "(results of 4 MiB and more reuse freed blocks); ")
    # (libmvec where glibc has it: x86-64 Linux)
    assert speed.endswith("streamed stores to return") and ("libmvec's vector sin; " in speed) == (
        "_ZGV" in waves.inspect_llvm(waves.signatures[0]))


def test_the_first_line_names_fusion_and_streaming_separately():
    @sj.stream_kernel(stream_stores=True, threshold=None)
    def update(out, a, b, u):
        out[:] = np.sqrt(a * a + b * b)
        u += a

    n = 1000
    update(np.empty(n), np.ones(n), np.ones(n), np.ones(n))
    first = str(update.stream_report()).splitlines()[0]
    # (u's update is fused too: one loop, no temporary, with plain stores)
    assert first == ("update: fused 2 slice/array expressions into loops (no temporaries); streamed stores to out; "
                     "left u plain (only updated in place)")
    calls = update.stream_calls()
    assert calls["streamed"] + calls["after_check"] == 1


def test_a_kernel_naming_nothing_says_so_and_what_stream_stores_true_would_do():
    @sj.stream_kernel
    def scale(out, a):
        out[:] = 2.0 * a

    scale(np.empty(100), np.ones(100))
    text = str(scale.stream_report())
    assert text.splitlines()[0] == (
        "scale: nothing is named in stream_stores or stream_loads, so nothing is fused or streamed (numba.njit's "
        "code); with stream_stores=True: fused 1 slice/array expression into a loop (no temporary); streamed stores "
        "to out")
    assert "calls: not counted (no store streams: every call runs the plain loops)" in text.splitlines()
    assert scale.stream_calls() == dict.fromkeys(CALL_PATHS, 0)
    assert set(scale.stream_fallbacks().values()) == {0}


def test_calls_are_summed_over_signatures_unless_one_is_given():
    @sj.stream_kernel(stream_stores=["out"], threshold=None)
    def double(out, a):
        for i in range(a.shape[0]):
            out[i] = 2 * a[i]

    assert double.stream_calls()["streamed"] == 0  # (nothing compiled yet: zeros)
    for dtype in (np.float32, np.float64, np.float64):
        double(np.empty(100, dtype), np.ones(100, dtype))
    assert double.stream_calls()["streamed"] == 3
    assert [double.stream_calls(sig)["streamed"] for sig in double.signatures] == [1, 2]


def test_fused_loops_that_stream_nothing_count_their_fallbacks_in_the_report():
    @sj.stream_kernel(stream_stores=True, threshold=None)
    def bump(u, a):
        u += 2.0 * a                      # only updated in place: fused, plain stores

    rng = np.random.default_rng(3)
    u, a = rng.standard_normal(1001), rng.standard_normal(1001)
    expected = u + 2.0 * a[::-1]
    bump(u, a[::-1])                      # (a view, as below: one signature)
    np.testing.assert_array_equal(u, expected)
    assert bump.stream_result().streamed_stores == frozenset()
    assert bump.stream_calls() == dict.fromkeys(CALL_PATHS, 0) | {"plain": 1}
    expected = u + 2.0 * u[::-1]
    with warnings.catch_warnings():
        warnings.simplefilter("error")    # (stream_stores=True names no array: the report says it, no warning)
        bump(u, u[::-1])                  # overlaps its destination: Numba's code, with its temporary
    np.testing.assert_array_equal(u, expected)
    assert bump.stream_calls() == dict.fromkeys(CALL_PATHS, 0) | {"after_check": 1, "plain": 1}
    assert bump.stream_fallbacks()["operands"] == 1
    assert ("calls: 1 ran the fused loops (no store streams), 1 Numba's code after a run-time check (1: an operand "
            "overlapping its destination, or of another shape)") in str(bump.stream_report()).splitlines()


def test_counts_that_differ_say_why():
    report = StreamReport(("array(float64, 1d, C)",), {"out": ArrayReport(nt_vector_stores=10)}, fences=1,
                          peeled_loops=1, machine_nt_vector_stores=15, machine_nt_scalar_stores=0)
    assert ("machine code: 15 vector NT store instructions for the table's 10 LLVM IR stores: the backend can split "
            "an LLVM vector store wider than a register into several") in str(dataclasses.replace(report, verbose=True))
    assert "the backend can merge or drop" in str(dataclasses.replace(report, machine_nt_vector_stores=5, verbose=True))
    agreeing = dataclasses.replace(report, machine_nt_vector_stores=10, verbose=True)
    assert "machine code:" not in str(agreeing)


def test_the_tour_kernels_counts_agree():
    @sj.stream_kernel(stream_stores=["dst"], threshold=None)
    def copy(dst, src):
        for i in range(src.shape[0]):
            dst[i] = src[i]

    report = copy.stream_report("void(float32[::1], float32[::1])", verbose=True)
    table = sum(a.nt_vector_stores for a in report.arrays.values())
    assert table > 0 and ("machine code:" in str(report)) == (report.machine_nt_vector_stores != table)


def test_inspect_types_shows_the_users_code_without_the_inserted_statements(capsys):
    K.copy(np.zeros(101, np.float32), np.ones(101, np.float32))
    K.copy.inspect_types()
    printed = capsys.readouterr().out
    assert "dst[i] = src[i]" in printed and "$streamjit_" not in printed


def test_a_stencils_report_takes_verbose_too():
    @sj.stencil
    def average(a):
        return 0.5 * (a[-1] + a[1])

    average(np.ones(1000))
    assert "NT vec st" not in str(average.stream_report())
    assert "NT vec st" in str(average.stream_report(verbose=True))
