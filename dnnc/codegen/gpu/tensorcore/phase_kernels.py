"""The kernels of a strided data gradient split by stride phase
(phases.py: the index math and the design), built host side for either
tensor-core strategy: ``build`` emits the sub-filters' copy
(``sub_filters``), a stride-1 implicit GEMM per phase with taps (the
strategy's, through ``build_gemm``; ``phase_conv`` is its Conv, its
epilogue storing through ``pixel_views``) and one launch for the phases
without taps (``empty_launch``).
"""

import math
from dataclasses import replace

from mlir import ir
from mlir.dialects import arith, memref, scf

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.tensorcore.emit import erase_replaced, f32 as _f32, idx as _idx
from dnnc.codegen.gpu.tensorcore.fold import digits, thread_launch
from dnnc.codegen.gpu.tensorcore.gemm import Operand
from dnnc.codegen.gpu.tensorcore.pair_epilogue import evaluate, store_lanes
from dnnc.codegen.gpu.tensorcore.phases import split, tap_index


def phases_of(conv):
    """The Phases of strided data gradient ``conv`` (tensorcore/conv.Conv,
    ``phased``: its geometry the forward convolution's)."""
    dy_size = list(ir.MemRefType(conv.x.type).shape)[1:-1]
    return split(conv.out, dy_size, conv.filter, conv.stride, conv.dilation, conv.pre)


