"""Every error and warning: bad options at decoration, unsafe streaming at
compile time with file:line, warnings for names that are never used."""

import inspect
import os
import warnings

import numba
import numpy as np
import pytest

import streamjit as sj

THIS_FILE = os.path.abspath(__file__)


def line_of(func, text):
    """Line number in this file of the first source line of ``func`` containing ``text``."""
    lines, first = inspect.getsourcelines(func)
    return first + next(i for i, line in enumerate(lines) if text in line)


def test_error_hierarchy():
    assert issubclass(sj.StreamError, ValueError)
    assert issubclass(sj.StreamConfigError, sj.StreamError)
    assert issubclass(sj.StreamLegalityError, sj.StreamError)
    assert issubclass(sj.StreamWarning, UserWarning)


def copy(dst, src):
    for i in range(dst.shape[0]):
        dst[i] = src[i]


@pytest.mark.parametrize("options, match", [
    ({"stream_stores": ["nope"]}, "stream_stores names 'nope', which is not a parameter of copy"),
    ({"stream_loads": ["x"]}, "stream_loads names 'x'"),
    ({"stream_stores": [1]}, "stream_stores must be True, False, a parameter name or a list of them"),
    ({"stream_loads": 3}, "stream_loads must be"),
    ({"threshold": "big"}, "threshold must be None, 'auto' or a number of bytes"),
    ({"threshold": -1}, "threshold must be"),
    ({"threshold": 1.5}, "threshold must be"),
    ({"fastmth": True}, "unknown option 'fastmth'"),
])
def test_config_errors_at_decoration(options, match):
    with pytest.raises(sj.StreamConfigError, match=match):
        sj.stream_kernel(**options)(copy)


@pytest.mark.parametrize("options, match", [
    ({"stream_store": ["dst"]}, "unknown option 'stream_store' (did you mean 'stream_stores'?); stream_kernel "
                                "accepts stream_stores, stream_loads, threshold, prefetch_distance, prefetch_hint and"),
    ({"prefetch_distnce": 64}, "unknown option 'prefetch_distnce' (did you mean 'prefetch_distance'?)"),
    ({"fastmth": True}, "unknown option 'fastmth' (did you mean 'fastmath'?)"),
    ({"stream_stores": ["dts"]}, "stream_stores names 'dts' (did you mean 'dst'?), which is not a parameter"),
    ({"stream_loads": ["scr"]}, "stream_loads names 'scr' (did you mean 'src'?)"),
])
def test_misspelt_options_and_names_get_a_suggestion(options, match):
    """A misspelt option or name gets a "did you mean"."""
    with pytest.raises(sj.StreamConfigError) as error:
        sj.stream_kernel(**options)(copy)
    assert match in str(error.value)


def test_a_single_string_is_one_name():
    """A single name, `stream_stores="dst"`, is accepted as a list of one."""
    kernel = sj.stream_kernel(stream_stores="dst", stream_loads="src")(copy)
    assert (kernel.stream_options.stream_stores, kernel.stream_options.stream_loads) == (("dst",), ("src",))


def test_stencil_messages():
    """A misspelt stencil option gets a suggestion; a stencil
    called from jitted code says so instead of "Untyped global name"."""
    with pytest.raises(numba.core.errors.NumbaValueError, match=r"Unknown stencil option stream_store \(did you "
                                                                 r"mean 'stream_stores'\?\)"):
        sj.stencil(stream_store=True)(lambda a: a[0, 1])

    @sj.stencil
    def shift(a):
        return a[0, 1]

    @numba.njit
    def calls_it(a):
        return shift(a)

    with pytest.raises(numba.core.errors.TypingError, match=r"streamjit stencil 'shift' cannot be called from "
                                                            r"jitted code yet; there, call numba.stencil's kernel"):
        calls_it(np.ones((3, 3)))


def test_forwarded_numba_options_are_accepted():
    k = sj.stream_kernel(stream_stores=["dst"], fastmath=True, boundscheck=False, nogil=True,
                         error_model="numpy", parallel=False)(copy)
    a = np.arange(100.0)
    b = np.zeros(100)
    k(b, a)
    np.testing.assert_array_equal(a, b)


