"""streamjit.copyto / memcpy against NumPy: the same results and the same
exceptions, on the streamed path and on the plain one."""

import os

import numba
import numpy as np
import pytest

import streamjit as sj
from streamjit.dropins import copy as dropins
from helpers import random_array, staged_profile


@pytest.fixture(params=["auto", "always"])
def copy_kernel(request, monkeypatch):
    """Run each test with the drop-in's own threshold (these small arrays
    take NumPy's path) and with a threshold of 0 (every fast-path copy
    streams)."""
    if request.param == "always":
        monkeypatch.setattr(dropins, "STREAM_BYTES", 0)
    return request.param


def outcome(copy, dst, src, **kwargs):
    try:
        copy(dst, src, **kwargs)
        return "ok", dst.copy()
    except Exception as exc:
        return type(exc), str(exc)


def same_as_numpy(make_dst, src, **kwargs):
    expected = outcome(np.copyto, make_dst(), src, **kwargs)
    got = outcome(sj.copyto, make_dst(), src, **kwargs)
    assert got[0] == expected[0]
    if expected[0] == "ok":
        np.testing.assert_array_equal(got[1], expected[1])
        assert got[1].dtype == expected[1].dtype
    else:
        assert got[1] == expected[1]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.uint16, np.int64, np.complex128, np.bool_])
@pytest.mark.parametrize("shape", [(0,), (1,), (17,), (1001,), (3, 0), (7, 13), (2, 3, 33), ()])
def test_same_shape_and_dtype(copy_kernel, dtype, shape):
    src = random_array(np.random.default_rng(0), shape, dtype)
    same_as_numpy(lambda: np.zeros(shape, dtype), src)


@pytest.mark.parametrize("dtype", [np.bool_, np.float32, np.float64, np.complex64, np.complex128, np.int16])
def test_bytes_are_copied_as_numpy_copies_them(copy_kernel, dtype):
    """Any bytes, whatever they mean as the dtype: a uint8 buffer viewed as
    bool (bytes other than 0 and 1), NaNs with payloads."""
    raw = np.random.default_rng(2).integers(0, 256, 1001 * np.dtype(dtype).itemsize, dtype=np.uint8)
    src = raw.view(dtype)
    want, got = np.zeros_like(src), np.zeros_like(src)
    np.copyto(want, src)
    sj.copyto(got, src)
    assert got.tobytes() == want.tobytes() == src.tobytes()


@pytest.mark.parametrize("case", [
    "broadcast", "cast-same-kind", "cast-refused", "cast-unsafe", "where", "non-contiguous",
    "fortran", "read-only", "list-source", "scalar-source", "wrong-shape", "byteswapped"])
def test_numpy_semantics_elsewhere(copy_kernel, case):
    rng = np.random.default_rng(1)
    f64 = random_array(rng, (4, 5), np.float64)
    cases = {
        "broadcast": (lambda: np.zeros((4, 5)), f64[0], {}),
        "cast-same-kind": (lambda: np.zeros((4, 5), np.float32), f64, {}),
        "cast-refused": (lambda: np.zeros((4, 5), np.int32), f64, {}),
        "cast-unsafe": (lambda: np.zeros((4, 5), np.int32), f64, {"casting": "unsafe"}),
        "where": (lambda: np.zeros((4, 5)), f64, {"where": f64 > 0}),
        "non-contiguous": (lambda: np.zeros((4, 10))[:, ::2], f64, {}),
        "fortran": (lambda: np.zeros((4, 5), order="F"), f64, {}),
        "read-only": (lambda: np.zeros((4, 5)).view(), f64, {}),
        "list-source": (lambda: np.zeros(3), [1.0, 2.0, 3.0], {}),
        "scalar-source": (lambda: np.zeros((4, 5)), 2.5, {}),
        "wrong-shape": (lambda: np.zeros((4, 5)), np.zeros((5, 4)), {}),
        "byteswapped": (lambda: np.zeros(20, ">f8"), f64.reshape(-1).astype(">f8"), {}),
    }
    make_dst, src, kwargs = cases[case]
    if case == "read-only":
        def make_dst():
            a = np.zeros((4, 5))
            a.flags.writeable = False
            return a
    same_as_numpy(make_dst, src, **kwargs)


