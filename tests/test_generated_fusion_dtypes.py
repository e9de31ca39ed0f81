"""Generated kernels of chained temporaries over every dtype: producer-consumer
fusion (`passes/rewrite/array_expressions.py`) and fused slice stores compared with
numba.njit bit for bit.

Each kernel is drawn from a fixed seed (the same kernels at every run) as

    def kernel(out, a, b, s):
        t = <expression of a, b, s>
        u = <expression of t[1:], t[:-1], b[1:], s>        (a chain of one to three
        v = <expression of u[1:], u[:-1], a[2:], s>          temporaries, each read
        out[k:] = <expression of the last, its views, a[k:]> through shifted views)

whose expressions mix ``+ - * / // %``, unary ``-``, comparisons,
``np.where(<comparison>, x, y)``, ``np.maximum``/``np.minimum`` (NaN
propagating), the scalar ``s`` and integer and float constants. One kernel
per dtype combination: every dtype (int8..int64, uint8..uint64, float32,
float64, bool) is drawn once as ``a``'s, once as ``b``'s, once as the
scalar's and as the destination's where exact (a floating result is stored
into a float or bool destination only: a float out of an integer's range
converts to no defined value). Each compiled kernel runs on many inputs:
sizes from 0, offset (misaligned) operands, full-range integers with zeros
(NumPy's error model: ``x // 0`` is 0), floats with NaNs, infinities and
-0.0. Numba computes integers at 64 bits with signed results flagged
``nsw``: a signed 64-bit overflow is undefined, and njit's own result then
changes with the expression's spelling (``c > b * b`` and
``c[:-1] > b[1:] * b[1:]`` differ, LLVM folding ``x * x >= 0`` in one), so a
kernel with a 64-bit integer operand draws its 64-bit integers within
±2**15 (and no ``//`` or ``%``: ``INT64_MIN // -1``). An expression
numba.njit rejects is drawn again (the kernel must be rejected by
streamjit too).
"""

import random

import numba
import numpy as np
import pytest

import streamjit as sj

pytestmark = pytest.mark.filterwarnings("ignore::streamjit.StreamWarning")
DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64, np.float32, np.float64,
          np.bool_]
SIZES = (0, 1, 2, 3, 8, 33, 101)
DRAWS = 6  # expressions drawn per dtype combination before giving up


def _expression(rng, arrays, scalars, depth, divide):
    """Source of an expression with at least one of ``arrays``."""
    anchor = rng.choice(arrays)
    if depth == 0:
        return anchor
    other = _expression(rng, arrays, scalars, depth - 1, divide) if rng.random() < 0.6 else rng.choice(
        arrays + scalars)
    kind = rng.choice(["arith", "arith", "compare", "where", "extreme", "negate"])
    if kind == "arith":
        op = rng.choice(["+", "-", "*", "/"] + (["//", "%"] if divide else []))
        return f"({anchor} {op} {other})" if rng.random() < 0.5 else f"({other} {op} {anchor})"
    if kind == "compare":
        return f"({anchor} {rng.choice(['<', '>', '==', '!=', '<=', '>='])} {other})"
    if kind == "where":
        third = rng.choice(arrays + scalars)
        return f"np.where({anchor} > {other}, {third}, {rng.choice([anchor, other])})"
    if kind == "extreme":
        return f"np.{rng.choice(['maximum', 'minimum'])}({anchor}, {other})"
    return f"(-{anchor})"


def _source(rng, divide):
    depth = rng.choice([1, 2, 3])
    constants = [rng.choice(["2", "3", "-5", "1.5", "0.25"])]
    lines = [f"    t0 = {_expression(rng, ['a', 'b'], ['s'] + constants, 2, divide)}"]
    for level in range(1, depth):
        prev = f"t{level - 1}"
        operand = "b" if level % 2 else "a"
        views = [f"{prev}[1:]", f"{prev}[:-1]", f"{operand}[{level}:]"]
        lines.append(f"    t{level} = {_expression(rng, views, ['s'] + constants, 2, divide)}")
    last = f"t{depth - 1}"
    views = [f"{last}[1:]", f"{last}[:-1]", f"a[{depth}:]"]
    lines.append(f"    out[{depth}:] = {_expression(rng, views, ['s'] + constants, 2, divide)}")
    return "def kernel(out, a, b, s):\n" + "\n".join(lines) + "\n"


