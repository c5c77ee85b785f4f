"""The simt-reduce-rows-columns strategy: a row program (rowwise.py) that also
folds every row it visits into column sums, so that one pass over the rows
makes a norm backward's dx and the partials of its dscale and dbias, and a
second launch (colwise_finish.py's ``Finish``) sums the partials in order
(dnn-reduce-rows-columns).

What the kernel is made of, after bufferization (dnn-fuse joins a column
kernel to the row kernel over its rows): a row program's statements over
``rows x N`` and ``rows x 1`` (rowwise.py), and a column program's without
its full statements (colwise_program.py): reductions with iterators
``[reduction, ..., parallel]`` over the same ``rows x N``, their
accumulators' fills and what follows them over ``1 x N`` (the cast of
dscale to bf16). A column reduction reads the row program's values as they
are at its place in the program (``dy * xhat``: xhat is the row program's
intermediate, computed once per element for both).

``build`` emits, with ``B`` rows per block (``tile[1]``), ``W`` rows at a
time (``tile[0]``: 1, the block works on one row; ``T / 32``, a warp per
row) and ``k`` column reductions:

1. **Sums**: each row slot ``w`` of the block has ``k`` rows of ``N`` f32
   sums in dynamic shared memory, ``[W, k, N]``, set to the reductions'
   identities. A thread of a row owns the same columns in every row (its
   vectors ``lane, lane + T/W, ...`` of ``V`` elements), so it alone reads
   and writes them: no barrier between rows, no atomics.
2. **Rows**: block ``g`` runs the row program on rows ``g * B + w``,
   ``g * B + w + W``, ... below ``min((g + 1) * B, R)``; at each column
   reduction's place in the program its body folds the thread's vectors
   into its sums (one 16-byte shared load and store per 4 sums). Held rows
   (at most ``REGISTER_ELEMENTS`` a thread) load dy and x once for both.
3. **Partials**: after a barrier, the block's threads sum each column's
   ``W`` slots in the order of ``w`` into the f32 workspace ``[G, N]``
   (``G = ceil(R / B)``), one partial row per reduction.
4. **Finish** (colwise_finish.Finish, a second launch): blocks of Tx x Ty
   threads, a thread per 16-byte vector of partials; row lane ``y`` sums
   partials ``y, y + Ty, ...`` in order, the lanes are added in the order of
   ``y`` through shared memory, and the sum is combined with the
   accumulator's fill before the column statements (cast, store).

Every sum is taken in a fixed order: the same bits on every run. The rows
launch reads dy and x once and writes dx: 3 passes over the big tensors,
where a row program and a column program make 5.

The IR before and after is in the pass's docstring
(dnnc/passes/dnn_reduce_rows_columns.py). The row program's warp slots and
the sums share the dynamic shared memory, slots first.

A kernel that is not such a program raises ``NotARowColumnProgram`` with
the reason, before any IR is changed; the pass then leaves the kernel to
simt-generic.

Lit test: test/lit/passes/dnn_reduce_rows_columns.mlir.
"""

from mlir import ir
from mlir.dialects import arith, gpu, memref, scf, vector

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.elementwise.vectorize import broadcast_exprs
from dnnc.codegen.gpu.reduce import colwise_finish, colwise_program, rowwise

# Dynamic shared memory a block's column sums may take: an H100 SM has
# 227 KB for its blocks, an A100's 163 KB.
MAX_SUMS_BYTES = 160 * 1024

_index = irutil.index


class NotARowColumnProgram(Exception):
    """The kernel is not a row program with column sums; the message says why."""


def _column_ops(fn):
    """The ops of kernel ``fn`` that belong to its column sums: reductions
    over the leading dims (iterators ``[reduction, ..., parallel]``) and the
    ops that write a buffer of shape ``1 x ... x 1 x N`` with N > 1 (fills,
    copies and casts of the sums)."""
    out = []
    for op in irutil.body(fn).operations:
        op = op.operation
        if op.name == "linalg.generic":
            iterators = [irutil.is_parallel(i)
                         for i in ir.ArrayAttr(op.attributes["iterator_types"])]
            if len(iterators) > 1 and iterators[-1] and not any(iterators[:-1]):
                out.append(op)
                continue
        if op.name not in ("linalg.generic", "linalg.copy", "memref.copy"):
            continue
        shape = list(ir.MemRefType(op.operands[len(op.operands) - 1].type).shape)
        if len(shape) > 1 and shape[-1] > 1 and all(d == 1 for d in shape[:-1]):
            out.append(op)
    return out


