"""Facts about this machine, and its profile: how streaming is lowered here.

The bottom floor of the package: it compiles nothing and imports nothing of
streamjit but its warning class. Two kinds of content:

- facts read off the machine: CPU name, vendor and family, the vector
  instruction set, cache sizes;
- the machine profile (FFTW's "wisdom", ATLAS's install-time search): each
  lowering choice that depends on the microarchitecture. A streamed load
  (``stream_loads``) is lowered as plain loads, or with a software prefetch
  of hint T0/T1/T2/NTA some bytes ahead, and/or as non-temporal loads where
  aligned; the sources of a loop whose stores stream (``stream_stores``
  alone) may be prefetched too, the asynchronous load stage of TVM's
  pipeline model. What wins differs by CPU: ``prefetchnta`` fills L1 and
  skips L2 on Intel server cores, so each line holds a fill buffer for the
  whole memory latency and one core's stream is capped near 8 GB/s (a
  streamed triad ran 0.32x with it on our Intel Xeon VM), while AMD Zen
  marks such lines for early eviction instead and gained with it.

``python -m streamjit calibrate`` (`calibration.py`) measures the choices
and stores the winners in the profile file, with the size crossovers of
`threshold.py`. A machine never calibrated gets the defaults for its
vendor and family below, chosen from the measurements in bench/README.md,
never a choice measured to lose on that kind of CPU.

The profile file is JSON in the user cache directory; writers merge into it
under a lock and replace it atomically, so two calibrations never lose each
other's values.
"""

import contextlib
import fcntl
import functools
import glob
import json
import os
import platform
import tempfile
import warnings
from dataclasses import dataclass, field

import llvmlite.binding as llvm
import platformdirs

from .errors import StreamWarning

# Prefetch hints, as `llvm.prefetch`'s locality argument: NTA is 0 (no
# temporal locality), T2 1, T1 2, T0 3. "none": no software prefetch.
PREFETCH_HINTS = {"nta": 0, "t2": 1, "t1": 2, "t0": 3, "none": None}
# Sizes are compared with the arrays' bytes in the kernel, as int64.
MAX_BYTES = (1 << 63) - 1
# Bytes ahead for a hint a kernel asks for (``prefetch_hint=``) where the
# profile prefetches nothing (the middle of the distances calibrate tries).
# `bench/stream_loads.py` on the AMD EPYC Zen 5 VM swept 0-4096 bytes: the
# gather gained most at 2048-4096, sequential streams were within noise
# (bench/README.md, "stream_loads").
HINT_DISTANCE = 2048