def test_boundscheck_is_honoured_outside_the_aligned_loop():
    k = sj.stream_kernel(stream_stores=["dst"], boundscheck=True)(copy)
    with pytest.raises(IndexError):
        k(np.zeros(100), np.zeros(50))


def test_decorator_rejects_non_functions():
    with pytest.raises(sj.StreamConfigError, match="expects a Python function"):
        sj.stream_kernel(stream_stores=True)(42)


def test_no_source_needed():
    # compiled from bytecode, as numba.njit does: a kernel made by exec streams
    namespace = {}
    exec("def k(dst, src):\n    for i in range(dst.shape[0]):\n        dst[i] = src[i]\n", namespace)
    kernel = sj.stream_kernel(stream_stores=["dst"])(namespace["k"])
    src, dst = np.random.default_rng(3).standard_normal(1001), np.zeros(1001)
    kernel(dst, src)
    np.testing.assert_array_equal(dst, src)
    assert kernel.stream_report().arrays["dst"].nt_vector_stores > 0


# ---- legality: each rejected kernel, the error names array and file:line ----

def scatter(out, idx, a):
    for i in range(a.shape[0]):
        out[idx[i]] = a[i]


def constant_index(out, a):
    for i in range(a.shape[0]):
        out[0] = a[i]


def test_one_element_stored_in_a_loop_is_a_plain_stage_of_its_own():
    # `u[0] = 0` in a time loop: no loop selects the element, each store is a stage
    kernel = sj.stream_kernel(stream_stores=["out"])(constant_index)
    a = np.random.default_rng(8).standard_normal(10)
    out, want = np.zeros(10), np.zeros(10)
    with pytest.warns(sj.StreamWarning, match="no store to it is streamed in constant_index: .* a stage of its own"):
        kernel(out, a)
    numba.njit(constant_index)(want, a)
    np.testing.assert_array_equal(out, want)
    notes = kernel.stream_report().arrays["out"].notes
    assert any("one element, whichever the iteration" in n for n in notes)


def inner_loop_invariant(out, a):
    for i in range(a.shape[0]):
        for j in range(3):
            out[i] = a[i] + j


def two_overlapping_stores(out, a):
    for i in range(a.shape[0] - 1):
        out[i] = a[i]
        out[i + 1] = a[i]


def mixed_loop_vars(out, a):
    for i in range(4):
        for j in range(4):
            out[i + j] = a[i]


def in_while_loop(out, a):
    i = 0
    while i < a.shape[0]:
        out[i] = a[i]
        i += 1


def reassigned(out, a):
    out = out[::-1]
    for i in range(a.shape[0]):
        out[i] = a[i]


def same_index_twice(out, a):
    for i in range(a.shape[0]):
        out[i] = a[i]
        out[i] = 2 * a[i]


def loop_dependent_slice(out, a):
    for i in range(a.shape[0] - 2):
        out[i:i + 2] = a[i]


@pytest.mark.parametrize("func, marker, reason", [
    (scatter, "out[idx[i]]", "not an affine function"),
    (inner_loop_invariant, "out[i] = a[i] + j", "does not depend on the loop variable 'j'"),
    (two_overlapping_stores, "out[i + 1]", "may write the same element"),
    (mixed_loop_vars, "out[i + j]", "mixed with other loop variables"),
    (in_while_loop, "out[i] = a[i]", "while loop"),
    (reassigned, "out[i] = a[i]", "through a view of the parameter (made at line"),
    (same_index_twice, "out[i] = 2 * a[i]", "may write the same element"),
], ids=lambda v: getattr(v, "__name__", None))
def test_legality_errors_name_array_and_line(func, marker, reason):
    kernel = sj.stream_kernel(stream_stores=["out"])(func)   # decoration succeeds
    args = [np.zeros(10)] + [np.zeros(10, dtype=np.intp) if p == "idx" else np.zeros(10)
                             for p in list(inspect.signature(func).parameters)[1:]]
    with pytest.raises(sj.StreamLegalityError) as info:
        kernel(*args)
    message = str(info.value)
    assert f"{THIS_FILE}:{line_of(func, marker)}:" in message
    assert "'out'" in message and reason in message
    with pytest.raises(sj.StreamLegalityError):   # raised again, never silently compiled
        kernel(*args)


