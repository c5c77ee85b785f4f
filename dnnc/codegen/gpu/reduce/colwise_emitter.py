"""What both launches of a column program (colwise.py) share: ``Emitter``
computes a statement's values at a ``Point`` (``V`` columns from ``j``, at
one row in the rows launch, at no row in the finish), each memory read once
a point (``Memo``) and an intermediate recomputed where it is read, and
stores them; it maps a block's threads onto the columns (thread ``(tx, ty)``
of block ``(bx, by, bz)`` owns the ``V`` columns from ``(bx * Tx + tx) * V``
of outer index ``bz``; a position past N reads the last vector and is not
stored), makes a launch of ``Tx x Ty`` threads with its workgroup buffers,
and combines the block's ``Ty`` row lanes through shared memory in the
order of ``ty``. Partials and arrival counts of outer index ``o`` sit at
columns ``o * N + j`` and slots ``o * grid x + bx``: the O column problems
side by side.

The kernel is read in colwise_program.py. colwise_finish.py's
``FinishEmitter`` adds the finish (the partials summed, the column
statements) to this one, and colwise.py's ``RowsEmitter`` the rows launch
to that.
"""

from mlir import ir
from mlir.dialects import arith, gpu, memref, scf, vector

from dnnc.codegen.gpu import irutil, loops
from dnnc.codegen.gpu.elementwise.vectorize import clone_body
from dnnc.codegen.gpu.reduce.colwise_program import NotAColumnProgram
from dnnc.codegen.gpu.reduce.rowwise import combine, combiner

_index = irutil.index


def _workgroup():
    return ir.Attribute.parse("#gpu.address_space<workgroup>")


class Point:
    """Where values are computed: ``width`` columns from ``j`` (flat over
    the inner dims; ``inner``: its indices, the vector along the last), of
    outer index ``outer`` (indices), at one row (``rows``: its indices) in
    the rows launch, at no row in the finish, where ``totals`` holds each
    reduction's result."""

    def __init__(self, rows, j, width, totals=None, outer=(), inner=None):
        self.rows, self.j, self.width, self.totals = rows, j, width, totals
        self.outer, self.inner = outer, [j] if inner is None else inner

    def index(self, stmt, d):
        """The value of loop dim ``d`` of ``stmt`` here (lane 0)."""
        role = stmt.roles[d]
        if role is None:
            return _index(0)
        kind, i = role
        return {"o": self.outer, "r": self.rows, "i": self.inner}[kind][i]


def _token(stmt, d):
    """What index loop dim ``d`` of ``stmt`` (None: a broadcast) reads, as a
    key: two reads of a buffer with the same tokens load the same data."""
    if d is None or stmt.roles[d] is None:
        return "0"
    return stmt.roles[d]


class Memo(dict):
    """What one point has computed: values by key, and the keys of its
    memory loads in the order they were issued (``loads``)."""

    def __init__(self):
        super().__init__()
        self.loads = []

    def loaded(self):
        return [self[k] for k in self.loads]

    def restored(self, values):
        """A memo holding only this one's loads, with ``values`` instead."""
        memo = Memo()
        for key, value in zip(self.loads, values):
            memo[key] = value
            memo.loads.append(key)
        return memo


def vector_alignment(width, element):
    # A vector of V elements starts at a multiple of V; buffers are 16-byte aligned.
    return min(16, width * irutil.element_bytes(element))


