"""The report says when a loop calls transcendental math functions one
element at a time (`report.math_calls`): the loop's line, the functions by
the name the source calls them, and why no vector version ran."""

import inspect
import math

import numpy as np
import pytest
from numba.core import config

import streamjit as sj
from streamjit.post_o3 import vector_math
from streamjit.llvm_text.math_names import LIBMVEC_FUNCTIONS, math_call, vector_version, vector_version_of
from streamjit.llvm_text.module import Module
from streamjit.inspection.math_calls import math_call_notes, math_calls, scalar_math_calls


def _line_of(kernel, text):
    """The file line of the first source line of ``kernel`` containing ``text``."""
    lines, first = inspect.getsourcelines(kernel.py_func)
    return first + next(k for k, line in enumerate(lines) if text in line)


@sj.stream_kernel(stream_stores=True)
def sines(out, x):
    for i in range(x.shape[0]):
        out[i] = np.sin(x[i]) * 2.0


@sj.stream_kernel(stream_stores=True, fastmath=True)
def angles(out, y, x):
    out[:] = np.arctan2(y, x) + np.sqrt(x)


@sj.stream_kernel(stream_stores=True)
def roots(out, x, c):
    out[0] = math.exp(c)  # once, outside the loop: no note
    for i in range(1, x.shape[0]):
        out[i] = np.sqrt(x[i])


def test_elementwise_sin_is_named_with_its_line():
    x = np.linspace(0.0, 1.0, 1000)
    out = sj.empty_like(x)
    sines(out, x)
    np.testing.assert_allclose(out, np.sin(x) * 2.0)
    report = sines.stream_report()
    if config.USING_SVML:  # (Numba before 0.62 with SVML's runtime: the loop calls the vector versions)
        assert report.math_calls == []
        return
    line = _line_of(sines, "np.sin")
    assert report.math_calls == [(line, ("sin",))]
    assert f"math: the loop at line {line} calls sin from the math library one element at a time" in str(report)
    # without fastmath, glibc's libmvec is not used where it loads (tests/test_vector_math.py)
    why = "fastmath=True" if vector_math.available() else "numba.config.USING_SVML is False"
    assert why in str(report)


def test_array_expression_names_numpy_function_not_vectorized_sqrt():
    y, x = np.linspace(0.1, 1.0, 1000), np.linspace(1.0, 2.0, 1000)
    out = sj.empty_like(x)
    angles(out, y, x)
    np.testing.assert_allclose(out, np.arctan2(y, x) + np.sqrt(x), rtol=1e-14)
    if vector_math.available():  # (fastmath: glibc's libmvec's atan2, tests/test_vector_math.py)
        assert angles.stream_report().math_calls == []
    elif not config.USING_SVML:
        # by NumPy's name, as the source calls it; sqrt is an instruction, not a call
        assert angles.stream_report().math_calls == [(_line_of(angles, "np.arctan2"), ("arctan2",))]


def test_no_note_for_vectorized_loop_and_a_call_outside_loops():
    x = np.linspace(0.0, 1.0, 1000)
    out = sj.empty_like(x)
    roots(out, x, 0.5)
    assert out[0] == math.exp(0.5)
    report = roots.stream_report()
    assert report.math_calls == []
    assert "math:" not in str(report)


# a loop (`loop` branches back to itself), with `exit` after it
_LOOP = """define void @f(ptr %p, i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %j, %loop ]
  {body}
  %j = add i64 %i, 1
  %c = icmp eq i64 %j, %n
  br i1 %c, label %exit, label %loop
exit:
  {after}
  ret void
}
"""


def _calls(body="", after=""):
    return scalar_math_calls(Module(_LOOP.replace("{body}", body).replace("{after}", after)).functions)


def test_detection_on_llvm_text():
    # vector intrinsics the backend splits into scalar calls, and scalar calls (float versions too)
    assert _calls("%v = call fast <4 x double> @llvm.sin.v4f64(<4 x double> zeroinitializer)") == {"sin"}
    assert _calls("%v = call double @atan2(double 1.0, double 2.0)") == {"atan2"}
    assert _calls("%v = call float @erff(float 1.0)") == {"erf"}
    assert _calls("%v = call float @llvm.exp.f32(float 1.0)") == {"exp"}
    # a vector math library's versions, instructions, a call after the loop: none
    assert _calls("%v = call <4 x double> @__svml_sin4(<4 x double> zeroinitializer)") == set()
    assert _calls("%v = call <4 x double> @llvm.sqrt.v4f64(<4 x double> zeroinitializer)") == set()
    assert _calls(after="%v = call double @llvm.cos.f64(double 1.0)") == set()


def test_cached_compile_has_no_lines():
    # a compile loaded from the cache has Numba's annotation as a string, no typed IR: no line to name
    text = _LOOP.replace("{body}", "%v = call double @llvm.sin.f64(double 1.0)").replace("{after}", "")
    assert math_calls(Module(text).functions, "<cached>") == [(None, ("sin",))]


def test_notes_say_why(monkeypatch):
    assert math_call_notes([]) == []
    monkeypatch.setattr(config, "USING_SVML", False, raising=False)
    monkeypatch.setattr(vector_math, "LIBMVEC", None)
    notes = math_call_notes([(7, ("cos", "sin")), (None, ("exp",))])
    assert notes == ["math: the loop at line 7 calls cos, sin from the math library one element at a time",
                     "math: a loop calls exp from the math library one element at a time",
                     "  (no vector math library: numba.config.USING_SVML is False; Numba 0.62 and later have no "
                     "SVML support)"]
    monkeypatch.setattr(config, "USING_SVML", True)
    assert "the loop did not vectorize" in math_call_notes([(7, ("sin",))])[-1]


def test_math_names_read_back_the_names_they_write():
    assert math_call("llvm.sin.v4f64") == ("sin", "f64", 4) and math_call("llvm.pow.f32") == ("pow", "f32", 0)
    assert math_call("atan2f") == ("atan2", "f32", 0) and math_call("erf") == ("erf", "f64", 0)
    assert math_call("llvm.fabs.v4f64") is None and math_call("memcpy") is None
    assert vector_version("d", 4, "sin", "f64") == "_ZGVdN4v_sin"
    assert vector_version("e", 16, "atan2", "f32") == "_ZGVeN16vv_atan2f"
    assert [vector_version_of(vector_version("b", 4, f, "f32")) for f in LIBMVEC_FUNCTIONS] == list(LIBMVEC_FUNCTIONS)
