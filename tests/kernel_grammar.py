"""A grammar of loop kernels for differential testing (streamjit against
numba.njit), deterministic from a seed, independent of streamjit.

`generate(seed)` returns a `Case`: the kernel's Python source (a function
``kernel(out, a, b, s)``), the Numba options it is compiled with (the same
for both compilers: ``parallel``, ``fastmath`` (``True`` or a set of
flags), ``boundscheck``,
``error_model="numpy"``, ``nogil``), the streamjit options, the placements of its operands
and the features it exercises (for counts). `Case.inputs(placement, seed)`
builds the arguments and the buffers that back them; called twice with the
same arguments it builds identical inputs, one set per compiler.

Grammar (one statement shape per kernel, drawn from `SHAPES`):

- ``loop``: ``for i in range(lo, n - hi): out[i] = E`` with an optional early
  exit before or after the store (``return``, ``break``, ``raise
  ValueError``), taken at a data- or index-dependent iteration, an optional
  scalar reduction ``acc += E`` returned, or an in-place ``out[i] += E``;
- ``ifelse``: ``if a[i] > b[i]: out[i] = E1 else: out[i] = E2``;
- ``nest2d``: a 2-D nest, optionally inside a time loop ``for t in range(T)``;
- ``slice``: ``out[lo:n-hi] = a[lo+d:n-hi+d] OP b[...]`` (1-D and 2-D shifted);
- ``temps``: temporaries chained through shifted views (``t = a + 1.0;
  u = t[1:] * t[:-1]; out[1:] = u``);
- ``where``: ``np.where``, comparisons, ``np.maximum``/``np.minimum``;
- ``zerodiv``: ``a[i] // b[i]`` or ``a[i] / b[i]`` with a zero planted in
  ``b`` (Numba raises ZeroDivisionError under the default error model);
- ``bounds``: ``out[i] = a[i + k]`` running past the end, with
  ``boundscheck=True`` (IndexError).

E draws loads of ``a``/``b`` at the loop index (sometimes shifted by one),
the scalar ``s`` (its own dtype), small integer or float constants,
``+ - *``, ``min``/``max`` and, in nests, the time variable.

Dtypes: each of ``out``, ``a``, ``b``, ``s`` is drawn from `DTYPES`
independently, then restricted so that every store is defined behaviour in
LLVM (no float or complex value converted to an integer: out-of-range
conversions are poison, so two correct compilers may differ there). Where
an operand is a signed integer, every integer input is drawn small enough
that no expression overflows (`no_overflow_bound`): Numba's signed
arithmetic is ``nsw``, so an overflow is undefined too, and LLVM folds a
comparison of ``a[i] * a[i]`` as if the product were never negative.

Placements: ``c`` (fresh C-contiguous), ``offset`` (a view a few elements
into a larger buffer), ``reversed``, ``strided``, ``fortran`` (2-D), ``empty``
(zero-length), ``page`` (one buffer: ``out`` lies ``d`` bytes, 0..192, past
``a`` modulo 4 KiB, which makes streamjit's staged path run).
"""

import random
from dataclasses import dataclass, field

import numpy as np

DTYPES = (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
          np.float32, np.float64, np.bool_, np.complex128)
SHAPES = ("loop", "ifelse", "nest2d", "slice", "temps", "where", "zerodiv", "bounds")
SIZES_1D = (0, 1, 3, 7, 17, 31, 33, 63, 65, 100, 257, 1000, 1027, 4099)
SIZES_2D = ((1, 1), (3, 5), (7, 17), (16, 33), (31, 65), (9, 257), (40, 100))
PLACEMENTS = ("c", "offset", "reversed", "strided", "page", "empty")
PLACEMENTS_2D = ("c", "offset", "strided", "fortran", "page", "empty")
# streamjit option sets (the Numba options travel separately: both compilers get them)
STREAM_OPTIONS = (
    {"stream_stores": True},
    {"stream_stores": ["out"]},
    {"stream_stores": True, "stream_loads": True},
)
THRESHOLDS = (None, 0, "auto")


def kind(dtype):
    return np.dtype(dtype).kind          # b i u f c


def is_int(dtype):
    return kind(dtype) in "iub"


