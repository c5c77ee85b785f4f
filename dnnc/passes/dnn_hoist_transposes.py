"""dnn-hoist-transposes: move a transpose of a pointwise op's result above
the op, onto its operands, where it lands on graph inputs whose memory
order it is (or cancels another transpose), so that the op runs in the
transposed order and no transpose moves data; and move a pointwise op of
restored values (a batchnorm's (N*H*W, C) view taken back to NCHW) above
the restore.

A training step's batchnorm backward reads dy in the memory order of its
channels-last x (dnnc/decompose/batchnorm.py: ``transpose(dy, [0, 2, 3,
1])`` viewed as (N*H*W, C)). In a network dy is a relu's gradient,
``relu_backward(g, y)`` of two channels-last graph inputs: the transpose of
the pointwise result is a copy kernel, and the pointwise op over logical
NCHW makes dnn-io-strides copy g and y into row-major buffers first, three
copies in all. Moved onto g and y, the transposes are views of the graph's
buffers (dnn-layout-views) and the op runs over their memory order.

A ``dnn.transpose`` moves when its operand is the result of a pointwise op
(elementwise: ``gen_index`` excepted) that it alone reads (no other op, no
return), and each operand of that op is

* a graph argument laid out so that the transpose is its memory order (its
  declared strides, permuted, are row-major; dnnc/decompose/layout.py);
* a transpose's result: the two compose, and cancel where they undo each
  other;
* the result of another pointwise op that only this op reads, whose
  operands are such in turn (the transpose left on it moves next);
* a value that moves no data under the permutation: a scalar, or an operand
  of the op's rank with at most one dim of more than one element (a
  per-channel parameter), which a reshape views in the new order.

The op is made again on the moved operands with the transpose's result
shape; the transposes it leaves on its operands may move again.

Then the other way: a pointwise op whose full-size operands are each
``transpose(reshape(x))`` (or ``transpose(x)``) of a computed x, with one
shape and permutation, the rest scalars (``sink``), runs on the x and the
restore follows it. A training batchnorm's y over (N*H*W, C) taken back
to NCHW, then a relu (and a residual add of another such restore), so
becomes one pointwise kernel over (N*H*W, C) whose result the restore
views in the relu's channels-last output (dnn-layout-views), where the
relu had been a copy kernel of its own. A restore of a graph input is left
alone (it is what the first phase makes), so the two phases do not undo
each other.

Run in the fused stage, before dnn-fuse, so that the ops join the kernels
that read or make their values.

Before (g and y declared channels-last)::

    %d = "dnn.relu_backward"(%g, %y) : (tensor<2x3x4x5xbf16>, ...) -> tensor<2x3x4x5xbf16>
    %t = "dnn.transpose"(%d) {permutation = array<i64: 0, 2, 3, 1>} -> tensor<2x4x5x3xbf16>

After::

    %a = "dnn.transpose"(%g) {permutation = array<i64: 0, 2, 3, 1>} -> tensor<2x4x5x3xbf16>
    %b = "dnn.transpose"(%y) {permutation = array<i64: 0, 2, 3, 1>} -> tensor<2x4x5x3xbf16>
    %t = "dnn.relu_backward"(%a, %b) -> tensor<2x4x5x3xbf16>

Lit test: test/lit/passes/dnn_hoist_transposes.mlir.
"""

from dataclasses import dataclass

from mlir import ir

from dnnc.codegen.gpu import irutil
from dnnc.decompose import layout
from dnnc.dialect.ops_pointwise import POINTWISE_OPS
from dnnc.passes import DnncPass, dnn_ops, register

MOVABLE = {f"dnn.{name}" for name in POINTWISE_OPS - {"gen_index"}}
# Moves a graph may make (each lands a transpose on operands nearer its
# inputs, so the walk ends; this bounds it all the same).
MAX_MOVES = 10000
# Sweeps of the sinking phase (each moves ops one restore further down).
MAX_SWEEPS = 64


def _shape(value):
    return list(ir.RankedTensorType(value.type).shape)


def _producer(value):
    return None if isinstance(value.owner, ir.Block) else value.owner.operation


def _permutation(op):
    return [int(p) for p in ir.DenseI64ArrayAttr(op.attributes["permutation"])]


