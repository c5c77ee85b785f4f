"""tc-sm80's convolution loaders: the operands of an implicit GEMM
(dnnc/codegen/gpu/tensorcore/conv.py) gathered by cp.async into the stages
the matmul's loader fills (loader.py), so that the mainloop's ldmatrix and
mma.sync, the epilogue and the scheduler are the matmul's.

K steps run over the filter taps, outer, and each tap's channels in steps
of BK, inner: step k0 = tap x C' + c0, with C' the channels rounded up to
BK (``Conv.padded_channels``); a step lies in one tap.

``Im2colOperand``, A of a forward convolution or a data gradient (K-major):
row m of the tile is output pixel m = (n, p, q) in N·P·Q order. ``prepare``
splits each of the thread's rows into (n, p, q) once, and keeps the address
of x[n, p * stride - pre, q * stride - pre, chunk's channel] (which may lie
outside x) and the coordinates it checks. Per K step the tap (r, s) and c0
give one offset, (r * dil) * H's stride + (s * dil) * W's stride + c0, the
same for every chunk; a chunk reads its bytes from its address plus that
offset, or none (cp.async's src-size 0: zeros) where the pixel falls in the
padding, the channels past C or the row past M.

**Any C.** A chunk is 16 bytes where the pixels' pitch allows (C a multiple
of 8 for 16-bit types), else the widest cp.async it allows (8 or 4 bytes:
C = 12, 6), else 16 bytes loaded element by element through registers (odd
C: 3, 63; loader.py's element-wise chunks). A chunk that straddles C reads
the channels below it and zero-fills the rest (a src-size of the bytes
left; the element-wise loads zero past it), so the last K step of each tap
is padded in the loader and nothing is padded in memory. That is what lets
tc-sm90 hand such convolutions to tc-sm80 on sm_90a, rather than TMA
(which cannot describe a pixel stride that is not a multiple of 16 bytes)
reading a padded copy of x: one launch, x read once. The filter
(``FilterOperand``) and a filter gradient's dy are plain tiles that take
the same three kinds of chunk, cut at C or K (AsyncOperand's bounds). Only the spatial dims whose
taps can reach the padding are checked (pre or post padding > 0: else every
tap of every output pixel lands inside the image), and a row past M is
folded into the first checked coordinate (moved out of range), so a chunk
carries a 64-bit address and one 32-bit coordinate per checked dim.

The same loader reads B of a filter gradient (MN-major): its K runs over
output pixels, its N over (tap, channel), or over C alone where the taps
are the GEMM's batch (tensorcore/wgrad_taps.py, C a multiple of 8 but not
of 64). Each chunk's tap and channel are fixed in ``prepare`` (for
element-wise chunks, each element's: a column of an odd C may lie in
another tap than its neighbour), so that where no other layout reads C a
tile may span taps; the chunks past C (a batched tap's) or past N are
zeros, and each K step splits the chunk's pixel into (n, p, q).

``FilterOperand``, B of a forward convolution (K-major: rows of output
channels) or of a data gradient (MN-major: rows of the GEMM's K, dy's
channels, C contiguous), is the plain tile of the filter viewed as
``[K, taps, C]``, whose K step moves by a tap (flipped in convolution mode)
and c0 channels, zero past the channels the step reads.

A filter gradient's A, dy as ``[N·P·Q, K]``, is a plain MN-major operand
(``AsyncOperand``).
"""

from mlir import ir
from mlir.dialects import arith, memref

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.tensorcore.emit import (
    add as _add, cmp as _cmp, i as _i, idx as _idx, to_i32 as _i32, to_i64 as _i64,
)
from dnnc.codegen.gpu.tensorcore.sm80.loader import AsyncOperand
from dnnc.codegen.gpu.tensorcore.sm80.support import NotSupported

# A row past M moves its first checked coordinate here: out of every image
# (a tap adds less than 2^15), and no overflow of an i32.
OUTSIDE = 1 << 30


def _split(value, sizes):
    """``value`` (index) as digits of mixed radix ``sizes`` (outermost
    first), and what is left above them."""
    digits = []
    for size in reversed(sizes):
        digits.append(arith.remui(value, _idx(size)) if size != 1 else _idx(0))
        value = arith.divui(value, _idx(size)) if size != 1 else value
    return list(reversed(digits)), value


