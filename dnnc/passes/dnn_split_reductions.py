"""dnn-split-reductions: a reduction over separated runs of axes, the last
run ending at the innermost axis (a channels-first batchnorm's statistics:
NCHW's axes [0, 2, 3], keeping C), becomes two reductions: one over that
last run, a row reduction (the row program reads each (n, c) plane of H x W
once, in 16-byte vectors), then one over the axes left, on the f32 partial
results viewed without the reduced run ([N, C]: a column program, or one
over middle axes, which reads them once, coalesced). No transposing copy,
and both launches fold in a fixed order: deterministic. (As batchnorm's
own decomposition does for its "planes", dnnc/decompose/batchnorm.py.)

Every mode is its own second half: sum, max, min, prod and amax (of
non-negative partials: their max) fold the partials as they fold elements;
mean is the mean of the means (the planes are all the same size); norm1 is
a sum of the partial norms (non-negative); norm2 is the norm of the partial
norms (sqrt of a sum of their squares). The partials are f32; the second
reduction gives the original result's type and keepdims, so the ops that
read it see the same tensor, and dnn-fuse joins a pointwise prologue to the
first (the row program) and an epilogue to the second.

Left as they are: a convolution's bias gradient (a sum of dy over every
dim but the channels) that dnn-fuse joins to the filter gradient reading
the same dy (option ``conv_bias_grad``; tensorcore/conv_bias_grad.py:
tc-sm90 sums dy's tiles as its GEMM reads them), one run of axes (a row, column or middle reduction
already), separated axes that keep the innermost axis (not split yet: they
stay on simt-generic), and reductions over an axis of size 0 (the modes
without an identity are refused there; the others keep their one op).

Before::

    %0 = "dnn.reduction"(%x) {axes = array<i64: 0, 2, 3>, keepdims = true, mode = "sum"}
        : (tensor<32x64x56x56xbf16>) -> tensor<1x64x1x1xbf16>

After::

    %0 = "dnn.reduction"(%x) {axes = array<i64: 2, 3>, keepdims = true, mode = "sum"}
        : (tensor<32x64x56x56xbf16>) -> tensor<32x64x1x1xf32>
    %1 = "dnn.reshape"(%0) : (tensor<32x64x1x1xf32>) -> tensor<32x64xf32>
    %2 = "dnn.reduction"(%1) {axes = array<i64: 0>, keepdims = true, mode = "sum"}
        : (tensor<32x64xf32>) -> tensor<1x64xbf16>
    %3 = "dnn.reshape"(%2) : (tensor<1x64xbf16>) -> tensor<1x64x1x1xbf16>

(the reshapes are views of the kernels' buffers on the GPU, dnn-layout-views).

Lit test: test/lit/passes/dnn_split_reductions.mlir.
"""

from dataclasses import dataclass

from dnnc.codegen.gpu.tensorcore.conv_bias_grad import joins
from dnnc.decompose.common import Builder, dtype_of, shape_of
from dnnc.dialect import builders
from dnnc.passes import DnncPass, dnn_ops, register


def split_axes(shape, axes):
    """(the last run of ``axes``, the axes before it) when a reduction of a
    ``shape`` operand over ``axes`` is split, else None. Dims of extent 1
    hold one element: they neither separate runs nor make one."""
    axes = sorted(axes)
    rank = len(shape)
    if not axes or any(shape[a] == 0 for a in axes):
        return None
    real = [d for d in range(rank) if shape[d] != 1]
    reduced = [d for d in real if d in axes]
    if not reduced or reduced[-1] != real[-1]:
        return None
    kept = [d for d in real if d not in axes]
    if not kept or reduced[0] > kept[-1]:
        return None  # one run (the reduced dims all after the kept ones): a row reduction
    start = kept[-1] + 1
    return [a for a in axes if a >= start], [a for a in axes if a < start]


def split(op):
    """Replace reduction ``op`` by its two halves (module docstring); True
    when it did."""
    view = builders.verify(op)
    x, y = view.operands["x"], view.results["y"]
    shape, axes = shape_of(x), list(view.attrs["axes"])
    parts = split_axes(shape, axes)
    if parts is None:
        return False
    last, rest = parts
    mode, keepdims = view.attrs["mode"], view.attrs["keepdims"]
    with op.context, op.location:
        b = Builder(view)
        # The row reduction keeps its dims (a row program's buffers have the
        # loops' rank); its f32 partials are then viewed without the last run.
        partial = b.reduce(mode, x, last, keepdims=True)
        partial = b.reshape(partial, shape[:last[0]])
        # The axes left keep their numbers: every one lies before the last run.
        result = b.reduce(mode, partial, rest, keepdims=keepdims, out=dtype_of(y))
        result = b.reshape(result, shape_of(y))
        y.replace_all_uses_with(result)
    op.erase()
    return True


@register
@dataclass
class DnnSplitReductions(DnncPass):
    NAME = "dnn-split-reductions"
    # Leave whole a bias gradient that dnn-fuse{conv_bias_grad} joins to its
    # filter gradient (off where dnn-fuse's option is: sm_80).
    conv_bias_grad: bool = True

    def run(self, module):
        for op in dnn_ops(module):
            if op.name == "dnn.reduction":
                if self.conv_bias_grad and joins(op)[0] is not None:
                    continue
                split(op)
