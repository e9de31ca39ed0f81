"""Paths through x86-64 machine code (AT&T syntax, as ``inspect_asm``
prints it): which non-temporal stores can reach a return of their function
along some path that passes no ``sfence``.

Read off the assembly itself, not the LLVM IR the report counts from, so a
fence that the instruction selector dropped or moved, or a path the backend
added, shows here. Each function's control flow is its labels, jumps and
returns; an indirect jump may go to any label of its function, a ``jmp``
to a symbol outside it is a tail call (it leaves the function), and a call
returns to the next instruction. A call of streamjit's own fill (its NT
stores, unfenced by design: the nest's fence follows the call) counts as an
NT store where it is called, and the fill itself is not checked."""

import re
from dataclasses import dataclass, field

FILL = "streamjit.stream_fill"
_NT_STORE = re.compile(r"^v?movnt(?!dqa)\w*$")  # (movntdqa is a load)
_FENCES = {"sfence", "mfence"}
_RETURNS = {"ret", "retq", "retl"}
_TRAPS = {"ud2", "int3"}
_EXIT = -1


@dataclass
class FunctionPaths:
    """One function's NT stores (the lines), and those with a path to a return that passes no fence."""
    name: str
    stores: list = field(default_factory=list)
    unfenced: list = field(default_factory=list)


def _functions(asm):
    """(name, [lines]) of each function defined in ``asm``."""
    names = set()
    for line in asm.splitlines():
        found = re.match(r"\s*\.type\s+(\"[^\"]+\"|[^,\s]+)\s*,\s*@function", line)
        if found:
            names.add(found.group(1).strip('"'))
    functions, current = [], None
    for line in asm.splitlines():
        label = re.match(r"^(\"[^\"]+\"|[^\s:#]+):", line)
        if label and label.group(1).strip('"') in names:
            current = (label.group(1).strip('"'), [])
            functions.append(current)
        elif current is not None and (line.startswith(".Lfunc_end") or re.match(r"\s*\.section\b", line)):
            current = None
        elif current is not None:
            current[1].append(line)
    return functions


def _parse(lines):
    """([(mnemonic, operands, line)], {label: index of the instruction after it})."""
    insts, labels = [], {}
    for line in lines:
        label = re.match(r"^(\"[^\"]+\"|[^\s:#]+):", line)
        if label:
            labels[label.group(1).strip('"')] = len(insts)
            continue
        text = line.split("#", 1)[0].strip()
        if not text or text.startswith("."):
            continue
        mnemonic, *operands = text.split(None, 1)
        insts.append((mnemonic, operands[0].strip() if operands else "", line.strip()))
    return insts, labels


def _successors(k, insts, labels):
    mnemonic, operands, _ = insts[k]
    after = k + 1 if k + 1 < len(insts) else _EXIT  # (falling off the end leaves the function)
    if mnemonic in _RETURNS:
        return [_EXIT]
    if mnemonic in _TRAPS:
        return []
    if mnemonic.startswith("j"):
        target = operands.strip('"')
        if target.startswith("*"):  # (a jump table, or a computed jump: anywhere in the function)
            return sorted(set(labels.values()) | {_EXIT}) if mnemonic.startswith("jmp") else [after]
        local = labels.get(target)
        goes = [_EXIT] if local is None else [local if local < len(insts) else _EXIT]
        return goes if mnemonic.startswith("jmp") else goes + [after]
    return [after]


def _is_store(mnemonic, operands):
    return bool(_NT_STORE.match(mnemonic)) or (mnemonic.startswith("call") and FILL in operands)


def fence_paths(asm):
    """`FunctionPaths` of each function of ``asm`` but streamjit's fills."""
    result = []
    for name, lines in _functions(asm):
        if name.startswith(FILL):
            continue
        insts, labels = _parse(lines)
        successors = [_successors(k, insts, labels) for k in range(len(insts))]
        # escapes[k]: a return is reachable from before instruction k along a path with no fence
        escapes = [False] * len(insts)
        changed = True
        while changed:
            changed = False
            for k in reversed(range(len(insts))):
                if escapes[k] or insts[k][0] in _FENCES:
                    continue
                if any(s == _EXIT or escapes[s] for s in successors[k]):
                    escapes[k] = changed = True
        paths = FunctionPaths(name)
        for k, (mnemonic, operands, line) in enumerate(insts):
            if _is_store(mnemonic, operands):
                paths.stores.append(line)
                if any(s == _EXIT or escapes[s] for s in successors[k]):
                    paths.unfenced.append(line)
        result.append(paths)
    return result


def nt_stores_and_unfenced(asm):
    """(how many NT stores ``asm`` holds, [(function, store line)] of those a
    return is reachable from without a fence)."""
    paths = fence_paths(asm)
    return (sum(len(p.stores) for p in paths),
            [(p.name, line) for p in paths for line in p.unfenced])
