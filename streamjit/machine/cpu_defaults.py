"""The machine profile's defaults per vendor and family, from measurements.

A CPU never calibrated (``python -m streamjit calibrate``) gets, for each
row of the profile (`machine.MachineProfile`), the value measured on its
kind of CPU, with the reason naming the CPU, the script and the numbers;
a row nobody measured on that kind gets the choice that is never much
slower than `numba.njit` (`UNMEASURED`). A session on a kind of CPU with
no measured row runs `bench/machine_profile.py` and adds the row here.

Values are the profile file's records (`machine.read_profile_file`): a
load stage is ``{"hint", "distance", "nt_loads"}``, the other rows numbers.
"""


def stage(hint="none", distance=0, min_row_bytes=0):
    """A load stage's record: a prefetch of ``hint`` ``distance`` bytes ahead (in rows of ``min_row_bytes`` or
    more, where set), no non-temporal loads."""
    return {"hint": hint, "distance": distance, "nt_loads": False,
            **({"min_row_bytes": min_row_bytes} if min_row_bytes else {})}


# The bytes of each destination a strip of the staged loop computes (`passes/staging.py`)
_INTEL_STRIP = (512, "measured on an Intel Xeon VM (family 6 model 167), bench/staging.py, 256 MiB, the staged "
                     "loop forced: 512-byte strips ran a Jacobi sweep 1.16x njit (the aligned loop 1.16x), triad "
                     "1.48x (1.54x); 4 KiB strips 1.10x and 1.31x")

# The page_alias_bytes of CPUs where trailing sources stall streamed stores
# (measured on a Zen 2, below), and of CPUs nobody measured: a call that
# would stall runs the staged loop, which ran near the aligned loop where
# nothing stalls (Intel Xeon, bench/staging.py) and beat the plain loop
# where it does (a hand-written staged sweep on the Zen 2, bench/README.md).
STALLING_PAGE_ALIAS_BYTES = 192

# Defaults for machines never calibrated, per vendor and family, from
# measurements (bench/README.md "Machine profile", the script named in each
# reason): row -> (value, why). A choice never measured is never a default.
_INTEL = {
    "stream_loads": (stage("t1", 4096),
                     "measured on an Intel Xeon VM (AVX-512, LLVM rocketlake), 64 MiB float32: prefetchnta capped "
                     "the stream (2 KiB ahead: copy 0.47x, triad 0.31x, stencil 0.68x), non-temporal loads cost up "
                     "to 17%, prefetcht1 4 KiB ahead of the sources of streamed stores: copy 1.14x, 5-point stencil "
                     "1.18x, triad 0.99x, gather 1.23x (8 MiB table), 0.97x (1 MiB table, in L2); as streamed loads "
                     "no lowering gained over that"),
    "page_alias_bytes": (0, "measured on an Intel Xeon VM (family 6 model 167, AVX-512, LLVM rocketlake), "
                            "bench/machine_profile.py: with sources trailing the streamed store by 4-12 bytes modulo "
                            "4 KiB, streaming still paid (triad 256 MiB float32 1.23x njit streamed, 0.83x checked "
                            "and plain; NPBench heat_3d N=256 13.6x vs 7.1x, jacobi_2d N=4000 8.0x vs 6.3x): "
                            "no check"),
}
_INTEL["sources"] = _INTEL["stream_loads"]
_INTEL["stencil_sources"] = (_INTEL["sources"][0], "the sources row, measured with a stencil among its workloads "
                                                   "(" + _INTEL["sources"][1] + ")")
_INTEL["strip_bytes"] = _INTEL_STRIP
_INTEL["scalar_nt_bytes"] = ((4, 8), "measured on an Intel Xeon VM (family 6 model 167, AVX-512), "
                                     "bench/scalar_nt_stores.py, 256 MiB, loops that do not vectorize (a running "
                                     "sum, a scale with an early exit), scalar NT (movnti) against plain stores, "
                                     "the source prefetched as this row's sources say (prefetcht1 4 KiB ahead): "
                                     "float64 1.46-1.48x, float32 1.13x (with no prefetch, float32 lost 0.38-0.39x: "
                                     "a loop whose source is not prefetched takes 64-bit items only)")
