"""Size-aware streaming: how many bytes make streaming pay on this machine.

Streamed (non-temporal) stores bypass the cache: beyond the last-level
cache they save the read-for-ownership traffic (1.2-1.5x faster here), but
data that would have stayed in cache gets evicted to memory (about 2x
slower at 256 KiB). Two thresholds, in bytes of the streamed arrays:

- ``"kernel"``: ``threshold="auto"`` of kernels and stencils, where a
  streamed loop overtakes the same loop with plain stores;
- ``"copy"``: `copyto` and `memcpy`, where a streamed copy overtakes
  `np.copyto` (glibc's ``memcpy``, faster in cache than a compiled loop,
  so the copy crossover lies higher).

Each comes from, in order: an environment variable (bytes), the value
``python -m streamjit calibrate`` measured and stored in the user cache
directory, a share of the last-level cache, or a measured fallback when
the cache size is unknown or implausible. Virtual machines report the
host's whole cache: ours claims 480 MiB of L3 for 2 CPUs, yet the measured
crossovers are 16-24 MiB (stencil) and 32-48 MiB (copy) per array.
"""

import functools
import os
import subprocess

from .profile import MAX_BYTES, environment_bytes, cache_sizes, profile_file, read_profile_file, update_profile_file

# kind -> (environment variable, key in the calibration file, share of the
# last-level cache, fallback bytes). The shares are the crossovers measured
# with a plausible cache (AMD EPYC Zen 5 VM, 32 MiB L3: kernels at 8-12 MiB,
# copies at 12-16 MiB); the fallbacks the ones measured on the Intel Xeon VM
# (above): `python -m streamjit bench --sweep` and `calibrate`, bench/README.md
# "Envelope".
KINDS = {
    "kernel": ("STREAMJIT_THRESHOLD", "threshold_bytes", 1 / 3, 16 << 20),
    "copy": ("STREAMJIT_COPY_THRESHOLD", "copy_threshold_bytes", 1 / 2, 32 << 20),
}
ENV_VAR = KINDS["kernel"][0]
PARALLEL_ENV_VAR = "STREAMJIT_PARALLEL_BYTES"

# No CPU has more last-level cache than this per hardware thread (large-L3
# parts such as AMD's X3D have about 6 MiB); more means the reading is not
# the cache this machine's cores get to use. Chosen, not measured: from
# vendors' published cache sizes, with margin; it rejects the Intel Xeon
# VM's reading of 480 MiB for 2 CPUs (bench/README.md, "Envelope").
PLAUSIBLE_BYTES_PER_CPU = 16 << 20


def last_level_cache_bytes():
    """Size of the largest CPU cache in bytes (Linux sysfs or sysconf), or None."""
    sizes = list(cache_sizes().values())
    for name in ("SC_LEVEL3_CACHE_SIZE", "SC_LEVEL2_CACHE_SIZE"):
        try:
            sizes.append(os.sysconf(name))
        except (ValueError, OSError, AttributeError):
            pass
    sizes = [s for s in sizes if s and s > 0]
    return max(sizes) if sizes else None


def plausible_cache_bytes(llc, cpus):
    """``llc`` if a machine with ``cpus`` CPUs can really have that much
    last-level cache, else None."""
    return llc if llc and llc <= PLAUSIBLE_BYTES_PER_CPU * max(1, cpus or 1) else None


def usable_cache_bytes():
    """This machine's last-level cache if its reading is plausible, else None."""
    return plausible_cache_bytes(last_level_cache_bytes(), os.cpu_count())


calibration_file = profile_file


def _calibrated(key):
    value = read_profile_file().get(key)  # (a number of bytes from 0 to MAX_BYTES, checked there)
    return None if value is None else int(value)




def threshold_for(kind):
    """``(bytes, where it came from)`` for ``kind`` ("kernel" or "copy")."""
    env_var, key, share, fallback = KINDS[kind]
    value = environment_bytes(env_var)
    if value is not None:
        return value, f"environment variable {env_var}"
    calibrated = _calibrated(key)
    if calibrated is not None:
        return calibrated, f"calibration in {calibration_file()}"
    llc = usable_cache_bytes()
    if llc:
        return int(llc * share), f"{share:.2g} of the {llc >> 20} MiB last-level cache"
    reported = last_level_cache_bytes()
    why = "unknown" if reported is None else f"implausible ({reported >> 20} MiB for {os.cpu_count()} CPUs)"
    return fallback, f"fallback: cache size {why}; run `python -m streamjit calibrate`"


