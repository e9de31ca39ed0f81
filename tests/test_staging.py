"""The staged loop (streamjit/passes/staging.py): where a loop's sources
trail its streamed stores by a few bytes modulo 4 KiB on a CPU whose
profile says that stalls (`helpers.staged_profile`: 192 bytes, as Zen 2), the
call streams through a buffer in cache instead of running the plain loop.
Checked against numba.njit on random data placed at chosen page offsets,
with the path each call took."""

import dataclasses
import re

import numba
import numpy as np
import pytest
from hypothesis import given, strategies as st

import streamjit as sj
from streamjit.machine import profile as machine
from streamjit import options
from helpers import at_offset, staged_profile

# (x86 vector NT stores, by register: "x", "y" or "z")
VECTOR_NT_STORE = re.compile(r"^\s*vmovnt(?:ps|pd|dq)\s+%([xyz])mm\d+,", re.M)


def _vector_nt_stores(kernel):
    """The registers (``"xyz"`` letters) of a compiled kernel's vector NT stores."""
    return VECTOR_NT_STORE.findall(kernel.inspect_asm(kernel.signatures[0]))


def triad(out, a, b, s):
    for i in range(out.shape[0]):
        out[i] = a[i] + s * b[i]


def two_outputs(o1, o2, a, b):
    for i in range(1, a.shape[0]):
        o1[i] = a[i - 1] + a[i]
        o2[i] = a[i] * 2 + b[i]


def either_branch(out, a, b):
    for i in range(a.shape[0]):
        if a[i] > 0.5:
            out[i] = a[i] - b[i]
        else:
            out[i] = a[i] * b[i]


def time_loop(A, B, b, T):
    for t in range(T):
        for i in range(1, A.shape[0] - 1):
            B[i] = 0.3 * (A[i - 1] + A[i] + A[i + 1]) + b[i]
        for i in range(1, A.shape[0] - 1):
            A[i] = 0.3 * (B[i - 1] + B[i] + B[i + 1]) - b[i]


# {kernel: (streamed arrays, arguments of n items placed by `at_offset`: (is it a destination, dtype), scalars)}
KERNELS = {
    triad: (["out"], [(True, np.float64), (False, np.float64), (False, np.float64)], [3.0]),
    two_outputs: (["o1", "o2"], [(True, np.float32), (True, np.float32), (False, np.float32), (False, np.float32)],
                  []),
    either_branch: (["out"], [(True, np.int64), (False, np.int64), (False, np.int64)], []),
    time_loop: (["A", "B"], [(False, np.float64), (True, np.float64), (False, np.float64)], [3]),
}
with staged_profile():
    COMPILED = {f: (sj.stream_kernel(stream_stores=names, threshold=None)(f), numba.njit(f))
                for f, (names, _, _) in KERNELS.items()}
# (every kernel decorated in a test runs the check too)
pytestmark = pytest.mark.usefixtures("page_alias_check")


def _arguments(kernel, n, source_offset, trail, seed):
    _, arrays, scalars = KERNELS[kernel]
    rng = np.random.default_rng(seed)
    return [at_offset(n, source_offset + (trail if destination else 0), dtype, rng)
            for destination, dtype in arrays] + scalars


@given(kernel=st.sampled_from(list(KERNELS)), n=st.integers(0, 5000), source_offset=st.integers(0, 4095),
       trail=st.integers(1, 4095), seed=st.integers(0, 2 ** 32 - 1))
def test_staged_and_aligned_calls_equal_njit(kernel, n, source_offset, trail, seed):
    """Destinations 1-4095 bytes past their sources modulo 4 KiB (the suite
    checks 1-192: those calls run staged, the others aligned): every
    result equals numba.njit's, and no call falls back."""
    streamed, reference = COMPILED[kernel]
    got, expected = _arguments(kernel, n, source_offset, trail, seed), _arguments(kernel, n, source_offset, trail,
                                                                                  seed)
    before = streamed.stream_fallbacks()
    streamed(*got)
    reference(*expected)
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)
    assert streamed.stream_fallbacks() == before


@pytest.mark.parametrize("kernel", list(KERNELS))
def test_trailing_sources_run_staged_with_vector_nt_stores(kernel, monkeypatch):
    """A call whose destinations lie 8 bytes past their sources modulo 4 KiB
    runs staged, counted so and said so in the report; the staged loop's
    copy out of the buffer is more vector NT stores than the build with no
    page-alias check (the profile of CPUs where trailing does not stall)."""
    streamed, reference = (sj.stream_kernel(stream_stores=KERNELS[kernel][0], threshold=None)(kernel),
                           numba.njit(kernel))
    got, expected = _arguments(kernel, 3000, 256, 8, 1), _arguments(kernel, 3000, 256, 8, 1)
    streamed(*got)
    reference(*expected)
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)
    assert streamed.stream_calls()["staged"] == 1 and streamed.stream_calls()["streamed"] == 0
    assert "1 streamed through a staging buffer" in str(streamed.stream_report())
    monkeypatch.setattr(options, "machine_profile", lambda: machine.default_profile("GenuineIntel", 6))
    unchecked = sj.stream_kernel(stream_stores=KERNELS[kernel][0], threshold=None)(kernel)
    unchecked(*_arguments(kernel, 3000, 256, 8, 1))
    assert unchecked.stream_calls()["streamed"] == 1
    staged_nt = sum(r != "x" for r in _vector_nt_stores(streamed))
    aligned_nt = sum(r != "x" for r in _vector_nt_stores(unchecked))
    assert staged_nt > aligned_nt  # (either_branch's aligned loop does not vectorize: 0; its copy out does)


