"""A forward convolution of few channels (an RGB stem: C = 3) with its
filter's columns folded into the channels, so that the implicit GEMM's K
steps are not mostly zeros.

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
one thread an element, into buffers of the plan's workspace.

Taken (``applies``) for a forward convolution whose C is below 8 (a pixel
of less than 16 bytes, which TMA reads only through a padded pitch) and
whose filter has more than one column, where the folded channels fit one
K step (S x C at most 64).
"""

import math
from dataclasses import replace

from mlir import ir
from mlir.dialects import arith, gpu, memref, scf

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.tensorcore.emit import idx as _idx
from dnnc.codegen.gpu.tensorcore.gemm import Operand

THREADS = 256
UNIT = 16           # bytes: the pitch TMA steps pixels by


def folds(direction, channels, window, eb, bk):
    """Whether a ``direction`` convolution of ``channels`` channels of
    ``eb`` bytes and filter ``window`` is folded, for K steps of ``bk``."""
    return direction == "fprop" and channels * eb < UNIT and window[-1] > 1 and \
        channels * window[-1] <= bk


def applies(conv, bk):
    """Whether ``conv`` (tensorcore/conv.Conv) is folded for K steps of ``bk``."""
    eb = irutil.element_bytes(ir.MemRefType(conv.x.type).element_type)
    return folds(conv.direction, conv.channels, conv.filter, eb, bk)


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
    write x' and w'; return (the folded Conv, the ops made, which the
    kernel's build keeps)."""
    element = ir.MemRefType(conv.x.type).element_type
    c, s_count = conv.channels, conv.filter[-1]
    channels = c * s_count
    pitch = pixel_pitch(channels, element)
    x_shape = list(ir.MemRefType(conv.x.type).shape)   # [N, (D,) H, W, C]
    spatial = x_shape[1:-1]
    folded_spatial = spatial[:-1] + [conv.out[-1]]
    n = x_shape[0]
    k = list(ir.MemRefType(conv.w.type).shape)[0]
    outer_taps = math.prod(conv.filter[:-1])
    zero = arith.constant(element, 0.0)
    x_buffer = memref.alloc(ir.MemRefType.get([n] + folded_spatial + [pitch], element), [], [])
    w_buffer = memref.alloc(ir.MemRefType.get([k, outer_taps, pitch], element), [], [])
    made = [irutil.defining_op(x_buffer), irutil.defining_op(w_buffer),
            irutil.defining_op(zero)]

    def write_x(i):
        *pixel, j = digits(i, [n] + folded_spatial + [channels])
        s, ch = arith.divui(j, _idx(c)), arith.remui(j, _idx(c))
        column = arith.subi(arith.addi(arith.muli(pixel[-1], _idx(conv.stride[-1])),
                                       arith.muli(s, _idx(conv.dilation[-1]))),
                            _idx(conv.pre[-1]))
        # column < 0 wraps around: one unsigned compare checks both ends.
        inside = arith.cmpi(arith.CmpIPredicate.ult, column, _idx(spatial[-1]))
        branch = scf.IfOp(inside, [element], has_else=True)
        with ir.InsertionPoint(branch.then_block):
            scf.YieldOp([memref.load(conv.x, pixel[:-1] + [column, ch])])
        with ir.InsertionPoint(branch.else_block):
            scf.YieldOp([zero])
        memref.store(branch.results[0], x_buffer, pixel + [j])

    def write_w(i):
        kk, tap, j = digits(i, [k, outer_taps, channels])
        s, ch = arith.divui(j, _idx(c)), arith.remui(j, _idx(c))
        if conv.flip:
            # Convolution mode: the whole tap index reversed (the loader
            # reverses the outer taps; the columns are reversed here).
            s = arith.subi(_idx(s_count - 1), s)
        source = arith.addi(arith.muli(tap, _idx(s_count)), s)
        memref.store(memref.load(conv.w, [kk, source, ch]), w_buffer, [kk, tap, j])

    made.append(thread_launch(n * math.prod(folded_spatial) * channels, write_x))
    made.append(thread_launch(k * outer_taps * channels, write_w))
    x_type = ir.MemRefType.get([n] + folded_spatial + [channels], element,
                               layout=ir.StridedLayoutAttr.get(0, irutil.memref_geometry(
                                   x_buffer.type)[1]))
    w_type = ir.MemRefType.get([k, outer_taps, channels], element,
                               layout=ir.StridedLayoutAttr.get(0, [outer_taps * pitch, pitch, 1]))
    x_view = memref.reinterpret_cast(x_type, x_buffer, [], [], [], [0], list(x_type.shape),
                                     irutil.memref_geometry(x_buffer.type)[1])
    w_view = memref.reinterpret_cast(w_type, w_buffer, [], [], [], [0], list(w_type.shape),
                                     [outer_taps * pitch, pitch, 1])
    made += [irutil.defining_op(x_view), irutil.defining_op(w_view)]
    gemm = conv.gemm
    folded = replace(
        conv, x=x_view, w=w_view, channels=channels, filter=conv.filter[:-1] + [1],
        stride=conv.stride[:-1] + [1], dilation=conv.dilation[:-1] + [1],
        pre=conv.pre[:-1] + [0], post=conv.post[:-1] + [0])
    rank = len(x_shape)
    padded = gemm.k // conv.taps                         # one tap's K: C rounded up to BK
    a = Operand(x_view, {"batch": None, "mn": 0, "k": rank - 1}, gemm.a.element)
    b = Operand(w_view, {"batch": None, "mn": 0, "k": 2}, gemm.b.element)
    folded.gemm = replace(gemm, a=a, b=b, k=outer_taps * padded)
    return folded, made
