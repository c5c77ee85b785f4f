"""The depthwise convolution program's launch and thread (the simt-depthwise
strategy): ``build`` replaces a kernel that depthwise.py's ``match`` read by
one ``gpu.launch``.

Launch: a block owns a slice of ``slice`` channel groups (of ``width``
channels: 16 bytes of x) and ``pixels`` tiles of output pixels; blocks run
along the tiles (x) and the slices (y). A thread owns one channel group of
one tile: ``tile`` consecutive outputs along the last spatial dim (W). The
threads of a block walk its channel groups fastest, so that a warp reads
whole channels-last pixels, consecutive 16-byte vectors.

A thread's work, unrolled at compile time:

1. **Filter.** The block copies its channels' taps into shared memory as
   ``[taps, slice * width]`` (``[taps, Cg, slice * width]`` for a grouped
   convolution's Cg filters a channel: grouped_emit.py; stored type;
   flipped in convolution mode), so
   that a tap's weights for a thread's channels are one 16-byte vector
   (the filter is ``[C, 1, R, S]``: a channel's taps are contiguous, the
   channels of one tap are not). Each thread issues several loads before
   it stores what they read, and a forward's Cg filters of a tap, contiguous
   in a channels-last filter, are one load (``_stage_filter``). A barrier
   follows.
2. **Mainloop**, per row of taps (every spatial dim but the last): the x
   pixels the tile's windows read on that row, each loaded once as a vector
   and converted to f32 (``tile`` outputs of stride s read ``(tile - 1) * s
   + (S - 1) * dl + 1`` pixels, not ``tile * S``); a pixel on padding loads
   from its row clamped into x and a select makes it 0 (no branches: the
   row's loads issue back to back); then per tap, the weights' vector from
   shared memory, and an fma into each output's f32 accumulator vector. The
   taps are summed in row-major order, the CPU back end's.
3. **Epilogue**, per output of the tile and channel: the chain
   (depthwise.evaluate) on the f32 sum, every output stored as one vector
   where its channels are contiguous. Outputs of the last tile past the end
   of W are skipped (a guard).

x and the outputs are read and written in their own strides (channels-last
graph inputs and outputs need no copies: dnn-io-strides leaves them to this
strategy); the pass (dnn-depthwise-conv) hands a kernel whose x channels are
not contiguous to simt-generic.
"""

import math

from mlir import ir
from mlir.dialects import arith, gpu, memref, scf, vector

from dnnc.codegen.gpu import irutil, loops
from dnnc.codegen.gpu.tensorcore.pair_epilogue import store_lanes
from dnnc.codegen.gpu.window.depthwise import evaluate
from dnnc.codegen.gpu.window.program import channel_contiguous, memory_order_view, product
from dnnc.codegen.gpu.window.tile import channel_slice

_index = irutil.index
_WORKGROUP = "#gpu.address_space<workgroup>"
_CONTRACT = "#arith.fastmath<contract>"
# Staging the filter: loads a thread has in flight (_stage_filter), and the
# rounds of them unrolled before a loop takes over.
STAGE_LOADS = 8
STAGE_UNROLL = 8


