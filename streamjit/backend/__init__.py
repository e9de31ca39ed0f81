"""Where the machine code is built, above the post-O3 stages: one build,
Numba's O3 then the stages (`o3.py`), run by the code library of the host
build (`library.py`) and by the build for another CPU, for inspection
(`cross_target.py`)."""
