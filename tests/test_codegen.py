"""What the generated code does: vector non-temporal stores on ymm/zmm and a
fence when streamed, none in a bare kernel; the report reads the code."""

import dataclasses
import re
import warnings

import llvmlite.binding as llvm
import numba
import numpy as np
import pytest

import kernels as K
import streamjit as sj
from streamjit.codegen import FALLBACK_CHECKS
from streamjit.machine import profile as machine
from streamjit import options
from streamjit.codegen import CALL_PATHS
from streamjit.pre_o3 import loop_widths
from streamjit.protocol.targets import count_asm_streaming
from helpers import X86_AVX, compiled, needs_x86_avx

features = llvm.get_host_cpu_features()

VECTOR_NT_STORE = re.compile(r"^\s*vmovnt(?:ps|pd|dq)\s+%[yz]mm\d+,", re.M)
ANY_NT_STORE = re.compile(r"^\s*v?movnt\w*\s", re.M)
SFENCE = re.compile(r"^\s*sfence\s*$", re.M)
# float32 computed in float64 (K.jacobi): without AVX-512 the conversion
# gives two 128-bit halves, and LLVM stores them as two xmm stores (plain
# and non-temporal alike, 16 bytes apart in the same line) rather than join
# them into one ymm register: those count as a full-width pair
HALVES_NT_STORE = re.compile(r"^\s*vmovnt(?:ps|pd|dq)\s+%xmm\d+,\s*(?:16)?\(", re.M)


def converted_halves_stream(asm):
    """The NT stores of a float64->float32 loop: wide, or in xmm halves."""
    return bool(VECTOR_NT_STORE.search(asm)) or (not features.get("avx512f", False)
                                                   and len(HALVES_NT_STORE.findall(asm)) >= 2)


@pytest.fixture(scope="module")
def copy_f32():
    a = np.zeros(1000, np.float32)
    return compiled(K.copy, a, a.copy())


def test_the_fence_follows_the_aligned_loop_on_every_path_to_the_return(copy_f32):
    # a one-loop nest is peeled into a head loop and an aligned loop after it:
    # the fence goes after both (it once went between them)
    report = K.copy.stream_report(copy_f32)
    assert report.arrays["dst"].nt_vector_stores > 0 and report.unfenced_stores == 0, str(report)
    assert report.exit_fences == 0, str(report)   # (nothing in the loop raises: the nest's fence is enough)


def test_exceptions_raised_inside_a_streamed_nest_leave_through_a_fence():
    def divide_all(out, a, d):
        for i in range(a.shape[0]):
            out[i] = a[i] // d[0]       # ZeroDivisionError from inside the aligned loop

    kernel = sj.stream_kernel(stream_stores=["out"])(divide_all)
    a = np.arange(1.0, 101.0)
    with pytest.raises(ZeroDivisionError):
        kernel(np.empty(100), a, np.zeros(1))
    report = kernel.stream_report()
    assert report.exit_fences > 0 and report.unfenced_stores == 0, str(report)


@needs_x86_avx
def test_streamed_copy_uses_vector_nt_stores_and_sfence(copy_f32):
    asm = K.copy.inspect_asm(copy_f32)
    assert VECTOR_NT_STORE.search(asm), "no vmovnt* on a ymm/zmm register"
    assert SFENCE.search(asm)


@needs_x86_avx
def test_bare_kernel_has_no_streaming():
    a = np.zeros(1000, np.float32)
    sig = compiled(K.copy_plain, a, a.copy())
    asm = K.copy_plain.inspect_asm(sig)
    assert not ANY_NT_STORE.search(asm)
    assert not SFENCE.search(asm)
    report = K.copy_plain.stream_report(sig)
    assert report.fences == 0 and report.arrays["dst"].nt_vector_stores == 0


@needs_x86_avx
@pytest.mark.parametrize("dtype", [np.float64, np.int16, np.uint8, np.complex64, np.bool_])
def test_every_dtype_gets_vector_nt_stores(dtype):
    a = np.zeros(100, dtype)
    sig = compiled(K.copy, a, a.copy())
    assert VECTOR_NT_STORE.search(K.copy.inspect_asm(sig))
    assert K.copy.stream_report(sig).arrays["dst"].nt_vector_stores > 0


