"""dnn-fold-operand-scales: move a scale of a matmul's operand to its result.

A matmul operand that is scaled along the dims the product keeps is scaled
the same way after the product:

    (s * A) @ B = s * (A @ B)    s: a scalar, or one value per row of A
    A @ (B * c) = (A @ B) * c    c: a scalar, or one value per column of B

and a division by such a scale likewise (``A / s``). So the scale of a
matmul's prologue (an fp8 operand's dequantization scale, a row or column
normalization, a softmax scale applied to q) becomes the first op of its
epilogue, which dnn-fuse joins to the GEMM's kernel: one kernel, no pass
over the scaled operand. The result differs from the unfused form only in
rounding: the operand is no longer rounded to its type after the scale (the
scale is applied to the f32-accumulated product, then rounded once more to
the product's type).

Folded only where that is exact in arithmetic: the scale's dims broadcast
to the operand with 1 along K (a per-K scale changes every product
differently, and stays a kernel of its own), the scaled value has the
matmul as its only user, and the operand has the unscaled value's type:
the multiply's own result, or its cast back to that type (a graph's
``cast(x * s, bf16)``, whose product is f32). A bf16 or f16 x scaled to
f32 (``x * s`` left in f32) folds too when the matmul's operands then
share one type (or both are fp8, e4m3 and e5m2 in any pairing: a
dequantized fp8 operand, ``(a * s_a) @ (b * s_b)``, as fp8 GEMMs take their
per-tensor descales): the f32 matmul becomes a bf16 / f16 / fp8 one with f32
accumulation, which holds every product exactly, as the f32 one did. A
scale that narrows the type (f32 x * s -> bf16: a cast prologue) stays a
pointwise kernel. Iterated, so that both operands' scales fold.

Before::

    %0 = "dnn.mul"(%a, %s) : (tensor<64x128xbf16>, tensor<64x1xf32>) -> tensor<64x128xbf16>
    %1 = "dnn.matmul"(%0, %b) : (tensor<64x128xbf16>, tensor<128x32xbf16>) -> tensor<64x32xbf16>

After::

    %0 = "dnn.matmul"(%a, %b) : (tensor<64x128xbf16>, tensor<128x32xbf16>) -> tensor<64x32xbf16>
    %1 = "dnn.mul"(%0, %s) : (tensor<64x32xbf16>, tensor<64x1xf32>) -> tensor<64x32xbf16>

Lit test: test/lit/passes/dnn_fold_operand_scales.mlir.
"""

from dataclasses import dataclass

from mlir import ir

from dnnc.dialect import builders
from dnnc.passes import DnncPass, dnn_ops, register

SCALES = ("mul", "div")  # the ops whose second operand (mul: either) may be a scale
WIDENED = ("bf16", "f16", "f8E4M3FN", "f8E5M2")  # operand types whose f32 scale the
#                                                 widening fold undoes
FP8 = ("f8E4M3FN", "f8E5M2")  # widened operands that may pair with each other


def _shape(value):
    return tuple(ir.RankedTensorType(value.type).shape)


def _element(value):
    return ir.RankedTensorType(value.type).element_type


def _producer(value):
    owner = value.owner
    return None if isinstance(owner, ir.Block) else owner.operation


def _keeps(scale, full, k_axis):
    """True when ``scale`` (right-aligned to ``full``) broadcasts to it and
    is 1 (or absent) along ``k_axis`` (counted from the end: -1 or -2)."""
    s = _shape(scale)
    if len(s) > len(full):
        return False
    for d, f in zip(reversed(s), reversed(full)):
        if d not in (1, f):
            return False
    return len(s) < -k_axis or s[k_axis] == 1


def _split(op, want, k_axis, widening=False):
    """(unscaled operand, scale) of a scale op ``op`` whose unscaled operand
    has type ``want`` (``widening``: has its shape and a narrower float type
    that f32 holds exactly, ``want`` being f32), or None when it is no such
    scale."""
    name = op.name[4:]
    if name not in SCALES:
        return None
    want = ir.RankedTensorType(want)
    if widening and str(want.element_type) != "f32":
        return None
    full = tuple(want.shape)
    a, b = op.operands[0], op.operands[1]
    for x, s in [(a, b)] + ([(b, a)] if name == "mul" else []):
        if widening:
            same = _shape(x) == full and str(_element(x)) in WIDENED
        else:
            same = x.type == want
        if same and _keeps(s, full, k_axis):
            return x, s
    return None