class Emitter:
    """The statements of a ``Program`` as IR at a point, and the pieces of a
    launch of ``block = (Tx, Ty)`` threads both launches share."""

    def __init__(self, program, shape, width, block, unroll, tile):
        self.program, self.shape, self.width = program, shape, width
        self.tx, self.ty = block
        self.unroll, self.tile = unroll, tile
        self.vectors = shape.n // width
        self.splits = -(-shape.count // tile)
        self.bz = None         # the launch's outer index (block id z), once in a launch
        self.f32 = ir.F32Type.get()
        self.partials = []
        self.arrivals = None   # G > 1: an i32 count per column of blocks, zero between calls

    # -- points --------------------------------------------------------------

    def point(self, rows, j):
        """The Point of the ``V`` columns from ``j`` of the launch's outer
        index, at row ``rows`` (a linear row index; None: the finish)."""
        shape = self.shape
        outer = loops.delinearize(self.bz, list(shape.outer)) if shape.outer else ()
        inner = loops.delinearize(j, list(shape.inner)) if len(shape.inner) > 1 else None
        at = None if rows is None else loops.delinearize(rows, list(shape.rows))
        return Point(at, j, self.width, outer=outer, inner=inner)

    def column_of(self, j):
        """Where the ``V`` columns from ``j`` of the outer index sit among the
        O x N columns of the partials."""
        if not self.shape.outer:
            return j
        return arith.addi(arith.muli(self.bz, _index(self.shape.n)), j)

    def slot_of(self, bx):
        """The arrival count of block column ``bx`` of the outer index."""
        if not self.shape.outer:
            return bx
        return arith.addi(arith.muli(self.bz, _index(self.blocks_x)), bx)

    @property
    def blocks_x(self):
        return -(-self.vectors // self.tx)

    # -- values --------------------------------------------------------------

    def read(self, buffer, exprs, reader, point, memo, state):
        """The ``point.width`` values of ``buffer`` read by ``reader``
        through ``exprs`` (the same value in every lane unless the read runs
        along N)."""
        entry = state.get(buffer)
        if entry is not None and entry[0] == "alias":
            return self.read(entry[1], exprs, reader, point, memo, state)
        along = bool(exprs) and exprs[-1] == reader.rank - 1
        if entry is None:  # a kernel argument (or an uninitialized intermediate): memory
            key = (buffer, tuple(_token(reader, d) for d in exprs))
            if key not in memo:
                idx = [_index(0) if d is None else point.index(reader, d) for d in exprs]
                elt = ir.MemRefType(buffer.type).element_type
                if along and point.width > 1:
                    memo[key] = vector.load(ir.VectorType.get([point.width], elt), buffer, idx,
                                            alignment=vector_alignment(point.width, elt))
                else:
                    memo[key] = memref.load(buffer, idx)
                memo.loads.append(key)
            if ("lanes", key) not in memo:
                raw = memo[key]
                memo[("lanes", key)] = [vector.extract(raw, [], [k]) for k in range(point.width)] \
                    if isinstance(raw.type, ir.VectorType) else [raw] * point.width
            return memo[("lanes", key)]
        if entry[0] == "reduced":
            if point.totals is None:
                raise NotAColumnProgram("a reduction's result read over the rows (it needs "
                                        "every row first)")
            if not along:
                raise NotAColumnProgram("a reduction's result read at one column")
            return point.totals[entry[1]]
        producer, snapshot = entry[1], entry[2]
        if producer.kind == "full":
            if reader.kind == "column" or list(exprs) != list(range(reader.rank)):
                raise NotAColumnProgram("a full intermediate read through a broadcast")
        elif not along and self.shape.n > 1:
            raise NotAColumnProgram("a per-column intermediate read at one column")
        if id(producer) not in memo:
            memo[id(producer)] = self.value_of(producer, snapshot, point, memo)
        return memo[id(producer)]

    def value_of(self, stmt, state, point, memo):
        """The values ``stmt`` writes at ``point``."""
        if stmt.copy:
            return self.read(stmt.operands[0], stmt.exprs[0], stmt, point, memo, state)
        if stmt.kind == "reduction":
            return self.read(stmt.operands[-1], stmt.exprs[-1], stmt, point, memo, state)
        return self.evaluate(stmt, point, memo, state)

    def evaluate(self, stmt, point, memo, state, acc=None):
        """The generic's body at the ``point.width`` positions: its value per
        lane; with ``acc`` (a reduction's accumulators, per lane) the body
        folds each lane into its accumulator."""
        body = stmt.op.regions[0].blocks[0]
        values = [self.read(b, e, stmt, point, memo, state)
                  for b, e in zip(stmt.operands[:-1], stmt.exprs[:-1])]
        out, out_exprs = stmt.operands[-1], stmt.exprs[-1]
        reads_out = any(True for _ in list(body.arguments)[-1].uses)
        results = []
        for k in range(point.width):
            args = [v[k] for v in values]
            if acc is not None:
                args.append(acc[k])
            elif reads_out:
                args.append(self.read(out, out_exprs, stmt, point, memo, state)[k])
            else:
                elt = ir.MemRefType(out.type).element_type
                args.append(arith.constant(elt, irutil.zero_attr(elt)))

            def index_of(d, k=k):
                i = point.index(stmt, d)
                return arith.addi(i, _index(k)) if k and d == stmt.rank - 1 else i

            results.append(clone_body(body, args, index_of)[0])
        return results

    def prefetch(self, stmt, point, memo, state):
        """Issue every memory read ``stmt``'s value at ``point`` needs, so
        that the loads of several rows are in flight before any math."""
        reads = list(zip(stmt.operands[:-1], stmt.exprs[:-1]))
        if stmt.copy:
            reads = [(stmt.operands[0], stmt.exprs[0])]
        for buffer, exprs in reads:
            entry = state.get(buffer)
            while entry is not None and entry[0] == "alias":
                buffer, entry = entry[1], state.get(entry[1])
            if entry is None:
                self.read(buffer, exprs, stmt, point, memo, state)
            elif entry[0] == "virtual" and ("prefetched", id(entry[1])) not in memo:
                memo[("prefetched", id(entry[1]))] = True
                self.prefetch(entry[1], point, memo, entry[2])

    # -- the block -----------------------------------------------------------

    def column(self, bx, tx):
        """(first element of the thread's vector, in-bounds flag or None)."""
        c = arith.addi(arith.muli(bx, _index(self.tx)), tx)
        if self.vectors % self.tx == 0:
            return arith.muli(c, _index(self.width)), None
        inside = arith.cmpi(arith.CmpIPredicate.ult, c, _index(self.vectors))
        c = arith.minui(c, _index(self.vectors - 1))
        return arith.muli(c, _index(self.width)), inside

    def store(self, stmt, point, values, flags=()):
        """Store ``values`` into ``stmt``'s output at ``point``, where every
        flag holds."""
        out = stmt.operands[-1]
        idx = [_index(0) if d is None else point.index(stmt, d) for d in stmt.exprs[-1]]
        guard = None
        for f in flags:
            guard = f if guard is None else arith.andi(guard, f)
        if guard is not None:
            branch = scf.IfOp(guard)
            with ir.InsertionPoint(branch.then_block):
                self.store(stmt, point, values)
                scf.YieldOp([])
            return
        if point.width == 1:
            memref.store(values[0], out, idx)
            return
        elt = ir.MemRefType(out.type).element_type
        vec = vector.from_elements(ir.VectorType.get([point.width], elt), values)
        vector.store(vec, out, idx, alignment=vector_alignment(point.width, elt))

    def new_launch(self, created, splits, ticket):
        """A launch of ``ceil(vectors / Tx) x splits x O`` blocks of Tx x Ty
        threads, its terminator, and its workgroup buffers: the row lanes'
        slots (Ty > 1; else None) and, with ``ticket``, the block's arrival
        count (else None). Sets ``bz``, the outer index."""
        grid = (self.blocks_x, splits, self.shape.outers)
        launch = gpu.LaunchOp(tuple(_index(g) for g in grid),
                              (_index(self.tx), _index(self.ty), _index(1)))
        created.append(launch.operation)
        block = launch.regions[0].blocks[0]
        shared = []
        if self.ty > 1:
            size = len(self.program.reductions) * self.ty * self.tx * self.width
            shared.append(ir.MemRefType.get([size], self.f32, memory_space=_workgroup()))
        if ticket:
            shared.append(ir.MemRefType.get([1], ir.IntegerType.get_signless(32),
                                            memory_space=_workgroup()))
        if shared:
            launch.attributes["workgroup_attributions"] = ir.IntegerAttr.get(
                ir.IntegerType.get_signless(64), len(shared))
        buffers = [block.add_argument(t, launch.location) for t in shared]
        self.bz = block.arguments[2]
        with ir.InsertionPoint(block):
            terminator = gpu.TerminatorOp()
        return (block, terminator, buffers[0] if self.ty > 1 else None,
                buffers[-1] if ticket else None)

    def combine_lanes(self, accs, smem, bx, tx, ty, then):
        """2. The block's Ty sums of a column, through shared memory, summed
        by its ty = 0 thread in the order of ty (deterministic), which calls
        ``then(totals, j)`` with them where its columns are inside N."""
        self.to_slots(accs, smem, tx, ty)
        gpu.BarrierOp()
        self.from_slots(smem, bx, tx, ty, then)

    def to_slots(self, accs, smem, tx, ty):
        """Each thread's sums into its shared-memory slots. Slot of
        (reduction k, row lane y, column thread x, lane l):
        ((k * Ty + y) * Tx + x) * V + l."""
        stride = self.tx * self.width
        for k, acc in enumerate(accs):
            row = arith.addi(_index(k * self.ty * stride), arith.muli(ty, _index(stride)))
            mine = arith.addi(row, arith.muli(tx, _index(self.width)))
            for lane, value in enumerate(acc):
                memref.store(value, smem, [arith.addi(mine, _index(lane)) if lane else mine])

    def from_slots(self, smem, bx, tx, ty, then):
        """The ty = 0 threads' sums of the slots of their columns, in the
        order of ty (after a barrier)."""
        stride = self.tx * self.width
        # Recomputed from the launch's ids: nothing crosses the barrier in registers.
        j, inside = self.column(bx, tx)
        first = arith.cmpi(arith.CmpIPredicate.eq, ty, _index(0))
        branch = scf.IfOp(first if inside is None else arith.andi(first, inside))
        with ir.InsertionPoint(branch.then_block):
            mine = arith.muli(tx, _index(self.width))
            totals = []
            for k, (s, _) in enumerate(self.program.reductions):
                name, _ = combiner(s.op, NotAColumnProgram)
                lanes = []
                for lane in range(self.width):
                    total = None
                    for y in range(self.ty):
                        at = arith.addi(mine, _index((k * self.ty + y) * stride + lane))
                        value = memref.load(smem, [at])
                        total = value if total is None else combine(name, total, value)
                    lanes.append(total)
                totals.append(lanes)
            then(totals, j)
            scf.YieldOp([])

    def identity(self, stmt):
        """The f32 identity of reduction ``stmt``'s combining op."""
        _, value = combiner(stmt.op, NotAColumnProgram)
        return arith.constant(self.f32, ir.FloatAttr.get(self.f32, value))

    def unflatten(self, values):
        """A flat list of values (loop-carried, yielded) back into ``V``
        lanes per reduction."""
        w = self.width
        return [values[k * w:(k + 1) * w] for k in range(len(values) // w)]