def parallel_copy_bytes():
    """``(bytes, where it came from)`` from which `copyto` runs on all of
    Numba's threads: ``STREAMJIT_PARALLEL_BYTES``, else where glibc streams
    by itself (`numpy_streaming_bytes`). None: never."""
    value = environment_bytes(PARALLEL_ENV_VAR)
    if value is not None:
        return value or None, f"environment variable {PARALLEL_ENV_VAR}"
    return numpy_streaming_bytes()


def numpy_streaming_bytes():
    """``(bytes, where it came from)``: the size above which ``np.copyto``
    streams by itself, as glibc's ``memcpy`` does (where one streamed thread
    of ours reaches only 0.9x of it): the upper end of the band where the
    calibration measured streaming to win, else the threshold glibc reports
    it uses (`glibc_streaming_bytes`), else glibc's rule of releases
    2.26-2.37: 3/4 of the last-level cache per CPU, as the cache is
    reported. None: no limit."""
    calibrated = _calibrated("copy_limit_bytes")
    if calibrated is not None:
        return calibrated, f"calibration in {calibration_file()}"
    reported = glibc_streaming_bytes()
    if reported is not None:
        return reported, "glibc's x86_non_temporal_threshold (ld.so --list-tunables)"
    llc = last_level_cache_bytes()
    if llc is None:
        return None, "no limit: cache size unknown"
    return llc * 3 // 4 // max(1, os.cpu_count() or 1), "glibc's rule: 3/4 of the last-level cache per CPU"


# The rule above is not what every glibc computes: on the AMD EPYC Zen 2 VM
# (glibc 2.36, Debian 12, 16 MiB L3 reported) it gives 6 MiB, yet glibc
# reports 192 MiB and np.copyto ran 16-17 GB/s (plain stores) at 16 and
# 64 MiB, 28 GB/s (streamed) at 256 MiB (bench/copy_threads.py). Copies
# between the two ran on threads where one streamed thread was 1.6-1.9x
# np.copyto, and with the other core busy fell to 0.34-0.45x.
GLIBC_TUNABLE = "glibc.cpu.x86_non_temporal_threshold"


@functools.lru_cache(maxsize=1)
def glibc_streaming_bytes():
    """Bytes from which glibc's ``memcpy`` uses non-temporal stores, as
    its dynamic loader reports (``ld.so --list-tunables``, glibc 2.33 on,
    x86), or None where that cannot be read. About 1 ms, once."""
    loader = _dynamic_loader()
    if loader is None:
        return None
    try:
        listing = subprocess.run([loader, "--list-tunables"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for line in listing.splitlines():
        name, _, value = line.partition(":")
        if name.strip() == GLIBC_TUNABLE:
            try:
                return int(value.split()[0], 0) or None
            except (IndexError, ValueError):
                return None
    return None


def _dynamic_loader():
    """The path of the dynamic loader mapped into this process (Linux), or None."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "/ld-linux" in line}
    except OSError:
        return None
    return min(paths) if len(paths) == 1 else None


def stored_thresholds():
    """``{kind: bytes}`` an earlier calibration stored."""
    found = {kind: _calibrated(KINDS[kind][1]) for kind in KINDS}
    return {kind: value for kind, value in found.items() if value is not None}


def default_threshold():
    """``(bytes, where it came from)`` for ``threshold="auto"``."""
    return threshold_for("kernel")


def copy_threshold():
    """``(bytes, where it came from)`` above which `copyto` streams."""
    return threshold_for("copy")


def save_calibration(thresholds, measurements, copy_limit=None):
    """Store measured thresholds (``{kind: bytes}``) where `threshold_for`
    finds them, and ``copy_limit`` for `numpy_streaming_bytes`, merged into
    the profile file (what is not given keeps its stored value)."""
    record = {KINDS[kind][1]: int(value) for kind, value in thresholds.items()}
    if copy_limit is not None:
        record["copy_limit_bytes"] = int(copy_limit)
    return update_profile_file(record, measurements)
