"""dnn-sink-reshapes: move a reshape of a contraction's output below the
pointwise ops that follow it, so that they join the contraction's epilogue.

A linear layer traced from PyTorch computes its GEMM over [B * S, K] rows and
views the result as [B, S, N] before the activation or the residual add
(ATen's ``addmm`` -> ``view`` -> ``gelu``). dnn-fuse lets pointwise ops join a
matmul or convolution kernel only where they read its chain tip, so the view
between them kept each a kernel of its own: one more launch, and the GEMM's
output stored and read back. This pass makes the pointwise op run over the
reshape's operand shape instead, and the reshape come after it:

* a ``dnn.reshape`` whose operand is a contraction's result (matmul,
  block-scaled matmul, forward or backward convolution), or a pointwise op's
  result reached from one through ops each the only dnn user of the one
  before (the epilogue chain dnn-fuse grows), and whose result has one dnn
  user, a pointwise op over its shape, moves below that op. Where the graph
  returns the reshape too (a pre-activation a training step saves), it stays
  for the return, and the op reads its operand: the GEMM's epilogue stores
  both, as dnn-fuse lets it for a returned value;
* the op's other operands are mapped across the reshape
  (dnnc/dialect/reshapes.py): a bias [N] stays as it is, a residual
  [8, 1024, 768] against a GEMM's [8192, 768] becomes a reshape of it to
  [8192, 768] (a view: it moves no data); a scalar constant stays;
* where an operand varies along part of a run of dims that the reshape
  regroups (a per-batch [8, 1, 768] against rows 8 x 1024 merged, a bias
  [768] against a GEMM's 2304 columns split [3, 768]), the op stays where
  it is, and dnn-fuse says so in the contraction kernel's
  ``dnn.fusion_note`` (``why_not``). An operand that, read over the
  contraction's output, varies along some but not all of the dims its
  GEMM's rows span (a convolution's output [N, K, H, W] flattened to
  [N, K, H * W] under a position table [1, K, H * W]) moves: the implicit
  GEMM's epilogue reads it through a split view (conv_views.py);
* the moved reshape then sinks past the next op the same way, and a
  reshape back to the operand's shape (a view and its inverse around the op)
  disappears.

Reshapes are views (dnn-fuse leaves them in the graph function), so moving
one moves no data. Ops whose value depends on its position (``gen_index``)
never move.

Before::

    %0 = "dnn.matmul"(%a, %w) : (tensor<512x768xbf16>, tensor<768x3072xbf16>)
                                -> tensor<512x3072xf32>
    %1 = "dnn.add"(%0, %b) : (tensor<512x3072xf32>, tensor<3072xbf16>) -> tensor<512x3072xbf16>
    %2 = "dnn.reshape"(%1) : (tensor<512x3072xbf16>) -> tensor<8x64x3072xbf16>
    %3 = "dnn.gelu"(%2) : (tensor<8x64x3072xbf16>) -> tensor<8x64x3072xbf16>

After::

    %0 = "dnn.matmul"(%a, %w) : ...
    %1 = "dnn.add"(%0, %b) : ...
    %2 = "dnn.gelu"(%1) : (tensor<512x3072xbf16>) -> tensor<512x3072xbf16>
    %3 = "dnn.reshape"(%2) : (tensor<512x3072xbf16>) -> tensor<8x64x3072xbf16>

Lit test: test/lit/passes/dnn_sink_reshapes.mlir.
"""

from dataclasses import dataclass

from mlir import ir

from dnnc.dialect import reshapes
from dnnc.dialect.ops_pointwise import POINTWISE_OPS
from dnnc.passes import DnncPass, dnn_ops, register

# Ops whose outputs an epilogue computes from.
CONTRACTIONS = {"dnn.matmul", "dnn.matmul_block_scaled", "dnn.conv_fprop", "dnn.conv_dgrad",
                "dnn.conv_wgrad"}
# Pointwise ops a reshape may move below: elementwise, whatever the shape.
MOVABLE = {f"dnn.{name}" for name in POINTWISE_OPS - {"gen_index"}} | {"dnn.cast"}


def _producer(value):
    owner = value.owner
    return None if isinstance(owner, ir.Block) else owner.operation


def _dnn_users(value):
    """The distinct dnn ops using ``value`` (a return is no dnn user)."""
    ops = dict.fromkeys(u.owner.operation for u in value.uses)
    return [op for op in ops if op.name.startswith("dnn.")]


def returned_view(op):
    """True for a dnn.reshape whose result only the graph's return reads (a
    pre-activation saved for the backward pass, viewed as ATen returns it)."""
    users = [u.owner.operation for u in op.results[0].uses]
    return op.name == "dnn.reshape" and bool(users) and all(
        u.name == "func.return" for u in users)


def epilogue_users(value):
    """The dnn users of ``value`` but returned views of it."""
    return [op for op in _dnn_users(value) if not returned_view(op)]


def _shape(value):
    return list(ir.RankedTensorType(value.type).shape)


def epilogue_value(value):
    """True when ``value`` is a contraction's result or the end of a chain of
    pointwise ops after one, each reading the one before as its only dnn
    user."""
    seen = 0
    while seen < 64:
        op = _producer(value)
        if op is None:
            return False
        if op.name in CONTRACTIONS:
            return True
        if op.name not in MOVABLE:
            return False
        chain = [v for v in op.operands if _producer(v) is not None
                 and epilogue_users(v) == [op] and _producer(v).name in CONTRACTIONS | MOVABLE]
        if not chain:
            return False
        value, seen = chain[0], seen + 1
    return False


