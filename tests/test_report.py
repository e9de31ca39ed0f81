"""How a `StreamReport` shows itself (issue 21): a table with a legend in a
REPL (``repr``), as HTML in Jupyter, and counts that agree with the summary
line or say why they differ."""

import dataclasses

import numpy as np

import streamjit as sj
from streamjit.report import COLUMN_HEADS, LEGEND, ArrayReport, StreamReport
import kernels as K


def test_repl_and_jupyter_show_the_table_with_its_legend():
    K.copy(np.zeros(1001, np.float32), np.ones(1001, np.float32))
    report = K.copy.stream_report()
    assert repr(report) == str(report)                           # not the raw dataclass
    lines = str(report).splitlines()
    assert lines[1].split() == ["array", "NT", "vec", "st", "NT", "scal", "st", "plain", "st", "NT", "ld", "plain",
                                "ld", "prefetch"]
    assert LEGEND in lines and "NT: non-temporal" in LEGEND and "not executions" in LEGEND
    page = report._repr_html_()
    assert page.count("<tr>") == 1 + len(report.arrays) and all(head in page for head in COLUMN_HEADS)
    assert 'title="non-temporal (streamed) vector stores"' in page and "fences: 1" in page


def test_counts_that_differ_say_why():
    report = StreamReport(("array(float64, 1d, C)",), {"out": ArrayReport(nt_vector_stores=10)}, fences=1,
                          peeled_loops=1, machine_nt_vector_stores=15, machine_nt_scalar_stores=0)
    assert ("machine code: 15 vector NT store instructions for the table's 10 LLVM IR stores: the backend can split "
            "an LLVM vector store wider than a register into several") in str(report)
    assert "the backend can merge or drop" in str(dataclasses.replace(report, machine_nt_vector_stores=5))
    agreeing = dataclasses.replace(report, machine_nt_vector_stores=10)
    assert "machine code:" not in str(agreeing)


def test_the_tour_kernels_counts_agree():
    @sj.stream_kernel(stream_stores=["dst"], threshold=None)
    def copy(dst, src):
        for i in range(src.shape[0]):
            dst[i] = src[i]

    report = copy.stream_report("void(float32[::1], float32[::1])")
    table = sum(a.nt_vector_stores for a in report.arrays.values())
    assert table > 0 and ("machine code:" in str(report)) == (report.machine_nt_vector_stores != table)
