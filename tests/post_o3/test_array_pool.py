"""`post_o3/array_pool.py`: the large arrays a streamjit kernel allocates
reuse the blocks of freed ones (no fresh pages), through NRT's external
allocator, thread-safely, and never in `numba.njit` code compiled beside."""

import subprocess
import sys
import textwrap
import threading

import numba
import numpy as np
import pytest
from llvm_fixtures import X86, verified
from numba.core.runtime import rtsys

import streamjit as sj
from streamjit.post_o3 import array_pool, pool
from streamjit.llvm_text.module import Module

ALLOCATING = """
declare noalias ptr @NRT_MemInfo_alloc_aligned(i64, i32)

define ptr @kernel(i64 %n) {
entry:
  %a = tail call ptr @NRT_MemInfo_alloc_aligned(i64 %n, i32 32)
  ret ptr %a
}
"""
LARGE = (8 << 20) // 8  # float64 elements: 8 MiB, above POOLED_FROM_BYTES


@sj.stream_kernel(stream_stores=True)
def plus_one(a):
    return a + 1.0


@sj.stream_kernel(stream_stores=True, nogil=True)
def smoothed_sum(a):
    b = a.copy()
    b[1:] = 0.5 * (a[1:] + a[:-1])
    return b.sum()


def test_allocations_go_through_the_pool_once_defined():
    module = Module(ALLOCATING)
    assert array_pool.run(module, X86)
    text = str(module)
    assert f'call ptr @"{array_pool.POOLED}"(i64 %n, i32 32)' in text
    verified(text)
    # a module that links this one in brings the definitions along
    again = Module(text.replace(f'@"{array_pool.POOLED}"(i64 %n', "@NRT_MemInfo_alloc_aligned(i64 %n"))
    assert array_pool.run(again, X86)
    assert str(again).count(f'define linkonce_odr ptr @"{array_pool.POOLED}"') == 1
    verified(str(again))


def test_a_freed_array_gives_its_block_to_the_next_one():
    a = np.random.default_rng(1).random(LARGE)
    first = plus_one(a)
    np.testing.assert_array_equal(first, a + 1.0)
    assert first.ctypes.data % pool.DATA_ALIGN_BYTES == 0
    address = first.ctypes.data
    del first
    assert sj.memory_stats()["blocks"] >= 1
    second = plus_one(a * 2)
    assert second.ctypes.data == address  # the same memory, no fresh pages
    np.testing.assert_array_equal(second, a * 2 + 1.0)


def test_small_arrays_are_numbas():
    pool.release_memory()
    small = plus_one(np.ones(1000))
    del small
    assert sj.memory_stats()["blocks"] == 0


def test_njit_code_compiled_beside_never_uses_the_pool():
    a = np.random.default_rng(2).random(LARGE)
    plus_one(a)  # the streamjit kernel compiles first: Numba's allocator helper is shared
    njit_plus_one = numba.njit(lambda a: a + 1.0)
    pool.release_memory()
    pooled = plus_one(a)
    pooled_address = pooled.ctypes.data
    del pooled
    held = sj.memory_stats()
    plain = njit_plus_one(a)
    assert plain.ctypes.data != pooled_address
    del plain
    assert sj.memory_stats() == held


def test_nrt_counters_stay_balanced(allocation_stats):
    a = np.random.default_rng(3).random(LARGE)
    plus_one(a)
    before = rtsys.get_allocation_stats()
    for _ in range(3):
        result = plus_one(a)
        del result
    after = rtsys.get_allocation_stats()
    assert after.alloc - before.alloc == after.free - before.free > 0
    assert after.mi_alloc - before.mi_alloc == after.mi_free - before.mi_free > 0


def test_threads_allocating_at_once_get_their_own_blocks():
    arrays = [np.random.default_rng(k).random(LARGE + 8 * k) for k in range(4)]
    expected = [a[0] + (0.5 * (a[1:] + a[:-1])).sum() for a in arrays]
    smoothed_sum(arrays[0])
    failures = []

    def work(k):
        for _ in range(20):
            got = smoothed_sum(arrays[k])
            if not np.isclose(got, expected[k], rtol=1e-12):
                failures.append((k, got, expected[k]))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures
    state = sj.memory_stats()
    assert state["blocks"] <= pool.SLOTS and state["bytes"] <= state["cap_bytes"]