def _all(conditions):
    """The conjunction of the i1 ``conditions``, None for none."""
    out = None
    for c in conditions:
        out = c if out is None else arith.andi(out, c)
    return out


def _tap_offsets(conv, tap):
    """Each spatial dim's offset (index) of filter tap ``tap`` (index) of
    x's taps: its digit by the filter's sizes times the dilation."""
    digits, _ = _split(tap, conv.filter)
    return [arith.muli(t, _idx(d)) if d != 1 else t for t, d in zip(digits, conv.dilation)]


def loaders(conv, tile):
    """The (A, B) CopyLoaders of implicit GEMM ``conv`` in ``tile``s; raises
    NotSupported."""
    gemm = conv.gemm
    if conv.direction != "wgrad" and conv.padded_channels % tile.k:
        raise NotSupported(f"{conv.padded_channels} channels a tap in K steps of {tile.k}: "
                           "the convolution was matched for another K step")
    if conv.direction == "wgrad":
        if conv.tiles_in_tap and conv.channels % tile.n:
            raise NotSupported(f"a filter gradient of C = {conv.channels} in tiles of "
                               f"{tile.n} columns: a tile must lie in one filter tap (C a "
                               "multiple of the tile's N)")
        return (AsyncOperand("A", gemm.a, tile.m, tile, gemm.m, gemm.k, element_wise=True),
                Im2colOperand(conv, tile))
    return Im2colOperand(conv, tile), FilterOperand(conv, tile)


class FilterOperand(AsyncOperand):
    """B of a forward convolution or a data gradient: the filter viewed as
    ``[K, taps, C]``, a plain tile whose K step moves by a tap and c0."""

    def __init__(self, conv, tile):
        gemm = conv.gemm
        # Bounds along K: the channels the step's tap holds.
        super().__init__("B", gemm.b, tile.n, tile, gemm.n, conv.channels, element_wise=True)
        self.conv = conv

    def k_step(self, k0):
        conv = self.conv
        padded = conv.padded_channels
        tap = arith.divui(k0, _idx(padded))
        c0 = arith.subi(k0, arith.muli(tap, _idx(padded)))
        if conv.flip:   # convolution mode: x's tap t meets the filter's taps - 1 - t
            tap = arith.subi(_idx(conv.taps - 1), tap)
        st = self.strides
        elem = arith.addi(arith.muli(tap, _idx(st[1])),
                          arith.muli(c0, _idx(st[self.operand.dims["k"]])))
        return c0, arith.muli(_i64(elem), _i(self.eb, 64))


