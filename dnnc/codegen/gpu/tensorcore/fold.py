"""A convolution of few channels (an RGB stem: C = 3) with its filter's
columns folded into the channels, so that the implicit GEMM's tiles are not
mostly zeros: the forward convolution and the filter gradient.

The implicit GEMM reads each filter tap's channels in whole K steps of 64
bf16 (sm90/im2col.py): a 7 x 7 filter over 3 channels is 49 steps of which
3/64 is data. Folding the S columns of the filter into the channels,

    x'[n, h, q, s * C + c] = x[n, h, q * stride_w + s * dilation_w - pre_w, c]
    w'[k, r, s * C + c]    = w[k, c, r, s]      (s: S - 1 - s in convolution mode)

turns it into a convolution of x' (the output's Q columns wide, S x C
channels, zeros where the column falls in the padding) by an R x 1 filter
with stride (stride_h, 1): 7 steps of 21/64 data, a seventh of the tensor
core work, for one pass that writes x' (S / stride_w times x's size, its
pixels padded to 16 bytes) and a copy of the filter. Both are launches of
the convolution's kernel function ahead of the GEMM (``fold``, host side),
into buffers of the plan's workspace: x' one thread a pixel, which reads
its S x C values and stores the pixel's pitch in 16-byte pieces, w' one
thread an element. On an H200 (2026-11-28) the x' of the stem's filter
gradient over 128 images (154 MB) took 0.235 ms written one thread an
element, 0.081 ms a thread a pixel.

A filter gradient dw = dy^T im2col(x) has no filter to copy: its columns
(tap, channel) of a KRSC dw are, for each of the R outer taps, the S x C
folded channels in the order x' holds them, so the folded gradient of x'
by an R x 1 filter writes dw where it lies, the outer taps the GEMM's batch
(tensorcore/wgrad_taps.py), each a [K, S x C] GEMM over N·P·Q. TMA cannot
step x's 6-byte pixels, so unfolded such a gradient runs on tc-sm80, its
tiles spanning taps element by element; folded, tc-sm90 reads x' by TMA
in im2col mode. In convolution mode x' holds the columns reversed
(s -> S - 1 - s) and the loader reverses the outer taps.

Taken (``applies``) for a forward convolution or a one-group 16-bit filter
gradient whose C is below 8 (a pixel of less than 16 bytes, which TMA reads
only through a padded pitch) and whose filter has more than one column,
where the folded channels fit one K step (forward: S x C at most BK) or one
tile's columns (gradient: at most ``wgrad_taps.TAP_TILE``).
"""

import math
from dataclasses import replace

from mlir import ir
from mlir.dialects import arith, gpu, memref, scf, vector

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.tensorcore import wgrad_taps
from dnnc.codegen.gpu.tensorcore.emit import idx as _idx
from dnnc.codegen.gpu.tensorcore.gemm import Operand

THREADS = 256
UNIT = 16           # bytes: the pitch TMA steps pixels by


def folds(direction, channels, window, eb, bk=None, groups=1):
    """Whether a ``direction`` convolution of ``groups`` groups of
    ``channels`` channels of ``eb`` bytes and filter ``window`` is folded,
    for K steps of ``bk`` (a forward convolution's)."""
    if channels * eb >= UNIT or window[-1] < 2:
        return False
    if direction == "fprop":
        return channels * window[-1] <= bk
    return direction == "wgrad" and groups == 1 and eb == 2 and \
        channels * window[-1] <= wgrad_taps.TAP_TILE


def applies(conv, bk):
    """Whether ``conv`` (tensorcore/conv.Conv) is folded for K steps of ``bk``."""
    eb = irutil.element_bytes(ir.MemRefType(conv.x.type).element_type)
    return folds(conv.direction, conv.channels, conv.filter, eb, bk, conv.groups)


def outer_taps(window):
    """The taps of a folded filter (its R x 1 rows): a folded filter
    gradient's GEMM batch where there are several."""
    return math.prod(window[:-1])