def test_nontemporal_vector_stores_are_proven_aligned(copy_f32):
    llvm_ir = K.copy.inspect_llvm(copy_f32)
    nt_stores = [line for line in llvm_ir.splitlines() if "!nontemporal" in line and " store " in f" {line.strip()}"]
    vector = [re.search(r"store <(\d+) x float>.*, align (\d+)", line) for line in nt_stores]
    assert any(vector)
    for line, match in zip(nt_stores, vector):
        if match:
            lanes, align = match.groups()
            assert int(align) >= min(4 * int(lanes), 64), line
        else:  # scalar NT stores have no alignment requirement beyond the element's
            assert re.search(r"store float .*, align (4|8|16)", line), line
    # the plain head loop's stores carry no stream mark and stay temporal
    assert any(" store " in f" {line}" and "!nontemporal" not in line and "float" in line
               for line in llvm_ir.splitlines())


@needs_x86_avx
def test_report_counts_from_code(copy_f32):
    report = K.copy.stream_report(copy_f32)
    dst, src = report.arrays["dst"], report.arrays["src"]
    assert dst.nt_vector_stores > 0
    assert dst.plain_stores > 0          # the peeled head loop stays plain
    assert src.nt_vector_stores == src.nt_scalar_stores == src.plain_stores == 0
    assert src.plain_loads > 0 and dst.plain_loads == 0
    assert report.fences == 1
    assert report.peeled_loops == 1
    assert report.machine_nt_vector_stores >= dst.nt_vector_stores
    text = str(dataclasses.replace(report, verbose=True))
    assert "dst" in text and "src" in text and "fences: 1" in text


@needs_x86_avx
def test_stencil_and_3d_are_streamed():
    g = np.zeros((40, 300), np.float32)
    sig = compiled(K.jacobi, g.copy(), g)
    report = K.jacobi.stream_report(sig)
    assert report.arrays["out"].nt_vector_stores > 0 and report.fences == 1
    assert converted_halves_stream(K.jacobi.inspect_asm(sig))
    sig = compiled(K.jacobi_f32, g.copy(), g)
    assert VECTOR_NT_STORE.search(K.jacobi_f32.inspect_asm(sig))
    a = np.zeros((2, 3, 100), np.float64)
    sig = compiled(K.scale3d, a.copy(), a, 2.0)
    report = K.scale3d.stream_report(sig)
    assert report.arrays["out"].nt_vector_stores > 0 and report.fences == 1


@needs_x86_avx
def test_self_load_stays_ordinary_and_store_is_streamed():
    a = np.zeros(1000, np.float32)
    sig = compiled(K.accumulate, a.copy(), a)
    report = K.accumulate.stream_report(sig)
    out = report.arrays["out"]
    assert out.nt_vector_stores > 0 and out.plain_loads > 0 and out.nt_loads == 0


def test_read_modify_write_loops_stay_plain_under_true():
    a = np.zeros(1000, np.float32)
    sig = compiled(K.accumulate_aug, a.copy(), a)
    out = K.accumulate_aug.stream_report(sig).arrays["out"]
    assert out.nt_vector_stores == 0 and any("only updated in place" in n for n in out.notes)


def test_any_layout_note():
    a = np.zeros(200, np.float32)
    sig = compiled(K.copy, a[::2], a[:100])
    report = K.copy.stream_report(sig)
    assert any("contiguous at run time" in n for n in report.arrays["dst"].notes)


@needs_x86_avx
def test_stencil_on_views_with_contiguous_rows_is_streamed():
    big = np.zeros((40, 300), np.float32)
    sig = compiled(K.jacobi, big[:, 1:250], big[:, 2:251])
    assert sig[0].layout == "A"
    assert K.jacobi.stream_report(sig).arrays["out"].nt_vector_stores > 0
    assert converted_halves_stream(K.jacobi.inspect_asm(sig))
    sig = compiled(K.jacobi_f32, big[:, 1:250], big[:, 2:251])
    assert VECTOR_NT_STORE.search(K.jacobi_f32.inspect_asm(sig))


