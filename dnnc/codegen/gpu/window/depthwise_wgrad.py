"""The filter gradient of a depthwise or grouped convolution on the
simt-depthwise strategy: ``dw[k, i, t] = sum over n and output pixels o of
dy[n, k, o] * x[n, (k / Kg) Cg + i, o * s + t * dl - pre]`` (depthwise: Cg
= Kg = 1), a reduction over N x P x Q per (channel, tap), as two launches
in one kernel function and no float atomics.

Bytes: x and dy are read once from DRAM (each at least once: the minimum),
dw is a few KiB; so the kernel is memory-bound and shaped as the forward
is: channel vectors (8 bytes when depthwise, 16 when grouped: the
heuristics' ``vector``), a warp reading runs of channels-last pixels. What
hides the loads' latency is the warps an SM holds, so a depthwise thread
keeps few accumulators (below) and the grid is one wave of the blocks the
SMs hold at once, which ptxas is given as the launch bound.

1. **Partial sums** (grid ``split`` x channel slices). A thread owns one
   channel vector (``width`` channels) and a set of taps: every tap of the
   filter where their f32 accumulators fit (``taps * width`` at most
   tile.py's ``accumulator_budget``: 32 when depthwise, 96 when grouped),
   else one filter row (a 3x3's 3 x 4 or a 7x7's 7 x 4 when depthwise, the
   block's threads then covering the rows). Its work items are runs
   of ``tile`` consecutive output pixels along W (an item: n, the output
   row, the run), taken round-robin over the ``split`` x ``lanes`` threads
   that share its channels and taps. Per item it loads the run's dy pixels
   once, and per filter row the x pixels the run's windows read, each
   once (``(tile - 1) * s + (S - 1) * dl + 1`` of them, not ``tile * S``),
   as the forward does; padding and the run's tail past Q read zeros (a
   select, no branch). Then the block sums its lanes in shared memory, a
   tap at a time (a [threads, width] f32 buffer, lane order fixed), and
   writes its partial sums to the workspace ``[split, taps x Cg, K]`` f32
   (tile.py's ``wgrad_lanes``: a block's channel groups, rows and lanes).
   A grouped gradient's thread also takes a chunk of its groups' Cg input
   channels (all where they fit: ``wgrad_units``): per pixel it loads the
   chunk's channels of each group its vector covers and gives output lane
   j the one of its group (vector.from_elements: no instruction), as
   grouped_emit.py does.
2. **Sum** (a warp per tap and channel vector): lane l the partials l, l
   + 32, ... in order, the lanes' sums added by XOR shuffles, then lane 0
   runs the fused epilogue (depthwise.evaluate) on each channel's sum and
   stores dw (its channels are not contiguous in KCRS or KRSC: [C, 1, R,
   S] puts C outermost, so per channel).

The sums are in a fixed order whatever the timing: the result is the same
run to run. In convolution mode the position tap t is filter tap R - 1 - t.
"""

import math

from mlir import ir
from mlir.dialects import arith, gpu, memref, scf, vector

from dnnc.codegen.gpu import irutil, loops
from dnnc.codegen.gpu.window.depthwise import evaluate
from dnnc.codegen.gpu.window.depthwise_emit import _both
from dnnc.codegen.gpu.window.program import memory_order_view, product
from dnnc.codegen.gpu.window.grouped_emit import lane_sources
from dnnc.codegen.gpu.window.tile import (blocks_per_sm, wgrad_lanes, wgrad_registers,
                                          wgrad_units)

_index = irutil.index
_WORKGROUP = "#gpu.address_space<workgroup>"
_CONTRACT = "#arith.fastmath<contract>"
SUM_THREADS = 256
WARP = 32


