"""A strided data gradient as stride-1 implicit GEMMs, one per stride phase.

The forward convolution of stride s, dilation dl and padding pre pairs
input row h with output row o and filter tap r (cross-correlation order)
where h + pre = o * s + r * dl, so

    dx[h] = sum over (o, r) with o * s = h + pre - r * dl of dy[o] * w[r].

Split dx's rows by phase: h = s * i + phi, phi = 0 .. s - 1. Row i of phase
phi meets tap r only if s divides phi + pre - r * dl. With g = gcd(s, dl)
that needs g | phi + pre, and then holds for the taps r = r0, r0 + s / g,
r0 + 2 s / g, ... below R (r0 the least); for such a tap
o = i + c0 - t * dl / g, t its rank among them and
c0 = (phi + pre - r0 * dl) / s. Numbering the T taps from the last,
u = T - 1 - t, the phase is the stride-1 forward convolution

    dx_phi[i] = sum over u of dy[i - pre' + u * dl'] * w[r(T - 1 - u)]

with dilation dl' = dl / g, padding pre' = (T - 1) * dl' - c0 in front and
post' = (H_phi - 1) + (T - 1) * dl' - pre' - (P - 1) behind (P: dy's rows;
either may be negative: rows of dy the phase never reads), over
H_phi = ceil((H - phi) / s) rows. In 2-D and 3-D a phase is one phi per
spatial dim, its taps the product of each dim's: a strided gradient is
prod(s) such convolutions, each multiplying only the taps that meet, where
the gradient of dy with s - 1 zeros between its pixels (the stride-1 one of
a zero-inserted dy) multiplies prod(s) times as much. A phase of no taps
(T = 0 in some dim: a 1 x 1 filter at stride 2 leaves three of four) gets
no GEMM: dx there is 0, or what the fused epilogue makes of 0.

``split`` is that index math, pure Python (test_conv_phases.py reassembles
dx from it against the numpy reference). The rest builds it for tc-sm90
(sm90/__init__.py, ``build_phases``), host side:

* the sub-filters: one launch ahead of the GEMMs copies each phase's taps,
  in its order u, into ``[K, T_phase, C]`` slices of one workspace buffer
  (the filter is small, the copy cheap, and a phase's taps are not one
  stride apart in 2-D: no view of the filter reads them);
* the GEMMs: one launch per phase with taps, each a stride-1 implicit GEMM
  over dy as it lies (TMA's im2col box from -pre' to post'), its K the
  phase's taps x K. One launch a phase, not one launch with the phase on a
  grid dimension: the phases' K loops differ in length (a 3 x 3 filter at
  stride 2 gives phases of 4, 2, 2 and 1 taps) and their M too where H is
  not a multiple of s, and the persistent kernel's scheduler, ring and
  descriptors are the matmul's as they are;
* the outputs: phase phi's rows are dx's pixels (n, s i + phi_h, s j +
  phi_w), not rows of a matrix. Each of the epilogue's ``[M, N]`` views of
  dx-shaped buffers (outputs, and inputs such as a residual) gets a pixel
  view ``[N, H_phi, W_phi, C]`` with strides (H W C, s W C, s C, 1)
  (``pixel_views``); the epilogue reads and writes those, splitting its
  row into (n, i, j) (``gemm.Epilogue.pixels``, pair_epilogue.at). TMA
  stores tiles of consecutive rows, so tc-sm90 stores them from registers,
  16 bytes a thread where the rows allow, as tc-sm80 does any output;
* the empty phases: one launch for them all, a thread 8 channels of a
  pixel (one where C is no multiple of 8), evaluates the fused epilogue on an
  accumulator of 0 at its pixels and stores it (``empty_launch``), so dx is
  written everywhere and a fused epilogue (a bias, an activation's
  backward) sees what the unfused graph does.

A filter whose only phase with taps takes them all in the filter's order
(a 1 x 1 filter) is read where it lies, without the copy.

Taken for every strided data gradient, grouped ones too: their GEMMs'
batch is the groups, the epilogue's views ``[G, M, N]`` and the pixel
views ``[G, N, H_phi, W_phi, C/G]``. (It replaced a launch that wrote dy
with s - 1 zeros between its pixels, whose stride-1 gradient multiplied
the zeros too: prod(s) times the tensor-core work.)
"""

import math
from dataclasses import dataclass, replace
from itertools import product

from mlir import ir
from mlir.dialects import arith, memref, scf

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.tensorcore.emit import erase_replaced, f32 as _f32, idx as _idx
from dnnc.codegen.gpu.tensorcore.fold import digits, thread_launch
from dnnc.codegen.gpu.tensorcore.gemm import Operand
from dnnc.codegen.gpu.tensorcore.pair_epilogue import evaluate, store_lanes