def test_unaligned_index_forms_are_explained():
    a = np.zeros(100)
    sig = compiled(K.interleave, np.zeros(200), a, a)
    notes = K.interleave.stream_report(sig).arrays["out"].notes
    assert notes[0] == "line 43: stored in a loop"          # how: then why its stores stay plain
    assert len(notes) > 1 and all("plain stores" in n for n in notes[1:])
    assert K.interleave.stream_report(sig).arrays["out"].nt_vector_stores == 0


def test_inspect_llvm_shapes():
    assert isinstance(K.copy.inspect_llvm(), dict)
    assert isinstance(K.copy.inspect_asm(), dict)


def test_report_before_compiling_needs_a_signature():
    @sj.stream_kernel(stream_stores=["dst"])
    def fresh(dst, src):
        for i in range(dst.shape[0]):
            dst[i] = src[i]

    with pytest.raises(ValueError, match="not been compiled"):
        fresh.stream_report()
    report = fresh.stream_report("void(float64[::1], float64[::1])")
    assert report.arrays["dst"].nt_vector_stores > 0 or not X86_AVX


@needs_x86_avx
def test_loop_that_does_not_vectorize_gets_scalar_nt_stores():
    a = np.zeros(1000)
    sig = compiled(K.checked_scale, a.copy(), a, 1.0)
    report = K.checked_scale.stream_report(sig)
    out = report.arrays["out"]
    assert out.nt_vector_stores == 0 and out.nt_scalar_stores > 0
    assert any("did not vectorize: scalar NT stores" in n for n in out.notes)
    assert report.machine_nt_scalar_stores > 0
    if not features.get("sse4a", False):   # movntsd is AMD's (SSE4A); elsewhere the double goes through movnti
        assert re.search(r"^\s*movntiq\s+%r\w+, ", K.checked_scale.inspect_asm(sig), re.M)
    assert not any("no non-temporal store instruction" in n for n in out.notes)
    assert report.fences >= 2          # after the nest and before the raise


def scalar_nt_stores_in(asm):
    """The scalar NT stores in assembly, as the report counts them (`movnti`, or AMD's SSE4A `movntss`/`movntsd`,
    which LLVM emits for znver4)."""
    return count_asm_streaming(asm)[1]


@needs_x86_avx
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_scalar_nt_stores_follow_the_profiles_item_sizes(dtype, monkeypatch):
    """Where the machine profile's ``scalar_nt_bytes`` row leaves an item
    size out (32-bit `movnti` streams ran 0.4x plain stores on the Intel
    Xeon VM), a loop that does not vectorize stores those items plain, and
    the report and the warning say why; the sizes in the row get `movnti`."""
    profile = dataclasses.replace(machine.machine_profile(), scalar_nt_bytes=(8,))
    monkeypatch.setattr(options, "machine_profile", lambda: profile)
    kernel = sj.stream_kernel(stream_stores=["out"], threshold=None)(K.checked_scale.py_func)
    a = np.random.default_rng(0).random(1001).astype(dtype)
    out = np.empty_like(a)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kernel(out, a, 2.0)
    np.testing.assert_array_equal(out, 2 * a)
    rep = kernel.stream_report().arrays["out"]
    asm = kernel.inspect_asm(kernel.signatures[0])
    plain = "leaves scalar stores of 4-byte items plain (scalar_nt_bytes [8]"
    calls = str(kernel.stream_report())
    if dtype == np.float32:
        assert rep.nt_scalar_stores == 0 and not scalar_nt_stores_in(asm)
        assert any(plain in n for n in rep.notes)
        assert "calls: 1 ran the aligned loop, whose stores stayed plain (see the notes)" in calls
        assert any(plain in str(w.message) for w in caught)
    else:
        assert rep.nt_scalar_stores > 0 and scalar_nt_stores_in(asm)
        assert not any(plain in n for n in rep.notes) and not any(plain in str(w.message) for w in caught)
        assert "calls: 1 streamed," in calls


def _checked_reciprocal(out, a):
    for i in range(a.shape[0]):
        out[i] = 1.0 / (a[i] + 1.0)      # (Numba checks the divisor: the loop stays scalar)


