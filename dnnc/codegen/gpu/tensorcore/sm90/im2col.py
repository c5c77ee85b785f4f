"""tc-sm90's convolution loaders: the operands of an implicit GEMM
(dnnc/codegen/gpu/tensorcore/conv.py) brought into the ring by TMA, in the
layout the matmul's loader leaves (rows of one K step, 128-byte swizzle), so
the mainloop, the epilogue and the scheduler are the matmul's.

K steps run over the filter taps, outer, and each tap's channels in steps
of BK, inner: step k0 = tap x C' + c0, with C' the channels rounded up to
BK (``Conv.padded_channels``).

``Im2colOperand`` (A) loads BM output pixels' input pixels at one tap with
one TMA load in im2col mode. Its descriptor describes the activation
``[N, (D,) H, W, C]`` as it lies, with a pixel box per spatial dim from
-pre to post - (R - 1) * dilation (the positions of the first tap of every
output pixel, relative to the input) traversed with the convolution's
stride, BK channels a pixel, BM pixels a load. A load starts at the first
output pixel's first-tap position, (p * stride - pre, ...), offset by the
tap (r * dilation, ...); TMA walks the pixels in N·P·Q order across rows
and images and fills with zeros what falls outside the input (the padding),
past C, and past the last image (the tile's rows past M).

A filter gradient's B is the same load, MN-major: BK output pixels by
BN channels of their input pixels at the tile's tap, in boxes of 64
channels; its tap is the column's (N = taps x C, a tile in one tap) or
the batch index (the taps as the GEMM's batch: tensorcore/wgrad_taps.py).

``PixelRows`` (A, where the config's ``tiled`` asks and the convolution
allows: tensorcore/pixel_rows.py) loads a 1x1, unit-stride, unpadded
convolution's BM output pixels as the matmul's loader loads rows: one tiled
TMA box of the ``[N*H*W, C]`` matrix x's pixels form.

``FilterOperand`` (B) loads BN output channels' weights at one tap: a tiled
TMA box ``[BN, 1, BK]`` of the filter viewed as ``[K, taps, C]``, zero past
K and C. In convolution mode the filter's tap is taps - 1 - t.
"""

import math
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, llvm, memref, nvvm

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.tensorcore import pixel_rows
from dnnc.codegen.gpu.tensorcore.emit import i as _i, ptr as _ptr, shared_ptr as _shared_ptr
from dnnc.codegen.gpu.tensorcore.sm90.support import NotSupported
from dnnc.codegen.gpu.tensorcore.sm90.tma import (
    SWIZZLE, element_bytes, im2col_descriptor, physical_order, tma_descriptor,
)

# The pixel box corners TMA's im2col mode takes, by tensor rank (4: 2-D
# convolutions, 5: 3-D).
CORNER_RANGE = {3: (-2 ** 15, 2 ** 15 - 1), 4: (-2 ** 7, 2 ** 7 - 1), 5: (-2 ** 4, 2 ** 4 - 1)}


def split(value, sizes):
    """``value`` (i32) as digits of mixed radix ``sizes`` (outermost first)."""
    digits = []
    for size in reversed(sizes):
        digits.append(arith.remui(value, _i(size)) if size != 1 else _i(0))
        value = arith.divui(value, _i(size)) if size != 1 else value
    return list(reversed(digits)), value


def corners(conv):
    """(lower, upper) of the im2col pixel box, per spatial dim."""
    lower = [-p for p in conv.pre]
    upper = [post - (r - 1) * d for post, r, d in zip(conv.post, conv.filter, conv.dilation)]
    return lower, upper


def check_conv(conv, tile):
    """Raise NotSupported unless TMA's im2col mode describes ``conv`` and
    its loaders take ``tile``."""
    if conv.tiles_in_tap and conv.channels % tile.n:
        raise NotSupported(f"a filter gradient of C = {conv.channels} in tiles of "
                           f"{tile.n} columns: a tile must lie in one filter tap (C a "
                           "multiple of the tile's N)")
    rank = len(conv.filter) + 2
    if rank not in CORNER_RANGE:
        raise NotSupported(f"a {rank - 2}-D convolution: TMA's im2col mode takes 1-D to 3-D")
    lo, hi = CORNER_RANGE[rank]
    for name, values in zip(("lower", "upper"), corners(conv)):
        if any(not lo <= v <= hi for v in values):
            raise NotSupported(f"the im2col pixel box's {name} corner {values} (from the "
                               f"padding and the dilated filter) is outside [{lo}, {hi}], what "
                               f"TMA takes for a rank-{rank} tensor")
    if any(not 1 <= s <= 8 for s in conv.stride):
        raise NotSupported(f"stride {conv.stride}: TMA's im2col traversal strides are 1 to 8")


