"""The optimized LLVM module, read once: what every post-O3 stage works on.

The stages after Numba's O3 (`stages.py`) edit the module as text, because
llvmlite can parse, verify and print a module but not edit one: it has no
API to set metadata on, insert or replace an instruction of a parsed
module, and no way to run a Python pass inside O3 (Numba's ``nrtopt.py``
once did the same round trip). This module is the one place that reads that
text: a `Module` is its top-level lines, its metadata nodes and its
`Function`\\ s; a function is `Block`\\ s of `Inst` records (result, opcode,
type, pointer operand, alignment, metadata attachments), parsed on first
use. Stages replace records in a block's list (the records they add are
built by `build.py`); ``str(module)`` prints the module back, unchanged
lines as they were.

Names follow LLVM's identifier grammar (LangRef, "Identifiers"): ``%name``
with ``-$._`` among letters and digits, ``%"quoted name"``, and numbers, so a
store through ``%$x`` or ``%"a b"`` is read like any other. New metadata
ids come from one allocator that counts every ``!N =`` node, debug
information (``!DILocation``, ``distinct !DISubprogram``) included.
"""

import re

from numba.core.controlflow import CFGraph

NAME = r'(?:[-a-zA-Z$._][-a-zA-Z$._0-9]*|"[^"]*"|\d+)'
LOCAL = re.compile("%" + NAME)
_LAST_LOCAL = re.compile("(%" + NAME + ")$")
_RESULT = re.compile(r"\s*(%" + NAME + r") = ")
_LABEL = re.compile(r"(" + NAME + r"):")
_SUCCESSOR = re.compile(r"label (%" + NAME + ")")
_GLOBAL_CALLEE = re.compile(r"@(" + NAME + r")\(")
_ASM_CALLEE = re.compile(r'asm (?:[a-z]+ )*"(?:[^"\\]|\\.)*", "[^"]*"\(')
_METADATA_NODE = re.compile(r"!(\d+) = (.*)")
# metadata attachments, printed last: `, !dbg !12, !alias.scope !5`
_ATTACHMENTS = re.compile(r"(?:, ![A-Za-z._][-\w.$]* (?:!\d+|!\{[^{}]*\}))+$")
_ATTACHMENT = re.compile(r"!([A-Za-z._][-\w.$]*) (!\d+|!\{[^{}]*\})")
_ALIGN = re.compile(r"\balign (\d+)\b")
_VECTOR = re.compile(r"<(vscale x )?(\d+) x (.+)>")
_SCOPE_LIST = re.compile(r"(?:distinct )?!\{(!\d+(?:, !\d+)*)\}")
_GENERIC_NODE = re.compile(r"(?:distinct )?!\{(.*)\}")
_OPENERS, _CLOSERS = "([{<", ")]}>"
_BRACKETS = re.compile(r"[(\[{<]")

# Bytes of the scalar types Numba arrays hold, as LLVM spells them.
ELEMENT_BYTES = {"i1": 1, "i8": 1, "i16": 2, "i32": 4, "i64": 8, "half": 2, "bfloat": 2, "float": 4,
                 "double": 8, "ptr": 8}


def unquoted(name):
    """``name`` without its sigil and quotes: ``%"a b"`` -> ``a b``."""
    return name.lstrip("%@").strip('"')


def _scan(text, start=0):
    """(index, character, bracket depth after it) for each character of
    ``text`` from ``start`` that is outside quotes."""
    depth, quoted = 0, False
    for k in range(start, len(text)):
        char = text[k]
        if char == '"':
            quoted = not quoted
        elif not quoted:
            depth += (char in _OPENERS) - (char in _CLOSERS)
            yield k, char, depth


def split_operands(text):
    """``text`` split at the commas outside brackets and quotes."""
    if '"' not in text and not _BRACKETS.search(text):  # (the common case, fast)
        return [part.strip() for part in text.split(",")] if text.strip() else []
    parts, start = [], 0
    for k, char, depth in _scan(text):
        if char == "," and depth == 0:
            parts.append(text[start:k].strip())
            start = k + 1
    last = text[start:].strip()
    return parts + [last] if last else parts


def _matching_paren(text, start):
    """Index of the ``)`` closing the ``(`` at ``start - 1``."""
    return next((k for k, _, depth in _scan(text, start) if depth < 0), len(text))


def argument_field(name):
    """``(parameter, position)`` for a function argument Numba named
    ``%arg.<parameter>.<position>``: the field at that position of the
    parameter's data model (an array is passed as its fields); None for any
    other name."""
    parts = unquoted(name).split(".")
    if len(parts) == 3 and parts[0] == "arg" and re.fullmatch(r"\w+", parts[1]) and parts[2].isdigit():
        return parts[1], int(parts[2])
    return None


