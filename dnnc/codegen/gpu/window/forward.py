"""The forward window program's emitter (the simt-window strategy):
``Emitter`` writes one thread's work, a tile of output pixels and a group of
channels of a ``Window`` (program.py), inside the launch that windows.py's
``build`` lays:

1. **Mapping.** The output's dims are walked in the memory order of x
   (``physical_order``: N, H, W, C for channels-last, N, C, H, W for NCHW),
   innermost fastest, so that consecutive threads read consecutive
   addresses. A thread owns a tile of ``tile`` output pixels (per spatial
   dim: 2 x 2 from the heuristics for 3x3 / 2, dnnc/heuristics/window.py)
   and, when C is x's contiguous dim, ``vector`` consecutive channels (16
   bytes; every x pixel is one vector load); when it is not (NCHW),
   ``vector`` is 1 and the threads run along W.
2. **Loads**, unrolled at compile time, all in flight: the tile's windows
   read x pixel u * s + t - pre (output u of the tile, tap t) per spatial
   dim, and windows that overlap share pixels, each loaded once (3x3 / 2's
   2 x 2 outputs: 25 pixels for 36 taps). A pixel on padding (outside x on
   some dim) contributes the identity (-inf, 0), which is the op's padding
   semantics: it still loads, from its row clamped into x, and a select
   drops the value: no branches, so a thread's loads issue back to back
   rather than one branch's latency after another's.
3. **Windows**, per output of the tile: its taps (at most ``MAX_TAPS``,
   program.py) folded in row-major order from the identity, in f32: the CPU
   back end's order, so the results are bit-identical to it whatever the tile.
4. **Epilogue**, per output and channel: the steps' bodies are cloned on
   the f32 value (the avg divisor is one of them: it reads the output's
   indices), and each kernel output is stored, as one vector where its C is
   contiguous too. Where the tile does not divide the output the last
   tile's outputs past the end skip their epilogue and store (a guard).

x and the outputs are read and written in their own strides (a channels-
last graph input needs no copy: dnn-io-strides leaves it to this strategy,
``LAYOUT_FREE``); vector accesses go through an identity-layout view of the
buffer in memory order (program.py's ``memory_order_view``).

The gradient's emitter (gradients.py) builds on this one: it reuses the
mapping, the loads and the epilogue.
"""

from mlir import ir
from mlir.dialects import arith, memref, scf, vector

from dnnc.codegen.gpu import irutil, loops
from dnnc.codegen.gpu.tensorcore.pair_epilogue import evaluate, store_lanes
from dnnc.codegen.gpu.window.program import (channel_contiguous, memory_order_view,
                                             physical_order, product)
from dnnc.codegen.gpu.window.tile import spatial_tile

_index = irutil.index


