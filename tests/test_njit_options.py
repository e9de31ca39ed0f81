"""Every keyword numba.njit takes is accepted, with Numba's
meaning, so code can switch decorators without touching its options."""

import numba
import numpy as np
import pytest
from numba.core.cpu import CPUTargetOptions
from numba.core.options import TargetOptions

import streamjit as sj
from kernels import copy_source
from streamjit.options import FORWARDED_NUMBA_OPTIONS

SRC = np.arange(1001, dtype=np.float32)


def _copied(kernel):
    dst = np.zeros_like(SRC)
    kernel(dst[1:], SRC[:-1])
    assert (dst[1:] == SRC[:-1]).all() and dst[0] == 0
    return kernel.stream_report()


def test_every_option_numba_compiles_with_is_accepted():
    # (Numba's private option table; the tested Numba releases all have it)
    numba_options = {name for name in dir(CPUTargetOptions)
                     if isinstance(getattr(CPUTargetOptions, name), TargetOptions.Mapping)}
    assert numba_options and numba_options <= set(FORWARDED_NUMBA_OPTIONS)


STREAMED = sj.stream_kernel(stream_stores=["dst"])(copy_source)


@pytest.mark.parametrize("options", [
    dict(debug=True), dict(no_rewrites=True), dict(_nrt=False), dict(no_cfunc_wrapper=True), dict(looplift=False),
    dict(forceinline=True), dict(_dbg_extend_lifetimes=True), dict(nogil=True, boundscheck=True),
    dict(error_model="numpy", fastmath=True)], ids=lambda o: ",".join(o))
def test_option_streams_what_the_kernel_streams_without_it(options):
    report = _copied(sj.stream_kernel(stream_stores=["dst"], **options)(copy_source))
    expected = _copied(STREAMED)
    assert report.arrays["dst"].nt_vector_stores == expected.arrays["dst"].nt_vector_stores > 0
    # (one nest fence; with bounds checks on, the tail loop after the NT stores can raise, and its
    # return path gets an exit fence of its own)
    assert report.machine_nt_vector_stores == expected.machine_nt_vector_stores > 0
    assert report.fences - report.exit_fences == 1 and report.unfenced_stores == 0


def test_debug_option_emits_debug_info():
    kernel = sj.stream_kernel(stream_stores=["dst"], debug=True)(copy_source)
    _copied(kernel)
    assert "!DISubprogram" in kernel.inspect_llvm(kernel.signatures[0])
    assert "!DISubprogram" not in STREAMED.inspect_llvm(kernel.signatures[0])


def test_dbg_optnone_compiles_unoptimized_as_numba_does():
    # optnone: no vectorizer either, so the streamed stores stay scalar
    report = _copied(sj.stream_kernel(stream_stores=["dst"], _dbg_optnone=True)(copy_source))
    assert report.arrays["dst"].nt_vector_stores == 0 and report.arrays["dst"].nt_scalar_stores > 0


def _called_from_jitted_code(kernel):
    @numba.njit
    def caller(dst, src):
        kernel(dst, src)

    dst = np.zeros_like(SRC)
    caller(dst, SRC)
    assert (dst == SRC).all()


@pytest.mark.parametrize("inline, compiled", [("always", False), ("never", True)])
def test_inline_as_numba(inline, compiled):
    # "always": a jitted caller compiles the kernel's body into its own (Numba's
    # InlineInlinables), so the kernel itself is never compiled for that call
    kernel = sj.stream_kernel(stream_stores=["dst"], inline=inline)(copy_source)
    _called_from_jitted_code(kernel)
    assert bool(kernel.signatures) is compiled
    assert _copied(kernel).arrays["dst"].nt_vector_stores > 0  # called from Python, it streams


def test_no_cpython_wrapper_kernel_is_called_from_jitted_code():
    kernel = sj.stream_kernel(stream_stores=["dst"], no_cpython_wrapper=True)(copy_source)
    _called_from_jitted_code(kernel)
    assert kernel.stream_report().arrays["dst"].nt_vector_stores > 0


def test_forceobj_compiles_in_object_mode_and_says_nothing_streams():
    with pytest.warns(sj.StreamWarning, match=r"copy_source: forceobj=True compiles in Numba's object mode.*"
                                              r"nothing streams \(stream_stores=\['dst'\] ignored\)"):
        kernel = sj.stream_kernel(stream_stores=["dst"], forceobj=True)(copy_source)
    report = _copied(kernel)
    assert not kernel.overloads[kernel.signatures[0]].fndesc.native  # object mode, as numba.jit(forceobj=True)
    assert report.arrays["dst"].nt_vector_stores == report.machine_nt_vector_stores == 0


def test_an_option_numba_does_not_have_is_still_an_error():
    with pytest.raises(sj.StreamConfigError, match="unknown option 'inlne' \\(did you mean 'inline'\\?\\)"):
        sj.stream_kernel(stream_stores=["dst"], inlne="always")(copy_source)
