"""The split-row program: simt-reduce with ``split = C`` (dnn-reduce-rows).
A row too long for one block's registers is spread over a thread-block
cluster of C blocks (sm_90), each holding ``N / C`` of it in registers (or,
staged, in shared memory), so that the row's inputs are read from memory
once where one block would loop over them pass by pass (softmax: three
reads of x).

The program is rowwise.py's, statement for statement (the same
interpreter, ``rowwise._Row``); what changes is where a thread's vectors lie
and how a reduction ends:

1. **Place**: block ``b`` is rank ``r = b mod C`` of the cluster of row
   ``b / C``; its thread ``t`` is thread ``r * T + t`` of the row's ``C * T``,
   so the row's vectors are dealt to the cluster as rowwise.py deals them to
   a block (a warp reads consecutive vectors; a ragged end is masked).
2. **Reduce**: each block folds its part of the row as rowwise.py does
   (per-thread fold, warp shuffles, shared memory across warps); then its
   first thread writes the block's partial to the reduction's slot in the
   block's own shared memory, ``exchange[k]``, and the cluster meets at a
   barrier (``barrier.cluster.arrive`` releases the write, ``wait``
   acquires the others'). Every thread then reads the C partials of slot
   ``k`` through distributed shared memory (``mapa.shared::cluster`` of the
   slot's address to rank ``q``, ``ld.shared::cluster``) and combines them
   in the order of ``q``: every block of the cluster gets the same bits, on
   every run. Each reduction has its own slot, so no block overwrites a
   partial another may still be reading.
3. **Stay**: a block's shared memory must outlive the other blocks' reads
   of it. After the last reduction's reads each thread arrives at the
   cluster barrier once more, and waits on it before exiting; the stores of
   the output lie in between.

4. **Merge** (rowmerge.py): where a second reduction reads the first's
   result in a form rowmerge knows (softmax's sum of exp(x - max), a
   layernorm's sum of (x - mean)^2), the first ends with the block's
   partial, the second folds around it, and one exchange carries both
   partials (slots ``k`` and ``k + 1``): one cluster barrier a row where
   there were two. The first's row value stands in a placeholder until the
   exchange gives it; the held full-row values that the second evaluated
   around the block's own value are moved to the row's (scaled, shifted)
   or evaluated again.
5. **Persist** (``rows`` > 1, config ``tile = [rows]``): ``ceil(R / rows)``
   clusters, cluster ``c`` on rows ``c, c + clusters, ...`` in an
   ``scf.for``. A held row's first vectors of the next row (up to
   AHEAD_ELEMENTS of the streamed inputs a thread; the rest at the start of
   the row) are loaded before the current row's reductions and carried to
   the next iteration, so that they are in flight while the blocks meet at
   the barrier and store; the last row of a cluster loads itself again.
   The rows use the two halves of the exchange slots in turn: a block
   writes a row's slots only after the next row's first barrier, which
   every block reaches after its reads of the row before, so one barrier a
   row suffices; the blocks meet once more after the loop (step 3).

6. **Stage** (config ``staged = 1``, ``_StagedRow``): block rank ``r`` takes
   the contiguous part ``r * L`` to ``(r + 1) * L - 1`` of its row (``L = N /
   C``, a multiple of the block's vectors), its thread ``t`` the vectors
   ``t, t + T, ...`` of the part. The block's first thread starts bulk
   copies (``cp.async.bulk``, STAGE_COPY_BYTES each) of the part of every
   streamed input into dynamic shared memory, piece by piece (at most
   STAGE_PIECE_BYTES of each input), each piece completing on its own
   mbarrier; each pass loops over the part there, ``unroll`` vectors an
   iteration (config ``unroll``, which the heuristics choose), the first
   waiting for each piece as it reaches it, so that it works on the first
   pieces while the later ones land. A centred merge (a layernorm's mean
   and centred squares) is folded in one pass (``fold_centred``: Chan et
   al.'s merge of per-vector sums and squares about their own mean), not
   two. The output pass computes an iteration's vectors (loading a scale or
   bias from global memory) before it stores them. The part waits in
   shared memory, not in registers, while the cluster exchanges: blocks are
   small (256 threads, at most MAX_STAGE_BYTES each), several share an SM,
   and one block's copies run while another exchanges and stores. One row
   per cluster; rows of one dim.

Per-row scalar results (a norm's mean and rstd) are stored by rank 0's
first thread. The cluster shape is the kernel's own: the launch carries
``clusters in (C, 1, 1)``, which dnn-kernel-clusters turns into the
kernel's ``nvvm.cluster_dim`` (PTX ``.reqnctapercluster C, 1, 1``), so the
runtime launches it like any other kernel (cuLaunchKernel).

Before: a rowwise.py kernel (a softmax of 2 x 65536 bf16, config
``{block = [512, 1, 1], split = 4, strategy = "simt-reduce", vector = 8}``).

After::

    gpu.launch clusters(...) in (%c4, %c1, %c1) blocks(%b, ...) in (%c8, ...)
        threads(%t, ...) in (%c512, ...)
        workgroup(%smem : memref<32xf32, 3>, %exchange : memref<2xf32, 3>) {
      %row = arith.divui %b, %c4
      %lane = %t + (%b mod 4) * 512
      ... loads of the thread's 4 vectors; the block's max: folds, shuffles,
      %smem; the block's sum of exp(x - its max) ...
      memref.store %max_block, %exchange[%c0]          // thread 0
      memref.store %sum_block, %exchange[%c1]
      nvvm.cluster.arrive
      nvvm.cluster.wait
      %p0 = nvvm.mapa %slot0, %c0_i32 : !llvm.ptr<3> -> !llvm.ptr<7>
      %m0 = llvm.load %p0 : !llvm.ptr<7> -> f32
      ... the 4 max and 4 sum partials ...
      nvvm.cluster.arrive                              // done reading
      ... the row's max, in rank order; its sum, of each block's sum times
      exp(block max - row max); the held exps times their block's factor;
      the output stored from registers ...
      nvvm.cluster.wait
    }

Lit test: test/lit/passes/dnn_reduce_rows_split.mlir.
"""