@dataclass
class Case:
    seed: int
    shape: str
    source: str
    ndim: int
    dtypes: dict                  # out, a, b, s -> numpy dtype
    numba_options: dict           # for both numba.njit and stream_kernel
    stream_options: dict          # streamjit's own (stream_stores, stream_loads, threshold)
    placements: list
    features: set = field(default_factory=set)
    zero_at: object = None        # index planted with 0 in b (zerodiv)
    int_range: str = "full"       # "full" or "small" integer inputs
    calls: int = 2                # calls per placement on the same arrays (reuse)

    @property
    def fastmath(self):
        return bool(self.numba_options.get("fastmath"))

    def options_label(self):
        parts = [f"{k}={v!r}" for k, v in {**self.stream_options, **self.numba_options}.items()]
        return ", ".join(parts)

    def inputs(self, placement, seed):
        """(args, buffers): the kernel's arguments for one placement, and the
        arrays that back them (compared whole: a store outside a view shows)."""
        return build_inputs(self, placement, seed)


# --------------------------------------------------------------- expressions

class Expr:
    def __init__(self, rnd, dtypes, ndim, allow_minmax=True, time_var=False):
        self.rnd, self.dtypes, self.ndim = rnd, dtypes, ndim
        self.complex = any(kind(dtypes[n]) == "c" for n in ("a", "b", "s"))
        self.int_only = is_int(dtypes["out"]) and kind(dtypes["out"]) != "b"
        self.allow_minmax = allow_minmax and not self.complex
        self.time_var = time_var
        self.features = set()

    def index(self, shift=0):
        i = "i" if self.ndim == 1 else "i, j"
        if shift and self.ndim == 1:
            return f"i {'+' if shift > 0 else '-'} {abs(shift)}"
        if shift:
            return f"i, j {'+' if shift > 0 else '-'} {abs(shift)}"
        return i

    def leaf(self, shifts=(0,)):
        r = self.rnd.random()
        if r < 0.38:
            return f"a[{self.index(self.rnd.choice(shifts))}]"
        if r < 0.76:
            return f"b[{self.index(self.rnd.choice(shifts))}]"
        if r < 0.88:
            self.features.add("scalar s")
            return "s"
        if self.time_var and r < 0.94:
            return "t"
        if self.int_only:
            return str(self.rnd.choice((1, 2, 3, 7)))
        return self.rnd.choice(("1", "2", "1.5", "0.25", "3.0"))

    def draw(self, depth=2, shifts=(0,)):
        if depth == 0 or self.rnd.random() < 0.25:
            return self.leaf(shifts)
        r = self.rnd.random()
        x, y = self.draw(depth - 1, shifts), self.draw(depth - 1, shifts)
        if self.allow_minmax and r < 0.2:
            self.features.add("min/max")
            return f"{self.rnd.choice(('min', 'max'))}({x}, {y})"
        op = self.rnd.choice(("+", "-", "*"))
        self.features.add(f"op {op}")
        return f"({x} {op} {y})"


# ----------------------------------------------------------------- dtypes

def draw_dtypes(rnd, shape):
    """out, a, b, s dtypes: mixed, with no float/complex value stored into an integer."""
    while True:
        d = {n: np.dtype(rnd.choice(DTYPES)) for n in ("out", "a", "b", "s")}
        if rnd.random() < 0.3:                       # same dtype throughout, sometimes
            d["a"] = d["b"] = d["out"]
        if shape == "zerodiv":
            if kind(d["out"]) == "b" or kind(d["out"]) == "c":
                continue
            if is_int(d["out"]):
                # a // b of integers: operands integer (no bool: bool // bool is odd in NumPy), small values
                if not all(kind(d[n]) in "iu" for n in ("a", "b")):
                    continue
                if np.result_type(d["a"], d["b"]).kind not in "iu":
                    continue
            elif kind(d["a"]) == "c" or kind(d["b"]) == "c":
                continue
            return d
        if shape == "where" and any(kind(d[n]) == "c" for n in ("a", "b")):
            continue                                 # comparisons of complex do not type
        if shape == "ifelse" and any(kind(d[n]) == "c" for n in ("a", "b")):
            continue
        if kind(d["out"]) == "b":
            # a bool output stores a comparison (real operands only)
            if any(kind(d[n]) == "c" for n in ("a", "b", "s")):
                continue
            return d
        if is_int(d["out"]):
            operands = [d[n] for n in ("a", "b", "s")]
            if any(kind(x) in "fc" for x in operands):
                continue
            if np.result_type(*operands).kind not in "iub":   # uint64 with a signed int: float64
                continue
            if any(kind(x) == "u" for x in operands):
                # Numba computes unsigned scalars as uint64 (``b * b`` of uint32s)
                # and types integer literals and signed ones int64: uint64 beside
                # int64 is float64 (``max(b * b, a + a)``, ``t = a + 1``), whose
                # values beyond ``out``'s range convert as poison, so two correct
                # compilations differ (njit's own vectorized and scalar loops too)
                continue
        if kind(d["out"]) == "f" and any(kind(d[n]) == "c" for n in ("a", "b", "s")):
            continue
        return d


