"""A simt-gemm kernel: a register-blocked FFMA GEMM for f32 operands
multiplied exactly in f32 (the tensor cores take f32 only as tf32).

One block per ``BM x BN`` output tile (per batch, in the grouped order of
tc-sm80's scheduler), and per K split when ``split`` > 1. Its threads form
a ``TY x TX`` grid; thread (ty, tx) owns a ``TM x TN`` micro-tile of 4 x 4
chunks that lie a thread grid apart: rows ``4 ty + 4 TY i + r`` and columns
``4 tx + 4 TX j + c`` (i < TM / 4, j < TN / 4, r, c < 4). Spread so, a
chunk's 4 rows of A (4 columns of B) are one float4 in a shared row of K,
and a warp's reads of one K slice touch few distinct float4s (broadcasts)::

    1. prologue   load K step 0 of A and B (loader.py: global -> registers),
                  store it into stage 0, barrier
    2. mainloop   for each K step kt of the block's range:
                    issue the global loads of step kt + 1 (the last step
                    again past the end: nothing is read out of bounds)
                    for each of the BK slices of the stage: TM / 4 float4
                    reads of A and TN / 4 of B, TM x TN FFMAs
                    store the loads into the other stage, barrier
                  (two stages: the barrier after the stores also orders
                  this step's reads before the next step's stores)
    3. epilogue   unsplit: the fused pointwise chain on each pair of
                  columns (pair_epilogue.py), stored 4 columns at once
                  where N is a multiple of 4; split: the f32 partial into
                  the workspace; up to LAST_ARRIVAL_SPLITS splits the last
                  block of the tile to arrive (an atomic count per tile)
                  reads every partial in split order and runs the epilogue
                  on the sum, in this launch; more, a second launch sums
                  them (splitk.py)

FFMA (llvm.fma.f32) rounds once per multiply-add: each output is the f32
sum of its K products in order of K within a split, splits summed in
order, the same on every run.
"""

from mlir import ir
from mlir.dialects import arith, gpu, llvm, memref, nvvm, scf, vector

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.math.scalar import intrinsic
from dnnc.codegen.gpu.simt_gemm.loader import OperandLoader
from dnnc.codegen.gpu.simt_gemm.splitk import reduce_splits
from dnnc.codegen.gpu.simt_gemm.support import (
    CHUNK, LAST_ARRIVAL_SPLITS, MAX_ACCUMULATORS, MAX_SHARED, MAX_SPLIT, MAX_THREADS,
    NotSupported,
)
from dnnc.codegen.gpu.tensorcore.emit import (
    erase_replaced, i as _i, idx as _idx, if_ as _if, launch, ptr as _ptr, shared_base,
    to_i64 as _i64,
)
from dnnc.codegen.gpu.tensorcore.pair_epilogue import PairEpilogue, store_lanes
from dnnc.codegen.gpu.tensorcore.sm80.scheduler import tile_of_block


