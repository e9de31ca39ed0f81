"""numba.stencil-style kernels for the compatibility tests."""

import math

import numba
import numpy as np


def avg3(a):
    return (a[-1] + a[0] + a[1]) / 3


def forward_diff(a):
    return a[1] - a[0]


def jacobi(a):
    return 0.2 * (a[0, 0] + a[0, -1] + a[0, 1] + a[-1, 0] + a[1, 0])


def jacobi_f32(a):
    return np.float32(0.25) * (a[0, -1] + a[0, 1] + a[-1, 0] + a[1, 0])


def asymmetric(a):
    return a[0, 2] - a[-3, 0]


def laplace3d(a):
    return a[1, 0, 0] + a[-1, 0, 0] + a[0, 1, 0] + a[0, -1, 0] + a[0, 0, 1] + a[0, 0, -1] - 6 * a[0, 0, 0]


def two_inputs(a, b):
    return a[0, 1] * b[0, -1] + b[1, 0]


def weighted(a, w):
    return a[-1] * w[0] + a[0] * w[1] + a[1] * w[2]


def windowed_sum(a):
    acc = 0.0
    for k in range(-2, 3):
        acc += a[k]
    return acc


def branchy(a):
    if a[0] > 0:
        return a[-1]
    return a[1] * 2


@numba.njit
def smooth(x):
    return x / (1 + abs(x))


def with_calls(a):
    return smooth(a[-1]) + math.sqrt(abs(a[1])) + np.float64(a[0])


def int_average(a):
    return (a[-1] + a[1]) // 2


def comparison(a):
    return a[-1] < a[1]
