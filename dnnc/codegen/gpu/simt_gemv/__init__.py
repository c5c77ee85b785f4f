"""The simt-gemv strategy: a matmul with one side of at most MAX_ROWS
(M or N: a GEMV, or a batch of them), on the CUDA cores, in one launch.

Such a GEMM is a stream of the long operand W (the side of L = N or M
elements) against a few rows of the small one X (R = M or N rows): no
tile of a blocked GEMM is full (a 32-row simt-gemm tile of an M = 1
product is 1/32 used), and what bounds it is the latency of W's loads,
not arithmetic. Each output column l (of L) is computed by ``split``
threads of one block that share its K; every thread holds R partial sums
(R x ``vector`` where its loads run along L), its loads ``unroll`` K
iterations at once, and the partials are added in a fixed order. Where
W is K-major (K contiguous: B stored N x K, or A of an N-small product)
the ``split`` threads of a column are neighbouring lanes, each reading
``vector`` consecutive elements of K (16 bytes where K allows), summed by
XOR shuffles; where W is MN-major (L contiguous) neighbouring lanes read
neighbouring columns (``vector`` of them each) and the ``split`` groups
walk K interleaved, their partials summed through shared memory.

Operands f32 (multiplied exactly, FFMA; or as tf32, rounded to tf32 as
the tensor cores' contraction is), f16 or bf16 (converted to f32 and
multiplied exactly; f32 sums), in any strides; batches (one batch dim, an
operand broadcast along it); the fused pointwise epilogue on each output.

The parts: ``support`` (``Skinny``, ``Sides``, ``check``, the limits),
``kernel`` (the kernel). The lowering pass is dnn-map-simt-gemv
(dnnc/passes/dnn_map_simt_gemv.py); the heuristics
dnnc/heuristics/simt_gemv.py.
"""

from dnnc.codegen.gpu.simt_gemv.kernel import Kernel
from dnnc.codegen.gpu.simt_gemv.support import (
    MAX_ROWS, NotSupported, Sides, Skinny, check, columns_of, shared_bytes, sides_of,
    widest_vector,
)

__all__ = ["MAX_ROWS", "NotSupported", "Sides", "Skinny", "build", "check", "columns_of",
           "shared_bytes", "sides_of", "widest_vector"]


def build(fn, gemm, skinny):
    """Replace kernel function ``fn``'s body by the simt-gemv kernel of
    ``gemm`` (gemm.Gemm); raises NotSupported, the IR unchanged."""
    check(gemm, skinny)
    Kernel(fn, gemm, skinny).build()