def _ceil(a, b):
    return -(-a // b)


def splits_of(gemm, tile):
    """(K steps a split, splits): ``tile.split`` made into equal runs of
    steps, none empty (5 splits of 8 steps run as 4 of 2)."""
    steps = max(1, _ceil(gemm.k, tile.k))
    per = _ceil(steps, max(1, min(tile.split, steps)))
    return per, _ceil(steps, per)


def check(gemm, tile):
    """Raise NotSupported unless simt-gemm with ``tile`` computes ``gemm``."""
    if gemm.element != "f32" or gemm.compute != "f32":
        raise NotSupported(f"{gemm.element} operands computed as {gemm.compute}: expected f32 "
                           "operands multiplied in f32")
    for name, operand in (("A", gemm.a), ("B", gemm.b)):
        if operand.prologue is not None:
            raise NotSupported(f"a prologue on {name}: simt-gemm applies none")
        if operand.stored != "f32":
            raise NotSupported(f"{name} stored as {operand.stored}: expected f32")
    if min(gemm.m, gemm.n, gemm.k, gemm.batch) < 1:
        raise NotSupported(f"an empty GEMM ({gemm.m}x{gemm.n}x{gemm.k} x{gemm.batch}): "
                           "expected M, N, K and the batch at least 1")
    if gemm.epilogue.pixels:
        raise NotSupported("an epilogue through pixel views (a convolution's): expected a "
                           "matmul's")
    if not 1 <= tile.threads <= MAX_THREADS or tile.threads % 32:
        raise NotSupported(f"{tile.threads} threads: expected a multiple of 32 up to "
                           f"{MAX_THREADS}")
    micro = tile.micro
    if micro is None:
        raise NotSupported(f"tile {tile.m}x{tile.n} over {tile.threads} threads: expected "
                           f"micro-tiles of multiples of {CHUNK} x {CHUNK}")
    if micro[0] * micro[1] > MAX_ACCUMULATORS:
        raise NotSupported(f"micro-tile {micro[0]}x{micro[1]}: expected at most "
                           f"{MAX_ACCUMULATORS} accumulators a thread")
    for name, rows in (("M", tile.m), ("N", tile.n)):
        if rows * tile.k % tile.threads:
            raise NotSupported(f"a {rows}x{tile.k} tile of the operand along {name} over "
                               f"{tile.threads} threads: expected a whole number of elements "
                               "each")
    if gemm.batch_shape is not None:
        raise NotSupported(f"batch dims {list(gemm.batch_shape)} broadcast against each other: "
                           "simt-gemm addresses one batch dim")
    if not 1 <= tile.split <= MAX_SPLIT:
        raise NotSupported(f"split {tile.split}: expected 1 to {MAX_SPLIT}")
    if tile.smem_bytes > MAX_SHARED:
        raise NotSupported(f"tile {tile.m}x{tile.n}x{tile.k}: {tile.smem_bytes} bytes of "
                           f"shared memory, expected at most {MAX_SHARED}")


class Kernel:
    """The simt-gemm kernel of ``gemm`` in ``tile``s, replacing kernel
    function ``fn``'s body."""

    def __init__(self, fn, gemm, tile):
        self.fn, self.gemm, self.tile = fn, gemm, tile
        self.tm, self.tn = tile.micro
        self.ty_count, self.tx_count = tile.grid
        self.per_split, self.splits = splits_of(gemm, tile)
        self.tiles_m = _ceil(gemm.m, tile.m)
        self.tiles_n = _ceil(gemm.n, tile.n)
        self.arguments = list(irutil.body(fn).arguments)
        self.partials = None
        # The splits summed in this launch by the tile's last block to
        # arrive: an i32 arrival count per tile, zero between calls.
        self.last_arrival = 1 < self.splits <= LAST_ARRIVAL_SPLITS and not tile.second_launch
        self.arrivals = None

    def build(self):
        """Replace the kernel function's body: the launch (and the sum of
        the splits), then erase the linalg ops the kernel computes."""
        body = irutil.body(self.fn)
        old = [op.operation for op in body.operations]
        gemm = self.gemm
        with ir.InsertionPoint(old[-1]):
            blocks = self.tiles_m * self.tiles_n * gemm.batch
            if self.splits > 1:
                self.partials = memref.alloc(ir.MemRefType.get(
                    [self.splits, gemm.batch, gemm.m, gemm.n], ir.F32Type.get()), [], [])
            if self.last_arrival:
                self.arrivals = memref.alloc(ir.MemRefType.get(
                    [blocks], ir.IntegerType.get_signless(32)), [], [])
            launch((blocks, self.splits), self.tile.threads, self.tile.smem_bytes, self.kernel)
            if self.splits > 1 and not self.last_arrival:
                reduce_splits(gemm, self.arguments, self.partials, self.splits)
        erase_replaced(old[:-1])

    def kernel(self):
        """The body of a block: the prologue, the mainloop, the epilogue."""
        tile, gemm = self.tile, self.gemm
        f32 = ir.F32Type.get()
        i64 = ir.IntegerType.get_signless(64)
        tid = gpu.thread_id(gpu.Dimension.x)
        ty = arith.divui(tid, _idx(self.tx_count))
        tx = arith.remui(tid, _idx(self.tx_count))
        batch, tile_m, tile_n, _ = tile_of_block(self.tiles_m, self.tiles_n, gemm.batch)
        m0 = arith.muli(tile_m, _idx(tile.m))
        n0 = arith.muli(tile_n, _idx(tile.n))
        # This block's K steps: [first, end).
        if self.splits > 1:
            split = gpu.block_id(gpu.Dimension.y)
            first = arith.muli(split, _idx(self.per_split))
            end = arith.minui(arith.addi(first, _idx(self.per_split)),
                              _idx(_ceil(gemm.k, tile.k)))
        else:
            split, first, end = None, _idx(0), _idx(_ceil(gemm.k, tile.k))
        last = arith.subi(end, _idx(1))
        base = shared_base()
        stage_bytes = tile.stage_floats * 4
        a_rows = tile.k * tile.pitch(tile.m)          # B's tile follows A's in a stage
        a = OperandLoader(gemm.a, tile.m, gemm.m, gemm.k, tile, 0)
        b = OperandLoader(gemm.b, tile.n, gemm.n, gemm.k, tile, a_rows)
        a.prepare(tid, batch, m0)
        b.prepare(tid, batch, n0)

        def load(kt):
            k0 = arith.muli(kt, _idx(tile.k))
            return a.load(k0), b.load(k0)

        def store(values, stage):
            a.store(values[0], stage)
            b.store(values[1], stage)

        # Byte offsets of this thread's float4 chunks in a stage's row of K.
        a_at = [_i64(arith.muli(arith.addi(arith.muli(ty, _idx(CHUNK)),
                                           _idx(CHUNK * self.ty_count * i)), _idx(4)))
                for i in range(self.tm // CHUNK)]
        b_at = [_i64(arith.muli(arith.addi(arith.muli(tx, _idx(CHUNK)),
                                           _idx(CHUNK * self.tx_count * j + a_rows)), _idx(4)))
                for j in range(self.tn // CHUNK)]
        vec4 = ir.VectorType.get([CHUNK], f32)

        def chunk(stage, at, line):
            address = arith.addi(arith.addi(stage, at), _i(line * 4, 64))
            v = llvm.load(vec4, llvm.inttoptr(_ptr(3), address), alignment=16)
            return [vector.extract(v, [], [e]) for e in range(CHUNK)]

        # 1. Prologue: the block's first K step into stage 0.
        store(load(first), base)
        gpu.barrier()

        # 2. Mainloop: accumulators and the byte offset of the stage to read.
        zero = arith.constant(f32, 0.0)
        count = self.tm * self.tn
        loop = scf.ForOp(first, end, _idx(1), [zero] * count + [_i(0, 64)])
        with ir.InsertionPoint(loop.body):
            kt = loop.induction_variable
            accs = list(loop.inner_iter_args)[:count]
            read = list(loop.inner_iter_args)[count]
            # Step kt + 1's loads, in flight under this step's FFMAs (the
            # last step again at the end: a stage no one reads after).
            ahead = load(arith.minui(arith.addi(kt, _idx(1)), last))
            stage = arith.addi(base, read)
            for kk in range(tile.k):
                line_a = kk * tile.pitch(tile.m)
                line_b = kk * tile.pitch(tile.n)
                av = [x for at in a_at for x in chunk(stage, at, line_a)]
                bv = [x for at in b_at for x in chunk(stage, at, line_b)]
                accs = [intrinsic("llvm.fma.f32", av[r], bv[c], accs[r * self.tn + c])
                        for r in range(self.tm) for c in range(self.tn)]
            write = arith.subi(arith.constant(i64, stage_bytes), read)
            store(ahead, arith.addi(base, write))
            gpu.barrier()
            scf.YieldOp(accs + [write])
        accs = list(loop.results)[:count]

        # 3. Epilogue.
        tile_index = arith.addi(arith.muli(arith.addi(
            arith.muli(batch, _idx(self.tiles_m)), tile_m), _idx(self.tiles_n)), tile_n)
        self._finish(accs, split, batch, ty, tx, m0, n0, tid, tile_index)

    def _finish(self, accs, split, batch, ty, tx, m0, n0, tid, tile_index):
        """The epilogue of this thread's accumulators (or its partial, and
        where this launch sums the splits, the sum of the last to arrive)."""
        rows = [arith.addi(m0, arith.addi(arith.muli(ty, _idx(CHUNK)),
                                          _idx(CHUNK * self.ty_count * (r // CHUNK) + r % CHUNK)))
                for r in range(self.tm)]
        cols = [arith.addi(n0, arith.addi(arith.muli(tx, _idx(CHUNK)),
                                          _idx(CHUNK * self.tx_count * j)))
                for j in range(self.tn // CHUNK)]
        if self.splits > 1:
            self._store_partial(accs, split, batch, rows, cols)
            if self.last_arrival:
                self._sum_if_last(tid, tile_index, batch, rows, cols)
        else:
            self._epilogue(accs, batch, rows, cols)

    def _sum_if_last(self, tid, tile_index, batch, rows, cols):
        """Count this block's arrival at its tile; the last of the tile's
        splits to arrive reads every partial in split order (the same sum,
        bit for bit, as the second launch's, whichever split came last),
        runs the epilogue on it, and puts the count back to zero for the
        next call.

        Every thread's partial stores are fenced (membar.gl) and the block
        synchronized before thread 0 adds 1 to the tile's count; thread 0
        fences again, so that the block's later loads see every partial,
        and passes the count to the block through shared memory (the
        stages are free: the mainloop's last barrier is behind)."""
        i32 = ir.IntegerType.get_signless(32)
        nvvm.MembarOp(nvvm.MemScopeKind.GPU)
        gpu.barrier()
        word = llvm.inttoptr(_ptr(3), shared_base())
        first = arith.cmpi(arith.CmpIPredicate.eq, tid, _idx(0))

        def count():
            before = memref.atomic_rmw(arith.AtomicRMWKind.addi, _i(1), self.arrivals,
                                       [tile_index])
            nvvm.MembarOp(nvvm.MemScopeKind.GPU)
            llvm.store(before, word, alignment=4)
        _if(first, count)
        gpu.barrier()
        before = llvm.load(i32, word, alignment=4)

        def last():
            _if(first, lambda: memref.store(_i(0), self.arrivals, [tile_index]))
            self._epilogue(lambda r, j: self._summed(batch, rows[r], cols[j]), batch, rows,
                           cols)
        _if(arith.cmpi(arith.CmpIPredicate.eq, before, _i(self.splits - 1)), last)

    def _summed(self, batch, row, col):
        """The 4 columns from ``col`` of ``row`` summed over the partials in
        split order, read at clamped positions (a row or column past M or N
        reads a valid one, whose value the epilogue does not store): one
        vector a partial where N is a multiple of 4. Read chunk by chunk as
        the epilogue stores them, so that few sums are live at once."""
        gemm = self.gemm
        f32 = ir.F32Type.get()
        row_safe = row if gemm.m % self.tile.m == 0 else arith.minui(row, _idx(gemm.m - 1))
        sums = None
        for s in range(self.splits):
            where = [_idx(s), batch, row_safe]
            if gemm.n % CHUNK == 0:
                safe = col if gemm.n % self.tile.n == 0 else \
                    arith.minui(col, _idx(gemm.n - CHUNK))
                vec = vector.load(ir.VectorType.get([CHUNK], f32), self.partials,
                                  where + [safe], alignment=16)
                part = [vector.extract(vec, [], [e]) for e in range(CHUNK)]
            else:
                part = [memref.load(self.partials, where + [arith.minui(
                    arith.addi(col, _idx(e)) if e else col, _idx(gemm.n - 1))])
                    for e in range(CHUNK)]
            sums = part if sums is None else [arith.addf(a, b) for a, b in zip(sums, part)]
        return sums

    def _values(self, accs, r, j):
        """Chunk ``j`` of row ``r``: of the accumulators, or made by
        ``accs(r, j)`` where it is a function (the summed partials)."""
        if callable(accs):
            return accs(r, j)
        return accs[r * self.tn + CHUNK * j: r * self.tn + CHUNK * (j + 1)]

    def _epilogue(self, accs, batch, rows, cols):
        """Each row's chunks of 4 columns through the fused chain as two
        pairs, stored as one vector of 4 where N is a multiple of 4 (a
        chunk is all inside N or all outside), else pair by pair."""
        gemm, tile = self.gemm, self.tile
        epilogue = PairEpilogue(gemm, self.arguments, full_m=gemm.m % tile.m == 0,
                                full_n=gemm.n % tile.n == 0)
        lead = [batch] if epilogue.rank == 3 else []
        cache = {}
        for r, row in enumerate(rows):
            row_ok, row_safe = epilogue.row_guard(row)
            for j, col in enumerate(cols):
                values = self._values(accs, r, j)
                envs = []
                for p in range(2):
                    c = arith.addi(col, _idx(2 * p)) if p else col
                    envs += epilogue.evaluate_pair(batch, row_safe, c, values[2 * p:2 * p + 2],
                                                   cache, (j, p))
                if gemm.n % CHUNK == 0:
                    for buffer in epilogue.stored:
                        store_lanes([env[buffer] for env in envs], buffer, lead + [row, col],
                                    row_ok, col, None if epilogue.full_n else gemm.n)
                else:
                    for p in range(2):
                        c = arith.addi(col, _idx(2 * p)) if p else col
                        epilogue.store(envs[2 * p:2 * p + 2], batch, row, c, row_ok)

    def _store_partial(self, accs, split, batch, rows, cols):
        """The f32 accumulators into split ``split``'s partial, inside M
        and N; 4 columns a store where N is a multiple of 4."""
        gemm = self.gemm
        for r, row in enumerate(rows):
            row_ok = arith.cmpi(arith.CmpIPredicate.ult, row, _idx(gemm.m))
            for j, col in enumerate(cols):
                values = self._values(accs, r, j)
                if gemm.n % CHUNK == 0:
                    store_lanes(values, self.partials, [split, batch, row, col], row_ok, col,
                                gemm.n)
                    continue
                for e, value in enumerate(values):
                    c = arith.addi(col, _idx(e)) if e else col
                    ok = arith.andi(row_ok, arith.cmpi(arith.CmpIPredicate.ult, c, _idx(gemm.n)))
                    op = scf.IfOp(ok, [], has_else=False)
                    with ir.InsertionPoint(op.then_block):
                        memref.store(value, self.partials, [split, batch, row, c])
                        scf.YieldOp([])
