"""The simt-reduce-columns strategy: a kernel that reduces the leading dims
of its loops and keeps the innermost (the bias gradient of a linear layer,
Σ_rows dy; a norm's dgamma, Σ_rows dy·x̂) becomes a "column program": one
``gpu.launch`` that reads the rows once, each block writing its partials
and the last block of each column of blocks summing them
(dnn-reduce-columns). It is simt-reduce's transpose (rowwise.py): there a
row is folded by the threads of a block, here each thread folds its columns
down a slice of the rows.

This file holds ``build`` and the rows launch (``RowsEmitter``); the rest
of the column program lies beside it:

* colwise_program.py: what the kernel is made of, read into statements and
  interpreted in program order; ``NotAColumnProgram``;
* colwise_emitter.py: what both launches share: a statement's values at a
  point, the block's columns, a launch and its workgroup buffers, the row
  lanes combined through shared memory;
* colwise_finish.py: the finish (3. below), and ``Finish``, the same as a
  launch of its own for rowcolumns.py.

``build`` reads the kernel into a ``Program`` (colwise_program.py) and
emits:

1. **Rows** (grid ``ceil(N / V / Tx) x G``, block ``Tx x Ty``): thread
   ``(tx, ty)`` of block ``(bx, by)`` owns the ``V`` columns from
   ``j = (bx * Tx + tx) * V`` (16 bytes: one ``vector.load``, a warp reads 512
   consecutive bytes of a row) and the rows ``by * tile + ty + Ty * i`` of
   its block's ``tile`` rows. Every reduction of the kernel is folded in the
   same pass over the rows, into f32 registers (``V`` per reduction), from
   the reduction's identity, ``Ty * unroll`` rows a step. The loop is
   software-pipelined: the next step's ``unroll`` rows are loaded into
   loop-carried vectors before a step is folded, so each thread has
   ``unroll`` 16-byte loads in flight per input (left to itself, ptxas sinks
   each load to its first add, and two are in flight).
   The block's ``Ty`` partials of a column are then combined through shared
   memory by its ``ty = 0`` threads, ``ty`` in order. The last block's
   rows past R (R not a multiple of ``tile``), and a block's rows past a
   whole number of ``Ty * unroll`` steps, are folded by one guarded step:
   loads clamped to row R - 1, results selected away.
2. **Partials** (G > 1): each block writes its ``V`` sums per reduction to
   an f32 workspace ``[G, N]`` (a ``memref.alloc`` in the kernel function:
   workspace memory in the launch plan).
3. **Finish**, in the same launch (G > 1): after a barrier, thread (0, 0)
   of each block fences, adds 1 to its column of blocks' arrival count (an
   i32 workspace ``[grid x]``, zero between calls) and fences again. The
   block that counts last puts the count back to zero and sums the G
   partials of its columns: row lane ``ty`` folds partials ``ty, ty + Ty,
   ...`` in order, and the lanes are combined through shared memory in the
   order of ty. It combines the sum with the accumulator's value before
   the reduction (its fill), then runs the column statements and stores the
   kernel's outputs. With G = 1 the blocks' ``ty = 0`` threads finish their
   ``V`` columns themselves. (``Finish``, in colwise_finish.py, is the same
   sum as a launch of its own, blocks of Tx x Ty threads over 16-byte
   vectors of partials, for rowcolumns.py, whose blocks each write partials
   of every column.)

No float atomics and a fixed order everywhere: the result is the same bits
on every run. Positions past N (N / V not a multiple of Tx) read the last
vector (in bounds) and are not stored.

Before (``sum(dy, axes=[0])``, 16384 x 4096 bf16; config ``{block = [32, 8, 1],
strategy = "simt-reduce-columns", tile = [1024], unroll = 8, vector = 8}``)::

    %acc = memref.alloc() : memref<1x4096xf32>
    linalg.generic {iterator_types = ["parallel", "parallel"]} outs(%acc) { yield 0.0 }
    linalg.generic {indexing_maps = [(r, n) -> (r, n), (r, n) -> (0, n)],
                    iterator_types = ["reduction", "parallel"]}
        ins(%dy : memref<16384x4096xbf16>) outs(%acc) { addf %out, (extf %in) }
    linalg.generic ... ins(%acc) outs(%y : memref<1x4096xbf16>) { truncf %in }

After::

    %part = memref.alloc() : memref<16x4096xf32>
    gpu.launch blocks(%bx, %by, %bz) in (%c16, %c16, %c1)
               threads(%tx, %ty, %tz) in (%c32, %c8, %c1)
               workgroup(%smem : memref<2048xf32, #gpu.address_space<workgroup>>) {
      %j = (%bx * 32 + %tx) * 8
      %l0 = vector.load %dy[%by * 1024 + %ty, %j] : memref<16384x4096xbf16>, vector<8xbf16>
      ... step 0's 8 rows (%ty + 8u), 8 loads ...
      %r:16 = scf.for %i = %c0 to %c15 step %c1
          iter_args(%a0 = %zero, ..., %a7 = %zero, %w0 = %l0, ..., %w7 = %l7) {
        %n0 = vector.load %dy[... step %i + 1 ...] ... 8 loads ...
        ... 64 extf + addf: rows %w0 ... %w7 folded into %a0 ... %a7 ...
        scf.yield %a0', ..., %a7', %n0, ..., %n7
      }
      ... step 15 folded ...
      memref.store %a0, %smem[%ty * 256 + %tx * 8] ...      // 8 sums per thread
      gpu.barrier
      scf.if %ty == 0 {
        ... 8 slots per column summed in the order of ty ...
        vector.store %sums, %part[%by, %j] : memref<16x4096xf32>, vector<8xf32>
      }
      gpu.barrier
      scf.if %tx == 0 && %ty == 0 {
        llvm.fence syncscope("device") acq_rel
        %before = memref.atomic_rmw addi %c1_i32, %count[%bx] : (i32, memref<16xi32>) -> i32
        llvm.fence syncscope("device") acq_rel
        memref.store %before, %ticket[%c0]          // workgroup memory
      }
      gpu.barrier
      scf.if %ticket[0] == 15 {                     // the last of 16 blocks
        ... %count[%bx] = 0 ...
        %p = vector.load %part[%ty, %j] ... %q = vector.load %part[%ty + 8, %j] ...
        ... %p + %q into the row lane's slots ...
      }
      gpu.barrier
      scf.if %ticket[0] == 15 {
        scf.if %ty == 0 {
          ... 8 slots per column summed in the order of ty, + 0.0 (the fill) ...
          %y = arith.truncf ... : vector<8xf32> to vector<8xbf16>
          vector.store %y, %y_buf[%c0, %j] : memref<1x4096xbf16>, vector<8xbf16>
        }
      }
    }

A kernel that is not a column program (colwise_program.py says what is)
raises ``NotAColumnProgram`` with the reason, before any IR is changed; the
pass then leaves the kernel to simt-generic.

Lit test: test/lit/passes/dnn_reduce_columns.mlir.
"""