def argument_align(argument):
    """The ``N`` of a call argument's ``align N`` attribute (``ptr align 64
    %p``), or None."""
    found = _ALIGN.search(argument)
    return int(found.group(1)) if found else None


def _strip_comment(text):
    """``text`` without a trailing ``; comment`` (outside quotes)."""
    if ";" not in text:
        return text
    return next((text[:k].rstrip() for k, char, _ in _scan(text) if char == ";"), text)


def _leading_type(text):
    """(the type that starts ``text``, the rest): ``<4 x i8> %v`` -> (``<4 x i8>``, ``%v``)."""
    if text[:1] in "<[{":
        end = next(k for k, _, depth in _scan(text) if depth == 0)
        return text[:end + 1], text[end + 1:].strip()
    kind, _, rest = text.partition(" ")
    return kind, rest


def _pointer_value(operand):
    """The value of a ``ptr [attributes] %p`` operand, or None (a constant, another type)."""
    last = _LAST_LOCAL.search(operand) if operand.startswith("ptr ") else None
    return last.group(1) if last else None


def vector_shape(llvm_type):
    """``(scalable, lanes, element)`` of a vector type, or None."""
    m = _VECTOR.fullmatch(llvm_type or "")
    return (bool(m.group(1)), int(m.group(2)), m.group(3).strip()) if m else None


def type_bytes(llvm_type):
    """Bytes of a scalar or fixed vector type of `ELEMENT_BYTES` elements (0: unknown)."""
    shape = vector_shape(llvm_type)
    if shape is None:
        return ELEMENT_BYTES.get(llvm_type, 0)
    scalable, lanes, element = shape
    return 0 if scalable else lanes * ELEMENT_BYTES.get(element, 0)


class Inst:
    """One instruction line (or a debug record, a comment, a blank line) of a block.

    ``result`` is the defined name (``%x``) or None; ``opcode`` the
    instruction (``store``, ``call``, ...; ``#dbg_value`` for a debug
    record; None for a line that is no instruction); ``type`` the stored,
    loaded or indexed type, or a call's return type (with its attributes); ``pointer`` the
    address: a load's or store's, a ``getelementptr``'s base, a call's first
    pointer argument; ``align`` the ``align N`` of a load or store;
    ``metadata`` the attachments ``{kind: "!N"}``; ``tail`` their text as
    printed; ``is_instruction`` whether the line is one (not blank, a
    comment or a debug record). Stores also have ``value``, calls ``callee`` (the name without
    ``@``), ``asm`` (the inline assembly, or None), ``arguments`` and
    ``call_attributes`` (what follows them: `` #3``)."""

    __slots__ = ("text", "result", "opcode", "type", "pointer", "align", "metadata", "tail", "value", "callee",
                 "asm", "arguments", "call_attributes", "is_instruction", "_operands", "_rest")

    def __init__(self, text):
        self.text = text
        self.result = self.opcode = self.type = self.pointer = self.align = self.value = None
        self.callee = self.asm = None
        self.call_attributes, self.is_instruction = "", False
        self.metadata, self.tail, self.arguments, self._operands, self._rest = {}, "", [], [], None
        line = _strip_comment(text.strip())
        if not line:
            return
        if line.startswith("#dbg_"):
            self.opcode = line[:line.index("(")]
            return
        self.is_instruction = True  # (a line that is neither blank, a comment nor a debug record)
        result = _RESULT.match(line)
        body = line[result.end():] if result else line
        self.result = result.group(1) if result else None
        attachments = _ATTACHMENTS.search(body)
        if attachments:
            self.tail = attachments.group(0)
            self.metadata = dict(_ATTACHMENT.findall(self.tail))
            body = body[:attachments.start()]
        words = body.split(" ", 1)
        while words[0] in ("tail", "musttail", "notail"):
            words = words[1].split(" ", 1)
        self.opcode, rest = words[0], words[1] if len(words) > 1 else ""
        if self.opcode == "call":
            self._read_call(rest)
        elif self.opcode in ("store", "load", "getelementptr"):
            self._read_memory(rest)
        else:
            self._rest = rest  # (split when asked: most instructions never are)

    def _read_memory(self, rest):
        flags = ("volatile", "atomic", "inbounds", "nuw", "nusw")
        words = rest.split(" ")
        while words[0] in flags:
            words.pop(0)
        self._operands = split_operands(" ".join(words))
        if len(self.operands) < 2:
            return
        if self.opcode == "store":
            self.type, self.value = _leading_type(self.operands[0])
        else:
            self.type = self.operands[0]
        self.pointer = _pointer_value(self.operands[1])
        align = next((_ALIGN.fullmatch(op) for op in self.operands[2:] if op.startswith("align ")), None)
        self.align = int(align.group(1)) if align else None

    def _read_call(self, rest):
        callee = _GLOBAL_CALLEE.search(rest) or _ASM_CALLEE.search(rest)
        if callee is None:  # an indirect call
            return
        if callee.group(0).startswith("asm"):
            self.asm = callee.group(0)[:-1]
        else:
            self.callee = unquoted(callee.group(1))
        self.type = rest[:callee.start()].strip() or None
        end = _matching_paren(rest, callee.end())
        self.arguments = split_operands(rest[callee.end():end])
        self.call_attributes = rest[end + 1:]
        self.pointer = next(filter(None, map(_pointer_value, self.arguments)), None)

    @property
    def operands(self):
        """The operands after the opcode (and its flags), as printed."""
        if self._rest is not None:
            self._operands, self._rest = split_operands(self._rest), None
        return self._operands

    def scope(self):
        """The id of this instruction's ``!alias.scope`` list, or None."""
        ref = self.metadata.get("alias.scope", "")
        return int(ref[1:]) if ref[1:].isdigit() else None

    def with_metadata(self, kind, node_id):
        """This instruction with ``!kind !node_id`` attached."""
        return Inst(f"{self.text}, !{kind} !{node_id}")

    def __repr__(self):
        return f"Inst({self.text.strip()!r})"