from mlir import ir
from mlir.dialects import arith, gpu, llvm, math, memref, nvvm, scf, vector

from dnnc.codegen.gpu import irutil, loops
from dnnc.codegen.gpu.reduce import rowmerge, rowwise

# Blocks a cluster may have without the non-portable attribute (which the
# runtime would have to set on the kernel before launching it).
MAX_CLUSTER = 8
# Elements of the streamed inputs a thread of a persistent cluster loads
# for the next row during the current one.
AHEAD_ELEMENTS = 8
# The forms of rowmerge.py whose two reductions share one exchange. On an
# H200 a layernorm's centred merge measured 1-3% faster than two exchanges
# at 131072 and 262144 elements a row; softmax's shifted merge 2% faster at
# 131072 but 6% slower at 262144 (0.265 against 0.249 ms), so it is off
# there; staged rows merge both (build).
MERGE_KINDS = ("centred", "shifted")
# Staged split rows: the most bytes of the streamed inputs a block stages
# (three blocks to an SM's 227 KB), and the most one bulk copy moves.
MAX_STAGE_BYTES = 64 * 1024
STAGE_COPY_BYTES = 16 * 1024
# The most bytes of each streamed input a piece of the part (one mbarrier)
# holds: the first pass starts on a piece as soon as it lands.
STAGE_PIECE_BYTES = 16 * 1024
MERGE = frozenset({"centred"})

_index = irutil.index
_WORKGROUP = "#gpu.address_space<workgroup>"