_INTEL["scalar_nt_ops"] = (8, "measured on an Intel Xeon VM (family 6 model 167), bench/machine_profile.py, 256 "
                              "MiB float64, a checked loop that does not vectorize, scalar NT against plain stores "
                              "per operation computed per element, its source prefetched as this row's sources "
                              "say (prefetcht1 4 KiB ahead): 0 1.52x, 1 1.56x, 2 1.54x, 4 1.47x, 8 1.16x (1.15x, "
                              "1.20x in two more runs), 16 0.67x (1.01x, 1.03x); with no prefetch, 2 lost 0.76x "
                              "and 4 0.40x: at most 8, as 16 lost in one run of three")
_INTEL["wide_stencil_bytes"] = ((8,), "measured on an Intel Xeon VM (family 6 model 167, AVX-512, LLVM rocketlake), "
                                      "bench/vector_width.py, 256 MiB, streamed stencil loops 512 bits wide against "
                                      "LLVM's 256: float64 swap Jacobi 4096x4096 1.16x -> 1.23x njit (C NT 512-bit "
                                      "1.23x), heat_3d 255^3 1.06x -> 1.14x; float32 5-point stencil 1.18x -> 1.15x "
                                      "(a loss); triads, no stencils, keep LLVM's width: 64-bit items only")
_AMD_ZEN5 = {
    "stream_loads": (stage("nta", 2048), "AMD EPYC Zen 5: prefetchnta 2 KiB ahead, copy 1.04x, triad 1.02x, "
                                         "gather 1.15x"),
    "sources": (stage(), "AMD EPYC Zen 5: source prefetch for stores alone not measured there, so none"),
    "scalar_nt_bytes": ((8,), "measured on an AMD EPYC Zen 5 VM, bench/scalar_nt_stores.py, 256 MiB, loops that do "
                              "not vectorize, scalar NT against plain stores: float64 1.08x (running sum) and 1.26x "
                              "(a scale with an early exit), float32 1.00x and 0.98x (no gain): 64-bit only"),
}
_ZEN4_CPU = "measured on an AMD EPYC Zen 4 VM (family 25 model 17, AVX-512, LLVM znver4)"
_ZEN4_SOURCES = (stage("nta", 2048),
                 f"{_ZEN4_CPU}, bench/load_stages.py 256 MiB float32, sources of streamed stores against no "
                 "software prefetch: prefetchnta 2 KiB ahead copy 1.23x, triad 1.09x, 5-point stencil 1.06x, "
                 "gathers 1.04x (table in L2) and 0.99x (4x L2); prefetcht1 4 KiB ran the stencil 1.46x but the "
                 "gather from L2 0.75x; bench/machine_profile.py 256: copy 1.26x the best C (1.01x with no "
                 "prefetch), triad 1.14x the C NT triad (0.98x), stencil 1.06x the C NT stencil (0.98x), "
                 "stream_loads=True 1.00-1.01x of that; NPBench's 8 streaming kernels (bench/npbench.py) "
                 "streaming's share 1.35x against 1.36x with no prefetch: within noise")
