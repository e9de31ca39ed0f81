"""Vector calls of math functions become calls of glibc's vector math library, under fastmath.

LLVM's loop vectorizer widens a loop's ``sin``, ``cos``, ``atan2``, ``exp``,
``log``, ``pow`` ... into calls of ``llvm.sin.v4f64`` and its kin, and
without a vector math library (Numba 0.62 and later set none, and llvmlite
0.50 cannot set one: bench/README.md, "arc_distance with SVML") the backend
splits each into one call of the C library's ``sin`` per lane. So NPBench's
arc_distance ran at 1.0x ``numba.njit`` (Intel Xeon VM, ``python
bench/npbench.py --kernels arc_distance``). glibc ships vector versions of
these functions in ``libmvec`` (``libmvec.so.1``, since glibc 2.22), under the
names of the x86-64 vector function ABI: ``_ZGV<isa>N<lanes><v per
argument>_<name>``, ``isa`` ``b`` for SSE (xmm), ``c`` AVX and ``d`` AVX2
(ymm), ``e`` AVX-512 (zmm), ``f`` after the name for ``float``:
``_ZGVdN4v_sin``, ``_ZGVeN8vv_atan2``, ``_ZGVbN4v_expf``.

What it rewrites, as LLVM's ``replace-with-veclib`` pass does once a vector
library is set: each call of ``llvm.<fn>.v<N>f64`` / ``v<N>f32`` whose
fast-math flags allow approximate functions (``afn``, part of ``fast``:
``fastmath=True`` or ``fastmath={"afn"}``) becomes a call of libmvec's
version of ``<fn>`` in the widest register the target passes as one argument
(zmm where AVX-512F is on, ymm with AVX2, else AVX, else xmm); a call with
more lanes is split into calls of that width, and the results joined. The
calls of one function in a module all go to one version, the one its
widest call takes: narrower calls and scalar ones (``llvm.sin.f64``,
``atan2f``: the peeled head loops, the vector loop's remainder) pass their
lanes in a padded vector and take theirs from its result, so each element
is computed alike whichever loop takes it, and a kernel's results do not
depend on where its arrays lie (`tests/test_vector_math.py`). A function
with no vector call keeps its scalar calls, as njit's. Only under ``afn``:
libmvec is accurate to 4 ulp (glibc's manual, "Errors in Math Functions"),
not to glibc's scalar functions' results, so code compiled without
fastmath keeps njit's results bit for bit.

Where: x86-64 Linux targets, when ``libmvec.so.1`` loads in this process
(loaded here once, permanently, so the JIT and code loaded from Numba's cache
resolve its symbols; elsewhere the stage does nothing), and a function
libmvec has for that width. It changes code without streamjit's marks, so
it runs on the kernel's own module and its prange workers' only
(`stages.UNMARKED_CODE_STAGES`), and not at all for a kernel that names
nothing to stream (numba.njit's code): the helpers Numba shares with
``numba.njit`` code stay as they are.
"""

import ctypes
import functools
import re

import llvmlite.binding as llvm
from numba.core.codegen import get_host_cpu_features  # (Numba's: NUMBA_ENABLE_AVX=0 turns AVX off)

from ..llvm_text.math_names import LIBMVEC_FUNCTIONS, arguments, math_call, vector_version
from ..llvm_text import build
from ..llvm_text.module import LOCAL

# glibc's name for libmvec since 2.22, opened as dlopen finds it
# (`ctypes.util.find_library` would run ldconfig at every import).
LIBRARY_NAME = "libmvec.so.1"
# a call of a vector intrinsic libmvec has versions of (older glibcs than
# 2.35 have fewer, which `_has_symbol` finds out), found in a module's text
_INTRINSIC_CALL = re.compile(r"@llvm\.(?:" + "|".join(LIBMVEC_FUNCTIONS) + r")\.v\d+f(?:32|64)\(")
_APPROXIMATE = {"afn", "fast"}
_ELEMENTS = {"f64": ("double", 8), "f32": ("float", 4)}
# a constant operand: a vector, or a number as LLVM prints it (``2.500000e+00``, ``0x7FF0000000000000``)
_CONSTANT = re.compile(r"(?:<.*>|splat \(.*\)|zeroinitializer|poison|undef|-?\d[\w.+-]*)")


def _load():
    """libmvec opened in this process for the JIT, or None (another OS or CPU, no glibc, glibc before 2.22)."""
    triple = llvm.get_process_triple()
    if not (triple.startswith("x86_64") and "linux-gnu" in triple):
        return None
    try:
        library = ctypes.CDLL(LIBRARY_NAME)
        llvm.load_library_permanently(LIBRARY_NAME)
    except (OSError, RuntimeError):
        return None
    return library


LIBMVEC = _load()


def available():
    """Whether this process can call libmvec (the stage's precondition on the host)."""
    return LIBMVEC is not None


@functools.lru_cache(maxsize=None)
def _has_symbol(name):
    return hasattr(LIBMVEC, name)


