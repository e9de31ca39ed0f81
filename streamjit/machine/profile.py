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

``python -m streamjit calibrate`` (`measure/calibration.py`) measures the choices
and stores the winners in the profile file, with the size crossovers of
`threshold.py`. A machine never calibrated gets the defaults for its
vendor and family (`cpu_defaults.py`), chosen from the measurements in bench/README.md,
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
from dataclasses import dataclass, field, fields

import llvmlite.binding as llvm
import platformdirs

from .cpu_defaults import UNMEASURED, measured_rows
from ..errors import StreamWarning

# Prefetch hints, as `llvm.prefetch`'s locality argument: NTA is 0 (no
# temporal locality), T2 1, T1 2, T0 3. "none": no software prefetch.
PREFETCH_HINTS = {"nta": 0, "t2": 1, "t1": 2, "t0": 3, "none": None}
# The item sizes (bytes) whose scalar stores have a non-temporal form (x86 `movnti`, 32 and 64 bits).
SCALAR_NT_ITEM_BYTES = (4, 8)
# The most operations per element the ``scalar_nt_ops`` row may allow
MAX_SCALAR_NT_OPS = 64
# The bytes of the widest vectors (AVX-512's), at which the ``wide_stencil_bytes`` row vectorizes stencil loops.
WIDE_VECTOR_BYTES = 64
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
    """``(vendor, family, model)`` from /proc/cpuinfo (``("GenuineIntel", 6,
    167)``, ``("AuthenticAMD", 25, 17)``); the architecture and None, None
    elsewhere."""
    vendor, found = platform.machine(), {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key, value = key.strip(), value.strip()
                if key == "vendor_id":
                    vendor = value
                elif key in ("cpu family", "model"):
                    found[key] = int(value)
                elif not key and vendor != platform.machine():
                    break  # the end of the first processor's block
    except (OSError, ValueError):
        pass
    return vendor, found.get("cpu family"), found.get("model")


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


def _is_stage_bytes(value):
    return not isinstance(value, bool) and isinstance(value, int) and 0 <= value <= 1 << 20


def _is_stage(value):
    return (isinstance(value, dict) and isinstance(value.get("hint"), str) and value["hint"] in PREFETCH_HINTS
            and _is_stage_bytes(value.get("distance")) and isinstance(value.get("nt_loads", False), bool)
            and _is_stage_bytes(value.get("min_row_bytes", 0)))


def _item_sizes(allowed):
    """(check, what it should be) of a row listing item sizes out of ``allowed``."""
    return (lambda v: isinstance(v, list) and all(type(n) is int and n in allowed for n in v),
            f"a list of the item sizes {', '.join(map(str, allowed[:-1]))} and {allowed[-1]}")


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
                     "1048576 bytes, \"nt_loads\": true or false, \"min_row_bytes\": 0 to 1048576}")
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
    aligned become non-temporal loads (``vmovntdqa``). With
    ``min_row_bytes`` (the stencil sources' row only), a loop that reads
    rows again prefetches only in calls whose rows hold that many bytes:
    its aligned loop has a copy without prefetches, chosen per call
    (`passes/align_peel.py`)."""
    hint: str = "none"
    distance: int = 0
    nt_loads: bool = False
    min_row_bytes: int = 0

    def prefetches(self):
        return self.hint != "none" and self.distance > 0

    def describe(self):
        what = f"prefetch{self.hint} {self.distance} bytes ahead" if self.prefetches() else "no software prefetch"
        if self.prefetches() and self.min_row_bytes:
            what += f" in rows of {self.min_row_bytes} bytes or more"
        return what + (", non-temporal loads where aligned" if self.nt_loads else "")


def _row_field(check, expected):
    """A `MachineProfile` row: a required field whose metadata holds how the
    profile file's value is checked (``check(value)``) and what it should be
    (for the warning that drops a damaged one)."""
    return field(metadata={"check": check, "expected": expected})


@dataclass(frozen=True)
class MachineProfile:
    """The lowering choices in force on this machine, one row each.

    - ``stream_loads``: how the loads the user streams are lowered;
    - ``sources``: the unit-stride sources of a loop whose stores stream,
      when their arrays are not streamed themselves;
    - ``stencil_sources``: the same in a stencil's loop that loads rows of
      one array again, as a 2-D or 3-D sweep's next rows load its rows from
      the cache as their neighbours (`passes/stream_loads.reads_rows_again`);
    - ``page_alias_bytes``: how far (in bytes, modulo 4 KiB) a source may
      trail a streamed store before the store stalls the loop's loads (4K
      aliasing: the core compares the low 12 address bits of a load with
      those of the stores in flight, and a non-temporal store stays in
      flight until it reaches memory). Where it is above 0, every call of
      a loop reading two streams or more checks its addresses and, when a
      source trails that closely, runs the staged loop (`passes/staging.py`:
      strips computed into a buffer in cache, streamed out of it), or the
      plain loop where the loop cannot be staged; 0: no check;
    - ``strip_bytes``: the bytes of each destination one strip of the
      staged loop computes before streaming them out (a multiple of the
      cache line);
    - ``scalar_nt_bytes``: the item sizes (bytes) whose streamed stores,
      where the vectorizer leaves them scalar (a loop that does not
      vectorize), become scalar non-temporal stores (``movnti``); the
      others stay plain;
    - ``scalar_nt_ops``: the most floating-point operations per element
      stored (`passes/loop_work.float_operations`) a loop that does not
      vectorize may compute and still take those scalar non-temporal
      stores; a loop computing more keeps plain stores;
    - ``wide_stencil_bytes``: the item sizes (bytes) whose streamed
      stencil loops (an array loaded at two elements or more per iteration)
      are vectorized with `WIDE_VECTOR_BYTES` vectors, instead of the width
      LLVM prefers for the CPU (256 bits on many AVX-512 CPUs); none on a
      CPU without AVX-512.

    ``origin`` says where the choices come from, ``reasons`` why (per row);
    neither enters a comparison or the ``repr`` (a kernel's cache key holds
    the rows, `plan.StreamOptions`).

    Each row is declared here once: a field whose metadata holds the check
    of its value in the profile file (`_row_field`); `ROWS`, the file's
    checks, the rows read back as load stages and `NO_ROWS` follow from the
    fields, and the kernels' options (``options.machine``), their cache key
    (`plan.StreamOptions.cache_key`), calibration's kernels and ``info``
    iterate them. A new row adds its field, its defaults per CPU
    (`cpu_defaults.py`: at least the unmeasured one) and the pass that
    reads it (``options.machine.<row>``); then, if it is measured, its
    measurement (`measure/calibration.py`, the CLI's ``calibrate``), and
    its wording in ``info`` (`measure/info.ROW_LINES`; else its value is
    shown)."""
    stream_loads: LoadStage = _row_field(*_STAGE)
    sources: LoadStage = _row_field(*_STAGE)
    stencil_sources: LoadStage = _row_field(*_STAGE)
    page_alias_bytes: int = _row_field(lambda v: not isinstance(v, bool) and isinstance(v, int) and 0 <= v < 4096,
                                       "a number of bytes from 0 to 4095")
    strip_bytes: int = _row_field(
        lambda v: not isinstance(v, bool) and isinstance(v, int) and 64 <= v <= 1 << 16 and v % 64 == 0,
        "a number of bytes from 64 to 65536, a multiple of 64")
    scalar_nt_bytes: tuple = _row_field(*_item_sizes(SCALAR_NT_ITEM_BYTES))
    scalar_nt_ops: int = _row_field(
        lambda v: not isinstance(v, bool) and isinstance(v, int) and 0 <= v <= MAX_SCALAR_NT_OPS,
        f"a number of operations from 0 to {MAX_SCALAR_NT_OPS}")
    wide_stencil_bytes: tuple = _row_field(*_item_sizes((1, 2, 4, 8, 16)))
    origin: str = field(default="", compare=False, repr=False)
    reasons: dict = field(default_factory=dict, compare=False, repr=False)


# The rows of every profile (its fields with a file check), and those holding a `LoadStage`.
_ROW_FIELDS = [f for f in fields(MachineProfile) if "check" in f.metadata]
ROWS = tuple(f.name for f in _ROW_FIELDS)
_STAGE_ROWS = tuple(f.name for f in _ROW_FIELDS if f.type in (LoadStage, "LoadStage"))
# What each key of the profile file's "profile" object must hold (key -> check, what it should be)
_PROFILE_KEYS = {
    **{f.name: (f.metadata["check"], f.metadata["expected"]) for f in _ROW_FIELDS},
    "reasons": (lambda v: isinstance(v, dict) and all(isinstance(r, str) for r in v.values()), "an object of strings"),
}
# The rows of a kernel compiled for no CPU (the GPU's options): each row
# its type's empty value, which a row's reader takes as "nothing": no
# prefetch, no 4K check, no staging, no scalar NT store, LLVM's own vector
# width.
NO_ROWS = MachineProfile(**{f.name: f.type() for f in _ROW_FIELDS},
                         origin="none: a kernel compiled for no CPU reads no row")


def default_profile(vendor, family, model=None):
    """The profile of an uncalibrated CPU of this vendor, family and model:
    each row its kind's measured value, else the unmeasured one
    (`cpu_defaults.py`)."""
    rows = {**UNMEASURED, **measured_rows(vendor, family, model)}
    name = vendor if family is None else f"{vendor} family {family}" + ("" if model is None else f" model {model}")
    return MachineProfile(origin=f"default for {name} (not calibrated)",
                          reasons={row: why for row, (_, why) in rows.items()},
                          **{row: _row(row, value) for row, (value, _) in rows.items()})


def _row(name, record):
    """A row's value from its record (the profile file's, or `cpu_defaults.py`'s, checked)."""
    if name in _STAGE_ROWS:
        return LoadStage(record["hint"], record["distance"], record.get("nt_loads", False),
                         record.get("min_row_bytes", 0))
    return tuple(record) if isinstance(record, list) else record


def stage_record(stage):
    """The profile file's record of a `LoadStage`: a dict of its ``hint``, ``distance``,
    ``nt_loads`` and, where set, ``min_row_bytes`` (the inverse of reading one back)."""
    return {"hint": stage.hint, "distance": stage.distance, "nt_loads": stage.nt_loads,
            **({"min_row_bytes": stage.min_row_bytes} if stage.min_row_bytes else {})}


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
                rows[name] = _row(name, record[name])
                reasons[name] = record.get("reasons", {}).get(name, "calibrated")
            else:
                rows[name] = getattr(default, name)
        calibrated = [n for n in ROWS if n in record]
        origin = f"calibrated in {path}" if calibrated else default.origin
        if calibrated and len(calibrated) < len(ROWS):
            origin += f" ({', '.join(calibrated)} only; the rest: {default.origin})"
        if rows["wide_stencil_bytes"] and vector_isa() != "AVX-512":
            rows["wide_stencil_bytes"] = ()
            reasons["wide_stencil_bytes"] = f"this CPU has no AVX-512 ({vector_isa()}): LLVM's own vector width"
        _cached.clear()
        _cached[key] = MachineProfile(origin=origin, reasons=reasons, **rows)
    return _cached[key]
