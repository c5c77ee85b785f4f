"""The simt-window strategy for pooling backward: dx gathered, one thread
per tile of input pixels and group of channels (dnn-pool-windows).

The kernel (dnnc/codegen/linalg/pooling.py's backward lowering) is the
forward's shape with the roles turned round: ``acc`` has dx's shape, the
window generic (``dnn.window`` with ``backward = true``) reads dy and, for
max, x, and the steps after it (the cast to dx's type) are the epilogue.
program.py's ``match`` reads it into a ``Window`` whose ``dy`` is set;
windows.py's ``build`` emits it with ``GradientEmitter``, which builds on
the forward's ``Emitter`` (forward.py):

1. **Tiles.** Per spatial dim, input row h is tap t = h + pre - o * s of
   window o. Write h + pre = q * s + r (r < s): the rows of one q (a tile
   of s rows, s_1 x s_2 ... pixels) are covered by the same windows,
   o = q - j for j <= (W - 1) / s, row r being their tap t = j * s + r
   (a window counts for the row when t < W: known at compile time). So a
   thread owns a tile (and ``vector`` channels, 16 bytes, where C is
   contiguous in x and dy, fewer where a max gradient's windows would hold
   too many registers: ``lanes``; else one channel, the threads along W): each
   covering window is worked out once for all the tile's pixels. Tiles are
   mapped in x's memory order, channel groups fastest.
2. **Windows.** Per covering window (o clamped into dy where it is not a
   window: 0 <= o < out; its share is then zeroed): dy[o] as a vector; max
   recomputes the window's first maximum from x per channel (row-major tap
   order, padding skipped, the first real tap taken even at -inf, a NaN
   beating a number: dnnc/reference.py's rule), avg divides dy by the
   window's divisor (W_1 * W_2 ... with count_include_pad, else its real
   rows). No branches: a tap on padding loads from a row clamped into x and
   is dropped by a select, so all of a thread's loads can be in flight.
3. **Pixels.** Per pixel of the tile: the f32 sum over its windows in
   ascending tap order (the CPU back end's order, so results are bit-
   identical to it) of dy where the window's first maximum is this tap
   (max) or of the share (avg); no atomics, every dx element written once.
   Then the forward's epilogue and store (forward.py), under a guard where
   the pixel may lie outside x (the first and last tiles).

A max gradient loads covering windows x taps of x a thread
(``gather_taps``); past ``MAX_GATHER_TAPS`` the kernel is left to
simt-generic.
"""

import math

from mlir import ir
from mlir.dialects import arith, scf, vector

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.window.forward import Emitter
from dnnc.codegen.gpu.window.program import NotAWindowProgram, memory_order_view, product

# x taps one thread of a max window gradient loads (covering windows x
# taps), all unrolled: 3x3 / 2 takes 36, 3x3 / 1 81; 5x5 / 1 (625) is left
# to simt-generic.
MAX_GATHER_TAPS = 256
# Covering windows x channels, and x taps x channels, a thread of a max
# gradient holds at most (each window's dy and first-maximum tap per
# channel; ptxas hoists all the loads): 3x3 / 2's 4 windows of 9 taps and 8
# bf16 channels take 128 registers; a 2x3x3 / 1x2x2 window's 8 of 18 get 2
# channels, not 8 (which spilled) or 4 (which still did in bf16).
MAX_WINDOW_LANES = 32
MAX_TAP_LANES = 320
_index = irutil.index
_I = arith.CmpIPredicate
_F = arith.CmpFPredicate


