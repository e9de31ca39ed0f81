"""The Numba releases streamjit is tested with, checked at import.

streamjit subclasses Numba's compiler pipeline and code library and calls
private Numba APIs (all through `numba_internals/`, whose contract tests,
`tests/test_numba_seam.py`, run on every release declared), whose
behaviour changes between releases without an error: on Numba 0.62-0.65
kernels still ran, but their aligned loops no longer vectorized (a copy got
one scalar ``movnti``, and no warning); on 0.61 the report counted no
streamed store where the machine code had 18. So an older Numba fails at
import, naming the tested range, and a newer one (not tested yet) warns.
``pyproject.toml`` declares the same range (a test checks that they agree),
and ``.ci/run`` runs the suite on both ends of it.
"""

import re
import warnings

import numba

from ..errors import StreamWarning

OLDEST = (0, 66)  # the oldest Numba release tested (its core suite, in CI)
NEWEST = (0, 68)  # the newest (the whole suite)
TESTED = f"numba {OLDEST[0]}.{OLDEST[1]} to {NEWEST[0]}.{NEWEST[1]}"


def numba_release(version=numba.__version__):
    """``(major, minor)`` of a Numba version string."""
    return tuple(int(part) for part in re.match(r"(\d+)\.(\d+)", version).groups())


def check_numba(version=numba.__version__):
    """Raise ImportError for a Numba older than the tested range; warn for a newer one."""
    release = numba_release(version)
    if release < OLDEST:
        raise ImportError(f"streamjit needs {TESTED} (the releases it is tested with); numba {version} is "
                          f"installed, on which kernels compile without streaming: pip install "
                          f"'numba>={OLDEST[0]}.{OLDEST[1]},<{NEWEST[0]}.{NEWEST[1] + 1}'")
    if release > NEWEST:
        warnings.warn(f"streamjit is tested with {TESTED}; numba {version} is newer: check what kernels stream "
                      "with stream_report()", StreamWarning, stacklevel=3)
