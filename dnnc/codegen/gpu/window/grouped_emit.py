"""Grouped convolutions of a few channels a group (ResNeXt's 32 groups of 4,
2 / 4 / 8 channels a group), forward and data gradient, on the
simt-depthwise strategy: the depthwise launch and threads
(depthwise_emit.py, depthwise_dgrad.py) reading their inputs another way,
``GroupedThread`` and ``GroupedDgradThread``.

``y[n, k, o] = sum over c < Cg and taps t of x[n, (k / Kg) Cg + c, o s + t
dl - pre] * w[k, c, t]`` (Kg = K / G output channels a group). Channels
this few per group are no implicit GEMM for the tensor cores (tc-sm90
reads a group's channels in whole K steps of 64): Cg x taps multiply-adds
per output over Cg + Kg channels read is a direct convolution, close to
memory-bound, as a depthwise one is.

A thread owns ``width`` consecutive output channels (one 16-byte vector of
y), where ``width`` is a multiple of Kg (the vector holds whole groups:
ResNeXt's 4 a group, 8 a vector, two groups) or a divisor of it (a group
spans whole vectors). Those outputs read the input channels of their
groups: a span of ``Cg * max(1, width / Kg)`` channels of x starting at
``(k0 / Kg) Cg``, loaded once per pixel as 16-byte (or narrower) vectors and
converted to f32 once. For input channel c of the group, output lane j
takes span element ``(j / Kg) Cg + c`` (``c`` where a group spans the
vector): a permutation known when the kernel is built, so each product is
a vector fma of f32 registers picked from the span, which costs no
instruction (vector.from_elements of scalars already in registers). The
filters sit in shared memory as [tap, c, channel]: the weights of tap t
and input channel c for the thread's outputs are one vector.

Per row of taps the pixels are loaded as in the forward (each once for
every output of the tile that reads it), the taps summed in row-major order
and, within a tap, the group's input channels in order.

A data gradient is the same with the roles turned round (``SpanInputs``):
a thread owns ``width`` dx channels, which read the Kg dy channels of their
groups (``dx[c] = sum over i < Kg and taps of dy[(c / Cg) Kg + i] * w[(c /
Cg) Kg + i, c % Cg]``), through depthwise_dgrad.py's mainloop (stride
phases along W at compile time, rows predicated); the block stages the
filter as [tap, i, dx channel].
"""

import math

from mlir import ir
from mlir.dialects import arith, memref, vector

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.window.depthwise_dgrad import DgradThread
from dnnc.codegen.gpu.window.depthwise_emit import Thread, _both, _row, build as build_launch
from dnnc.codegen.gpu.window.program import memory_order_view, product

_index = irutil.index