@needs_x86_avx
@pytest.mark.parametrize("function, ops", [(K.checked_scale.py_func, 1), (_checked_reciprocal, 2)])
def test_scalar_nt_stores_follow_the_profiles_operations_per_element(function, ops, monkeypatch):
    """A loop that does not vectorize gets scalar NT stores only where it
    computes at most the machine profile's ``scalar_nt_ops`` per element
    stored (the reciprocal ran 0.37x njit with them and no source prefetch
    on the Intel Xeon VM);
    more, its stores stay plain and the report and the warning say why."""
    profile = dataclasses.replace(machine.machine_profile(), scalar_nt_bytes=(8,), scalar_nt_ops=1)
    monkeypatch.setattr(options, "machine_profile", lambda: profile)
    kernel = sj.stream_kernel(stream_stores=["out"], threshold=None)(function)
    a = np.random.default_rng(1).random(1001)
    out, want = np.empty_like(a), np.empty_like(a)
    args = (2.0,) if ops == 1 else ()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kernel(out, a, *args)
    numba.njit(function)(want, a, *args)
    np.testing.assert_array_equal(out, want)
    rep = kernel.stream_report().arrays["out"]
    asm = kernel.inspect_asm(kernel.signatures[0])
    why = "its loop computes 2 floating-point operations per element stored, more than the 1 this CPU's scalar_nt_ops"
    if ops == 1:
        assert rep.nt_scalar_stores > 0 and scalar_nt_stores_in(asm)
        assert not any("scalar_nt_ops" in n for n in rep.notes)
    else:
        assert rep.nt_scalar_stores == 0 and not scalar_nt_stores_in(asm)
        assert any(n.startswith("the aligned loop did not vectorize: plain stores") and why in n for n in rep.notes)
        assert any(why in str(w.message) for w in caught)


def _checked_column(out, a):
    for i in range(out.shape[0]):
        x = a[i, 0]                       # (rows apart: not prefetched)
        if x > 2:
            raise ValueError("value out of range")
        out[i] = 2 * x


@needs_x86_avx
def test_scalar_nt_rows_hold_only_for_sources_prefetched_as_measured(monkeypatch):
    """The scalar NT rows are measured with the sources prefetched as the
    profile says (float32 gained 1.13x with prefetcht1 on the Intel Xeon
    VM, 0.38x without): a loop whose source is not prefetched, and a kernel
    whose prefetch options differ, take the rows of a CPU nobody measured
    (64-bit items only)."""
    profile = dataclasses.replace(machine.machine_profile(), sources=machine.LoadStage("t1", 4096),
                                  scalar_nt_bytes=(4, 8), scalar_nt_ops=8)
    monkeypatch.setattr(options, "machine_profile", lambda: profile)
    a = np.random.default_rng(2).random((1001, 3)).astype(np.float32)
    for function, source, hint, streams in ((K.checked_scale.py_func, a[:, 0].copy(), None, True),
                                            (_checked_column, a, None, False),
                                            (K.checked_scale.py_func, a[:, 0].copy(), "none", False)):
        kernel = sj.stream_kernel(stream_stores=["out"], threshold=None, prefetch_hint=hint)(function)
        out = np.empty(1001, np.float32)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sj.StreamWarning)
            kernel(out, source, *((2.0,) if function is K.checked_scale.py_func else ()))
        np.testing.assert_array_equal(out, 2 * a[:, 0])
        rep = kernel.stream_report().arrays["out"]
        assert (rep.nt_scalar_stores > 0) == streams, function.__name__
        assert any("a source of its loop is not prefetched: it takes the scalar NT stores of a CPU nobody measured, "
                   "items of 8 bytes" in n for n in rep.notes) != streams, rep.notes


def _jacobi(out, g):
    for r in range(1, g.shape[0] - 1):
        for c in range(1, g.shape[1] - 1):
            out[r, c] = (g[r, c] + g[r, c - 1] + g[r, c + 1] + g[r - 1, c] + g[r + 1, c]) / 5


@pytest.mark.skipif(machine.vector_isa() != "AVX-512", reason="512-bit vectors need AVX-512")
@pytest.mark.parametrize("function, dtype, wide", [(_jacobi, np.float64, True), (_jacobi, np.float32, False),
                                                   (K.triad_by_three, np.float64, False)])
