"""A Numba user's first programs, as they write them: each one streams on
its calls, or says once, in one `StreamWarning` per reason, why it does
not and what to change; every result equals ``numba.njit``'s.

The outputs are allocated as users allocate them (``np.empty_like``,
``np.zeros_like``, ``.copy()``), which may put them at their sources'
offset in a 4 KiB page; on the suite's machine profile (`conftest.py`:
the page-alias check on, the threshold 0 bytes) such calls run the plain
loops, and the warning then names the check and ``streamjit.empty_like``.
Where NumPy places an array depends on the allocator's state, so a program
here may stream or warn: either is right, silence with a fallback is not.
"""

import importlib.util
import warnings

import numba
import numpy as np
import pytest

import streamjit as sj
from streamjit.inspection.report import FALLBACK_REMEDIES, FALLBACK_WORDS

N = 1 << 16  # 512 KiB of float64: allocated by mmap, at a fixed offset in a page, as large arrays are


def blur(out, img):
    for y in range(1, img.shape[0] - 1):
        for x in range(1, img.shape[1] - 1):
            out[y, x] = 0.2 * (img[y, x] + img[y - 1, x] + img[y + 1, x] + img[y, x - 1] + img[y, x + 1])


def heat(a, b, c, steps):
    for _ in range(steps):
        for i in range(1, a.shape[0] - 1):
            b[i] = a[i] + c * (a[i - 1] - 2.0 * a[i] + a[i + 1])
        a, b = b, a


def particles(x_next, v_next, x, v, force, dt):
    for i in range(x.shape[0]):
        v_next[i] = v[i] + force[i] * dt
        x_next[i] = x[i] + v_next[i] * dt


def magnitude(out, a, b):
    out[:] = np.sqrt(a * a + b * b)


def prefix_sums(out, a):
    out[0] = a[0]
    for i in range(1, a.shape[0]):
        out[i] = out[i - 1] + a[i]


def stencil_3d(out, a):
    out[1:-1, 1:-1, 1:-1] = (a[:-2, 1:-1, 1:-1] + a[2:, 1:-1, 1:-1] + a[1:-1, :-2, 1:-1] + a[1:-1, 2:, 1:-1]
                             + a[1:-1, 1:-1, :-2] + a[1:-1, 1:-1, 2:]) / 6.0


@numba.njit(inline="always")
def _smooth_step(t):
    return t * t * (3.0 - 2.0 * t)


def with_a_helper(out, t):
    for i in range(t.shape[0]):
        out[i] = _smooth_step(t[i])


def parallel_scale(out, a, s):
    for i in numba.prange(a.shape[0]):
        out[i] = s * a[i]


def saxpy(a, x, y):
    r = np.empty_like(x)
    for i, xi in enumerate(x):
        r[i] = a * xi + y[i]
    return r


CACHED_SOURCE = '''
import streamjit as sj

@sj.stream_kernel(stream_stores=["out"], cache=True)
def scaled(out, a):
    for i in range(a.shape[0]):
        out[i] = 3.0 * a[i]
'''


