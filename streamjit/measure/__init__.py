"""Side-by-side measurements of streamed kernels, shared by the CLI
(`python -m streamjit demo|bench|calibrate`) and the scripts in `bench/`:
the kernels timed (`kernels.py`), how they are timed (`timing.py`) and the
tables made of the times (`tables.py`). ``from streamjit import measure``
gives all three. Beside them, what measures this machine's profile rows
(`calibration.py`, `calibration_stencils.py`), what ``python -m streamjit
info`` prints (`info.py`) and the plots of the tables (`plots.py`): all
compile and time kernels, so they stand above the compiler, and
`machine/` below only stores and reads what they measure."""

from .kernels import *  # noqa: F401,F403
from .tables import *  # noqa: F401,F403
from .timing import *  # noqa: F401,F403
