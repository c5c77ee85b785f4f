"""TMA loads and stores of the attention kernels' tiles (sm90/flash.py,
flash_backward.py; paged.py's pages): rows of a ``[B, H, S, D]`` operand
with D contiguous, in whatever order the other dims lie, a box per 64
columns of the head dim, in TMA's 128-byte swizzle. A ragged (packed)
operand's rows are addressed through its offsets (``Packed``,
``RaggedRows``), for any kernel that reads or writes them."""

from mlir import ir
from mlir.dialects import arith, llvm, memref, nvvm

from dnnc.codegen.gpu import irutil

from dnnc.codegen.gpu.tensorcore.emit import (
    add as _add, i as _i, idx as _idx, ptr as _ptr, shared_ptr as _shared_ptr,
)
from dnnc.codegen.gpu.tensorcore.sm90.fragments import BOX
from dnnc.codegen.gpu.tensorcore.sm90.tma import SWIZZLE, physical_order, tma_descriptor


def padded(d):
    """The head dim as a whole number of 64-element boxes."""
    return -(-d // BOX) * BOX



class Rows:
    """The TMA loads of one operand's tiles: ``rows`` rows of S (a box per
    64 columns of the head dim ``width``) of a ``[B, H, S, D]`` buffer with D
    contiguous, in whatever order the other dims lie."""

    def __init__(self, value, rows, width):
        self.value = value
        self.rows = rows
        self.boxes = padded(width) // BOX
        self.order = physical_order(ir.MemRefType(value.type))
        self.descriptor = None

    @property
    def box_bytes(self):
        return self.rows * SWIZZLE

    @property
    def bytes(self):
        return self.box_bytes * self.boxes

    @property
    def arrival_bytes(self):
        """Bytes a load of a tile brings (its barrier's transaction count)."""
        return self.bytes

    def make_descriptor(self):
        """Host side: the descriptor, boxes of rows x 64, 128-byte swizzle."""
        logical = [1, 1, self.rows, BOX]
        self.descriptor = tma_descriptor(self.value, [logical[d] for d in self.order])

    def load(self, dest_i64, barrier, b, h, s0):
        """The tile at batch ``b``, head ``h``, first row ``s0`` (i32 values)
        into shared memory at ``dest_i64``, completing on ``barrier``."""
        for box in range(self.boxes):
            logical = [b, h, s0, _i(box * BOX)]
            coords = [logical[d] for d in self.order]
            dst = llvm.addrspacecast(_ptr(7), _shared_ptr(_add(dest_i64, box * self.box_bytes)))
            nvvm.CpAsyncBulkTensorGlobalToSharedClusterOp(
                dst, self.descriptor, list(reversed(coords)), barrier, [])


class GroupRows(Rows):
    """The TMA load of a GQA group's query rows into a tile of ``rows``
    rows: per 64 columns of the head dim, one box of logical shape [1,
    ``heads``, ``sq``, 64] (in the buffer's physical order, as every box
    here), which fills the tile's first heads x sq rows; the rows past them
    are not loaded (the block's results there are dropped: rows are
    independent in both products and in the softmax). The box lays its
    rows out in memory order: tile row r is query s of the group's head g
    with r = g sq + s where the heads lie outside the rows ([B, H, S, D]),
    r = s heads + g where inside ([B, S, H, D])."""

    def __init__(self, value, rows, width, heads, sq):
        super().__init__(value, rows, width)
        self.heads, self.sq = heads, sq
        self.heads_outer = self.order.index(1) < self.order.index(2)

    @property
    def arrival_bytes(self):
        return self.heads * self.sq * SWIZZLE * self.boxes

    def make_descriptor(self):
        """Host side: boxes of the group's heads x sq rows by 64 columns."""
        logical = [1, self.heads, self.sq, BOX]
        self.descriptor = tma_descriptor(self.value, [logical[d] for d in self.order])

    def head_and_query(self, row):
        """(head of the group, query row) of tile row ``row`` (index values)."""
        if self.heads_outer:
            return arith.divui(row, _idx(self.sq)), arith.remui(row, _idx(self.sq))
        return arith.remui(row, _idx(self.heads)), arith.divui(row, _idx(self.heads))


class StoredRows(Rows):
    """The TMA stores of an output's rows: boxes of ``rows`` rows by 64
    columns, from the swizzled boxes of a tile of ``tile_rows`` rows."""

    def __init__(self, value, rows, width, tile_rows):
        super().__init__(value, rows, width)
        self.tile_box_bytes = tile_rows * SWIZZLE

    def store(self, src_i64, b, h, s0):
        for box in range(self.boxes):
            logical = [b, h, s0, _i(box * BOX)]
            coords = [logical[d] for d in self.order]
            nvvm.CpAsyncBulkTensorSharedCTAToGlobalOp(
                self.descriptor, _shared_ptr(_add(src_i64, box * self.tile_box_bytes)),
                list(reversed(coords)))


class Packed:
    """Where a ragged tensor's rows lie (cuDNN's packed layout; semantics:
    dnnc/dialect/ops_attention.py): entry b's row s is packed row t =
    offsets[b] / ``stride`` + s of the buffer's B x S rows, element (t // S,
    h, t % S, d) of the ``[B, H, S, D]`` memref ``value`` (whose batch
    stride is S times its sequence stride). Device side only."""

    def __init__(self, value, offsets, stride):
        self.offsets, self.stride = offsets, stride
        shape = list(ir.MemRefType(value.type).shape)
        self.seq, self.total = shape[2], shape[0] * shape[2]

    def first(self, b):
        """The packed row where entry ``b`` (an index value) starts, as an
        index value."""
        zero = _idx(0)
        x = memref.load(self.offsets, [b, zero, zero, zero])
        row = arith.divsi(x, _i(self.stride))
        return arith.index_cast(ir.IndexType.get(), row)

    def at(self, first, row):
        """(batch, row) indices of the memref where row ``row`` of the entry
        starting at packed row ``first`` lies (index values), clamped into
        the buffer so that a thread may read it (rows past the entry's
        length are the next entry's, or the buffer's last)."""
        t = arith.minui(arith.addi(first, row), _idx(self.total - 1))
        return arith.divui(t, _idx(self.seq)), arith.remui(t, _idx(self.seq))


def _row_stride(shape, strides):
    """The stride between packed rows: the sequence dim's, or with S = 1
    (whose stride a memref need not keep) the batch dim's."""
    return strides[0] if shape[2] == 1 else strides[2]


def merged_type(value):
    """The ``[1, H, B x S, D]`` memref type of a ragged ``[B, H, S, D]``
    buffer whose batch stride is S times its sequence stride: one run of
    packed rows, which a TMA box crosses from entry to entry."""
    t = ir.MemRefType(value.type)
    shape, strides, offset = irutil.memref_geometry(value.type)
    b, h, s, d = shape
    ss = _row_stride(shape, strides)
    return ir.MemRefType.get([1, h, b * s, d], t.element_type, layout=ir.StridedLayoutAttr.get(
        offset, [b * s * ss, strides[1], ss, strides[3]]))


def merge_problem(name, value):
    """Why ragged ``value`` cannot be read as packed rows, or None."""
    shape, strides, _ = irutil.memref_geometry(value.type)
    (b, _, s, _), sb, ss = shape, strides[0], _row_stride(shape, strides)
    if b > 1 and sb != s * ss:
        return (f"ragged {name} has batch stride {sb}: expected S x its sequence stride = "
                f"{s * ss} (a buffer of packed rows, not copied to another layout)")
    return None


class RaggedRows(Rows):
    """The TMA loads of a ragged operand's tiles (``Packed``): tiles of
    ``rows`` packed rows of the ``merged_type`` view, from the block's entry's
    first row on; the rows past the entry's length in a tile are the next
    entry's (or past the buffer, zero), which the masks give no weight."""

    def __init__(self, value, offsets, stride, rows, width):
        super().__init__(value, rows, width)
        self.merged = merged_type(value)
        self.order = physical_order(self.merged)
        self.packed = Packed(value, offsets, stride)

    def make_descriptor(self):
        shape, strides, offset = irutil.memref_geometry(self.merged)
        view = memref.reinterpret_cast(self.merged, self.value, [], [], [], [offset], shape,
                                       strides)
        logical = [1, 1, self.rows, BOX]
        self.descriptor = tma_descriptor(view, [logical[d] for d in self.order])

    def load(self, dest_i64, barrier, b, h, s0):
        """Rows ``s0`` .. of entry ``b``, head ``h`` (i32 values)."""
        first = self.packed.first(arith.index_cast(ir.IndexType.get(), b))
        row = arith.addi(arith.index_cast(ir.IntegerType.get_signless(32), first), s0)
        super().load(dest_i64, barrier, _i(0), h, row)


def tile_rows(att, name, rows, width):
    """The loads of operand ``name`` of ``att`` (tensorcore/attention.py):
    RaggedRows where it is ragged, else Rows."""
    value = getattr(att, name)
    if name in att.ragged:
        return RaggedRows(value, *att.ragged[name], rows, width)
    return Rows(value, rows, width)