def test_wide_stencil_row_widens_the_streamed_stencil_loop_only(function, dtype, wide, monkeypatch):
    """The ``wide_stencil_bytes`` row [8] (the Intel Xeon VM's): a streamed
    stencil loop of float64 is vectorized 512 bits wide (zmm NT stores);
    the function's plain loops, a float32 stencil (a size the row leaves
    out) and a loop that is no stencil (one load per source) keep LLVM's
    width: their stores are as without the row (ymm on the Intel Xeon VM,
    zmm already on a Zen 4). Results equal njit's."""
    rng = np.random.default_rng(0)
    if function is _jacobi:
        g = rng.random((37, 203)).astype(dtype)
        args, expected = (g.copy(), g), (g.copy(), g)
    else:
        a, b = rng.random(4099).astype(dtype), rng.random(4099).astype(dtype)
        args, expected = (np.empty_like(a), a, b), (np.empty_like(a), a, b)
    numba.njit(function)(*expected)
    stores = {}
    for row in ((), (8,)):
        profile = dataclasses.replace(machine.machine_profile(), wide_stencil_bytes=row)
        monkeypatch.setattr(options, "machine_profile", lambda: profile)
        kernel = sj.stream_kernel(stream_stores=True, threshold=None)(function)
        kernel(*args)
        np.testing.assert_array_equal(args[0], expected[0])
        asm = kernel.inspect_asm(kernel.signatures[0])
        stores[row] = (set(re.findall(r"vmovntp[sd]\s+%([xyz]mm)", asm)),
                       set(re.findall(r"vmovup[sd]\s+%([xyz]mm)\d+, ", asm)))  # (NT, the plain loops' stores)
        assert kernel.stream_calls()["streamed"] == 1
    (nt, plain), (own_nt, own_plain) = stores[(8,)], stores[()]
    assert plain == own_plain
    assert "zmm" in nt if wide else nt == own_nt


@pytest.mark.skipif(machine.vector_isa() != "AVX-512", reason="512-bit vectors need AVX-512")
def test_wide_loops_are_asked_for_a_width_not_forced_and_vectorized_loops_are_left(monkeypatch):
    """The pre-O3 stage asks for the width (``llvm.loop.vectorize.width``)
    and forces nothing: a forced loop LLVM cannot vectorize prints
    "loop not vectorized" remarks and warnings to the user's terminal
    (NPBench's cavity_flow printed 12). A loop that already carries loop
    metadata (optimized before, in a library linked in: vectorized) is left
    as it is."""
    profile = dataclasses.replace(machine.machine_profile(), wide_stencil_bytes=(8,))
    monkeypatch.setattr(options, "machine_profile", lambda: profile)
    kernel = sj.stream_kernel(stream_stores=True, threshold=None)(_jacobi)
    g = np.random.default_rng(0).random((37, 203))
    kernel(g.copy(), g)
    library = kernel.overloads[kernel.signatures[0]].library
    widened = str(loop_widths.run(llvm.parse_assembly(library.unoptimized_llvm_ir)))
    assert '!"llvm.loop.vectorize.width", i32 8' in widened and "llvm.loop.vectorize.enable" not in widened
    assert str(loop_widths.run(llvm.parse_assembly(widened))).count("llvm.loop.vectorize.width") == 1
    optimized = kernel.inspect_llvm(kernel.signatures[0])    # (its loops vectorized: llvm.loop metadata)
    assert ":lanes=8" in optimized and str(loop_widths.run(llvm.parse_assembly(optimized))) == \
        str(llvm.parse_assembly(optimized))


def placed_after(array, shift_bytes, rng):
    """A random float32 array like ``array`` whose data starts ``shift_bytes``
    past ``array``'s modulo a page."""
    buffer = rng.random(array.size + 2048, dtype=np.float32)
    start = ((array.ctypes.data + shift_bytes - buffer.ctypes.data) % 4096) // 4
    return buffer[start:start + array.size]


@pytest.mark.parametrize("shift, streamed", [(0, True), (4, False), (64, False), (188, False), (256, True),
                                             (2048, True), (4092, True)])
