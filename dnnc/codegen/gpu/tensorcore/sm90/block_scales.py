"""Block scales in tc-sm90's mainloop (dnn.matmul_block_scaled, gemm.BlockScales):
DeepSeek-V3's fp8 GEMM, A scaled per row and 128-wide K block ("1 x 128"),
B per 128 x 128 block.

The K step of an fp8 tile is 128 (wgmma's k = 32, four instructions), the
scales' block, so each step is one block. A consumer (mainloop.Consumer):

1. reads its two rows' scales of A for the next step (rows r and r + 8 of
   the thread's accumulator fragment, fragments.row_of) and the one of B
   for the tile's columns, before it waits for the stage: the global loads'
   latency hides behind a whole step (the first step's are read before the
   loop);
2. runs the step's wgmmas into a temporary accumulator from zero, and waits
   for them (wgmma.wait_group 0: the temporary is read next);
3. promotes: acc += temporary * (a_scale[row, kb] * b_scale[kb, n / 128]),
   one FMA per accumulator value.

The consumers' two warpgroups (and the producer's TMA) overlap one's
promotion with the other's wgmmas, as DeepGEMM's and CUTLASS's blockwise
scaled sm90 GEMMs rely on. A tile's columns lie in one 128-column block of
B's scales (BN of 64 or 128: support.check); its rows past M read the last
row's scales (those rows are never stored), and a partial last K block (TMA
zero-fills past K) takes its scales as the others do.
"""

from mlir import ir
from mlir.dialects import arith, llvm, memref

from dnnc.codegen.gpu.tensorcore.emit import idx as _idx
from dnnc.codegen.gpu.tensorcore.sm90.fragments import row_of


class BlockScaling:
    """The scale reads and the promotion of ``kernel``'s (kernel.Kernel) block-scaled GEMM."""

    def __init__(self, kernel):
        self.k = kernel
        self.scales = kernel.gemm.scales

    def tile_origin(self, consumer, local, tile_m, tile_n, end):
        """(row of A's scales of each of the thread's two fragment rows, the
        column of B's scales, the last K block of the unit's steps, which
        end at ``end``) of a tile: computed once a tile."""
        k = self.k
        gemm, tile = k.gemm, k.tile
        warp = arith.divui(local, _idx(32))
        lane = arith.remui(local, _idx(32))
        row0 = arith.addi(arith.muli(tile_m, _idx(tile.m)),
                          arith.addi(arith.muli(consumer, _idx(64)),
                                     arith.addi(arith.muli(warp, _idx(16)),
                                                arith.divui(lane, _idx(4)))))
        rows = []
        for h in range(2):
            row = arith.addi(row0, _idx(8 * h)) if h else row0
            # Rows past M (a ragged last tile): their products are zero (TMA
            # fills A's rows past M with zeros) and never stored; the last
            # row's scale keeps the read in bounds.
            rows.append(row if gemm.m % tile.m == 0 else arith.minui(row, _idx(gemm.m - 1)))
        column = arith.divui(arith.muli(tile_n, _idx(tile.n)), _idx(self.scales.block))
        return rows, column, arith.subi(end, _idx(1))

    def first_block(self, start):
        """The K block of a unit's first step ``start``, kept in bounds for a
        unit of no steps (an empty K split)."""
        return arith.minui(start, _idx(-(-self.k.gemm.k // self.scales.block) - 1))

    @staticmethod
    def next_block(kt, origin):
        """The K block after ``kt``, or ``kt`` at the unit's last (its read
        is then unused, and stays in bounds)."""
        return arith.minui(arith.addi(kt, _idx(1)), origin[2])

    def factors(self, origin, kt):
        """The f32 factor a_scale[row, kt] * b_scale[kt, column] of each of
        the thread's two fragment rows at K block ``kt``."""
        rows, column, _ = origin
        b_scale = memref.load(self.scales.b, [kt, column])
        return [arith.mulf(memref.load(self.scales.a, [row, kt]), b_scale) for row in rows]

    def promote(self, acc, partial, factors):
        """acc + partial * factor of each value's row, value by value."""
        f32 = ir.F32Type.get()
        for e in range(self.k.tile.n // 2):
            at = ir.DenseI64ArrayAttr.get([e])
            total = llvm.extractvalue(f32, acc, at)
            block = llvm.extractvalue(f32, partial, at)
            acc = llvm.insertvalue(acc, llvm.intr_fma(block, factors[row_of(e)], total), at)
        return acc
