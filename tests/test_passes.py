"""Each stream pass on a small kernel, checked right after it runs (the IR
it leaves, or what it records on the compiler state), not only through the
compiled result."""

import numba
import numpy as np
import pytest
from numba.core import ir

import streamjit as sj
from streamjit.passes import (accesses, align_peel, array_stores, canonical_loops, fence_placement, legality,
                              parallel_blocks, retype, size_check, stream_loads)
from streamjit.passes.align_peel import SIZE_GATE
from helpers import after


def enumerate_kernel(out, a):
    for i, x in enumerate(a):
        out[i] = 2.0 * x


def ndindex_kernel(out, a):
    for idx in np.ndindex(a.shape):
        out[idx] = a[idx] + 1.0


def hidden_stores(out, grid, a):
    o = out
    for i in range(a.shape[0]):
        o[i] = a[i]
        grid[i][0] = a[i]


def time_loop(out, a, steps):
    for _ in range(steps):
        for i in range(a.shape[0]):
            out[i] = a[i] + 1.0


def repeated(out, a):
    for i in range(a.shape[0]):
        for t in range(3):
            out[i] = a[i] * t


def copy(dst, src):
    for i in range(src.shape[0]):
        dst[i] = src[i]


def axpy(out, a, x, y):
    out[:] = a * x + y


def parallel_copy(dst, src):
    for i in numba.prange(src.shape[0]):
        dst[i] = src[i]


V = np.arange(64.0)
G = np.zeros((64, 3))


def test_canonical_loops_turns_enumerate_and_ndindex_into_range_loops(monkeypatch):
    seen = after(monkeypatch, canonical_loops, enumerate_kernel, (V.copy(), V), stream_stores=True)
    assert range in seen.called and enumerate not in seen.called
    seen = after(monkeypatch, canonical_loops, ndindex_kernel, (G.copy(), G), stream_stores=True)
    assert seen.loops == 2 and seen.called.count(range) == 2 and np.ndindex not in seen.called


def test_accesses_finds_stores_through_aliases_and_chained_subscripts(monkeypatch):
    seen = after(monkeypatch, accesses, hidden_stores, (V.copy(), G.copy(), V), stream_stores=True)
    scan = seen.state.stream_facts.scan
    stores = {(a.array, a.kind, a.chained) for a in scan.stores()}
    assert stores == {("out", "element", False), ("grid", "element", True)}
    assert all(len(a.loops) == 1 and a.loops[0].is_range for a in scan.stores())
    assert seen.state.metadata["streamjit"].streamed_stores == {"out", "grid"}


def test_legality_roots_a_nest_inside_its_time_loop(monkeypatch):
    seen = after(monkeypatch, legality, time_loop, (V.copy(), V, 2), stream_stores=True)
    (root, dims), = seen.state.stream_facts.legal.values()
    assert root.var == "i" and root.parent is not None and dims[0].coeffs == {root: 1}


def test_legality_rejects_an_inner_loop_that_does_not_select_the_element():
    with pytest.raises(sj.StreamLegalityError, match="does not depend on the loop variable 't'"):
        sj.stream_kernel(stream_stores=["out"])(repeated)(V.copy(), V)


def test_array_stores_makes_a_fused_loop_over_a_registered_view(monkeypatch):
    seen = after(monkeypatch, array_stores, axpy, (V.copy(), 2.0, V, V), stream_stores=True)
    assert seen.loops == 1 and list(seen.state.stream_facts.views.values()) == ["out"]   # the view out[:]
    assert "copies_elementwise" in seen.text


def test_parallel_blocks_splits_a_streamed_prange_loop(monkeypatch):
    seen = after(monkeypatch, parallel_blocks, parallel_copy, (V.copy(), V), stream_stores=True, parallel=True)
    assert seen.loops == 2 and numba.prange in seen.called


