"""The instructions the post-O3 stages add, spelled in LLVM's syntax here only.

A stage that adds an instruction builds its `Inst` record with one of these
functions, from names, types and values as the module prints them (``%x``,
``@f``, ``<4 x double>``), and keeps no LLVM instruction syntax of its own.
Each record is printed as LLVM prints an instruction in a block: indented by
two spaces, ``tail`` (metadata attachments, ``, !dbg !12``; a call's
attributes, `` #3``, before them) last. A typed operand is written as a call
argument is (``double %x``, ``ptr %p``), as `Inst.arguments` reads them.
"""

from .module import Inst


def _line(result, body):
    """The record of the instruction ``body``, defining ``result`` (None: nothing)."""
    return Inst(f"  {result} = {body}" if result else f"  {body}")


def store(value_type, value, pointer, align, tail=""):
    """The record ``store value_type value, ptr pointer, align align``."""
    return _line(None, f"store {value_type} {value}, ptr {pointer}, align {align}{tail}")


def load(result, value_type, pointer, align, tail=""):
    """The record ``result = load value_type, ptr pointer, align align``."""
    return _line(result, f"load {value_type}, ptr {pointer}, align {align}{tail}")


def call(result, return_type, callee, arguments, flags="", tail=""):
    """The record ``[result =] call flags return_type callee(arguments)``:
    ``callee`` is ``@name`` or inline assembly, ``arguments`` are typed
    operands, ``flags`` what precedes the return type (``fast ``, or nothing)."""
    return _line(result, f"call {flags}{return_type} {callee}({', '.join(arguments)}){tail}")


def cast(result, opcode, operand, to_type):
    """The record ``result = opcode operand to to_type`` (``bitcast``, ``fptosi``, ``trunc``...)."""
    return _line(result, f"{opcode} {operand} to {to_type}")


def byte_offset(result, pointer, offset):
    """The record ``result = getelementptr i8, ptr pointer, i64 offset``: ``offset`` bytes past ``pointer``."""
    return _line(result, f"getelementptr i8, ptr {pointer}, i64 {offset}")


def insert_element(result, vector_type, vector, element, lane):
    """The record ``result = insertelement``: ``vector`` (of ``vector_type``;
    ``poison``: none) with the typed operand ``element`` in lane number ``lane``."""
    return _line(result, f"insertelement {vector_type} {vector}, {element}, i64 {lane}")


def extract_element(result, vector_type, vector, lane):
    """The record ``result = extractelement``: lane number ``lane`` of ``vector``, of ``vector_type``."""
    return _line(result, f"extractelement {vector_type} {vector}, i64 {lane}")


def shuffle(result, vector_type, first, second, lanes):
    """The record ``result = shufflevector``: the ``lanes`` (lane numbers)
    of ``first`` and ``second``, two values of ``vector_type`` (``second``
    may be ``poison``), as one vector; the stages join, split and pad
    vectors with it."""
    mask = ", ".join(f"i32 {k}" for k in lanes)
    return _line(result, f"shufflevector {vector_type} {first}, {vector_type} {second}, "
                         f"<{len(lanes)} x i32> <{mask}>")


def commented(inst, comment, attachments=True):
    """A copy of ``inst`` (without its metadata attachments if not
    ``attachments``) on a line that ends in ``comment`` (``; ...``)."""
    text = inst.text.strip()
    return _line(None, f"{text if attachments else text.removesuffix(inst.tail)} {comment}")
