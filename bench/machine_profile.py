"""The machine profile against the best hand-written C on this machine.

Side by side in one process, interleaved, medians (float32, 256 MiB per
array by default, destinations misaligned by one element as in
limits.c's own runs):

- STREAM copy and triad: streamjit with `stream_stores` alone and with
  `stream_loads=True`, both lowered as this machine's profile says, and as
  before the profile (no source prefetch; streamed loads `prefetchnta`
  2 KiB ahead, non-temporal where aligned), against `numba.njit`,
  `np.copyto`, and the C kernels of `shared/anchors/limits.c`: plain NT,
  NT with the source prefetched into L2 4 KiB ahead, four pages
  interleaved;
- the 5-point Jacobi stencil (8192 columns): the `streamjit.stencil`
  drop-in (into a given output, and allocating its own) and the loop,
  against the C NT stencil, with the output placed apart from the input
  modulo 4 KiB (as the drop-in places the outputs it allocates) and
  allocated alike (4 bytes past the input's left neighbour modulo 4 KiB,
  where 4K aliasing stalls streamed loops and, on CPUs whose profile has
  the check, streamjit runs its staged loop);
- the ``stencil_sources`` row: the sources of streamed 5-point and
  7-point sweeps prefetched as each candidate ``calibrate`` tries, against
  no software prefetch (`calibration_stencils.measure_stencil_sources` at
  this size), ending with the stage to store;
- the ``page_alias_bytes`` and ``strip_bytes`` rows: triad and the stencil
  with their sources a few bytes behind the streamed store modulo 4 KiB,
  streamed with no check, with the check (the staged loop, at each strip
  ``calibrate`` tries), never streamed, njit and C NT; it ends with the
  values ``calibrate`` would store for this CPU;
- the ``scalar_nt_bytes`` row: scalar NT against plain stores in two loops
  that do not vectorize, float32 and float64 (`calibration.measure_scalar_stores`
  at this size), ending with the item sizes to store;
- the ``scalar_nt_ops`` row: scalar NT against plain stores of float64 in
  a checked loop computing each element by 0 to 16 dependent operations
  (`calibration.measure_scalar_ops` at this size), ending with the most
  operations per element stored to allow;
- the ``wide_stencil_bytes`` row: streamed 5-point sweeps, float32 and
  float64, vectorized 512 bits wide against LLVM's own width
  (`calibration.measure_wide_stencils` at this size; bench/vector_width.py
  has the swap Jacobi and its C ceiling), ending with the item sizes to store;
- gathers `out[i] = lut[key[i]] * x[i]` from a table that stays in L2 and
  from one four times larger: `stream_loads` against `stream_stores` alone.

Run: python bench/machine_profile.py [MiB] [path to limits.c]
(default 256 and ../shared/anchors/limits.c beside the repository; the C
columns need gcc and are left out without them).
"""

import ctypes
import os
import subprocess
import sys
import tempfile

import llvmlite.binding as llvm
import numba
import numpy as np

import streamjit as sj
from streamjit.measure import calibration, calibration_stencils
from streamjit import measure
from streamjit.machine.cpu_defaults import STALLING_PAGE_ALIAS_BYTES
from streamjit.machine.profile import LoadStage, cache_sizes, machine_profile
from streamjit.codegen.placement import placed_apart

HERE = os.path.dirname(os.path.abspath(__file__))
BEFORE_LOADS = LoadStage("nta", 2048, True)   # the lowering of streamed loads before the profile


def c_reference(path):
    """limits.c built as a shared library (None without gcc or the file)."""
    if not os.path.exists(path):
        print(f"(no {path}: C columns left out)")
        return None
    folder = tempfile.mkdtemp()
    library = os.path.join(folder, "liblimits.so")
    if not llvm.get_host_cpu_features().get("avx512f", False):
        path = avx2_port(path, folder)
    try:
        # (no memcpy/memset idioms: the C kernels are the loops as written)
        subprocess.run(["gcc", "-O3", "-march=native", "-fno-tree-loop-distribute-patterns", "-shared", "-fPIC",
                        "-o", library, path], check=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"(cannot build {path}: {exc}; C columns left out)")
        return None
    lib = ctypes.CDLL(library)
    pointer, size = ctypes.c_void_p, ctypes.c_size_t
    for name in ("copy_nt", "copy_nt_pf", "copy_nt4"):
        getattr(lib, name).argtypes = [pointer, pointer, size]
    for name in ("triad_nt", "triad_nt_pf"):
        getattr(lib, name).argtypes = [pointer, pointer, pointer, ctypes.c_float, size]
    lib.jac_nt.argtypes = [pointer, pointer, size, size]
    return lib


def avx2_port(path, folder):
    """limits.c (written for AVX-512F) with its 512-bit intrinsics mapped to
    256-bit ones, 8 floats a step: the same loops, peels and fences, for
    CPUs without AVX-512 (AMD Zen 2)."""
    with open(path) as f:
        text = f.read()
    for wide, narrow in (("_mm512_", "_mm256_"), ("__m512", "__m256"), ("i+16<=n;i+=16", "i+8<=n;i+=8"),
                         ("j+=16", "j+=8"), ("c+16<C;c+=16", "c+8<C;c+=8")):
        text = text.replace(wide, narrow)
    ported = os.path.join(folder, "limits_avx2.c")
    with open(ported, "w") as f:
        f.write(text)
    print(f"(no AVX-512F: {path} ported to 256-bit vectors)")
    return ported