def test_align_peel_versions_the_loop(monkeypatch):
    seen = after(monkeypatch, align_peel, copy, (V.copy(), V), stream_stores=True)
    assert seen.loops == 2 and seen.state.metadata["streamjit"].peeled_loops == 1  # head and aligned loop
    assert all(f"global({name}:" in seen.text
               for name in ("aligned_start", "aligned_pointer", "stream_store", "in_bounds", "keep_scalar"))


def rows(out, g):
    for r in range(g.shape[0]):
        for c in range(g.shape[1]):
            out[r, c] = g[r, c] + 1


def test_align_peel_gives_a_row_loop_a_tail(monkeypatch):
    # the outer loop, the head, the aligned loop up to the row's last line boundary, the tail after it
    g = np.random.default_rng(0).random((5, 37))
    seen = after(monkeypatch, align_peel, rows, (g.copy(), g), stream_stores=True)
    assert seen.loops == 4 and seen.state.metadata["streamjit"].peeled_loops == 1
    assert seen.text.count("global(keep_scalar") == 2  # (the head and the tail)


def test_fence_placement_fences_each_exit_of_the_nest(monkeypatch):
    seen = after(monkeypatch, fence_placement, time_loop, (V.copy(), V, 2), stream_stores=True)
    assert seen.text.count("global(store_fence") == 1


def test_size_check_tests_the_size_once_at_entry(monkeypatch):
    seen = after(monkeypatch, size_check, copy, (V.copy(), V), stream_stores=True, threshold=4096)
    entry = seen.state.func_ir.blocks[min(seen.state.func_ir.blocks)]
    assert sum(isinstance(s, ir.Assign) and s.target.name == SIZE_GATE for s in entry.body) == 1


def test_stream_loads_tags_the_loads_left_in_the_head_loop(monkeypatch):
    seen = after(monkeypatch, stream_loads, copy, (V.copy(), V), stream_loads=["src"], stream_stores=True)
    assert "global(stream_load" in seen.text and "global(direct_stream_load" in seen.text


def test_retype_types_every_inserted_variable(monkeypatch):
    seen = after(monkeypatch, retype, copy, (V.copy(), V), stream_stores=True)
    names = {v.name for b in seen.state.func_ir.blocks.values() for s in b.body for v in s.list_vars()}
    assert names <= set(seen.state.typemap)


def test_dump_after_prints_the_ir_after_the_named_pass(monkeypatch, capsys):
    monkeypatch.setenv("STREAMJIT_DUMP_AFTER", "align_peel")
    sj.stream_kernel(stream_stores=True)(copy)(V.copy(), V)
    out = capsys.readouterr().out
    assert "IR of copy after align_peel" in out and "global(stream_store:" in out
    assert "after fence_placement" not in out


def test_a_for_loop_entered_through_a_jump_block_is_still_a_range_loop():
    # found by the kernel generator: Python 3.11 bytecode can give the outer
    # loop's CFG header an empty block that only jumps to the iternext block
    source = ("def kernel(out, out2, a, b, big, s, T):\n"
              "    for j in range(1, a.shape[0]):\n"
              "        for y in range(2, a.shape[1] - 2):\n"
              "            for t in range(T):\n"
              "                for i in range(2, a.shape[2] - 1):\n"
              "                    out[out.shape[0] - 1 - j + 1, out.shape[1] - 1 - i + 2] = min(("
              "out[out.shape[0] - 1 - j + 1, out.shape[1] - 1 - i + 2] - a[j - 2, y - 3, i - 3]), "
              "(b[j - 1, y, i + 1] + out[out.shape[0] - 1 - j + 1, out.shape[1] - 1 - i + 2]))\n"
              "                    out2[i - 1] = b[j - 1, y - 1, i]\n")
    namespace = {}
    exec(compile(source, "<generated kernel>", "exec"), namespace)
    kernel = sj.stream_kernel(stream_stores=["out", "out2"])(namespace["kernel"])
    a = np.ones((1, 6, 3))
    with pytest.raises(sj.StreamLegalityError, match=r"<generated kernel>:6: .*loop variable 'y' \(line 3\)"):
        kernel(np.zeros((3, 5)), np.zeros(5), a, a, a, 1.0, 3)
