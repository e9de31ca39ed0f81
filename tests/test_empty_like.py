"""streamjit.empty_like takes numpy.empty_like's arguments, with its
defaults, and lays its arrays out as NumPy does, placed apart where it can."""

import numpy as np
import pytest

import streamjit as sj

PAGE_BYTES = 4096


def layout(array):
    return type(array), array.dtype, array.shape, array.strides


@pytest.mark.parametrize("options", [{}, {"order": "K"}, {"order": "C"}, {"order": "F"}, {"order": "A"},
                                     {"subok": False}, {"dtype": np.float32, "order": "F"},
                                     {"shape": (300, 200), "order": "F"}])
@pytest.mark.parametrize("prototype", [np.ones((256, 300), order="F"), np.ones((256, 300)),
                                       np.ones((256, 600))[:, ::2], np.matrix(np.ones((256, 300)))],
                         ids=["fortran", "c", "strided", "matrix"])
def test_lays_out_as_numpys_empty_like(prototype, options):
    assert layout(sj.empty_like(prototype, **options)) == layout(np.empty_like(prototype, **options))


def test_a_fortran_array_is_placed_apart_in_fortran_order():
    prototype = np.ones((512, 512), order="F")
    placed = sj.empty_like(prototype)
    assert placed.flags.f_contiguous
    offset = (placed.ctypes.data - prototype.ctypes.data) % PAGE_BYTES
    assert min(offset, PAGE_BYTES - offset) >= 512
