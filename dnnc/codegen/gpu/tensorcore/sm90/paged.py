"""tc-sm90's attention forward reading K and V from a paged cache (cuDNN's
paged attention; semantics: dnnc/dialect/ops_attention.py).

A paged cache is ``[P, Hk, page, D]`` and a table ``[B, 1, T, 1]`` of int32
page numbers: kv row j of batch entry b is row j % page of page
table[b, j // page]. The producer thread reads the table entry of each kv
tile it loads and points the TMA load at that page; the consumers see the
same K and V tiles as from a contiguous cache. Two relations of the kv tile
(``n`` rows) and the page work:

    page >= n, page % n == 0   one TMA load a tile (per 64-column box): the
                               tile is rows n0 % page .. + n of page
                               table[b, n0 // page]
    page < n, n % page == 0,   n / page loads a tile, each a whole page into
    page % 8 == 0              rows i * page .. of the tile: 128-byte
                               swizzle repeats every 8 rows (1024 bytes), so
                               a page written at a multiple of 8 rows lies
                               as it would in one box of n rows

and ``check`` refuses the others (tc-sm90 then falls back to the
decomposition, which gathers the pages). Only the entries of pages that
start below the batch entry's length Lkv are read (cuDNN's contract: those
are valid, the later ones may hold anything). The block loads only the kv
tiles below Lkv, so with page >= n every tile's page starts below it; with
page < n the tile's later pages may not, and their loads name page P, past
the cache, which TMA fills with zeros (still counting the box's bytes on
the barrier), from a table slot clamped to T - 1 so that the read stays in
the table.
"""

from mlir import ir
from mlir.dialects import arith, llvm, memref, nvvm

from dnnc.codegen.gpu.tensorcore.emit import (
    add as _add, i as _i, idx as _idx, ptr as _ptr, shared_ptr as _shared_ptr,
)
from dnnc.codegen.gpu.tensorcore.sm90.fragments import BOX
from dnnc.codegen.gpu.tensorcore.sm90.support import NotSupported
from dnnc.codegen.gpu.tensorcore.sm90.rows import Rows
from dnnc.codegen.gpu.tensorcore.sm90.tma import SWIZZLE, tma_descriptor

# Rows of one 128-byte swizzle pattern: a page loaded on its own must start
# at a multiple of them within the tile.
SWIZZLE_ROWS = 8


def check_pages(att, n):
    """Raise NotSupported unless tiles of ``n`` kv rows read ``att``'s paged
    cache (module docstring)."""
    page = att.page
    if page >= n and page % n == 0:
        return
    if page < n and n % page == 0 and page % SWIZZLE_ROWS == 0:
        return
    raise NotSupported(f"a paged K and V with page size {page} and {n} kv rows a step: "
                       f"expected a page size that is a multiple of {n}, or a divisor of "
                       f"{n} that is a multiple of {SWIZZLE_ROWS}")


def _shape(value):
    return list(ir.MemRefType(value.type).shape)


class PagedRows(Rows):
    """The TMA loads of K's or V's tiles of ``rows`` kv rows (a box per 64
    columns of the head dim ``width``) from the paged cache ``value``
    through ``table``: a tile as rows.Rows lays it out (``bytes``,
    ``load``), with ``bind`` giving the block's kv length first."""

    def __init__(self, value, table, rows, width):
        super().__init__(value, rows, width)
        self.table = table
        pages, _, self.page, _ = _shape(value)
        self.pages = pages
        self.slots = _shape(table)[2]
        self.box_rows = min(rows, self.page)
        self.lkv = None

    def make_descriptor(self):
        """Host side: boxes of ``box_rows`` rows of one page by 64 columns,
        128-byte swizzle."""
        logical = [1, 1, self.box_rows, BOX]
        self.descriptor = tma_descriptor(self.value, [logical[d] for d in self.order])

    def bind(self, lkv):
        """Device side: the block's kv length (an index value), past which
        no table entry is read."""
        self.lkv = lkv

    def _entry(self, b, slot):
        """table[b, 0, slot, 0] as i32 (b and slot index values)."""
        zero = _idx(0)
        return memref.load(self.table, [b, zero, slot, zero])

    def _issue(self, dest_i64, barrier, page, h, row, offset):
        """One page's ``box_rows`` rows from ``row`` into the tile at byte
        ``offset`` of each box (i32 page, h and row)."""
        for box in range(self.boxes):
            logical = [page, h, row, _i(box * BOX)]
            coords = [logical[d] for d in self.order]
            at = _add(dest_i64, box * self.box_bytes + offset)
            dst = llvm.addrspacecast(_ptr(7), _shared_ptr(at))
            nvvm.CpAsyncBulkTensorGlobalToSharedClusterOp(
                dst, self.descriptor, list(reversed(coords)), barrier, [])

    def load(self, dest_i64, barrier, b, h, s0):
        """The tile of kv rows ``s0`` .. + rows of batch entry ``b``, kv head
        ``h`` (i32 values) into shared memory at ``dest_i64``, completing on
        ``barrier``."""
        i32, index = ir.IntegerType.get_signless(32), ir.IndexType.get()
        bi = arith.index_cast(index, b)
        first = arith.index_cast(index, s0)
        if self.page >= self.rows:
            slot = arith.divui(first, _idx(self.page))
            row = arith.index_cast(i32, arith.remui(first, _idx(self.page)))
            self._issue(dest_i64, barrier, self._entry(bi, slot), h, row, 0)
            return
        past = _i(self.pages)  # a page past the cache: TMA fills it with zeros
        for part in range(self.rows // self.page):
            start = _add(first, part * self.page)
            slot = arith.minui(arith.divui(start, _idx(self.page)), _idx(self.slots - 1))
            seen = arith.cmpi(arith.CmpIPredicate.ult, start, self.lkv)
            page = arith.select(seen, self._entry(bi, slot), past)
            self._issue(dest_i64, barrier, page, h, _i(0), part * self.page * SWIZZLE)