def test_slice_that_moves_with_its_loop_is_a_stage_per_iteration():
    """``out[i:i + 2] = a[i]``: each execution of the element loop it becomes
    writes its two elements once (Halide's per-stage rule; the ``i`` loop
    re-runs the stage as a time loop would), with a fence after each."""
    kernel = sj.stream_kernel(stream_stores=["out"])(loop_dependent_slice)
    a = np.random.default_rng(0).standard_normal(10)
    expected, got = np.zeros(10), np.zeros(10)
    numba.njit(loop_dependent_slice)(expected, a)
    kernel(got, a)
    np.testing.assert_array_equal(got, expected)
    report = kernel.stream_report()
    assert report.fences >= 1 and not report.unfenced_stores


def test_slice_assignment_overlapping_its_operand_is_never_a_legality_error():
    """NPBench durbin's ``y[:k] += alpha * np.flip(y[:k])``: the run-time
    check sends it to Numba's own store (its operand overlaps it), which is
    plain: never a legality error, and the results are Numba's."""
    def durbin(r):
        y = np.empty_like(r)
        alpha = -r[0]
        beta = 1.0
        y[0] = -r[0]
        for k in range(1, r.shape[0]):
            beta *= 1.0 - alpha * alpha
            alpha = -(r[k] + (np.flip(r[:k]) * y[:k]).sum()) / beta
            y[:k] += alpha * np.flip(y[:k])
            y[k] = alpha
        return y

    r = np.random.default_rng(0).random(37) * 0.1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sj.StreamWarning)
        np.testing.assert_allclose(sj.stream_kernel(stream_stores=["y"])(durbin)(r), numba.njit(durbin)(r))


def test_legality_error_for_eager_signature_at_decoration():
    with pytest.raises(sj.StreamLegalityError, match="does not depend on the loop variable 'j'"):
        sj.stream_kernel("void(float64[::1], float64[::1])", stream_stores=["out"])(inner_loop_invariant)


def test_unnamed_arrays_are_not_checked():
    # streaming dst only: the scatter into other is not dst's problem
    @sj.stream_kernel(stream_stores=["dst"])
    def k(dst, other, idx):
        for i in range(dst.shape[0]):
            dst[i] = 1.0
            other[idx[i]] = 2.0

    dst, other = np.zeros(40), np.zeros(40)
    k(dst, other, np.arange(40)[::-1].copy())
    assert (dst == 1).all() and (other == 2).all()


def test_stream_stores_true_leaves_an_array_that_cannot_stream_plain_and_says_why():
    # True names no array: the scatter compiles as numba.njit's, and the report says why it is plain
    k = sj.stream_kernel(stream_stores=True)(scatter)
    rng = np.random.default_rng(3)
    idx, a = rng.permutation(64), rng.random(64)
    out = rng.random(64)
    expected = out.copy()
    numba.njit(scatter)(expected, idx, a)
    k(out, idx, a)
    assert out.tobytes() == expected.tobytes()
    assert "out" not in k.stream_result().streamed_stores
    report = str(k.stream_report())
    assert "left out plain (its stores cannot stream)" in report
    assert f"line {line_of(scatter, 'out[idx[i]]')}: its stores cannot stream: the index is not an affine" in report


# ---- warnings and stream_loads validation ----

def test_warning_for_name_never_stored():
    kernel = sj.stream_kernel(stream_stores=["dst", "src"])(copy)   # warned when compiled: it reads the IR
    with pytest.warns(sj.StreamWarning, match="stream_stores names 'src'.* never stores to it"):
        kernel(np.zeros(3), np.ones(3))


def test_warning_for_name_never_loaded():
    def k(dst, src, unused):
        for i in range(dst.shape[0]):
            dst[i] = src[i]

    kernel = sj.stream_kernel(stream_loads=["unused"])(k)
    with pytest.warns(sj.StreamWarning, match="stream_loads names 'unused'.* never loads it"):
        kernel(np.zeros(3), np.ones(3), np.ones(3))


def test_no_warning_for_well_formed_options():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sj.stream_kernel(stream_stores=["dst"], stream_loads=["src"])(copy)(np.zeros(3), np.ones(3))