def _narrow_vector_nt_stores(kernel):
    """A kernel's vector NT stores narrower than its widest (LLVM's remainder loops, over part of a line)."""
    registers = _vector_nt_stores(kernel)
    return sum(r < max(registers) for r in registers)


@pytest.mark.parametrize("kernel", [triad, two_outputs])
def test_the_staged_loop_streams_whole_lines_only(kernel, monkeypatch):
    """The staged loop streams whole cache lines out of its buffer and stores
    the rest of the loop's last line plainly, as the aligned loop leaves it:
    a plain store into a line streamed in part (the next row's first
    elements) waits for that line to reach memory. So its build has no more
    vector NT stores narrower than its widest than the build without the
    page-alias check (with the last line streamed it had twice as many)."""
    staged = sj.stream_kernel(stream_stores=KERNELS[kernel][0], threshold=None)(kernel)
    staged(*_arguments(kernel, 3000, 256, 8, 1))
    monkeypatch.setattr(options, "machine_profile", lambda: machine.default_profile("GenuineIntel", 6))
    unchecked = sj.stream_kernel(stream_stores=KERNELS[kernel][0], threshold=None)(kernel)
    unchecked(*_arguments(kernel, 3000, 256, 8, 1))
    assert staged.stream_calls()["staged"] == 1 and unchecked.stream_calls()["streamed"] == 1
    assert _narrow_vector_nt_stores(staged) <= _narrow_vector_nt_stores(unchecked)


@pytest.mark.parametrize("strip_bytes", [64, 2048])
@pytest.mark.parametrize("kernel", [triad, two_outputs, time_loop])
def test_the_profiles_strip_size_is_compiled_in_and_every_size_equals_njit(kernel, strip_bytes, monkeypatch):
    """The staged loop cuts its iterations into strips of the machine
    profile's ``strip_bytes`` per destination: the option a kernel is
    compiled with (part of its cache key), and results equal numba.njit's
    for loops shorter than a strip, of whole strips and between."""
    profile = dataclasses.replace(options.machine_profile(), strip_bytes=strip_bytes)
    monkeypatch.setattr(options, "machine_profile", lambda: profile)
    streamed, reference = (sj.stream_kernel(stream_stores=KERNELS[kernel][0], threshold=None)(kernel),
                           numba.njit(kernel))
    assert streamed.stream_options.machine.strip_bytes == strip_bytes
    assert streamed.stream_options.cache_key() != COMPILED[kernel][0].stream_options.cache_key()
    items = strip_bytes // 8  # (float64; two_outputs' float32 strips hold twice as many)
    sizes = [3, items // 2 + 40, 2 * items + 40, 5 * items + 47]
    for n in sizes:
        got, expected = _arguments(kernel, n, 512, 8, n), _arguments(kernel, n, 512, 8, n)
        streamed(*got)
        reference(*expected)
        for g, e in zip(got, expected):
            np.testing.assert_array_equal(g, e)
    # (3 items: too few for an aligned loop)
    assert streamed.stream_calls()["staged"] == len(sizes) - 1 and not any(streamed.stream_fallbacks().values())


def test_sources_sharing_the_destinations_memory_run_plain():
    """Staging moves a strip's stores after its loads: where the destination
    is a view of the array the loop reads (8 bytes on), each iteration reads
    what the one before it wrote, so the call runs the plain loop, counted
    as a page-alias fallback, and equals njit."""
    streamed, reference = COMPILED[triad]
    before = streamed.stream_fallbacks()["page_alias"]
    results = []
    for kernel in (streamed, reference):
        base = np.random.default_rng(5).random(4001)
        kernel(base[1:], base[:-1], base[:-1], 0.5)
        results.append(base)
    np.testing.assert_array_equal(*results)
    assert streamed.stream_fallbacks()["page_alias"] == before + 1


def store_sometimes(out, a, b):
    for i in range(a.shape[0]):
        if a[i] > 0.5:
            out[i] = a[i] - b[i]


def read_back(out, a, b):
    for i in range(1, a.shape[0]):
        out[i] = out[i - 1] * 0.5 + a[i] + b[i]


@pytest.mark.parametrize("kernel, reason", [
    (store_sometimes, "an iteration of its loop may store no element of 'out'"),
    (read_back, "its loop loads a streamed destination")])
def test_loops_that_cannot_stage_run_plain_and_say_why(kernel, reason):
    """A loop some iteration of which stores nothing (the buffer would
    stream out elements no iteration wrote), or that loads what it streams,
    is not staged: its trailing calls run the plain loop, and the report
    says why."""
    streamed = sj.stream_kernel(stream_stores=["out"], threshold=None)(kernel)
    got, expected = _triple(), _triple()
    streamed(*got)
    numba.njit(kernel)(*expected)
    np.testing.assert_array_equal(got[0], expected[0])
    assert streamed.stream_fallbacks()["page_alias"] == 1 and streamed.stream_calls()["staged"] == 0
    assert f"not staged because {reason}" in str(streamed.stream_report())


def _triple():
    rng = np.random.default_rng(2)
    return [at_offset(2000, 128 + trail, np.float64, rng) for trail in (16, 0, 0)]