def ptr(array):
    return array.ctypes.data


def compare(title, impls, moved, reference, rounds):
    """Time ``{name: callable}`` interleaved; print GB/s and the ratio to ``reference``."""
    for run in impls.values():
        run()
    medians = measure.interleaved_medians(impls, rounds)
    print(f"\n{title} (ratio to {reference})")
    for name, seconds in medians.items():
        print(f"  {name:42s} {moved / seconds / 1e9:6.1f} GB/s  {medians[reference] / seconds:5.2f}x")
    return medians


def streamjit_builds(function, output, loads):
    """The streamjit variants of one kernel: as the profile says, and as before it."""
    profile = machine_profile()
    none = LoadStage()
    builds = {"streamjit stores only": (False, none, None),        # (None: the profile's sources rows)
              "streamjit stream_loads=True": (True, profile.stream_loads, None),
              "before the profile: stores only": (False, none, none),
              "before the profile: stream_loads=True": (True, BEFORE_LOADS, none)}
    return {name: calibration.kernel_with_stages(function, output, loads if streams else False, loads_stage, sources)
            for name, (streams, loads_stage, sources) in builds.items()}


def main(mib, limits_path, rounds=9):
    print(measure.host_description())
    print(f"profile: {machine_profile().origin}\n  streamed loads: {machine_profile().stream_loads.describe()}\n"
          f"  sources of streamed stores: {machine_profile().sources.describe()}; in a stencil's loop: "
          f"{machine_profile().stencil_sources.describe()}")
    lib = c_reference(limits_path)
    rng = np.random.default_rng(0)
    n = mib * measure.MIB // 4
    buffers = [rng.random(n + 16, dtype=np.float32) for _ in range(3)]
    a, b, c = buffers[0][1:n + 1], buffers[1][:n], buffers[2][:n]     # destination misaligned by one
    q = np.float32(3)

    plain_copy = numba.njit(measure.stream_copy)
    copies = {"numba.njit": lambda: plain_copy(a, b), "np.copyto": lambda: np.copyto(a, b)}
    for name, kernel in streamjit_builds(measure.stream_copy, "a", True).items():
        copies[name] = lambda kernel=kernel: kernel(a, b)
    if lib:
        copies.update({"C NT": lambda: lib.copy_nt(ptr(a), ptr(b), n), "C NT + L2 prefetch":
                       lambda: lib.copy_nt_pf(ptr(a), ptr(b), n), "C NT, 4 pages": lambda: lib.copy_nt4(ptr(a), ptr(b), n)})
    medians = compare(f"copy, {mib} MiB float32", copies, 2 * n * 4, "streamjit stores only", rounds)
    assert np.array_equal(a, b)
    if lib:
        best = min(medians[k] for k in ("C NT", "C NT + L2 prefetch", "C NT, 4 pages"))
        print(f"  streamjit stores only / best C: {best / medians['streamjit stores only']:.3f}x; "
              f"/ np.copyto: {medians['np.copyto'] / medians['streamjit stores only']:.3f}x")

    plain_triad = numba.njit(measure.stream_triad)
    triads = {"numba.njit": lambda: plain_triad(a, b, c, q)}
    for name, kernel in streamjit_builds(measure.stream_triad, "a", True).items():
        triads[name] = lambda kernel=kernel: kernel(a, b, c, q)
    if lib:
        triads.update({"C NT": lambda: lib.triad_nt(ptr(a), ptr(b), ptr(c), 3.0, n),
                       "C NT + L2 prefetch": lambda: lib.triad_nt_pf(ptr(a), ptr(b), ptr(c), 3.0, n)})
    medians = compare(f"triad, {mib} MiB float32", triads, 3 * n * 4, "streamjit stores only", rounds)
    np.testing.assert_allclose(a, b + q * c, rtol=1e-6)
    if lib:
        best = min(medians[k] for k in ("C NT", "C NT + L2 prefetch"))
        print(f"  streamjit stores only / best C: {best / medians['streamjit stores only']:.3f}x")

    width = 8192
    rows = n // width
    g = buffers[1][:rows * width].reshape(rows, width)
    drop_in = sj.stencil(jacobi5_f32_stencil)
    builds = streamjit_builds(calibration.jacobi5_f32, "out", True)
    placements = [("output placed apart from the input modulo 4 KiB", placed_apart(np.empty_like(g), (g,)), True),
                  ("output allocated alike (4K aliasing)", buffers[0][:rows * width].reshape(rows, width), False)]
    for placement, out, apart in placements:
        print(f"\n(input at {ptr(g) % 4096}, output at {ptr(out) % 4096} bytes modulo 4 KiB)")
        stencils = {"streamjit.stencil": lambda out=out: drop_in(g, out=out)}
        if apart:  # (where the drop-in places the outputs it allocates)
            stencils["streamjit.stencil allocating its output (faults its pages in)"] = lambda: drop_in(g)
        for name, kernel in builds.items():
            stencils[name] = lambda kernel=kernel, out=out: kernel(out, g)
        if lib:
            stencils["C NT"] = lambda out=out: lib.jac_nt(ptr(out), ptr(g), rows, width)
        compare(f"5-point stencil, {rows}x{width} float32, {placement}", stencils, 2 * rows * width * 4,
                "C NT" if lib else "streamjit stores only", rounds)
        np.testing.assert_allclose(out[1:-1, 1:-1], drop_in(g)[1:-1, 1:-1], rtol=1e-6)

    stencil_sources = calibration_stencils.measure_stencil_sources(mib, rounds)
    print(f"value to store: stencil_sources = {stencil_sources[0] if stencil_sources else 'none (rounds disagree)'}\n")
    page_alias(mib, lib, rounds)
    sizes = calibration.measure_scalar_stores(mib, rounds)[0]
    print(f"value to store: scalar_nt_bytes = {list(sizes)}\n")
    print(f"value to store: scalar_nt_ops = {calibration.measure_scalar_ops(mib, rounds)[0]}\n")
    wide = calibration.measure_wide_stencils(mib, rounds)
    print(f"value to store: wide_stencil_bytes = {list(wide[0]) if wide else []}\n")

    l2 = cache_sizes().get("L2", 1 << 20)
    for label, table_bytes in (("in L2", l2 // 2), ("4x L2", 4 * l2)):
        lut = rng.random(table_bytes // 4, dtype=np.float32)
        key = rng.integers(0, lut.shape[0], n, dtype=np.int32)
        gathers = {name: (lambda kernel=kernel: kernel(a, lut, key, b))
                   for name, kernel in streamjit_builds(measure.gather, "out", ["key", "x"]).items()}
        compare(f"gather, {table_bytes >> 10} KiB table ({label}), {mib} MiB key and x", gathers, 3 * n * 4,
                "streamjit stores only", rounds)
        np.testing.assert_array_equal(a, lut[key] * b)


def page_alias(mib, lib, rounds):
    """The ``page_alias_bytes`` and ``strip_bytes`` rows: sources a few bytes
    behind the streamed store modulo 4 KiB (as arrays allocated alike lie),
    streamed with no check against the check of the CPUs where they stall
    (the staged loop, at each of calibrate's strips), the kernel never
    streamed, njit and the C NT kernel; ends with the values
    `calibration.staging_choice` makes of these timings."""
    stalling = STALLING_PAGE_ALIAS_BYTES
    cases = calibration.page_alias_workloads(mib, np.random.default_rng(1))
    aligned_speed = {}
    c_kernels = {"triad": lambda a, b, c, q: lib.triad_nt(ptr(a), ptr(b), ptr(c), float(q), a.size),
                 "5-point": lambda out, g: lib.jac_nt(ptr(out), ptr(g), *g.shape)}
    staged = {strip: f"check {stalling} bytes, staged in {strip} B strips" for strip in calibration.STRIPS}
    staged[None] = "streamed, no check"
    for name, (function, args, output) in cases.items():
        builds = {"numba.njit": numba.njit(function)}
        for strip, kernel in calibration.staging_builds(function, output, calibration.STRIPS, threshold=None).items():
            builds[staged[strip]] = kernel
        builds["never streamed"] = calibration.kernel_with_stages(function, output, False, LoadStage(),
                                                                  threshold=1 << 62)
        impls = {label: (lambda k=k: k(*args)) for label, k in builds.items()}
        if lib:
            c_kernel = next(k for prefix, k in c_kernels.items() if name.startswith(prefix))
            impls["C NT"] = lambda c_kernel=c_kernel: c_kernel(*args)
        print(f"\n(outputs at {ptr(args[0]) % 4096}, sources at {ptr(args[1]) % 4096} bytes modulo 4 KiB)")
        moved = sum(a.nbytes for a in args if isinstance(a, np.ndarray))
        medians = compare(f"{name}, {mib} MiB float32", impls, moved, "numba.njit", rounds)
        print("  calls:", {label: k.stream_calls() for label, k in builds.items() if hasattr(k, "stream_calls")})
        aligned_speed[name] = {strip: medians[staged[strip]] / medians[staged[None]] for strip in calibration.STRIPS}
    value, table, strip, strips = calibration.staging_choice(aligned_speed)
    print(f"\nvalues to store: page_alias_bytes = {value} (streamed against the check's staged loop, {strip} B "
          f"strips: {table}), strip_bytes = {strip} (streamed against the staged loop per strip: {strips})")


def jacobi5_f32_stencil(g):
    """limits.c's 5-point stencil, as a stencil kernel."""
    return np.float32(0.2) * (g[0, 0] + g[0, -1] + g[0, 1] + g[-1, 0] + g[1, 0])


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 256,
         sys.argv[2] if len(sys.argv) > 2 else os.path.join(HERE, "..", "..", "shared", "anchors", "limits.c"))
