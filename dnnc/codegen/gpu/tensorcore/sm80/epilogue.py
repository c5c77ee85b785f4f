"""tc-sm80's epilogue: the fused pointwise chain on each accumulator pair,
and its stores.

Thread (g, t) of warp (wm, wn) holds, for each mt < WM/16 and nt < WN/8, C
at rows ``BM*tile_m + WM*wm + 16 mt + g (+ 8)`` (``+ 2g (+ 1)`` where a
tf32 A's rows are paired: ``Kernel.row_of``) and columns
``BN*tile_n + WN*wn + 8 nt + 2t (+ 1)``: pairs of adjacent columns, which
``PairEpilogue`` (dnnc/codegen/gpu/tensorcore/pair_epilogue.py) evaluates.
Where every output has 2-byte elements, N is a multiple of 8 and a warp tile
has a multiple of 32 columns, the pairs of 4 adjacent n8 fragments are
exchanged within each quad and every thread stores 8 consecutive columns as
one 16-byte vector (``store_quad``): a warp instruction then writes whole
32-byte sectors, where a pair's 4-byte stores leave each sector half
written. Else each pair is stored as it lies.
"""

from mlir import ir
from mlir.dialects import arith, llvm

from dnnc.codegen.gpu.tensorcore.emit import add as _add, idx as _idx
from dnnc.codegen.gpu.tensorcore.pair_epilogue import PairEpilogue


class Epilogue:
    """The epilogue of ``kernel`` (kernel.Kernel)."""

    def __init__(self, kernel):
        self.k = kernel

    def apply(self, accs, lane, batch, row0, col0):
        """Evaluate and store this thread's accumulators ``accs`` (mt x nt
        structs of 4 f32) of the warp tile whose first row and column of C
        are ``row0`` and ``col0``."""
        k = self.k
        tile, gemm = k.tile, k.gemm
        g, t = arith.divui(lane, _idx(4)), arith.remui(lane, _idx(4))
        col_base = arith.addi(col0, arith.muli(t, _idx(2)))  # + 8 nt
        epilogue = PairEpilogue(gemm, k.arguments, full_m=gemm.m % tile.m == 0,
                                full_n=gemm.n % tile.n == 0)
        # Four n8 fragments side by side are a 32-column group whose pairs a
        # quad exchanges, each thread then storing 16 bytes (store_quad).
        wide = epilogue.quads() and k.nt % 4 == 0
        quad_col = arith.addi(col0, arith.muli(t, _idx(8)))  # + 8 (nt - 3)
        f32 = ir.F32Type.get()
        cache = {}
        for mt in range(k.mt):
            for h in range(2):
                row = arith.addi(row0, k.row_of(g, mt, h))
                row_ok, row_safe = epilogue.row_guard(row)
                group = []
                for nt in range(k.nt):
                    acc = accs[mt * k.nt + nt]
                    values = [llvm.extractvalue(f32, acc, ir.DenseI64ArrayAttr.get([2 * h + e]))
                              for e in range(2)]
                    col = _add(col_base, 8 * nt)
                    envs = epilogue.evaluate_pair(batch, row_safe, col, values, cache, nt)
                    if not wide:
                        epilogue.store(envs, batch, row, col, row_ok)
                        continue
                    group.append(envs)
                    if len(group) == 4:
                        epilogue.store_quad(group, batch, row, _add(quad_col, 8 * (nt - 3)),
                                            t, row_ok)
                        group = []