def _only_use(value, op):
    """True when ``op`` is the only user of ``value``, once."""
    uses = list(value.uses)
    return len(uses) == 1 and uses[0].owner.operation == op


def _scaled(operand, matmul):
    """(the ops computing ``operand``, which go once it is folded; the op
    that may be a scale) of a matmul operand that only the matmul reads:
    the op making it, or through a cast the op the cast reads (also read
    only there); None otherwise (``_split`` says whether it is a scale)."""
    op = _producer(operand)
    if op is None or not _only_use(operand, matmul):
        return None
    chain = [op]
    if op.name == "dnn.cast":
        inner = _producer(op.operands[0])
        if inner is None or not _only_use(op.operands[0], op):
            return None
        chain.append(inner)
        op = inner
    return chain, op


def _rebuild(matmul, operands, scales):
    """Replace ``matmul`` by one of ``operands`` followed by ``scales``
    ([(op name, scale)]), applied in order at the product's type."""
    view = builders.read(matmul)
    c = matmul.results[0]
    with matmul.location:
        value = builders.create("matmul", {"a": operands[0], "b": operands[1]},
                                dict(view.attrs), {"c": c.type}, discardable=view.discardable,
                                ip=ir.InsertionPoint(matmul)).results["c"]
        for name, scale in scales:
            value = builders.create(name, {"a": value, "b": scale}, {}, {"y": c.type},
                                    ip=ir.InsertionPoint(matmul)).results["y"]
    c.replace_all_uses_with(value)
    matmul.erase()


def _fold_same_type(matmul):
    """Fold one scale whose operand keeps its type; True when it did."""
    for index, k_axis in ((0, -1), (1, -2)):
        operand = matmul.operands[index]
        found = _scaled(operand, matmul)
        if found is None:
            continue
        chain, op = found
        split = _split(op, operand.type, k_axis)
        if split is None:
            continue
        x, scale = split
        operands = [matmul.operands[0], matmul.operands[1]]
        operands[index] = x
        _rebuild(matmul, operands, [(op.name[4:], scale)])
        for dead in chain:
            dead.erase()
        return True
    return False


def _fold_widening(matmul):
    """Fold the f32 scales of bf16, f16 or fp8 values (a graph's ``x * s``
    with an f32 ``s``, whose product is f32) of one or both operands when the
    product then multiplies operands of one type, or two fp8 types: an f32
    matmul becomes one of those types (tensor cores) with the scales after
    it. The two differ
    in f32 rounding only: the f32 matmul rounds each x * s and product,
    the folded one each sum's scaling (its products are exact in f32)."""
    picked, operands, scales = [], [matmul.operands[0], matmul.operands[1]], []
    for index, k_axis in ((0, -1), (1, -2)):
        operand = matmul.operands[index]
        found = _scaled(operand, matmul)
        if found is None or len(found[0]) != 1:
            continue
        op = found[1]
        split = _split(op, operand.type, k_axis, widening=True)
        if split is None:
            continue
        operands[index] = split[0]
        scales.append((op.name[4:], split[1]))
        picked.append(op)
    types = {str(_element(x)) for x in operands}
    if not picked or (len(types) != 1 and not types <= set(FP8)):
        return False
    _rebuild(matmul, operands, scales)
    for dead in picked:
        dead.erase()
    return True


def fold(matmul):
    """Fold a scale of ``matmul``'s operands into its result; True when it
    changed the IR."""
    return _fold_same_type(matmul) or _fold_widening(matmul)


def fold_operand_scales(module):
    """Fold until nothing changes; return the number of scales moved."""
    total = 0
    # One fold a sweep: the op list is stale once a matmul is replaced.
    while any(op.name == "dnn.matmul" and fold(op) for op in dnn_ops(module)):
        total += 1
    return total


@register
@dataclass
class DnnFoldOperandScales(DnncPass):
    NAME = "dnn-fold-operand-scales"

    def run(self, module):
        fold_operand_scales(module)