def _column_statement(op, shape):
    """A column reduction as a rowwise Statement over the row program's loops."""
    maps = irutil.indexing_maps(op)
    exprs = [broadcast_exprs(m) for m in maps]
    rank = len(shape.rows) + 1
    extents = [None] * rank
    for value, e in zip(op.operands, exprs):
        if e is None or len(e) != rank:
            raise NotARowColumnProgram("a column reduction whose indexing map is not a "
                                       "broadcast in loop order")
        for d, size in zip(e, ir.MemRefType(value.type).shape):
            if d is not None:
                extents[d] = size
    if tuple(extents) != tuple(shape.rows) + (shape.n,):
        raise NotARowColumnProgram(f"a column reduction over {extents}, rows of the row "
                                   f"program {list(shape.rows)} x {shape.n}")
    return rowwise.Statement(op, "generic", shape.n, True, exprs, list(op.operands))


def _plan(fn, tile, finish_columns=None):
    """(program, row statements, finish, shape): the statements in program
    order as ("row", statement) | ("columns", k, statement)."""
    body = irutil.body(fn)
    column_ops = _column_ops(fn)
    if not any(op.name == "linalg.generic" and not irutil.is_parallel(
            list(ir.ArrayAttr(op.attributes["iterator_types"]))[0]) for op in column_ops):
        raise NotARowColumnProgram("no reduction over the leading dims")
    others = [op.operation for op in body.operations if op.operation not in column_ops]
    try:
        statements, shape = rowwise._statements(fn, skip=column_ops)
        finish = colwise_finish.Finish(fn, others, tile, finish_columns)
    except (rowwise.NotARowProgram, colwise_program.NotAColumnProgram) as why:
        raise NotARowColumnProgram(str(why)) from None
    if (finish.shape.rows, finish.shape.n) != (shape.rows, shape.n):
        raise NotARowColumnProgram(f"column sums over {list(finish.shape.rows)} x "
                                   f"{finish.shape.n}, rows of {list(shape.rows)} x {shape.n}")
    if shape.count < 2:
        raise NotARowColumnProgram("a single row: its column sums are the row")
    column_buffers = {op.operands[len(op.operands) - 1] for op in column_ops}
    for s in statements:
        if any(b in column_buffers for b in s.operands[:-1]):
            raise NotARowColumnProgram("a row statement that reads a column sum")
    row_of = {s.op: s for s in statements}
    reductions = {op: k for k, op in enumerate(finish.reductions)}
    program = []
    for op in body.operations:
        op = op.operation
        if op in row_of:
            program.append(("row", row_of[op]))
        elif op in reductions:
            stmt = _column_statement(op, shape)
            if any(b in column_buffers for b in stmt.operands[:-1]):
                raise NotARowColumnProgram("a column reduction that reads a column sum")
            try:
                rowwise.combiner(op)
            except rowwise.NotARowProgram as why:
                raise NotARowColumnProgram(str(why)) from None
            # Folded as soon as its inputs are final (after the last write of
            # each before it): its values are then the ones at its place,
            # and the row's inputs need not stay live past the row sums.
            at = 0
            for i, entry in enumerate(program):
                if entry[0] == "row" and entry[1].operands[-1] in stmt.operands[:-1]:
                    at = i + 1
            program.insert(at, ("columns", reductions[op], stmt))
    return program, statements, finish, shape