@pytest.mark.parametrize("shift", [1, 7, 64, 999])
def test_overlapping_arrays_copy_like_numpy(copy_kernel, shift):
    base = random_array(np.random.default_rng(2), 5000, np.float32)
    for dst_slice, src_slice in ((slice(shift, None), slice(None, -shift)), (slice(None, -shift), slice(shift, None))):
        expected, got = base.copy(), base.copy()
        np.copyto(expected[dst_slice], expected[src_slice])
        sj.copyto(got[dst_slice], got[src_slice])
        np.testing.assert_array_equal(got, expected)


def test_zero_dimensional(copy_kernel):
    dst, src = np.array(0.0), np.array(3.5)
    sj.copyto(dst, src)
    assert dst == 3.5


def test_memcpy_between_dtypes(copy_kernel):
    src = np.arange(100, dtype=np.int64)
    dst = np.zeros(800, np.uint8)
    assert sj.memcpy(dst, src) is dst
    np.testing.assert_array_equal(dst.view(np.int64), src)
    f32 = np.zeros((10, 20), np.float32)
    sj.memcpy(f32, src)
    assert f32.tobytes() == src.tobytes()


def test_memcpy_overlap_is_memmove(copy_kernel):
    raw = np.arange(4000, dtype=np.uint8) % 251
    for a, b in ((slice(3, 2003), slice(0, 2000)), (slice(0, 2000), slice(3, 2003))):
        expected = bytearray(raw.tobytes())
        expected[a] = bytes(expected[b])      # memmove semantics
        got = raw.copy()
        sj.memcpy(got[a], got[b])
        assert got.tobytes() == bytes(expected)


@pytest.mark.parametrize("dst, src, match", [
    (np.zeros(10), np.zeros(11), "dst has 80 bytes but src has 88"),
    (np.zeros((4, 4))[:, ::2], np.zeros(8), "dst must be a C-contiguous"),
    (np.zeros(8), [1.0] * 8, "src must be a C-contiguous"),
])
def test_memcpy_errors(dst, src, match):
    with pytest.raises(ValueError, match=match):
        sj.memcpy(dst, src)


def test_memcpy_read_only_destination():
    dst = np.zeros(8)
    dst.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        sj.memcpy(dst, np.ones(8))


def test_large_copies_use_the_threads(monkeypatch):
    monkeypatch.setattr(dropins, "PARALLEL_BYTES", 1024)
    monkeypatch.setattr(dropins, "STREAM_BYTES", 1024)
    src = random_array(np.random.default_rng(5), 600_001, np.float32)
    dst = np.zeros(600_002, np.float32)[1:]
    sj.copyto(dst, src)
    np.testing.assert_array_equal(dst, src)
    overlapping = np.arange(100_000, dtype=np.float64)
    expected = overlapping.copy()
    np.copyto(expected[1:], expected[:-1])
    sj.copyto(overlapping[1:], overlapping[:-1])        # overlap: never the parallel kernel
    np.testing.assert_array_equal(overlapping, expected)


@pytest.fixture
def streamed_calls(monkeypatch):
    """Sizes (bytes) of the copies that took the streamed path."""
    calls = []
    original = dropins.stream_copy

    def spy(dst, src):
        calls.append(dst.nbytes)
        original(dst, src)

    monkeypatch.setattr(dropins, "stream_copy", spy)
    return calls