def covering(window, stride):
    """Windows covering one tile, per dim: (W - 1) / s + 1."""
    return [(w - 1) // s + 1 for w, s in zip(window, stride)]


def gather_taps(mode, window, stride):
    """x taps (max) or dy reads (avg) one thread makes."""
    windows = math.prod(covering(window, stride))
    return windows * math.prod(window) if mode == "max" else windows


def lanes(window, width):
    """Channels a thread of ``window``'s gradient owns: ``width``, halved
    while a max gradient would hold more than MAX_WINDOW_LANES or
    MAX_TAP_LANES."""
    windows = math.prod(covering(window.window, window.stride))
    taps = gather_taps(window.mode, window.window, window.stride)
    while window.mode == "max" and width > 1 and (windows * width > MAX_WINDOW_LANES
                                                  or taps * width > MAX_TAP_LANES):
        width //= 2
    return width


def check(window):
    """Raise NotAWindowProgram when ``window``'s gradient unrolls too much."""
    taps = gather_taps(window.mode, window.window, window.stride)
    if taps > MAX_GATHER_TAPS:
        raise NotAWindowProgram(f"a window gradient of {taps} taps a thread: expected at most "
                                f"{MAX_GATHER_TAPS}")


class GradientEmitter(Emitter):
    """A thread's tile of dx (see the module doc)."""

    def __init__(self, window, width, threads, stored):
        check(window)
        super().__init__(window, width, threads, stored)
        self.i32 = ir.IntegerType.get_signless(32)
        # x's spatial sizes are dx's (acc's); avg reads no x (window.x is dy).
        self.in_sizes = window.out_shape[2:]
        self.out_sizes = list(ir.MemRefType(window.dy.type).shape)[2:]
        attrs = ir.DictAttr(window.op.attributes["dnn.window"])
        self.count_include_pad = ir.BoolAttr(attrs["count_include_pad"]).value
        # Work items: (n, channel groups, tiles q_i); h + pre = q * s + r.
        self.counts = self.counts[:2] + [(n - 1 + p) // s + 1 for n, p, s in zip(
            self.in_sizes, window.pre, window.stride)]
        self.total = math.prod(self.counts)
        self.views = {}

    def _splat(self, type_, value):
        return arith.constant(type_, ir.DenseElementsAttr.get_splat(type_, value))

    def _read(self, buffer, logical):
        view, order = self.views.get(buffer, (None, None))
        return self.load(buffer, logical, view, order)

    def _first_max(self, lead, outs):
        """vector<i32>: per channel, the flat tap of window ``outs``'s first
        maximum.

        The scan starts from the window's first real tap (rows max(o * s -
        pre, 0), always inside: a window holds a real row), so that a later
        tap wins by ``v > best`` alone, or by being NaN while best is not:
        one unordered-greater compare and an ordered check of best. Seeing
        the first real tap again changes nothing (equal, or best is NaN).
        """
        w = self.w
        vi = self._vec(self.i32)
        rows, flat = [], None
        for i, o in enumerate(outs):
            start = arith.muli(o, _index(w.stride[i]))
            tap = _index(0)
            if w.pre[i]:
                start = arith.subi(start, _index(w.pre[i]))
                row = arith.maxsi(start, _index(0))
                tap, start = arith.subi(row, start), row
            flat = tap if flat is None else arith.addi(arith.muli(flat, _index(w.window[i])), tap)
            rows.append(start)
        best = self._read(w.x, lead + rows)
        arg = vector.broadcast(vi, arith.index_cast(self.i32, flat))
        for number, tap in enumerate(product(range(size) for size in w.window)):
            if number == 0 and not any(w.pre):
                continue  # without padding, the first real tap is tap 0: best
            rows, real = [], None
            for i, (o, k) in enumerate(zip(outs, tap)):
                # Row o * s + k - pre; a negative one wraps past the bound.
                h = arith.muli(o, _index(w.stride[i]))
                shift = k - w.pre[i]
                if shift:
                    h = arith.addi(h, _index(shift)) if shift > 0 else \
                        arith.subi(h, _index(-shift))
                if k >= w.pre[i] and (self.out_sizes[i] - 1) * w.stride[i] + shift < \
                        self.in_sizes[i]:
                    rows.append(h)  # inside for every window
                    continue
                inside = arith.cmpi(_I.ult, h, _index(self.in_sizes[i]))
                real = inside if real is None else arith.andi(real, inside)
                rows.append(arith.minui(h, _index(self.in_sizes[i] - 1)))
            v = self._read(w.x, lead + rows)
            if real is not None:
                v = arith.select(real, v, best)  # padding: never taken
            # v > best, or v NaN; never once best is NaN.
            take = arith.andi(arith.cmpf(_F.UGT, v, best), arith.cmpf(_F.ORD, best, best))
            best = arith.select(take, v, best)
            arg = arith.select(take, self._splat(vi, ir.IntegerAttr.get(self.i32, number)), arg)
        return arg

    def _divisor(self, outs):
        """f32 divisor of window ``outs`` (pooling.py's rule)."""
        w = self.w
        if self.count_include_pad:
            return arith.constant(self.f32, float(math.prod(w.window)))
        count = _index(1)
        for i, o in enumerate(outs):
            start = arith.subi(arith.muli(o, _index(w.stride[i])), _index(w.pre[i]))
            hi = arith.minsi(arith.addi(start, _index(w.window[i])), _index(self.in_sizes[i]))
            lo = arith.maxsi(start, _index(0))
            count = arith.muli(count, arith.subi(hi, lo))
        return arith.sitofp(self.f32, arith.index_cast(self.i32, count))

    def windows(self, tile):
        """{j: (dy or share, first-maximum taps or None)} of the windows
        o = q - j covering ``tile``; a j that is no window gets a zero share
        (avg) or no tap (max)."""
        w = self.w
        vf, vi = self._vec(self.f32), self._vec(self.i32)
        lead = tile[:2]
        found = {}
        for j in product(range(c) for c in covering(w.window, w.stride)):
            outs, ok = [], None
            for i, back in enumerate(j):
                o = arith.subi(tile[2 + i], _index(back)) if back else tile[2 + i]
                inside = arith.cmpi(_I.ult, o, _index(self.out_sizes[i]))
                ok = inside if ok is None else arith.andi(ok, inside)
                outs.append(arith.select(inside, o, _index(0)))
            g = self._read(w.dy, lead + outs)
            if w.mode == "max":
                arg = self._first_max(lead, outs)
                none = self._splat(vi, ir.IntegerAttr.get(self.i32, -1))
                found[tuple(j)] = (g, arith.select(ok, arg, none))
            else:
                share = arith.divf(g, vector.broadcast(vf, self._divisor(outs)))
                zero = self._splat(vf, ir.FloatAttr.get(self.f32, 0.0))
                found[tuple(j)] = (arith.select(ok, share, zero), None)
        return found

    def pixel(self, found, r):
        """The f32 vector of dx at tile row ``r``: its windows' parts,
        ascending tap order."""
        w = self.w
        vf, vi = self._vec(self.f32), self._vec(self.i32)
        zero = self._splat(vf, ir.FloatAttr.get(self.f32, 0.0))
        acc = zero
        for j in sorted(found):  # ascending j: ascending tap j * s + r
            taps = [back * s + k for back, s, k in zip(j, w.stride, r)]
            if any(t >= size for t, size in zip(taps, w.window)):
                continue  # this row is not in that window
            value, arg = found[j]
            if arg is not None:
                number = 0
                for t, size in zip(taps, w.window):
                    number = number * size + t
                hit = arith.cmpi(_I.eq, arg, self._splat(vi, ir.IntegerAttr.get(self.i32,
                                                                                number)))
                value = arith.select(hit, value, zero)
            acc = arith.addf(acc, value)
        return acc

    def program(self, linear):
        w = self.w
        if self.width > 1:
            self.views = {b: memory_order_view(b) for b in (w.dy, w.x)}
        tile = self.point(linear)  # [n, c0, q_i...]
        found = self.windows(tile)
        for r in product(range(s) for s in w.stride):
            rows, inside = [], None
            for i, k in enumerate(r):
                h = arith.muli(tile[2 + i], _index(w.stride[i]))
                shift = k - w.pre[i]
                if shift:
                    h = arith.addi(h, _index(shift)) if shift > 0 else \
                        arith.subi(h, _index(-shift))
                rows.append(h)
                if k >= w.pre[i] and (self.counts[2 + i] - 1) * w.stride[i] + shift < \
                        self.in_sizes[i]:
                    continue  # inside x in every tile
                ok = arith.cmpi(_I.ult, h, _index(self.in_sizes[i]))
                inside = ok if inside is None else arith.andi(inside, ok)
            point = tile[:2] + rows
            if inside is None:
                self.store(self.epilogue(self.pixel(found, r), point), point)
                continue
            guard = scf.IfOp(inside)
            with ir.InsertionPoint(guard.then_block):
                self.store(self.epilogue(self.pixel(found, r), point), point)
                scf.YieldOp([])
