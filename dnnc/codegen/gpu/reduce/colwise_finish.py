"""The finish of a column program (colwise.py's step 3): each column's
``G`` partials summed in a fixed order and combined with the accumulator's
value before the reduction (its fill), then the column statements (a cast,
a mean's scale) and the kernel's outputs stored.

``FinishEmitter`` adds it to the shared emitter (colwise_emitter.py): row
lane ``ty`` folds partials ``ty, ty + Ty, ...`` in order,
PARTIALS_IN_FLIGHT loads at a time (``fold_partials``), and the lanes are
combined through shared memory in the order of ``ty``. The rows launch
(colwise.py's ``RowsEmitter``) runs it in the last block of a column of
blocks to arrive; ``Finish`` runs it as a launch of its own, blocks of
Tx x Ty threads over 16-byte vectors of partials, for rowcolumns.py, whose
blocks each write partials of every column. The kernel is read in
colwise_program.py.
"""

from mlir import ir
from mlir.dialects import arith, memref, scf, vector

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.reduce.colwise_emitter import Emitter, Memo, vector_alignment
from dnnc.codegen.gpu.reduce.colwise_program import NotAColumnProgram, Program, statements_of
from dnnc.codegen.gpu.reduce.rowwise import combine, combiner

FINISH_THREADS = 256      # threads of a block of the finish launch (Finish)
# Row lanes of a finish block whose column threads the heuristics chose
# (``columns``): its ty = 0 threads add the lanes one after another.
FINISH_LANES = 32
PARTIALS_IN_FLIGHT = 16   # partial loads a finishing thread issues before it adds them

_index = irutil.index


