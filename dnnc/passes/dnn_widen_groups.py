"""dnn-widen-groups: run a convolution of a few channels a group as one of
BLOCK channels a group, with block-diagonal filters, on the tensor cores.

tc-sm90's grouped implicit GEMM reads a group's channels in whole K steps
of 64 (tensorcore/conv.groups_problem): ResNeXt's 32 groups of 8 channels
reduce 8 channels a group, which leaves them to simt-depthwise, whose
multiply-adds run on the FP32 pipe. Measured on an H200 (bf16,
32x256x28x28, 3x3): 0.042-0.045 ms forward against cuDNN's 0.033, whose
kernel (``sm80_xmma_fprop_implicit_gemm_..._g8``) runs the groups on the
tensor cores; its filter gradient ``sm90_xmma_wgrad_..._g8`` likewise.

BLOCK / Cg consecutive groups, of Cg = Kg channels each, are one group of
BLOCK channels whose filter is zero between different small groups::

    w'[k, c', t] = w[k, c' - j Cg, t]   where j = (k / Kg) mod (BLOCK / Cg)
                                         and j Cg <= c' < (j + 1) Cg
                 = 0                     elsewhere

A forward and a data gradient then read w' (built by one pointwise kernel
from w: gen_index, cmp_eq and select, written [K, *window, BLOCK] so that it
is channels-last), and a filter gradient computes dw' of the wide groups,
from which a reduction over the BLOCK / Cg blocks of each row, every one
but the diagonal one selected away as zero, keeps dw. The tensor cores do
BLOCK / Cg times the multiply-adds of the small groups (8 for groups of 8),
which they do faster than the FP32 pipe does the small groups' own.

Taken when: the target has tc-sm90's grouped implicit GEMM (the pass runs
in the sm_90a pipeline only); the operands are bf16 or f16, accumulated in
f32 (the result any type); Cg = Kg, a divisor of BLOCK from MIN_CHANNELS up (groups of 4 stay on
simt-depthwise: 16 times their multiply-adds, measured slower than the
FP32 pipe's); C a multiple of BLOCK. Everything else is left as it is.

One difference from the small groups' arithmetic: a product of a zero of
w' and an infinite or NaN x (or dy) is NaN, so such a value reaches the
outputs of every small group of its BLOCK channels, where a grouped
convolution keeps it in its own group. Finite inputs give the small
groups' sums exactly (the zeros add nothing).

Before (32 groups of 8)::

    %y = "dnn.conv_fprop"(%x, %w) {...} : (tensor<32x256x28x28xbf16>,
        tensor<256x8x3x3xbf16>) -> tensor<32x256x28x28xbf16>

After: ``%w2 = ...`` (tensor<256x64x3x3xbf16>, a transpose of the
[256, 3, 3, 64] select) and ``"dnn.conv_fprop"(%x, %w2)``: 4 groups of 64.

Lit test: test/lit/passes/dnn_widen_groups.mlir.
"""

from dataclasses import dataclass

from dnnc.decompose.common import Builder, dtype_of, shape_of
from dnnc.dialect import builders
from dnnc.dialect.types import data_type
from dnnc.passes import DnncPass, dnn_ops, register

BLOCK = 64
MIN_CHANNELS = 8
TYPES = (data_type.BFLOAT16, data_type.HALF)
CONVS = ("conv_fprop", "conv_dgrad", "conv_wgrad")


def _roles(view):
    """(x's channels C, the filter's shape) of a convolution, any
    direction."""
    if view.name == "conv_fprop":
        return shape_of(view.operands["x"])[1], shape_of(view.operands["w"])
    if view.name == "conv_dgrad":
        return shape_of(view.results["dx"])[1], shape_of(view.operands["w"])
    return shape_of(view.operands["x"])[1], shape_of(view.results["dw"])


def widened(view):
    """Cg of a convolution this pass widens, or None."""
    if view.name not in CONVS or str(view.attrs.get("compute_type")) != "f32":
        return None
    # The operands' types (the result's may be f32: an epilogue follows).
    if any(dtype_of(v) not in TYPES for v in view.operands.values() if v is not None):
        return None
    c, w = _roles(view)
    k, cg = w[0], w[1]
    if cg < MIN_CHANNELS or cg >= BLOCK or BLOCK % cg or c % BLOCK or c % cg:
        return None
    groups = c // cg
    if k % groups or k // groups != cg:
        return None
    return cg