def _in_place(arg, perm):
    """Whether graph argument ``arg`` transposed by ``perm`` is its memory
    order: its declared strides, permuted, row-major (unit dims aside)."""
    strides = layout.input_strides(arg)
    shape = _shape(arg)
    if strides is None:
        strides = irutil.row_major_strides(shape)
    moved = [shape[p] for p in perm]
    dense = irutil.row_major_strides(moved)
    return all(n == 1 or strides[p] == d for p, n, d in zip(perm, moved, dense))


def _moves_no_data(value, rank):
    shape = _shape(value)
    return len(shape) == 0 or (len(shape) == rank and sum(n != 1 for n in shape) <= 1)


def _sole_user(value):
    users = [u.owner.operation for u in value.uses]
    return users[0] if len(users) == 1 else None


def _movable(value, perm, depth=0):
    """How operand ``value`` goes above the transpose: "arg", "transpose",
    "view", "pointwise" (the result of another pointwise op that only the
    op reads, whose operands move in turn), or None when it cannot."""
    if _moves_no_data(value, len(perm)):
        return "view"
    if len(_shape(value)) != len(perm):
        return None
    p = _producer(value)
    if p is None:
        return "arg" if _in_place(value, perm) else None
    if p.name == "dnn.transpose":
        return "transpose"
    if depth < 16 and p.name in MOVABLE and len(p.results) == 1 and \
            _sole_user(value) is not None and \
            all(_movable(v, perm, depth + 1) is not None for v in p.operands):
        return "pointwise"
    return None


def _transposed(value, perm, ip):
    """``value`` (an operand ``_movable`` accepts) in the order ``perm``."""
    t = ir.RankedTensorType(value.type)
    shape = _shape(value)
    if len(shape) == 0:
        return value
    moved = [shape[p] for p in perm]
    if _moves_no_data(value, len(perm)):
        if moved == shape:
            return value
        return ir.Operation.create("dnn.reshape", results=[ir.RankedTensorType.get(
            moved, t.element_type)], operands=[value], ip=ip).results[0]
    p = _producer(value)
    if p is not None and p.name == "dnn.transpose":
        # transpose(transpose(v, q), perm) = transpose(v, q[perm[i]]).
        q = _permutation(p)
        composed = [q[i] for i in perm]
        value = p.operands[0]
        if composed == list(range(len(composed))):
            return value
        perm = composed
    return _transpose(value, perm, ir.RankedTensorType.get(moved, t.element_type), ip)


def _transpose(value, perm, result_type, ip):
    return ir.Operation.create(
        "dnn.transpose", results=[result_type], operands=[value],
        attributes={"permutation": ir.DenseI64ArrayAttr.get(perm)}, ip=ip).results[0]


def candidate(transpose):
    """The pointwise op whose result ``transpose`` reads and could move
    above, else None."""
    op = _producer(transpose.operands[0])
    if op is None or op.name not in MOVABLE or len(op.results) != 1:
        return None
    if [u.owner.operation for u in op.results[0].uses] != [transpose]:
        return None
    perm = _permutation(transpose)
    if any(_movable(v, perm) is None for v in op.operands):
        return None
    return op


def hoist(transpose):
    """Move ``transpose`` above its operand's pointwise op; the transposes
    it leaves on the op's operands (which may move again), or None when it
    stays."""
    op = candidate(transpose)
    if op is None:
        return None
    perm = _permutation(transpose)
    ip = ir.InsertionPoint(op)
    with op.location:
        operands = [_transposed(v, perm, ip) for v in op.operands]
        out = ir.RankedTensorType(transpose.results[0].type)
        element = ir.RankedTensorType(op.results[0].type).element_type
        moved = ir.Operation.create(op.name, results=[ir.RankedTensorType.get(
            list(out.shape), element)], operands=operands,
            attributes=dict(op.attributes.items()), ip=ip)
    transpose.results[0].replace_all_uses_with(moved.results[0])
    transpose.erase()
    op.erase()
    return [_producer(v) for v in operands
            if _producer(v) is not None and _producer(v).name == "dnn.transpose"]


