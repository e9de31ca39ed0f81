"""Loop shapes numba.njit compiles, under ``stream_stores=True``, under
``stream_loads=True`` and with the stored array named.

``True`` names no array, so (Halide's directive semantics) every shape
compiles and gives numba.njit's results bit for bit on random data; an
array whose stores cannot stream stays plain, and its report note says
why. Naming that array in ``stream_stores`` raises `StreamLegalityError`
naming the array and the line of the refused store (marked ``# refused``
below). Shapes: reductions into ``out[i]``, scatter, gather, ``while``
loops (inside and around a nest), flattened indices, one element stored
twice, time loops around nests, ``break`` in a nest, stores in both
branches of an ``if``, stores through a ``reshape`` view, 2-D and 3-D
arrays, each 2-D/3-D shape in C and in Fortran order.
"""

import re
import textwrap
import warnings

import numba
import numpy as np
import pytest

import streamjit as sj

# The arguments of every shape: out (stored), a and b (read), idx (a gather
# or scatter index, with repeats), x (a threshold), T (a time-step count).
N, M, P = 7, 37, 5


def _one_d(rng, order):
    return dict(out=_values(rng, (N * M,), order), a=_values(rng, (N * M,), order), b=_values(rng, (N * M,), order))


def _two_d(rng, order):
    return dict(out=_values(rng, (N, M), order), a=_values(rng, (N, M), order), b=_values(rng, (N, M), order))


def _three_d(rng, order):
    return dict(out=_values(rng, (P, N, M), order), a=_values(rng, (P, N, M), order), b=_values(rng, (P, N, M), order))


def _values(rng, shape, order):
    """Random values, never zeros, in C or Fortran order."""
    return np.asarray(rng.standard_normal(shape) * 10 + 0.5, order=order)


# name: (arguments, kernel body over them); "# refused" marks the store a
# named array is refused at. Each body is valid numba.njit code.
SHAPES = {
    "row_sum": ("1d_of_2d", """
        def kernel(out, a, b, idx, x, T):
            for i in range(a.shape[0]):
                for j in range(a.shape[1]):
                    out[i] += a[i, j]  # refused
        """),
    "column_view_sum": (_two_d, """
        def kernel(out, a, b, idx, x, T):
            r = out[:, 0]
            for i in range(a.shape[0]):
                for j in range(a.shape[1]):
                    r[i] += a[i, j]  # refused
        """),
    "reduction_into_1d": ("1d_of_2d", """
        def kernel(out, a, b, idx, x, T):
            for i in range(a.shape[0]):
                for j in range(a.shape[1]):
                    out[i] = out[i] + a[i, j] * b[i, j]  # refused
        """),
    "last_wins": ("1d_of_2d", """
        def kernel(out, a, b, idx, x, T):
            for i in range(a.shape[0]):
                for j in range(a.shape[1]):
                    out[i] = a[i, j] * 2.0  # refused
        """),
    "scatter": (_one_d, """
        def kernel(out, a, b, idx, x, T):
            for i in range(idx.shape[0]):
                out[idx[i]] = a[i] + b[i]  # refused
        """),
    "gather": (_one_d, """
        def kernel(out, a, b, idx, x, T):
            for i in range(idx.shape[0]):
                out[i] = a[idx[i]] * 3.0 + b[i]
        """),
    "while_loop": (_one_d, """
        def kernel(out, a, b, idx, x, T):
            i = 0
            while i < out.shape[0]:
                out[i] = a[i] - b[i]  # refused
                i += 1
        """),
    "while_around_a_nest": (_one_d, """
        def kernel(out, a, b, idx, x, T):
            s = 0
            while s < T:
                for i in range(out.shape[0]):
                    out[i] = a[i] * s + b[i]
                s += 1
        """),
    "flattened": ("flat", """
        def kernel(out, a, b, idx, x, T):
            n, m = a.shape
            for i in range(n):
                for j in range(m):
                    out[i * m + j] = a[i, j] + b[i, j]  # refused
        """),
    "same_element_twice": (_one_d, """
        def kernel(out, a, b, idx, x, T):
            for i in range(out.shape[0]):
                out[i] = a[i]
                if a[i] > x:
                    out[i] = b[i]  # refused
        """),
    "time_loop_around_a_nest": (_two_d, """
        def kernel(out, a, b, idx, x, T):
            for t in range(T):
                for i in range(a.shape[0]):
                    for j in range(a.shape[1]):
                        out[i, j] = a[i, j] * t + b[i, j]
        """),
    "break_in_a_nest": (_two_d, """
        def kernel(out, a, b, idx, x, T):
            for i in range(a.shape[0]):
                for j in range(a.shape[1]):
                    if a[i, j] > x:
                        break
                    out[i, j] = a[i, j] + b[i, j]
        """),
    "both_branches": (_two_d, """
        def kernel(out, a, b, idx, x, T):
            for i in range(a.shape[0]):
                for j in range(a.shape[1]):
                    if a[i, j] > x:
                        out[i, j] = a[i, j]
                    else:
                        out[i, j] = b[i, j] * 2.0
        """),
    "reshape_view": (_one_d, """
        def kernel(out, a, b, idx, x, T):
            v = out.reshape((7, 37))
            w = a.reshape((7, 37))
            for i in range(7):
                for j in range(37):
                    v[i, j] = w[i, j] * 0.5
        """),
    "three_d": (_three_d, """
        def kernel(out, a, b, idx, x, T):
            for k in range(a.shape[0]):
                for i in range(a.shape[1]):
                    for j in range(a.shape[2]):
                        out[k, i, j] = a[k, i, j] - b[k, i, j]
        """),
    "three_d_plane_sum": (_three_d, """
        def kernel(out, a, b, idx, x, T):
            for k in range(a.shape[0]):
                for i in range(a.shape[1]):
                    for j in range(a.shape[2]):
                        out[0, i, j] += a[k, i, j]
        """),
    "three_d_inner_sum": (_three_d, """
        def kernel(out, a, b, idx, x, T):
            for k in range(a.shape[0]):
                for i in range(a.shape[1]):
                    for j in range(a.shape[2]):
                        out[k, i, 0] += a[k, i, j] * b[k, i, j]  # refused
        """),
}