class Geometry:
    """How ``build`` divides the work (see the module doc)."""

    def __init__(self, found, width, threads, tile, split):
        self.found, self.width = found, width
        self.channels = found.dy_shape[1]      # K: dw's output channels
        self.groups = self.channels // width
        window = list(found.window)
        self.taps = math.prod(window)
        self.cg, self.kg = found.ins_per_group, found.outs_per_group
        rows, self.chunk = wgrad_units(window, width, self.cg)
        self.by_rows = rows > 0
        self.row_taps = window[-1]
        self.chunks = self.cg // self.chunk
        self.thread_taps = self.row_taps if self.by_rows else self.taps
        self.slice, self.units, self.lanes = wgrad_lanes(self.groups, window, width, threads,
                                                         self.cg)
        self.sub = self.slice * self.units      # threads of one lane
        self.threads = self.lanes * self.sub
        out = found.dy_shape[2:]
        self.tile = max(1, min(tile, out[-1]))
        # Items: n, the output's rows (every spatial dim but W), runs along W.
        self.counts = [found.dy_shape[0]] + out[:-1] + [-(-out[-1] // self.tile)]
        self.items = math.prod(self.counts)
        self.split = max(1, min(split, -(-self.items // self.lanes)))
        self.blocks = (self.split, self.groups // self.slice)
        # The blocks an SM holds at once that the heuristics planned the grid
        # for (tile.py's register estimate), given to ptxas as the launch
        # bound (irutil.BLOCKS_PER_SM_ATTR) so that it keeps the thread to
        # that budget.
        self.resident = blocks_per_sm(wgrad_registers(
            window, width, self.cg, self.tile, found.stride[-1],
            irutil.element_bytes(found.element), found.dilation[-1]), self.threads)
        self.workspace = ir.MemRefType.get([self.split, self.taps * self.cg, self.channels],
                                           ir.F32Type.get())
        self.smem = ir.MemRefType.get([self.threads * width], ir.F32Type.get(),
                                      memory_space=ir.Attribute.parse(_WORKGROUP))


def _launch(blocks, threads, smem=None):
    """A gpu.launch of ``blocks`` (x, y) x ``threads``; with a workgroup
    buffer of type ``smem``. Returns (launch, its block's arguments, the
    insertion point before its terminator)."""
    launch = gpu.LaunchOp((_index(blocks[0]), _index(blocks[1]), _index(1)),
                          (_index(threads), _index(1), _index(1)))
    block = launch.regions[0].blocks[0]
    if smem is not None:
        launch.attributes["workgroup_attributions"] = ir.IntegerAttr.get(
            ir.IntegerType.get_signless(64), 1)
        block.add_argument(smem, ir.Location.unknown())
    with ir.InsertionPoint(block):
        terminator = gpu.TerminatorOp()
    return launch, list(block.arguments), ir.InsertionPoint(terminator)


def _clamped(value, size, always):
    """(value clamped into [0, size), the predicate it was inside) or
    (value, None) when it ``always`` is. A negative index wraps to a huge
    unsigned one: one compare checks both ends."""
    if always:
        return value, None
    inside = arith.cmpi(arith.CmpIPredicate.ult, value, _index(size))
    return arith.minui(value, _index(size - 1)), inside


def _shifted(value, shift):
    if shift > 0:
        return arith.addi(value, _index(shift))
    return arith.subi(value, _index(-shift)) if shift else value


class _Partials:
    """1.: one thread's partial sums (see the module doc)."""

    def __init__(self, g):
        self.g, self.f = g, g.found
        self.f32 = ir.F32Type.get()
        self.vtype = ir.VectorType.get([g.width], self.f32)
        self.raw = ir.VectorType.get([g.width], self.f.element)
        self.x_view, self.x_order = memory_order_view(self.f.x)
        self.dy_view, self.dy_order = memory_order_view(self.f.w)

    def _load(self, buffer, view, order, indices):
        element = self.f.element
        if self.g.width == 1:
            return vector.broadcast(self.raw, memref.load(buffer, indices))
        return vector.load(self.raw, view, [indices[d] for d in order],
                           alignment=self.g.width * irutil.element_bytes(element))

    def _f32(self, v):
        return v if self.f.element == self.f32 else arith.extf(self.vtype, v)

    def _masked(self, v, ok):
        if ok is None:
            return v
        zero = arith.constant(self.raw, ir.DenseElementsAttr.get_splat(
            self.raw, irutil.zero_attr(self.f.element)))
        return arith.select(ok, v, zero)

    def _inputs(self, n, c0, ic, spatial, ok):
        """The f32 x vectors of the thread's output lanes at pixel
        ``spatial``, one per input channel of its chunk ``ic`` (see the
        module doc), zero where ``ok`` is false."""
        f, g = self.f, self.g
        if g.cg == 1 and g.kg == 1:
            x = self._load(f.x, self.x_view, self.x_order, [n, c0] + spatial)
            return [self._f32(self._masked(x, ok))]
        element = f.element
        part = math.gcd(g.chunk, g.width)
        vtype = ir.VectorType.get([part], element)
        group = arith.divui(c0, _index(g.kg)) if g.kg > 1 else c0
        first = arith.addi(arith.muli(group, _index(g.cg)), arith.muli(ic, _index(g.chunk)))
        scalars = []
        for gi in range(max(1, g.width // g.kg)):
            for p in range(g.chunk // part):
                c = arith.addi(first, _index(gi * g.cg + p * part)) if gi or p else first
                at = [n, c] + spatial
                if part == 1:
                    v = vector.broadcast(vtype, memref.load(f.x, at))
                else:
                    v = vector.load(vtype, self.x_view, [at[d] for d in self.x_order],
                                    alignment=part * irutil.element_bytes(element))
                if ok is not None:
                    v = arith.select(ok, v, arith.constant(vtype, ir.DenseElementsAttr.get_splat(
                        vtype, irutil.zero_attr(element))))
                if element != self.f32:
                    v = arith.extf(ir.VectorType.get([part], self.f32), v)
                scalars += [vector.extract(v, [], [i]) for i in range(part)]
        return [vector.from_elements(self.vtype, [scalars[i] for i in source])
                for source in lane_sources(g.chunk, g.kg, g.width)]

    def item(self, accs, item, c0, rg, ic):
        """``accs`` after the work item ``item`` (see the module doc); ``rg``
        the thread's filter row (a linear index over the rows), or None
        when it takes them all; ``ic`` its chunk of input channels."""
        f, g = self.f, self.g
        ivs = loops.delinearize(item, g.counts)
        n, rows, run = ivs[0], ivs[1:-1], ivs[-1]
        out = f.dy_shape[2:]
        last = len(out) - 1
        q0 = arith.muli(run, _index(g.tile)) if g.tile > 1 else run
        full = out[-1] % g.tile == 0
        dys = []
        for u in range(g.tile):
            q, ok = _clamped(_shifted(q0, u), out[-1], full or u == 0)
            dys.append(self._f32(self._masked(
                self._load(f.w, self.dy_view, self.dy_order, [n, c0] + rows + [q]), ok)))
        s_w, dl_w, pre_w, size_w = f.stride[last], f.dilation[last], f.pre[last], f.in_shape[-1]
        cols = sorted({u * s_w + t * dl_w for u in range(g.tile) for t in range(g.row_taps)})
        first = arith.muli(q0, _index(s_w)) if s_w != 1 else q0
        last_first = (g.counts[-1] - 1) * g.tile * s_w
        col = {e: _clamped(_shifted(first, e - pre_w), size_w,
                           e >= pre_w and last_first + e - pre_w < size_w) for e in cols}
        uppers = list(product(range(k) for k in f.window[:last]))
        if rg is not None:
            taps = loops.delinearize(rg, list(f.window[:last]))
            uppers = [taps]
        accs = list(accs)
        for index, upper in enumerate(uppers):
            row_ok, picked = None, []
            for i, t in enumerate(upper):
                s, dl, pre, size = f.stride[i], f.dilation[i], f.pre[i], f.in_shape[2 + i]
                h = arith.muli(rows[i], _index(s)) if s != 1 else rows[i]
                if isinstance(t, int):
                    h = _shifted(h, t * dl - pre)
                    always = t * dl >= pre and (out[i] - 1) * s + t * dl - pre < size
                else:
                    tap = arith.muli(t, _index(dl)) if dl != 1 else t
                    h = _shifted(arith.addi(h, tap), -pre)
                    always = False
                h, ok = _clamped(h, size, always)
                picked.append(h)
                row_ok = _both(row_ok, ok)
            contract = ir.Attribute.parse(_CONTRACT)
            for e in cols:
                pixels = self._inputs(n, c0, ic, picked + [col[e][0]], _both(row_ok, col[e][1]))
                for u in range(g.tile):
                    t, rest = divmod(e - u * s_w, dl_w)
                    if rest or not 0 <= t < g.row_taps:
                        continue
                    for i, pixel in enumerate(pixels):
                        j = (index * g.row_taps + t) * g.chunk + i
                        accs[j] = arith.addf(accs[j], arith.mulf(pixel, dys[u],
                                                                 fastmath=contract),
                                             fastmath=contract)
        return accs


def _partials(g, workspace):
    """1.: the partial sums' launch."""
    launch, args, at = _launch(g.blocks, g.threads, g.smem)
    bx, by, tx, smem = args[0], args[1], args[3], args[12]
    with at:
        thread = _Partials(g)
        lane = arith.divui(tx, _index(g.sub)) if g.lanes > 1 else _index(0)
        rest = arith.remui(tx, _index(g.sub)) if g.lanes > 1 else tx
        cg = arith.remui(rest, _index(g.slice)) if g.slice > 1 else _index(0)
        # The thread's unit of the filter: a row (or all of them) and a
        # chunk of input channels.
        unit = arith.divui(rest, _index(g.slice)) if g.slice > 1 else rest
        rg = (arith.divui(unit, _index(g.chunks)) if g.chunks > 1 else unit) \
            if g.by_rows else None
        ic = arith.remui(unit, _index(g.chunks)) if g.chunks > 1 else _index(0)
        c0 = arith.muli(arith.addi(arith.muli(by, _index(g.slice)), cg), _index(g.width))
        start = arith.addi(arith.muli(bx, _index(g.lanes)), lane)
        zero = arith.constant(thread.vtype, ir.DenseElementsAttr.get_splat(
            thread.vtype, ir.FloatAttr.get(thread.f32, 0.0)))
        loop = scf.ForOp(start, _index(g.items), _index(g.split * g.lanes),
                         [zero] * (g.thread_taps * g.chunk))
        with ir.InsertionPoint(loop.body):
            scf.YieldOp(thread.item(list(loop.inner_iter_args), loop.induction_variable, c0, rg,
                                    ic))
        accs = list(loop.results)
        # The block's lanes summed a tap at a time, in lane order.
        slot = arith.muli(tx, _index(g.width))
        for j, acc in enumerate(accs):
            vector.store(acc, smem, [slot])
            gpu.barrier()
            first = scf.IfOp(arith.cmpi(arith.CmpIPredicate.ult, tx, _index(g.sub)))
            with ir.InsertionPoint(first.then_block):
                total = scf.ForOp(_index(0), _index(g.lanes), _index(1), [zero])
                with ir.InsertionPoint(total.body):
                    at_lane = arith.addi(arith.muli(total.induction_variable,
                                                    _index(g.sub * g.width)), slot)
                    scf.YieldOp([arith.addf(total.inner_iter_args[0],
                                            vector.load(thread.vtype, smem, [at_lane]))])
                # Workspace row tap x Cg + input channel.
                t, i = divmod(j, g.chunk)
                tap = _index(t) if rg is None else \
                    arith.addi(arith.muli(rg, _index(g.row_taps)), _index(t))
                channel = arith.addi(arith.muli(ic, _index(g.chunk)), _index(i)) \
                    if g.chunks > 1 else _index(i)
                row = arith.addi(arith.muli(tap, _index(g.cg)), channel) if g.cg > 1 else tap
                vector.store(total.results[0], workspace, [bx, row, c0])
                scf.YieldOp([])
            gpu.barrier()


def _sum(g, workspace):
    """2.: the partials summed in a fixed order, the epilogue, dw stored.

    A warp per row of the workspace and channel vector: lane l sums the
    partials l, l + 32, ... in order, then five XOR shuffles add the lanes'
    sums (the same tree in every run, so the result is too) and lane 0
    runs the epilogue. Each lane's loads are independent, so a warp has up
    to 32 of them in flight where one thread walking the ``split``
    partials would wait ``split`` times on L2."""
    f = g.found
    total = g.taps * g.cg * g.groups
    warps = SUM_THREADS // WARP
    launch, args, at = _launch((-(-total // warps), 1), SUM_THREADS)
    bx, tx = args[0], args[3]
    f32 = ir.F32Type.get()
    i32 = ir.IntegerType.get_signless(32)
    vtype = ir.VectorType.get([g.width], f32)
    with at:
        i = arith.addi(arith.muli(bx, _index(warps)), arith.divui(tx, _index(WARP)))
        lane = arith.remui(tx, _index(WARP))
        # Whole warps pass or fail this guard: the shuffles see all lanes.
        guard = scf.IfOp(arith.cmpi(arith.CmpIPredicate.ult, i, _index(total)))
        with ir.InsertionPoint(guard.then_block):
            row = arith.divui(i, _index(g.groups))
            tap, channel = (arith.divui(row, _index(g.cg)), arith.remui(row, _index(g.cg))) \
                if g.cg > 1 else (row, _index(0))
            c0 = arith.muli(arith.remui(i, _index(g.groups)), _index(g.width))
            zero = arith.constant(vtype, ir.DenseElementsAttr.get_splat(
                vtype, ir.FloatAttr.get(f32, 0.0)))
            loop = scf.ForOp(lane, _index(g.split), _index(WARP), [zero])
            with ir.InsertionPoint(loop.body):
                part = vector.load(vtype, workspace, [loop.induction_variable, row, c0])
                scf.YieldOp([arith.addf(loop.inner_iter_args[0], part)])
            sums = [vector.extract(loop.results[0], [], [k]) for k in range(g.width)]
            for offset in (16, 8, 4, 2, 1):
                if offset >= g.split:
                    continue  # lanes at and past ``split`` hold zeros
                sums = [arith.addf(s, gpu.ShuffleOp(s, arith.constant(i32, offset),
                                                    arith.constant(i32, WARP),
                                                    gpu.ShuffleMode.XOR).results[0])
                        for s in sums]
            first = scf.IfOp(arith.cmpi(arith.CmpIPredicate.eq, lane, _index(0)))
            with ir.InsertionPoint(first.then_block):
                taps = loops.delinearize(tap, list(f.window))
                if f.flip:  # convolution mode: position tap t is filter tap R - 1 - t
                    taps = [arith.subi(_index(r - 1), t) for r, t in zip(f.window, taps)]
                for k in range(g.width):
                    c = arith.addi(c0, _index(k)) if k else c0
                    point = [c, channel] + taps
                    env = evaluate(f, sums[k], point)
                    for buffer in f.stored:
                        memref.store(env[buffer], buffer, point)
                scf.YieldOp([])
            scf.YieldOp([])


def build(fn, found, width, threads, tile, split):
    """Replace kernel ``fn``'s body (a depthwise filter gradient that
    depthwise.py's ``match`` read) by its two launches: about ``threads`` a
    block, ``width`` channels a thread, runs of ``tile`` output pixels
    along W, ``split`` blocks along the reduction. Returns the Geometry."""
    g = Geometry(found, width, threads, tile, split)
    body = irutil.body(fn)
    first = next(op for op in body.operations if op.operation.name != "arith.constant")
    with ir.InsertionPoint(first), fn.location:
        workspace = memref.alloc(g.workspace, [], [])
        _partials(g, workspace)
        _sum(g, workspace)
    for op in reversed(found.ops):
        if op.name not in ("arith.constant", "func.return"):
            op.erase()
    if g.resident > 1:
        fn.attributes[irutil.BLOCKS_PER_SM_ATTR] = ir.DenseI32ArrayAttr.get([g.resident, 0])
    return g
