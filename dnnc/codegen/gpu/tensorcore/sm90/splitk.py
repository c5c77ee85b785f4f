"""tc-sm90's split-K: several work units share one tile's K steps, and their
accumulators are summed in a fixed order, so the result does not depend on
timing.

With ``splits`` S > 1 a work unit is one split of a tile's K steps
(scheduler.py), and the consumers store their f32 accumulators into a
``[P, batch, M, N]`` workspace of P = S partials (``store_partial``). Up to
LAST_ARRIVAL_SPLITS partials, the last warp of a tile's to arrive sums them
and runs the epilogue in this launch (``sum_if_last``); beyond, a second
launch does (``reduce_splits``). With ``cluster`` C > 1 the launch runs in
thread-block clusters of C consecutive splits of a tile, one unit a block,
which first sum their accumulators through distributed shared memory
(``cluster_sum``): P = S / C, and a lone partial (C = S) is not stored at
all, its owner runs the epilogue. A filter gradient's bias gradient
(bias_grad.py) has its split partials summed, in split order, wherever its
rows' weight partials are.
"""

from mlir import ir
from mlir.dialects import arith, gpu, llvm, memref, nvvm, scf, vector

from dnnc.codegen.gpu.tensorcore.emit import (
    cmp as _cmp, i as _i, idx as _idx, if_ as _if, ptr as _ptr, shared_ptr as _shared_ptr,
    to_i32 as _to_i32, to_i64 as _to_i64,
)
from dnnc.codegen.gpu.tensorcore.sm90.support import WARPGROUP, NotSupported

# Split-K over at most this many splits sums the partials in the GEMM's own
# launch (the last warp of a tile's splits to arrive reads the others'); more
# splits leave it to a second launch, which spreads the sum over every SM
# (see SplitK.sum_if_last).
LAST_ARRIVAL_SPLITS = 4


def arrive(arrivals, counter, first_lane):
    """A warp's arrival at i32 counter ``counter`` of ``arrivals``
    (``first_lane``: lane 0 of the warp): the warp's stores before are made
    visible to the GPU (membar.gl), lane 0 adds one and fences again, and
    every lane gets the count before the add (the last of n to arrive reads
    n - 1)."""
    i32 = ir.IntegerType.get_signless(32)
    nvvm.MembarOp(nvvm.MemScopeKind.GPU)
    nvvm.SyncWarpOp(_i(-1))
    count = scf.IfOp(first_lane, [i32], has_else=True)
    with ir.InsertionPoint(count.then_block):
        before = memref.atomic_rmw(arith.AtomicRMWKind.addi, _i(1), arrivals, [counter])
        nvvm.MembarOp(nvvm.MemScopeKind.GPU)
        scf.YieldOp([before])
    with ir.InsertionPoint(count.else_block):
        scf.YieldOp([_i(0)])
    nvvm.SyncWarpOp(_i(-1))
    return gpu.ShuffleOp(count.results[0], _i(0), _i(32), gpu.ShuffleMode.IDX).results[0]