# ----------------------------------------------------------------- shapes

def _cast(d, expr):
    """The stored expression; a comparison when out is bool."""
    return expr


def _exit_condition(rnd, d, at):
    if kind(d["a"]) != "c" and kind(d["b"]) != "c" and rnd.random() < 0.6:
        return f"i > {at} and a[i] > b[i]"
    return f"i == {at}"


def shape_loop(rnd, d, case):
    e = Expr(rnd, d, 1)
    lo, hi = rnd.choice((0, 0, 1, 2)), rnd.choice((0, 0, 1, 2))
    shifts = (0,) + ((-1,) if lo >= 1 else ()) + ((1,) if hi >= 1 else ())
    rhs = e.draw(2, shifts)
    lines = []
    variant = rnd.choice(("plain", "exit", "exit", "reduce", "inplace"))
    prange = case.numba_options.get("parallel") and variant in ("plain", "reduce", "inplace")
    rng_fn = "prange" if prange else "range"
    body = []
    ret = None
    if variant == "reduce":
        zero = "0" if is_int(d["out"]) and kind(d["out"]) != "b" else ("0j" if e.complex else "0.0")
        if kind(d["out"]) == "b":
            zero = "0.0" if not e.complex else "0j"
        lines.append(f"    acc = {zero}")
        acc_term = e.draw(1, (0,))
        if kind(d["out"]) == "b" or (kind(d["out"]) in "iu" and not e.int_only):
            acc_term = "a[i]"
        body.append(f"acc += {acc_term}")
        ret = "acc"
        case.features.add("reduction sum")
    store_op = "+=" if variant == "inplace" and kind(d["out"]) != "b" else "="
    if store_op == "+=":
        case.features.add("in-place +=")
    if kind(d["out"]) == "b":
        rhs = f"{rhs} > {e.draw(1, (0,))}"
        case.features.add("comparison")
    store = f"out[i] {store_op} {rhs}"
    if variant == "exit" and not prange:
        at = rnd.choice((0, 5, 37, 200, 1500))
        cond = _exit_condition(rnd, d, at)
        how = rnd.choice(("return", "break", "raise"))
        act = {"return": "return i", "break": "break", "raise": "raise ValueError('early exit')"}[how]
        case.features.add(f"early {how}")
        exit_lines = [f"if {cond}:", f"    {act}"]
        body += exit_lines + [store] if rnd.random() < 0.5 else [store] + exit_lines
        ret = "-1" if how == "return" else rnd.choice((None, "n"))
    else:
        body.append(store)
    upper = "n" + (f" - {hi}" if hi else "")
    lines = ["    n = out.shape[0]"] + lines
    lines.append(f"    for i in {rng_fn}({lo}, {upper}):")
    lines += ["        " + b for b in body]
    if ret is not None:
        lines.append(f"    return {ret}")
    if prange:
        case.features.add("prange")
    case.features |= e.features
    return lines


def shape_ifelse(rnd, d, case):
    e = Expr(rnd, d, 1)
    e1, e2 = e.draw(2), e.draw(2)
    if kind(d["out"]) == "b":
        e1, e2 = f"{e1} > s", f"{e2} < s"
    rng_fn = "prange" if case.numba_options.get("parallel") else "range"
    if rng_fn == "prange":
        case.features.add("prange")
    case.features |= e.features | {"if/else stores"}
    return ["    n = out.shape[0]",
            f"    for i in {rng_fn}(n):",
            "        if a[i] > b[i]:",
            f"            out[i] = {e1}",
            "        else:",
            f"            out[i] = {e2}"]