def _contraction(value):
    """The contraction at the root of epilogue value ``value``."""
    op = _producer(value)
    while op.name not in CONTRACTIONS:
        op = _producer(next(v for v in op.operands if _producer(v) is not None
                            and epilogue_users(v) == [op]
                            and _producer(v).name in CONTRACTIONS | MOVABLE))
    return op


def _readable(shape, op):
    """Why the epilogue of contraction ``op`` cannot read an operand of
    ``shape`` over its output (aligned on the right), None when it can. The
    GEMM's and the implicit GEMM's epilogues read any broadcast of the
    output's shape (one that varies along some of the dims a GEMM's rows
    span, not all, such as a convolution's [1, K, H, W] position table,
    through a split view: tensorcore/conv_views.py); an operand of more dims
    than the output has no place in it."""
    out = _shape(op.results[0])
    if len(shape) > len(out):
        return f"operand {shape} has more dims than the {op.name[4:]}'s output {out}"
    return None


def candidate(reshape):
    """The pointwise op ``reshape`` (a dnn.reshape of an epilogue value) would
    move below, else None."""
    x, y = reshape.operands[0], reshape.results[0]
    users = _dnn_users(y)
    if len(users) != 1 or not epilogue_value(x) or epilogue_users(x) != [reshape]:
        return None
    op = users[0]
    if op.name not in MOVABLE or len(op.results) != 1 or _shape(op.results[0]) != _shape(y):
        return None
    return op


def why_not(reshape, op):
    """Why pointwise ``op``, the one user of ``reshape``'s result, cannot run
    over the reshape's operand shape; None when it can."""
    x, y = reshape.operands[0], reshape.results[0]
    contraction = _contraction(x)
    for v in op.operands:
        if v == y:
            continue
        shape, why = reshapes.across(_shape(v), _shape(x), _shape(y))
        if why is None and _shape(x) == _shape(contraction.results[0]):
            why = _readable(shape, contraction)
            if why:
                why = f"operand {_shape(v)}, {why}"
        if why:
            return why
    return None


def _reshaped(value, shape, ip):
    """``value`` as a tensor of ``shape`` (same elements): itself, the operand
    of the reshape that made it, or a new reshape."""
    if _shape(value) == list(shape):
        return value
    p = _producer(value)
    if p is not None and p.name == "dnn.reshape":
        return _reshaped(p.operands[0], shape, ip)
    t = ir.RankedTensorType(value.type)
    return ir.Operation.create("dnn.reshape",
                               results=[ir.RankedTensorType.get(list(shape), t.element_type)],
                               operands=[value], ip=ip).results[0]


def sink(reshape):
    """Move ``reshape`` below its user (see the module docstring); the new
    reshape, or None when it stays."""
    op = candidate(reshape)
    if op is None or why_not(reshape, op):
        return None
    x, y = reshape.operands[0], reshape.results[0]
    src = _shape(x)
    ip = ir.InsertionPoint(op)
    with op.location:
        operands = []
        for v in op.operands:
            if v == y:
                operands.append(x)
                continue
            shape, _ = reshapes.across(_shape(v), src, _shape(y))
            # A bias or a scalar stays as it is; an operand of more dims
            # than the op's new shape (leading 1s: a residual [1, S, N]
            # against a GEMM's [S, N]) would broadcast the result back up.
            keep = reshapes.same_broadcast(shape, _shape(v)) and len(_shape(v)) <= len(src)
            operands.append(v if keep else _reshaped(v, shape, ip))
        out = ir.RankedTensorType(op.results[0].type)
        moved = ir.Operation.create(op.name, results=[ir.RankedTensorType.get(
            src, out.element_type)], operands=operands,
            attributes=dict(op.attributes.items()), ip=ip)
        back = ir.Operation.create("dnn.reshape", results=[out], operands=[moved.results[0]],
                                   ip=ip)
    op.results[0].replace_all_uses_with(back.results[0])
    op.erase()
    if not list(y.uses):
        reshape.erase()
    # A reshape of the new one back to src (the view a GEMM's next operand
    # takes) reads the moved op itself; run() erases what is left unused.
    for user in [u.owner.operation for u in back.results[0].uses]:
        if user.name == "dnn.reshape" and _shape(user.results[0]) == src:
            user.results[0].replace_all_uses_with(moved.results[0])
    return back


def run(module):
    """Sink every reshape that can move; return how many moves were made."""
    todo = [op for op in dnn_ops(module) if op.name == "dnn.reshape"]
    moves = 0
    while todo:
        new = sink(todo.pop(0))
        if new is not None:
            moves += 1
            todo.append(new)
    if moves:
        # Reshapes left unused (a view and its inverse), latest first.
        for op in reversed([o for o in dnn_ops(module) if o.name == "dnn.reshape"]):
            if not list(op.results[0].uses):
                op.erase()
    return moves


@register
@dataclass
class DnnSinkReshapes(DnncPass):
    NAME = "dnn-sink-reshapes"

    def run(self, module):
        run(module)
