"""Grouped convolutions of a few channels a group (ResNeXt's 32 groups of 4,
2 / 4 / 8 channels a group) on the simt-depthwise strategy: the forward's
launch and thread (depthwise_emit.py) with another mainloop,
``GroupedThread``.

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
"""

import math

from mlir import ir
from mlir.dialects import arith, memref, vector

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.window.depthwise_emit import Thread, _both, _row, build as build_launch
from dnnc.codegen.gpu.window.program import memory_order_view, product

_index = irutil.index


def span(cg, kg, width):
    """Input channels the ``width`` output channels of a thread read."""
    return cg * max(1, width // kg)


def piece(cg, kg, width):
    """Elements of one x load of the span: its largest power-of-two divisor
    up to ``width`` (the span's start is a multiple of the span)."""
    return math.gcd(span(cg, kg, width), width)


def lane_sources(cg, kg, width):
    """[c][j]: the span element output lane j multiplies by its group's
    input channel c (see the module doc)."""
    return [[(j // kg) * cg + c if width >= kg else c for j in range(width)]
            for c in range(cg)]


class GroupedThread(Thread):
    """A thread's tile of a grouped convolution (see the module doc)."""

    def __init__(self, g, smem):
        super().__init__(g, smem)
        f = self.f
        self.span = span(f.cg, f.kg, g.width)
        self.piece = piece(f.cg, f.kg, g.width)
        self.sources = lane_sources(f.cg, f.kg, g.width)
        self.view, self.order = memory_order_view(f.x)

    def _first_input(self, c0):
        """The span's first channel: (k0 / Kg) Cg."""
        f = self.f
        if self.g.width >= f.kg:
            return arith.muli(c0, _index(f.cg // f.kg)) if f.cg % f.kg == 0 else \
                arith.muli(arith.divui(c0, _index(f.kg)), _index(f.cg))
        return arith.muli(arith.divui(c0, _index(f.kg)), _index(f.cg))

    def _load_span(self, indices, c_in, ok):
        """The span's f32 scalars at pixel ``indices`` (channel dim left
        out), zero where ``ok`` is false."""
        f = self.f
        element = f.element
        vtype = ir.VectorType.get([self.piece], element)
        values = []
        for p in range(self.span // self.piece):
            c = arith.addi(c_in, _index(p * self.piece)) if p else c_in
            at = [indices[0], c] + indices[1:]
            if self.piece == 1:
                v = vector.broadcast(vtype, memref.load(f.x, at))
            else:
                v = vector.load(vtype, self.view, [at[d] for d in self.order],
                                alignment=self.piece * irutil.element_bytes(element))
            if ok is not None:
                zero = arith.constant(vtype, ir.DenseElementsAttr.get_splat(
                    vtype, irutil.zero_attr(element)))
                v = arith.select(ok, v, zero)
            if element != self.f32:
                v = arith.extf(ir.VectorType.get([self.piece], self.f32), v)
            values += [vector.extract(v, [], [i]) for i in range(self.piece)]
        return values

    def mainloop(self, n, c0, cg, origin, q):
        f, g = self.f, self.g
        last = len(f.window) - 1
        accs = [self.zero()] * g.tile
        s_w, dl_w, width_taps = f.stride[last], f.dilation[last], f.window[last]
        cols = sorted({u * s_w + t * dl_w for u in range(g.tile) for t in range(width_taps)})
        count_w = (g.counts[-1] - 1) * g.tile + 1
        col = {e: _row(f, last, origin[last], e, count_w) for e in cols}
        c_in = self._first_input(c0)
        for upper in product(range(k) for k in f.window[:last]):
            picked = [_row(f, i, origin[i], t * f.dilation[i], g.counts[1 + i])
                      for i, t in enumerate(upper)]
            row_ok = None
            for _, inside in picked:
                row_ok = _both(row_ok, inside)
            base = 0
            for i, t in enumerate(upper):
                base = base * f.window[i] + t
            weights = [[self._f32(self._weights((base * width_taps + t) * f.cg + c, cg))
                        for c in range(f.cg)] for t in range(width_taps)]
            for e in cols:
                w_index, w_ok = col[e]
                scalars = self._load_span([n] + [h for h, _ in picked] + [w_index], c_in,
                                          _both(row_ok, w_ok))
                lanes = [vector.from_elements(self.vtype, [scalars[i] for i in source])
                         for source in self.sources]
                for u in range(g.tile):
                    t, rest = divmod(e - u * s_w, dl_w)
                    if rest or not 0 <= t < width_taps:
                        continue
                    for c in range(f.cg):
                        accs[u] = self.fma(accs[u], lanes[c], weights[t][c])
        return accs


def build(fn, found, width, threads, tile):
    """Replace kernel ``fn``'s body (a grouped forward convolution that
    depthwise.py's ``match`` read) by its launch. Returns the Geometry."""
    return build_launch(fn, found, width, threads, tile, GroupedThread)