class Geometry:
    """How ``build`` divides the work (see the module doc)."""

    def __init__(self, found, width, threads, tile):
        self.found = found
        self.width = width
        shape = found.out_shape
        self.groups = shape[1] // width
        taps = math.prod(found.window)
        # A grouped convolution's output channel has a filter per input
        # channel of its group: the block stages ``ins`` x taps a channel.
        self.ins = found.ins_per_group
        self.slice = channel_slice(self.groups, width, taps * self.ins,
                                   irutil.element_bytes(found.element), threads)
        self.pixels = max(1, threads // self.slice)
        self.threads = self.pixels * self.slice
        self.tile = max(1, min(tile, shape[-1]))
        if found.direction == "dgrad":
            # A whole number of stride phases along W (depthwise_dgrad.py).
            phases = found.stride[-1]
            self.tile = max(1, self.tile // phases) * phases
        # Tiles along the output's dims: N, the spatial dims but the last,
        # then the last in tiles of ``tile``.
        self.counts = [shape[0]] + shape[2:-1] + [-(-shape[-1] // self.tile)]
        self.tiles = math.prod(self.counts)
        self.blocks = (-(-self.tiles // self.pixels), self.groups // self.slice)
        self.taps = taps
        self.smem = ir.MemRefType.get([taps * self.ins * self.slice * width], found.element,
                                      memory_space=ir.Attribute.parse(_WORKGROUP))


def _stage_vector(g):
    """Input channels of a filter row one staging load reads: a forward's
    ``Cg`` filters a channel are contiguous in a channels-last filter ([K,
    R, S, Cg] in memory), up to 16 bytes of them; 1 otherwise (a data
    gradient's rows run along K, a depthwise filter has one)."""
    f = g.found
    if f.direction != "fprop" or g.ins == 1:
        return 1
    vec = math.gcd(g.ins, 16 // irutil.element_bytes(f.element))
    return vec if vec > 1 and channel_contiguous(f.w.type, vec) else 1


def _stage_filter(g, smem, tx, by):
    """1. Copy the block's channels' taps into ``smem`` as [tap, channel]
    (see the module doc). An item is a run of ``_stage_vector`` input
    channels of one tap of one output channel, the channels fastest across
    the threads; thread tx takes items tx, tx + threads, ... and issues up
    to STAGE_LOADS loads before it stores what they read, so that their
    latencies overlap (one item at a time, each load's round trip to L2
    was paid in turn: 36 of them a thread for ResNeXt's 128 channels of 8
    a block)."""
    f = g.found
    channels = g.slice * g.width
    vec = _stage_vector(g)
    chunks = g.ins // vec
    items = g.taps * chunks * channels
    w_view, w_order = memory_order_view(f.w) if vec > 1 else (f.w, None)

    def load(i):
        row, local = arith.divui(i, _index(channels)), arith.remui(i, _index(channels))
        # Rows [tap, i] of a grouped convolution's filters a channel, one
        # per input channel i of its group.
        tap, chunk = (arith.divui(row, _index(chunks)), arith.remui(row, _index(chunks))) \
            if chunks > 1 else (row, _index(0))
        cc = arith.muli(chunk, _index(vec)) if vec > 1 else chunk
        c = arith.addi(arith.muli(by, _index(channels)), local)
        taps = loops.delinearize(tap, list(f.window))
        if f.flip:  # convolution mode: tap t reads filter tap R - 1 - t
            taps = [arith.subi(_index(r - 1), t) for r, t in zip(f.window, taps)]
        if f.direction == "dgrad":
            # dx channel c of group c / Cg takes dy channel (c / Cg) Kg + i
            # through filter w[(c / Cg) Kg + i, c % Cg].
            per = g.found.outs_per_group
            group, within = (arith.divui(c, _index(per)), arith.remui(c, _index(per))) \
                if per > 1 else (c, _index(0))
            k = arith.addi(arith.muli(group, _index(g.ins)), cc) if g.ins > 1 else group
            at = [k, within]
        else:
            at = [c, cc]
        at += taps
        # smem [tap, input channel, channel]: the run's first element.
        first = arith.addi(arith.muli(arith.addi(arith.muli(tap, _index(g.ins)), cc),
                                      _index(channels)), local)
        if vec == 1:
            return [memref.load(f.w, at)], first
        v = vector.load(ir.VectorType.get([vec], f.element), w_view, [at[d] for d in w_order],
                        alignment=vec * irutil.element_bytes(f.element))
        return [vector.extract(v, [], [j]) for j in range(vec)], first

    def store(values, first):
        for j, value in enumerate(values):
            at = arith.addi(first, _index(j * channels)) if j else first
            memref.store(value, smem, [at])

    def batch(indices):
        loaded = [load(i) for i in indices]
        for values, first in loaded:
            store(values, first)

    full, rest = divmod(items, g.threads)
    rounds, left = divmod(full, STAGE_LOADS)
    step = STAGE_LOADS * g.threads
    if rounds > STAGE_UNROLL:
        loop = scf.ForOp(tx, _index(rounds * step), _index(step))
        with ir.InsertionPoint(loop.body):
            i = loop.induction_variable
            batch([arith.addi(i, _index(m * g.threads)) if m else i
                   for m in range(STAGE_LOADS)])
            scf.YieldOp([])
        done = rounds * STAGE_LOADS
    else:
        done = 0
    for start in range(done, full, STAGE_LOADS):
        batch([arith.addi(tx, _index(m * g.threads)) if m else tx
               for m in range(start, min(full, start + STAGE_LOADS))])
    if rest:
        i = arith.addi(tx, _index(full * g.threads)) if full else tx
        guard = scf.IfOp(arith.cmpi(arith.CmpIPredicate.ult, tx, _index(rest)))
        with ir.InsertionPoint(guard.then_block):
            batch([i])
            scf.YieldOp([])


def _row(f, dim, origin, offset, count):
    """(row, inside) of x row ``origin * s + offset - pre`` of spatial dim
    ``dim``: clamped into x, and the predicate that it is inside, or None
    when it always is (the first origin is 0, the last ``count - 1``). A
    negative row wraps to a huge unsigned value: one compare checks both
    ends."""
    s, size = f.stride[dim], f.in_shape[2 + dim]
    shift = offset - f.pre[dim]
    h = arith.muli(origin, _index(s)) if s != 1 else origin
    if shift:
        h = arith.addi(h, _index(shift)) if shift > 0 else arith.subi(h, _index(-shift))
    if shift >= 0 and (count - 1) * s + shift < size:
        return h, None
    inside = arith.cmpi(arith.CmpIPredicate.ult, h, _index(size))
    return arith.minui(h, _index(size - 1)), inside


def _both(a, b):
    if a is None or b is None:
        return a if b is None else b
    return arith.andi(a, b)


class Thread:
    """2. and 3.: one thread's tile (see the module doc)."""

    def __init__(self, g, smem):
        self.g, self.f, self.smem = g, g.found, smem
        self.f32 = ir.F32Type.get()
        self.vtype = ir.VectorType.get([g.width], self.f32)
        self.x_view, self.x_order = memory_order_view(self.f.x)

    def _load_x(self, indices):
        element = self.f.element
        if self.g.width == 1:
            v = vector.broadcast(ir.VectorType.get([1], element), memref.load(self.f.x, indices))
        else:
            v = vector.load(ir.VectorType.get([self.g.width], element), self.x_view,
                            [indices[d] for d in self.x_order],
                            alignment=self.g.width * irutil.element_bytes(element))
        return v

    def _f32(self, v):
        return v if self.f.element == self.f32 else arith.extf(self.vtype, v)

    def _weights(self, tap, cg):
        g, element = self.g, self.f.element
        offset = arith.addi(_index(tap * g.slice * g.width), arith.muli(cg, _index(g.width)))
        return vector.load(ir.VectorType.get([g.width], element), self.smem, [offset],
                           alignment=g.width * irutil.element_bytes(element))

    def zero(self):
        return arith.constant(self.vtype, ir.DenseElementsAttr.get_splat(
            self.vtype, ir.FloatAttr.get(self.f32, 0.0)))

    def fma(self, acc, a, b):
        """acc + a * b, mul and add marked contractible: one fma
        (dnn-expand-math takes no vector math.fma)."""
        contract = ir.Attribute.parse(_CONTRACT)
        return arith.addf(acc, arith.mulf(a, b, fastmath=contract), fastmath=contract)

    def mainloop(self, n, c0, cg, origin, q):
        """The tile's f32 sums, one vector per output: ``origin`` is the
        tile's first output per spatial dim, ``q`` the tile's index along
        the last."""
        f, g = self.f, self.g
        nd = len(f.window)
        accs = [self.zero()] * g.tile
        last = nd - 1
        s_w, dl_w, width_taps = f.stride[last], f.dilation[last], f.window[last]
        cols = sorted({u * s_w + t * dl_w for u in range(g.tile) for t in range(width_taps)})
        count_w = (g.counts[-1] - 1) * g.tile + 1  # origins 0 .. (tiles - 1) * tile
        col = {e: _row(f, last, origin[last], e, count_w) for e in cols}
        for upper in product(range(k) for k in f.window[:last]):
            picked = [_row(f, i, origin[i], t * f.dilation[i], g.counts[1 + i])
                      for i, t in enumerate(upper)]
            row_ok = None
            for _, inside in picked:
                row_ok = _both(row_ok, inside)
            raw = ir.VectorType.get([g.width], f.element)
            skip = arith.constant(raw, ir.DenseElementsAttr.get_splat(
                raw, irutil.zero_attr(f.element)))
            pixels = {}  # as stored (16 bytes), converted where used
            for e in cols:
                w_index, w_ok = col[e]
                v = self._load_x([n, c0] + [h for h, _ in picked] + [w_index])
                ok = _both(row_ok, w_ok)
                pixels[e] = v if ok is None else arith.select(ok, v, skip)
            base = 0
            for i, t in enumerate(upper):
                base = base * f.window[i] + t
            weights = [self._f32(self._weights(base * width_taps + t, cg))
                       for t in range(width_taps)]
            # Pixel by pixel, each converted once and used by every output
            # whose window holds it: a pixel's f32 copy lives briefly
            # (registers), and each output still sums its taps in order.
            for e in cols:
                pixel = self._f32(pixels[e])
                for u in range(g.tile):
                    t, rest = divmod(e - u * s_w, dl_w)
                    if rest or not 0 <= t < width_taps:
                        continue
                    accs[u] = self.fma(accs[u], pixel, weights[t])
        return accs

    def epilogue(self, acc, n, c0, spatial):
        point = [n, c0] + spatial
        lanes = []
        for lane in range(self.g.width):
            here = list(point)
            if lane:
                here[1] = arith.addi(c0, _index(lane))
            lanes.append(evaluate(self.f, vector.extract(acc, [], [lane]), here))
        for buffer in self.f.stored:
            if self.g.width > 1 and channel_contiguous(buffer.type, self.g.width):
                view, order = memory_order_view(buffer)
                store_lanes([env[buffer] for env in lanes], view, [point[d] for d in order])
                continue
            for lane, env in enumerate(lanes):
                here = list(point)
                if lane:
                    here[1] = arith.addi(c0, _index(lane))
                memref.store(env[buffer], buffer, here)

    def run(self, item, cg, by):
        g, f = self.g, self.f
        ivs = loops.delinearize(item, g.counts)
        n, q = ivs[0], ivs[-1]
        origin = ivs[1:-1] + [arith.muli(q, _index(g.tile)) if g.tile > 1 else q]
        c0 = arith.muli(arith.addi(arith.muli(by, _index(g.slice)), cg), _index(g.width))
        accs = self.mainloop(n, c0, cg, origin, q)
        size = f.out_shape[-1]
        for u, acc in enumerate(accs):
            spatial = origin[:-1] + [arith.addi(origin[-1], _index(u)) if u else origin[-1]]
            if u and (g.counts[-1] - 1) * g.tile + u >= size:
                guard = scf.IfOp(arith.cmpi(arith.CmpIPredicate.ult, spatial[-1],
                                            _index(size)))
                with ir.InsertionPoint(guard.then_block):
                    self.epilogue(acc, n, c0, spatial)
                    scf.YieldOp([])
            else:
                self.epilogue(acc, n, c0, spatial)


def build(fn, found, width, threads, tile, thread_class=Thread):
    """Replace kernel ``fn``'s body by the depthwise program of ``found``:
    about ``threads`` a block, ``width`` channels and ``tile`` outputs along
    W a thread, whose mainloop is ``thread_class``'s (a data gradient's:
    depthwise_dgrad.py). Returns the Geometry."""
    g = Geometry(found, width, threads, tile)
    body = irutil.body(fn)
    first = next(op for op in body.operations if op.operation.name != "arith.constant")
    with ir.InsertionPoint(first), fn.location:
        launch = gpu.LaunchOp((_index(g.blocks[0]), _index(g.blocks[1]), _index(1)),
                              (_index(g.threads), _index(1), _index(1)))
        launch.attributes["workgroup_attributions"] = ir.IntegerAttr.get(
            ir.IntegerType.get_signless(64), 1)
        block = launch.regions[0].blocks[0]
        smem = block.add_argument(g.smem, fn.location)
        with ir.InsertionPoint(block):
            terminator = gpu.TerminatorOp()
        with ir.InsertionPoint(terminator):
            bx, by, tx = block.arguments[0], block.arguments[1], block.arguments[3]
            _stage_filter(g, smem, tx, by)
            gpu.barrier()
            cg = arith.remui(tx, _index(g.slice)) if g.slice > 1 else _index(0)
            local = arith.divui(tx, _index(g.slice)) if g.slice > 1 else tx
            item = arith.addi(arith.muli(bx, _index(g.pixels)), local)
            thread = thread_class(g, smem)
            if g.blocks[0] * g.pixels != g.tiles:
                guard = scf.IfOp(arith.cmpi(arith.CmpIPredicate.ult, item, _index(g.tiles)))
                with ir.InsertionPoint(guard.then_block):
                    end = scf.YieldOp([])
                with ir.InsertionPoint(end):
                    thread.run(item, cg, by)
            else:
                thread.run(item, cg, by)
    for op in reversed(found.ops):
        if op.name not in ("arith.constant", "func.return"):
            op.erase()
    return g