def shape_nest2d(rnd, d, case):
    timed = rnd.random() < 0.5
    e = Expr(rnd, d, 2, time_var=timed)
    lo, hi = rnd.choice((0, 1)), rnd.choice((0, 1))
    shifts = (0,) + ((-1,) if lo else ()) + ((1,) if hi else ())
    rhs = e.draw(2, shifts)
    if kind(d["out"]) == "b":
        rhs = f"{rhs} > {e.draw(1)}"
    rng_fn = "prange" if case.numba_options.get("parallel") else "range"
    if rng_fn == "prange":
        case.features.add("prange")
    ind = "    "
    lines = []
    if timed:
        lines.append(f"    for t in range({rnd.choice((1, 2, 3))}):")
        ind = "        "
        case.features.add("time loop")
    lines += [f"{ind}for i in {rng_fn}(out.shape[0]):",
              f"{ind}    for j in range({lo}, out.shape[1]{' - 1' if hi else ''}):",
              f"{ind}        out[i, j] = {rhs}"]
    case.features |= e.features | {"2-D nest"}
    return lines


def _slice_op(rnd, d):
    ops = ["+", "-", "*"]
    return rnd.choice(ops)


def shape_slice(rnd, d, case):
    op = _slice_op(rnd, d)
    if case.ndim == 1:
        da, db = rnd.choice((-1, 0, 1)), rnd.choice((-1, 0, 1))
        lo, hi = 1, 1
        sa = f"a[{lo + da}:n - {hi - da}]" if hi - da else f"a[{lo + da}:n]"
        sb = f"b[{lo + db}:n - {hi - db}]" if hi - db else f"b[{lo + db}:n]"
        rhs = f"{sa} {op} {sb}"
        if rnd.random() < 0.4:
            rhs = f"({rhs}) {rnd.choice(('+', '*'))} s"
        if kind(d["out"]) == "b":
            rhs = f"{sa} > {sb}"
        lines = ["    n = out.shape[0]", f"    out[{lo}:n - {hi}] = {rhs}"]
    else:
        rhs = f"a[1:-1, :-2] {op} b[2:, 1:-1] {op} a[1:-1, 2:]"
        if kind(d["out"]) == "b":
            rhs = "a[1:-1, :-2] > b[2:, 1:-1]"
        lines = [f"    out[1:-1, 1:-1] = {rhs}"]
    if rnd.random() < 0.3:
        lines = [f"    for t in range({rnd.choice((1, 2))}):"] + ["    " + x for x in lines]
        case.features.add("time loop")
    case.features |= {"slice expression", f"op {op}"}
    return lines


def shape_temps(rnd, d, case):
    # t = a + c; u = t[1:] * t[:-1]; out[1:] = u  (and longer chains)
    c = "1" if is_int(d["out"]) and kind(d["out"]) != "b" else "1.0"
    op = rnd.choice(("*", "+", "-"))
    if case.ndim == 1:
        lines = [f"    t = a + {c}",
                 f"    u = t[1:] {op} t[:-1]"]
        if rnd.random() < 0.5:
            lines.append("    v = u[1:] - b[2:]")
            last, dst = "v", "out[2:]"
        else:
            last, dst = "u", "out[1:]"
    else:
        lines = [f"    t = a {op} b",
                 "    u = t[1:, 1:] + t[:-1, :-1]"]
        last, dst = "u", "out[1:, 1:]"
    if kind(d["out"]) == "b":
        lines.append(f"    {dst} = {last} > s")
    else:
        lines.append(f"    {dst} = {last}")
    if rnd.random() < 0.4:
        lines.append(f"    return {last}")
        case.features.add("returned array")
    case.features |= {"temporaries via views", f"op {op}"}
    return lines


def shape_where(rnd, d, case):
    sl = "[:]" if case.ndim == 1 else "[:, :]"
    if kind(d["out"]) == "b":
        rhs = rnd.choice(("a > b", "a <= s", "(a > b) == (b > s)"))
        case.features.add("comparison")
    else:
        e = Expr(rnd, {**d}, 1)
        choice = rnd.choice(("where", "maximum", "minimum"))
        if choice == "where":
            rhs = rnd.choice(("np.where(a > b, a, b)", "np.where(a > s, a + b, b * s)",
                              "np.where(a < b, a - s, b)"))
            case.features.add("np.where")
        else:
            rhs = f"np.{choice}(a, b)" + (" + s" if rnd.random() < 0.5 else "")
            case.features.add(f"np.{choice}")
    case.features.add("comparison")
    return [f"    out{sl} = {rhs}"]