def sub_filters(conv, phases):
    """Emit the launch that copies every phase's taps of the filter into one
    workspace buffer; return {phase index: its ``[K, T, C]`` view} (the
    filter's own view where one phase takes every tap in order)."""
    w = conv.w                                    # [K, taps, C] view of the filter
    element = ir.MemRefType(w.type).element_type
    k, _, c = list(ir.MemRefType(w.type).shape)
    # Taps 16 bytes apart at least, the steps TMA reads the buffer in.
    unit = 16 // irutil.element_bytes(element)
    pitch = -(-c // unit) * unit
    lists = [(i, p.taps) for i, p in enumerate(phases) if not p.empty]
    total = sum(len(t) for _, t in lists)
    # Each copied tap's source tap, in the buffer's tap order.
    sources = [tap_index(tap, conv.filter, conv.flip) for _, taps in lists for tap in taps]
    if len(lists) == 1 and sources == list(range(conv.taps)):
        return {lists[0][0]: w}
    buffer = memref.alloc(ir.MemRefType.get([k, total, pitch], element), [], [])

    def write(i):
        kk, tap, ch = digits(i, [k, total, c])
        # The source tap of buffer tap ``tap``: a select chain over the
        # (few: at most the filter's taps) copied taps.
        source = _idx(sources[0])
        for t, s in enumerate(sources[1:], 1):
            source = arith.select(arith.cmpi(arith.CmpIPredicate.eq, tap, _idx(t)),
                                  _idx(s), source)
        memref.store(memref.load(w, [kk, source, ch]), buffer, [kk, tap, ch])

    thread_launch(k * total * c, write)
    views, first = {}, 0
    for index, taps in lists:
        shape = [k, len(taps), c]
        strides = [total * pitch, pitch, 1]
        offset = first * pitch
        t = ir.MemRefType.get(shape, element, layout=ir.StridedLayoutAttr.get(offset, strides))
        views[index] = memref.reinterpret_cast(t, buffer, [], [], [], [offset], shape, strides)
        first += len(taps)
    return views


def epilogue_buffers(epilogue):
    """The buffers the epilogue reads or writes in memory (its views)."""
    out = []
    for value in [epilogue.accumulator] + list(epilogue.outputs or []) + \
            [v for step in epilogue.steps for v, _ in step.inputs]:
        op = irutil.defining_op(value)
        if op is not None and op.name == "memref.reinterpret_cast" and value not in out:
            out.append(value)
    return out


def pixel_views(conv, phase):
    """{[M, N] view: (its ``[images, *phase.out, N]`` pixel view, the row's
    radices)} for ``phase``, over the epilogue's views of dx-shaped buffers
    (rows: dx's pixels in N·H·W order; a grouped gradient's ``[G, M, N]``
    views keep their batch dim first)."""
    images = conv.gemm.m // math.prod(conv.out)
    sizes = [images] + phase.out
    pixels = {}
    # dx's pixel strides in rows: [H·W, W, 1] (3-D: [D·H·W, H·W, W, 1]).
    pitch = [math.prod(conv.out[d:]) for d in range(len(conv.out) + 1)]
    split = conv.gemm.epilogue.pixels or {}
    for view in epilogue_buffers(conv.gemm.epilogue):
        if view in split:
            pixels[view] = _phase_of_split(split[view], phase, sizes, conv.stride)
            continue
        shape, strides, offset = irutil.memref_geometry(view.type)
        if shape[-2] != conv.gemm.m or shape[-2] == 1:
            continue
        *lead, row, col = strides
        source = irutil.defining_op(view).operands[0]
        first = offset + row * sum(p * q for p, q in zip(phase.phase, pitch[1:]))
        view_shape = shape[:-2] + sizes + [shape[-1]]
        view_strides = lead + [row * pitch[0]] + [row * p * s for p, s in
                                                  zip(pitch[1:], conv.stride)] + [col]
        t = ir.MemRefType.get(view_shape, ir.MemRefType(view.type).element_type,
                              layout=ir.StridedLayoutAttr.get(first, view_strides))
        with ir.InsertionPoint.after(irutil.defining_op(view)), ir.Location.unknown():
            pixel = memref.reinterpret_cast(t, source, [], [], [], [first], view_shape,
                                            view_strides)
        pixels[view] = (pixel, sizes)
    return pixels


def _phase_of_split(entry, phase, sizes, stride):
    """The pixel view entry (pair_epilogue.at) of ``phase`` of an input
    read through a split view (conv_views.Views._split: ``entry``, its rows
    dx's pixels): the rows' image dim as it is, each spatial dim d from
    pixel phase_d on, stride_d apart; the columns as they are."""
    # (A data gradient's rows always split where its view is split: its
    # columns and groups are one dim each, which flatten.)
    pixel, rows, cols, batches = entry
    shape, strides, offset = irutil.memref_geometry(pixel.type)
    lead = len(shape) - len(rows) - (len(cols) if cols else 1)
    steps = strides[lead + 1:lead + len(rows)]
    first = offset + sum(p * s for p, s in zip(phase.phase, steps))
    view_shape = shape[:lead] + sizes + shape[lead + len(rows):]
    view_strides = strides[:lead + 1] + [s * t for s, t in zip(steps, stride)] + \
        strides[lead + len(rows):]
    t = ir.MemRefType.get(view_shape, ir.MemRefType(pixel.type).element_type,
                          layout=ir.StridedLayoutAttr.get(first, view_strides))
    with ir.InsertionPoint.after(irutil.defining_op(pixel)), ir.Location.unknown():
        view = memref.reinterpret_cast(t, irutil.defining_op(pixel).operands[0], [], [], [],
                                       [first], view_shape, view_strides)
    return view, sizes, cols, batches


def phase_conv(conv, phase, w_view, pixels):
    """The stride-1 Conv of ``phase`` (not empty): dy as it lies, the
    phase's sub-filter ``w_view``, its epilogue storing through ``pixels``."""
    gemm = conv.gemm
    m = gemm.m // math.prod(conv.out) * math.prod(phase.out)
    k = math.prod(phase.filter) * conv.padded_channels
    # The sub-filter lies as the whole filter does: ``[K, T, C]`` read
    # C-contiguous, or ``[C, T, K]`` where a tf32 gradient copied it K-major.
    b = Operand(w_view, dict(gemm.b.dims), gemm.b.element)
    epilogue = replace(gemm.epilogue, pixels=pixels)
    out = replace(conv, w=w_view, filter=phase.filter, out=phase.out,
                  stride=[1] * len(phase.dims), dilation=[d.dilation for d in phase.dims],
                  pre=[d.pre for d in phase.dims], post=[d.post for d in phase.dims],
                  flip=False, phased=False)
    out.gemm = replace(gemm, b=b, m=m, k=k, epilogue=epilogue)
    return out


def empty_launch(conv, empty):
    """Emit the launch that writes the empty phases' pixels (``empty``:
    [(Phase, its pixel views)]): the epilogue of an accumulator of 0, a
    thread 8 consecutive channels of a pixel (one where C is no multiple of
    8), stored as vectors of up to 16 bytes; one launch for them all, each
    thread in one phase's range of the launch."""
    epilogue = conv.gemm.epilogue
    stored = epilogue.stored([])          # a convolution's: its output views
    n = conv.gemm.n
    width = 8 if n % 8 == 0 else 1
    images = conv.gemm.m // math.prod(conv.out)
    # A grouped gradient's views are [G, M, N]: a batch index first.
    batched = len(ir.MemRefType(epilogue.accumulator.type).shape) == 3
    batch = conv.gemm.batch if batched else 1
    counts = [batch * images * math.prod(phase.out) * (n // width) for phase, _ in empty]

    def write_phase(i, phase, pixels):
        rows = images * math.prod(phase.out)
        b, row, group = digits(i, [batch, rows, n // width])
        first = arith.muli(group, _idx(width)) if width != 1 else group
        lead = [b] if batched else []
        envs = []
        for e in range(width):
            col = arith.addi(first, _idx(e)) if e else first
            envs.append(evaluate(epilogue.accumulator, epilogue.steps, _f32(0.0),
                                 lead + [row, col], pixels=pixels))
        for buffer in stored:
            # 16-byte vectors at most: the alignment the runtime checks.
            lanes = max(1, min(width, 16 // irutil.element_bytes(
                ir.MemRefType(buffer.type).element_type)))
            for e in range(0, width, lanes):
                col = arith.addi(first, _idx(e)) if e else first
                store_lanes([env[buffer] for env in envs[e:e + lanes]], buffer,
                            lead + [row, col], pixels=pixels)

    def write(i, index=0, start=0):
        phase, pixels = empty[index]
        if index == len(empty) - 1:
            write_phase(arith.subi(i, _idx(start)) if start else i, phase, pixels)
            return
        end = start + counts[index]
        branch = scf.IfOp(arith.cmpi(arith.CmpIPredicate.ult, i, _idx(end)), has_else=True)
        with ir.InsertionPoint(branch.then_block):
            write_phase(arith.subi(i, _idx(start)) if start else i, phase, pixels)
            scf.YieldOp([])
        with ir.InsertionPoint(branch.else_block):
            write(i, index + 1, end)
            scf.YieldOp([])

    return thread_launch(sum(counts), write)


def build(fn, conv, check, build_gemm, prepare=None):
    """Replace kernel function ``fn``'s body by the kernels of strided data
    gradient ``conv`` (``phased``) split by stride phase: the sub-filters'
    copy, a stride-1 implicit GEMM per phase with taps, a launch per phase
    without. ``check(part)`` raises the strategy's NotSupported for a
    phase's Conv it cannot build (called for every phase before any IR is
    made, on the whole filter's view); ``build_gemm(part)`` builds one,
    leaving the body's old ops (the caller's Kernel.build(erase=False)), and
    returns its notes. ``prepare(conv)``, given, emits what the GEMMs read
    instead of the filter (a copy) ahead of the sub-filters, and returns the
    Conv reading it. Returns (the phases, the first GEMM's notes)."""
    split = phases_of(conv)
    full = [p for p in split if not p.empty]
    for phase in full:
        check(phase_conv(conv, phase, conv.w, None))
    body = irutil.body(fn)
    old = [op.operation for op in body.operations]
    ret = old[-1]
    notes, empty = [], []
    with ir.InsertionPoint(ret), ret.location:
        if full and prepare is not None:
            conv = prepare(conv)
        views = sub_filters(conv, split) if full else {}
        for index, phase in enumerate(split):
            pixels = pixel_views(conv, phase)
            if phase.empty:
                empty.append((phase, pixels))
            else:
                part_notes = build_gemm(phase_conv(conv, phase, views[index], pixels))
                notes = notes or part_notes
        if empty:
            empty_launch(conv, empty)
    # The linalg ops and the views nothing reads go (the whole dx's).
    erase_replaced(old[:-1])
    return split, notes
