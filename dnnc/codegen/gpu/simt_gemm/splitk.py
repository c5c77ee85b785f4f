"""simt-gemm's split-K sum: a second launch that adds each output's
``splits`` f32 partials ([split, batch, M, N] in the workspace, written by
the GEMM's blocks) in split order, then runs the fused epilogue on the sum
and stores it. The order is fixed, so the result is the same on every run
(no atomics).

One thread per output element, 256 a block: consecutive threads read
consecutive columns of each partial (coalesced), and the sum is memory-bound
work of splits x M x N floats, small beside the GEMM it follows.
"""

from mlir.dialects import arith, gpu, memref

from dnnc.codegen.gpu.tensorcore.emit import idx as _idx, if_ as _if, launch
from dnnc.codegen.gpu.tensorcore.pair_epilogue import PairEpilogue

THREADS = 256


def reduce_splits(gemm, arguments, partials, splits):
    """Emit the launch that sums ``partials`` and stores ``gemm``'s
    epilogue (a kernel whose arguments are ``arguments``)."""
    total = gemm.batch * gemm.m * gemm.n
    blocks = -(-total // THREADS)
    epilogue = PairEpilogue(gemm, arguments)

    def body():
        tid = gpu.thread_id(gpu.Dimension.x)
        block = gpu.block_id(gpu.Dimension.x)
        e = arith.addi(arith.muli(block, _idx(THREADS)), tid)

        def inside():
            col = arith.remui(e, _idx(gemm.n))
            row = arith.remui(arith.divui(e, _idx(gemm.n)), _idx(gemm.m))
            batch = arith.divui(e, _idx(gemm.m * gemm.n))
            value = memref.load(partials, [_idx(0), batch, row, col])
            for s in range(1, splits):
                value = arith.addf(value, memref.load(partials, [_idx(s), batch, row, col]))
            env = epilogue.evaluate(value, epilogue.point(batch, row, col))
            lead = [batch] if epilogue.rank == 3 else []
            for buffer in epilogue.stored:
                memref.store(env[buffer], buffer, lead + [row, col])
        if total % THREADS:
            _if(arith.cmpi(arith.CmpIPredicate.ult, e, _idx(total)), inside)
        else:
            inside()
    launch((blocks, 1), THREADS, 0, body)