def test_stream_loads_on_a_stored_array_is_an_error_at_compile():
    k = sj.stream_kernel(stream_stores=True, stream_loads=["dst", "src"])(copy)
    with pytest.raises(sj.StreamConfigError, match="cannot stream its own self-loads"):
        k(np.zeros(3), np.zeros(3))


def test_stream_loads_true_excludes_self_loads():
    def k(out, a):
        for i in range(a.shape[0]):
            out[i] = out[i] + 5 * a[i]

    kernel = sj.stream_kernel(stream_loads=True, stream_stores=True)(k)
    out, a = np.ones(100), np.arange(100.0)
    kernel(out, a)
    np.testing.assert_array_equal(out, 1 + 5 * a)
    assert kernel.stream_result().streamed_loads == {"a"}


def test_unknown_dump_after_warns_with_the_pass_names(monkeypatch, capsys):
    """`STREAMJIT_DUMP_AFTER=bogus` warns, where it was silently ignored."""
    monkeypatch.setenv("STREAMJIT_DUMP_AFTER", "bogus")
    with pytest.warns(sj.StreamWarning, match=r"STREAMJIT_DUMP_AFTER='bogus' names no streamjit pass or stage, so "
                                              r"nothing is printed; the names: canonical_loops, .*align_peel, "
                                              r".*nontemporal, .*exit_fences, array_pool, or 'all'"):
        sj.stream_kernel(stream_stores=["dst"])(copy)(np.zeros(3), np.ones(3))
    monkeypatch.setenv("STREAMJIT_DUMP_AFTER", "legality")
    with warnings.catch_warnings():
        warnings.simplefilter("error", sj.StreamWarning)
        sj.stream_kernel(stream_stores=["dst"])(copy)(np.zeros(3), np.ones(3))
    assert "after legality" in capsys.readouterr().out


def test_while_loop_named_at_its_own_line():
    """Python 3.11 starts a while loop's header block at its body;
    the message names the line of the ``while``."""
    def in_a_while(out, a):
        i = 0
        while i < a.shape[0]:
            out[i] = a[i]
            i += 1

    with pytest.raises(sj.StreamLegalityError) as info:
        sj.stream_kernel(stream_stores=["out"])(in_a_while)(np.zeros(5), np.ones(5))
    assert f"while loop (line {line_of(in_a_while, 'while i <')})" in str(info.value)
    assert "as `for i in range(start, stop):`" in str(info.value)  # (the rewrite that streams)


def test_ndenumerate_shows_the_rewrite_that_streams():
    def doubled(out, a):
        for idx, v in np.ndenumerate(a):
            out[idx] = 2 * v

    def rewritten(out, a):
        for idx in np.ndindex(a.shape):
            out[idx] = 2 * a[idx]

    a = np.ones((20, 30))
    with pytest.raises(sj.StreamLegalityError) as info:
        sj.stream_kernel(stream_stores=["out"])(doubled)(np.zeros_like(a), a)
    assert f"{__file__}:{line_of(doubled, 'out[idx] =')}:" in str(info.value)
    assert "`for idx in np.ndindex(a.shape):` with `v = a[idx]`" in str(info.value)
    kernel = sj.stream_kernel(stream_stores=["out"], threshold=None)(rewritten)
    out = np.zeros_like(a)
    kernel(out, a)
    assert (out == 2).all() and kernel.stream_calls()["streamed"] == 1


@pytest.mark.parametrize("signature, problem", [
    ("void(int)", "an argument is not a Numba type"), ("void(foo)", "name 'foo' is not defined"),
    ("void(float64[::1]", "was never closed"), (("int",), "expected a type instance, got 'int'")])
def test_an_unreadable_signature_says_so(signature, problem):
    """stream_report("void(int)") says what it cannot read, where it raised a bare NotImplementedError()."""
    with pytest.raises(sj.StreamError) as error:
        sj.stream_kernel(stream_stores=["dst"])(copy).stream_report(signature)
    assert str(error.value).startswith(f"copy: cannot read the signature {signature!r}: ")
    assert problem in str(error.value) and "write Numba types, e.g. 'void(float32[::1]" in str(error.value)


def test_help_says_what_each_command_does(capsys):
    from streamjit.__main__ import COMMANDS, main
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for name, text in COMMANDS.items():
        assert f"\n  {name:11s}{text.split()[0]} " in out and len(text) > 100
