"""simt-gemm's operand loader: one K step of an operand tile, read from
global memory into registers, then written into a shared-memory stage laid
out K-outside ([BK][rows + PAD] floats), the layout the mainloop reads a
float4 of 4 rows (or columns) at a time from.

The loads of step kt + 1 are issued before the mainloop's FFMAs of step
kt and stored after them (``load`` returns the values, ``store`` writes
them), so their latency hides under the arithmetic without a second
register copy of the tile.

An operand whose contiguous dim (K for a K-major one, M or N for an
MN-major one) is a multiple of 4 elements, its other strides and its offset
too, is read 16 bytes at a time (the runtime aligns every buffer to 16
bytes: a float4 never straddles a row); any other, element by element.
Vector v (or element e) = tid + threads * j of the tile is chosen so that a
warp's loads are coalesced in either layout:

* K-major (K contiguous: A as M x K, B as N x K): the vectors (elements)
  of a row of the step are consecutive lanes, so 2 lanes (8 lanes) read a
  row's 32 bytes. Their shared stores go to rows k, column ``row``: banks
  4 k + row (PAD), one lane a bank;
* MN-major (A as K x M, B as K x N): consecutive lanes read consecutive
  vectors (elements) of a row of K and store them alike, one float4 (one
  float) a lane, into one shared row.

Each load is at an index clamped into the buffer, its value selected to 0
outside M (N) or K: guards that are left out where the tile divides the dim.
"""

from mlir import ir
from mlir.dialects import arith, llvm, memref, vector

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.tensorcore.emit import (
    i as _i, idx as _idx, ptr as _ptr, to_i64 as _i64,
)

VECTOR = 4       # floats of a 16-byte load


class OperandLoader:
    """The loader of ``operand`` (gemm.Operand) for tiles of ``rows`` (BM or
    BN) of a dim of size ``size`` (M or N), K of ``k`` elements, in
    ``tile``; its stage starts ``offset`` floats into a stage."""

    def __init__(self, operand, rows, size, k, tile, offset):
        self.operand, self.rows, self.size, self.k_size = operand, rows, size, k
        self.tile, self.offset = tile, offset
        self.pitch = tile.pitch(rows)
        self.rank = ir.MemRefType(operand.value.type).rank
        self.width = VECTOR if self._vectors() else 1
        self.per_thread = rows * tile.k // self.width // tile.threads
        self.full_rows = size % rows == 0
        self.full_k = k % tile.k == 0
        f32 = ir.F32Type.get()
        self.zero = arith.constant(f32, 0.0)
        if self.width > 1:
            self.vec = ir.VectorType.get([self.width], f32)
            self.zero_vec = arith.constant(self.vec, ir.DenseElementsAttr.get_splat(
                self.vec, ir.FloatAttr.get(f32, 0.0)))

    def _vectors(self):
        """Whether the operand is read in 16-byte vectors: its contiguous
        dim a multiple of 4 with stride 1, every other stride and the
        offset multiples of 4, and the tile's vectors shared evenly by the
        threads."""
        shape, strides, offset = irutil.memref_geometry(self.operand.value.type)
        inner = self.operand.dims["k" if self.operand.k_major else "mn"]
        return strides[inner] == 1 and shape[inner] % VECTOR == 0 and offset % VECTOR == 0 \
            and all(s % VECTOR == 0 for d, s in enumerate(strides) if d != inner) \
            and self.rows * self.tile.k % (VECTOR * self.tile.threads) == 0

    @property
    def vectorized(self):
        return self.width > 1

    def prepare(self, tid, batch, first):
        """Per-thread (row within the tile, k within the step) of each of
        its vectors (elements), and the clamped batch index; ``first``: the
        tile's first row (or column) of M (N)."""
        tile, w = self.tile, self.width
        self.batch = batch
        if self.vectorized:
            self.base = _i64(memref.extract_aligned_pointer_as_index(self.operand.value))
        self.coords = []
        for j in range(self.per_thread):
            e = arith.addi(tid, _idx(tile.threads * j)) if j else tid
            if self.operand.k_major:
                per_row = tile.k // w
                k = arith.muli(arith.remui(e, _idx(per_row)), _idx(w)) if w > 1 else \
                    arith.remui(e, _idx(per_row))
                row = arith.divui(e, _idx(per_row))
            else:
                per_row = self.rows // w
                row = arith.muli(arith.remui(e, _idx(per_row)), _idx(w)) if w > 1 else \
                    arith.remui(e, _idx(per_row))
                k = arith.divui(e, _idx(per_row))
            grow = arith.addi(first, row)
            # The last row a load may start at: a vector along M (N) starts
            # at most 4 before its end.
            last = self.size - (w if not self.operand.k_major else 1)
            if self.full_rows:
                row_ok, row_safe = None, grow
            else:
                row_ok = arith.cmpi(arith.CmpIPredicate.ult, grow, _idx(self.size))
                row_safe = arith.minui(grow, _idx(last))
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
        """The thread's vectors (elements) of the K step starting at ``k0``
        (an index), 0 outside the operand."""
        values = []
        # The last k a load may start at: a vector along K starts at most 4
        # before its end.
        last = self.k_size - (self.width if self.operand.k_major else 1)
        for k, row_safe, row_ok, _ in self.coords:
            gk = arith.addi(k0, k)
            ok = row_ok
            if self.full_k:
                k_safe = gk
            else:
                k_ok = arith.cmpi(arith.CmpIPredicate.ult, gk, _idx(self.k_size))
                k_safe = arith.minui(gk, _idx(last))
                ok = k_ok if ok is None else arith.andi(ok, k_ok)
            indices = self._indices(row_safe, k_safe)
            if self.vectorized:
                # Through the buffer's address (vector.load takes only a
                # vector along the memref's last dim; this one may run
                # along any).
                value = llvm.load(self.vec, llvm.inttoptr(_ptr(1), self._address(indices)),
                                  alignment=16)
                zero = self.zero_vec
            else:
                value = memref.load(self.operand.value, indices)
                zero = self.zero
            values.append(value if ok is None else arith.select(ok, value, zero))
        return values

    def _address(self, indices):
        """The i64 byte address of the element at ``indices``."""
        _, strides, offset = irutil.memref_geometry(self.operand.value.type)
        element = _idx(offset)
        for index, stride in zip(indices, strides):
            element = arith.addi(element, arith.muli(index, _idx(stride)))
        return arith.addi(self.base, arith.muli(_i64(element), _i(4, 64)))

    def _store(self, value, stage, floats, alignment=4):
        address = arith.addi(stage, arith.muli(floats, _i(4, 64)))
        llvm.store(value, llvm.inttoptr(_ptr(3), address), alignment=alignment)

    def store(self, values, stage):
        """Write ``values`` (load's) into the stage at byte address ``stage``
        (i64): an MN-major vector as one 16-byte store into its row of K, a
        K-major one as 4 floats down its column."""
        for value, (_, _, _, at) in zip(values, self.coords):
            at = arith.addi(at, _i(self.offset, 64))
            if not self.vectorized:
                self._store(value, stage, at)
            elif not self.operand.k_major:
                self._store(value, stage, at, 16)
            else:
                for e in range(self.width):
                    self._store(vector.extract(value, [], [e]), stage,
                                arith.addi(at, _i(e * self.pitch, 64)))