class _Sums:
    """The block's column sums in dynamic shared memory, ``[W, k, N]`` f32."""

    def __init__(self, raw, start, slots, reductions, n, width):
        self.k, self.n, self.width = len(reductions), n, width
        self.reductions = reductions
        size = slots * self.k * n
        f32 = ir.F32Type.get()
        self.type = ir.MemRefType.get([size], f32, memory_space=ir.Attribute.parse(
            "#gpu.address_space<workgroup>"))
        # After the row program's slots, at ``start`` (a multiple of 16 bytes).
        self.buffer = memref.view(self.type, raw, _index(start), [])
        self.slots, self.f32 = slots, f32

    def identity(self, k):
        _, value = rowwise.combiner(self.reductions[k])
        return arith.constant(self.f32, ir.FloatAttr.get(self.f32, value))

    def region(self, slot, k):
        """First element of slot ``slot``'s sums of reduction ``k``."""
        at = _index(k * self.n)
        return at if slot is None else arith.addi(arith.muli(slot, _index(self.k * self.n)), at)

    def strided(self, thread, threads, body):
        """``body(c)`` for c = thread, thread + threads, ... below N."""
        loop = scf.ForOp(thread, _index(self.n), _index(threads), [])
        with ir.InsertionPoint(loop.body):
            body(loop.induction_variable)
            scf.YieldOp([])

    def clear(self, thread, threads):
        """1. Every sum set to its reduction's identity."""
        for slot in range(self.slots):
            for k in range(self.k):
                base = _index((slot * self.k + k) * self.n)
                value = self.identity(k)
                self.strided(thread, threads, lambda c, base=base, value=value:
                             memref.store(value, self.buffer, [arith.addi(base, c)]))

    def fold(self, row, stmt, k, slot):
        """2. Fold the row's values of column reduction ``stmt`` (its ``k``-th)
        into the thread's sums of slot ``slot``, vector by vector."""
        region = self.region(slot, k)
        align = min(16, self.width * 4)
        vec_type = ir.VectorType.get([self.width], self.f32)

        def step(_, j, inside, memo):
            at = arith.addi(region, j)
            if self.width == 1:
                acc = [memref.load(self.buffer, [at])]
            else:
                raw = vector.load(vec_type, self.buffer, [at], alignment=align)
                acc = [vector.extract(raw, [], [lane]) for lane in range(self.width)]
            folded = row.evaluate(stmt, j, memo, acc=acc)

            def store():
                if self.width == 1:
                    memref.store(folded[0], self.buffer, [at])
                else:
                    vector.store(vector.from_elements(vec_type, folded), self.buffer, [at],
                                 alignment=align)

            if inside is None:
                store()
                return None
            guard = scf.IfOp(inside)  # a clamped vector: its owner stores it
            with ir.InsertionPoint(guard.then_block):
                store()
                scf.YieldOp([])
            return None

        row.sweep(step)

    def write(self, thread, threads, block, partials):
        """3. Each column's slots summed in the order of the slot, stored as
        the block's partial of each reduction."""
        def column(c):
            for k in range(self.k):
                name, _ = rowwise.combiner(self.reductions[k])
                total = None
                for slot in range(self.slots):
                    at = arith.addi(_index((slot * self.k + k) * self.n), c)
                    value = memref.load(self.buffer, [at])
                    total = value if total is None else rowwise.combine(name, total, value)
                memref.store(total, partials[k], [block, c])

        self.strided(thread, threads, column)