def _cached_kernel(tmp_path):
    """A kernel with ``cache=True`` from a module of its own (its cache
    beside it, not among the suite's files)."""
    path = tmp_path / "newcomer_cached.py"
    path.write_text(CACHED_SOURCE)
    spec = importlib.util.spec_from_file_location("newcomer_cached", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.scaled


def _arrays(rng):
    a = rng.random(N)
    return a, rng.random(N)


# name -> (function, streamjit options, arguments as a user makes them)
PROGRAMS = {
    "blur": (blur, {"stream_stores": ["out"]},
             lambda rng: (lambda img: (np.zeros_like(img), img))(rng.random((256, 256)))),
    "heat with a swap": (heat, {"stream_stores": ["a", "b"]},
                         lambda rng: (lambda a: (a, a.copy(), 0.1, 3))(rng.random(N))),
    "particles": (particles, {"stream_stores": ["x_next", "v_next"]},
                  lambda rng: (lambda x, v, f: (np.empty_like(x), np.empty_like(v), x, v, f, 0.01))(
                      rng.random(N), rng.random(N), rng.random(N))),
    "fused sqrt": (magnitude, {"stream_stores": ["out"]},
                   lambda rng: (lambda a, b: (np.empty_like(a), a, b))(*_arrays(rng))),
    "prefix sums": (prefix_sums, {"stream_stores": ["out"]},
                    lambda rng: (lambda a: (np.zeros_like(a), a))(rng.random(N))),
    "3-D stencil": (stencil_3d, {"stream_stores": ["out"]},
                    lambda rng: (lambda a: (np.zeros_like(a), a))(rng.random((40, 40, 40)))),
    "helper": (with_a_helper, {"stream_stores": ["out"]},
               lambda rng: (lambda t: (np.empty_like(t), t))(rng.random(N))),
    "prange": (parallel_scale, {"stream_stores": ["out"], "parallel": True},
               lambda rng: (lambda a: (np.empty_like(a), a, 2.5))(rng.random(N))),
    "cache": (None, {}, lambda rng: (lambda a: (np.empty_like(a), a))(rng.random(N))),
    "saxpy returning its array": (saxpy, {"stream_stores": ["r"]},
                                  lambda rng: (2.0, *_arrays(rng))),
}
CALLS = 2


def _copies(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


@pytest.mark.parametrize("name", PROGRAMS)
def test_each_program_streams_or_says_once_why_not(name, tmp_path):
    func, options, make = PROGRAMS[name]
    kernel = _cached_kernel(tmp_path) if func is None else sj.stream_kernel(**options)(func)
    reference = numba.njit(parallel=options.get("parallel", False))(func or kernel.py_func)
    rng = np.random.default_rng(0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(CALLS):
            args = make(rng)
            theirs = _copies(args)
            got, expected = kernel(*args), reference(*theirs)
            if expected is not None:
                np.testing.assert_array_equal(got, expected)
            for mine, its in zip(args, theirs):
                if isinstance(mine, np.ndarray):
                    np.testing.assert_array_equal(mine, its)
    said = [str(w.message) for w in caught if issubclass(w.category, sj.StreamWarning)]
    calls, fallbacks = kernel.stream_calls(), kernel.stream_fallbacks()
    if calls["streamed"] == CALLS:
        assert said == [], said
        return
    failed = [check for check, n in fallbacks.items() if n]
    if failed:  # run-time checks sent calls to the plain loops: one warning per check, its remedy named
        assert calls["streamed"] + calls["after_check"] == CALLS and len(said) == len(failed), said
        for check in failed:
            (message,) = [m for m in said if FALLBACK_WORDS[check] in m]
            assert FALLBACK_REMEDIES[check] in message and f"{kernel.py_func.__name__}.stream_fallbacks()" in message
    else:  # left plain when compiled: one warning, the reason, and what streams it anyway
        assert len(said) == 1 and "no store to it is streamed" in said[0] and "anyway" in said[0], said


def heat_where_positive(a, b, c, steps):
    for _ in range(steps):
        for i in range(1, a.shape[0] - 1):
            if a[i] > 0.0:
                b[i] = a[i] + c * (a[i - 1] - 2.0 * a[i] + a[i + 1])
        a, b = b, a


def test_the_fallback_warning_points_at_the_call_and_names_sj_empty_like(page_alias_check):
    """The case the README's readers meet: a second buffer made by
    ``.copy()`` sits at its source's offset in a page, and a loop that
    reads ``a[i - 1]`` trails its stores by 8 bytes. Where the CPU stalls on
    that (`helpers.staged_profile`), the heat loop runs staged and says nothing;
    a loop that cannot be staged (an iteration may store nothing) runs
    plain, and the warning names the remedy."""
    # (64 KiB apart: the same offset in a page, as .copy() places them; 64 KiB, from which
    # sj.empty_like places its arrays apart, not where the heap happens to)
    buffer = np.empty(2 * 8192 + 1)
    a, b = buffer[1:8193], buffer[8193:]
    a[...] = np.random.default_rng(1).random(8192)
    assert (b.ctypes.data - a.ctypes.data) % 4096 == 0
    staged = sj.stream_kernel(stream_stores=["b"])(heat)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sj.StreamWarning)
        staged(a, b, 0.1, 1)
    assert staged.stream_calls()["staged"] == 1
    kernel = sj.stream_kernel(stream_stores=["b"])(heat_where_positive)
    with pytest.warns(sj.StreamWarning, match="streamjit.empty_like") as caught:
        kernel(a, b, 0.1, 1)
        kernel(a, b, 0.1, 1)
    assert len(caught) == 1 and caught[0].filename == __file__
    assert kernel.stream_fallbacks()["page_alias"] == 2
    fresh = sj.empty_like(a)
    fresh[...] = a
    with warnings.catch_warnings():
        warnings.simplefilter("error", sj.StreamWarning)
        kernel(a, fresh, 0.1, 1)
    assert kernel.stream_calls()["streamed"] == 1


def test_info_opens_with_whether_the_profile_was_measured_and_keeps_the_reasons_for_why(capsys, monkeypatch):
    from streamjit.measure import info
    from streamjit.machine import profile as machine
    from streamjit.__main__ import main

    assert main(["info"]) == 0
    lines = capsys.readouterr().out.splitlines()
    # (the suite's profile is a calibrated file: conftest.py)
    assert lines[0].startswith("profile:            calibrated in ") and lines[0].endswith(
        "; `python -m streamjit calibrate` measures this machine (about a minute on an idle machine) again")
    assert lines[-1] == "(`python -m streamjit info --why` adds the measurements that chose each row of the profile)"
    assert not any("no measurement of this kind of CPU" in line or "measured on an" in line for line in lines)
    shown = dict(line.split(":", 1) for line in lines[1:-1])
    assert shown["scalar NT loops"].strip() == "those computing at most 64 floating-point operations per element stored"
    assert shown["wide stencils"].strip() == "none: streamed stencil loops at LLVM's own vector width"
    assert main(["info", "--why"]) == 0
    why = capsys.readouterr().out
    assert "staged strips:      512 bytes per destination (" in why and "--why" not in why
    for identity, state in ((("AuthenticAMD", 0x15, 2), "neither measured on this kind of CPU nor calibrated here ("),
                            (("GenuineIntel", 6, 167), "measured on this kind of CPU, not calibrated here (")):
        monkeypatch.setattr(info, "cpu_identity", lambda: identity)
        line = info.profile_state(machine.default_profile(*identity))
        assert line.startswith(state) and line.endswith(
            "`python -m streamjit calibrate` measures this machine (about a minute on an idle machine)")
    one_operation = machine.default_profile("AuthenticAMD", 0x17, 49)
    monkeypatch.setattr(info, "machine_profile", lambda: one_operation)
    assert info.machine_info()["scalar NT loops"] == ("those computing at most 1 floating-point operation per "
                                                      "element stored")


def test_a_list_of_parameter_names_where_numba_takes_signatures_says_stream_stores():
    def copy(dst, src):
        for i in range(src.shape[0]):
            dst[i] = src[i]

    with pytest.raises(sj.StreamConfigError) as raised:
        sj.stream_kernel(["dst"])(copy)
    assert str(raised.value) == ("stream_kernel(['dst']) passes parameter names of "
                                 "test_a_list_of_parameter_names_where_numba_takes_signatures_says_stream_stores"
                                 ".<locals>.copy as the signatures numba.njit takes first; to stream their stores, "
                                 "write stream_kernel(stream_stores=['dst'])")
    with pytest.raises(sj.StreamConfigError, match=r"passes names, not signatures such as 'void\(float32\[::1\], "
                                                    r"float32\[::1\]\)' of .*stream_stores=\['out'\]"):
        sj.stream_kernel("out")(copy)
    eager = sj.stream_kernel(["void(float64[::1], float64[::1])"], stream_stores=["dst"])(copy)
    assert len(eager.signatures) == 1                       # (a signature still compiles, eagerly)


def test_a_scalar_named_in_stream_stores_is_called_a_scalar_parameter():
    @sj.stream_kernel(stream_stores=["out", "n"])
    def fill(out, n):
        for i in range(n):
            out[i] = 1.0

    with pytest.warns(sj.StreamWarning) as caught:
        fill(np.empty(100), 100)
    assert [str(w.message) for w in caught if "'n'" in str(w.message)] == [
        "stream_stores names 'n', a scalar parameter of "
        "test_a_scalar_named_in_stream_stores_is_called_a_scalar_parameter.<locals>.fill (int64), not an array: only "
        "arrays' stores stream"]


def test_a_strided_output_is_told_to_be_allocated_contiguous_not_copied():
    @sj.stream_kernel(stream_stores=["out"])
    def double(out, a):
        for i in range(a.shape[0]):
            out[i] = 2.0 * a[i]

    out = np.zeros((N, 2))
    with pytest.warns(sj.StreamWarning) as caught:
        double(out[:, 0], np.ones(N))
    message = next(str(w.message) for w in caught if FALLBACK_WORDS["contiguous"] in str(w.message))
    assert FALLBACK_REMEDIES["contiguous"] in message
    assert "allocate an output contiguous where it is made" in message and "return a new array" in message
    assert "writes into a copy the caller never sees" in message
    np.testing.assert_array_equal(out[:, 0], 2.0)


def test_under_stream_stores_true_a_call_that_falls_back_is_in_the_report_not_a_warning():
    @sj.stream_kernel(stream_stores=True)
    def double(out, a):
        for i in range(a.shape[0]):
            for j in range(a.shape[1]):
                out[i, j] = 2.0 * a[i, j]

    a = np.asfortranarray(np.ones((64, 64)))
    out = np.zeros_like(a)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                    # (no array was named: nothing to warn about)
        double(out, a)
    np.testing.assert_array_equal(out, 2.0)
    assert double.stream_fallbacks()["contiguous"] == 1
    assert ("calls: 0 streamed, 0 plain below the threshold, 1 plain after a run-time check (1: a row that is not "
            "contiguous), 0 plain without reaching an aligned loop") in str(double.stream_report()).splitlines()


def test_the_demo_names_the_profile_state_and_how_its_ratios_are_computed(capsys):
    from streamjit.__main__ import main

    assert main(["demo", "--mib", "1", "--rounds", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[2].startswith("machine profile: calibrated in ")          # (the suite's profile: conftest.py)
    assert lines[-1] == ("times: medians (min-max) of 1 interleaved rounds; streamjit/njit: the median (min-max) of "
                         "the ratios within each round (njit's time over streamjit's, run back to back under the same "
                         "load), which can differ from the ratio of the medians; > 1 means streamjit is faster; every "
                         "streamed result was checked against NumPy.")