@dataclass
class _ConvTile:
    """What both convolution loaders hold: ``rows`` (BM or BN) of the tile
    by ``k`` (BK) elements of ``element`` a K step; ``mn_major``: loaded in
    boxes of 128 bytes of M or N by BK rows."""

    conv: object
    rows: int
    element: str
    k: int
    mn_major: bool = False
    descriptor: object = None

    @property
    def eb(self):
        return element_bytes(self.element)

    @property
    def tile_bytes(self):
        return self.rows * self.k * self.eb

    @property
    def pieces(self):
        """TMA boxes per tile: MN-major, one per 128 bytes of M or N."""
        return self.rows // (SWIZZLE // self.eb) if self.mn_major else 1


@dataclass
class Im2colOperand(_ConvTile):
    """A of a forward convolution or a data gradient: ``rows`` (BM) output
    pixels by ``k`` (BK) channels of their input pixels at one tap,
    K-major. B of a filter gradient (``mn_major``): ``k`` (BK) output
    pixels by ``rows`` (BN) channels of their input pixels at the tap of the
    tile's columns, in boxes of 64 channels (128 bytes). ``swizzled``
    False: A loaded as it lies (rows of BK channels, no swizzle), for the
    consumers to convert (a prologue on x, sm90/prologue.py)."""

    swizzled: bool = True

    def make_descriptor(self, bk):
        lower, upper = corners(self.conv)
        strides = [1] + list(self.conv.stride) + [1]
        pixels, channels = (bk, self.rows // self.pieces) if self.mn_major else (self.rows, bk)
        self.descriptor = im2col_descriptor(self.conv.x, pixels, channels, lower, upper,
                                            strides, self.swizzled)
        return self.descriptor

    def load(self, dest_i64, barrier, batch, mn0, k0):
        conv = self.conv
        if self.mn_major and conv.tap_batched:
            # The tile's columns are channels of tap ``batch`` (the taps
            # are the GEMM's batch: wgrad_taps.py); TMA fills past C with
            # zeros, which the epilogue does not store.
            tap, c0, first = batch, mn0, k0
        elif self.mn_major:
            # The tile's columns are (tap, channel), C of them a tap (C a
            # multiple of BN: a tile lies in one tap, or one tap, whose
            # tiles' columns past C the epilogue does not store); its K,
            # pixels.
            tap, c0 = arith.divui(mn0, _i(conv.channels)), arith.remui(mn0, _i(conv.channels))
            first = k0
        else:
            padded = conv.padded_channels
            tap, c0 = arith.divui(k0, _i(padded)), arith.remui(k0, _i(padded))
            first = mn0
        if conv.flip and conv.direction == "wgrad":
            tap = arith.subi(_i(conv.taps - 1), tap)
        taps, _ = split(tap, conv.filter)
        i16 = ir.IntegerType.get_signless(16)
        offsets = [arith.trunci(i16, arith.muli(t, _i(d)) if d != 1 else t)
                   for t, d in zip(taps, conv.dilation)]
        if conv.groups > 1:
            # Group ``batch``'s channels.
            c0 = arith.addi(c0, arith.muli(batch, _i(conv.channels)))
        pixel, image = split(first, conv.out)
        starts = [arith.subi(arith.muli(o, _i(s)) if s != 1 else o, _i(p))
                  for o, s, p in zip(pixel, conv.stride, conv.pre)]
        width = SWIZZLE // self.eb
        for piece in range(self.pieces):
            c = arith.addi(c0, _i(piece * width)) if piece else c0
            dest = dest_i64 if not piece else \
                arith.addi(dest_i64, _i(piece * self.tile_bytes // self.pieces, 64))
            dst = llvm.addrspacecast(_ptr(7), _shared_ptr(dest))
            coords = [image] + starts + [c]
            nvvm.CpAsyncBulkTensorGlobalToSharedClusterOp(
                dst, self.descriptor, list(reversed(coords)), barrier, list(reversed(offsets)),
                mode=nvvm.TMALoadMode.IM2COL)


@dataclass
class PixelRows(_ConvTile):
    """A of a 1x1, unit-stride, unpadded forward convolution or data
    gradient (pixel_rows.problem is None): ``rows`` (BM) output pixels by
    ``k`` (BK) channels, which are input pixels m.. m + BM - 1 at channels
    k0.., loaded by one tiled TMA box of the ``[N*H*W, C]`` matrix view of
    x (rows one pixel pitch apart: ``matrix_pitch``), K-major, 128-byte
    swizzle.
    TMA zero-fills rows past M and channels past C, as in im2col mode."""

    swizzled: bool = True

    @staticmethod
    def matrix_pitch(conv):
        """The pixel pitch of ``conv``'s x when its pixels form one matrix
        (pixel_rows.dense_pitch), or None."""
        shape, strides, _ = irutil.memref_geometry(conv.x.type)
        return pixel_rows.dense_pitch(shape, strides)

    def make_descriptor(self, bk):
        """Host side: x viewed as ``[N*H*W, C]`` (a reinterpret_cast of its
        activation view), its tiled descriptor of ``rows`` x ``bk`` boxes."""
        t = ir.MemRefType(self.conv.x.type)
        shape, _, offset = irutil.memref_geometry(t)
        pitch = self.matrix_pitch(self.conv)
        view_shape, view_strides = [math.prod(shape[:-1]), shape[-1]], [pitch, 1]
        view_type = ir.MemRefType.get(view_shape, t.element_type,
                                      layout=ir.StridedLayoutAttr.get(offset, view_strides))
        view = memref.reinterpret_cast(view_type, self.conv.x, [], [], [], [offset], view_shape,
                                       view_strides)
        self.descriptor = tma_descriptor(view, [self.rows, bk], self.swizzled)
        return self.descriptor

    def load(self, dest_i64, barrier, batch, mn0, k0):
        # A 1x1 filter's one tap: K step k0 is channels k0 .. k0 + BK - 1
        # (C rounded up to BK, zero past C).
        dst = llvm.addrspacecast(_ptr(7), _shared_ptr(dest_i64))
        nvvm.CpAsyncBulkTensorGlobalToSharedClusterOp(dst, self.descriptor, [k0, mn0],
                                                      barrier, [])


@dataclass
class FilterOperand(_ConvTile):
    """B of a forward convolution: ``rows`` (BN) output channels by ``k``
    (BK) input channels of the filter at one tap, K-major; of a data
    gradient (``mn_major``): ``rows`` input channels by ``k`` output
    channels, in boxes of 64 input channels (128 bytes) by BK."""


    def __post_init__(self):
        # [K, taps, C] in memory order (a 1-tap filter's size-1 dim first).
        self.order = physical_order(self.conv.w.type)

    def make_descriptor(self, bk):
        # [K, taps, C] (a data gradient's B: [its K, taps, its N]).
        box = [bk, 1, self.rows // self.pieces] if self.mn_major else [self.rows, 1, bk]
        self.descriptor = tma_descriptor(self.conv.w, [box[d] for d in self.order])
        return self.descriptor

    def load(self, dest_i64, barrier, batch, mn0, k0):
        conv = self.conv
        padded = conv.padded_channels
        tap, c0 = arith.divui(k0, _i(padded)), arith.remui(k0, _i(padded))
        if conv.flip:
            tap = arith.subi(_i(conv.taps - 1), tap)
        if conv.groups > 1:
            # Group ``batch``'s filters: its K (the GEMM's N of a forward
            # convolution, the reduced channels of a data gradient).
            rows = conv.channels if self.mn_major else conv.gemm.n
            offset = arith.muli(batch, _i(rows))
            if self.mn_major:
                c0 = arith.addi(c0, offset)
            else:
                mn0 = arith.addi(mn0, offset)
        for piece in range(self.pieces):
            mn = arith.addi(mn0, _i(piece * SWIZZLE // self.eb)) if piece else mn0
            coords = [c0, tap, mn] if self.mn_major else [mn, tap, c0]
            dest = dest_i64 if not piece else \
                arith.addi(dest_i64, _i(piece * self.tile_bytes // self.pieces, 64))
            dst = llvm.addrspacecast(_ptr(7), _shared_ptr(dest))
            nvvm.CpAsyncBulkTensorGlobalToSharedClusterOp(
                dst, self.descriptor, list(reversed([coords[d] for d in self.order])),
                barrier, [])


@dataclass
class GroupRows:
    """A plain TMA operand (``TmaOperand``) whose rows of M or N are offset
    by ``rows`` per batch index: a grouped filter gradient's dy, whose group
    g is channels g·K/G onward."""

    inner: object
    rows: int

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def make_descriptor(self, bk):
        return self.inner.make_descriptor(bk)

    def load(self, dest_i64, barrier, batch, mn0, k0):
        mn0 = arith.addi(mn0, arith.muli(batch, _i(self.rows)))
        self.inner.load(dest_i64, barrier, batch, mn0, k0)