def _restore(value):
    """(the 2-D or N-D value, reshape shape or None, permutation) when
    ``value`` is ``transpose(x, perm)`` or ``transpose(reshape(x), perm)``
    (a batchnorm's view of its channels-last x taken back to NCHW), else
    None."""
    t = _producer(value)
    if t is None or t.name != "dnn.transpose":
        return None
    x = t.operands[0]
    r = _producer(x)
    if r is not None and r.name == "dnn.reshape":
        return r.operands[0], _shape(x), _permutation(t)
    return x, None, _permutation(t)


def _rebuilt(value, shape, perm, like, ip):
    """``value`` reshaped to ``shape`` (when given) and transposed by
    ``perm``, of ``like``'s type."""
    if shape is not None:
        element = ir.RankedTensorType(value.type).element_type
        value = ir.Operation.create("dnn.reshape", results=[ir.RankedTensorType.get(
            shape, element)], operands=[value], ip=ip).results[0]
    return _transpose(value, perm, like, ip)


def sink(op):
    """Move pointwise ``op`` above the restores its operands are: each
    full-size operand ``transpose(reshape(x_i))`` (or ``transpose(x_i)``)
    of computed x_i, with one shape and permutation, the others scalars;
    the op then runs on the x_i and the restore follows it, where the op
    joins the kernel that makes them (a batchnorm's y over (N*H*W, C)) and
    the restore is a view of the output it lands in. An operand's restore
    stays for its other readers. Returns the new restore's result, or None
    when ``op`` stays."""
    if op.name not in MOVABLE or len(op.results) != 1:
        return None
    found, operands = None, []
    for v in op.operands:
        if len(_shape(v)) == 0:
            operands.append(v)
            continue
        r = _restore(v)
        # (A transpose of a graph input is a view already: what hoist makes.)
        if r is None or _producer(r[0]) is None or \
                (found is not None and found[1:] != r[1:]) or \
                _shape(v) != _shape(op.results[0]):
            return None
        found = r
        operands.append(r[0])
    if found is None:
        return None
    x, shape, perm = found
    if any(_shape(v) != _shape(x) for v in operands if len(_shape(v))):
        return None
    ip = ir.InsertionPoint(op)
    with op.location:
        element = ir.RankedTensorType(op.results[0].type).element_type
        moved = ir.Operation.create(op.name, results=[ir.RankedTensorType.get(
            _shape(x), element)], operands=operands,
            attributes=dict(op.attributes.items()), ip=ip)
        back = _rebuilt(moved.results[0], shape, perm, op.results[0].type, ip)
    old = []
    for v in op.operands:
        t = _producer(v) if len(_shape(v)) else None
        if t is not None and not any(t == o for o in old):
            old.append(t)
    op.results[0].replace_all_uses_with(back)
    op.erase()
    for t in old:
        if not list(t.results[0].uses):
            inner = _producer(t.operands[0])
            t.erase()
            if inner is not None and inner.name == "dnn.reshape" and \
                    not list(inner.results[0].uses):
                inner.erase()
    return back


def run(module):
    """Hoist every transpose that can move, then sink every pointwise op
    that can; return how many moves were made."""
    todo = [op for op in dnn_ops(module) if op.name == "dnn.transpose"]
    moves = 0
    while todo and moves < MAX_MOVES:
        transpose = todo.pop(0)
        # (One composed into a later transpose may be left unused: no move.)
        new = hoist(transpose) if list(transpose.results[0].uses) else None
        if new is not None:
            moves += 1
            todo += new
    # Then sink pointwise ops above restores, sweeping the graph afresh
    # until none moves (a sweep's ops are all live when it starts; an op a
    # sweep erases is its current one).
    for _ in range(MAX_SWEEPS):
        swept = 0
        for op in [o for o in dnn_ops(module) if o.name in MOVABLE]:
            if sink(op) is not None:
                swept += 1
        moves += swept
        if not swept:
            break
    if moves:
        # Transposes left unused (one composed into another), latest first.
        for op in reversed([o for o in dnn_ops(module) if o.name == "dnn.transpose"]):
            if not list(op.results[0].uses):
                op.erase()
    return moves


@register
@dataclass
class DnnHoistTransposes(DnncPass):
    NAME = "dnn-hoist-transposes"

    def run(self, module):
        run(module)