class SplitK:
    """How ``kernel``'s (kernel.Kernel) K splits are summed. Raises
    NotSupported when the splits cannot be summed in clusters of the tile's
    ``cluster`` blocks."""

    def __init__(self, kernel):
        self.k = kernel
        self.cluster = kernel.tile.cluster
        self._check_cluster()
        # Split-K in clusters: each cluster of ``cluster`` consecutive splits
        # sums its accumulators through distributed shared memory
        # (cluster_sum) and leaves one partial; ``parts`` partials a tile.
        self.parts = kernel.scheduler.splits // self.cluster
        self.partials = None     # split-K: the f32 [part, batch, M, N] workspace
        # Partials summed in this launch: an i32 arrival count per warp of a
        # tile ([tile, consumer, warp]), zero between calls.
        self.last_arrival = 1 < self.parts <= LAST_ARRIVAL_SPLITS
        self.arrivals = None

    def allocate(self):
        """Host side, before the launch: the partials workspace and the
        arrival counters (where this launch sums)."""
        k = self.k
        if self.parts > 1:
            self.partials = memref.alloc(ir.MemRefType.get(
                [self.parts, k.gemm.batch, k.gemm.m, k.gemm.n],
                ir.F32Type.get()), [], [])
        if self.last_arrival:
            self.arrivals = memref.alloc(ir.MemRefType.get(
                [k.scheduler.total_tiles * k.tile.consumers * WARPGROUP // 32],
                ir.IntegerType.get_signless(32)), [], [])

    @property
    def second_launch(self):
        """Whether a launch after the GEMM's sums the partials."""
        return self.parts > 1 and not self.last_arrival

    def _check_cluster(self):
        """Raise NotSupported unless the splits can be summed in clusters of
        ``self.cluster`` blocks (each of which runs one work unit and lends
        its drained ring to the sum)."""
        k = self.k
        c, tile, units = self.cluster, k.tile, k.scheduler
        if c == 1:
            return
        slices = tile.consumers * WARPGROUP // 32
        if c not in (2, 4, 8) or c > slices:
            raise NotSupported(f"a cluster of {c} blocks summing K splits: expected 2, 4 or 8, "
                               f"at most the tile's {slices} warps of accumulators")
        if units.splits % c:
            raise NotSupported(f"K split {units.splits} ways (of {units.per_split} steps) in "
                               f"clusters of {c}: expected a multiple of {c}")
        if units.units > units.ctas:
            raise NotSupported(f"{units.units} split tiles for {units.ctas} blocks: a cluster "
                               "sum needs a block for each")
        if k.ring_bytes < tile.m * tile.n * 4:
            raise NotSupported(f"a cluster sum of {tile.m}x{tile.n} f32 accumulators in a "
                               f"ring of {k.ring_bytes} bytes: expected at least "
                               f"{tile.m * tile.n * 4}")

    def finish_part(self, acc, where, part):
        """Split-K: store partial ``part`` of the tile and, when this launch
        sums the partials, sum them if it is the last; a lone part (a cluster
        that took every split) runs the epilogue at once."""
        k = self.k
        if self.parts == 1:
            if k.bias is not None:
                k.bias.sum_splits(*where)
            k.epilogue.apply(acc, *where, k.epilogue.inputs(*where))
            return
        self.store_partial(acc, *where, part)
        if self.last_arrival:
            self.sum_if_last(acc, *where)

    def cluster_sum(self, acc, where, split):
        """Split-K in clusters: the ``cluster`` blocks of consecutive splits
        (cluster rank = split % cluster) sum their accumulators through
        distributed shared memory; then the block that owns each warp's
        slice finishes it as one partial (_finish_part).

        Warp w of the 8 (4) consumer warps holds slice w of the tile (its 16
        rows); rank w % cluster owns it. Once every block of the cluster is
        past its last K step (a cluster barrier: the rings are drained),
        every warp stores its slice's BN / 2 accumulator values, 16 bytes a
        lane (lane-interleaved: the layout does not matter, the owner reads
        it back the same way), into slot (w / cluster, sender rank) of the
        owner's ring (mapa to the owner's rank, then st.shared::cluster).
        After a second barrier, whose arrival releases those stores to the
        cluster, the owning warps add the slots in rank order: the sum does
        not depend on timing. The first barrier orders execution only (the
        rings' last reads are done): its arrival is relaxed."""
        k = self.k
        consumer, local = where[0], where[1]
        c = self.cluster
        rank = arith.remui(split, _idx(c))
        slice_ = arith.addi(arith.muli(consumer, _idx(WARPGROUP // 32)),
                            arith.divui(local, _idx(32)))
        owner = arith.remui(slice_, _idx(c))
        lane = _to_i64(arith.remui(local, _idx(32)))
        vectors = k.tile.n // 8           # 4 values a vector, BN / 2 values a thread
        fragment = vectors * 32 * 16         # bytes of a warp's slice
        f32 = ir.F32Type.get()
        v4 = ir.VectorType.get([4], f32)
        first_slot = _to_i64(arith.muli(arith.divui(slice_, _idx(c)), _idx(c)))

        def slot(sender, v):
            """shared::cta address of vector ``v`` of this lane in the slot of
            ``sender`` (an i64 rank) for this warp's slice."""
            index = arith.addi(first_slot, sender)
            offset = arith.addi(arith.muli(index, _i(fragment, 64)),
                                arith.addi(_i(v * 512, 64), arith.muli(lane, _i(16, 64))))
            return _shared_ptr(arith.addi(k.base, offset))

        if k.bias is not None:
            k.bias.publish()
        nvvm.cluster_arrive_relaxed(aligned=True)
        nvvm.cluster_wait(aligned=True)
        to = _to_i32(owner)
        for v in range(vectors):
            values = [llvm.extractvalue(f32, acc, ir.DenseI64ArrayAttr.get([4 * v + e]))
                      for e in range(4)]
            remote = nvvm.mapa(_ptr(7), slot(_to_i64(rank), v), to)
            llvm.store(vector.from_elements(v4, values), remote, alignment=16)
        nvvm.cluster_arrive(aligned=True)
        nvvm.cluster_wait(aligned=True)

        def own():
            summed = acc
            for v in range(vectors):
                total = None
                for q in range(c):
                    part = llvm.load(v4, slot(_i(q, 64), v), alignment=16)
                    total = part if total is None else arith.addf(total, part)
                for e in range(4):
                    summed = llvm.insertvalue(summed, vector.extract(total, [], [e]),
                                              ir.DenseI64ArrayAttr.get([4 * v + e]))
            self.finish_part(summed, where, arith.divui(split, _idx(c)))
        _if(_cmp("eq", owner, rank), own)

    def store_partial(self, acc, consumer, local, batch, tile_m, tile_n, split):
        """Split-K: this split's accumulator, unscaled f32, into its slice of
        the partials workspace (rows and columns past M and N are dropped)."""
        k = self.k
        gemm = k.gemm
        row0, col0 = k.epilogue.origin(consumer, local, tile_m, tile_n)
        f32 = ir.F32Type.get()
        pairs = gemm.n % 2 == 0
        for h in range(2):
            row = arith.addi(row0, _idx(8 * h)) if h else row0
            row_ok = _cmp("ult", row, _idx(gemm.m))
            for j in range(k.tile.n // 8):
                col = arith.addi(col0, _idx(8 * j)) if j else col0
                v = [llvm.extractvalue(f32, acc, ir.DenseI64ArrayAttr.get([4 * j + 2 * h + e]))
                     for e in range(2)]
                where = [split, batch, row]
                if pairs:
                    ok = arith.andi(row_ok, _cmp("ult", col, _idx(gemm.n)))
                    vec = vector.from_elements(ir.VectorType.get([2], f32), v)
                    _if(ok, lambda vec=vec, col=col:
                        vector.store(vec, self.partials, where + [col], alignment=8))
                    continue
                for e in range(2):
                    c = arith.addi(col, _idx(e)) if e else col
                    ok = arith.andi(row_ok, _cmp("ult", c, _idx(gemm.n)))
                    _if(ok, lambda c=c, e=e: memref.store(v[e], self.partials, where + [c]))

    def sum_if_last(self, acc, consumer, local, batch, tile_m, tile_n):
        """Split-K in one launch: each warp counts its tile's arrivals; the
        last of the partials' warps to arrive sums every partial at its
        accumulator positions and runs the epilogue.

        Every lane's partial stores are fenced (membar.gl) and the warp
        synchronized before lane 0 adds 1 to the warp's counter; lane 0 of
        the warp that takes it to ``parts`` fences again (its later loads
        see every partial's stores), puts the counter back to zero for the
        next call, and the warp reads the partials in order: the sum, as the
        second launch's, does not depend on which split came last. The
        warps of the earlier partials go on to their next tile at once; no
        block waits for another. The last warp reads (parts - 1) partials
        more than it wrote, so many would leave a few SMs reading long
        after the others are done: beyond LAST_ARRIVAL_SPLITS the sum is a
        second launch."""
        k = self.k
        warp = arith.divui(local, _idx(32))
        lane = arith.remui(local, _idx(32))
        tile_index = arith.addi(
            arith.muli(arith.addi(arith.muli(batch, _idx(k.scheduler.tiles_m)), tile_m),
                       _idx(k.scheduler.tiles_n)), tile_n)
        counter = arith.addi(arith.muli(arith.addi(
            arith.muli(tile_index, _idx(k.tile.consumers)), consumer), _idx(WARPGROUP // 32)),
            warp)
        first_lane = _cmp("eq", lane, _idx(0))
        before = arrive(self.arrivals, counter, first_lane)

        def last():
            _if(first_lane, lambda: memref.store(_i(0), self.arrivals, [counter]))
            row0, col0 = k.epilogue.origin(consumer, local, tile_m, tile_n)
            summed = acc
            for h in range(2):
                _, _, row_safe = k.epilogue.rows(row0, h)
                for j in range(k.tile.n // 8):
                    col = arith.addi(col0, _idx(8 * j)) if j else col0
                    sums = self.in_split_order(
                        lambda s, col=col, row_safe=row_safe:
                        self.load_partial(s, batch, row_safe, col))
                    for e in range(2):
                        summed = llvm.insertvalue(summed, sums[e],
                                                  ir.DenseI64ArrayAttr.get([4 * j + 2 * h + e]))
            if k.bias is not None:
                k.bias.sum_splits(consumer, local, batch, tile_m, tile_n)
            inputs = k.epilogue.inputs(consumer, local, batch, tile_m, tile_n)
            k.epilogue.apply(summed, consumer, local, batch, tile_m, tile_n, inputs)
        _if(_cmp("eq", before, _i(self.parts - 1)), last)

    def in_split_order(self, load):
        """The sums over the partials of ``load(part)`` (a list of f32 values),
        added in order: both ways of summing split-K (_sum_if_last,
        _reduce_splits) give the same bits, whatever split finished last."""
        sums = load(0)
        for s in range(1, self.parts):
            sums = [arith.addf(a, b) for a, b in zip(sums, load(s))]
        return sums

    def load_partial(self, split, batch, row, col, count=2):
        """Split ``split``'s partials at columns col .. col + count - 1 of
        ``row``, read at clamped positions (a column past N reads a valid
        one, whose value the epilogue does not store): one aligned pair when
        N is even (count 2), else scalars."""
        k = self.k
        gemm = k.gemm
        f32 = ir.F32Type.get()
        where = [_idx(split), batch, row]
        if gemm.n % 2 == 0:
            safe = col if gemm.n % k.tile.n == 0 else arith.minui(col, _idx(gemm.n - 2))
            vec = vector.load(ir.VectorType.get([2], f32), self.partials, where + [safe],
                              alignment=8)
            return [vector.extract(vec, [], [e]) for e in range(2)]
        out = []
        for e in range(count):
            c = arith.addi(col, _idx(e)) if e else col
            out.append(memref.load(self.partials, where + [arith.minui(c, _idx(gemm.n - 1))]))
        return out

    def reduce_splits(self):
        """Split-K, second launch: sum each output's partials in a fixed
        order (the result does not depend on timing), then
        run the epilogue on it. One thread per pair of columns (per column
        when N is odd), 256 threads per block."""
        k = self.k
        gemm = k.gemm
        width = 2 if gemm.n % 2 == 0 else 1
        per_row = gemm.n // width
        items = gemm.batch * gemm.m * per_row
        threads = 256
        blocks = -(-items // threads)
        launch = gpu.LaunchOp((_idx(blocks), _idx(1), _idx(1)),
                              (_idx(threads), _idx(1), _idx(1)))
        block = launch.regions[0].blocks[0]
        with ir.InsertionPoint(block):
            end = gpu.TerminatorOp()
        with ir.InsertionPoint(end):
            item = arith.addi(arith.muli(gpu.block_id(gpu.Dimension.x), _idx(threads)),
                              gpu.thread_id(gpu.Dimension.x))

            def body():
                col = arith.muli(arith.remui(item, _idx(per_row)), _idx(width))
                rows = arith.divui(item, _idx(per_row))
                row = arith.remui(rows, _idx(gemm.m))
                batch = arith.divui(rows, _idx(gemm.m))
                sums = self.in_split_order(
                    lambda s: self.load_partial(s, batch, row, col, width))
                envs = []
                for e, v in enumerate(sums):
                    c = arith.addi(col, _idx(e)) if e else col
                    envs.append(k.epilogue.pair.evaluate(v, k.epilogue.pair.point(batch, row, c)))
                k.epilogue.pair.store(envs, batch, row, col, full_n=True)
            _if(_cmp("ult", item, _idx(items)), body)
            if k.bias is not None:
                k.bias.reduce(item)