def test_only_copies_above_the_threshold_stream_and_the_largest_need_threads(monkeypatch, streamed_calls):
    monkeypatch.setattr(dropins, "STREAM_BYTES", 4096)
    monkeypatch.setattr(dropins, "PARALLEL_BYTES", 20001)
    threads = numba.get_num_threads()
    numba.set_num_threads(1)                             # one thread: the largest go back to NumPy
    try:
        for n in (1, 1024, 1025, 5000, 5001):            # float32: 1024 elements = 4096 bytes
            src = random_array(np.random.default_rng(n), n, np.float32)
            dst = np.zeros(n + 1, np.float32)[1:]
            sj.copyto(dst, src)
            np.testing.assert_array_equal(dst, src)
    finally:
        numba.set_num_threads(threads)
    sj.memcpy(np.zeros(5000, np.uint8), np.ones(5000, np.uint8))
    sj.copyto(np.zeros(5000), np.ones(5000), where=np.ones(5000, bool))       # where=: NumPy's path at any size
    sj.copyto(np.zeros(5000), np.ones(5000, np.float32))                      # a cast: NumPy's path
    assert streamed_calls == [4100, 20000, 5000]


def test_below_the_threshold_runs_numpys_own_function():
    # np.copyto checks for __array_function__ overrides, then calls this
    assert dropins._numpy_copyto is np.copyto._implementation


def test_streamed_path_is_the_streamed_kernel():
    dropins.load_copy_kernel()
    src = random_array(np.random.default_rng(3), 4096, np.float32)
    dst = np.zeros(4097, np.float32)[1:]
    dropins.stream_copy(dst, src)
    np.testing.assert_array_equal(dst, src)
    report = dropins._copy_elements.stream_report()
    # the forward and the backward (overlapping) loop each stream where the
    # profile allows, each with its one fence after it
    assert report.machine_nt_vector_stores > 0 and report.fences == report.peeled_loops >= 1


def test_one_kernel_signature_for_every_dtype():
    """The second large copy of a process stalled 400 ms compiling
    its dtype's kernel. Every dtype now copies through the one uint8
    signature, loaded from the disk cache (or compiled) as streamjit is imported."""
    dropins.load_copy_kernel()
    (only,) = dropins._copy_elements.signatures
    assert only == dropins._copy_elements.nopython_signatures[0].args
    for dtype in (np.float32, np.float64, np.complex128, np.bool_, np.int16):
        src = random_array(np.random.default_rng(1), 3001, dtype)
        dst = np.zeros(3002, dtype)[1:]
        dropins.stream_copy(dst, src)
        np.testing.assert_array_equal(dst, src)
    assert dropins._copy_elements.signatures == [only]
    assert dropins._copy_elements._cache.__class__.__name__ == "StreamFunctionCache"   # cache=True


def test_copies_before_the_kernel_is_loaded_are_numpys(monkeypatch):
    """The first large copy of a process took 0.3-0.86 s, loading the
    kernel (Numba's first use of its CPU target). It loads in a thread the
    first large copy starts; copies until it is there run np.copyto, never
    wait."""
    monkeypatch.setattr(dropins, "_kernel_loaded", __import__("threading").Event())   # still loading
    monkeypatch.setattr(dropins, "STREAM_BYTES", 0)
    called, loads = [], []
    monkeypatch.setattr(dropins, "_copy_entry", lambda d, s: called.append(d))
    monkeypatch.setattr(dropins, "load_copy_kernel_in_background", lambda: loads.append(1))
    src = random_array(np.random.default_rng(4), 5000, np.float64)
    dst = np.zeros(5001)[1:]
    sj.copyto(dst, src)
    np.testing.assert_array_equal(dst, src)
    assert called == [] and loads == [1]          # NumPy's copy; the load starts


def run_fresh(script):
    import subprocess
    import sys
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)


