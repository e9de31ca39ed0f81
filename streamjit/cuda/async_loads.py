"""``prefetch_distance=k`` on the GPU: streamed loads -> an asynchronous
load stage with a ``k``-slot shared-memory ring (TVM RFC #80's semantics).

In an innermost step-1 loop whose body runs straight through, each element
load ``b[..., v + c]`` of an array in ``stream_loads`` (``c`` a constant;
the other indices unchanged by the body), in a statement the body always
runs, gets a ring ``cuda.shared.array((k, threads_per_block))``: one column
per thread of the block, so no thread reads what another wrote and no
barrier is needed. Iteration ``t`` of a thread reads its value from slot
``t % k``, and the copy for iteration ``t + k`` goes into the same slot
right after:

    for p in range(k):                          # prologue: iterations 0..k-1
        if start + p*stride < hi: cp.async(ring[p, lane] <- b[..., v_p + c])
        commit_group                            # one group per iteration, empty or not
    slot = 0
    for v in range(start, hi, stride):
        wait_group k-1                          # groups complete in order: t's is done
        x = ring[slot, lane]
        if v + k*stride < hi: cp.async(ring[slot, lane] <- b[..., v + k*stride + c])
        commit_group
        slot = (slot + 1) % k
        body, b[..., v + c] -> x

Committed groups complete in order (the RFC's assumption, and PTX's rule
for ``cp.async.wait_group``), so waiting until at most ``k - 1`` are
pending means iteration ``t``'s group has landed. The copies of iterations
past the end are skipped, not the commits, so the count stays exact. No
fence is needed: a grid on its own needs none, and kernel completion
orders every store. The loop keeps its scalar stores (`vector.py` leaves
it alone: its groups would consume iterations in another order than the
ring was filled).
"""

import ast
import copy

from ..errors import StreamError
from .source import (call, innermost_loops, loop_shape, name, replace, statement, store_to, streamed_loads,
                     substitute)

# Static shared memory a block may always have (sm_80 and later allow more
# only by opting in, which numba-cuda does not).
SHARED_BYTES = 48 * 1024


def _offset(node, var):
    """``c`` when ``node`` is ``var``, ``var + c``, ``c + var`` or ``var - c``."""
    if isinstance(node, ast.Name) and node.id == var:
        return 0
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        left, right = node.left, node.right
        if isinstance(left, ast.Name) and left.id == var and isinstance(right, ast.Constant) \
                and type(right.value) is int:
            return right.value if isinstance(node.op, ast.Add) else -right.value
        if isinstance(node.op, ast.Add) and isinstance(right, ast.Name) and right.id == var \
                and isinstance(left, ast.Constant) and type(left.value) is int:
            return left.value
    return None


def _streams(kernel, loop, shape):
    """[(load node, array, prefix, c)] the loop's stage takes."""
    return [(node, array, prefix, c) for node, array, prefix, last in streamed_loads(kernel, loop, shape)
            for c in [_offset(last, shape.var)] if c is not None]


def _rewrite(kernel, loop, shape, loads, depth):
    """(statements that replace the loop, ring allocations, shared bytes)."""
    lane, start, hi, stride, slot, ahead = (kernel.fresh(s) for s in ("lane", "s", "hi", "st", "slot", "vn"))
    cuda = kernel.bind("cuda", kernel.cuda)
    before = [statement(f"{lane} = {cuda}.threadIdx.x + {cuda}.blockDim.x * ({cuda}.threadIdx.y + "
                        f"{cuda}.blockDim.y * {cuda}.threadIdx.z)"),
              ast.Assign(targets=[store_to(start)], value=ast.BinOp(left=shape.start, op=ast.Add(),
                                                                      right=copy.deepcopy(shape.thread))),
              ast.Assign(targets=[store_to(hi)], value=shape.stop),
              ast.Assign(targets=[store_to(stride)], value=copy.deepcopy(shape.stride))]
    rings, values, replaced, reads, issues, shared = [], {}, {}, [], [], 0
    for node, array, prefix, c in loads:
        key = (array, tuple(ast.dump(i) for i in prefix), c)
        if key not in values:
            ring = kernel.fresh("ring")
            values[key] = kernel.fresh("x")
            dtype = kernel.types[array].dtype
            alignment = "" if kernel.simulated else ", alignment=16"
            rings.append(statement(f"{ring} = {cuda}.shared.array(({depth}, {kernel.threads_per_block}), "
                                   f"{kernel.bind(f'dtype_{array}', dtype)}{alignment})"))
            shared += depth * kernel.threads_per_block * dtype.bitwidth // 8
            pre = []
            for item in prefix:  # invariant in the loop: computed once before it
                pre.append(kernel.fresh("p"))
                before.append(ast.Assign(targets=[store_to(pre[-1])], value=copy.deepcopy(item)))
            index = ", ".join([*pre, f"{ahead} + {c}"])
            index = f"({index})" if pre else index
            reads.append(statement(f"{values[key]} = {ring}[{slot}, {lane}]"))
            issues.append(f"{kernel.intrinsic('copy_async', array)}({ring}, {slot}, {lane}, {array}, {index})")
        replaced[id(node)] = name(values[key])
    commit, wait = kernel.intrinsic("commit"), kernel.intrinsic("wait", depth - 1)
    before.append(statement(f"for {slot} in range({depth}):\n"
                            f"    {ahead} = {start} + {slot} * {stride}\n"
                            f"    if {ahead} < {hi}:\n" + "".join(f"        {i}\n" for i in issues) +
                            f"    {commit}()"))
    before.append(statement(f"{slot} = 0"))
    head = [statement(f"{wait}()"), *reads,
            statement(f"{ahead} = {shape.var} + {depth} * {stride}"),
            statement(f"if {ahead} < {hi}:\n" + "".join(f"    {i}\n" for i in issues)),
            statement(f"{commit}()"),
            statement(f"{slot} = {slot} + 1 if {slot} + 1 < {depth} else 0")]
    body = substitute(loop.body, replaced)
    new_loop = ast.For(target=store_to(shape.var), iter=call("range", name(start), name(hi), name(stride)),
                       body=head + body, orelse=[])
    return before + [new_loop], rings, shared


def run_pass(kernel, depth):
    """Pipeline the streamed loads of the qualifying innermost loops,
    ``depth`` iterations ahead (their ids go to ``kernel.pipelined``)."""
    rings, shared = [], 0
    for loop in innermost_loops(kernel.tree):
        shape = loop_shape(kernel, loop)
        loads = _streams(kernel, loop, shape) if shape and not loop.orelse else []
        if not loads:
            continue
        statements, new_rings, ring_bytes = _rewrite(kernel, loop, shape, loads, depth)
        replace(kernel.tree, loop, statements)
        rings += new_rings
        shared += ring_bytes
        kernel.pipelined.add(id(statements[-1]))
    if shared > SHARED_BYTES:
        raise StreamError(f"prefetch_distance={depth}: the load rings of {kernel.func.__qualname__} need {shared} "
                          f"bytes of shared memory per block, more than {SHARED_BYTES}; lower prefetch_distance "
                          "or threads_per_block")
    if kernel.simulated:  # the simulator tells shared arrays apart by their line alone
        for serial, ring in enumerate(rings):
            for node in ast.walk(ring):
                node.lineno = node.end_lineno = (1 << 20) + serial
                node.col_offset = node.end_col_offset = 0
    kernel.tree.body[0:0] = rings
