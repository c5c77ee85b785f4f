"""dnn-hoist-transposes: move a transpose of a pointwise op's result above
the op, onto its operands, where it lands on graph inputs whose memory
order it is (or cancels another transpose), so that the op runs in the
transposed order and no transpose moves data.

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
shape; the transposes it leaves on its operands may move again. Run in the
fused stage, before dnn-fuse, so that the op joins the kernel that reads it.

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
    return ir.Operation.create(
        "dnn.transpose", results=[ir.RankedTensorType.get(moved, t.element_type)],
        operands=[value], attributes={"permutation": ir.DenseI64ArrayAttr.get(perm)},
        ip=ip).results[0]


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


def run(module):
    """Hoist every transpose that can move; return how many moves were made."""
    todo = [op for op in dnn_ops(module) if op.name == "dnn.transpose"]
    moves = 0
    while todo and moves < MAX_MOVES:
        transpose = todo.pop(0)
        # (One composed into a later transpose may be left unused: no move.)
        new = hoist(transpose) if list(transpose.results[0].uses) else None
        if new is not None:
            moves += 1
            todo += new
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