def shape_zerodiv(rnd, d, case):
    floor = is_int(d["out"])
    op = "//" if floor else rnd.choice(("/", "//"))
    case.int_range = "small"
    case.features |= {"division by zero", f"op {op}"}
    return ["    n = out.shape[0]",
            "    for i in range(n):",
            f"        out[i] = a[i] {op} b[i]"]


def shape_bounds(rnd, d, case):
    e = Expr(rnd, d, 1)
    k = rnd.choice((1, 2, 5))
    rhs = f"a[i + {k}]"
    other = e.draw(1)
    if kind(d["out"]) == "b":
        rhs = f"{rhs} > {other}"
    elif rnd.random() < 0.5:
        rhs = f"({rhs} + {other})"
    case.features |= {"IndexError (boundscheck)"} | e.features
    return ["    n = out.shape[0]",
            "    for i in range(n):",
            f"        out[i] = {rhs}"]


SHAPE_FUNCS = {"loop": shape_loop, "ifelse": shape_ifelse, "nest2d": shape_nest2d, "slice": shape_slice,
               "temps": shape_temps, "where": shape_where, "zerodiv": shape_zerodiv, "bounds": shape_bounds}
PARALLEL_SHAPES = ("loop", "ifelse", "nest2d", "slice", "where")


def generate(seed, quick=False):
    """One `Case`, the same for the same seed. ``quick``: the test suite's
    budget (no ``parallel=True``, whose compiles take seconds; two
    placements, and for array expressions only C-contiguous ones, so each
    compiler compiles one signature)."""
    rnd = random.Random(seed)
    shape = SHAPES[rnd.randrange(len(SHAPES))]
    ndim = 2 if shape == "nest2d" else (rnd.choice((1, 2)) if shape in ("slice", "temps", "where") else 1)
    d = draw_dtypes(rnd, shape)
    numba_options = {}
    r = rnd.random()
    if shape in PARALLEL_SHAPES and r < 0.15 and not quick:
        numba_options["parallel"] = True
    elif r < 0.35 and not any(kind(d[n]) == "b" for n in ("a", "b")) or shape == "zerodiv" and r < 0.5:
        # True, or one of the flag sets Numba takes (libmvec's approximate
        # functions under "afn" only; reassociation without them)
        numba_options["fastmath"] = rnd.choice((True, True, {"afn"}, {"reassoc", "contract"}, {"nsz", "arcp"}))
    if shape == "bounds":
        numba_options["boundscheck"] = True
    elif rnd.random() < 0.1:
        numba_options["boundscheck"] = True
    # NumPy's error model: a division by zero gives inf, nan or 0 instead of
    # raising, so a loop dividing has no early exit (and may be staged)
    if rnd.random() < (0.5 if shape == "zerodiv" else 0.15):
        numba_options["error_model"] = "numpy"
    if shape == "zerodiv" and numba_options.get("error_model") == "numpy" and numba_options.get("fastmath") is True:
        # fastmath=True assumes no inf or nan (LLVM's ninf and nnan): the division by the zero
        # planted in b makes one, which is poison there, so two correct compilations differ
        # (fuzzer seed 30265: inf against njit's nan); a flag set without them instead
        numba_options["fastmath"] = {"nsz", "arcp"}
    if rnd.random() < 0.1:
        numba_options["nogil"] = True
    stream_options = dict(rnd.choice(STREAM_OPTIONS))
    stream_options["threshold"] = rnd.choice(THRESHOLDS)
    case = Case(seed, shape, "", ndim, d, numba_options, stream_options, [])
    body = SHAPE_FUNCS[shape](rnd, d, case)
    header = ["import numpy as np", "from numba import prange", "", "", "def kernel(out, a, b, s):"]
    case.source = "\n".join(header + body) + "\n"
    places = PLACEMENTS if ndim == 1 else PLACEMENTS_2D
    others = [p for p in places if p != "page"]
    if quick and shape in ("slice", "temps", "where"):
        others = ["c", "offset", "empty"] if ndim == 1 else ["c", "empty"]
    picked = ["page"] + rnd.sample(others, 1 if quick else 2)
    case.placements = picked
    if shape == "zerodiv":
        case.zero_at = rnd.choice((0, 3, 40, 600))
    return case