class Block:
    """A basic block: its label line (None for an unlabelled entry block) and its `Inst` records."""

    def __init__(self, label_line):
        self.label_line = label_line
        label = _LABEL.match(label_line) if label_line else None
        self.label = unquoted(label.group(1)) if label else None
        self.insts = []

    def rewrite_runs(self, replacement_at):
        """Replace runs of records: ``replacement_at(k)`` gives (the new
        records, the index after the run) for a run starting at record k, or
        None; returns whether any was replaced."""
        k, replaced = 0, False
        while k < len(self.insts):
            found = replacement_at(k)
            if found is None:
                k += 1
                continue
            records, end = found
            self.insts[k:end] = records
            k, replaced = k + len(records), True
        return replaced

    def successors(self):
        """Labels this block branches to."""
        terminator = next((i for i in reversed(self.insts) if i.is_instruction), None)
        return [unquoted(name) for name in _SUCCESSOR.findall(terminator.text)] if terminator else []


class Function:
    """One ``define``: its header line, then its blocks, parsed on first use."""

    def __init__(self, lines):
        self.header, self._body, self._blocks = lines[0], lines[1:-1], None
        self.name = unquoted(_GLOBAL_CALLEE.search(self.header).group(1))
        self._serial, self._taken = 0, None

    @property
    def blocks(self):
        if self._blocks is None:
            self._blocks = self._parse_blocks()
        return self._blocks

    def _parse_blocks(self):
        blocks, pending = [Block(None)], []
        for line in self._body:
            if pending or (line.startswith(" ") and line.rstrip().endswith("[")):  # a `switch`'s case lines
                pending.append(line)
                if line.lstrip().startswith("]"):  # (`], !prof !7`)
                    blocks[-1].insts.append(Inst("\n".join(pending)))
                    pending = []
            elif line and not line.startswith((" ", ";")):
                blocks.append(Block(line))
            else:
                blocks[-1].insts.append(Inst(line))
        if not blocks[0].insts:
            blocks.pop(0)
        return blocks

    def lines(self):
        if self._blocks is None:
            return [self.header, *self._body, "}"]
        body = [line for block in self._blocks for line in
                ([block.label_line] if block.label_line is not None else []) + [i.text for i in block.insts]]
        return [self.header, *body, "}"]

    def loops(self):
        """``[(latches, body labels)]`` of each natural loop, by Numba's own
        control-flow analysis (`CFGraph`, what its passes find loops with):
        the latches are the body's blocks that branch to the header."""
        graph = CFGraph()
        for block in self.blocks:
            graph.add_node(block.label)
        for block in self.blocks:
            for target in block.successors():
                graph.add_edge(block.label, target)
        graph.set_entry_point(self.blocks[0].label)
        graph.process()
        return [([label for label, _ in graph.predecessors(loop.header) if label in loop.body], loop.body)
                for loop in graph.loops().values()]

    def instructions(self):
        """Every instruction, as (block, index in the block, `Inst`)."""
        return [(block, k, inst) for block in self.blocks for k, inst in enumerate(block.insts) if inst.is_instruction]

    def definitions(self):
        """``{result name: Inst}``."""
        return {inst.result: inst for _, _, inst in self.instructions() if inst.result}

    def new_name(self, stem):
        """A fresh local name ``%streamjit.<stem>.N`` for an instruction a stage adds.

        The names the function defines are read once and kept with those
        given out since (reading them per name made a stage that adds a
        prefetch per line quadratic in the function's size)."""
        if self._taken is None:
            self._taken = set(self.definitions())
        while True:
            self._serial += 1
            name = f"%streamjit.{stem}.{self._serial}"
            if name not in self._taken:
                self._taken.add(name)
                return name

    def constant_offsets(self):
        """``{pointer: (base pointer, byte offset)}`` for this function's
        pointers computed as a constant offset from another (a one-index
        ``getelementptr`` of a known element type), through chains of them."""
        offsets = {}
        for _, _, inst in self.instructions():
            if inst.opcode != "getelementptr" or inst.pointer is None or len(inst.operands) != 3:
                continue
            index_type, _, index = inst.operands[2].partition(" ")
            if inst.type in ELEMENT_BYTES and index_type == "i64" and re.fullmatch(r"-?\d+", index):
                base, offset = offsets.get(inst.pointer, (inst.pointer, 0))
                offsets[inst.result] = (base, offset + int(index) * ELEMENT_BYTES[inst.type])
        return offsets


