"""Differential test: kernels generated from a grammar (tests/kernel_grammar.py:
early exits, raises, Numba-raised exceptions, if/else stores, 2-D nests, slice
expressions, temporaries through shifted views, np.where, reductions, every
dtype mixed, views, page offsets that run the staged path) compiled with
``numba.njit`` and with ``streamjit.stream_kernel`` under the same Numba
options, run on the same inputs (twice, on the same arrays), compared bit for
bit: arrays (the whole buffers behind views), returned values and the class of
the exception raised (ulp-bounded under fastmath).

A fixed budget of seeds (about a minute here: compiling dominates); the long
mode is ``python bench/fuzz.py --minutes N``. A failing case prints its
kernel's source and what differed.
"""

import warnings

import numpy as np
import pytest

import kernel_grammar as G
import streamjit as sj
from helpers import staged_profile

SEEDS = [*range(20), 215]  # (215: a bool output of bool operands' comparisons, in a loop)

# Cases that fail today, each with the defect it shows (the fuzzer's report:
# bench/README.md, "Differential fuzzer"). Not strict: a fix turns them into XPASS.
KNOWN = {}


def candidate(func, case):
    # (every case runs a placement in a page, whose calls the 4K-aliasing check stages)
    with staged_profile():
        return sj.stream_kernel(**case.stream_options, **case.numba_options)(func)


@pytest.mark.parametrize("seed", [pytest.param(s, marks=pytest.mark.xfail(reason=KNOWN[s], strict=False))
                                  if s in KNOWN else s for s in SEEDS])
def test_generated_kernel_matches_njit(seed):
    case = G.generate(seed, quick=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = G.run_case(case, candidate)
    assert not result.njit_rejected, f"the grammar made a kernel numba.njit rejects: {result.njit_rejected}\n{case.source}"
    assert not result.differences, G.describe(result)


def test_grammar_is_deterministic_and_covers_its_features():
    # (no compiling) the same seed gives the same source and inputs; the budget draws every shape
    assert G.generate(7).source == G.generate(7).source
    a, _, _ = G.generate(7).inputs("page", 3)
    b, _, _ = G.generate(7).inputs("page", 3)
    assert all((x == y).all() for x, y in zip(a[:3], b[:3]))
    shapes = {G.generate(s, quick=True).shape for s in SEEDS}
    assert shapes == set(G.SHAPES), shapes
    for s in range(200):
        case = G.generate(s)
        for p in case.placements:
            args, _, info = case.inputs(p, s)
            for x in args[:3]:
                if x.size and x.dtype.kind != "b":
                    assert (x != 0).sum() >= x.size - (1 if case.zero_at is not None else 0)
            if p == "page" and args[0].size:
                dist = (args[0].ctypes.data - args[1].ctypes.data) % 4096
                assert dist == info["d_bytes"] + 0 and dist <= 192


def test_no_drawn_expression_overflows_a_signed_integer():
    # (no compiling) Numba's signed arithmetic is `nsw`: an overflow is undefined, and
    # LLVM folded `b[i + 1] > a[i] * a[i]` (int64 `a`, uint8 `b`) unlike njit's loop
    # under parallel=True (fuzzer seed 20506). Every integer input of a kernel with a
    # signed operand is small enough that four leaves and a constant 7 stay in range.
    case = G.generate(20506)
    args, _, _ = case.inputs("page", 20506061518)
    assert max(abs(int(x)) for x in args[1]) ** 2 < 2 ** 63
    for s in range(300):
        case = G.generate(s)
        bound = G.no_overflow_bound(case.dtypes)
        if bound is None:
            continue
        narrowest = min(np.iinfo(case.dtypes[n]).max for n in ("a", "b", "s") if case.dtypes[n].kind == "i")
        assert 7 * bound ** 4 <= narrowest
        args, _, _ = case.inputs(case.placements[0], s)
        for x in (*args[:3], args[3]):
            values = np.asarray(x)
            if values.dtype.kind in "iu" and values.size:
                assert max(abs(int(v)) for v in values.ravel()) <= bound, (s, values.dtype)


def test_no_division_by_zero_is_drawn_under_fastmaths_no_inf_no_nan():
    # (no compiling) under error_model="numpy" the planted zero divisor gives inf or nan, which
    # fastmath=True declares impossible (poison): fuzzer seed 30265 stored inf where njit stored nan
    assert G.generate(30265).numba_options["fastmath"] == {"nsz", "arcp"}
    for s in range(2000):
        case = G.generate(s)
        if case.shape == "zerodiv" and case.numba_options.get("error_model") == "numpy":
            assert case.numba_options.get("fastmath") is not True, s
