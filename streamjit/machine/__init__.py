"""What streamjit knows of the CPU it runs on, below the compiler: the
machine profile, its rows, their records and the profile file
(`profile.py`), the defaults measured per vendor and family
(`cpu_defaults.py`) and the copy and streaming thresholds
(`threshold.py`). Nothing here compiles a kernel: what measures the rows
(`measure/calibration.py`) stands above the compiler."""

# ``from streamjit.machine import machine_profile`` and the profile's other
# names, as before this was a folder (the user guide showed that import)
from .profile import *  # noqa: E402,F401,F403