class Module:
    """An LLVM module's text as top-level lines, `Function`\\ s and metadata nodes."""

    def __init__(self, text):
        self.parts, self.metadata = [], {}
        self._nontemporal_node = None
        self.append(text)

    def append(self, text):
        """Add top-level text (definitions, declarations, metadata) at the end."""
        lines, k = text.split("\n"), 0
        while k < len(lines):
            line = lines[k]
            if line.startswith("define "):
                end = lines.index("}", k)
                self.parts.append(Function(lines[k:end + 1]))
                k = end + 1
                continue
            node = _METADATA_NODE.match(line) if line.startswith("!") else None
            if node:
                self.metadata[int(node.group(1))] = node.group(2)
            self.parts.append(line)
            k += 1

    def __str__(self):
        return "\n".join(line for part in self.parts for line in
                         (part.lines() if isinstance(part, Function) else (part,)))

    @property
    def functions(self):
        return [part for part in self.parts if isinstance(part, Function)]

    def function(self, name):
        return next((f for f in self.functions if f.name == name), None)

    def defined_names(self):
        """The names of the module's functions, declarations and globals."""
        return {top_level_name(p) for p in self.parts} - {None}

    def declares(self, name):
        """Whether the module declares the function ``name``."""
        return any(isinstance(p, str) and p.startswith("declare ") and _declared_name(p) == name for p in self.parts)

    def remove_declaration(self, name):
        self.parts = [p for p in self.parts if not (isinstance(p, str) and p.startswith("declare ")
                                                     and _declared_name(p) == name)]

    def add_metadata(self, body):
        """Add the node ``!N = body`` under a fresh id N (above every node's id); return N."""
        node_id = max(self.metadata, default=-1) + 1
        self.append(f"!{node_id} = {body}")
        return node_id

    def nontemporal_node(self):
        """The id of a ``!{i32 1}`` node, for ``!nontemporal`` (added once)."""
        if self._nontemporal_node is None:
            self._nontemporal_node = self.add_metadata("!{i32 1}")
        return self._nontemporal_node

    def marked_scope_lists(self, scope_name):
        """``{scope list id: suffix}`` for the ``!alias.scope`` lists holding a
        scope named ``scope_name`` or ``scope_name:suffix`` (`protocol/markers.py`)."""
        prefix = f'!"{scope_name}'
        scopes = {}
        for node_id, body in self.metadata.items():
            generic = _GENERIC_NODE.fullmatch(body) if prefix in body else None
            if generic and generic.group(1).startswith(prefix):
                name = generic.group(1)[2:generic.group(1).index('"', 2)]
                if name == scope_name or name.startswith(scope_name + ":"):
                    scopes[node_id] = name[len(scope_name) + 1:]
        if not scopes:
            return {}
        lists = {}
        for node_id, body in self.metadata.items():
            refs = _SCOPE_LIST.fullmatch(body)
            found = [scopes[int(r)] for r in re.findall(r"!(\d+)", refs.group(1)) if int(r) in scopes] if refs else []
            if found:
                lists[node_id] = found[0]
        return lists


_TOP_LEVEL = re.compile(r"^(?:@(" + NAME + r") =|declare\b[^@]*@(" + NAME + r")\()")


def top_level_name(part):
    """The name a top-level part defines: a function's, a declaration's or
    a global's (``@g = ...``); None for other lines."""
    if isinstance(part, Function):
        return part.name
    m = _TOP_LEVEL.match(part)
    return unquoted(m.group(1) or m.group(2)) if m else None


def _declared_name(line):
    m = _GLOBAL_CALLEE.search(line)
    return unquoted(m.group(1)) if m else None
