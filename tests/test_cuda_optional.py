"""What target="cuda" does without the CUDA toolchain extra (which the
rest of the GPU tests need): option errors, the CPU path never importing
numba.cuda, and the message that says what to install."""

import subprocess
import sys

import pytest

import cuda_kernels as K
from helpers import checkout_env
import streamjit as sj


@pytest.mark.parametrize("options,message", [
    (dict(prefetch_distance=9), "pipeline_stages=k"), (dict(pipeline_stages=9), "from 1 to 8"),
    (dict(threshold=1 << 20), "no size test"), (dict(prefetch_hint="t0"), "prefetch_hint='t0' is not supported"),
    (dict(target="tpu"), "target must be"), (dict(stream_stores=["nope"]), "not a parameter"),
    (dict(cache=True), "does not take the option"), (dict(load_cache="ca"), "load_cache must be")])
def test_bad_gpu_options_are_config_errors(options, message):
    with pytest.raises(sj.StreamConfigError, match=message):
        sj.stream_kernel(K.triad, **{"target": "cuda", **options})


def test_the_cpu_path_never_imports_numba_cuda():
    code = ("import sys, numpy as np, streamjit as sj\n"
            "k = sj.stream_kernel(stream_stores=['a'])(lambda a: None)\n"
            "@sj.stream_kernel(stream_stores=['a'])\n"
            "def f(a):\n    for i in range(a.shape[0]):\n        a[i] = 1.0\n"
            "f(np.zeros(5)); sj.cuda.jit\n"
            "g = sj.stream_kernel(target='cuda', stream_stores=['a'])(f.py_func)\n"
            "assert 'numba.cuda' not in sys.modules, 'numba.cuda imported'\n")
    _python(code)


def test_without_numba_cuda_a_gpu_kernel_says_what_to_install():
    code = ("import sys; sys.modules['numba.cuda'] = None  # as if numba-cuda were not installed\n"
            "import numpy as np, streamjit as sj\n"
            "def fill(out):\n    for i in sj.prange(out.shape[0]):\n        out[i] = 1.0\n"
            "k = sj.stream_kernel(fill, target='cuda', stream_stores=['out'])\n"
            "for call in (lambda: k(np.zeros(4)), lambda: k.inspect_ptx('void(float64[::1])')):\n"
            "    try:\n        call()\n    except sj.StreamError as e:\n        print(e)\n")
    assert _python(code).count("needs numba-cuda: pip install 'streamjit[cuda]'") == 2



def _python(code):
    """The output of ``code`` run by a fresh Python with this checkout's streamjit."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=checkout_env())
    assert done.returncode == 0, done.stderr
    return done.stdout