def span(ins, outs, width):
    """Input channels the ``width`` output channels of a thread read, of
    groups of ``ins`` input and ``outs`` output channels."""
    return ins * max(1, width // outs)


def piece(ins, outs, width):
    """Elements of one load of the span: its largest divisor that divides
    ``width`` too (the span's start is a multiple of the span)."""
    return math.gcd(span(ins, outs, width), width)


def lane_sources(ins, outs, width):
    """[c][j]: the span element output lane j multiplies by its group's
    input channel c (see the module doc)."""
    return [[(j // outs) * ins + c if width >= outs else c for j in range(width)]
            for c in range(ins)]


class SpanInputs:
    """The grouped inputs of a thread (see the module doc), for a thread
    class of depthwise_emit.py (forward) or depthwise_dgrad.py (data
    gradient): ``inputs_at`` loads its groups' span at a pixel and returns
    one f32 vector per input channel of a group, ``tap_weights`` the
    matching weights of a tap. Roles: a forward's inputs are x's Cg
    channels a group, its outputs y's Kg; a data gradient's inputs are dy's
    Kg, its outputs dx's Cg (the filter staged transposed: depthwise_emit's
    ``_stage_filter``)."""

    def setup_span(self):
        f, g = self.f, self.g
        self.ins, self.outs = f.ins_per_group, f.outs_per_group
        self.span = span(self.ins, self.outs, g.width)
        self.piece = piece(self.ins, self.outs, g.width)
        self.sources = lane_sources(self.ins, self.outs, g.width)
        self.span_view, self.span_order = memory_order_view(f.x)

    def first_input(self, c0):
        """The span's first channel: (k0 / outs) ins."""
        group = arith.divui(c0, _index(self.outs)) if self.outs > 1 else c0
        return arith.muli(group, _index(self.ins)) if self.ins > 1 else group

    def inputs_at(self, n, c0, spatial, ok):
        element = self.f.element
        vtype = ir.VectorType.get([self.piece], element)
        c_in = self.first_input(c0)
        scalars = []
        for p in range(self.span // self.piece):
            c = arith.addi(c_in, _index(p * self.piece)) if p else c_in
            at = [n, c] + spatial
            if self.piece == 1:
                v = vector.broadcast(vtype, memref.load(self.f.x, at))
            else:
                v = vector.load(vtype, self.span_view, [at[d] for d in self.span_order],
                                alignment=self.piece * irutil.element_bytes(element))
            if ok is not None:
                zero = arith.constant(vtype, ir.DenseElementsAttr.get_splat(
                    vtype, irutil.zero_attr(element)))
                v = arith.select(ok, v, zero)
            if element != self.f32:
                v = arith.extf(ir.VectorType.get([self.piece], self.f32), v)
            scalars += [vector.extract(v, [], [i]) for i in range(self.piece)]
        return [vector.from_elements(self.vtype, [scalars[i] for i in source])
                for source in self.sources]

    def tap_weights(self, tap, cg):
        return [self._f32(self._weights(tap * self.ins + c, cg)) for c in range(self.ins)]


class GroupedThread(SpanInputs, Thread):
    """A thread's tile of a grouped forward convolution."""

    def __init__(self, g, smem):
        super().__init__(g, smem)
        self.setup_span()

    def mainloop(self, n, c0, cg, origin, q):
        f, g = self.f, self.g
        last = len(f.window) - 1
        accs = [self.zero()] * g.tile
        s_w, dl_w, width_taps = f.stride[last], f.dilation[last], f.window[last]
        cols = sorted({u * s_w + t * dl_w for u in range(g.tile) for t in range(width_taps)})
        count_w = (g.counts[-1] - 1) * g.tile + 1
        col = {e: _row(f, last, origin[last], e, count_w) for e in cols}
        for upper in product(range(k) for k in f.window[:last]):
            picked = [_row(f, i, origin[i], t * f.dilation[i], g.counts[1 + i])
                      for i, t in enumerate(upper)]
            row_ok = None
            for _, inside in picked:
                row_ok = _both(row_ok, inside)
            base = 0
            for i, t in enumerate(upper):
                base = base * f.window[i] + t
            weights = [self.tap_weights(base * width_taps + t, cg) for t in range(width_taps)]
            for e in cols:
                w_index, w_ok = col[e]
                lanes = self.inputs_at(n, c0, [h for h, _ in picked] + [w_index],
                                       _both(row_ok, w_ok))
                for u in range(g.tile):
                    t, rest = divmod(e - u * s_w, dl_w)
                    if rest or not 0 <= t < width_taps:
                        continue
                    for pixel, weight in zip(lanes, weights[t]):
                        accs[u] = self.fma(accs[u], pixel, weight)
        return accs


class GroupedDgradThread(SpanInputs, DgradThread):
    """A thread's tile of a grouped data gradient: depthwise_dgrad.py's
    mainloop (stride phases along W) over dy's span."""

    def __init__(self, g, smem):
        super().__init__(g, smem)
        self.setup_span()


def build(fn, found, width, threads, tile):
    """Replace kernel ``fn``'s body (a grouped forward convolution or data
    gradient that depthwise.py's ``match`` read) by its launch. Returns the
    Geometry."""
    thread = GroupedDgradThread if found.direction == "dgrad" else GroupedThread
    return build_launch(fn, found, width, threads, tile, thread)
