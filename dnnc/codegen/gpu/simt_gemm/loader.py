"""simt-gemm's operand loader: one K step of an operand tile, read from
global memory into registers, then written into a shared-memory stage laid
out K-major-outside ([BK][rows + PAD] floats), the layout the mainloop
reads a float4 of 4 rows (or columns) at a time from.

The loads of step kt + 1 are issued before the mainloop's FFMAs of step
kt and stored after them (``load`` returns the values, ``store`` writes
them), so their latency hides under the arithmetic without a second
register copy of the tile.

Element e = tid + threads * j (j < rows * BK / threads) of the tile is
chosen so that a warp's loads are coalesced in either layout:

* K-major operand (K contiguous: A as M x K, B as N x K): k = e % BK,
  row = e / BK, so 8 lanes read 32 consecutive bytes of a row. Their
  shared stores go to row k, column ``row``: banks 4 k + row (PAD), one
  lane a bank;
* MN-major operand (A as K x M, B as K x N): row = e % rows, k = e / rows,
  a warp reading 128 consecutive bytes and storing them to one shared row.

Any stride, any alignment: each element is one scalar load at an index
clamped into the buffer and selected to 0 outside M (N) or K, guards that
are left out where the tile divides the dim.
"""

from mlir import ir
from mlir.dialects import arith, llvm, memref

from dnnc.codegen.gpu.tensorcore.emit import (
    idx as _idx, ptr as _ptr, to_i64 as _i64,
)


class OperandLoader:
    """The loader of ``operand`` (gemm.Operand) for tiles of ``rows`` (BM or
    BN) of a dim of size ``size`` (M or N), K of ``k`` elements, in
    ``tile``; its stage starts ``offset`` floats into a stage."""

    def __init__(self, operand, rows, size, k, tile, offset):
        self.operand, self.rows, self.size, self.k_size = operand, rows, size, k
        self.tile, self.offset = tile, offset
        self.pitch = tile.pitch(rows)
        self.rank = ir.MemRefType(operand.value.type).rank
        self.per_thread = rows * tile.k // tile.threads
        self.full_rows = size % rows == 0
        self.full_k = k % tile.k == 0
        f32 = ir.F32Type.get()
        self.zero = arith.constant(f32, 0.0)

    def prepare(self, tid, batch, first):
        """Per-thread (row within the tile, k within the step) of each of
        its elements, and the clamped batch index; ``first``: the tile's
        first row (or column) of M (N)."""
        tile = self.tile
        self.batch = batch
        self.first = first
        self.coords = []
        for j in range(self.per_thread):
            e = arith.addi(tid, _idx(tile.threads * j)) if j else tid
            if self.operand.k_major:
                k, row = arith.remui(e, _idx(tile.k)), arith.divui(e, _idx(tile.k))
            else:
                row, k = arith.remui(e, _idx(self.rows)), arith.divui(e, _idx(self.rows))
            grow = arith.addi(first, row)
            if self.full_rows:
                row_ok, row_safe = None, grow
            else:
                row_ok = arith.cmpi(arith.CmpIPredicate.ult, grow, _idx(self.size))
                row_safe = arith.minui(grow, _idx(self.size - 1))
            # The shared float offset in a stage: row k, column ``row``.
            at = arith.addi(arith.muli(k, _idx(self.pitch)), row)
            self.coords.append((k, row_safe, row_ok, _i64(at)))

    def _indices(self, row, k):
        dims = self.operand.dims
        out = [_idx(0)] * self.rank
        out[dims["mn"]] = row
        out[dims["k"]] = k
        if dims["batch"] is not None:
            out[dims["batch"]] = self.batch
        return out

    def load(self, k0):
        """The thread's elements of the K step starting at ``k0`` (an index),
        0 outside the operand."""
        values = []
        for k, row_safe, row_ok, _ in self.coords:
            gk = arith.addi(k0, k)
            ok = row_ok
            if self.full_k:
                k_safe = gk
            else:
                k_ok = arith.cmpi(arith.CmpIPredicate.ult, gk, _idx(self.k_size))
                k_safe = arith.minui(gk, _idx(self.k_size - 1))
                ok = k_ok if ok is None else arith.andi(ok, k_ok)
            value = memref.load(self.operand.value, self._indices(row_safe, k_safe))
            values.append(value if ok is None else arith.select(ok, value, self.zero))
        return values

    def store(self, values, stage):
        """Write ``values`` (load's) into the stage at byte address ``stage``
        (i64)."""
        for value, (_, _, _, at) in zip(values, self.coords):
            address = arith.addi(stage, arith.muli(
                arith.addi(at, arith.constant(ir.IntegerType.get_signless(64),
                                              self.offset)),
                arith.constant(ir.IntegerType.get_signless(64), 4)))
            llvm.store(value, llvm.inttoptr(_ptr(3), address))