class _SplitRow(rowwise._Row):
    """rowwise._Row over a row dealt to ``cluster`` blocks: a reduction ends
    with the exchange of the blocks' partials."""

    # Centred squares folded in the first's sweep (fold_centred) rather than
    # in a sweep of their own around the block's mean.
    one_pass = False

    def __init__(self, shape, width, threads, cluster, smem, exchange, slots, program,
                 registers, merge=MERGE):
        super().__init__(shape, width, threads, 1, smem, program.outputs, program.last_writes,
                         registers)
        self.program = program
        self.merge = merge  # rowmerge kinds whose two reductions share an exchange
        self.pending = None  # the first of a merge: (Merge, combining op, init, block partial,
        #                      placeholder, block value, memo keys before the second)
        self.subst = None  # (placeholder, value) while the second folds
        self.placeholders = []  # (placeholder, the row's value)
        self.cluster, self.exchange, self.slots = cluster, exchange, slots
        self.per_row = threads * cluster
        self.held = self.chunks * width <= registers
        self.exchanges = 0
        self.parity = None  # persistent clusters: which half of the slots a row uses
        self.marks = []  # one op after each exchange's reads

    def start(self, block, thread):
        """Rank, lane and cluster of the block; the program runs on the
        cluster's row (one row per cluster)."""
        rank = arith.remui(block, _index(self.cluster))
        lane = arith.addi(arith.muli(rank, _index(self.in_block)), thread)
        self.cluster_id = arith.divui(block, _index(self.cluster))
        self.at(self.cluster_id, lane, thread)
        i64 = ir.IntegerType.get_signless(64)
        # The exchange slots' shared::cta address, which mapa translates to
        # the same slots of another block of the cluster.
        self.exchange_at = arith.index_cast(
            i64, memref.extract_aligned_pointer_as_index(self.exchange))

    # -- persistent clusters -------------------------------------------------

    def _load(self, streamed, positions, row):
        """The 16-byte vectors of row ``row`` of the ``streamed`` inputs at
        the thread's ``positions``, chunk by chunk."""
        keep = self.row_index
        self.row_index = loops.delinearize(row, list(self.shape.rows))
        out = []
        for j, _ in positions:
            for buffer, exprs in streamed:
                elt = ir.MemRefType(buffer.type).element_type
                out.append(vector.load(ir.VectorType.get([self.width], elt), buffer,
                                       self.indices(exprs, j),
                                       alignment=self.width * irutil.element_bytes(elt)))
        self.row_index = keep
        return out

    def persist(self, streamed, program, clusters, ahead):
        """Run ``program()`` on rows ``c, c + clusters, ...`` of cluster
        ``c``. Held rows: the first vectors of the next row, up to ``ahead``
        elements of the streamed inputs a thread, are loaded during the
        current row, so that they are in flight while the blocks meet at
        the current row's barriers and store its output; the rest at the
        start of the row."""
        count = self.shape.count
        positions = [self.position(_index(c), whole=(c + 1) * self.per_row * self.width
                                   <= self.shape.n) for c in range(self.chunks)]
        early = 0
        if self.held:
            early = min(len(positions), ahead // (self.width * max(1, len(streamed))))
        first = self._load(streamed, positions[:early], self.cluster_id)
        loop = scf.ForOp(self.cluster_id, _index(count), _index(clusters), first + [_index(0)])
        with ir.InsertionPoint(loop.body):
            row = loop.induction_variable
            carried = list(loop.inner_iter_args)
            rest = self._load(streamed, positions[early:], row) if self.held else []
            # The last row of the cluster loads itself again (from L2)
            # rather than branch around the loads.
            after = arith.addi(row, _index(clusters))
            after = arith.select(arith.cmpi(arith.CmpIPredicate.ult, after, _index(count)),
                                 after, row)
            next_early = self._load(streamed, positions[:early], after)
            self.at(row, self.lane, self.local)
            self.parity = carried[-1]
            if self.held:
                self.vectors = []
                vectors = iter(carried[:-1] + rest)
                for j, inside in positions:
                    memo = {}
                    for buffer, exprs in streamed:
                        vec = next(vectors)
                        memo[rowwise._key(buffer, exprs)] = [
                            vector.extract(vec, [], [k]) for k in range(self.width)]
                    self.vectors.append((j, inside, memo))
            program()
            scf.YieldOp(next_early + [arith.subi(_index(1), self.parity)])
        # No block leaves while another may read its slots.
        nvvm.cluster_arrive(aligned=True)
        nvvm.cluster_wait(aligned=True)

    # -- reductions ----------------------------------------------------------

    def _slot(self, k):
        """The index of exchange slot ``k`` of the current row."""
        if self.parity is None:
            return _index(k)
        return arith.addi(arith.muli(self.parity, _index(self.slots)), _index(k))

    def exchange_partials(self, values):
        """Write the block's partials ``values`` to its next exchange slots,
        meet the cluster at its barrier, and read every block's: per value,
        the C partials in rank order."""
        base = self.exchanges
        self.exchanges += len(values)
        first = arith.cmpi(arith.CmpIPredicate.eq, self.local, _index(0))
        guard = scf.IfOp(first)
        with ir.InsertionPoint(guard.then_block):
            for k, value in enumerate(values):
                memref.store(value, self.exchange, [self._slot(base + k)])
            scf.YieldOp([])
        # Every thread of every block gets here (a row has no guard: the
        # grid is exactly rows x C, or a persistent cluster's blocks share
        # their rows), all its warps converged: .aligned.
        nvvm.cluster_arrive(aligned=True)
        nvvm.cluster_wait(aligned=True)
        i32, i64 = ir.IntegerType.get_signless(32), ir.IntegerType.get_signless(64)
        out = []
        for k, value in enumerate(values):
            offset = arith.muli(arith.index_cast(i64, self._slot(base + k)),
                                arith.constant(i64, 4))
            local = llvm.inttoptr(ir.Type.parse("!llvm.ptr<3>"),
                                  arith.addi(self.exchange_at, offset))
            parts = []
            for rank in range(self.cluster):
                remote = nvvm.mapa(ir.Type.parse("!llvm.ptr<7>"), local,
                                   arith.constant(i32, rank))
                parts.append(llvm.load(value.type, remote))
            out.append(parts)
        self.marks.append(llvm.mlir_undef(i32).owner.operation)
        return out

    # -- two reductions, one exchange (rowmerge.py) --------------------------

    def lanes(self, buffer, exprs, j, memo, state=None):
        values = super().lanes(buffer, exprs, j, memo, state)
        if self.subst is None:
            return values
        placeholder, value = self.subst
        return [value if v == placeholder else v for v in values]

    def reduce(self, stmt, stored):
        if self.pending is not None and stmt is self.pending[0].second:
            return self._second(stmt, stored)
        merge = None
        if self.merge and not stored:
            merge = rowmerge.plan(self.program.statements, stmt, self.outputs,
                                  self.last_writes, self.program.args, self.ragged)
            if merge is not None and merge.kind not in self.merge:
                merge = None
        if merge is None:
            return super().reduce(stmt, stored)
        # The first: the block's partial only; the row's value, which the
        # exchange of the second gives, stands in a placeholder meanwhile.
        out = stmt.operands[-1]
        init = self.lanes(out, stmt.exprs[-1], _index(0), {})[0]
        mine = None  # the block's second, when the first's sweep folds it too
        if merge.kind == "centred" and self.one_pass:
            partial, mine, count = self.fold_centred(stmt)
            name = "arith.addf"
            mine = rowmerge.recentred(merge, init, partial, mine, count, self.cluster)
        else:
            name, partial = self.fold(stmt)
            partial = rowwise._Row.across_threads(self, name, partial)
        placeholder = llvm.mlir_undef(partial.type)
        self.state[out] = ("scalar", placeholder)
        if merge.kind == "shifted":
            local = rowwise.combine(name, init, partial)
        else:
            local = rowmerge.block_sum(init, partial, self.cluster)
        seen = [set(memo) for _, _, memo in self.vectors or []]
        self.pending = (merge, name, init, partial, placeholder, local, seen, mine)

    def _second(self, stmt, stored):
        merge, first_name, init, partial, placeholder, local, seen, mine = self.pending
        self.pending = None
        if mine is None:
            # The second folds around the block's own value of the first.
            self.subst = (placeholder, local)
            name, mine = self.fold(stmt)
            mine = rowwise._Row.across_threads(self, name, mine)
            self.subst = None
        else:
            name = rowwise.combiner(stmt.op)[0]
        firsts, seconds = self.exchange_partials([partial, mine])
        if merge.kind == "shifted":
            value, total, _ = rowmerge.shifted_total(merge, init, firsts, seconds,
                                                         first_name)
        else:
            n = self.shape.n // self.cluster
            value, total = rowmerge.centred_total(merge, init, firsts, seconds, self.cluster, n)
        self.placeholders.append((placeholder, value))
        # What the block holds of the full-row values evaluated around its
        # own first moves to the row's (merge.scaled: a shifted sum's
        # exp(a - g(m)) by the factor of its sum, centred squares' a - mean
        # by the difference of the means); anything else is evaluated again.
        move = None
        for (_, _, memo), before in zip(self.vectors or [], seen):
            for key in [k for k in memo if k not in before and not isinstance(k, tuple)]:
                if merge.scaled is None or key != id(merge.scaled):
                    del memo[key]
                    continue
                if move is None:
                    move = self._move(merge, local, mine, value)
                memo[key] = [move(v) for v in memo[key]]
        out = stmt.operands[-1]
        init2 = self.lanes(out, stmt.exprs[-1], _index(0), {})[0]
        result = rowwise.combine(name, init2, total)
        self.state[out] = ("scalar", result)
        if stored:
            self.store_scalar(out, stmt.exprs[-1], result)

    @staticmethod
    def _move(merge, local, mine, value):
        """The map from a value of merge.scaled evaluated around the block's
        own first (``local``; ``mine``, the block's second) to the row's
        (``value``, the row's first)."""
        f32 = mine.type
        zero = arith.constant(f32, ir.FloatAttr.get(f32, 0.0))
        if merge.kind == "centred":
            delta = arith.subf(merge.at(local), merge.at(value))
            return lambda v: arith.addf(v, delta)
        # 0 where the block's sum is (every term 0), whatever the factor.
        factor = math.exp(arith.subf(merge.at(local), merge.at(value)))
        factor = arith.select(arith.cmpf(arith.CmpFPredicate.OEQ, mine, zero), zero, factor)
        return lambda v: arith.mulf(v, factor)

    def across_threads(self, name, value):
        value = super().across_threads(name, value)
        total = None
        for part in self.exchange_partials([value])[0]:  # fixed order: the same in every block
            total = part if total is None else rowwise.combine(name, total, part)
        return total

    def finish(self):
        """The arrival after the last reads of another block's shared
        memory, and the wait for every block's before the kernel ends (at
        the current insertion point); none in a persistent cluster's loop,
        whose slots alternate from row to row."""
        if self.marks and self.parity is None:
            with ir.InsertionPoint(self.marks[-1]):
                nvvm.cluster_arrive(aligned=True)
            nvvm.cluster_wait(aligned=True)
        for mark in self.marks:
            mark.erase()
        self.marks = []
        for placeholder, value in self.placeholders:
            placeholder.replace_all_uses_with(value)
            placeholder.owner.erase()
        self.placeholders = []


class _StagedRow(_SplitRow):
    """_SplitRow whose blocks each stage a contiguous part of the row's
    streamed inputs in shared memory (step 6 of the module's doc): block
    rank ``r`` holds elements ``r * L`` to ``(r + 1) * L`` of the row (``L =
    N / C``), its thread ``t`` the vectors ``t, t + T, ...`` of that part.
    Every pass is a loop that reads the part from shared memory."""

    one_pass = True

    def __init__(self, *args, stages, barrier, unroll, piece, **kwargs):
        super().__init__(*args, **kwargs)
        self.held = False
        self.stages = stages    # (buffer, exprs) key -> (buffer, exprs, shared memref)
        self.barrier = barrier  # the first mbarrier's shared address, an i64
        self.part = self.shape.n // self.cluster
        self.unroll = unroll    # vectors a pass's loop takes per iteration
        self.piece = piece      # a thread's vectors in each piece (one mbarrier each)
        self.waiting = True     # the first pass waits for each piece as it reaches it

    def start(self, block, thread):
        super().start(block, thread)
        # The rank again (CSE merges it with _SplitRow.start's), after the row.
        rank = arith.remui(block, _index(self.cluster))
        self.part0 = arith.muli(rank, _index(self.part))
        self._stage()

    def _barrier(self, k):
        """The shared pointer of mbarrier ``k`` (an int or an index value)."""
        i64 = ir.IntegerType.get_signless(64)
        offset = (arith.constant(i64, 8 * k) if isinstance(k, int) else
                  arith.muli(arith.index_cast(i64, k), arith.constant(i64, 8)))
        return llvm.inttoptr(ir.Type.parse("!llvm.ptr<3>"), arith.addi(self.barrier, offset))

    def _stage(self):
        """The block's first thread issues the bulk copies of its part of
        each streamed input, piece by piece (``piece`` vectors of each
        thread: a contiguous ``piece * T * width`` elements of the part), each
        piece of every input completing on the piece's own mbarrier. No
        thread waits here: the first pass waits for each piece before it
        reads it (wait), so that it works on the first pieces while the
        later ones land."""
        i32, i64 = ir.IntegerType.get_signless(32), ir.IntegerType.get_signless(64)
        parts = [(buffer, tile, irutil.element_bytes(ir.MemRefType(tile.type).element_type))
                 for buffer, _, tile in self.stages.values()]
        elements = self.piece * self.in_block * self.width  # of each input, a piece
        barriers = [self._barrier(k) for k in range(self.part // elements)]
        first = arith.cmpi(arith.CmpIPredicate.eq, self.local, _index(0))
        guard = scf.IfOp(first)
        with ir.InsertionPoint(guard.then_block):
            for barrier in barriers:
                nvvm.MBarrierInitOp(barrier, arith.constant(i32, 1))
            nvvm.FenceMbarrierInitOp()
            for k, barrier in enumerate(barriers):
                nvvm.MBarrierArriveExpectTxOp(None, barrier, arith.constant(
                    i32, sum(elements * size for *_, size in parts)))
                for buffer, tile, size in parts:
                    # Element (row, part0 + k * elements) of the buffer
                    # (identity layout: rows x N).
                    at = arith.addi(arith.muli(self.row, _index(self.shape.n)),
                                    arith.addi(self.part0, _index(k * elements)))
                    src = arith.addi(
                        arith.index_cast(i64, memref.extract_aligned_pointer_as_index(buffer)),
                        arith.index_cast(i64, arith.muli(at, _index(size))))
                    dst = arith.addi(
                        arith.index_cast(i64, memref.extract_aligned_pointer_as_index(tile)),
                        arith.constant(i64, k * elements * size))
                    nbytes = elements * size
                    for offset in range(0, nbytes, STAGE_COPY_BYTES):
                        nvvm.CpAsyncBulkGlobalToSharedClusterOp(
                            llvm.addrspacecast(ir.Type.parse("!llvm.ptr<7>"), llvm.inttoptr(
                                ir.Type.parse("!llvm.ptr<3>"),
                                arith.addi(dst, arith.constant(i64, offset)))),
                            llvm.inttoptr(ir.Type.parse("!llvm.ptr<1>"),
                                          arith.addi(src, arith.constant(i64, offset))),
                            barrier, arith.constant(i32, min(STAGE_COPY_BYTES, nbytes - offset)))
            scf.YieldOp([])
        gpu.BarrierOp()  # the mbarriers are initialized before anyone waits on them

    def wait(self, base, k):
        """In the first pass, before vector ``k`` of the iteration from
        vector ``base``: wait for the piece it lies in, where it may start
        one (every vector where iterations and pieces do not nest)."""
        if not self.waiting:
            return
        if self.unroll % self.piece == 0:
            if k % self.piece:
                return
        elif self.piece % self.unroll == 0:
            if k:
                return
        if self.chunks == self.piece:
            piece = 0  # one piece: its mbarrier's address is the first's
        else:
            piece = arith.divui(arith.addi(base, _index(k)), _index(self.piece))
        irutil.mbarrier_wait(self._barrier(piece),
                             arith.constant(ir.IntegerType.get_signless(32), 0))

    def position(self, chunk, whole=False):
        v = arith.addi(arith.muli(chunk, _index(self.in_block)), self.local)
        return arith.addi(self.part0, arith.muli(v, _index(self.width))), None

    def sweep(self, step, init=None):
        inits = [] if init is None else [init]
        loop = scf.ForOp(_index(0), _index(self.chunks), _index(self.unroll), inits)
        with ir.InsertionPoint(loop.body):
            acc = loop.inner_iter_args[0] if inits else None
            for k in range(self.unroll):
                self.wait(loop.induction_variable, k)
                j, inside = self.position(arith.addi(loop.induction_variable, _index(k)))
                acc = step(acc, j, inside, {})
            scf.YieldOp([acc] if inits else [])
        self.waiting = False
        return loop.results[0] if inits else None

    def fold_centred(self, stmt):
        """A centred merge's two folds in one sweep of the part (Chan et
        al.): the first's terms of an iteration's vectors, their sum and
        their squares centred on their own mean, merged with the sweep's so
        far; then across the block's threads. (the block's sum, its squares
        centred on its mean, its count of terms)."""
        f32 = ir.F32Type.get()

        def const(v):
            return arith.constant(f32, ir.FloatAttr.get(f32, v))

        # The body adds each term to -0.0, which leaves it as it is.
        acc = [const(-0.0)] * self.width
        zero = const(0.0)
        loop = scf.ForOp(_index(0), _index(self.chunks), _index(self.unroll), [zero, zero])
        with ir.InsertionPoint(loop.body):
            folds = []
            for k in range(self.unroll):
                self.wait(loop.induction_variable, k)
                j, _ = self.position(arith.addi(loop.induction_variable, _index(k)))
                terms = self.evaluate(stmt, j, {}, acc=acc)
                s = terms[0]
                for t in terms[1:]:
                    s = arith.addf(s, t)
                mean = arith.mulf(s, const(1.0 / self.width))
                v = None
                for t in terms:
                    d = arith.subf(t, mean)
                    v = arith.mulf(d, d) if v is None else math.fma(d, d, v)
                folds.append((s, v, self.width))
            while len(folds) > 1:  # pairwise, with constant counts and weights
                folds = [rowmerge.chan(folds[i], folds[i + 1]) if i + 1 < len(folds)
                         else folds[i] for i in range(0, len(folds), 2)]
            # The terms folded before this iteration: its first vector's
            # number times the vector's width.
            before = arith.uitofp(f32, arith.index_cast(
                ir.IntegerType.get_signless(32),
                arith.muli(loop.induction_variable, _index(self.width))))
            s, v, _ = rowmerge.chan((*loop.inner_iter_args, before), folds[0])
            scf.YieldOp([s, v])
        self.waiting = False
        s, v = loop.results
        # Over the threads: the same bits in every lane (chan's weight is
        # symmetric and addition commutes), the warps' in warp order.
        return self.merge_across_threads((s, v, self.chunks * self.width), rowmerge.chan)

    def store_pass(self, buffer, compute, exprs):
        """The output pass: per iteration, the vectors' values (their global
        loads, a scale's or a bias's, in flight together), then their stores."""
        elt = ir.MemRefType(buffer.type).element_type
        loop = scf.ForOp(_index(0), _index(self.chunks), _index(self.unroll), [])
        with ir.InsertionPoint(loop.body):
            done = []
            for k in range(self.unroll):
                self.wait(loop.induction_variable, k)
                j, _ = self.position(arith.addi(loop.induction_variable, _index(k)))
                done.append((j, compute(j, {})))
            for j, values in done:
                vector.store(vector.from_elements(ir.VectorType.get([self.width], elt), values),
                             buffer, self.indices(exprs, j),
                             alignment=self.width * irutil.element_bytes(elt))
            scf.YieldOp([])
        self.waiting = False

    def lanes(self, buffer, exprs, j, memo, state=None):
        key = rowwise._key(buffer, exprs)
        staged = self.stages.get(key)
        if (staged is not None and key not in memo
                and (self.state if state is None else state).get(buffer) is None):
            elt = ir.MemRefType(buffer.type).element_type
            vec = vector.load(ir.VectorType.get([self.width], elt), staged[2],
                              [arith.subi(j, self.part0)],
                              alignment=self.width * irutil.element_bytes(elt))
            memo[key] = [vector.extract(vec, [], [k]) for k in range(self.width)]
        return super().lanes(buffer, exprs, j, memo, state)


def _check_staged(p, streamed, width, threads, cluster, persistent, unroll):
    """Refuse a staged split the program does not fit."""
    n = p.shape.n
    if persistent:
        raise rowwise.NotARowProgram("a staged split row on a persistent cluster")
    if not streamed:
        raise rowwise.NotARowProgram("a staged split row with no input along the row")
    if n % (cluster * threads * width):
        raise rowwise.NotARowProgram(f"a staged split of rows of {n} into {cluster} parts of "
                                     f"{threads} threads x vectors of {width}: expected a "
                                     "multiple of their product")
    part = sum(n // cluster * irutil.element_bytes(ir.MemRefType(b.type).element_type)
               for b, _ in streamed)
    if part > MAX_STAGE_BYTES:
        raise rowwise.NotARowProgram(f"a staged part of {part} bytes: expected at most "
                                     f"{MAX_STAGE_BYTES}")
    vectors = n // (cluster * threads * width)  # a thread's, in its part
    if vectors % unroll:
        raise rowwise.NotARowProgram(f"passes of {unroll} vectors an iteration over the "
                                     f"{vectors} vectors a thread has in its part: expected "
                                     "a divisor of them")


def _piece(vectors, chunk_bytes):
    """A thread's vectors in each piece of a staged part: the most, dividing
    its ``vectors``, whose ``chunk_bytes`` each (a vector of every thread, of
    the widest input) stay within STAGE_PIECE_BYTES; at least 1."""
    piece = max(1, min(vectors, STAGE_PIECE_BYTES // chunk_bytes))
    while vectors % piece:
        piece -= 1
    return piece


class _StagedLayout:
    """The dynamic shared memory of a staged split row (no static buffers:
    they would sit beside the dynamic memory and push it off its
    alignment): an mbarrier (8 bytes) per piece, the reduction slots, the
    exchange slots, then each streamed input's part, 128-byte aligned."""

    def __init__(self, part, smem_type, exchange_type, streamed, pieces):
        def end(at, type_, align):
            at = -(-at // align) * align
            return at, at + ir.MemRefType(type_).shape[0] * 4
        self.smem = end(8 * pieces, smem_type, 16)
        self.exchange = end(self.smem[1], exchange_type, 16)
        self.types = {"smem": smem_type, "exchange": exchange_type}
        at, self.stages = self.exchange[1], []
        for buffer, exprs in streamed:
            elt = ir.MemRefType(buffer.type).element_type
            at = -(-at // 128) * 128
            self.stages.append((buffer, exprs, at, ir.MemRefType.get(
                [part], elt, memory_space=ir.Attribute.parse(_WORKGROUP))))
            at += part * irutil.element_bytes(elt)
        self.bytes = at

    def views(self):
        """{"smem", "exchange": memrefs; "stages": rowwise key -> (buffer,
        exprs, part memref); "barrier": the first mbarrier's i64 shared
        address} at the
        current insertion point (the launch body)."""
        raw = gpu.dynamic_shared_memory(ir.MemRefType.get(
            [ir.ShapedType.get_dynamic_size()], ir.IntegerType.get_signless(8),
            memory_space=ir.Attribute.parse(_WORKGROUP)))
        out = {name: memref.view(self.types[name], raw, _index(getattr(self, name)[0]), [])
               for name in ("smem", "exchange")}
        out["stages"] = {rowwise._key(b, e): (b, e, memref.view(t, raw, _index(at), []))
                         for b, e, at, t in self.stages}
        out["barrier"] = arith.index_cast(ir.IntegerType.get_signless(64),
                                          memref.extract_aligned_pointer_as_index(raw))
        return out


def build(fn, width, threads, cluster, rows=1, registers=rowwise.REGISTER_ELEMENTS,
          ahead=None, merge=None, staged=False, unroll=1):
    """Replace kernel ``fn``'s body by its split-row program: one gpu.launch
    of ``cluster`` blocks of ``threads`` per ``rows`` rows, in clusters (a
    persistent cluster where ``rows`` > 1: one row after another, the next
    row's inputs loaded during the current row). A thread holds its part of
    the row in registers when that is at most ``registers`` elements.
    rowwise.NotARowProgram (nothing changed) when it is not a row program or
    the split does not fit. Staged, each pass loops over the block's part
    ``unroll`` vectors an iteration: an output pass's loads of a scale or
    bias (from L2) come before the iteration's stores, in flight together."""
    p = rowwise.program_of(fn, width)
    if len(p.shape.inner) > 1:
        raise rowwise.NotARowProgram(f"a split row of several dims, {list(p.shape.inner)}")
    if threads % rowwise.WARP or threads > 1024:
        raise rowwise.NotARowProgram(f"{threads} threads per block")
    if not 2 <= cluster <= MAX_CLUSTER:
        raise rowwise.NotARowProgram(f"a cluster of {cluster} blocks: expected 2 to "
                                     f"{MAX_CLUSTER}")
    if rows < 1:
        raise rowwise.NotARowProgram(f"{rows} rows per cluster")
    reductions = sum(1 for s in p.statements if s.reduction)
    clusters = -(-p.shape.count // rows)
    persistent = clusters < p.shape.count
    streamed = rowwise._streamed(p.statements, p.args)
    if staged:
        _check_staged(p, streamed, width, threads, cluster, persistent, unroll)
    f32 = ir.F32Type.get()
    space = ir.Attribute.parse(_WORKGROUP)
    smem_type = ir.MemRefType.get([max(1, reductions * threads // rowwise.WARP)], f32,
                                  memory_space=space)
    # A persistent cluster's rows use the two halves of the slots in turn.
    slots = max(1, reductions)
    exchange_type = ir.MemRefType.get([slots * (2 if persistent else 1)], f32,
                                      memory_space=space)
    blocks = clusters * cluster
    # Staged, both forms merge: softmax's max and sum in one exchange measured
    # 2-7% faster there (92.6 / 83.1 / 78.7% of a copy at 65536 / 131072 /
    # 262144 bf16 on an H200, against 86.2 / 81.3 / 76.8%).
    merge = frozenset(MERGE_KINDS) if staged else MERGE if merge is None else merge
    with ir.InsertionPoint(p.first), fn.location:
        if staged:
            piece = _piece(p.shape.n // (cluster * threads * width), threads * width * max(
                irutil.element_bytes(ir.MemRefType(b.type).element_type) for b, _ in streamed))
            layout = _StagedLayout(p.shape.n // cluster, smem_type, exchange_type, streamed,
                                   p.shape.n // (cluster * threads * width) // piece)
            launch, block = irutil.cluster_launch(blocks, threads, cluster, [], layout.bytes)
            with ir.InsertionPoint(block):
                views = layout.views()
            row = _StagedRow(p.shape, width, threads, cluster, views["smem"],
                             views["exchange"], slots, p, registers, merge,
                             stages=views["stages"], barrier=views["barrier"], unroll=unroll,
                             piece=piece)
        else:
            launch, block = irutil.cluster_launch(blocks, threads, cluster,
                                                  [smem_type, exchange_type])
            smem, exchange = list(block.arguments)[18:]
            row = _SplitRow(p.shape, width, threads, cluster, smem, exchange, slots, p,
                            registers, merge)

        def program():
            for s in p.statements:
                row.run(s)
            row.finish()

        try:
            with ir.InsertionPoint(block):
                terminator = gpu.TerminatorOp()
            with ir.InsertionPoint(terminator):
                row.start(block.arguments[0], block.arguments[3])
                if persistent:
                    row.persist(streamed, program, clusters,
                                AHEAD_ELEMENTS if ahead is None else ahead)
                else:
                    row.load_row(streamed)
                    program()
        except rowwise.NotARowProgram:
            launch.erase()
            raise
        rowwise._hardware_exp(launch)
        rowwise._shared_divisors(launch)
    rowwise.erase_statements(fn, p.statements)
    return blocks