def pixel_pitch(channels, element):
    unit = UNIT // irutil.element_bytes(element)
    return -(-channels // unit) * unit


def thread_launch(total, body):
    """A launch of one thread per element of ``total``: ``body(i)`` with i
    the element's index (an index value), for i < total."""
    blocks = -(-total // THREADS)
    launch = gpu.LaunchOp((_idx(blocks), _idx(1), _idx(1)), (_idx(THREADS), _idx(1), _idx(1)))
    with ir.InsertionPoint(launch.regions[0].blocks[0]):
        i = arith.addi(arith.muli(gpu.block_id(gpu.Dimension.x), _idx(THREADS)),
                       gpu.thread_id(gpu.Dimension.x))
        inside = arith.cmpi(arith.CmpIPredicate.ult, i, _idx(total))
        branch = scf.IfOp(inside)
        with ir.InsertionPoint(branch.then_block):
            body(i)
            scf.YieldOp([])
        gpu.TerminatorOp()
    return launch.operation


def digits(i, sizes):
    """Index ``i`` as digits of mixed radix ``sizes`` (outermost first)."""
    out = []
    for size in reversed(sizes):
        out.append(arith.remui(i, _idx(size)))
        i = arith.divui(i, _idx(size))
    return list(reversed(out))


def fold(conv):
    """Emit, at the current insertion point (host side), the launches that
    write x' (and a forward convolution's w'); return (the folded Conv, the
    ops made, which the kernel's build keeps). A filter gradient's GEMM
    (its N of S x C columns, the outer taps its batch) is the folded one
    already: conv.match sized it and the epilogue's views of dw."""
    wgrad = conv.direction == "wgrad"
    element = ir.MemRefType(conv.x.type).element_type
    c, s_count = conv.channels, conv.filter[-1]
    channels = c * s_count
    pitch = pixel_pitch(channels, element)
    x_shape = list(ir.MemRefType(conv.x.type).shape)   # [N, (D,) H, W, C]
    spatial = x_shape[1:-1]
    folded_spatial = spatial[:-1] + [conv.out[-1]]
    n = x_shape[0]
    taps = outer_taps(conv.filter)
    zero = arith.constant(element, 0.0)
    x_buffer = memref.alloc(ir.MemRefType.get([n] + folded_spatial + [pitch], element), [], [])
    made = [irutil.defining_op(x_buffer), irutil.defining_op(zero)]

    unit = UNIT // irutil.element_bytes(element)
    vector_type = ir.VectorType.get([unit], element)

    def write_x(i):
        # One thread an x' pixel: its S columns' C channels (read where the
        # column lies inside x, else zero), then zeros to the pitch, in
        # 16-byte stores.
        pixel = digits(i, [n] + folded_spatial)
        first = arith.subi(arith.muli(pixel[-1], _idx(conv.stride[-1])), _idx(conv.pre[-1]))
        values = []
        for s in range(s_count):
            # dw's column s meets x at S - 1 - s (the forward convolution
            # reverses w' instead).
            tap = s_count - 1 - s if wgrad and conv.flip else s
            column = arith.addi(first, _idx(tap * conv.dilation[-1])) if tap else first
            # column < 0 wraps around: one unsigned compare checks both ends.
            inside = arith.cmpi(arith.CmpIPredicate.ult, column, _idx(spatial[-1]))
            safe = arith.select(inside, column, _idx(0))
            for ch in range(c):
                got = memref.load(conv.x, pixel[:-1] + [safe, _idx(ch)])
                values.append(arith.select(inside, got, zero))
        values += [zero] * (pitch - channels)
        for v in range(0, pitch, unit):
            vector.store(vector.from_elements(vector_type, values[v:v + unit]), x_buffer,
                         pixel + [_idx(v)], alignment=UNIT)

    def write_w(i):
        kk, tap, j = digits(i, [k, taps, channels])
        s, ch = arith.divui(j, _idx(c)), arith.remui(j, _idx(c))
        if conv.flip:
            # Convolution mode: the whole tap index reversed (the loader
            # reverses the outer taps; the columns are reversed here).
            s = arith.subi(_idx(s_count - 1), s)
        source = arith.addi(arith.muli(tap, _idx(s_count)), s)
        memref.store(memref.load(conv.w, [kk, source, ch]), w_buffer, [kk, tap, j])

    made.append(thread_launch(n * math.prod(folded_spatial), write_x))
    x_type = ir.MemRefType.get([n] + folded_spatial + [channels], element,
                               layout=ir.StridedLayoutAttr.get(0, irutil.memref_geometry(
                                   x_buffer.type)[1]))
    x_view = memref.reinterpret_cast(x_type, x_buffer, [], [], [], [0], list(x_type.shape),
                                     irutil.memref_geometry(x_buffer.type)[1])
    made.append(irutil.defining_op(x_view))
    gemm = conv.gemm
    folded = replace(
        conv, x=x_view, channels=channels, filter=conv.filter[:-1] + [1],
        stride=conv.stride[:-1] + [1], dilation=conv.dilation[:-1] + [1],
        pre=conv.pre[:-1] + [0], post=conv.post[:-1] + [0])
    rank = len(x_shape)
    if wgrad:
        # B: x' by im2col, its S x C channels the GEMM's N.
        b = Operand(x_view, {"batch": None, "mn": rank - 1, "k": 0}, gemm.b.element)
        folded.gemm = replace(gemm, b=b)
        return folded, made
    k = list(ir.MemRefType(conv.w.type).shape)[0]
    w_buffer = memref.alloc(ir.MemRefType.get([k, taps, pitch], element), [], [])
    made.append(irutil.defining_op(w_buffer))
    made.append(thread_launch(k * taps * channels, write_w))
    w_type = ir.MemRefType.get([k, taps, channels], element,
                               layout=ir.StridedLayoutAttr.get(0, [taps * pitch, pitch, 1]))
    w_view = memref.reinterpret_cast(w_type, w_buffer, [], [], [], [0], list(w_type.shape),
                                     [taps * pitch, pitch, 1])
    made.append(irutil.defining_op(w_view))
    padded = gemm.k // conv.taps                         # one tap's K: C rounded up to BK
    a = Operand(x_view, {"batch": None, "mn": 0, "k": rank - 1}, gemm.a.element)
    b = Operand(w_view, {"batch": None, "mn": 0, "k": 2}, gemm.b.element)
    folded.w = w_view
    folded.gemm = replace(gemm, a=a, b=b, k=taps * padded)
    return folded, made
