"""Size-aware streaming: how many bytes make streaming pay on this machine.

Streamed (non-temporal) stores bypass the cache: beyond the last-level
cache they save the read-for-ownership traffic (1.2-1.5x faster here), but
data that would have stayed in cache gets evicted to memory (about 2-3x
slower at 256 KiB). A kernel with ``threshold=`` streams only when the bytes
of its streamed arrays exceed the threshold; ``"auto"`` takes it from, in
order: the environment variable ``STREAMJIT_THRESHOLD`` (bytes), the value
``python -m streamjit calibrate`` measured and stored in the user cache
directory, a third of the last-level cache (the copy crossover measured on
our machines: 8-12 MiB per array with a 32 MiB L3), or 8 MiB.
"""

import json
import os

import platformdirs

from .machine import cache_sizes

ENV_VAR = "STREAMJIT_THRESHOLD"
_FALLBACK_BYTES = 8 << 20


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


def calibration_file():
    return os.path.join(platformdirs.user_cache_dir("streamjit"), "calibration.json")


def _calibrated():
    try:
        with open(calibration_file()) as f:
            value = json.load(f)["threshold_bytes"]
        return int(value) if int(value) >= 0 else None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def default_threshold():
    """``(bytes, where it came from)`` for ``threshold="auto"``."""
    env = os.environ.get(ENV_VAR)
    if env is not None:
        try:
            value = int(env)
        except ValueError:
            value = -1
        if value < 0:
            raise ValueError(f"{ENV_VAR} must be a number of bytes >= 0, got {env!r}")
        return value, f"environment variable {ENV_VAR}"
    calibrated = _calibrated()
    if calibrated is not None:
        return calibrated, f"calibration in {calibration_file()}"
    llc = last_level_cache_bytes()
    if llc:
        return llc // 3, f"a third of the {llc >> 20} MiB last-level cache"
    return _FALLBACK_BYTES, "fallback (cache size unknown)"


def save_calibration(threshold_bytes, measurements):
    """Store a measured threshold where ``default_threshold`` finds it."""
    path = calibration_file()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump({"threshold_bytes": int(threshold_bytes), "measurements": measurements}, f, indent=1)
    return path