def test_release_memory_frees_what_the_pool_holds():
    result = plus_one(np.ones(LARGE))
    del result
    held = sj.memory_stats()["bytes"]
    assert held > 0
    assert pool.release_memory() == held
    assert sj.memory_stats()["blocks"] == sj.memory_stats()["bytes"] == 0


def _run(code, **env):
    import os
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=120)


def test_a_zero_cap_frees_every_block():
    done = _run("""
        import numpy as np, streamjit as sj
        kernel = sj.stream_kernel(stream_stores=True)(lambda a: a + 1.0)
        result = kernel(np.ones((8 << 20) // 8))
        del result
        print(sj.memory_stats())
    """, STREAMJIT_POOL_BYTES="0")
    assert done.returncode == 0, done.stderr
    assert "'blocks': 0, 'bytes': 0, 'cap_bytes': 0" in done.stdout


def test_cached_code_allocates_through_the_pool_in_a_new_process(tmp_path):
    (tmp_path / "kernels.py").write_text(textwrap.dedent("""
        import streamjit as sj

        @sj.stream_kernel(stream_stores=True, cache=True)
        def plus_one(a):
            return a + 1.0
    """))
    run = """
        import sys; sys.path.insert(0, %r)
        import numpy as np, streamjit as sj
        from kernels import plus_one
        a = np.arange((8 << 20) // 8, dtype=np.float64)
        result = plus_one(a)
        assert (result == a + 1.0).all()
        del result
        print(sj.memory_stats()["blocks"], plus_one.stats.cache_hits)
    """ % str(tmp_path)
    first, second = _run(run), _run(run)
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert first.stdout.split() == ["1", "Counter()"]
    assert second.stdout.split()[0] == "1" and "Counter()" not in second.stdout


def test_a_bad_pool_size_names_the_variable_not_the_cache(tmp_path):
    """A cached entry loaded where STREAMJIT_POOL_BYTES is not a number of
    bytes raises the variable's error, not a warning that the entry is
    unreadable followed by a recompile."""
    (tmp_path / "kernels.py").write_text(textwrap.dedent("""
        import streamjit as sj

        @sj.stream_kernel(stream_stores=True, cache=True)
        def plus_one(a):
            return a + 1.0
    """))
    run = """
        import sys, warnings; sys.path.insert(0, %r)
        import numpy as np, streamjit as sj
        from kernels import plus_one
        warnings.simplefilter("error", sj.StreamWarning)
        try:
            print(plus_one(np.ones((8 << 20) // 8))[0])
        except sj.StreamConfigError as exc:
            print(exc)
    """ % str(tmp_path)
    cache = str(tmp_path / "cache")
    filled = _run(run, NUMBA_CACHE_DIR=cache)
    assert filled.returncode == 0 and filled.stdout.split() == ["2.0"], filled.stderr
    bad = _run(run, NUMBA_CACHE_DIR=cache, STREAMJIT_POOL_BYTES="abc")
    assert bad.returncode == 0, bad.stderr
    assert bad.stdout.startswith("environment variable STREAMJIT_POOL_BYTES must be a number of bytes"), bad.stdout