def cpu_name():
    """The CPU model name from ``/proc/cpuinfo`` (``model name``, or ``Model`` on AArch64), else
    what `platform` says."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("model name", "Model")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_identity():
    """``(vendor, family)`` from /proc/cpuinfo (``("GenuineIntel", 6)``,
    ``("AuthenticAMD", 26)``); the architecture and None elsewhere."""
    vendor, family = platform.machine(), None
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key, value = key.strip(), value.strip()
                if key == "vendor_id":
                    vendor = value
                elif key == "cpu family":
                    family = int(value)
                elif not key and vendor != platform.machine():
                    break  # the end of the first processor's block
    except (OSError, ValueError):
        pass
    return vendor, family


def vector_isa():
    """The widest vector instruction set LLVM may use for this host build."""
    features = llvm.get_host_cpu_features()
    for name, label in (("avx512f", "AVX-512"), ("avx2", "AVX2"), ("avx", "AVX"), ("sve", "SVE"),
                        ("neon", "NEON"), ("sse2", "SSE2")):
        if features.get(name, False):
            return label
    return "none known"


_UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def _read(path):
    with open(path) as f:
        return f.read().strip()


def cache_sizes():
    """``{"L1d": bytes, "L2": bytes, ...}`` of CPU 0 from sysfs (Linux), else {}."""
    sizes = {}
    for index in sorted(glob.glob("/sys/devices/system/cpu/cpu0/cache/index*")):
        try:
            level, kind, size = (_read(os.path.join(index, f)) for f in ("level", "type", "size"))
            value = int(size[:-1]) * _UNITS[size[-1]] if size[-1:] in _UNITS else int(size)
        except (OSError, ValueError):
            continue
        sizes[f"L{level}{'d' if kind == 'Data' else 'i' if kind == 'Instruction' else ''}"] = value
    return sizes


@functools.lru_cache(maxsize=1)
def line_bytes():
    """Bytes in a cache line of CPU 0 (sysfs ``coherency_line_size``; 64,
    every x86 CPU's, where it is not reported): a walk whose step is wider
    reads one line per element, prefetches go one per line, and placed
    arrays start on one."""
    try:
        size = int(_read("/sys/devices/system/cpu/cpu0/cache/index0/coherency_line_size"))
    except (OSError, ValueError):
        return 64
    return size if size > 0 and size & (size - 1) == 0 else 64


# ---- the profile file ------------------------------------------------------

def environment_bytes(env_var):
    """The number of bytes the environment variable ``env_var`` holds, None
    when it is unset. Read where the value is used, never at import, so a
    bad value breaks only what uses it, with the variable named."""
    env = os.environ.get(env_var)
    if env is None:
        return None
    try:
        value = int(env)
    except ValueError:
        value = -1
    if not 0 <= value <= MAX_BYTES:
        raise ValueError(f"environment variable {env_var} must be a number of bytes from 0 to 2**63-1, got {env!r}")
    return value


def profile_file():
    """The machine profile file: ``calibration.json`` in the user cache directory (`platformdirs`),
    where ``python -m streamjit calibrate`` stores its choices."""
    return os.path.join(platformdirs.user_cache_dir("streamjit"), "calibration.json")


def _is_bytes(value):
    return not isinstance(value, bool) and isinstance(value, (int, float)) and 0 <= value <= MAX_BYTES


def _is_stage(value):
    return (isinstance(value, dict) and isinstance(value.get("hint"), str) and value["hint"] in PREFETCH_HINTS
            and not isinstance(value.get("distance"), bool) and isinstance(value.get("distance"), int)
            and 0 <= value["distance"] <= 1 << 20 and isinstance(value.get("nt_loads", False), bool))


# What each key of the profile file must hold (key -> check, what it should
# be); keys not listed (an older or newer streamjit's) are kept as they are.
_FILE_KEYS = {
    "threshold_bytes": (_is_bytes, "a number of bytes"),
    "copy_threshold_bytes": (_is_bytes, "a number of bytes"),
    "copy_limit_bytes": (_is_bytes, "a number of bytes"),
    "measurements": (lambda v: isinstance(v, dict), "an object"),
    "profile": (lambda v: isinstance(v, dict), "an object"),
}
_STAGE = (_is_stage, f"a load stage {{\"hint\": one of {', '.join(map(repr, PREFETCH_HINTS))}, \"distance\": 0 to "
                     "1048576 bytes, \"nt_loads\": true or false}")
_PROFILE_KEYS = {
    "stream_loads": _STAGE,
    "sources": _STAGE,
    "page_alias_bytes": (lambda v: not isinstance(v, bool) and isinstance(v, int) and 0 <= v < 4096,
                         "a number of bytes from 0 to 4095"),
    "reasons": (lambda v: isinstance(v, dict) and all(isinstance(r, str) for r in v.values()), "an object of strings"),
}
_warned = set()  # (path, file version, key): each damaged entry is reported once


def _checked(record, keys, path, stamp, prefix=""):
    """``record`` without the entries whose values ``keys`` refuses, each
    reported once in a warning naming the file and the key."""
    kept = {}
    for key, value in record.items():
        check, expected = keys.get(key, (lambda v: True, ""))
        if check(value):
            kept[key] = value
        else:
            _warn_once(path, stamp, prefix + key, f"{prefix + key} is {value!r}, not {expected}")
    return kept


def _warn_once(path, stamp, key, problem):
    if (path, stamp, key) not in _warned:
        _warned.add((path, stamp, key))
        warnings.warn(f"machine profile {path}: {problem}; ignored (`python -m streamjit calibrate` rewrites it)",
                      StreamWarning, stacklevel=2)


def read_profile_file():
    """The stored profile as a dict ({} when there is none): a damaged file,
    or an entry of the wrong type, is left out with a warning (never an
    error: every kernel, and ``import streamjit``, reads this file)."""
    path = profile_file()
    try:
        with open(path) as f:
            stamp = os.fstat(f.fileno()).st_mtime_ns
            record = json.load(f)
    except OSError:
        return {}
    except ValueError as exc:  # (UnicodeDecodeError too)
        _warn_once(path, stamp, "", f"not JSON ({exc})")
        return {}
    if not isinstance(record, dict):
        _warn_once(path, stamp, "", f"not a JSON object but {type(record).__name__}")
        return {}
    record = _checked(record, _FILE_KEYS, path, stamp)
    if "profile" in record:
        record["profile"] = _checked(record["profile"], _PROFILE_KEYS, path, stamp, "profile.")
    return record


@contextlib.contextmanager
def _locked(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def update_profile_file(values, measurements=None):
    """Merge ``values`` (and ``measurements``, merged per key; the rows of
    ``values["profile"]`` and their reasons one by one) into the profile file, under a lock, replacing it atomically; return its path.
    Keys not given keep what an earlier calibration stored."""
    path = profile_file()
    with _locked(path):
        record = read_profile_file()
        stored = record.get("profile", {})
        record.update(values)
        if "profile" in values:  # rows merged one by one, as their reasons
            reasons = {**stored.get("reasons", {}), **values["profile"].get("reasons", {})}
            record["profile"] = {**stored, **values["profile"], "reasons": reasons}
        if measurements:
            record["measurements"] = {**record.get("measurements", {}), **measurements}
        fd, temporary = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".calibration-")
        with os.fdopen(fd, "w") as f:
            json.dump(record, f, indent=1)
        os.replace(temporary, path)
    return path


def check_writable():
    """Raise OSError unless the profile file's directory can be written
    (before calibrating: minutes of measurements must not be lost at the end)."""
    directory = os.path.dirname(profile_file())
    os.makedirs(directory, exist_ok=True)
    fd, probe = tempfile.mkstemp(dir=directory, prefix=".calibration-")
    os.close(fd)
    os.remove(probe)


# ---- the profile -----------------------------------------------------------

@dataclass(frozen=True)
class LoadStage:
    """How one kind of load is lowered: a software prefetch with ``hint``
    (a key of `PREFETCH_HINTS`; "none": plain loads, left to the hardware
    prefetcher) ``distance`` bytes ahead, and whether vector loads proven
    aligned become non-temporal loads (``vmovntdqa``)."""
    hint: str = "none"
    distance: int = 0
    nt_loads: bool = False

    def prefetches(self):
        return self.hint != "none" and self.distance > 0

    def describe(self):
        what = f"prefetch{self.hint} {self.distance} bytes ahead" if self.prefetches() else "no software prefetch"
        return what + (", non-temporal loads where aligned" if self.nt_loads else "")


@dataclass(frozen=True)
class MachineProfile:
    """The lowering choices in force on this machine, one row each.

    - ``stream_loads``: how the loads the user streams are lowered;
    - ``sources``: the unit-stride sources of a loop whose stores stream,
      when their arrays are not streamed themselves;
    - ``page_alias_bytes``: how far (in bytes, modulo 4 KiB) a source may
      trail a streamed store before the store stalls the loop's loads (4K
      aliasing: the core compares the low 12 address bits of a load with
      those of the stores in flight, and a non-temporal store stays in
      flight until it reaches memory). Where it is above 0, every call of
      a loop reading two streams or more checks its addresses and, when a
      source trails that closely, runs the staged loop (`passes/staging.py`:
      strips computed into a buffer in cache, streamed out of it), or the
      plain loop where the loop cannot be staged; 0: no check.

    ``origin`` says where the choices come from, ``reasons`` why (per row)."""
    stream_loads: LoadStage
    sources: LoadStage
    origin: str
    reasons: dict = field(default_factory=dict, compare=False)
    page_alias_bytes: int = 0


# The rows of every profile.
ROWS = ("stream_loads", "sources", "page_alias_bytes")
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
    "stream_loads": (LoadStage("t1", 4096),
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
_AMD_ZEN5 = {
    "stream_loads": (LoadStage("nta", 2048), "AMD EPYC Zen 5: prefetchnta 2 KiB ahead, copy 1.04x, triad 1.02x, "
                                             "gather 1.15x"),
    "sources": (LoadStage(), "AMD EPYC Zen 5: source prefetch for stores alone not measured there, so none"),
}
_AMD_ZEN4 = {
    "page_alias_bytes": (0, "measured on an AMD EPYC Zen 4 VM (family 25 model 17, AVX-512, LLVM znver4), "
                            "arrays allocated alike, check compiled out against in: triad 256 MiB float32 1.34x "
                            "vs 1.02x njit, NPBench jacobi_2d N=4000 9.9x vs 4.7x, heat_3d N=256 17.7x vs 5.8x: "
                            "no check"),
}
# Zen 5's prefetchnta measured on a Zen 2 (bench/stream_loads.py): copy
# 0.84x and triad 0.88x of the stores alone; no distance gained on both
_ZEN2_LOADS = (LoadStage(), "measured on an AMD EPYC Zen 2 VM (family 23 model 49, AVX2), 256 MiB float32: "
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
_UNMEASURED = {
    "stream_loads": (LoadStage(), "no measurement of this kind of CPU (the measured ones disagree: prefetchnta "
                                  "gained on Zen 5, lost on Zen 2 and Intel): plain loads until `python -m "
                                  "streamjit calibrate` measures it"),
    "sources": (LoadStage(), "no measurement of this kind of CPU: no software prefetch"),
    "page_alias_bytes": (STALLING_PAGE_ALIAS_BYTES,
                         "no measurement of this kind of CPU: the check of the CPU where trailing sources stall "
                         "streamed stores (Zen 2); its calls run the staged loop, which ran near the aligned loop "
                         "where nothing stalls (Intel Xeon VM, bench/staging.py, 256 MiB: Jacobi sweep 1.16x njit, "
                         "triad 1.48x)"),
}


def _cpu_kind(vendor, family):
    if vendor == "GenuineIntel" and family == 6:
        return _INTEL
    if vendor == "AuthenticAMD" and family == 0x1A:  # Zen 5
        return _AMD_ZEN5
    if vendor == "AuthenticAMD" and family == 0x19:  # Zen 3 and 4 (measured: Zen 4)
        return _AMD_ZEN4
    if vendor == "AuthenticAMD" and family == 0x17:  # Zen, Zen+ and Zen 2
        return _AMD_ZEN2
    return {}


def default_profile(vendor, family):
    """The profile of an uncalibrated CPU of this vendor and family: each
    row its kind's measured value, else the unmeasured one."""
    rows = {**_UNMEASURED, **_cpu_kind(vendor, family)}
    name = f"{vendor} family {family}" if family is not None else vendor
    return MachineProfile(rows["stream_loads"][0], rows["sources"][0], f"default for {name} (not calibrated)",
                          {row: why for row, (_, why) in rows.items()}, rows["page_alias_bytes"][0])


