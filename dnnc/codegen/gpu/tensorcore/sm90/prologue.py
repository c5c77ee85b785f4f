"""tc-sm90's operand prologues: pointwise ops between an operand's load
and the multiply (a cast from f32, a scale, an activation), run by the
consumers on each K step's tile.

An operand with a prologue (``gemm.Prologue``) is loaded as stored, without
swizzle (tma.py, ``swizzled=False``), and each K step the consumers convert
its tile into the swizzled layout wgmma reads: A's 64 rows by the consumer
that multiplies them, into one of CONVERTED_A tiles of its own; B by both
consumers, into one of CONVERTED_B shared tiles (support.py sizes them);
then a fence for the async proxy and a named barrier. The converted tiles
lie after the ring in shared memory.
"""

from mlir import ir
from mlir.dialects import arith, llvm, vector

from dnnc.codegen.gpu.tensorcore.emit import (
    cmp as _cmp, i as _i, idx as _idx, shared_ptr as _shared_ptr, to_i32 as _to_i32,
    to_i64 as _to_i64,
)
from dnnc.codegen.gpu.tensorcore.sm90.support import (
    CONVERTED_A, CONVERTED_B, WARPGROUP, converted_bytes,
)
from dnnc.codegen.gpu.tensorcore.sm90.tma import SWIZZLE, swizzled_offset


class Prologues:
    """The consumers' conversion of ``kernel``'s operands with a prologue."""

    def __init__(self, kernel):
        self.k = kernel

    def converted(self, operand, slot, consumer=None):
        """i64 shared address of converted tile ``slot`` of A (of ``consumer``)
        or of B, after the ring."""
        k = self.k
        start = k.ring_bytes
        if operand == "a":
            per = 64 * SWIZZLE
            index = arith.addi(arith.muli(consumer, _idx(CONVERTED_A)), slot)
        else:
            start += converted_bytes(k.tile, (k.sources[0] is not None, False))
            per = k.tile.n * SWIZZLE
            index = slot
        offset = arith.addi(_i(start, 64), arith.muli(_to_i64(index), _i(per, 64)))
        return arith.addi(k.base, offset)

    def convert_step(self, stage, a_tile, b_tile, consumer, local, kt, g):
        """Convert this step's tiles of the operands with a prologue; returns
        the addresses wgmma reads A (this consumer's 64 rows) and B from.
        Each thread fences its shared-memory writes for the async proxy
        (wgmma), then the threads that wrote a tile meet at a named barrier:
        a consumer's warpgroup for A alone, both consumers for B."""
        k = self.k
        k0 = arith.muli(kt, _idx(k.tile.k))
        if k.sources[0] is not None:
            # The consumer's 64 rows of A as stored: 64 rows of K elements,
            # or (MN-major) 64 columns of each row of K.
            part = 64 * k.a.eb * (1 if k.a.mn_major else k.tile.k)
            src = arith.addi(stage, arith.muli(_to_i64(consumer), _i(part, 64)))
            a_tile = self.converted("a", arith.remui(g, _idx(CONVERTED_A)), consumer)
            self.convert(k.a, k.gemm.a.prologue, src, a_tile, 64, local, WARPGROUP, k0)
        if k.sources[1] is not None:
            threads = WARPGROUP * k.tile.consumers
            thread = arith.addi(arith.muli(consumer, _idx(WARPGROUP)), local)
            b_tile = self.converted("b", arith.remui(g, _idx(CONVERTED_B)))
            self.convert(k.b, k.gemm.b.prologue, arith.addi(stage, _i(k.a_bytes, 64)),
                         b_tile, k.tile.n, thread, threads, k0)
        llvm.inline_asm(None, [], "fence.proxy.async.shared::cta;", "", has_side_effects=True)
        if k.sources[1] is not None:
            ident, count = _i(1), _i(WARPGROUP * k.tile.consumers)
        else:
            ident, count = _to_i32(arith.addi(consumer, _idx(1))), _i(WARPGROUP)
        llvm.inline_asm(None, [ident, count], "bar.sync $0, $1;", "r,r",
                        has_side_effects=True)
        return a_tile, b_tile

    def convert(self, operand, prologue, src, dst, lines, thread, threads, k0):
        """Threads 0 .. ``threads`` - 1 (``thread``: this one) convert ``lines``
        128-byte rows of a tile into the swizzled layout wgmma reads (the 16-
        byte chunk c of line L lies at L * 128 + (c ^ L % 8) * 16, as TMA would
        have written it): each thread reads 16 bytes of the unswizzled source
        tile ``src`` (``operand``'s stored elements: 8 of 16 bits, 4 of f32, so
        that 8 threads read 128 contiguous bytes), runs ``prologue`` on them
        and stores them at ``dst``. A K-major line is a row of the tile's K;
        an MN-major operand's line L is K row L % BK of the M or N columns
        64 (L / BK) .. + 63 (A's 64 lines a consumer: its 64 columns of M, BK
        being 64 for the 16-bit types a prologue makes). Elements past K are
        zeroed when K is ragged (the prologue of TMA's zero fill need not be
        zero)."""
        k = self.k
        bk, es = k.tile.k, operand.eb
        per = 16 // es                     # elements a thread converts at once
        parts = SWIZZLE // (2 * per)       # of a 128-byte line of the multiplied type
        stored = ir.MemRefType(operand.value.type).element_type
        element = ir.BF16Type.get() if k.element == "bf16" else ir.F16Type.get()
        src_type = ir.VectorType.get([per], stored)
        ragged = k.gemm.k % bk != 0
        zero = arith.constant(element, 0.0) if ragged else None
        k_total = _idx(k.gemm.k)
        for j in range(lines * parts // threads):
            item = arith.addi(thread, _idx(j * threads))
            line = arith.divui(item, _idx(parts))
            first = arith.muli(arith.remui(item, _idx(parts)), _idx(per))  # along the line
            if operand.mn_major:
                row, piece = arith.remui(line, _idx(bk)), arith.divui(line, _idx(bk))
                at = arith.addi(arith.muli(row, _idx(operand.rows)),
                                arith.addi(arith.muli(piece, _idx(64)), first))
                ks = [arith.addi(k0, row)] * per
            else:
                at = arith.addi(arith.muli(line, _idx(bk)), first)
                k_first = arith.addi(k0, first)
                ks = [arith.addi(k_first, _idx(e)) if e else k_first for e in range(per)]
            source = arith.addi(src, arith.muli(_to_i64(at), _i(es, 64)))
            vec = llvm.load(src_type, _shared_ptr(source), alignment=16)
            values = []
            for e in range(per):
                value = prologue.apply(vector.extract(vec, [], [e]))
                if ragged:
                    value = arith.select(_cmp("ult", ks[e], k_total), value, zero)
                values.append(value)
            # Chunk first / 8 of the line; f32's half chunk within it.
            offset = swizzled_offset(line, arith.shrui(first, _idx(3)),
                               arith.muli(arith.andi(first, _idx(7)), _idx(2)))
            target = arith.addi(dst, _to_i64(offset))
            llvm.store(vector.from_elements(ir.VectorType.get([per], element), values),
                       _shared_ptr(target), alignment=2 * per)