class Im2colOperand(AsyncOperand):
    """The activation gathered pixel by pixel: A of a forward convolution
    or a data gradient (K-major, ``rows`` = BM output pixels by BK channels
    of their input pixels at one tap), or B of a filter gradient (MN-major:
    BK output pixels by BN channels at the tile's tap). See the module
    docstring."""

    def __init__(self, conv, tile):
        gemm = conv.gemm
        if conv.direction == "wgrad":
            super().__init__("B", gemm.b, tile.n, tile, gemm.n, gemm.k, element_wise=True)
        else:
            super().__init__("A", gemm.a, tile.m, tile, gemm.m, gemm.k, element_wise=True)
        self.conv = conv
        shape = list(irutil.memref_geometry(self.value.type)[0])
        # x as [N, *image, C]: its image sizes and their strides.
        self.image, self.pixel_strides = shape[1:-1], self.strides[1:-1]
        # The dims whose taps can reach the padding (see the module docstring).
        self.checked = [d for d in range(len(self.image))
                        if conv.pre[d] > 0 or conv.post[d] > 0]
        self.ragged_c = conv.padded_channels != conv.channels
        # A chunk may straddle C (C not a multiple of a chunk's elements:
        # 3, 63): it copies the channels below C and zero-fills the rest.
        self.split_c = conv.channels % (self.width // self.eb) != 0

    def _pixel(self, image, coords):
        """x's element offset (index) of pixel ``coords`` of ``image``,
        channel 0, the view's offset included."""
        elem = arith.addi(_idx(self.offset), arith.muli(image, _idx(self.strides[0])))
        for c, s in zip(coords, self.pixel_strides):
            elem = arith.addi(elem, arith.muli(c, _idx(s)))
        return elem

    def _address(self, base, elem):
        return arith.addi(base, arith.muli(_i64(elem), _i(self.eb, 64)))

    def _inside(self, coords):
        """The i1s that coordinates ``coords`` (i32, of the checked dims)
        lie in the image (unsigned: a negative one is past any size)."""
        return [_cmp("ult", c, _i(self.image[d])) for c, d in zip(coords, self.checked)]

    def slots(self, plan):
        # Both plans (rows and columns) are (base, chunks), each chunk's
        # shared offset first and its ``exists`` last.
        return [(chunk[0], chunk[-1]) for chunk in plan[1]]

    # -- A: output pixels by (tap, channel) ----------------------------------

    def prepare(self, tid, threads, batch, mn0):
        if not self.k_major:
            return self._prepare_columns(tid, threads, batch, mn0)
        conv = self.conv
        base = _i64(memref.extract_aligned_pointer_as_index(self.value))
        ragged_m = self.extent["mn"] % self.rows != 0
        plan = []
        for c in range(-(-self.chunks // threads)):
            _, line, col, exists = self.chunk(tid, c, threads)
            dst = arith.addi(arith.muli(line, _idx(self.pitch)), arith.muli(col, _idx(self.eb)))
            m = arith.addi(mn0, line)
            pixel, image = _split(m, conv.out)
            # The input pixel of tap 0 (it may lie in the padding).
            starts = [arith.subi(arith.muli(o, _idx(s)) if s != 1 else o, _idx(p))
                      for o, s, p in zip(pixel, conv.stride, conv.pre)]
            address = self._address(base, arith.addi(self._pixel(image, starts), col))
            coords = [_i32(starts[d]) for d in self.checked]
            row_ok = _cmp("ult", m, _idx(self.extent["mn"])) if ragged_m else None
            if row_ok is not None and coords:
                coords[0] = arith.select(row_ok, coords[0], _i(OUTSIDE))
                row_ok = None
            channel_room = _i32(arith.subi(_idx(conv.channels), col)) if self.ragged_c \
                else None
            plan.append((_i64(dst), address, coords, row_ok, channel_room, exists))
        return base, plan

    def load(self, plan, stage_i64, k0):
        if not self.k_major:
            return self._load_columns(plan, stage_i64, k0)
        conv = self.conv
        base, chunks = plan
        padded = conv.padded_channels
        tap = arith.divui(k0, _idx(padded))
        c0 = arith.subi(k0, arith.muli(tap, _idx(padded)))
        offsets = _tap_offsets(conv, tap)
        # One offset for every chunk: the tap's pixel and c0.
        elem = c0
        for o, s in zip(offsets, self.pixel_strides):
            elem = arith.addi(elem, arith.muli(o, _idx(s)))
        step = arith.muli(_i64(elem), _i(self.eb, 64))
        shifts = [_i32(offsets[d]) for d in self.checked]
        c0_32 = _i32(c0) if self.ragged_c else None
        pending = []
        for dst, address, coords, row_ok, channel_room, exists in chunks:
            ok = self._inside([arith.addi(c, s) for c, s in zip(coords, shifts)])
            if row_ok is not None:
                ok.append(row_ok)
            size = None
            if channel_room is not None and self.split_c:
                # Bytes of channels c0 + col .. below C, at most a chunk.
                room = arith.subi(channel_room, c0_32)
                size = arith.index_cast(ir.IndexType.get(), arith.maxsi(arith.minsi(
                    arith.muli(room, _i(self.eb)), _i(self.width)), _i(0)))
                ok.append(_cmp("sgt", room, _i(0)))
            elif channel_room is not None:
                # Signed: a chunk past C (col > C: C = 8 in a K step of 32
                # channels) has a negative room, which unsigned would take
                # for a large one and read the next pixels' channels, or
                # past x's end (NaN times the filter's zero rows is NaN).
                ok.append(_cmp("slt", c0_32, channel_room))
            pending += self._copy_if(arith.addi(stage_i64, dst), base,
                                     arith.addi(address, step), _all(ok), exists, size)
        return pending

    def _copy_if(self, dst, base, src, ok, exists, size=None):
        """Copy a chunk from ``src`` where ``ok`` (None: always), else zero
        it (src-size 0, pointing at the operand's base, never read);
        ``size``: the bytes to read where not the whole chunk. Returns the
        stores still to issue (AsyncOperand.copy)."""
        size = _idx(self.width) if size is None else size
        if ok is None:
            return self.copy(dst, src, size, exists)
        return self.copy(dst, arith.select(ok, src, base),
                         arith.select(ok, size, _idx(0)), exists)

    # -- B of a filter gradient: output pixels (K) by (tap, channel) -------

    def _column(self, base, batch, n):
        """Where column ``n`` (index) of a filter gradient's B in batch
        ``batch`` starts: the address of its channel at output pixel 0
        (which may lie outside x), the i32 input coordinates of the checked
        dims there, and whether it lies before N (None where every column
        does)."""
        conv = self.conv
        inside = None
        if self.extent["mn"] % self.rows or self.element_wise:
            inside = _cmp("ult", n, _idx(self.extent["mn"]))
        if conv.tap_batched:
            # The taps are the GEMM's batch (wgrad_taps.py): column n is
            # channel n of tap ``batch``, N = C (past it: zeros, which the
            # epilogue does not store).
            tap, channel = batch, n
        else:
            tap = arith.divui(n, _idx(conv.channels))
            channel = arith.subi(n, arith.muli(tap, _idx(conv.channels)))
            if inside is not None:
                tap = arith.minui(tap, _idx(conv.taps - 1))    # a column past N: any tap
        if conv.flip:   # dw's tap t reads x at taps - 1 - t in convolution mode
            tap = arith.subi(_idx(conv.taps - 1), tap)
        # Input coordinate of output pixel 0 at this tap, per dim.
        shifts = [arith.subi(o, _idx(p)) for o, p in zip(_tap_offsets(conv, tap), conv.pre)]
        address = self._address(base, arith.addi(self._pixel(_idx(0), shifts), channel))
        return address, [_i32(shifts[d]) for d in self.checked], inside

    def _prepare_columns(self, tid, threads, batch, n0):
        """Each chunk's columns: one (tap, channel) start where a chunk
        lies in one tap (C a multiple of its elements, the tile's start a
        multiple of them too, or the taps the batch: C a multiple of 8);
        for element-wise chunks (odd C) one per element, each element's tap
        its own, so that a tile may span taps whatever C is."""
        base = _i64(memref.extract_aligned_pointer_as_index(self.value))
        elements = self.width // self.eb
        chunks = []
        for c in range(-(-self.chunks // threads)):
            _, line, col, exists = self.chunk(tid, c, threads)
            dst = arith.addi(arith.muli(line, _idx(self.pitch)), arith.muli(col, _idx(self.eb)))
            n = arith.addi(n0, col)
            starts = [self._column(base, batch, _add(n, j)) for j in range(elements)] \
                if self.element_wise else [self._column(base, batch, n)]
            chunks.append((_i64(dst), starts, line, exists))
        return base, chunks

    def _load_columns(self, plan, stage_i64, k0):
        conv = self.conv
        base, chunks = plan
        ragged_k = self.extent["k"] % self.bk != 0
        pending = []
        for dst, starts, line, exists in chunks:
            pixel = arith.addi(k0, line)
            coords, image = _split(pixel, conv.out)
            strided = [arith.muli(o, _idx(s)) if s != 1 else o
                       for o, s in zip(coords, conv.stride)]
            # _pixel adds the view's offset, which the addresses hold already.
            step = arith.muli(_i64(arith.subi(self._pixel(image, strided), _idx(self.offset))),
                              _i(self.eb, 64))
            common = [_cmp("ult", pixel, _idx(self.extent["k"]))] if ragged_k else []
            pieces = []
            for address, shifts, inside in starts:
                ok = self._inside([arith.addi(_i32(strided[d]), s)
                                   for d, s in zip(self.checked, shifts)]) + common
                if inside is not None:
                    ok.append(inside)
                pieces.append((arith.addi(address, step), _all(ok)))
            if not self.element_wise:
                ((src, ok),) = pieces
                pending += self._copy_if(arith.addi(stage_i64, dst), base, src, ok, exists)
            else:
                pending.append(self.element_gather(arith.addi(stage_i64, dst), base, pieces,
                                                   exists))
        return pending
