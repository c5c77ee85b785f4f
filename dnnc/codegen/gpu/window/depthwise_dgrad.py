"""The data gradient of a depthwise convolution on the simt-depthwise
strategy: the forward's launch and thread (depthwise_emit.py) with another
mainloop, ``DgradThread``.

The forward pairs output o with padded input row ``o * s + t * dl`` (tap
t), so ``dx[h] = sum over taps t of dy[(h + pre - t * dl) / s] * w[t]``,
over the taps where that division is exact and the row inside dy. At
stride 1 every tap counts: it is a depthwise convolution of dy by the
flipped filter, and the thread is the forward's, reading dy's pixels where
the forward reads x's. A strided gradient has taps that skip outputs; of
the two ways to keep them off (split dx into stride phases, each a stride-1
problem with its own sub-filter, as the tensor-core dgrad does; or
predicate) this takes each where it costs least:

* **along W, phases at compile time**: a thread's tile is a whole number
  of stride phases (``tile`` a multiple of s, its first output a multiple
  of s), so output u of the tile takes tap t exactly when ``(u + pre - t *
  dl) % s == 0``, known when the kernel is built, and reads dy column
  ``q * tile / s + (u + pre - t * dl) / s`` (q the tile's index). No
  multiply-add is spent on a skipped tap, and the tile's consecutive
  outputs still share their dy pixels, each loaded once: a 3x3 / 2 tile of
  4 outputs reads 3 dy pixels a row, not 6. Splitting W into phase
  launches would instead give each thread outputs s apart, whose stores are
  no longer one run of pixels.
* **along the other dims, predicated**: a thread's row h is a run-time
  value; each filter row's dy row ``(h + pre - r * dl) / s`` is loaded
  clamped and zeroed by a select where the division is not exact (or the
  row outside dy), as the forward zeroes padding. That costs (R - R / s)
  extra row loads from L1 of the smaller dy, none of them from DRAM, and
  keeps the loads back to back with no branch; phase launches along H
  would multiply the launches (s^2 of them) for no fewer bytes.

dy and dx are read and written in their own strides (channels-last needs
no copy), the filter staged in shared memory as the forward's.
"""

from mlir import ir
from mlir.dialects import arith

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.window.depthwise_emit import Thread, build as build_launch
from dnnc.codegen.gpu.window.program import product

_index = irutil.index


def taps_of_outputs(tile, window, stride, dilation, pre):
    """{u: [(t, e)]}: for output u of a W tile of ``tile`` outputs (a
    multiple of ``stride``), the taps t that reach it and the dy column
    offset e of each (from the tile's first dy column): exact divisions
    only (see the module doc)."""
    plan = {}
    for u in range(tile):
        plan[u] = []
        for t in range(window):
            num = u + pre - t * dilation
            if num % stride == 0:
                plan[u].append((t, num // stride))
    return plan


class DgradThread(Thread):
    """A thread's tile of dx (see the module doc)."""

    def _upper_row(self, dim, h, tap):
        """(dy row, inside) of dx row ``h`` and filter row ``tap`` of
        spatial dim ``dim``: clamped into dy, and the predicate that the
        division by the stride is exact and the row inside dy (None where
        it always is)."""
        f = self.f
        s, size = f.stride[dim], f.in_shape[2 + dim]
        shift = f.pre[dim] - tap * f.dilation[dim]
        count = self.g.counts[1 + dim]
        if s == 1:
            row = arith.addi(h, _index(shift)) if shift > 0 else \
                (arith.subi(h, _index(-shift)) if shift else h)
            if shift >= 0 and count - 1 + shift < size:
                return row, None
            inside = arith.cmpi(arith.CmpIPredicate.ult, row, _index(size))
            return arith.minui(row, _index(size - 1)), inside
        # h + shift may be negative: lift it by k strides so that the
        # unsigned division and remainder see a non-negative number.
        k = max(0, -(-(-shift) // s))
        lifted = arith.addi(h, _index(shift + k * s)) if shift + k * s else h
        row = arith.divui(lifted, _index(s))
        if k:
            row = arith.subi(row, _index(k))
        exact = arith.cmpi(arith.CmpIPredicate.eq, arith.remui(lifted, _index(s)), _index(0))
        inside = arith.andi(exact, arith.cmpi(arith.CmpIPredicate.ult, row, _index(size)))
        return arith.minui(row, _index(size - 1)), inside

    def mainloop(self, n, c0, cg, origin, q):
        f, g = self.f, self.g
        last = len(f.window) - 1
        s_w, width_taps, size_w = f.stride[last], f.window[last], f.in_shape[-1]
        plan = taps_of_outputs(g.tile, width_taps, s_w, f.dilation[last], f.pre[last])
        step = g.tile // s_w  # dy columns a tile advances
        first = arith.muli(q, _index(step)) if step != 1 else q
        cols = sorted({e for taps in plan.values() for _, e in taps})
        col = {}
        for e in cols:
            c = arith.addi(first, _index(e)) if e > 0 else \
                (arith.subi(first, _index(-e)) if e else first)
            if e >= 0 and (g.counts[-1] - 1) * step + e < size_w:
                col[e] = (c, None)
            else:
                col[e] = (arith.minui(c, _index(size_w - 1)),
                          arith.cmpi(arith.CmpIPredicate.ult, c, _index(size_w)))
        accs = [self.zero()] * g.tile
        for upper in product(range(k) for k in f.window[:last]):
            picked = [self._upper_row(i, origin[i], t) for i, t in enumerate(upper)]
            row_ok = None
            for _, inside in picked:
                row_ok = inside if row_ok is None else (
                    row_ok if inside is None else arith.andi(row_ok, inside))
            pixels = {}
            for e in cols:
                ok = row_ok if col[e][1] is None else (
                    col[e][1] if row_ok is None else arith.andi(row_ok, col[e][1]))
                pixels[e] = self.inputs_at(n, c0, [r for r, _ in picked] + [col[e][0]], ok)
            base = 0
            for i, t in enumerate(upper):
                base = base * f.window[i] + t
            used = sorted({t for taps in plan.values() for t, _ in taps})
            weights = {t: self.tap_weights(base * width_taps + t, cg) for t in used}
            # Pixel by pixel, as the forward: each converted once for every
            # output that takes it.
            for e in cols:
                for u in range(g.tile):
                    for t, at in plan[u]:
                        if at == e:
                            for pixel, weight in zip(pixels[e], weights[t]):
                                accs[u] = self.fma(accs[u], pixel, weight)
        return accs

    def inputs_at(self, n, c0, spatial, ok):
        """[the f32 vector of the thread's channels of dy at pixel
        ``spatial``, zero where ``ok`` is false] (a grouped gradient's: one
        vector per dy channel of the group, grouped_emit.py)."""
        v = self._load_x([n, c0] + spatial)
        return [self._f32(v if ok is None else arith.select(ok, v, self._skip()))]

    def tap_weights(self, tap, cg):
        """[the f32 weights of filter tap ``tap`` for the thread's
        channels] (one vector per dy channel of a group: grouped_emit.py)."""
        return [self._f32(self._weights(tap, cg))]

    def _skip(self):
        """The stored type's zero vector: what a pixel off dy reads."""
        raw = ir.VectorType.get([self.g.width], self.f.element)
        return arith.constant(raw, ir.DenseElementsAttr.get_splat(
            raw, irutil.zero_attr(self.f.element)))


def build(fn, found, width, threads, tile):
    """Replace kernel ``fn``'s body (a depthwise data gradient that
    depthwise.py's ``match`` read) by its launch. Returns the Geometry."""
    return build_launch(fn, found, width, threads, tile, DgradThread)