def test_sources_just_behind_the_stores_modulo_a_page_run_staged(shift, streamed, page_alias_check):
    """AMD EPYC Zen 2: a streamed triad ran 0.46x njit, the 5-point stencil
    0.54x, when their output lay 4-128 bytes past their inputs modulo 4 KiB
    (4K aliasing: later loads wait for the NT stores still in flight). With
    two source streams or more, such a call runs the staged loop (computed
    into a buffer in cache, streamed out of it), counted ``staged``, not a
    fallback; one stream (a copy) paid at every offset and still streams."""
    kernel = sj.stream_kernel(stream_stores=["out"], threshold=None)(K.triad_by_three)
    rng = np.random.default_rng(shift)
    a = rng.random(20_000, dtype=np.float32)
    b, out = placed_after(a, 0, rng), placed_after(a, shift, rng)
    kernel(out, a, b)
    expected = np.empty_like(out)
    numba.njit(K.triad_by_three)(expected, a, b)
    np.testing.assert_array_equal(out, expected)
    assert kernel.stream_calls() == dict.fromkeys(CALL_PATHS, 0) | {"streamed": int(streamed),
                                                                    "staged": int(not streamed)}
    assert sum(kernel.stream_fallbacks().values()) == 0
    copy = sj.stream_kernel(stream_stores=["dst"], threshold=None)(K.copy.py_func)
    copy(out, a)
    assert copy.stream_calls()["streamed"] == 1


def _bytes_and_words(small, wide, a, b):
    for i in range(a.shape[0]):
        small[i] = np.uint8(a[i] + b[i])
        wide[i] = a[i] * b[i]


def _at_line_offset(n, dtype, offset):
    """``n`` items of ``dtype`` starting ``offset`` bytes into a cache line."""
    itemsize = np.dtype(dtype).itemsize
    raw = np.empty(n * itemsize + 64, np.uint8)
    skip = (offset - raw.ctypes.data) % 64
    return raw[skip:skip + n * itemsize].view(dtype)


@pytest.mark.parametrize("shift", [0, 8, 24, 56])
def test_streamed_stores_of_two_item_sizes_never_share_an_aligned_start(shift):
    """Two streamed destinations in one loop, of 1- and 8-byte items, at
    one offset within a cache line: one aligned start cannot serve both
    (their offsets drift apart by 7 bytes an iteration), and claiming it
    faulted on the first misaligned vector NT store (a crash at shifts 8,
    24 and 56). The widest items stream; the others stay plain, with a
    note; results equal njit's."""
    kernel = sj.stream_kernel(stream_stores=["small", "wide"], threshold=None)(_bytes_and_words)
    rng = np.random.default_rng(shift)
    n = 5000
    small, wide = _at_line_offset(n, np.uint8, shift), _at_line_offset(n, np.int64, shift)
    a, b = (rng.integers(0, 100, n) for _ in range(2))
    kernel(small, wide, a, b)
    small_expected, wide_expected = np.empty(n, np.uint8), np.empty(n, np.int64)
    numba.njit(_bytes_and_words)(small_expected, wide_expected, a, b)
    np.testing.assert_array_equal(small, small_expected)
    np.testing.assert_array_equal(wide, wide_expected)
    assert kernel.stream_calls()["streamed"] == 1
    report = kernel.stream_report()
    assert report.arrays["wide"].nt_vector_stores > 0 and report.arrays["small"].nt_vector_stores == 0
    assert any("its items are not 8 bytes, as those of 'wide'" in n for n in report.arrays["small"].notes)


def test_no_page_alias_check_where_the_profile_measured_no_stall(monkeypatch):
    """On CPUs whose profile row says trailing sources do not stall streamed
    stores (Zen 4, Intel Xeon: ``page_alias_bytes`` 0), the kernel has no
    check: a call with its output 4 bytes past its sources streams."""
    monkeypatch.setattr(options, "machine_profile", lambda: machine.default_profile("GenuineIntel", 6))
    kernel = sj.stream_kernel(stream_stores=["out"], threshold=None)(K.triad_by_three)
    assert kernel.stream_options.machine.page_alias_bytes == 0
    rng = np.random.default_rng(4)
    a = rng.random(20_000, dtype=np.float32)
    b, out = placed_after(a, 0, rng), placed_after(a, 4, rng)
    kernel(out, a, b)
    expected = np.empty_like(out)
    numba.njit(K.triad_by_three)(expected, a, b)
    np.testing.assert_array_equal(out, expected)
    assert kernel.stream_calls()["streamed"] == 1 and kernel.stream_fallbacks()["page_alias"] == 0