_AMD_ZEN4 = {
    "stream_loads": _ZEN4_SOURCES,
    "sources": _ZEN4_SOURCES,
    "stencil_sources": (stage("t1", 4096, 4096), f"{_ZEN4_CPU}, bench/load_stages.py 128 5 --rows, float64, "
                                                 "against no software prefetch, 5-point sweeps over rows of 160, "
                                                 "320, 640, 1280, 2560, 4000 items and NPBench's hdiff over rows of "
                                                 "160 and 4000: prefetcht1 4 KiB ahead in rows of 4 KiB or more "
                                                 "(shorter rows run a copy of the loop without prefetches) 1.04x, "
                                                 "1.07x, 1.24x, 1.50x, 1.51x, 1.41x, hdiff 0.90x, 1.10x (geometric "
                                                 "mean 1.20x); prefetcht1 4 KiB everywhere 0.91x, 0.89x, 1.24x, "
                                                 "1.47x, 1.53x, 1.42x, 0.91x, 1.12x (1.16x); the sources row's "
                                                 "prefetchnta 2 KiB 0.65x, 0.64x, 0.94x, 1.04x, 1.12x, 1.11x, "
                                                 "0.99x, 1.08x. hdiff's short rows lose under any prefetcht1 (512 "
                                                 "bytes ahead 0.75x) and still 0.90x in the copy without "
                                                 "prefetches: a loss not found"),
    "page_alias_bytes": (0, f"{_ZEN4_CPU}, arrays allocated alike, check compiled out against in: triad 256 MiB "
                            "float32 1.34x vs 1.02x njit, NPBench jacobi_2d N=4000 9.9x vs 4.7x, heat_3d N=256 "
                            "17.7x vs 5.8x; bench/machine_profile.py 256 with prefetchnta sources: streamed with "
                            "sources 12 bytes behind 1.39x njit (the staged loop 1.06-1.14x), the stencil at its "
                            "input's offset 1.29x (staged 0.95-0.98x): no check"),
    "strip_bytes": (256, f"{_ZEN4_CPU}, bench/machine_profile.py 256, the staged loop (which no call runs here: no "
                         "check) against the aligned loop per strip, geometric mean of triad and stencil: 256 B "
                         "0.79x, 512 B 0.76x, 1 KiB 0.75x, 2 KiB 0.75x"),
    "scalar_nt_bytes": ((8,), f"{_ZEN4_CPU}, bench/machine_profile.py 256 with prefetchnta sources, loops that do "
                              "not vectorize, scalar NT against plain stores: float64 1.01x (running sum) and "
                              "1.25x (checked scale), float32 1.00x and 1.01x (no gain): 64-bit only"),
    "scalar_nt_ops": (8, f"{_ZEN4_CPU}, bench/machine_profile.py 256 with prefetchnta sources, float64, a checked "
                         "loop that does not vectorize, scalar NT against plain stores per operation per element: "
                         "0 2.27x, 1 1.77x, 2 1.99x, 4 1.64x, 8 1.12x, 16 1.00x (no source prefetch: 8 1.05x, "
                         "16 1.01x): at most 8"),
    "wide_stencil_bytes": ((), f"{_ZEN4_CPU}: LLVM's own width already stores zmm in these loops; "
                               "bench/machine_profile.py 256, streamed 5-point sweeps 512 bits wide against it: "
                               "float32 1.00x, float64 1.02x (no source prefetch: 1.00x, 0.99x)"),
}
_ZEN3_CPU = "measured on an AMD EPYC Zen 3 VM (family 25 model 1, AVX2, LLVM znver3), bench/machine_profile.py 256, two runs"
_AMD_ZEN3 = {
    "stencil_sources": (stage(), f"{_ZEN3_CPU}: sources of streamed 5-point and 7-point sweeps against no software "
                                 "prefetch: prefetchnta 512 B/2 KiB 0.89x/0.94x, prefetcht0 4 KiB 1.03x and 0.96x, "
                                 "prefetcht1 4 KiB 0.98x and 0.95x, prefetcht2 4 KiB 0.98x, 1.00x, 0.85x; the second run's "
                                 "rounds disagreed: no software prefetch"),
    "page_alias_bytes": (0, f"{_ZEN3_CPU}, sources a few bytes behind a streamed store modulo 4 KiB, against njit: "
                            "triad (destination 12 bytes past its sources) streamed with no check 1.21x and 1.25x, "
                            "the check's staged loop at best 1.12x and 1.04x; 5-point stencil (output at its input's "
                            "offset) 1.25x and 1.10x against 1.24x and 1.05x: no check"),
    "strip_bytes": (512, f"{_ZEN3_CPU}, the staged loop (which no call runs here: no check) per strip against njit, "
                         "triad and stencil: 256 B 0.99x/1.09x and 0.98x/0.96x, 512 B 1.11x/1.22x and 1.04x/1.03x, "
                         "1 KiB 1.12x/1.24x and 0.97x/1.05x, 2 KiB 0.96x/1.20x and 0.96x/1.05x"),
    "scalar_nt_bytes": ((4, 8), f"{_ZEN3_CPU}, loops that do not vectorize, scalar NT against plain stores: float32 "
                                "running sum 1.08x and 1.02x, checked scale 1.30x and 1.21x; float64 1.33x and 1.19x, "
                                "1.46x and 1.61x: 32- and 64-bit"),
    "scalar_nt_ops": (4, f"{_ZEN3_CPU}, float64, a checked loop that does not vectorize, scalar NT against plain "
                         "stores per operation per element: 0 1.48x and 1.31x, 1 1.32x and 1.04x, 2 1.28x and 1.32x, "
                         "4 1.19x and 1.31x, 8 0.96x and 1.13x, 16 0.96x and 1.01x: at most 4 (8 lost in one run)"),
}
# Zen 5's prefetchnta measured on a Zen 2 (bench/stream_loads.py): copy
# 0.84x and triad 0.88x of the stores alone; no distance gained on both
_ZEN2_LOADS = (stage(), "measured on an AMD EPYC Zen 2 VM (family 23 model 49, AVX2), 256 MiB float32: "
                        "prefetchnta 2 KiB ahead (Zen 5's choice) cost copy 0.84x and triad 0.88x of "
                        "stream_stores alone, no distance gained on both (256 bytes: 1.02x, 1.01x, gather "
                        "1.01x): plain loads")