def _stage(record):
    """The `LoadStage` of a record `read_profile_file` has checked."""
    return LoadStage(record["hint"], record["distance"], record.get("nt_loads", False))


def stage_record(stage):
    """The profile file's record of a `LoadStage`: a dict of its ``hint``, ``distance`` and
    ``nt_loads`` (the inverse of reading one back)."""
    return {"hint": stage.hint, "distance": stage.distance, "nt_loads": stage.nt_loads}


_cached = {}


def machine_profile():
    """The `MachineProfile` in force: the calibrated choices stored in the
    profile file (each one that is there and valid), else this CPU's defaults."""
    path = profile_file()
    try:
        stamp = os.stat(path).st_mtime_ns
    except OSError:
        stamp = None
    key = (path, stamp)
    if key not in _cached:
        default = default_profile(*cpu_identity())
        record = read_profile_file().get("profile", {})
        rows, reasons = {}, dict(default.reasons)
        for name in ROWS:
            if name in record:
                rows[name] = _stage(record[name]) if name in ("stream_loads", "sources") else record[name]
                reasons[name] = record.get("reasons", {}).get(name, "calibrated")
            else:
                rows[name] = getattr(default, name)
        calibrated = [n for n in ROWS if n in record]
        origin = f"calibrated in {path}" if calibrated else default.origin
        if calibrated and len(calibrated) < len(ROWS):
            origin += f" ({', '.join(calibrated)} only; the rest: {default.origin})"
        _cached.clear()
        _cached[key] = MachineProfile(rows["stream_loads"], rows["sources"], origin, reasons,
                                      rows["page_alias_bytes"])
    return _cached[key]