# Which versions a target can call, asked of LLVM itself: a version takes its
# arguments in one xmm, ymm or zmm register each (the vector function ABI),
# so it fits a target whose calling convention passes that vector type whole
# (`<4 x double>` in one ymm: AVX; `<8 x double>` in one zmm: AVX-512F, on a
# CPU tuned for 256-bit vectors too), and whose instructions it uses (AVX2's
# 256-bit integer adds for the ``d`` versions). A CPU name alone (``haswell``)
# says nothing readable of its features to llvmlite; its code does.
_PROBE = """
define <4 x double> @probe.avx(<4 x double> %a, <4 x double> %b) {
  %c = fadd <4 x double> %a, %b
  ret <4 x double> %c
}
define <4 x i64> @probe.avx2(<4 x i64> %a, <4 x i64> %b) {
  %c = add <4 x i64> %a, %b
  ret <4 x i64> %c
}
define <8 x double> @probe.avx512(<8 x double> %a, <8 x double> %b) {
  %c = fadd <8 x double> %a, %b
  ret <8 x double> %c
}
"""
# (the ISA letter, bits of its registers, what the probe's function of that
# name compiles to when the target has it)
_ISAS = (("e", 512, "probe.avx512", "vaddpd\t%zmm1, %zmm0, %zmm0"),
         ("d", 256, "probe.avx2", "vpaddq\t%ymm1, %ymm0, %ymm0"),
         ("c", 256, "probe.avx", "vaddpd\t%ymm1, %ymm0, %ymm0"))


@functools.lru_cache(maxsize=None)
def isas(triple, cpu, features):
    """``((letter, bits), ...)``, widest first, of libmvec's versions that
    code built for this x86-64 target can call: SSE's always, AVX's or
    AVX2's (the better one), AVX-512's."""
    machine = llvm.Target.from_triple(triple).create_target_machine(cpu=cpu or "", features=features or "")
    probe = llvm.parse_assembly(_PROBE)
    probe.triple = triple
    asm = machine.emit_assembly(probe)
    found, wide = [], False
    for letter, bits, name, instruction in _ISAS:
        body = asm.split(f"{name}:", 1)[-1].split(".Lfunc_end", 1)[0]
        if instruction in body and not (bits == 256 and wide):
            found.append((letter, bits))
            wide |= bits == 256
    return tuple(found) + (("b", 128),)


def _target_isas(target):
    """`isas` of the post-O3 ``target`` (`protocol.targets.Target`): the host
    build's CPU and features as Numba's JIT has them, or another target's; ()
    where libmvec cannot be called."""
    triple, cpu, features = target.resolved
    if LIBMVEC is None or not triple.startswith("x86_64") or "linux-gnu" not in triple:
        return ()
    # (the host build's features None: the host CPU's own, as Numba's JIT sees them)
    return isas(triple, cpu, get_host_cpu_features() if target.triple is None and features is None else features)


def has_work(text):
    """Whether a module's text calls a vector math intrinsic libmvec may replace."""
    return LIBMVEC is not None and _INTRINSIC_CALL.search(text) is not None


def _joins_in_pairs(lanes, width):
    """Whether a call of ``lanes`` lanes splits into a power of two of calls
    of ``width`` lanes (`_replacement` joins their results in pairs)."""
    pieces = lanes // width
    return lanes % width == 0 and pieces & (pieces - 1) == 0


def _version(function_name, kind, lanes, usable):
    """(libmvec's name, its lanes) for calls of up to ``lanes`` lanes of
    ``kind`` ("f32", "f64"): the widest usable version whose lanes divide
    them; None if libmvec has none."""
    element_bytes = _ELEMENTS[kind][1]
    for letter, bits in usable:
        width = bits // 8 // element_bytes
        name = vector_version(letter, width, function_name, kind)
        if width <= lanes and _joins_in_pairs(lanes, width) and _has_symbol(name):
            return name, width
    return None


def _split_type(call_type):
    """(the flags and attributes before a call's value type, the value type)."""
    if "<" in call_type:
        return call_type[:call_type.index("<")], call_type[call_type.index("<"):]
    flags, _, value_type = call_type.rpartition(" ")
    return flags + " " if flags else "", value_type


def _approximate_call(inst):
    """``(function, "f32" or "f64", lanes, flags, arguments' values)`` of a
    call of a math function libmvec has versions of, vector (``llvm.sin.v4f64``)
    or scalar (``llvm.sin.f64``, ``sin``, ``atan2f``: lanes 0), whose fast-math
    flags allow an approximation; None for any other instruction."""
    if inst.opcode != "call" or inst.result is None or not inst.type:
        return None
    call = math_call(inst.callee)
    if call is None or call[0] not in LIBMVEC_FUNCTIONS:
        return None
    function_name, kind, lanes = call
    flags, value_type = _split_type(inst.type)
    element = _ELEMENTS[kind][0]
    if not _APPROXIMATE & set(flags.split()) or value_type != (f"<{lanes} x {element}>" if lanes else element):
        return None
    values = [argument[len(value_type):].strip() for argument in inst.arguments]
    if len(values) != arguments(function_name) or \
            not all(a.startswith(value_type + " ") for a in inst.arguments) or \
            not all(LOCAL.fullmatch(v) or _CONSTANT.fullmatch(v) for v in values):
        return None
    return function_name, kind, lanes, flags, values