# ----------------------------------------------------------------- inputs

def no_overflow_bound(dtypes):
    """The largest integer input (in magnitude) of a kernel whose operands
    include a signed integer, so that no expression the grammar draws (at
    most four leaves, constants up to 7) overflows the narrowest signed
    type among them; None where none is signed (unsigned arithmetic wraps,
    as NumPy's does)."""
    signed = [np.iinfo(dtypes[n]).max for n in ("a", "b", "s") if kind(dtypes[n]) == "i"]
    return int((min(signed) / 7) ** 0.25) if signed else None


def random_values(rng, shape, dtype, int_range="full"):
    """Random values, never zero. ``int_range``: "full" (the dtype's), "small"
    (within 100) or a bound on the magnitude."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) > 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        limit = {"full": None, "small": 100}.get(int_range, int_range)
        lo, hi = (info.min, info.max) if limit is None else (max(info.min, -limit), min(info.max, limit))
        v = rng.integers(lo, hi, size=shape, dtype=dtype, endpoint=True)
        v[v == 0] = 1
        if int_range == "small" and dtype.kind == "i":
            v[v == -1] = 3          # no INT_MIN // -1 either: values are small anyway
        return v
    values = rng.standard_normal(shape) * 1e3
    values[values == 0] = 1.0
    if dtype.kind == "c":
        values = values + 1j * rng.standard_normal(shape)
    return values.astype(dtype)


def _shape(case, n):
    return n if case.ndim == 1 else n


def placement_size(case, placement, rng):
    if placement == "empty":
        return 0 if case.ndim == 1 else (0, 5)
    if case.ndim == 1:
        return SIZES_1D[1 + rng.integers(len(SIZES_1D) - 1)]
    return SIZES_2D[rng.integers(len(SIZES_2D))]


def build_inputs(case, placement, seed):
    rng = np.random.default_rng(seed)
    shape = placement_size(case, placement, rng)
    bound = no_overflow_bound(case.dtypes)
    int_range = case.int_range if bound is None else min(bound, 100 if case.int_range == "small" else bound)
    size = int(np.prod(shape))
    dts = case.dtypes
    buffers, arrays = [], {}
    if placement == "page":
        d_bytes = int(rng.integers(0, 193))
        d_bytes -= d_bytes % dts["out"].itemsize
        x = int(rng.integers(0, 4)) * 16
        nbytes = {n: size * dts[n].itemsize for n in ("out", "a", "b")}
        pages = lambda nb: (nb // 4096 + 2) * 4096   # noqa: E731
        a_off = x
        out_off = pages(a_off + nbytes["a"]) + x + d_bytes
        # b: out lies d2 bytes (0..192) past it modulo 4 KiB too, so either source stages
        d2 = int(rng.integers(0, 193))
        rel = (x + d_bytes - d2) % 4096
        rel -= rel % dts["b"].itemsize
        b_off = pages(out_off + nbytes["out"]) + rel
        total = pages(b_off + nbytes["b"]) + 4096
        raw = np.empty(total + 4096, np.uint8)
        start = (-raw.ctypes.data) % 4096
        big = raw[start:start + total]
        big[:] = rng.integers(1, 256, size=total, dtype=np.uint8)
        for name, off in (("a", a_off), ("out", out_off), ("b", b_off)):
            view = big[off:off + nbytes[name]].view(dts[name]).reshape(shape)
            view[...] = random_values(rng, shape, dts[name], int_range)
            arrays[name] = view
        buffers.append(big)
        info = {"d_bytes": d_bytes, "d_bytes_b": (out_off - b_off) % 4096}
    else:
        info = {}
        for name in ("out", "a", "b"):
            dt = dts[name]
            if placement in ("c", "empty"):
                base = random_values(rng, shape, dt, int_range)
                view = base
            elif placement == "offset":
                k = int(rng.integers(1, 8))
                if case.ndim == 1:
                    base = random_values(rng, size + 16, dt, int_range)
                    view = base[k:k + size]
                else:
                    base = random_values(rng, (shape[0] + 2, shape[1] + 16), dt, int_range)
                    view = base[1:1 + shape[0], k:k + shape[1]]
            elif placement == "reversed":
                base = random_values(rng, size + 3, dt, int_range)
                view = base[size + 1:0:-1] if size else base[:0]
            elif placement == "strided":
                if case.ndim == 1:
                    base = random_values(rng, 2 * size + 2, dt, int_range)
                    view = base[1:1 + 2 * size:2]
                else:
                    base = random_values(rng, (shape[0], 2 * shape[1] + 1), dt, int_range)
                    view = base[:, 1:1 + 2 * shape[1]:2]
            elif placement == "fortran":
                base = np.asfortranarray(random_values(rng, shape, dt, int_range))
                view = base
            else:
                raise ValueError(placement)
            arrays[name] = view
            buffers.append(base)
    if case.zero_at is not None and size:
        flat_b = arrays["b"].reshape(-1) if arrays["b"].flags.c_contiguous else None
        z = min(case.zero_at, size - 1)
        if case.ndim == 1:
            arrays["b"][z] = 0
        elif flat_b is not None:
            flat_b[z] = 0
        info["zero_at"] = z
    s = random_values(rng, 1, case.dtypes["s"], "small" if bound is None else min(bound, 100))[0]
    args = [arrays["out"], arrays["a"], arrays["b"], s]
    return args, buffers, {"shape": shape, **info}


# ----------------------------------------------------------------- running

def compile_source(case):
    """The generated function (exec'd from its source under a file name of its own)."""
    namespace = {}
    filename = f"<differential kernel {case.seed}>"
    exec(compile(case.source, filename, "exec"), namespace)
    return namespace["kernel"]


def _outcome(fn, args):
    try:
        return None, fn(*args)
    except Exception as exc:     # noqa: BLE001 -- the class is what is compared
        return exc, None


def _bits(x):
    x = np.asarray(x)
    return x.dtype.str, x.shape, np.ascontiguousarray(x).tobytes()


def _close(got, want, scale_hint=None):
    """Fastmath comparison: equal where exact (ints, bools, same bits),
    else within 64 ulps of the array's largest magnitude (or of the scale
    hint: a reduction's sum of magnitudes)."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or got.dtype != want.dtype:
        return False
    if got.dtype.kind not in "fc":
        return np.array_equal(got, want)
    if got.dtype.kind == "c":
        return _close(got.real, want.real, scale_hint) and _close(got.imag, want.imag, scale_hint)
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    if same.all():
        return True
    finite = np.isfinite(want)
    scale = np.max(np.abs(want[finite]), initial=0.0)
    if scale_hint is not None:
        scale = max(scale, scale_hint)
    eps = np.finfo(got.dtype).eps
    tol = 64 * eps * scale * (1 if scale_hint is None else 64)
    return bool(np.all(same | (np.abs(got.astype(np.float64) - want.astype(np.float64)) <= tol)))


def compare(case, got_out, want_out, got_args, want_args, got_bufs, want_bufs):
    """The differences (list of strings) between one call under each compiler."""
    diffs = []
    g_exc, g_ret = got_out
    w_exc, w_ret = want_out
    if type(g_exc) is not type(w_exc):
        diffs.append(f"exception: streamjit {type(g_exc).__name__ if g_exc else 'none'}"
                     f"({str(g_exc)[:300] if g_exc else ''}), njit {type(w_exc).__name__ if w_exc else 'none'}"
                     f"({str(w_exc)[:200] if w_exc else ''})")
    if g_exc is None and w_exc is None:
        if case.fastmath:
            hint = None
            if np.ndim(w_ret) == 0 and w_ret is not None and case.shape == "loop":
                hint = float(sum(np.abs(np.asarray(x, np.complex128)).sum() for x in want_args[1:3]))
            ok = (g_ret is None and w_ret is None) or (g_ret is not None and w_ret is not None
                                                        and _close(g_ret, w_ret, hint))
        else:
            ok = (g_ret is None and w_ret is None) or (g_ret is not None and w_ret is not None
                                                        and _bits(g_ret) == _bits(w_ret))
        if not ok:
            diffs.append(f"returned value: streamjit {g_ret!r}, njit {w_ret!r}")
    for name, g, w in zip(("out", "a", "b"), got_args, want_args):
        if case.fastmath:
            ok = _close(g, w)
        else:
            ok = _bits(g) == _bits(w)
        if not ok:
            mism = np.flatnonzero(np.asarray(g != w).reshape(-1)) if g.shape == w.shape else []
            diffs.append(f"array {name} differs at {len(mism)} of {g.size} elements, first flat indices "
                         f"{list(mism[:8])}: streamjit {g.reshape(-1)[mism[:4]]!r} njit {w.reshape(-1)[mism[:4]]!r}")
    if not case.fastmath and not diffs:
        for k, (g, w) in enumerate(zip(got_bufs, want_bufs)):
            if _bits(g) != _bits(w):
                diffs.append(f"backing buffer {k} differs outside the views")
    return diffs


@dataclass
class Result:
    case: Case
    differences: list = field(default_factory=list)   # dicts
    njit_rejected: str = ""
    placements_run: list = field(default_factory=list)
    paths: dict = field(default_factory=dict)
    exceptions: set = field(default_factory=set)
    # placements where njit(parallel=True) differed from serial njit, which the candidate matched
    parallel_njit_deviations: list = field(default_factory=list)


def _matches_serial_njit(case, func, candidate_state, placement, seed, calls):
    """Whether the candidate's outcome after ``calls`` calls equals serial
    njit's: njit(parallel=True) computes some slice expressions unlike
    NumPy and serial njit (operands of mixed dtypes promoted wider, a
    spurious size or negative-dimension error on tiny arrays)."""
    import numba
    serial = numba.njit(**{**case.numba_options, "parallel": False})(func)
    args, bufs, _ = case.inputs(placement, seed)
    for _ in range(calls):
        want = _outcome(serial, args)
    got, got_args, got_bufs = candidate_state
    return not compare(case, got, want, got_args, args[:3], got_bufs, bufs)


def run_case(case, make_candidate, make_reference=None, input_seed=None):
    """Compile `case` with both compilers, run it on each placement (each
    call twice on the same arrays), compare. `make_candidate(func, case)`
    and `make_reference(func, case)` return dispatchers."""
    import numba
    if make_reference is None:
        def make_reference(func, case):
            return numba.njit(**case.numba_options)(func)
    result = Result(case)
    func = compile_source(case)
    reference = make_reference(func, case)
    candidate = make_candidate(func, case)
    for p, placement in enumerate(case.placements):
        seed = (case.seed * 1000003 + p) if input_seed is None else input_seed + p
        want_args, want_bufs, info = case.inputs(placement, seed)
        got_args, got_bufs, _ = case.inputs(placement, seed)
        for call in range(case.calls):
            want = _outcome(reference, want_args)
            if call == 0 and p == 0 and want[0] is not None and isinstance(want[0], numba.core.errors.NumbaError):
                result.njit_rejected = f"{type(want[0]).__name__}: {str(want[0]).splitlines()[0][:200]}"
                return result
            if want[0] is not None:
                result.exceptions.add(type(want[0]).__name__)
            got = _outcome(candidate, got_args)
            diffs = compare(case, got, want, got_args[:3], want_args[:3], got_bufs, want_bufs)
            result.placements_run.append(placement)
            if diffs and case.numba_options.get("parallel") and _matches_serial_njit(
                    case, func, (got, got_args[:3], got_bufs), placement, seed, call + 1):
                result.parallel_njit_deviations.append(placement)
                break
            if diffs:
                result.differences.append({"placement": placement, "call": call, "info": info,
                                           "seed": seed, "diffs": diffs})
                break       # the next call would compare diverged arrays
    try:
        result.paths = {k: v for k, v in candidate.stream_calls().items() if v}
    except Exception:       # noqa: BLE001 -- a candidate without call records
        pass
    return result


def describe(result):
    """A difference report: the kernel, its options, what differed."""
    case = result.case
    lines = [f"--- seed {case.seed}: shape {case.shape}, dtypes "
             + ", ".join(f"{k}={v.name}" for k, v in case.dtypes.items())
             + f"; options {case.options_label()}", case.source.rstrip()]
    for d in result.differences:
        lines.append(f"  placement {d['placement']} (input seed {d['seed']}, {d['info']}), call {d['call']}:")
        lines += ["    " + x for x in d["diffs"]]
    return "\n".join(lines)
