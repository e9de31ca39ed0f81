"""Numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``): its device arrays."""


def host_array(array):
    """The NumPy array behind a simulated device array (``FakeCUDAArray``),
    or ``array`` itself for any other."""
    return getattr(array, "_ary", array)
