"""``STREAMJIT_DUMP_AFTER=<name>`` (or ``all``): print the code after a named
stage, as Numba's ``NUMBA_DEBUG_PRINT_AFTER`` does for its own passes. The
names are those of the Numba-IR passes (`kernel/pipeline.py`) and of the steps of the
LLVM build (`backend/stages.py`: ``loop_widths``, ``o3`` and the post-O3
stages)."""

import os

DUMP_ENV = "STREAMJIT_DUMP_AFTER"


def dump_after(name, what, show):
    """Print ``what`` after stage ``name`` with ``show()``, when asked to."""
    if os.environ.get(DUMP_ENV) in (name, "all"):
        print(f"---- streamjit: {what} after {name} ----")
        show()
