"""The simt-gemm strategy: a GEMM of f32 operands multiplied exactly in
f32, on the CUDA cores (FFMA): what runs an f32 matmul whose compute type
is f32 (dnnc/compute_types.py), which the tensor cores would round to tf32.

The classic register-blocked scheme: a block per ``BM x BN`` output tile,
each thread a ``TM x TN`` micro-tile of accumulators (8 x 8 for 128 x 128
over 256 threads), A and B staged through two shared-memory stages stored
K-outside, so the inner loop reads a float4 of 4 rows of A and of 4
columns of B per K element and issues TM x TN FFMAs for them. Operands in
either layout (K- or MN-major, any strides: a transpose folded into the
GEMM), any M, N, K, batched and broadcast operands; the pointwise epilogue
dnn-fuse puts into the kernel (bias, activation, residual, casts) runs on
the accumulators in registers; a K split over several blocks, for few
tiles, is summed by a second launch in a fixed order.

The parts, one file each:

* ``support``: ``Tile``, ``NotSupported`` and the shared constants;
* ``loader``: an operand's K step, global -> registers -> a shared stage;
* ``kernel``: ``check`` and the kernel (prologue, mainloop, epilogue);
* ``splitk``: the second launch that sums a split K's partials.

The lowering pass is dnn-map-simt-gemm (dnnc/passes/dnn_map_simt_gemm.py);
the heuristics dnnc/heuristics/simt_gemm.py.
"""

from dnnc.codegen.gpu.simt_gemm.kernel import Kernel, check, splits_of
from dnnc.codegen.gpu.simt_gemm.support import NotSupported, Tile

__all__ = ["NotSupported", "Tile", "build", "check", "splits_of"]


def build(fn, gemm, tile):
    """Replace kernel function ``fn``'s body by the simt-gemm kernel of
    ``gemm`` (gemm.Gemm) in ``tile``s; raises NotSupported, the IR
    unchanged."""
    check(gemm, tile)
    Kernel(fn, gemm, tile).build()
