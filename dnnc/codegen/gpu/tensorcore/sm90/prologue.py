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

A forward convolution's prologue on x (tensorcore/conv_prologue.py: cuDNN's
BN-ReLU-conv) is converted so too, with two things more, both per K step
of one filter tap ``t`` and BK channels from c0:

* each element's per-channel operands (scale, shift): a thread converts the
  same 8 channels of each of its 4 rows, so it loads them once a step (once
  a tile where C fits one K step), and applies the prologue to a row's 8
  elements as vectors (LLVM pairs the 16-bit arithmetic);
* the padding: TMA zero-fills the taps of a row (an output pixel o) that
  fall outside the image, and the prologue would make them relu(shift),
  not the zeros the convolution pads with. A tap lies in the image where,
  along every spatial dim, o * stride - pre + t * dilation is in
  [0, size): with the row's start o * stride - pre computed once per tile
  (``begin_tile``), that is an add and one unsigned compare a dim (a
  negative position wraps past the size) per row and step. Rows past M and
  channels past C are zeroed likewise (those never reach an output, but
  their per-channel operands must not be read past C).
"""

from mlir import ir
from mlir.dialects import arith, llvm, memref, vector

from dnnc.codegen.gpu.tensorcore.conv_prologue import ConvPrologue
from dnnc.codegen.gpu.tensorcore.emit import (
    cmp as _cmp, i as _i, idx as _idx, shared_ptr as _shared_ptr, to_i32 as _to_i32,
    to_i64 as _to_i64,
)
from dnnc.codegen.gpu.tensorcore.sm90.support import (
    CONVERTED_A, CONVERTED_B, WARPGROUP, converted_bytes,
)
from dnnc.codegen.gpu.tensorcore.sm90.im2col import split as _split
from dnnc.codegen.gpu.tensorcore.sm90.tma import SWIZZLE, swizzled_offset

# A conversion thread's piece of a row: 16 bytes, 8 elements of 16 bits.
PIECE = 8


class Prologues:
    """The consumers' conversion of ``kernel``'s operands with a prologue."""

    def __init__(self, kernel):
        self.k = kernel
        # A convolution's prologue on x, and what begin_tile computes.
        a = kernel.gemm.a.prologue
        self.conv = a if isinstance(a, ConvPrologue) else None
        self.rows = None
        self.batch = None
        self.channels = None

    def begin_tile(self, consumer, local, batch, tile_m):
        """Before a tile's K steps (a convolution's prologue): for each of
        the 4 rows of A this thread converts, the output pixel's start
        position o * stride - pre per spatial dim (i32) and whether the row
        is one of M's; the tile's group (``batch``); and, where C fits one
        K step (every step reads channels 0 .. BK - 1 of its tap), this
        thread's channels and their per-channel operands, loaded once a
        tile rather than once a step."""
        k = self.k
        conv = k.a.conv
        self.batch = batch
        first_row = arith.addi(arith.muli(tile_m, _idx(k.tile.m)),
                               arith.muli(consumer, _idx(64)))
        self.rows = []
        for line in self.lines(local):
            m = _to_i32(arith.addi(first_row, line))
            pixel, _ = _split(m, conv.out)
            starts = [arith.subi(arith.muli(o, _i(s)) if s != 1 else o, _i(p))
                      for o, s, p in zip(pixel, conv.stride, conv.pre)]
            self.rows.append((starts, _cmp("ult", m, _i(k.gemm.m))))
        self.channels = self.step_channels(local, _i(0)) \
            if conv.padded_channels == k.tile.k else None

    def step_channels(self, local, c0):
        """(whether this thread's 8 channels of a K step from channel
        ``c0`` (i32) lie in C, {per-channel input's block argument: a
        vector of its 8 values}); past C the operands are read at channel
        0 (the elements are zeroed)."""
        k = self.k
        conv = k.a.conv
        first = arith.muli(arith.remui(local, _idx(SWIZZLE // (2 * PIECE))), _idx(PIECE))
        channel = arith.addi(_to_i32(first), c0)
        in_c = _cmp("ult", channel, _i(conv.channels))
        channel = arith.select(in_c, channel, _i(0))
        if conv.groups > 1:
            channel = arith.addi(channel, arith.muli(_to_i32(self.batch), _i(conv.channels)))
        channel = arith.index_cast(ir.IndexType.get(), channel)
        operands = {}
        for c in self.conv.channels:
            t = ir.MemRefType(c.value.type)
            values = []
            for e in range(PIECE):
                at = arith.addi(channel, _idx(e)) if e and c.channel_dim is not None \
                    else channel
                indices = [at if d == c.channel_dim else _idx(0) for d in range(t.rank)]
                values.append(memref.load(c.value, indices))
            operands[c.argument] = vector.from_elements(
                ir.VectorType.get([PIECE], t.element_type), values)
        return in_c, operands

    @staticmethod
    def lines(local):
        """The rows of a consumer's 64 that thread ``local`` converts: 8
        threads a 128-byte row, 16 rows at a time."""
        parts = SWIZZLE // (2 * PIECE)
        first = arith.divui(local, _idx(parts))
        per = WARPGROUP // parts
        return [arith.addi(first, _idx(j * per)) if j else first
                for j in range(64 // per)]

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
            if self.conv is not None:
                self.convert_conv(src, a_tile, local, k0)
            else:
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

    def convert_conv(self, src, dst, local, k0):
        """Thread ``local`` of a consumer converts its 4 rows' 8 channels of
        the consumer's 64 rows of A as stored at ``src`` (rows of BK
        channels of one filter tap, unswizzled) into the swizzled tile at
        ``dst``: the prologue on each element with its channel's operands,
        0 where the row's tap lies in the padding, the row is past M or the
        channel past C (see the module docstring)."""
        k = self.k
        conv, prologue = k.a.conv, self.conv
        bk, es = k.tile.k, k.a.eb
        element = ir.BF16Type.get() if k.element == "bf16" else ir.F16Type.get()
        zero = arith.constant(ir.VectorType.get([PIECE], element),
                              ir.DenseElementsAttr.get_splat(
                                  ir.VectorType.get([PIECE], element),
                                  ir.FloatAttr.get(element, 0.0)))
        # The step's tap and first channel; the taps' offsets along each dim.
        padded = conv.padded_channels
        k0_i32 = _to_i32(k0)
        tap, c0 = arith.divui(k0_i32, _i(padded)), arith.remui(k0_i32, _i(padded))
        taps, _ = _split(tap, conv.filter)
        offsets = [arith.muli(t, _i(d)) if d != 1 else t for t, d in zip(taps, conv.dilation)]
        sizes = list(ir.MemRefType(conv.x.type).shape)[1:-1]
        # This thread's 8 channels (in C?) and their per-channel operands.
        in_c, operands = self.channels or self.step_channels(local, c0)
        first = arith.muli(arith.remui(local, _idx(SWIZZLE // (2 * PIECE))), _idx(PIECE))
        src_type = ir.VectorType.get([PIECE], ir.MemRefType(conv.x.type).element_type)
        for line, (starts, in_m) in zip(self.lines(local), self.rows):
            keep = arith.andi(in_m, in_c)
            for start, offset, size in zip(starts, offsets, sizes):
                keep = arith.andi(keep, _cmp("ult", arith.addi(start, offset), _i(size)))
            at = arith.addi(arith.muli(line, _idx(bk)), first)
            source = arith.addi(src, arith.muli(_to_i64(at), _i(es, 64)))
            vec = llvm.load(src_type, _shared_ptr(source), alignment=16)
            # The row's 8 elements at once: one select for the padding.
            values = arith.select(keep, prologue.apply(vec, operands), zero)
            offset = swizzled_offset(line, arith.shrui(first, _idx(3)), _idx(0))
            target = arith.addi(dst, _to_i64(offset))
            llvm.store(values, _shared_ptr(target), alignment=16)
