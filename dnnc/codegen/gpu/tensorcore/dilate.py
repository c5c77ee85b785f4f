"""A grouped strided data gradient as the stride-1 one of dy with zeros
inserted.

The forward convolution of stride s pairs padded input row o * s + r * dl
with dy[o] and w[r], so dx[h] gathers dy[o] * w[r] over h + pre = o * s +
r * dl: the rows between dy's are missing, which im2col cannot step. Written
out with s - 1 zeros between dy's rows,

    z[n, a, k] = dy[n, (a - off) / s, k]   where (a - off) is a multiple of s
                                            and (a - off) / s is a row of dy
               = 0                          elsewhere, off = (R - 1) * dl - pre

over a = 0 .. H + (R - 1) * dl - 1 (the data gradient's padding inside it),
dx is the stride-1, unpadded forward convolution of z by the flipped filter
(conv.py: its ``inserted`` offsets). One launch of the kernel function
ahead of the GEMM writes z, one thread an element, into a buffer of the
plan's workspace, its pixels padded to 16 bytes.

This costs s^2 (s x s in 2-D) times the tensor-core work of the gradient:
the GEMM multiplies the zeros too. A strided data gradient of one group is
split by stride phase instead (phases.py), a stride-1 GEMM per phase and no
zeros multiplied; this stays for a grouped one, whose epilogue views carry
the groups' batch (``[G, M, N]``), which the phases' pixel views do not.
"""

import math
from dataclasses import replace

from mlir import ir
from mlir.dialects import arith, memref, scf

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.tensorcore.emit import idx as _idx
from dnnc.codegen.gpu.tensorcore.fold import digits, pixel_pitch, thread_launch
from dnnc.codegen.gpu.tensorcore.gemm import Operand


def dilate(conv):
    """Emit, at the current insertion point (host side), the launch that
    writes z; return (the Conv over z, the ops made, which the kernel's
    build keeps)."""
    dy = conv.x                                   # [N, *P, K], as it lies
    element = ir.MemRefType(dy.type).element_type
    shape = list(ir.MemRefType(dy.type).shape)
    n, pixels, channels = shape[0], shape[1:-1], shape[-1]
    lengths = [h + (r - 1) * d for h, r, d in zip(conv.out, conv.filter, conv.dilation)]
    pitch = pixel_pitch(channels, element)
    z = memref.alloc(ir.MemRefType.get([n] + lengths + [pitch], element), [], [])
    zero = arith.constant(element, 0.0)
    made = [irutil.defining_op(z), irutil.defining_op(zero)]

    def write(i):
        image, *at, k = digits(i, [n] + lengths + [channels])
        rows, inside = [], None
        for a, off, s, p in zip(at, conv.inserted, conv.stride, pixels):
            t = arith.subi(a, _idx(off))
            row = arith.divsi(t, _idx(s)) if s != 1 else t
            ok = arith.andi(arith.cmpi(arith.CmpIPredicate.sge, t, _idx(0)),
                            arith.cmpi(arith.CmpIPredicate.slt, row, _idx(p)))
            if s != 1:
                ok = arith.andi(ok, arith.cmpi(arith.CmpIPredicate.eq,
                                               arith.remsi(t, _idx(s)), _idx(0)))
            inside = ok if inside is None else arith.andi(inside, ok)
            rows.append(row)
        branch = scf.IfOp(inside, [element], has_else=True)
        with ir.InsertionPoint(branch.then_block):
            scf.YieldOp([memref.load(dy, [image] + rows + [k])])
        with ir.InsertionPoint(branch.else_block):
            scf.YieldOp([zero])
        memref.store(branch.results[0], z, [image] + at + [k])

    made.append(thread_launch(n * math.prod(lengths) * channels, write))
    strides = irutil.memref_geometry(z.type)[1]
    view_type = ir.MemRefType.get([n] + lengths + [channels], element,
                                  layout=ir.StridedLayoutAttr.get(0, strides))
    view = memref.reinterpret_cast(view_type, z, [], [], [], [0], list(view_type.shape),
                                   strides)
    made.append(irutil.defining_op(view))
    nd = len(lengths)
    dilated = replace(conv, x=view, stride=[1] * nd, inserted=None)
    a = Operand(view, {"batch": None, "mn": 0, "k": nd + 1}, conv.gemm.a.element)
    dilated.gemm = replace(conv.gemm, a=a)
    return dilated, made