def build(fn, width, threads, rows_at_once, tile, registers=rowwise.REGISTER_ELEMENTS,
          finish_columns=None):
    """Replace kernel ``fn``'s body by its row program with column sums:
    blocks of ``threads`` folding ``tile`` rows each (None: one block),
    ``rows_at_once`` at a time (1, or a warp per row), ``width``-element
    vectors; then the finish, whose blocks have ``finish_columns`` threads
    along the columns (None: colwise_finish.Finish's default).
    Returns the number of blocks G. NotARowColumnProgram (nothing changed)
    when the kernel is not one."""
    program, statements, finish, shape = _plan(fn, tile, finish_columns)
    tile = tile or shape.count
    for s in statements:
        if s.reduction:
            rowwise.combiner(s.op)
    if shape.n % width:
        raise NotARowColumnProgram(f"rows of {shape.n} elements are not a multiple of the "
                                   f"vector ({width})")
    per_row = threads // max(1, rows_at_once)
    if rows_at_once < 1 or per_row % rowwise.WARP or threads % rows_at_once or \
            (rows_at_once > 1 and per_row != rowwise.WARP):
        raise NotARowColumnProgram(f"{threads} threads for {rows_at_once} rows at a time")
    if tile is not None and tile < 1:
        raise NotARowColumnProgram(f"{tile} rows per block: expected >= 1")
    sums_bytes = rows_at_once * len(finish.reductions) * shape.n * 4
    if sums_bytes > MAX_SUMS_BYTES:
        raise NotARowColumnProgram(f"{sums_bytes} bytes of column sums per block: expected "
                                   f"at most {MAX_SUMS_BYTES}")
    body = irutil.body(fn)
    args = set(body.arguments)
    outputs = {s.operands[-1] for s in statements if s.operands[-1] in args}
    last_writes = {s.operands[-1]: s for s in statements}
    warps = per_row // rowwise.WARP
    row_sums = sum(1 for s in statements if s.reduction)
    slot_count = max(1, row_sums * warps)
    slot_type = ir.MemRefType.get([slot_count], ir.F32Type.get(),
                                  memory_space=ir.Attribute.parse(
                                      "#gpu.address_space<workgroup>"))
    # The row program's slots and the sums share the dynamic shared memory
    # (slots first, sums from the next 16 bytes). No static shared memory:
    # the dynamic memory's symbol is a zero-size static one, which a static
    # buffer beside it would overlap and push off 16-byte alignment.
    sums_start = -(-slot_count * 4 // 16) * 16
    first = next(op for op in body.operations if op.operation.name != "arith.constant")
    created = []
    with ir.InsertionPoint(first), fn.location:
        try:
            partials = finish.allocate(created)
            i32 = ir.IntegerType.get_signless(32)
            launch = gpu.LaunchOp((_index(finish.splits), _index(1), _index(1)),
                                  (_index(threads), _index(1), _index(1)),
                                  dynamic_shared_memory_size=arith.constant(
                                      i32, sums_start + sums_bytes))
            created.append(launch.operation)
            block = launch.regions[0].blocks[0]
            with ir.InsertionPoint(block):
                terminator = gpu.TerminatorOp()
            with ir.InsertionPoint(terminator):
                raw = gpu.dynamic_shared_memory(ir.MemRefType.get(
                    [ir.ShapedType.get_dynamic_size()], ir.IntegerType.get_signless(8),
                    memory_space=ir.Attribute.parse("#gpu.address_space<workgroup>")))
                slots = memref.view(slot_type, raw, _index(0), [])
            row = rowwise._Row(shape, width, threads, rows_at_once, slots, outputs,
                               last_writes, registers)
            with ir.InsertionPoint(terminator):
                _rows_body(block, raw, sums_start, row, program, statements, finish, shape,
                           partials, threads, rows_at_once, tile, args,
                           warps > 1 and row_sums == 1)
            rowwise._hardware_exp(launch)
            rowwise._shared_divisors(launch)
            finish.launch(created)
        except (rowwise.NotARowProgram, colwise_program.NotAColumnProgram) as why:
            for op in reversed(created):
                op.erase()
            raise NotARowColumnProgram(str(why)) from None
    rowwise.erase_statements(fn, statements + finish.statements)
    return finish.splits


def _rows_body(block, raw, sums_start, row, program, statements, finish, shape, partials,
               threads, rows_at_once, tile, args, barrier_per_row):
    """Steps 1 to 3 inside the rows launch."""
    g, thread = block.arguments[0], block.arguments[3]
    if rows_at_once == 1:
        lane, slot = thread, None
    else:
        per = _index(threads // rows_at_once)
        lane, slot = arith.remui(thread, per), arith.divui(thread, per)
    sums = _Sums(raw, sums_start, rows_at_once, finish.reductions, shape.n, row.width)
    # 1. Sums cleared.
    sums.clear(thread, threads)
    gpu.BarrierOp()
    # 2. The block's rows, W at a time: rows g * B + w + W * i below its end.
    base = arith.muli(g, _index(tile))
    start = base if slot is None else arith.addi(base, slot)
    end = arith.addi(base, _index(tile))
    if shape.count % tile:
        end = arith.minui(end, _index(shape.count))
    loop = scf.ForOp(start, end, _index(rows_at_once), [])
    with ir.InsertionPoint(loop.body):
        row.at(loop.induction_variable, lane)
        row.load_row(rowwise._streamed([entry[-1] for entry in program], args))
        for entry in program:
            if entry[0] == "row":
                row.run(entry[1])
            else:
                sums.fold(row, entry[2], entry[1], slot)
        if barrier_per_row:
            # One row sum a row: its shared slot is written again by the next
            # row before every warp may have read it.
            gpu.BarrierOp()
        scf.YieldOp([])
    # 3. The block's partials.
    gpu.BarrierOp()
    sums.write(thread, threads, g, partials)
