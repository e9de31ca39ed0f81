"""Where the machine code is built, above the post-O3 stages: the code
library that runs the stages on the host build (`library.py`) and the
build for another CPU, for inspection (`cross_target.py`)."""