from mlir import ir
from mlir.dialects import arith, gpu, llvm, memref, scf, vector

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.reduce.colwise_emitter import Memo, vector_alignment
from dnnc.codegen.gpu.reduce.colwise_finish import FinishEmitter
from dnnc.codegen.gpu.reduce.colwise_program import NotAColumnProgram, Program, statements_of
from dnnc.codegen.gpu.reduce.rowwise import erase_statements

SHARED_BYTES = 48 * 1024  # static shared memory of a block
MAX_SPLITS = 65535        # grid y

_index = irutil.index


def _i32(n):
    return arith.constant(ir.IntegerType.get_signless(32), n)


def _fence():
    """A GPU-scope acquire-release fence (PTX ``fence.acq_rel.gpu``): after
    the block's barrier, it orders every thread's earlier stores (the
    barrier makes them the fencing thread's) before what follows."""
    llvm.fence(llvm.AtomicOrdering.acq_rel, syncscope="device")


class RowsEmitter(FinishEmitter):
    """The rows launch: steps 1 to 3 above, the finish (colwise_finish.py)
    in the block that arrives last."""

    def load_rows(self, rows, j):
        """(points, memos) of ``rows``: every memory read their reductions
        and stores need, issued now."""
        points = [self.point(r, j) for r in rows]
        memos = [Memo() for _ in rows]
        for point, memo in zip(points, memos):
            for s, state in self.program.reductions + self.program.row_stores:
                self.prefetch(s, point, memo, state)
        return points, memos

    def fold_loaded(self, points, memos, valid, inside, accs):
        """Fold the loaded rows into ``accs`` (per reduction, per lane;
        ``valid``: a flag per row, or None) and store the full outputs."""
        accs = list(accs)
        for u, (point, memo) in enumerate(zip(points, memos)):
            for k, (s, state) in enumerate(self.program.reductions):
                folded = self.evaluate(s, point, memo, state, acc=accs[k])
                if valid is not None:
                    folded = [arith.select(valid[u], f, a) for f, a in zip(folded, accs[k])]
                accs[k] = folded
            for s, state in self.program.row_stores:
                flags = [f for f in (valid[u] if valid else None, inside) if f is not None]
                self.store(s, point, self.value_of(s, state, point, memo), flags)
        return accs

    def step_rows(self, base, i, ty):
        """The rows of a thread in step ``i`` from row ``base``."""
        start = arith.addi(base, arith.muli(i, _index(self.ty * self.unroll)))
        return [arith.addi(start, arith.addi(ty, _index(u * self.ty)) if u else ty)
                for u in range(self.unroll)]

    def fold_steps(self, base, steps, ty, j, inside, accs):
        """Fold ``steps`` (a number) whole steps of rows from ``base``,
        software-pipelined: step i + 1's loads are loop-carried values,
        issued before step i is folded, so all ``unroll`` rows' loads are in
        flight at once whatever order ptxas gives the rest."""
        if steps == 0:
            return accs
        points, memos = self.load_rows(self.step_rows(base, _index(0), ty), j)
        if steps > 1:
            n = len(accs) * self.width
            carried = [v for m in memos for v in m.loaded()]
            loop = scf.ForOp(_index(0), _index(steps - 1), _index(1),
                             [a for acc in accs for a in acc] + carried)
            with ir.InsertionPoint(loop.body):
                i = loop.induction_variable
                values = list(loop.inner_iter_args)
                now = self.restore(memos, values[n:])
                here = [self.point(r, j) for r in self.step_rows(base, i, ty)]
                _, ahead = self.load_rows(
                    self.step_rows(base, arith.addi(i, _index(1)), ty), j)
                folded = self.fold_loaded(here, now, None, inside, self.unflatten(values[:n]))
                scf.YieldOp([a for acc in folded for a in acc] +
                            [v for m in ahead for v in m.loaded()])
            results = list(loop.results)
            accs, memos = self.unflatten(results[:n]), self.restore(memos, results[n:])
            points = [self.point(r, j) for r in self.step_rows(base, _index(steps - 1), ty)]
        return self.fold_loaded(points, memos, None, inside, accs)

    @staticmethod
    def restore(memos, values):
        out, at = [], 0
        for memo in memos:
            out.append(memo.restored(values[at:at + len(memo.loads)]))
            at += len(memo.loads)
        return out

    def rows_launch(self, created):
        block, terminator, smem, ticket = self.new_launch(created, self.splits, self.splits > 1)
        with ir.InsertionPoint(terminator):
            self.rows_body(list(block.arguments), smem, ticket)

    def rows_body(self, args, smem, ticket):
        bx, by, tx, ty = args[0], args[1], args[3], args[4]
        j, inside = self.column(bx, tx)
        accs = self.fold_block(by, ty, j, inside)
        if smem is None:
            self.settle(accs, j, inside, by)
        else:
            self.combine_lanes(accs, smem, bx, tx, ty, lambda totals, j: self.settle(
                totals, j, None, by))
        if self.splits > 1:
            self.sum_if_last(bx, tx, ty, smem, ticket)

    def fold_block(self, by, ty, j, inside):
        """1. The thread's sums of its columns over its rows of block ``by``:
        whole steps of Ty * unroll rows (the last block, shorter when R is
        not a multiple of the tile, has its own count), then one guarded
        step for the rest."""
        accs = [[self.identity(s)] * self.width for s, _ in self.program.reductions]
        step = self.ty * self.unroll
        count, tile, splits = self.shape.count, self.tile, self.splits
        base = arith.muli(by, _index(tile))
        last_rows = count - (splits - 1) * tile
        full, last = tile // step, last_rows // step
        if splits == 1:
            full = last
        is_last = None
        if last == full:
            accs = self.fold_steps(base, full, ty, j, inside, accs)
        else:
            is_last = arith.cmpi(arith.CmpIPredicate.eq, by, _index(splits - 1))
            flat = [self.f32] * (len(accs) * self.width)
            branch = scf.IfOp(is_last, flat, has_else=True)
            for block, steps in ((branch.then_block, last), (branch.else_block, full)):
                with ir.InsertionPoint(block):
                    folded = self.fold_steps(base, steps, ty, j, inside, accs)
                    scf.YieldOp([a for acc in folded for a in acc])
            accs = self.unflatten(list(branch.results))
        if last_rows % step == 0 and (splits == 1 or tile % step == 0):
            return accs
        done = _index(full * step)
        if is_last is not None:
            done = arith.select(is_last, _index(last * step), done)
        start = arith.addi(base, done)
        end = arith.addi(base, _index(tile)) if count % tile == 0 else \
            arith.minui(arith.addi(base, _index(tile)), _index(count))
        rows, valid = [], []
        for u in range(self.unroll):
            r = arith.addi(start, arith.addi(ty, _index(u * self.ty)) if u else ty)
            valid.append(arith.cmpi(arith.CmpIPredicate.ult, r, end))
            rows.append(arith.minui(r, _index(count - 1)))
        points, memos = self.load_rows(rows, j)
        return self.fold_loaded(points, memos, valid, inside, accs)

    def settle(self, totals, j, inside, by):
        """3. A block's sums of its columns: the result (G = 1: the finish,
        at its ``V`` columns) or its partials."""
        if inside is not None:
            branch = scf.IfOp(inside)
            with ir.InsertionPoint(branch.then_block):
                self.settle(totals, j, None, by)
                scf.YieldOp([])
            return
        if self.splits == 1:
            self.finish(self.point(None, j), lambda k: totals[k])
            return
        for k, lanes in enumerate(totals):
            vec = vector.from_elements(ir.VectorType.get([self.width], self.f32), lanes)
            vector.store(vec, self.partials[k], [by, self.column_of(j)],
                         alignment=vector_alignment(self.width, self.f32))

    def sum_if_last(self, bx, tx, ty, smem, ticket):
        """3'. G > 1: the last block of a column of blocks to write its
        partials sums the G partials of its columns and finishes them, in
        the same launch.

        After the block's barrier, thread (0, 0) fences (GPU scope,
        acquire-release: the barrier makes the block's partial stores its
        own), adds 1 to the column's arrival count, fences again (the other
        blocks' partials, for the last), and leaves the count it found in
        shared memory.
        The block that finds G - 1 puts the count back to zero for the next
        call (the runtime zeroes the workspace once) and reads the
        partials: row lane ``ty`` folds partials ty, ty + Ty, ... in order,
        and the lanes are combined through shared memory in the order of
        ty, so the sum does not depend on which block came last. The other
        blocks are done. Barriers stay at the launch's top level, executed
        by every block."""
        gpu.BarrierOp()
        first = arith.andi(arith.cmpi(arith.CmpIPredicate.eq, tx, _index(0)),
                           arith.cmpi(arith.CmpIPredicate.eq, ty, _index(0)))
        count = scf.IfOp(first)
        with ir.InsertionPoint(count.then_block):
            _fence()
            before = memref.atomic_rmw(arith.AtomicRMWKind.addi, _i32(1), self.arrivals,
                                       [self.slot_of(bx)])
            _fence()
            memref.store(before, ticket, [_index(0)])
            scf.YieldOp([])
        gpu.BarrierOp()

        def if_last(body):
            last = arith.cmpi(arith.CmpIPredicate.eq, memref.load(ticket, [_index(0)]),
                              _i32(self.splits - 1))
            branch = scf.IfOp(last)
            with ir.InsertionPoint(branch.then_block):
                body()
                scf.YieldOp([])

        def fold():
            first = arith.andi(arith.cmpi(arith.CmpIPredicate.eq, tx, _index(0)),
                               arith.cmpi(arith.CmpIPredicate.eq, ty, _index(0)))
            reset = scf.IfOp(first)
            with ir.InsertionPoint(reset.then_block):
                memref.store(_i32(0), self.arrivals, [self.slot_of(bx)])
                scf.YieldOp([])
            j, inside = self.column(bx, tx)
            sums = self.fold_partials(j, ty)
            if smem is not None:
                self.to_slots(sums, smem, tx, ty)
                return
            point = self.point(None, j)
            if inside is None:
                self.finish(point, lambda k: sums[k])
                return
            branch = scf.IfOp(inside)
            with ir.InsertionPoint(branch.then_block):
                self.finish(point, lambda k: sums[k])
                scf.YieldOp([])

        if_last(fold)
        if smem is not None:
            gpu.BarrierOp()
            if_last(lambda: self.from_slots(smem, bx, tx, ty, lambda totals, j: self.finish(
                self.point(None, j), lambda k: totals[k])))