def test_call_counters_add_atomically():
    """Calls from several threads (nogil kernels, copyto's threads) each
    count: a plain load, add and store lost counts when a thread was
    preempted between them."""
    kernel = sj.stream_kernel(stream_stores=["dst"], threshold=None, nogil=True)(K.copy.py_func)
    kernel(np.zeros(100), np.ones(100))
    llvm_ir = kernel.inspect_llvm(kernel.signatures[0])
    counter = kernel.stream_result().call_counter
    # (the kernel hands the counters' address to the out-of-line count,
    # which adds to them atomically; its one plain store is a first-fallback
    # notice slot, after the counters, written under the GIL)
    updates = [line for line in llvm_ir.splitlines() if f"@{counter}" in line and not line.startswith("@")]
    assert updates and all(" call i64 @streamjit.count_call(" in line for line in updates), updates
    count = llvm_ir[llvm_ir.index("define linkonce_odr i64 @streamjit.count_call("):]
    count = count[:count.index("\n}")]
    assert count.count("atomicrmw add") >= 2 * (1 + len(FALLBACK_CHECKS))
    stores = [line.split()[1:3] for line in count.splitlines() if line.lstrip().startswith("store ")]
    assert stores and all(store == ["i64", "1,"] for store in stores), stores  # (a notice mark, not a count)


def test_calls_that_raise_are_counted():
    """The record was written before each return only: a call that streamed
    most of its array and then raised was counted nowhere."""
    kernel = sj.stream_kernel(stream_stores=["dst"], threshold=None)(K.copy_until)
    a = np.random.default_rng(2).random(100_000)
    d = np.zeros_like(a)
    kernel(d, a, -1)
    for k in (50_000, 99_999):
        with pytest.raises(ValueError, match="stop"):
            kernel(d, a, k)
    np.testing.assert_array_equal(d, a)
    assert sum(kernel.stream_calls().values()) == 3 and kernel.stream_calls()["streamed"] == 3


@pytest.mark.parametrize("strided", ["dst", "src"])
def test_a_strided_array_is_counted_as_the_contiguous_check_fallback(strided):
    """A strided destination was counted ``plain`` with no reason, where a
    strided source was counted ``after_check`` with ``contiguous``."""
    kernel = sj.stream_kernel(stream_stores=["dst"], threshold=None)(K.copy.py_func)
    big = np.random.default_rng(3).random(40_000)
    dst = np.zeros(40_000)[::2] if strided == "dst" else np.zeros(20_000)
    src = big[::2] if strided == "src" else big[::2].copy()
    kernel(dst, src)
    np.testing.assert_array_equal(dst, src)
    assert kernel.stream_calls() == dict.fromkeys(CALL_PATHS, 0) | {"after_check": 1}
    assert kernel.stream_fallbacks()["contiguous"] == 1


def test_a_compile_that_skipped_the_post_o3_stages_raises():
    """Should Numba stop creating code libraries through the class streamjit
    sets, kernels would compile without non-temporal stores, silently. (In a
    process of its own: the unrewritten module stays in Numba's engine.)"""
    import subprocess
    import sys

    script = ("import contextlib, numpy as np, streamjit as sj\n"
              "from streamjit.kernel import dispatcher\n"
              "dispatcher.stream_code_libraries = lambda codegen, kernel_name: contextlib.nullcontext()\n"
              "def copy(dst, src):\n"
              "    for i in range(src.shape[0]):\n"
              "        dst[i] = src[i]\n"
              "kernel = sj.stream_kernel(stream_stores=['dst'], threshold=None)(copy)\n"
              "try:\n"
              "    kernel(np.zeros(64), np.ones(64))\n"
              "except sj.StreamError as exc:\n"
              "    print(exc)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert "did not go through streamjit's post-O3 stages" in done.stdout, done.stderr[-2000:]
