"""The simt-reduce strategy: a kernel whose loops all run over the same rows,
reducing or mapping along the innermost dim, becomes one ``gpu.launch`` with
a row per block (or per warp), a "row program" (dnn-reduce-rows).

What the kernel is made of, after bufferization: ``linalg.generic`` ops whose
iteration space is ``rows x N`` (all dims parallel but the last, which is
parallel or a reduction) or ``rows x 1`` (per-row scalars: a fill, rstd's
rsqrt), copies between buffers, and ``memref.alloc`` of intermediates.
softmax is: fill m with -inf; m = max over the row; e = exp(x - m); fill s
with 0; s = sum of e over the row; y = e / s.

``build`` interprets those statements in order, at compile time, and emits
code for one row:

* a per-row scalar (a buffer of shape ``rows x 1``) lives in a register of
  every thread of the row: a fill or scalar op computes it directly;
* a reduction is a pass over the row: each thread folds its positions into
  a partial (the generic's body, with the identity of its combining op as
  start), the partials are combined with warp shuffles and, across the
  warps of a block, through shared memory; the result is combined with the
  buffer's value before the pass (its fill). Every thread ends with it;
* a full-row intermediate is not stored anywhere: its generic is recorded
  with the values of its operands at that point, and recomputed, position by
  position, wherever a later pass reads it. Inputs are read again by each
  pass that needs them; the row (a few KB to a few hundred) is in L1 or L2
  by then, so DRAM sees each input about once;
* a full-row result (an output of the kernel) is stored in a final pass,
  16-byte vectors at a time; a per-row scalar result by the row's first
  thread.

A thread of a row handles the vectors ``lane, lane + T, lane + 2T, ...`` of
``vector`` elements (``T`` threads per row: a whole block, or a warp when
``tile = [rows per block]`` says so), so that a warp reads consecutive
vectors. Positions past the row's end (N not a multiple of T * vector) are
read at the last vector (in bounds) and ignored.

Anything else (a transposing map, a reduction over another dim, reshapes in
the kernel, an accumulation that is not add / mul / max / min) raises
``NotARowProgram`` with the reason, before any IR is changed; the pass then
leaves the kernel to simt-generic and says so in its reason.
"""

import math
from dataclasses import dataclass, field

from mlir import ir
from mlir.dialects import arith, gpu, memref, scf, vector

from dnnc.codegen.gpu import irutil, loops
from dnnc.codegen.gpu.vectorize import broadcast_exprs, clone_body, identity_layout

WARP = 32


class NotARowProgram(Exception):
    """The kernel is not a row program; the message says why."""


# Combining ops of a reduction body, with their identity.
COMBINERS = {
    "arith.addf": 0.0, "arith.mulf": 1.0,
    "arith.maximumf": -math.inf, "arith.maxnumf": -math.inf,
    "arith.minimumf": math.inf, "arith.minnumf": math.inf,
}


_index = irutil.index


@dataclass
class Statement:
    op: object
    kind: str                 # "generic", "copy"
    inner: int = 1            # iteration extent of the innermost dim
    reduction: bool = False
    exprs: list = field(default_factory=list)   # per operand: broadcast_exprs
    operands: list = field(default_factory=list)


@dataclass
class Shape:
    rows: tuple               # extents of the row dims
    n: int                    # row length

    @property
    def count(self):
        return math.prod(self.rows)


def _statements(fn):
    """(statements, row shape) of kernel ``fn``; NotARowProgram otherwise."""
    out, shape = [], None
    for op in irutil.body(fn).operations:
        op = op.operation
        if op.name in ("arith.constant", "memref.alloc", "func.return"):
            continue
        if op.name in ("linalg.copy", "memref.copy"):
            out.append(Statement(op, "copy", operands=list(op.operands)))
            continue
        if op.name != "linalg.generic":
            raise NotARowProgram(f"'{op.name}' in the kernel")
        iterators = list(ir.ArrayAttr(op.attributes["iterator_types"]))
        rank = len(iterators)
        if rank < 2 or not all(irutil.is_parallel(i) for i in iterators[:-1]):
            raise NotARowProgram("a loop nest that is not rows x row")
        maps = [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(op.attributes["indexing_maps"])]
        operands = list(op.operands)
        exprs, extents = [], [None] * rank
        for value, amap in zip(operands, maps):
            if not identity_layout(value.type):
                raise NotARowProgram("a strided buffer")
            e = broadcast_exprs(amap)
            t = ir.MemRefType(value.type)
            if e is None or len(e) != rank or t.rank != rank:
                raise NotARowProgram("an indexing map that is not a broadcast in loop order")
            for d, size in zip(e, t.shape):
                if d is not None:
                    extents[d] = size
            exprs.append(e)
        if any(x is None for x in extents):
            raise NotARowProgram("a loop no operand indexes")
        this = Shape(tuple(extents[:-1]), extents[-1])
        if shape is None or (shape.n == 1 and this.n > 1):
            if shape is not None and shape.rows != this.rows:
                raise NotARowProgram("loops over different rows")
            shape = this
        elif this.rows != shape.rows or this.n not in (1, shape.n):
            raise NotARowProgram(f"loops over {list(this.rows)} x {this.n} and "
                                 f"{list(shape.rows)} x {shape.n}")
        reduction = not irutil.is_parallel(iterators[-1])
        if len(op.opview.outputs) != 1:
            raise NotARowProgram("a loop nest with several outputs")
        if reduction and exprs[-1][-1] is not None:
            raise NotARowProgram("a reduction whose result has the row's dim")
        out.append(Statement(op, "generic", this.n, reduction, exprs, operands))
    if shape is None or shape.n == 1:
        raise NotARowProgram("no loop along a row")
    return out, shape


