"""Under NUMBA_DISABLE_JIT=1 kernels run as Python, as numba.njit's do
(pdb, prints and coverage see their lines), say so, and have their options
checked as with JIT on."""

import json
import subprocess
import sys

from helpers import checkout_env

SCRIPT = r'''
import json, numpy as np, streamjit as sj

def copy(dst, src):
    for i in range(src.shape[0]):
        dst[i] = src[i]

def average(a):
    return 0.25 * (a[0, 1] + a[0, -1] + a[1, 0] + a[-1, 0])

found = {}
kernel = sj.stream_kernel(stream_stores=["dst"])(copy)
eager = sj.stream_kernel("void(float64[::1], float64[::1])", stream_stores=["dst"])(copy)
src = np.arange(10.0)
dst = np.zeros(10)
kernel(dst, src)
found["kernel"] = [kernel is copy, eager is copy, dst.tolist() == src.tolist(), str(kernel.stream_report()),
                   kernel.above_threshold(dst, src), sorted(kernel.stream_result().streamed_stores),
                   sorted(map(str, kernel.inspect_asm())), sorted(map(str, kernel.inspect_llvm())),
                   kernel.stream_calls(), kernel.stream_fallbacks()]
g = np.random.default_rng(0).random((5, 7))
for name, options in (("stencil", {}), ("stencil-cval", {"cval": -1.0})):
    st = sj.stencil(**options)(average)
    found[name] = [st(g).tolist(), str(st.stream_report())]
out = np.full_like(g, 9.0)
sj.stencil(average)(g, out=out)
found["stencil-out"] = out.tolist()
big = np.arange(1 << 16, dtype=np.float32)
copied = np.zeros_like(big)
sj.copyto(copied, big)
words = sj.memcpy(np.zeros(4, np.uint32), np.arange(16, dtype=np.uint8))
found["dropins"] = [copied.tolist() == big.tolist(), words.tolist()]
print(json.dumps(found))
'''


def _run(disable):
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          env=checkout_env(NUMBA_DISABLE_JIT=disable, STREAMJIT_COPY_THRESHOLD="0"))
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_kernels_run_as_python_and_say_so():
    off, on = _run("0"), _run("1")
    assert on["kernel"] == [True, True, True, "NUMBA_DISABLE_JIT=1: copy runs as Python; nothing is compiled, "
                                              "so nothing streams", False, [], [], [],
                                              {"streamed": 0, "below_threshold": 0, "after_check": 0, "plain": 0,
                                               "staged": 0, "unprefetched": 0, "jit_disabled": True},
                                              {"bounds": 0, "alignment": 0, "contiguous": 0, "page_alias": 0,
                                               "operands": 0, "jit_disabled": True}]
    assert off["kernel"][:3] == [False, False, True]  # the control: compiled, the same result
    assert len(off["kernel"][-4]) == len(off["kernel"][-3]) == 1  # (a dict keyed by the compiled signature)
    assert sum(off["kernel"][-2].values()) == 1         # (counted when compiled)
    for name in ("stencil", "stencil-cval", "stencil-out"):
        assert on[name] == off[name] if name == "stencil-out" else on[name][0] == off[name][0]
    assert on["stencil"][1] == "NUMBA_DISABLE_JIT=1: stencil average runs as Python; nothing is compiled, so " \
                               "nothing streams"
    assert on["dropins"] == off["dropins"] == [True, [0x03020100, 0x07060504, 0x0b0a0908, 0x0f0e0d0c]]


CHECKS = r'''
import json, warnings, streamjit as sj
def f(out, a):
    out[0] = a[0]
found = []
for options in (dict(stream_stores=["nope"]), dict(stream_loads=["a", "b"]), dict(threshold=-1), dict(foo=1),
                dict(prefetch_hint="t9"), dict(nopython=False), dict(pipeline_stages=2), dict(stream_stores=["out"])):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            sj.stream_kernel(**options)(f)
        found.append("accepted")
    except Exception as exc:
        found.append(f"{type(exc).__name__}: {exc}")
print(json.dumps(found))
'''


def test_options_are_checked_as_with_jit_on():
    found = {}
    for disable in ("0", "1"):
        done = subprocess.run([sys.executable, "-c", CHECKS], capture_output=True, text=True,
                              env=checkout_env(NUMBA_DISABLE_JIT=disable))
        assert done.returncode == 0, done.stderr[-3000:]
        found[disable] = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["1"] == found["0"]
    assert found["1"][-1] == "accepted" and all(f.startswith("StreamConfigError") for f in found["1"][:-1])