class Emitter:
    """A thread's tile of outputs of a forward window program (see the
    module doc)."""

    def __init__(self, window, width, threads, stored, tile=()):
        self.w = window
        self.width = width
        self.threads = threads
        self.stored = stored
        self.f32 = ir.F32Type.get()
        shape = window.out_shape
        # Outputs a thread owns per spatial dim (no more than the dim holds).
        self.tile = [min(t, n) for t, n in zip(spatial_tile(tile, len(window.window)),
                                                shape[2:])]
        # Counts per output dim: channels grouped by the vector, spatial
        # dims by the tile.
        self.counts = list(shape)
        self.counts[1] //= width
        for i, t in enumerate(self.tile):
            self.counts[2 + i] = -(-shape[2 + i] // t)
        self.order = physical_order(window.x.type)
        self.total = 1
        for c in self.counts:
            self.total *= c

    def _vec(self, element):
        return ir.VectorType.get([self.width], element)

    def point(self, linear):
        """Output indices [n, c0, o...] of work item ``linear``."""
        counts = [self.counts[d] for d in self.order]
        ivs = loops.delinearize(linear, counts)
        point = [None] * len(counts)
        for d, iv in zip(self.order, ivs):
            point[d] = iv
        if self.width > 1:
            point[1] = arith.muli(point[1], _index(self.width))
        return point

    def _identity(self):
        """The window's identity as a vector: -inf (max), 0 (avg)."""
        vtype = self._vec(self.f32)
        value = -float("inf") if self.w.mode == "max" else 0.0
        return arith.constant(vtype, ir.DenseElementsAttr.get_splat(
            vtype, ir.FloatAttr.get(self.f32, value)))

    def _row(self, i, origin, offset):
        """(row, inside) of x row ``origin * s + offset - pre`` of spatial
        dim ``i`` (``origin``: the tile's first output there): the row
        clamped into x and the predicate that it is inside, unless it is
        inside in every tile (then itself and None). A negative row wraps to
        a huge unsigned value, so one unsigned compare checks both ends."""
        w = self.w
        h = arith.muli(origin, _index(w.stride[i]))
        shift = offset - w.pre[i]
        if shift:
            h = arith.addi(h, _index(shift)) if shift > 0 else arith.subi(h, _index(-shift))
        size = w.in_shape[2 + i]
        last = (self.counts[2 + i] - 1) * self.tile[i] * w.stride[i] + shift
        if offset >= w.pre[i] and last < size:
            return h, None
        inside = arith.cmpi(arith.CmpIPredicate.ult, h, _index(size))
        return arith.minui(h, _index(size - 1)), inside

    def gather(self, origin, x_view, x_order):
        """{input offset: f32 vector} of every x pixel the tile's windows
        read, each loaded once: offset e_i = u_i * s_i + t_i of output u and
        tap t. A pixel on padding loads from a row clamped into x and a
        select turns it into the identity (-inf, 0): no branch, so all the
        tile's loads are in flight at once."""
        w = self.w
        nd = len(w.window)
        offsets = [sorted({u * w.stride[i] + t for u in range(self.tile[i])
                           for t in range(w.window[i])}) for i in range(nd)]
        rows = [{e: self._row(i, origin[2 + i], e) for e in offsets[i]} for i in range(nd)]
        skip = self._identity()
        values = {}
        for e in product(offsets):
            picked = [rows[i][k] for i, k in enumerate(e)]
            ok = None
            for _, inside in picked:
                if inside is not None:
                    ok = inside if ok is None else arith.andi(ok, inside)
            v = self.load(w.x, origin[:2] + [h for h, _ in picked], x_view, x_order)
            values[tuple(e)] = v if ok is None else arith.select(ok, v, skip)
        return values

    def reduce(self, values, u):
        """The f32 window value of output ``u`` of the tile (its offset per
        spatial dim) and the thread's ``width`` channels: the taps folded in
        row-major order from the identity, the CPU back end's order."""
        w = self.w
        acc = self._identity()
        for tap in product(range(k) for k in w.window):
            v = values[tuple(ui * s + t for ui, s, t in zip(u, w.stride, tap))]
            acc = arith.maximumf(acc, v) if w.mode == "max" else arith.addf(acc, v)
        return acc

    def load(self, buffer, logical, view, order):
        """``width`` channels of ``buffer`` at ``logical`` indices, as f32
        (``view``: the identity-layout view in memory ``order``, for
        vectors)."""
        element = ir.MemRefType(buffer.type).element_type
        vtype = self._vec(self.f32)
        if self.width > 1:
            v = vector.load(self._vec(element), view, [logical[d] for d in order],
                            alignment=self.width * irutil.element_bytes(element))
            return v if element == self.f32 else arith.extf(vtype, v)
        v = memref.load(buffer, logical)
        if element != self.f32:
            v = arith.extf(self.f32, v)
        return vector.broadcast(vtype, v)

    def epilogue(self, acc, point):
        """[{buffer: value}] per lane of every buffer written after the window."""
        out = []
        for lane in range(self.width):
            here = list(point)
            if lane:
                here[1] = arith.addi(point[1], _index(lane))
            value = vector.extract(acc, [], [lane])
            out.append(evaluate(self.w.acc, self.w.steps, value, here,
                                index_of=lambda dim, here=here: here[dim]))
        return out

    def store(self, lanes, point):
        for buffer in self.stored:
            if self.width > 1 and channel_contiguous(buffer.type, self.width):
                view, order = memory_order_view(buffer)
                store_lanes([env[buffer] for env in lanes], view, [point[d] for d in order])
                continue
            for lane, env in enumerate(lanes):
                here = list(point)
                if lane:
                    here[1] = arith.addi(point[1], _index(lane))
                memref.store(env[buffer], buffer, here)

    def program(self, linear):
        item = self.point(linear)  # [n, c0, q_i...]: q_i the tile's index
        origin = item[:2] + [arith.muli(q, _index(t)) if t > 1 else q
                             for q, t in zip(item[2:], self.tile)]
        x_view, x_order = (memory_order_view(self.w.x) if self.width > 1 else (self.w.x, None))
        values = self.gather(origin, x_view, x_order)
        for u in product(range(t) for t in self.tile):
            point = origin[:2] + [arith.addi(o, _index(k)) if k else o
                                  for o, k in zip(origin[2:], u)]
            # Where the tile does not divide the output, its last outputs
            # may lie past the end: their epilogue and store are skipped.
            inside = None
            for i, k in enumerate(u):
                n = self.w.out_shape[2 + i]
                if k and (self.counts[2 + i] - 1) * self.tile[i] + k >= n:
                    ok = arith.cmpi(arith.CmpIPredicate.ult, point[2 + i], _index(n))
                    inside = ok if inside is None else arith.andi(inside, ok)
            acc = self.reduce(values, u)
            if inside is None:
                self.store(self.epilogue(acc, point), point)
                continue
            guard = scf.IfOp(inside)
            with ir.InsertionPoint(guard.then_block):
                self.store(self.epilogue(acc, point), point)
                scf.YieldOp([])