_AMD_ZEN2 = {
    "stream_loads": _ZEN2_LOADS,
    "sources": _ZEN2_LOADS,
    "page_alias_bytes": (STALLING_PAGE_ALIAS_BYTES,
                         "measured on an AMD EPYC Zen 2 VM (family 23 model 49), 256 MiB float32: the 5-point "
                         "stencil streamed 0.54-0.66x njit with its output 4-128 bytes past its input modulo 4 KiB, "
                         "1.06-1.34x at 192 bytes and more; triad 0.46x (4 bytes), 0.78x (64): sources 1-192 "
                         "bytes behind run the staged loop (a hand-written staged Jacobi sweep there: 24.3 ms, "
                         "the plain loop 34.6 ms; the compiled staged loop not yet measured on a Zen 2)"),
}
UNMEASURED = {
    "stream_loads": (stage(), "no measurement of this kind of CPU (the measured ones disagree: prefetchnta "
                              "gained on Zen 5, lost on Zen 2 and Intel): plain loads until `python -m "
                              "streamjit calibrate` measures it"),
    "sources": (stage(), "no measurement of this kind of CPU: no software prefetch"),
    "stencil_sources": (stage(), "no measurement of this kind of CPU: no software prefetch"),
    "page_alias_bytes": (STALLING_PAGE_ALIAS_BYTES,
                         "no measurement of this kind of CPU: the check of the CPU where trailing sources stall "
                         "streamed stores (Zen 2); its calls run the staged loop, which ran near the aligned loop "
                         "where nothing stalls on the Intel Xeon VM (bench/staging.py, 256 MiB: Jacobi sweep 1.16x "
                         "njit, triad 1.48x) and below it on the AMD EPYC Zen 4 VM (Jacobi sweep 1.12-1.18x against "
                         "1.31x, triad 0.92-0.99x against 1.44x, a 3-D heat sweep of 255-item rows 0.75-0.80x "
                         "against 0.92x)"),
    "strip_bytes": (_INTEL_STRIP[0], "no measurement of this kind of CPU: the strip measured best on the Intel Xeon "
                                     "VM (family 6 model 167, bench/staging.py)"),
    "scalar_nt_bytes": ((8,), "no measurement of this kind of CPU: scalar NT stores of 64-bit items, which gained "
                              "on every kind measured (Intel Xeon VM 1.50-1.57x, AMD EPYC Zen 5 1.08-1.26x, "
                              "bench/scalar_nt_stores.py), where 32-bit ones lost 0.4x (Intel) or gained nothing"),
    "scalar_nt_ops": (1, "no measurement of this kind of CPU: scalar NT stores only in loops computing at most 1 "
                         "operation per element, where every gain was measured (a running sum, a checked scale: "
                         "Intel Xeon VM, AMD EPYC Zen 5); on the Intel Xeon VM with no source prefetch (this "
                         "kind's), 2 operations ran 0.76x and 4 0.40x (bench/machine_profile.py)"),
    "wide_stencil_bytes": ((), "no measurement of this kind of CPU: streamed stencil loops at LLVM's own vector width"),
}


# Family 19h's Zen 4 models, as Linux tells them from its Zen 3 ones
# (arch/x86/kernel/cpu/amd.c, bsp_init_amd): Genoa 10h-1Fh, Raphael,
# Phoenix, Bergamo and Siena 60h-AFh; Zen 3 and Zen 3+ 00h-0Fh, 20h-5Fh
_ZEN4_MODELS = (range(0x10, 0x20), range(0x60, 0xB0))
_ZEN3_MODELS = (range(0x00, 0x10), range(0x20, 0x60))


def measured_rows(vendor, family, model=None):
    """``{row: (value, why)}`` measured on this vendor, family and model's
    CPUs ({} where none was)."""
    if vendor == "GenuineIntel" and family == 6:
        return _INTEL
    if vendor == "AuthenticAMD" and family == 0x1A:  # Zen 5
        return _AMD_ZEN5
    if vendor == "AuthenticAMD" and family == 0x19 and any(model in models for models in _ZEN4_MODELS):
        return _AMD_ZEN4
    if vendor == "AuthenticAMD" and family == 0x19 and any(model in models for models in _ZEN3_MODELS):
        return _AMD_ZEN3
    if vendor == "AuthenticAMD" and family == 0x17:  # Zen, Zen+ and Zen 2
        return _AMD_ZEN2
    return {}