# What the error (and the note under True) tells the user to write instead.
REWRITES = {"row_sum": "accumulate in a scalar", "reduction_into_1d": "accumulate in a scalar",
            "last_wins": "accumulate in a scalar", "three_d_inner_sum": "accumulate in a scalar",
            "flattened": "`v[i, j]` on a 2-D view, `v = out.reshape(n, m)`", "while_loop": "`for i in range(start, stop):`",
            "same_element_twice": "store it once"}


def _arguments(shape, rng, order):
    make = SHAPES[shape][0]
    if make == "1d_of_2d":
        args = dict(out=_values(rng, (N,), order), a=_values(rng, (N, M), order), b=_values(rng, (N, M), order))
    elif make == "flat":
        args = dict(out=_values(rng, (N * M,), order), a=_values(rng, (N, M), order), b=_values(rng, (N, M), order))
    else:
        args = make(rng, order)
    return [args["out"], args["a"], args["b"], rng.integers(0, args["out"].shape[0], args["a"].shape[0]), 0.3, 3]


def _kernel_source(shape):
    return textwrap.dedent(SHAPES[shape][1]).lstrip("\n")


def _compiled(shape, **options):
    namespace = {}
    exec(compile(_kernel_source(shape), f"<loop shape {shape}>", "exec"), namespace)
    return sj.stream_kernel(**options)(namespace["kernel"]), numba.njit(namespace["kernel"])


def _refused_line(shape):
    lines = _kernel_source(shape).splitlines()
    return next((n + 1 for n, line in enumerate(lines) if "# refused" in line), None)


def _orders(shape):
    return ("C", "F") if SHAPES[shape][0] not in (_one_d,) else ("C",)


def _assert_same_as_njit(kernel, reference, shape):
    for order in _orders(shape):
        got = _arguments(shape, np.random.default_rng(7), order)
        want = _arguments(shape, np.random.default_rng(7), order)
        kernel(*got)
        reference(*want)
        for name, g, w in zip(("out", "a", "b"), got, want):
            assert g.tobytes() == w.tobytes(), f"{shape}, order {order}: {name} differs from numba.njit's"


OPTIONS = {"stream_stores=True": dict(stream_stores=True),
           "stream_stores=True, stream_loads=True": dict(stream_stores=True, stream_loads=True),
           "stream_loads=True": dict(stream_loads=True)}


@pytest.mark.parametrize("options", OPTIONS)
@pytest.mark.parametrize("shape", SHAPES)
def test_every_shape_compiles_as_njit_gives(shape, options):
    kernel, reference = _compiled(shape, **OPTIONS[options])
    _assert_same_as_njit(kernel, reference, shape)
    if OPTIONS[options].get("stream_stores") and _refused_line(shape) is not None:
        # left plain, and its notes say why
        result = kernel.stream_result()
        assert "out" not in result.streamed_stores
        assert result.notes.get("out"), result.notes


@pytest.mark.parametrize("shape", [s for s in SHAPES if _refused_line(s) is not None])
def test_a_refused_store_says_why_under_true_and_raises_where_named(shape):
    kernel, _ = _compiled(shape, stream_stores=True)
    kernel(*_arguments(shape, np.random.default_rng(7), "C"))
    notes = " ".join(kernel.stream_result().notes["out"])
    assert "its stores cannot stream" in notes and REWRITES.get(shape, "") in notes \
        or "only updated in place" in notes, notes
    named, _ = _compiled(shape, stream_stores=["out"])
    with pytest.raises(sj.StreamLegalityError) as info, warnings.catch_warnings():
        warnings.simplefilter("ignore", sj.StreamWarning)
        named(*_arguments(shape, np.random.default_rng(7), "C"))
    message = str(info.value)
    assert re.search(rf"<loop shape {shape}>:{_refused_line(shape)}\b", message), message
    assert "'out'" in message and REWRITES.get(shape, "") in message


@pytest.mark.parametrize("shape", [s for s in SHAPES if _refused_line(s) is None])
def test_a_shape_that_can_stream_streams_where_named_with_njit_results(shape):
    kernel, reference = _compiled(shape, stream_stores=["out"], threshold=None)
    _assert_same_as_njit(kernel, reference, shape)
    assert "out" in kernel.stream_result().streamed_stores