def _combiner(op):
    """(combining op name, identity) of a reduction generic's body."""
    body = op.regions[0].blocks[0]
    acc = list(body.arguments)[-1]
    result = list(body.operations)[-1].operation.operands[0]
    owner = irutil.defining_op(result)
    if owner is None or owner.name not in COMBINERS:
        raise NotARowProgram("a reduction that does not end in add / mul / max / min")
    ins = list(owner.operands)
    if sum(1 for v in ins if v == acc) != 1 or sum(1 for _ in acc.uses) != 1:
        raise NotARowProgram("a reduction that reads its accumulator more than once")
    return owner.name, COMBINERS[owner.name]


def _combine(name, a, b):
    return ir.Operation.create(name, results=[a.type], operands=[a, b]).results[0]


# ----------------------------------------------------------------------------
# Emission


class _Row:
    """Emits one row's program inside the launch."""

    def __init__(self, shape, width, threads, rows_per_block, smem, outputs):
        self.shape, self.width = shape, width
        self.threads, self.rows_per_block = threads, rows_per_block
        self.per_row = threads // rows_per_block
        self.smem, self.slot = smem, 0
        self.outputs = outputs   # buffers written to memory (kernel arguments)
        self.state = {}          # buffer -> ("scalar", v) | ("virtual", stmt, state)

    # -- where a row starts --------------------------------------------------

    def start(self, block, thread):
        if self.rows_per_block == 1:
            row, self.lane = block, thread
        else:
            per = _index(self.per_row)
            row = arith.addi(arith.muli(block, _index(self.rows_per_block)),
                             arith.divui(thread, per))
            self.lane = arith.remui(thread, per)
        self.row = row
        self.row_index = loops.delinearize(row, list(self.shape.rows))

    # -- positions -----------------------------------------------------------

    @property
    def chunks(self):
        return -(-self.shape.n // (self.per_row * self.width))

    @property
    def ragged(self):
        return self.shape.n % (self.per_row * self.width) != 0

    def position(self, chunk):
        """(first element, in-bounds flag or None) of this thread's vector in
        ``chunk``; out of bounds, the last vector of the row."""
        v = arith.addi(arith.muli(chunk, _index(self.per_row)), self.lane)
        j = arith.muli(v, _index(self.width))
        if not self.ragged:
            return j, None
        last = self.shape.n - self.width
        inside = arith.cmpi(arith.CmpIPredicate.ult, j, _index(self.shape.n))
        return arith.minui(j, _index(last)), inside

    # -- values --------------------------------------------------------------

    def indices(self, exprs, j):
        zero = _index(0)
        out = []
        for k, d in enumerate(exprs):
            if d is None:
                out.append(zero)
            elif k == len(exprs) - 1:
                out.append(j)
            else:
                out.append(self.row_index[d])
        return out

    def lanes(self, buffer, exprs, j, memo, state=None):
        """The ``width`` values of ``buffer`` at the thread's vector at ``j``
        (the same value in every lane when it does not vary along the row)."""
        state = self.state if state is None else state
        along = exprs[-1] is not None and ir.MemRefType(buffer.type).shape[-1] == self.shape.n
        entry = state.get(buffer)
        if entry is not None and entry[0] == "alias":
            return self.lanes(entry[1], exprs, j, memo, state)
        if entry is None:  # a kernel argument: read memory
            key = (buffer, tuple(e is None for e in exprs))
            if key not in memo:
                idx = self.indices(exprs, j)
                elt = ir.MemRefType(buffer.type).element_type
                if along:
                    vec = vector.load(ir.VectorType.get([self.width], elt), buffer, idx,
                                      alignment=self.width * irutil.element_bytes(elt))
                    memo[key] = [vector.extract(vec, [], [k]) for k in range(self.width)]
                else:
                    memo[key] = [memref.load(buffer, idx)] * self.width
            return memo[key]
        if entry[0] == "scalar":
            return [entry[1]] * self.width
        stmt, snapshot = entry[1], entry[2]
        if not along:
            raise NotARowProgram("a full-row intermediate read as a per-row value")
        if id(stmt) not in memo:
            memo[id(stmt)] = self.evaluate(stmt, j, memo, snapshot)
        return memo[id(stmt)]

    def evaluate(self, stmt, j, memo, state=None, acc=None, count=None):
        """The generic's body at ``count`` (default: the vector's) positions
        from ``j``: its output's value per lane. With ``acc``, a reduction's
        accumulator, the body folds every lane into it and returns it."""
        op = stmt.op
        body = op.regions[0].blocks[0]
        values = [self.lanes(b, e, j, memo, state)
                  for b, e in zip(stmt.operands[:-1], stmt.exprs[:-1])]
        out_buffer, out_exprs = stmt.operands[-1], stmt.exprs[-1]
        reads_out = any(True for _ in list(body.arguments)[-1].uses)
        results = []
        for k in range(count or self.width):
            args = [v[k] for v in values]
            if acc is not None:
                args.append(acc[k] if isinstance(acc, list) else acc)
            elif reads_out:
                args.append(self.lanes(out_buffer, out_exprs, j, memo, state)[k])
            else:
                elt = ir.MemRefType(out_buffer.type).element_type
                args.append(arith.constant(elt, irutil.zero_attr(elt)))

            def index_of(d, k=k):
                if d == len(stmt.exprs[-1]) - 1:
                    return arith.addi(j, _index(k)) if k else j
                return self.row_index[d]

            results.append(clone_body(body, args, index_of)[0])
            if acc is not None and not isinstance(acc, list):
                acc = results[-1]
        return results if acc is None or isinstance(acc, list) else acc

    # -- statements ----------------------------------------------------------

    def run(self, stmt):
        if stmt.kind == "copy":
            src, dst = stmt.operands
            rank = ir.MemRefType(dst.type).rank
            full = ir.MemRefType(dst.type).shape[-1] == self.shape.n
            exprs = list(range(rank)) if full else list(range(rank - 1)) + [None]
            if dst in self.outputs and full:
                self.store_pass(dst, lambda j, memo: self.lanes(src, exprs, j, memo), exprs)
            elif dst in self.outputs:
                self.store_scalar(dst, exprs, self.lanes(src, exprs, _index(0), {})[0])
            else:
                self.state[dst] = self.state.get(src, ("alias", src))
            return
        out = stmt.operands[-1]
        if stmt.reduction:
            self.reduce(stmt)
        elif stmt.inner == 1 or stmt.exprs[-1][-1] is None:
            # A per-row scalar op (a fill, rsqrt of a variance).
            if stmt.inner != 1:
                raise NotARowProgram("an elementwise loop that writes a per-row value")
            value = self.evaluate(stmt, _index(0), {}, count=1)[0]
            self.state[out] = ("scalar", value)
            if out in self.outputs:
                self.store_scalar(out, stmt.exprs[-1], value)
        elif out in self.outputs:
            self.store_pass(out, lambda j, memo: self.evaluate(stmt, j, memo), stmt.exprs[-1])
            self.state.pop(out, None)
        else:
            self.state[out] = ("virtual", stmt, dict(self.state))

    def store_pass(self, buffer, compute, exprs):
        """For every vector of the row: compute it, store it."""
        elt = ir.MemRefType(buffer.type).element_type
        loop = scf.ForOp(_index(0), _index(self.chunks), _index(1))
        with ir.InsertionPoint(loop.body):
            j, inside = self.position(loop.induction_variable)
            values = compute(j, {})
            vec = vector.from_elements(ir.VectorType.get([self.width], elt), values)
            align = self.width * irutil.element_bytes(elt)
            if inside is None:
                vector.store(vec, buffer, self.indices(exprs, j), alignment=align)
            else:
                guard = scf.IfOp(inside)
                with ir.InsertionPoint(guard.then_block):
                    vector.store(vec, buffer, self.indices(exprs, j), alignment=align)
                    scf.YieldOp([])
            scf.YieldOp([])

    def store_scalar(self, buffer, exprs, value):
        first = arith.cmpi(arith.CmpIPredicate.eq, self.lane, _index(0))
        guard = scf.IfOp(first)
        with ir.InsertionPoint(guard.then_block):
            memref.store(value, buffer, self.indices(exprs, _index(0)))
            scf.YieldOp([])

    def reduce(self, stmt):
        name, identity = _combiner(stmt.op)
        out = stmt.operands[-1]
        elt = ir.MemRefType(out.type).element_type
        start = arith.constant(elt, ir.FloatAttr.get(elt, identity))
        loop = scf.ForOp(_index(0), _index(self.chunks), _index(1), [start])
        with ir.InsertionPoint(loop.body):
            acc = loop.inner_iter_args[0]
            j, inside = self.position(loop.induction_variable)
            folded = self.evaluate(stmt, j, {}, acc=acc)
            if inside is not None:
                folded = arith.select(inside, folded, acc)
            scf.YieldOp([folded])
        total = self.across_threads(name, loop.results[0])
        init = self.lanes(out, stmt.exprs[-1], _index(0), {})[0]
        value = _combine(name, init, total)
        self.state[out] = ("scalar", value)
        if out in self.outputs:
            self.store_scalar(out, stmt.exprs[-1], value)

    def across_threads(self, name, value):
        """Combine ``value`` over the threads of the row; every thread gets it."""
        i32 = ir.IntegerType.get_signless(32)
        width = arith.constant(i32, WARP)
        for offset in (16, 8, 4, 2, 1):
            if offset >= self.per_row:
                continue
            other = gpu.ShuffleOp(value, arith.constant(i32, offset), width,
                                  gpu.ShuffleMode.XOR).results[0]
            value = _combine(name, value, other)
        warps = self.per_row // WARP
        if warps <= 1:
            return value
        base = self.slot * warps
        self.slot += 1
        warp = arith.divui(self.lane, _index(WARP))
        first = arith.cmpi(arith.CmpIPredicate.eq, arith.remui(self.lane, _index(WARP)),
                           _index(0))
        guard = scf.IfOp(first)
        with ir.InsertionPoint(guard.then_block):
            memref.store(value, self.smem, [arith.addi(warp, _index(base))])
            scf.YieldOp([])
        gpu.BarrierOp()
        total = memref.load(self.smem, [_index(base)])
        for w in range(1, warps):
            total = _combine(name, total, memref.load(self.smem, [_index(base + w)]))
        return total


def build(fn, width, threads, rows_per_block):
    """Replace kernel ``fn``'s body by its row program in one gpu.launch.
    NotARowProgram (nothing changed) when it is not one."""
    statements, shape = _statements(fn)
    for s in statements:
        if s.reduction:
            _combiner(s.op)
    if shape.n % width:
        raise NotARowProgram(f"rows of {shape.n} elements are not a multiple of the "
                             f"vector ({width})")
    per_row = threads // rows_per_block
    if per_row % WARP or threads % rows_per_block or (rows_per_block > 1 and per_row != WARP):
        raise NotARowProgram(f"{threads} threads for {rows_per_block} rows per block")
    args = set(irutil.body(fn).arguments)
    outputs = {s.operands[-1] for s in statements if s.operands[-1] in args}
    body = irutil.body(fn)
    first = next(op for op in body.operations
                 if op.operation.name not in ("arith.constant",))
    warps = per_row // WARP
    smem_type = ir.MemRefType.get([max(1, sum(1 for s in statements if s.reduction) * warps)], ir.F32Type.get(),
                                  memory_space=ir.Attribute.parse("#gpu.address_space<workgroup>"))
    blocks = -(-shape.count // rows_per_block)
    with ir.InsertionPoint(first), fn.location:
        launch = gpu.LaunchOp((_index(blocks), _index(1), _index(1)),
                              (_index(threads), _index(1), _index(1)))
        launch.attributes["workgroup_attributions"] = ir.IntegerAttr.get(
            ir.IntegerType.get_signless(64), 1)
        block = launch.regions[0].blocks[0]
        smem = block.add_argument(smem_type, fn.location)
        row = _Row(shape, width, threads, rows_per_block, smem, outputs)
        try:
            with ir.InsertionPoint(block):
                terminator = gpu.TerminatorOp()
            with ir.InsertionPoint(terminator):
                row.start(block.arguments[0], block.arguments[3])
                if blocks * rows_per_block != shape.count:
                    inside = arith.cmpi(arith.CmpIPredicate.ult, row.row, _index(shape.count))
                    guard = scf.IfOp(inside)
                    with ir.InsertionPoint(guard.then_block):
                        end = scf.YieldOp([])
                    with ir.InsertionPoint(end):
                        for s in statements:
                            row.run(s)
                else:
                    for s in statements:
                        row.run(s)
        except NotARowProgram:
            launch.operation.erase()
            raise
    for s in reversed(statements):
        s.op.erase()
    for op in list(body.operations):
        if op.operation.name == "memref.alloc" and not any(True for _ in op.results[0].uses):
            op.operation.erase()
    return blocks