def _versions(module, usable):
    """``{(function, "f32" or "f64"): (libmvec's name, its lanes)}``: the one
    version each math function's calls in ``module`` go to, chosen for its
    widest approximate vector call; none for a function that has no vector
    call (its scalar calls stay the C library's, as njit's)."""
    widest = {}
    for function in module.functions:
        for block in function.blocks:
            for call in filter(None, map(_approximate_call, block.insts)):
                key = call[:2]
                widest[key] = max(widest.get(key, 0), call[2])
    versions = {}
    for (function_name, kind), lanes in widest.items():
        found = lanes and _version(function_name, kind, lanes, usable)
        if found:
            versions[function_name, kind] = found
    return versions


def _padded(function, value, lanes, width, element, records):
    """``value`` (``lanes`` lanes, 0: a scalar) as a vector of ``width``
    lanes, its own lanes repeated (real arguments, which take libmvec's
    usual path); the records that make it go to ``records``."""
    vector_type = f"<{max(lanes, 1)} x {element}>"
    if lanes == 0:
        records.append(build.insert_element(function.new_name("vector_math"), vector_type, "poison",
                                            f"{element} {value}", 0))
        value = records[-1].result
    records.append(build.shuffle(function.new_name("vector_math"), vector_type, value, "poison",
                                 [k % max(lanes, 1) for k in range(width)]))
    return records[-1].result


def _narrow_call(function, inst, call, name, width):
    """The records of a call of fewer lanes than libmvec's version (a scalar
    call: 0 lanes): its arguments padded, its lanes taken from the result."""
    _, kind, lanes, flags, values = call
    element = _ELEMENTS[kind][0]
    piece, records = f"<{width} x {element}>", []
    parts = [_padded(function, value, lanes, width, element, records) for value in values]
    wide = function.new_name("vector_math")
    records.append(build.call(wide, piece, f"@{name}", [f"{piece} {part}" for part in parts], flags, inst.tail))
    if lanes == 0:
        records.append(build.extract_element(inst.result, piece, wide, 0))
    else:
        records.append(build.shuffle(inst.result, piece, wide, "poison", range(lanes)))
    return records


def _wide_call(function, inst, call, name, width):
    """The records of a call of more lanes than libmvec's version: split
    into calls of its width, their results joined in pairs."""
    _, kind, lanes, flags, values = call
    element = _ELEMENTS[kind][0]
    vector_type, piece = f"<{lanes} x {element}>", f"<{width} x {element}>"
    records, results = [], []
    for start in range(0, lanes, width):
        parts = []
        for value in values:
            parts.append(function.new_name("vector_math"))
            records.append(build.shuffle(parts[-1], vector_type, value, "poison", range(start, start + width)))
        results.append(function.new_name("vector_math"))
        records.append(build.call(results[-1], piece, f"@{name}", [f"{piece} {part}" for part in parts], flags,
                                    inst.tail))
    while len(results) > 1:  # joined in pairs: each shufflevector takes two vectors of one type
        joined, pieces = [], width * 2
        for first, second in zip(results[::2], results[1::2]):
            joined.append(inst.result if pieces == lanes else function.new_name("vector_math"))
            records.append(build.shuffle(joined[-1], f"<{width} x {element}>", first, second, range(pieces)))
        results, width = joined, pieces
    return records


def _replacement(function, inst, versions, declarations):
    """The records that call libmvec in place of ``inst``, or None.

    Every call of one math function in a module goes to one version
    (`_versions`), scalar calls too, as one lane of a padded vector: the
    peeled head loops, the vector loop and its remainder then compute each
    element alike, so a kernel's results do not depend on where its arrays
    lie, which decides the elements each loop takes. (libmvec's versions of
    one function for different registers need not agree to the bit.)"""
    call = _approximate_call(inst)
    if call is None or call[:2] not in versions:
        return None
    (name, width), lanes = versions[call[:2]], call[2]
    if lanes > width and not _joins_in_pairs(lanes, width):
        return None
    piece = f"<{width} x {_ELEMENTS[call[1]][0]}>"
    declarations[name] = f"declare {piece} @{name}({', '.join([piece] * len(call[4]))})"
    if lanes == width:
        return [build.call(inst.result, piece, f"@{name}", inst.arguments, call[3], inst.tail)]
    return (_narrow_call if lanes < width else _wide_call)(function, inst, call, name, width)


def run(module, target):
    """Replace the approximate math calls of every function by libmvec's
    (`_replacement`); declare what they call."""
    usable = _target_isas(target)
    versions = _versions(module, usable) if usable else {}
    if not versions:
        return False
    declarations, changed = {}, False
    for function in module.functions:
        for block in function.blocks:
            def replacement_at(k, function=function, block=block):
                records = _replacement(function, block.insts[k], versions, declarations)
                return (records, k + 1) if records else None

            changed |= block.rewrite_runs(replacement_at)
    for name, declaration in declarations.items():
        if not module.declares(name):
            module.append(declaration)
    return changed