def _last(nd):
    """The permutation taking [K, C, *win] to [K, *win, C]."""
    return [0] + list(range(2, 2 + nd)) + [1]


def _first(nd):
    """Its inverse: [K, *win, C] to [K, C, *win]."""
    return [0, 1 + nd] + list(range(1, 1 + nd))


def _permute(b, x, perm):
    """``x`` transposed through ``perm``; a reshape where only dims of one
    element move (a 1x1 filter's [K, 1, 1, C] is [K, C, 1, 1] in memory),
    which no kernel copies."""
    shape = shape_of(x)
    moved = [d for d in perm if shape[d] != 1]
    if moved == sorted(moved):
        return b.reshape(x, [shape[d] for d in perm])
    return b.transpose(x, perm)


def _blocks(b, w, cg, pair):
    """w [K, Cg, *win] (a forward's filter: ``pair``) or dw' [K, BLOCK,
    *win], channels last and split as [G', j, Kg, *win, j', Cg] (j the
    small group of a row within its wide group, j' the block of Cg columns;
    1 for w), and the condition j == j' over both axes. For w, j' comes
    from a second reshape of w, [G', 1, Kg, *win, j', Cg] (as many
    elements; gen_index reads only its shape), so that every op is
    pointwise on views of w: one kernel."""
    k, _, *window = shape_of(w)
    nd = len(window)
    blocks, kg = BLOCK // cg, cg
    wide = k // (blocks * kg)
    last = _permute(b, w, _last(nd))
    rows = b.reshape(last, [wide, blocks, kg, *window, 1 if pair else blocks, cg])
    columns = b.reshape(last, [wide, 1, kg, *window, blocks, cg]) if pair else rows
    cond = b.binary("cmp_eq", b.emit("gen_index", {"x": rows}, {"axis": 1}),
                    b.emit("gen_index", {"x": columns}, {"axis": 3 + nd}))
    return rows, cond


def wide_filter(b, w, cg):
    """w [K, Cg, *win] as [K, BLOCK, *win], block-diagonal (see the module
    doc), computed channels-last ([K, *win, BLOCK], transposed)."""
    k, _, *window = shape_of(w)
    rows, cond = _blocks(b, w, cg, pair=True)
    wide = b.select(cond, rows, 0.0, out=dtype_of(w))         # [G', j, Kg, *win, j', Cg]
    return _permute(b, b.reshape(wide, [k, *window, BLOCK]), _first(len(window)))


def diagonal_blocks(b, dw_wide, cg, dtype):
    """dw [K, Cg, *win] from the wide groups' dw' [K, BLOCK, *win]: each
    row's diagonal block (see the module doc)."""
    k, _, *window = shape_of(dw_wide)
    nd = len(window)
    rows, cond = _blocks(b, dw_wide, cg, pair=False)
    kept = b.select(cond, rows, 0.0, out=dtype)                   # exact: dw' is ``dtype``
    summed = b.sum(kept, [3 + nd], keepdims=False, out=dtype)     # [G', j, Kg, *win, Cg]
    return _permute(b, b.reshape(summed, [k, *window, cg]), _first(nd))


def rewrite(view, cg):
    """Replace the convolution ``view``, of ``cg`` channels a group, by its
    wide-group form."""
    b = Builder(view)
    attrs = dict(view.attrs)
    discardable = dict(view.discardable)
    if view.name in ("conv_fprop", "conv_dgrad"):
        w = wide_filter(b, view.operands["w"], cg)
        operands = dict(view.operands, w=w)
        result = next(iter(view.results))
        old = view.results[result]
        new = b.op(view.name, operands, attrs, types={result: old.type},
                   discardable=discardable).results[result]
    else:
        old = view.results["dw"]
        k, _, *window = shape_of(old)
        wide_type = builders.tensor_type([k, BLOCK, *window], dtype_of(old))
        dw_wide = b.op("conv_wgrad", dict(view.operands), attrs, types={"dw": wide_type},
                       discardable=discardable).results["dw"]
        new = diagonal_blocks(b, dw_wide, cg, dtype_of(old))
    old.replace_all_uses_with(new)
    view.operation.erase()


@register
@dataclass
class DnnWidenGroups(DnncPass):
    NAME = "dnn-widen-groups"

    def run(self, module):
        for op in list(dnn_ops(module)):
            view = builders.verify(op)
            cg = widened(view)
            if cg is not None:
                with op.context, op.location:
                    rewrite(view, cg)