class FinishEmitter(Emitter):
    """The finish, in a launch of its own (``finish_launch``) or in the
    rows launch's last block (colwise.py)."""

    # -- the partials --------------------------------------------------------

    def fold_partials(self, j, ty):
        """Row lane ``ty``'s fold of partials ty, ty + Ty, ... (in order) at
        the ``V`` columns from ``j``: per reduction, per lane.
        PARTIALS_IN_FLIGHT loads at a time; a partial past G (G not a
        multiple of Ty) reads the last one and is selected away."""
        per_lane = -(-self.splits // self.ty)
        names = [combiner(s.op, NotAColumnProgram)[0] for s, _ in self.program.reductions]

        ragged = self.splits % self.ty != 0

        def group(accs, first, count, guarded):
            """Fold partials ``first`` .. ``first + count - 1`` of the lane
            (indices into its sequence); ``guarded``: those that may be past G."""
            loaded = []
            for m in range(count):
                at = arith.addi(first, _index(m)) if m else first
                g = arith.addi(ty, arith.muli(at, _index(self.ty)))
                valid = None
                if ragged and m in guarded:
                    valid = arith.cmpi(arith.CmpIPredicate.ult, g, _index(self.splits))
                    g = arith.minui(g, _index(self.splits - 1))
                loaded.append((valid, [self.load_partial(k, g, j) for k in range(len(names))]))
            for valid, values in loaded:
                for k, name in enumerate(names):
                    folded = [combine(name, a, v) for a, v in zip(accs[k], values[k])]
                    if valid is not None:
                        folded = [arith.select(valid, f, a) for f, a in zip(folded, accs[k])]
                    accs[k] = folded
            return accs

        accs = [[self.identity(s)] * self.width for s, _ in self.program.reductions]
        in_flight = PARTIALS_IN_FLIGHT
        if per_lane <= 4 * in_flight:
            for m in range(0, per_lane, in_flight):
                count = min(in_flight, per_lane - m)
                accs = group(accs, _index(m), count, {per_lane - 1 - m})
            return accs
        whole = per_lane // in_flight
        n = len(accs) * self.width
        loop = scf.ForOp(_index(0), _index(whole), _index(1), [a for acc in accs for a in acc])
        with ir.InsertionPoint(loop.body):
            first = arith.muli(loop.induction_variable, _index(in_flight))
            folded = group(self.unflatten(list(loop.inner_iter_args)), first, in_flight,
                           set(range(in_flight)) if per_lane % in_flight == 0 else set())
            scf.YieldOp([a for acc in folded for a in acc])
        accs = self.unflatten(list(loop.results)[:n])
        if per_lane % in_flight:
            accs = group(accs, _index(whole * in_flight), per_lane % in_flight,
                         {per_lane % in_flight - 1})
        return accs

    def load_partial(self, k, g, j):
        """Partial ``g`` of reduction ``k`` at the ``V`` columns from ``j``."""
        buffer, j = self.partials[k], self.column_of(j)
        if self.width == 1:
            return [memref.load(buffer, [g, j])]
        raw = vector.load(ir.VectorType.get([self.width], self.f32), buffer, [g, j],
                          alignment=vector_alignment(self.width, self.f32))
        return [vector.extract(raw, [], [lane]) for lane in range(self.width)]

    # -- the finish launch ---------------------------------------------------

    def finish_launch(self, created):
        """The finish as a launch of its own (``Finish``): blocks of Tx x Ty
        threads, each row lane folding every Ty-th partial of its ``V``
        columns (fold_partials), the lanes combined in order (combine_lanes),
        then the column statements."""
        block, terminator, smem, _ = self.new_launch(created, 1, False)
        with ir.InsertionPoint(terminator):
            args = list(block.arguments)
            bx, tx, ty = args[0], args[3], args[4]
            j, inside = self.column(bx, tx)
            sums = self.fold_partials(j, ty)

            def then(totals, j):
                self.finish(self.point(None, j), lambda k: totals[k])

            if smem is not None:
                self.combine_lanes(sums, smem, bx, tx, ty, then)
            elif inside is None:
                then(sums, j)
            else:
                branch = scf.IfOp(inside)
                with ir.InsertionPoint(branch.then_block):
                    then(sums, j)
                    scf.YieldOp([])

    def finish(self, point, total_of):
        """Each reduction's result (the sum of its rows, ``total_of(k)`` per
        lane, combined with the accumulator's value before it), then the
        column statements' stores, in program order."""
        point.totals, memo = {}, Memo()
        for event in self.program.finish:
            if event[0] == "store":
                _, s, state = event
                self.store(s, point, self.value_of(s, state, point, memo))
                continue
            s, state = self.program.reductions[event[1]]
            name, _ = combiner(s.op, NotAColumnProgram)
            before = self.read(s.operands[-1], s.exprs[-1], s, point, memo, state)
            point.totals[event[1]] = [combine(name, b, t)
                                      for b, t in zip(before, total_of(event[1]))]


class Finish:
    """The column reductions of kernel ``fn`` (its statements but the ops
    ``skip``) when another program folds their rows (rowcolumns.py) into
    per-block partials, ``tile`` rows a block (None: all), ``columns`` threads
    of a finish block along the columns (None: 32, as many blocks as vectors
    of 32; the heuristics give fewer where that leaves SMs idle, each
    block then having at most FINISH_LANES row lanes): ``allocate`` makes the
    ``[G, N]`` f32 partials (one per reduction, in program order) that it
    writes, ``launch`` the finish launch that sums them in order and runs
    the column statements (colwise.py's step 3). ``reductions``: the reductions'
    linalg ops; ``statements``: what the finish interprets (to erase)."""

    def __init__(self, fn, skip, tile, columns=None):
        self.statements, self.shape = statements_of(fn, skip)
        if self.shape.outer or len(self.shape.inner) > 1:
            raise NotAColumnProgram("column sums that keep dims before the reduced ones")
        args = set(irutil.body(fn).arguments)
        outputs = {s.operands[-1] for s in self.statements if s.operands[-1] in args}
        program = Program(self.statements, outputs)
        if program.row_stores:
            raise NotAColumnProgram("an output over the rows beside the column sums")
        self.reductions = [s.op for s, _ in program.reductions]
        tile = tile or self.shape.count
        width = 16 // 4   # 16 bytes of f32 partials
        while self.shape.n % width:
            width //= 2
        vectors, tx = self.shape.n // width, 1
        while tx < (columns or 32) and tx < vectors:
            tx *= 2
        splits, ty = -(-self.shape.count // tile), 1
        while ty < min(FINISH_THREADS // tx, FINISH_LANES if columns else FINISH_THREADS) \
                and ty < splits:
            ty *= 2
        self._emitter = FinishEmitter(program, self.shape, width, (tx, ty), 1, tile)
        self.splits = self._emitter.splits

    def allocate(self, created):
        for _ in self.reductions:
            alloc = memref.alloc(ir.MemRefType.get([self.splits, self.shape.n],
                                                   self._emitter.f32), [], [])
            created.append(alloc.owner)
            self._emitter.partials.append(alloc)
        return list(self._emitter.partials)

    def launch(self, created):
        self._emitter.finish_launch(created)