@dataclass(frozen=True)
class DimPhase:
    """One spatial dim of a stride phase: output rows s * i + ``phase`` for
    i < ``out``; ``taps``: the filter taps (cross-correlation order) the
    phase's stride-1 convolution applies, in its tap order u; its
    ``dilation``, ``pre`` and ``post`` padding over dy."""

    phase: int
    out: int
    taps: tuple
    dilation: int
    pre: int
    post: int


@dataclass(frozen=True)
class Phase:
    """A stride phase of every spatial dim (outermost first)."""

    dims: tuple

    @property
    def phase(self):
        return [d.phase for d in self.dims]

    @property
    def out(self):
        return [d.out for d in self.dims]

    @property
    def filter(self):
        return [len(d.taps) for d in self.dims]

    @property
    def taps(self):
        """The filter taps, each a tuple over the dims, in the phase's
        row-major tap order."""
        return list(product(*(d.taps for d in self.dims)))

    @property
    def empty(self):
        return any(not d.taps for d in self.dims)


def split_dim(size, dy_size, window, stride, dilation, pre):
    """The DimPhases of one spatial dim: dx's ``size`` rows, dy's
    ``dy_size``, ``window`` filter taps, the forward ``stride``,
    ``dilation`` and ``pre`` padding. Phases past dx (``size`` < s) are
    left out."""
    g = math.gcd(stride, dilation)
    step = stride // g                  # taps of one phase are s / g apart
    dl = dilation // g
    out = []
    for phi in range(min(stride, size)):
        rows = -(-(size - phi) // stride)
        taps = [r for r in range(window) if (phi + pre - r * dilation) % stride == 0]
        assert all(b - a == step for a, b in zip(taps, taps[1:]))
        if not taps:
            out.append(DimPhase(phi, rows, (), dl, 0, 0))
            continue
        t = len(taps)
        c0 = (phi + pre - taps[0] * dilation) // stride
        first = (t - 1) * dl - c0
        last = (rows - 1) + (t - 1) * dl - first - (dy_size - 1)
        out.append(DimPhase(phi, rows, tuple(reversed(taps)), dl, first, last))
    return out


def split(size, dy_size, window, stride, dilation, pre):
    """The Phases of a strided data gradient (lists per spatial dim, as
    split_dim takes them), in row-major phase order."""
    per_dim = [split_dim(*args) for args in zip(size, dy_size, window, stride, dilation, pre)]
    return [Phase(dims) for dims in product(*per_dim)]


def tap_index(tap, window, flip):
    """The flattened index in the filter's ``[K, taps, C]`` view of ``tap``
    (cross-correlation order per dim; ``flip``: the forward convolution is
    in convolution mode, its filter read reversed)."""
    index = 0
    for r, n in zip(tap, window):
        index = index * n + ((n - 1 - r) if flip else r)
    return index


# -- the build (host side), for either strategy --------------------------------


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
    pitch = irutil.memref_geometry(w.type)[1][1]
    pitch = max(pitch, -(-c // 8) * 8)
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
    for view in epilogue_buffers(conv.gemm.epilogue):
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


def phase_conv(conv, phase, w_view, pixels):
    """The stride-1 Conv of ``phase`` (not empty): dy as it lies, the
    phase's sub-filter ``w_view``, its epilogue storing through ``pixels``."""
    gemm = conv.gemm
    m = gemm.m // math.prod(conv.out) * math.prod(phase.out)
    k = math.prod(phase.filter) * conv.padded_channels
    b = Operand(w_view, {"batch": None, "mn": 2, "k": 0}, gemm.b.element)
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


def build(fn, conv, check, build_gemm):
    """Replace kernel function ``fn``'s body by the kernels of strided data
    gradient ``conv`` (``phased``) split by stride phase: the sub-filters'
    copy, a stride-1 implicit GEMM per phase with taps, a launch per phase
    without. ``check(part)`` raises the strategy's NotSupported for a
    phase's Conv it cannot build (called for every phase before any IR is
    made, on the whole filter's view); ``build_gemm(part)`` builds one,
    leaving the body's old ops (the caller's Kernel.build(erase=False)), and
    returns its notes. Returns (the phases, the first GEMM's notes)."""
    split = phases_of(conv)
    full = [p for p in split if not p.empty]
    for phase in full:
        check(phase_conv(conv, phase, conv.w, None))
    body = irutil.body(fn)
    old = [op.operation for op in body.operations]
    ret = old[-1]
    notes, empty = [], []
    with ir.InsertionPoint(ret), ret.location:
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


def note(conv, split):
    """What the plan says of the split."""
    taps = "/".join(str(math.prod(p.filter)) for p in split)
    empty = sum(p.empty for p in split)
    zeros = f"; {empty} of no filter taps, written by the epilogue of 0" if empty else ""
    return (f"stride {conv.stride}: {len(split)} stride phases (tensorcore/phases.py), a "
            f"stride-1 GEMM each of {taps} filter taps x {conv.channels} channels{zeros}")
