"""dnn-decompose: expand composite dnn ops into primitive dnn ops.

The rules live in dnnc/decompose/ (one file per family). Options:

* ``all=true`` expands every composite op (sdpa, the norms, softmax...), down
  to pointwise ops, reductions, matmuls and tensor ops, e.g. for a target with
  only simple kernels or to check a lowering against the reference.
* ``ops=softmax,layernorm`` expands exactly the named ops.
* Neither (the default, as the ``front`` pipeline runs it first) expands the
  ops that no single fast kernel implements, and keeps the ones that have one
  (sdpa and its backward, layernorm, rmsnorm, batchnorm, groupnorm, softmax...):

  - ``batchnorm_inference`` becomes a per-channel multiply-add, a pointwise
    chain that dnn-fuse then folds into the epilogue of the producing conv;
  - ``instancenorm`` and ``instancenorm_backward`` become ``groupnorm`` and
    ``groupnorm_backward`` with groups = C (the groupnorm kernels serve both);
  - ``softmax_backward`` and ``log_softmax_backward`` become one reduction and
    pointwise ops, which fuse into the neighbouring kernels.

  The ``front`` pipeline then runs it with ``ops=`` naming the norm backwards
  and groupnorm (and its backward): their expansions are reductions along
  rows or columns with pointwise ops around them, which dnn-fuse makes into
  row programs, column programs and pointwise kernels (dnnc/decompose/norm.py).

Before (default options)::

    %0 = "dnn.log_softmax_backward"(%arg0, %arg1) {axis = 1 : i64}
        : (tensor<4x7xf32>, tensor<4x7xf32>) -> tensor<4x7xf32>

After::

    %0 = "dnn.exp"(%arg1) : (tensor<4x7xf32>) -> tensor<4x7xf32>
    %1 = "dnn.reduction"(%arg0) {axes = array<i64: 1>, keepdims = true, mode = "sum"}
        : (tensor<4x7xf32>) -> tensor<4x1xf32>
    %2 = "dnn.mul"(%0, %1) : (tensor<4x7xf32>, tensor<4x1xf32>) -> tensor<4x7xf32>
    %3 = "dnn.sub"(%arg0, %2) : (tensor<4x7xf32>, tensor<4x7xf32>) -> tensor<4x7xf32>

and ``dnn.instancenorm`` on tensor<2x6x5x5xf32> becomes
``"dnn.groupnorm"(...) {epsilon = ..., groups = 6 : i64, training = ...}``.

Intermediates are f32; every result keeps the element type it had.

Lit test: test/lit/passes/dnn_decompose.mlir.
"""

from dataclasses import dataclass

from dnnc import decompose
from dnnc.errors import PipelineError
from dnnc.passes import DnncPass, register

# The ops the pass expands when given no option; see the module docstring.
DEFAULT_OPS = frozenset({
    "batchnorm_inference",
    "instancenorm",
    "instancenorm_backward",
    "softmax_backward",
    "log_softmax_backward",
})


@register
@dataclass
class DnnDecompose(DnncPass):
    NAME = "dnn-decompose"
    all: bool = False
    ops: str = ""

    def __post_init__(self):
        names = self.op_names()
        unknown = sorted(set(names) - set(decompose.COMPOSITE_OPS))
        if unknown:
            raise PipelineError(f"pass '{self.NAME}' option 'ops': expected composite ops "
                                f"({', '.join(sorted(decompose.COMPOSITE_OPS))}), "
                                f"got '{unknown[0]}'")
        if self.all and names:
            raise PipelineError(f"pass '{self.NAME}': expected option 'all' or 'ops', got both")

    def op_names(self):
        """The names of the ``ops`` option, without a ``dnn.`` prefix."""
        return [n.strip().removeprefix("dnn.") for n in self.ops.split(",") if n.strip()]

    def selected(self):
        """The op names this instance expands."""
        if self.all:
            return frozenset(decompose.COMPOSITE_OPS)
        return frozenset(self.op_names()) or DEFAULT_OPS

    def run(self, module):
        decompose.expand(module, self.selected())