def build(fn, width, block, unroll, tile=None):
    """Replace kernel ``fn``'s body by its column program: a rows launch of
    ``block = (Tx, Ty)`` threads folding ``tile`` rows per block (None: all
    of them), ``unroll`` rows of ``width``-element vectors at a time, and a
    finish launch when the rows are split over several blocks. Returns the
    number of splits G.
    NotAColumnProgram (nothing changed) when it is not a column program."""
    statements, shape = statements_of(fn)
    args = set(irutil.body(fn).arguments)
    outputs = {s.operands[-1] for s in statements if s.operands[-1] in args}
    program = Program(statements, outputs)
    if shape.count == 0 or shape.n == 0:
        raise NotAColumnProgram(f"{list(shape.rows)} x {shape.n}: no element to fold")
    if width < 1 or shape.inner[-1] % width:
        raise NotAColumnProgram(f"an innermost dim of {shape.inner[-1]} elements is not a "
                                f"multiple of the vector ({width})")
    if shape.outers > MAX_SPLITS:
        raise NotAColumnProgram(f"{shape.outers} outer indices: expected at most {MAX_SPLITS}")
    tile = shape.count if tile is None else tile
    if min(unroll, tile) < 1:
        raise NotAColumnProgram(f"unroll {unroll} and tile {tile}: expected >= 1")
    emitter = RowsEmitter(program, shape, width, tuple(block[:2]), unroll, tile)
    if emitter.splits > MAX_SPLITS:
        raise NotAColumnProgram(f"{emitter.splits} blocks of {tile} rows: expected at most "
                                f"{MAX_SPLITS}")
    smem = len(program.reductions) * block[0] * block[1] * width * 4
    if block[1] > 1 and smem > SHARED_BYTES:
        raise NotAColumnProgram(f"{smem} bytes of shared memory: expected at most "
                                f"{SHARED_BYTES}")
    body = irutil.body(fn)
    first = next(op for op in body.operations if op.operation.name != "arith.constant")
    created = []
    with ir.InsertionPoint(first), fn.location:
        try:
            if emitter.splits > 1:
                for s, _ in program.reductions:
                    alloc = memref.alloc(ir.MemRefType.get(
                        [emitter.splits, shape.outers * shape.n], emitter.f32), [], [])
                    created.append(alloc.owner)
                    emitter.partials.append(alloc)
                emitter.arrivals = memref.alloc(ir.MemRefType.get(
                    [shape.outers * emitter.blocks_x], ir.IntegerType.get_signless(32)), [], [])
                created.append(emitter.arrivals.owner)
            emitter.rows_launch(created)
        except NotAColumnProgram:
            for op in reversed(created):
                op.erase()
            raise
    erase_statements(fn, statements)
    return emitter.splits
