"""streamjit on Dask arrays: stencils through map_overlap and elementwise
kernels through map_blocks equal the NumPy results on odd chunkings, also
on a real multi-process distributed cluster."""

import subprocess
import sys

import numba
import numpy as np
import pytest

import kernels as K
import stencil_kernels as S
import streamjit as sj
from helpers import random_array

da = pytest.importorskip("dask.array")   # the optional extra; CI installs it
from streamjit import dask as sj_dask  # noqa: E402
from streamjit.dask import elementwise  # noqa: E402

rng = np.random.default_rng(0)
G1 = random_array(rng, 10007, np.float64)
G2 = random_array(rng, (1000, 1000), np.float64)
G3 = random_array(rng, (40, 50, 60), np.float32)

STENCIL_CASES = [
    ("1-D", S.avg3, (G1,), (1001,), {}),
    ("2-D", S.jacobi, (G2,), (333, 250), {}),
    ("2-D cval", S.jacobi, (G2,), (333, 250), {"cval": 4.0}),
    ("2-D asymmetric", S.asymmetric, (G2,), (333, 250), {}),
    ("2-D two inputs", S.two_inputs, (G2, G2 * 2), (333, 250), {}),
    ("3-D", S.laplace3d, (G3,), (13, 17, 19), {}),
    ("standard indexing", S.weighted, (G1, np.array([1.0, -2.0, 1.0])), (999,), {"standard_indexing": ("w",)}),
]


@pytest.mark.parametrize("name, kernel, args, chunks, options", STENCIL_CASES, ids=[c[0] for c in STENCIL_CASES])
def test_stencil_on_dask_equals_numpy(name, kernel, args, chunks, options):
    lazy = [da.from_array(a, chunks=chunks) if a.shape == args[0].shape else a for a in args]
    result = sj.stencil(kernel, **options)(*lazy)
    # (dask may merge a last chunk thinner than the overlap into its neighbour)
    assert isinstance(result, da.Array) and result.shape == args[0].shape
    np.testing.assert_array_equal(result.compute(), numba.stencil(kernel, **options)(*args))


def test_elementwise_equals_numpy():
    a, b = da.from_array(G2, chunks=(333, 250)), da.from_array(G2.T.copy(), chunks=(333, 250))
    result = elementwise(K.add2d, a, b)
    assert result.chunks == a.chunks and result.dtype == np.float64
    np.testing.assert_array_equal(result.compute(), G2 + 2 * G2.T)
    as_float32 = elementwise(K.add2d, a, b, dtype=np.float32).compute()
    assert as_float32.dtype == np.float32


def test_mismatched_chunks_are_a_clear_error():
    a, b = da.from_array(G2, chunks=(333, 250)), da.from_array(G2, chunks=(500, 500))
    with pytest.raises(ValueError, match=r"elementwise\(add2d\): 'b' has chunks .* but 'a' has"):
        elementwise(K.add2d, a, b)
    with pytest.raises(ValueError, match="stencil two_inputs: 'b' has chunks"):
        sj.stencil(S.two_inputs)(a, b)
    with pytest.raises(TypeError, match="as dask arrays"):
        elementwise(K.add2d, a, G2)


def test_on_a_distributed_cluster_of_processes():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  host="127.0.0.1") as cluster, distributed.Client(cluster) as client:
        a = da.from_array(G2, chunks=(333, 250))
        stencil_result = sj.stencil(S.jacobi, cval=1.0)(a).compute(scheduler=client.get)
        np.testing.assert_array_equal(stencil_result, numba.stencil(S.jacobi, cval=1.0)(G2))
        summed = elementwise(K.add2d, a, a).compute(scheduler=client.get)
        np.testing.assert_array_equal(summed, 3 * G2)
        assert len(client.scheduler_info()["workers"]) == 2
        # 16 tasks per kernel, but each worker unpickled (and compiled) each kernel once
        assert set(client.run(lambda: len(sj_dask._KERNELS)).values()) <= {1, 2}


def test_tasks_share_one_unpickled_stencil_per_process(monkeypatch):
    monkeypatch.setattr(sj_dask, "_KERNELS", {})
    stencil = sj.stencil(S.jacobi)
    payload = sj_dask._shared(stencil)
    assert sj_dask._kernel(payload) is stencil           # the process that built the graph keeps its own
    assert sj_dask._kernel(sj_dask._shared(sj.stencil(S.jacobi))) is stencil     # and an equal one is that one
    monkeypatch.setattr(sj_dask, "_KERNELS", {})         # a worker: every task brings its own copy of the bytes
    first, second = sj_dask._kernel(bytes(bytearray(payload))), sj_dask._kernel(bytes(bytearray(payload)))
    assert first is second and first is not stencil and first.py_func is stencil.py_func


def test_dask_chunks_stream_only_when_asked():
    default, streamed = sj.stencil(S.jacobi, cval=1.0), sj.stencil(S.jacobi, threshold=0)
    plain = sj_dask.for_dask(default)
    assert plain.options == {"cval": 1.0, "stream_stores": False} and plain.py_func is default.py_func
    assert sj_dask.for_dask(streamed) is streamed
    assert sj_dask.for_dask(sj.stencil(S.jacobi, stream_stores=True)).options["stream_stores"] is True


def test_importing_streamjit_does_not_import_dask():
    code = "import sys, streamjit; print('dask' in sys.modules, 'distributed' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["False", "False"], out.stderr