def test_the_import_starts_nothing_and_the_first_large_copy_loads_the_kernel():
    """``import streamjit`` starts no thread and no process (it used to
    start a thread loading copyto's kernel, which ran glibc's loader). The
    first copy above the threshold starts the load and is NumPy's; later
    ones stream. `preload` loads it at once."""
    done = run_fresh("import os, subprocess, sys, threading\n"
                     "def refuse(*args, **kwargs):\n"
                     "    raise AssertionError('a process was started')\n"
                     "subprocess.Popen.__init__ = refuse\n"
                     "os.fork = os.posix_spawn = refuse\n"
                     "import numpy as np, streamjit as sj\n"
                     "from streamjit.dropins import copy as dropins\n"
                     "print(threading.active_count(), dropins._loader)\n"
                     "src = np.random.default_rng(0).random(1 << 20)\n"
                     "dst = np.zeros_like(src)\n"
                     "dropins.STREAM_BYTES = 0\n"
                     "sj.copyto(dst, src)\n"
                     "assert np.array_equal(dst, src)\n"
                     "assert dropins._kernel_loaded.wait(240)\n"
                     "print(dropins._copy_elements.signatures)\n")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "1 None" and "uint8" in lines[1]
    done = run_fresh("import streamjit as sj, threading\n"
                     "from streamjit.dropins import copy as dropins\n"
                     "sj.preload()\n"
                     "print(dropins._kernel_loaded.is_set(), dropins._copy_elements.signatures)\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("True") and "uint8" in done.stdout


def test_the_bands_are_read_beside_the_kernels_load(monkeypatch):
    """Reading where copies go on threads runs glibc's loader in a process,
    about as long as the kernel's load from the cache: one after the
    other, they finished after the first 256 MiB copy, and the second copy
    did not stream. The band is read on a thread of its own while the
    kernel loads (here its reader waits for the load to start)."""
    import threading

    compiling, waited = threading.Event(), []
    compile_kernel = dropins._copy_elements.compile

    def compile_noting_it(signature):
        compiling.set()
        return compile_kernel(signature)

    monkeypatch.setattr(dropins, "_read_bands_ahead", lambda: waited.append(compiling.wait(20)))
    monkeypatch.setattr(dropins._copy_elements, "compile", compile_noting_it)
    monkeypatch.setattr(dropins, "_kernel_loaded", threading.Event())
    monkeypatch.setattr(dropins, "_copy_entry", None)
    dropins.load_copy_kernel()
    assert waited == [True] and dropins._kernel_loaded.is_set() and dropins._copy_entry is not None


def test_the_cached_kernel_loads_without_numbas_registries():
    """Loading it through Numba's cache imported every registry of Numba's
    CPU target (and SciPy): 0.56 s, which the first large copies of a
    process paid. It loads without them; what compiles later
    in the process refreshes them as always. Nor does the load or a
    streamed copy compile Numba's NRT module (an LLVM compile, 18-21 ms)
    or import np.ma (7 ms, for Numba's typeof): they took the kernel's
    load past the first 256 MiB copy, so the second did not stream."""
    script = ("import sys, numpy as np, numba, streamjit as sj\n"
              "from streamjit.dropins import copy as dropins\n"
              "sj.preload()\n"
              "print(sum(dropins._copy_elements.stats.cache_hits.values()), 'numba.np.linalg' in sys.modules)\n"
              "src = np.random.default_rng(0).random(100_003)\n"
              "dst = np.zeros_like(src)\n"
              "dropins.stream_copy(dst, src)\n"
              "assert np.array_equal(dst, src)\n"
              "from numba.core.runtime import rtsys\n"
              "try:\n"
              "    rtsys.library\n"
              "except RuntimeError:  # (not initialized)\n"
              "    print('no-NRT-module')\n"
              "print('numpy.ma' in sys.modules)\n"
              "assert np.array_equal(numba.njit(lambda a: np.cumsum(np.sort(a)))(src), np.cumsum(np.sort(src)))\n")
    run_fresh(script)  # (writes the cache entry where there was none)
    done = run_fresh(script)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", "False", "no-NRT-module", "False"]


def test_a_read_only_source_copies_through_the_one_signature(monkeypatch):
    """The dispatcher typed a read-only source as another signature and
    compiled it, in the copy (0.92 s for 32 MiB, Intel Xeon VM). Copies
    call the kernel's entry point, whose one signature takes it."""
    monkeypatch.setattr(dropins, "STREAM_BYTES", 0)
    dropins.load_copy_kernel()
    signatures = list(dropins._copy_elements.signatures)
    src = random_array(np.random.default_rng(6), 4099, np.float32)
    src.flags.writeable = False
    dst = np.zeros(4100, np.float32)[1:]
    sj.copyto(dst, src)
    np.testing.assert_array_equal(dst, src)
    assert dropins._copy_elements.signatures == signatures


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_a_fork_while_the_kernel_loads_can_compile():
    """A child forked while the loading thread held Numba's compiler lock
    would hold it forever: the fork waits for the load (a bounded wait).
    Here the load holds the lock until the fork has begun (a hook run
    before streamjit's own), and two seconds more: without that wait the
    child's compile blocks, and its alarm ends it."""
    done = run_fresh("import os, signal, threading, time, numpy as np, streamjit as sj\n"
                     "from numba.core.compiler_lock import global_compiler_lock\n"
                     "from streamjit.dropins import copy as dropins\n"
                     "holding, forking = threading.Event(), threading.Event()\n"
                     "def read_bands_holding_the_lock():\n"
                     "    with global_compiler_lock:\n"
                     "        holding.set()\n"
                     "        forking.wait()\n"
                     "        time.sleep(2)\n"
                     "dropins._read_bands_ahead = read_bands_holding_the_lock\n"
                     "os.register_at_fork(before=forking.set)  # (runs before the hooks registered earlier)\n"
                     "dropins.load_copy_kernel_in_background()\n"
                     "assert holding.wait(60)\n"
                     "def copy(d, s):\n"
                     "    for i in range(d.shape[0]):\n"
                     "        d[i] = s[i]\n"
                     "pid = os.fork()\n"
                     "if pid == 0:\n"
                     "    signal.alarm(60)\n"
                     "    d = np.zeros(3)\n"
                     "    sj.stream_kernel(copy, stream_stores=['d'])(d, np.ones(3))\n"
                     "    os._exit(0 if d.sum() == 3 else 1)\n"
                     "status = os.waitpid(pid, 0)[1]\n"
                     "assert status == 0, 'the child: ' + ('killed by its alarm' if status == signal.SIGALRM else str(status))\n")
    assert done.returncode == 0, done.stderr


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
@pytest.mark.parametrize("how", ["os.fork", "multiprocessing fork pool"])
def test_a_forked_child_copies_on_threads_after_its_parent_did(how):
    """A child inherits the parent's copy thread pool but not its threads:
    its threaded copy waited forever for workers that do not exist there."""
    import subprocess
    import sys

    child = {"os.fork": ("pid = os.fork()\n"
                         "if pid == 0:\n"
                         "    os._exit(0 if copied() else 3)\n"
                         "assert os.waitpid(pid, 0)[1] == 0\n"),
             "multiprocessing fork pool": ("import multiprocessing\n"
                                           "with multiprocessing.get_context('fork').Pool(1) as pool:\n"
                                           "    assert pool.apply_async(copied).get(60)\n")}[how]
    script = ("import os, numpy as np, streamjit as sj\n"
              "from streamjit.dropins import copy as dropins\n"
              "sj.preload()\n"
              "a = np.random.default_rng(0).random(3 << 20)\n"
              "def copied():\n"
              "    c = np.empty_like(a)\n"
              "    sj.copyto(c, a)\n"
              "    return bool(np.array_equal(a, c))\n"
              "assert copied() and dropins.PARALLEL_BYTES == 1 << 20\n" + child)
    env = dict(os.environ, STREAMJIT_COPY_THRESHOLD="0", STREAMJIT_PARALLEL_BYTES=str(1 << 20), NUMBA_NUM_THREADS="2")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("env_var", ["STREAMJIT_PARALLEL_BYTES", "STREAMJIT_COPY_THRESHOLD", "STREAMJIT_THRESHOLD"])
def test_bad_environment_variables_never_break_the_import(env_var):
    """`STREAMJIT_PARALLEL_BYTES=abc` made `import
    streamjit` raise a bare ValueError. Now the import works, and the first
    use of the variable raises naming it."""
    import subprocess
    import sys

    script = ("import numpy as np, streamjit as sj\n"
              "def copy(dst, src):\n"
              "    for i in range(src.shape[0]):\n"
              "        dst[i] = src[i]\n"
              "k = sj.stream_kernel(copy, stream_stores=['dst'], threshold='auto')\n"
              "use = {'STREAMJIT_THRESHOLD': lambda: k(np.zeros(3), np.ones(3)), 'STREAMJIT_PARALLEL_BYTES': "
              "lambda: (sj.preload(), sj.copyto(np.zeros(3), np.ones(3)))}\n"
              f"use.get({env_var!r}, lambda: sj.copyto(np.zeros(3), np.ones(3)))()\n")
    # (STREAMJIT_PARALLEL_BYTES is read by the thread loading the kernel, and
    # raised by the first copy above the threshold after it)
    done = subprocess.run([sys.executable, "-c", script], env={**os.environ, "STREAMJIT_COPY_THRESHOLD": "0",
                                                                env_var: "abc"},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert f"environment variable {env_var} must be a number of bytes" in done.stderr
    assert 'File "<string>", line 1,' not in done.stderr and 'File "<string>", line 7,' in done.stderr  # not the import


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("n", [1, 7, 4096, 10_001])
def test_copies_in_blocks_taken_as_threads_come_free(monkeypatch, threads, n):
    """The threaded copy waited for its slowest thread
    (0.90x np.copyto with one core busy); now the threads take small blocks
    from a shared counter. Every element is copied once, whatever the block
    size, the thread count and the length (blocks of 1 KiB here, of the
    kernel's bytes)."""
    monkeypatch.setattr(dropins, "PARALLEL_BLOCK_BYTES", 1024)
    src = random_array(np.random.default_rng(n), n, np.float64)
    dst = np.full(n + 1, np.nan)[1:]
    taken = []
    original = dropins.copy_kernel()

    def spy(d, s):
        taken.append(d.shape[0])
        original(d, s)

    monkeypatch.setattr(dropins, "_copy_entry", spy)
    dropins.copy_in_blocks(dst, src, threads)
    np.testing.assert_array_equal(dst, src)
    assert sorted(taken) == sorted([1024] * (8 * n // 1024) + ([8 * n % 1024] if 8 * n % 1024 else []))


def test_large_copies_take_the_way_last_measured_faster(monkeypatch):
    """From PARALLEL_BYTES on, copies take whichever of
    the threads and np.copyto was last measured faster, and the other one
    every RECHECK_EVERY-th copy, so a busy core never leaves them slower
    than np.copyto for long. A fresh process starts with the
    threads (the profile says they pay from PARALLEL_BYTES on), not with
    RECHECK_EVERY copies of measuring. The clock here is fake: each way
    costs what the test says."""
    from types import SimpleNamespace

    clock, cost, ways = [0.0], {"threads": 2.0, "np.copyto": 1.0}, []

    def way(name):
        def run(*args):
            ways.append(name)
            clock[0] += cost[name]
        return run

    monkeypatch.setattr(dropins, "time", SimpleNamespace(perf_counter=lambda: clock[0]))
    monkeypatch.setattr(dropins, "copy_in_blocks", way("threads"))
    monkeypatch.setattr(dropins, "_numpy_copyto", way("np.copyto"))
    seconds_per_byte, large_copies = dropins.fresh_measurements()
    monkeypatch.setattr(dropins, "_large_copies", large_copies)
    monkeypatch.setattr(dropins, "_seconds_per_byte", seconds_per_byte)
    a = np.zeros(1000)
    every = dropins.RECHECK_EVERY
    for _ in range(2 * every):
        dropins._large_copy(a, a, 2)
    # the threads first, np.copyto measured (faster) on the RECHECK_EVERY-th, then one recheck of the threads
    assert ways == ["threads"] * (every - 1) + ["np.copyto"] * every + ["threads"]
    cost["threads"] = 0.5                                  # the load went away: the next recheck finds it
    ways.clear()
    for _ in range(2 * every):
        dropins._large_copy(a, a, 2)
    assert ways == ["np.copyto"] * (every - 1) + ["threads"] * every + ["np.copyto"]

def sweep(A, B):
    B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])


# (one build of each for every shift: the arrays' types are the same)
with staged_profile():  # (the 4K-aliasing check of the CPUs where trailing sources stall streamed stores)
    SWEEP, SWEEP_NJIT = sj.stream_kernel(stream_stores=["B"], threshold=None)(sweep), numba.njit(sweep)


@pytest.mark.parametrize("shift", [0, 1, 7, 255])
def test_empty_like_places_a_second_buffer_where_a_sweep_streams(shift):
    """A second buffer at the same offset in its page as ``A`` (as
    ``A.copy()`` makes large ones) makes the sweep's loads of ``A[i, j - 1]``
    trail its stores by 8 bytes modulo 4 KiB: on CPUs where that stalls
    streamed stores the call runs staged, counted ``staged``.
    `sj.empty_like` places it apart, and the sweep streams directly."""
    rng = np.random.default_rng(shift)
    n = 128 * 129
    A = rng.random(n + 256)[shift:shift + n].reshape(128, 129)
    other = rng.random(n + 512)
    skip = (A.ctypes.data - other.ctypes.data) % 4096 // 8
    alike = other[skip:skip + n].reshape(128, 129)   # (at A's offset in its page)
    expected = A.copy()
    SWEEP_NJIT(A, expected)
    B = sj.empty_like(A)
    assert B.shape == A.shape and B.dtype == A.dtype and B.flags.c_contiguous
    B[...] = A
    kernel = SWEEP
    before = kernel.stream_calls()
    kernel(A, B)
    np.testing.assert_array_equal(B, expected)
    assert kernel.stream_calls()["streamed"] == before["streamed"] + 1 and kernel.stream_fallbacks()["page_alias"] == 0
    alike[...] = A
    kernel(A, alike)
    np.testing.assert_array_equal(alike, expected)
    assert kernel.stream_calls()["staged"] == before["staged"] + 1 and kernel.stream_fallbacks()["page_alias"] == 0
    assert f"{before['staged'] + 1} streamed through a staging buffer" in str(kernel.stream_report())


@pytest.mark.parametrize("casting", ["bogus", None, 3])
def test_a_bad_casting_raises_as_numpys_on_the_streamed_path(monkeypatch, casting):
    monkeypatch.setattr(dropins, "STREAM_BYTES", 0)
    monkeypatch.setattr(dropins, "_kernel_loaded", __import__("threading").Event())
    dropins._kernel_loaded.set()
    monkeypatch.setattr(dropins, "_copy_entry", lambda d, s: d.__setitem__(slice(None), s))
    src = np.random.default_rng(5).random(4096)
    expected = outcome(np.copyto, np.zeros(4096), src, casting=casting)
    assert expected[0] in (ValueError, TypeError)
    assert outcome(sj.copyto, np.zeros(4096), src, casting=casting) == expected


def test_the_drop_ins_names_read_at_their_path_from_before_the_folder():
    """``streamjit.dropins`` was copyto's module: its names still read there."""
    from streamjit import dropins

    assert dropins.copy_threads() == dropins.copy.copy_threads() >= 1
    assert dropins.PARALLEL_BYTES == dropins.copy.PARALLEL_BYTES
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        dropins.nothing_here
