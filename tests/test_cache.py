"""cache=True is forwarded to Numba: a second process loads the streamed
kernel from the on-disk cache and gets the same results."""

import os
import subprocess
import sys
import textwrap

KERNEL_MODULE = textwrap.dedent("""
    import numpy as np
    import streamjit as sj

    @sj.stream_kernel(stream_stores=["dst"], cache=True)
    def copy(dst, src):
        for i in range(src.shape[0]):
            dst[i] = src[i]

    src = np.random.default_rng(0).standard_normal(1001)
    dst = np.zeros(1002)
    copy(dst[1:], src)
    assert (dst[1:] == src).all() and dst[0] == 0
    hits = sum(copy.stats.cache_hits.values())
    try:
        copy.stream_report()
        reported = "report"
    except sj.StreamError as exc:
        reported = "cached" if "on-disk cache" in str(exc) else repr(exc)
    print(hits, reported)
""")


def test_second_process_loads_streamed_kernel_from_cache(tmp_path):
    (tmp_path / "cached_kernel.py").write_text(KERNEL_MODULE)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")]))

    def run():
        out = subprocess.run([sys.executable, "cached_kernel.py"], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        return out.stdout.split()

    assert run() == ["0", "report"]
    assert run() == ["1", "cached"]