def _data(rng, dtype, n, wide):
    """``n`` random elements of ``dtype``, in a buffer one element longer (the view starts one element in);
    64-bit integers within ±2**15 for a ``wide`` kernel (one with a 64-bit integer operand)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        values = rng.integers(0, 2, n + 1).astype(np.bool_)
    elif dtype.kind in "iu":
        info = np.iinfo(dtype)
        low, high = (max(info.min, -2 ** 15), 2 ** 15) if wide and dtype.itemsize == 8 else (info.min, info.max)
        values = rng.integers(low, high, n + 1, dtype=dtype, endpoint=True)
        values[rng.integers(0, n + 1, (n + 1) // 8)] = 0
    else:
        values = (rng.standard_normal(n + 1) * 10.0 ** rng.integers(-3, 5, n + 1)).astype(dtype)
        special = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0], dtype)
        values[rng.integers(0, n + 1, (n + 1) // 6)] = special[rng.integers(0, 5, (n + 1) // 6)]
    return values[1:]


def _scalar(rng, dtype, wide):
    return _data(rng, dtype, 1, wide)[0]


def _floating(*dtypes):
    """Whether NumPy's promotion of ``dtypes`` is not an integer or bool (uint64 with a signed integer: float64)."""
    return np.result_type(*dtypes).kind not in "iub"


def _bits(x):
    return x.view(np.uint8) if x.dtype.kind != "b" else x


def _wide(*dtypes):
    """Whether any of ``dtypes`` is a 64-bit integer."""
    return any(np.dtype(d).itemsize == 8 and np.dtype(d).kind in "iu" for d in dtypes)


def _kernels():
    """(combination id, source, dtypes of out, a, b, s): one per dtype combination, drawn from a fixed seed."""
    rng, found = random.Random(20240613), []
    n = len(DTYPES)
    for k in range(n):
        a, b, s = DTYPES[k], DTYPES[(3 * k + 1) % n], DTYPES[(5 * k + 2) % n]
        found.append((k, [_source(rng, divide=not _wide(a, b, s)) for _ in range(DRAWS)], (a, b, s)))
    return found


def _destination(k, source, a, b, s):
    """``out``'s dtype: any where the expression is exact in integers, else a float or bool."""
    wanted = DTYPES[(7 * k + 3) % len(DTYPES)]
    if _floating(a, b, s) or " / " in source or "1.5" in source or "0.25" in source:
        return wanted if np.dtype(wanted).kind in "fb" else (np.float32, np.float64, np.bool_)[k % 3]
    return wanted


@pytest.mark.parametrize("k, sources, dtypes", _kernels(), ids=lambda x: x if isinstance(x, int) else "")
def test_generated_chains_of_temporaries_match_njit_bit_for_bit(k, sources, dtypes):
    a_dtype, b_dtype, s_dtype = dtypes
    wide = _wide(*dtypes)
    rng = np.random.default_rng(k)
    for source in sources:
        namespace = {"np": np}
        exec(compile(source, f"<generated kernel {k}>", "exec"), namespace)
        kernel = namespace["kernel"]
        out_dtype = _destination(k, source, a_dtype, b_dtype, s_dtype)
        plain = numba.njit(kernel)
        streamed = sj.stream_kernel(stream_stores=True, threshold=None)(kernel)
        first = (_data(rng, out_dtype, 5, wide), _data(rng, a_dtype, 5, wide), _data(rng, b_dtype, 5, wide),
                 _scalar(rng, s_dtype, wide))
        try:
            with np.errstate(all="ignore"):
                plain(*[x.copy() if isinstance(x, np.ndarray) else x for x in first])
        except Exception as rejected:  # (a typing error: numba.njit rejects this expression; draw another)
            with pytest.raises(type(rejected)):
                streamed(*[x.copy() if isinstance(x, np.ndarray) else x for x in first])
            continue
        for n in SIZES:
            for _ in range(3):
                args = (_data(rng, out_dtype, n, wide), _data(rng, a_dtype, n, wide), _data(rng, b_dtype, n, wide),
                        _scalar(rng, s_dtype, wide))
                want, got = args[0].copy(), args[0].copy()
                plain(want, *args[1:])
                streamed(got, *args[1:])
                assert np.array_equal(_bits(got), _bits(want)), (source, out_dtype, n, got, want)
        return
    pytest.fail(f"numba.njit rejected all {DRAWS} expressions drawn for {dtypes}")