@pytest.mark.parametrize("cgroup_file", pool.CGROUP_MEMORY_LIMITS)
def test_the_cap_honours_the_cgroup_memory_limit(monkeypatch, tmp_path, cgroup_file):
    """In a container the machine's memory is the host's: the cap is a
    quarter of the cgroup's limit (v2's memory.max, v1's
    memory.limit_in_bytes) where that is lower, and of the machine's where
    the limit says none."""
    import os
    monkeypatch.delenv(pool.ENV_VAR, raising=False)
    monkeypatch.setattr(pool, "shares_the_node", lambda: False)
    monkeypatch.setattr(os, "sysconf", lambda name: {"SC_PAGE_SIZE": 4096, "SC_PHYS_PAGES": (256 << 30) // 4096}[name])
    limit = tmp_path / os.path.basename(cgroup_file)
    monkeypatch.setattr(pool, "CGROUP_MEMORY_LIMITS", (str(tmp_path / "absent"), str(limit)))
    limit.write_text(f"{2 << 30}\n")
    assert pool.cap_bytes() == (2 << 30) // 4
    limit.write_text("max\n")
    assert pool.cap_bytes() == 8 << 30          # (a quarter of 256 GiB, at most 8 GiB)


def test_compiles_without_numpys_private_advice_getter(monkeypatch):
    """NumPy's ``_get_madvise_hugepage`` is private: without it, kernels
    that allocate still compile (their fresh blocks get no advice)."""
    multiarray = (getattr(np, "_core", None) or np.core).multiarray
    monkeypatch.delattr(multiarray, "_get_madvise_hugepage")
    kernel = sj.stream_kernel(stream_stores=True)(lambda a: a * 2.0)
    np.testing.assert_array_equal(kernel(np.ones(LARGE)), 2.0)
    assert not pool.numpy_advises_huge_pages()


def _vm_flags(address):
    """The VmFlags of the mapping holding ``address`` (/proc/self/smaps)."""
    with open("/proc/self/smaps") as smaps:
        inside = False
        for line in smaps:
            head = line.split()[0]
            if "-" in head and not head.endswith(":"):
                low, high = (int(x, 16) for x in head.split("-"))
                inside = low <= address < high
            elif inside and head == "VmFlags:":
                return line.split()[1:]
    return None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's huge-page advice")
@pytest.mark.parametrize("numpy_advice", ["1", "0"])
def test_fresh_blocks_get_numpys_huge_page_advice_where_numpy_gives_it(numpy_advice):
    done = _run("""
        import numpy as np, streamjit as sj
        from streamjit.post_o3 import pool
        from test_array_pool import _vm_flags
        kernel = sj.stream_kernel(stream_stores=True)(lambda a: a + 1.0)
        result = kernel(np.ones((64 << 20) // 8))
        print(pool.numpy_advises_huge_pages(), "hg" in _vm_flags(result.ctypes.data + (1 << 20)))
    """, NUMPY_MADVISE_HUGEPAGE=numpy_advice, PYTHONPATH=str(__import__("pathlib").Path(__file__).parent))
    assert done.returncode == 0, done.stderr
    advised = numpy_advice == "1" and "True" in done.stdout.split()[0]
    assert done.stdout.split() == (["True", "True"] if advised else ["False", "False"])


def test_under_debug_info_the_kernel_pools_and_njit_beside_does_not():
    """Where Numba's allocator helper is called, not inlined (debug info),
    the kernel's pooled copy of it is its own, not Numba's shared one."""
    done = _run("""
        import numba, numpy as np, streamjit as sj
        kernel = sj.stream_kernel(stream_stores=True)(lambda a: a + 1.0)
        plain = numba.njit(lambda a: a + 1.0)
        a = np.ones((8 << 20) // 8)
        first = kernel(a); address = first.ctypes.data; del first
        held = sj.memory_stats()
        other = plain(a)
        print(held["blocks"], sj.memory_stats() == held, other.ctypes.data != address,
              kernel(a).ctypes.data == address)
    """, NUMBA_DEBUGINFO="1")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", "True", "True", "True"]


@pytest.mark.parametrize("env", [{}, {"NUMBA_DISABLE_JIT": "1"}])
def test_release_memory_works_before_any_compile(env):
    done = _run("""
        import streamjit as sj
        print(sj.release_memory())
    """, **env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0"]


def test_pooled_arrays_released_after_the_pool_module_is_gone_touch_no_freed_memory():
    """Interpreter teardown clears modules' globals, the pool's among them,
    before those of a module imported earlier that keeps pooled arrays: the
    pool's state is memory never freed, so releasing them then writes
    nothing into memory Python has reused (canaries of the state's size,
    whose words say "nothing held, under the cap, free slots": a release
    into a state the module owned would claim a slot in one)."""
    done = _run("""
        import gc, numpy as np, streamjit as sj
        from streamjit.post_o3 import pool
        kernel = sj.stream_kernel(stream_stores=True)(lambda a: a + 1.0)
        kept = kernel(np.ones((8 << 20) // 8))
        words = pool.STATE_WORDS
        pool.__dict__.clear()  # what teardown does to the module's globals
        gc.collect()
        pattern = bytes(8) + (1 << 62).to_bytes(8, "little") + bytes(8 * words - 17)
        canaries = [bytearray(pattern) for _ in range(200)]
        del kept  # its block goes back to the pool
        print(all(c == pattern for c in canaries))
    """, PYTHONMALLOC="debug")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True"]


def test_a_module_imported_first_may_keep_pooled_arrays_until_exit(tmp_path):
    (tmp_path / "holder.py").write_text(textwrap.dedent("""
        import numpy as np, streamjit as sj
        kernel = sj.stream_kernel(stream_stores=True)(lambda a: a + 1.0)
        KEEP = [kernel(np.ones((8 << 20) // 8)) for _ in range(3)]
    """))
    done = subprocess.run([sys.executable, "-X", "dev", "-c", "import holder"], capture_output=True, text=True,
                          env={**__import__("os").environ, "PYTHONMALLOC": "debug", "PYTHONPATH": str(tmp_path)},
                          timeout=120)
    assert done.returncode == 0 and not done.stderr, done.stderr


def test_tracemalloc_sees_the_arrays_given_out_not_the_blocks_held():
    import tracemalloc
    a = np.ones(LARGE)
    plus_one(a)
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()

        def traced():
            return sum(s.size_diff for s in tracemalloc.take_snapshot().compare_to(before, "filename"))

        result = plus_one(a)
        assert traced() >= LARGE * 8
        del result
        assert traced() < LARGE * 8 // 8
    finally:
        tracemalloc.stop()


@pytest.fixture
def idle_seconds(monkeypatch):
    """Set the pool's idle time (`pool.IDLE_SECONDS`); restored after."""
    def set_to(seconds):
        monkeypatch.setattr(pool, "IDLE_SECONDS", seconds)
        pool.switch_on()
    yield set_to
    monkeypatch.undo()
    pool.switch_on()


def test_idle_blocks_are_freed_after_a_garbage_collection(idle_seconds):
    import gc
    plus_one(np.ones(LARGE))
    pool.release_memory()
    plus_one(np.ones(LARGE))  # its block, held once the result is dropped
    gc.collect()
    assert sj.memory_stats()["blocks"] == 1  # held for less than the idle time
    idle_seconds(0)
    gc.collect()
    assert sj.memory_stats()["blocks"] == sj.memory_stats()["bytes"] == 0


def test_idle_blocks_are_freed_as_the_pool_allocates(idle_seconds):
    """A held block of another size, idle longer than the idle time, goes
    back to libc at the pool's next allocation."""
    plus_one(np.ones(LARGE))
    pool.release_memory()
    idle_seconds(0)
    first = plus_one(np.ones(2 * LARGE))
    del first
    second = plus_one(np.ones(LARGE))
    assert sj.memory_stats()["blocks"] == 0
    del second


def test_memory_stats_counts_hits_and_misses():
    a = np.ones(LARGE)
    plus_one(a)
    pool.release_memory()
    before = sj.memory_stats()
    plus_one(a)  # a fresh block, then held
    plus_one(a)  # the held one
    after = sj.memory_stats()
    assert (after["misses"] - before["misses"], after["hits"] - before["hits"]) == (1, 1)
    assert after["blocks"] == 1 and after["bytes"] >= LARGE * 8 and after["cap_bytes"] == pool.cap_bytes()


def test_workers_sharing_the_node_keep_no_blocks_by_default(monkeypatch):
    """Processes started by multiprocessing (its pools, Dask's nanny) and
    Dask workers cannot count their siblings, each of which would hold up
    to the cap: the pool is off there unless STREAMJIT_POOL_BYTES sets it."""
    import multiprocessing
    import types
    monkeypatch.delenv(pool.ENV_VAR, raising=False)
    assert pool.cap_bytes() > 0
    monkeypatch.setattr(multiprocessing, "parent_process", lambda: object())
    assert pool.cap_bytes() == 0
    monkeypatch.setenv(pool.ENV_VAR, str(1 << 30))
    assert pool.cap_bytes() == 1 << 30
    monkeypatch.undo()
    monkeypatch.delenv(pool.ENV_VAR, raising=False)
    monkeypatch.setitem(sys.modules, "distributed", types.SimpleNamespace(get_worker=lambda: object()))
    assert pool.cap_bytes() == 0


def _in_a_forked_child():
    return sj.memory_stats(), plus_one(np.ones(LARGE))[0]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork")
def test_a_forked_child_frees_its_parents_blocks_and_keeps_none():
    import multiprocessing
    result = plus_one(np.ones(LARGE))
    del result
    assert sj.memory_stats()["blocks"] >= 1
    with multiprocessing.get_context("fork").Pool(1) as workers:
        stats, value = workers.apply(_in_a_forked_child)
    assert stats["blocks"] == stats["bytes"] == stats["cap_bytes"] == 0 and value == 2.0
    assert sj.memory_stats()["blocks"] >= 1  # the parent's are its own
