"""The simt-reduce strategy: a kernel whose loops all run over the same rows,
reducing or mapping along the innermost dim, becomes one ``gpu.launch`` with
a row per block (or per warp), a "row program" (dnn-reduce-rows).

What the kernel is made of, after bufferization: ``linalg.generic`` ops whose
iteration space is ``rows x N`` (all dims parallel but the last, which is
parallel or a reduction) or ``rows x 1`` (per-row scalars: a fill, rstd's
rsqrt), copies between buffers, and ``memref.alloc`` of intermediates.
A row may be several trailing dims, as many as its reductions run over
(groupnorm's rows of channels x positions, ``rows x C x S``): its elements
are numbered in row-major order and a kernel argument may vary along an outer
one of them only (the scale, ``1 x C x 1``), read once per vector, since a
vector lies inside the row's vector dim (its length a multiple of the
vector): the innermost, but for unit dims after it. A layernorm of
cudnn-frontend's ``rows x hidden x 1 x 1`` runs along hidden, each vector
access through a view of its buffer without the trailing unit dims, and
compiles to the same code as over ``rows x hidden``.
softmax is: fill m with -inf; m = max over the row; e = exp(x - m); fill s
with 0; s = sum of e over the row; y = e / max(s, 1).

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
  with the values of its operands at that point and evaluated, position by
  position, where a later pass reads it. So is a write to a kernel output
  that a later statement overwrites (bufferization often computes an f32
  softmax's exp in the output buffer);
* a full-row result (the last write of an output of the kernel) is stored
  in a final pass, 16-byte vectors at a time; a per-row scalar result by the
  row's first thread.

A thread of a row handles the vectors ``lane, lane + T, lane + 2T, ...`` of
``vector`` elements (``T`` threads per row: a whole block, or a warp when
``tile = [rows per block]`` says so), so that a warp reads consecutive
vectors. Positions past the row's end (N not a multiple of T * vector) are
read at the last vector (in bounds) and ignored.

Two forms of the passes, by how much of the row a thread holds:

* **held in registers** (at most ``REGISTER_ELEMENTS`` elements per
  thread): the passes are unrolled at compile time and every value of a
  position is computed once and kept for the later passes: the row's own
  inputs are loaded once, all of them up front (every load of the row in
  flight before the first reduction), and a full-row intermediate is
  evaluated once per position (softmax: one exp per element, one read of x
  from memory);
* **looped** (longer rows): each pass is an ``scf.for`` over the thread's
  vectors that loads the inputs again and recomputes the intermediates it
  reads; the row (a few KB to a few hundred) is in L1 or L2 by the second
  pass, so DRAM sees each input about once.

Cheaper math, where the row program makes it sound (both far inside the
tolerances of the ops that use them):

* exp is the hardware's: ``math_approx.exp_fast`` (one ``ex2.approx.ftz.f32``
  of x log2 e) instead of the polynomial that dnn-expand-math would make, a
  few ulp for the arguments of softmax;
* a divisor that several divisions share (a per-row value: softmax's
  max(s, 1), every lane divides by it) is inverted once per thread and
  multiplied, within 1.5 ulp of the quotient, instead of a division per
  element.

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
from dnnc.codegen.gpu.elementwise.vectorize import broadcast_exprs, clone_body, identity_layout
from dnnc.codegen.gpu.math import approx as math_approx

WARP = 32
# Elements of a row per thread up to which a row program holds them in
# registers: 32 f32 registers per full-row value kept (the heuristics' four
# 16-byte vectors per thread of a bf16 row), well inside the 255 a thread
# may have; 48 to 80 registers in all for the softmax family and the norms,
# no spills. Measured on an H200, 16384 x 8192 bf16, as a share of a device
# copy: softmax, log_softmax and the norms at 96-97% held (256 threads x 4
# vectors), 84-87% looped; softmax backward 101% held, 73% looped (reading
# two inputs). Held with 128 threads x 8 vectors (64 elements) is no faster
# (94-96%); 512 x 2 and 1024 x 1 lose on layernorm (74%, 36%).
REGISTER_ELEMENTS = 32


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
    inner: int = 1            # iteration extent of the row (its dims together)
    reduction: bool = False
    exprs: list = field(default_factory=list)   # per operand: broadcast_exprs
    operands: list = field(default_factory=list)


@dataclass
class Shape:
    rows: tuple               # extents of the row dims
    inner: tuple              # extents of the row's own dims (one, but for groupnorm's)

    @property
    def n(self):
        """The row's length."""
        return math.prod(self.inner)

    @property
    def count(self):
        return math.prod(self.rows)

    @property
    def vector_dim(self):
        """The row dim vectors run along: the last of more than one element
        (a row of [hidden, 1, 1], cuDNN's form of a layernorm's input, runs
        along hidden), else the last."""
        return next((d for d in reversed(range(len(self.inner))) if self.inner[d] > 1),
                    len(self.inner) - 1)


def vector_axis(buffer):
    """The dim of ``buffer`` that a vector of it runs along: its last of more
    than one element; None when it has none."""
    shape = ir.MemRefType(buffer.type).shape
    return next((d for d in reversed(range(len(shape))) if shape[d] > 1), None)


def squeezed(buffer, indices):
    """``buffer`` and ``indices`` without the unit dims after its vector axis,
    so that a vector access runs along the view's innermost dim."""
    t = ir.MemRefType(buffer.type)
    axis = vector_axis(buffer)
    if axis is None or axis == t.rank - 1:
        return buffer, indices
    shape = list(t.shape[:axis + 1])
    strides = [math.prod(shape[d + 1:]) for d in range(len(shape))]
    view = ir.MemRefType.get(shape, t.element_type)
    return (memref.reinterpret_cast(view, buffer, [], [], [], [0], shape, strides),
            indices[:axis + 1])


def _row_dims(generics):
    """How many trailing loops the row is: those a reduction runs over (all
    reductions alike), else 1."""
    found = set()
    for op in generics:
        iterators = [irutil.is_parallel(i) for i in ir.ArrayAttr(op.attributes["iterator_types"])]
        if all(iterators):
            continue
        k = len(iterators) - iterators.index(False)
        if k == len(iterators):
            raise NotARowProgram("a reduction over every dim")
        if any(iterators[-k:]):
            raise NotARowProgram("a reduction over dims that are not the trailing ones")
        found.add(k)
    if len(found) > 1:
        raise NotARowProgram(f"reductions over {sorted(found)} trailing dims")
    return found.pop() if found else 1


def _statements(fn, skip=()):
    """(statements, row shape) of kernel ``fn``, but for the ops ``skip``
    (another program's: rowcolumns.py); NotARowProgram otherwise."""
    out, shape = [], None
    ops = [op.operation for op in irutil.body(fn).operations
           if op.operation.name not in ("arith.constant", "memref.alloc", "func.return")
           and op.operation not in skip]
    inner = _row_dims([op for op in ops if op.name == "linalg.generic"])
    for op in ops:
        if op.name in ("linalg.copy", "memref.copy"):
            out.append(Statement(op, "copy", operands=list(op.operands)))
            continue
        if op.name != "linalg.generic":
            raise NotARowProgram(f"'{op.name}' in the kernel")
        iterators = list(ir.ArrayAttr(op.attributes["iterator_types"]))
        rank = len(iterators)
        if rank < inner + 1 or not all(irutil.is_parallel(i) for i in iterators[:-inner]):
            raise NotARowProgram("a loop nest that is not rows x row")
        maps = irutil.indexing_maps(op)
        operands = list(op.operands)
        exprs, extents = [], [None] * rank
        for position, (value, amap) in enumerate(zip(operands, maps)):
            if not identity_layout(value.type):
                raise NotARowProgram("a strided buffer")
            e = broadcast_exprs(amap)
            t = ir.MemRefType(value.type)
            if t.rank == 0 and e == [] and position < len(operands) - 1:
                e = [None] * rank  # a scalar input: read at no index (``lanes``)
            elif e is None or len(e) != rank or t.rank != rank:
                raise NotARowProgram("an indexing map that is not a broadcast in loop order")
            for d, size in zip(e, t.shape):
                if d is not None:
                    extents[d] = size
            exprs.append(e)
        if any(x is None for x in extents):
            raise NotARowProgram("a loop no operand indexes")
        this = Shape(tuple(extents[:-inner]), tuple(extents[-inner:]))
        if shape is None or (shape.n == 1 and this.n > 1):
            if shape is not None and shape.rows != this.rows:
                raise NotARowProgram("loops over different rows")
            shape = this
        elif this.rows != shape.rows or this.inner not in ((1,) * inner, shape.inner):
            raise NotARowProgram(f"loops over {list(this.rows)} x {list(this.inner)} and "
                                 f"{list(shape.rows)} x {list(shape.inner)}")
        reduction = not irutil.is_parallel(iterators[-1])
        if len(op.opview.outputs) != 1:
            raise NotARowProgram("a loop nest with several outputs")
        if reduction and any(e is not None for e in exprs[-1][-inner:]):
            raise NotARowProgram("a reduction whose result has the row's dim")
        out.append(Statement(op, "generic", this.n, reduction, exprs, operands))
    if shape is None or shape.n == 1:
        raise NotARowProgram("no loop along a row")
    return out, shape


def combiner(op, error=NotARowProgram):
    """(combining op name, identity) of a reduction generic's body; raises
    ``error`` (the caller's kind of refusal) when it has none."""
    body = op.regions[0].blocks[0]
    acc = list(body.arguments)[-1]
    result = list(body.operations)[-1].operation.operands[0]
    owner = irutil.defining_op(result)
    if owner is None or owner.name not in COMBINERS:
        raise error("a reduction that does not end in add / mul / max / min")
    ins = list(owner.operands)
    if sum(1 for v in ins if v == acc) != 1 or sum(1 for _ in acc.uses) != 1:
        raise error("a reduction that reads its accumulator more than once")
    return owner.name, COMBINERS[owner.name]


def combine(name, a, b):
    """``a name b``, ``name`` a combining op of COMBINERS."""
    return ir.Operation.create(name, results=[a.type], operands=[a, b]).results[0]


def erase_statements(fn, statements):
    """After a build: drop the interpreted linalg ops of kernel ``fn`` and
    the allocations nothing uses any more."""
    for s in reversed(statements):
        s.op.erase()
    for op in list(irutil.body(fn).operations):
        if op.operation.name == "memref.alloc" and not any(True for _ in op.results[0].uses):
            op.operation.erase()


# ----------------------------------------------------------------------------
# Emission


def _key(buffer, exprs):
    """The memo key of ``buffer``'s values read through ``exprs``."""
    return (buffer, tuple(e is None for e in exprs))


class _Row:
    """Emits one row's program inside the launch."""

    def __init__(self, shape, width, threads, rows_per_block, smem, outputs, last_writes,
                 registers):
        self.shape, self.width = shape, width
        self.threads, self.rows_per_block = threads, rows_per_block
        self.per_row = threads // rows_per_block
        # Threads of a row in one block: the row's threads but where a row
        # spans a cluster of blocks (rowsplit.py), whose per_row is C times it.
        self.in_block = self.per_row
        self.smem, self.slot = smem, 0
        self.outputs = outputs          # buffers written to memory (kernel arguments)
        self.last_writes = last_writes  # buffer -> the statement that writes it last
        self.state = {}  # buffer -> ("scalar", v) | ("virtual", stmt, state) | ("alias", b)
        self.held = self.chunks * width <= registers
        self.vectors = None  # held: per vector of the thread, (j, inside, memo)

    # -- where a row starts --------------------------------------------------

    def start(self, block, thread):
        if self.rows_per_block == 1:
            self.at(block, thread)
            return
        per = _index(self.per_row)
        self.at(arith.addi(arith.muli(block, _index(self.rows_per_block)),
                           arith.divui(thread, per)), arith.remui(thread, per))

    def at(self, row, lane, local=None):
        """The program runs on row ``row``, as thread ``lane`` of the row's
        and ``local`` (default ``lane``) of the row's threads in its block."""
        self.row, self.lane = row, lane
        self.local = lane if local is None else local
        self.row_index = loops.delinearize(row, list(self.shape.rows))

    def load_row(self, streamed):
        """Held rows: the positions of the thread's vectors, and the loads of
        the row's own inputs ``streamed`` ((buffer, exprs) pairs), all issued
        here, before the first pass needs them."""
        if not self.held:
            return
        self.vectors = []
        for c in range(self.chunks):
            j, inside = self.position(_index(c), whole=(c + 1) * self.per_row * self.width
                                      <= self.shape.n)
            memo = {}
            for buffer, exprs in streamed:
                self.lanes(buffer, exprs, j, memo)
            self.vectors.append((j, inside, memo))

    # -- positions -----------------------------------------------------------

    @property
    def chunks(self):
        return -(-self.shape.n // (self.per_row * self.width))

    @property
    def ragged(self):
        return self.shape.n % (self.per_row * self.width) != 0

    def position(self, chunk, whole=False):
        """(first element, in-bounds flag or None) of this thread's vector in
        ``chunk``; out of bounds, the last vector of the row. ``whole``: the
        chunk is known to lie inside the row."""
        v = arith.addi(arith.muli(chunk, _index(self.per_row)), self.lane)
        j = arith.muli(v, _index(self.width))
        if not self.ragged or whole:
            return j, None
        last = self.shape.n - self.width
        inside = arith.cmpi(arith.CmpIPredicate.ult, j, _index(self.shape.n))
        return arith.minui(j, _index(last)), inside

    def sweep(self, step, init=None):
        """Run ``step(acc, j, inside, memo)`` over the thread's vectors in
        order, each call's result the next one's ``acc``; return the last.
        Held rows: unrolled, with each vector's memo kept from sweep to sweep;
        else an ``scf.for`` whose memo lasts one iteration."""
        if self.vectors is not None:
            acc = init
            for j, inside, memo in self.vectors:
                acc = step(acc, j, inside, memo)
            return acc
        inits = [] if init is None else [init]
        loop = scf.ForOp(_index(0), _index(self.chunks), _index(1), inits)
        with ir.InsertionPoint(loop.body):
            j, inside = self.position(loop.induction_variable)
            acc = step(loop.inner_iter_args[0] if inits else None, j, inside, {})
            scf.YieldOp([acc] if inits else [])
        return loop.results[0] if inits else None

    # -- values --------------------------------------------------------------

    def inner_index(self, j):
        """The indices of the row's own dims at its element ``j`` (``j`` itself
        for a row of one dim)."""
        if len(self.shape.inner) == 1:
            return [j]
        return loops.delinearize(j, list(self.shape.inner))

    def indices(self, exprs, j):
        """The indices of a buffer read through ``exprs`` (a loop dim, in
        order, or None for each of its dims) at the row's element ``j``."""
        zero = _index(0)
        rows = len(self.shape.rows)
        inner = self.inner_index(j) if any(d is not None and d >= rows for d in exprs) else []
        return [zero if d is None else inner[d - rows] if d >= rows else self.row_index[d]
                for d in exprs]

    def along(self, buffer, exprs):
        """True when ``buffer`` read through ``exprs`` varies from element to
        element of the row (along its vector dim, the innermost but for unit
        dims after it). One that varies along an outer dim of a row of
        several (a groupnorm's scale, per channel) has a value per vector:
        vectors lie inside the vector dim."""
        axis = vector_axis(buffer)
        return (axis is not None
                and exprs[axis] == len(self.shape.rows) + self.shape.vector_dim
                and ir.MemRefType(buffer.type).shape[axis]
                == self.shape.inner[self.shape.vector_dim] > 1)

    def one_per_row(self, exprs):
        """True when a buffer read or written through ``exprs`` has a value per row."""
        return all(d is None for d in exprs[len(self.shape.rows):])

    def lanes(self, buffer, exprs, j, memo, state=None):
        """The ``width`` values of ``buffer`` at the thread's vector at ``j``
        (the same value in every lane when it does not vary along the row).
        ``memo`` holds what is already known at ``j``: memory read, and
        intermediates evaluated (by statement)."""
        state = self.state if state is None else state
        along = self.along(buffer, exprs)
        entry = state.get(buffer)
        if entry is not None and entry[0] == "alias":
            return self.lanes(entry[1], exprs, j, memo, state)
        if entry is None:  # a kernel argument: read memory
            key = _key(buffer, exprs)
            if key not in memo:
                idx = self.indices(exprs, j) if ir.MemRefType(buffer.type).rank else []
                elt = ir.MemRefType(buffer.type).element_type
                if along:
                    view, at = squeezed(buffer, idx)
                    vec = vector.load(ir.VectorType.get([self.width], elt), view, at,
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
        along = len(self.shape.rows) + self.shape.vector_dim
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
                rows = len(self.shape.rows)
                if d < rows:
                    return self.row_index[d]
                i = self.inner_index(j)[d - rows]
                return arith.addi(i, _index(k)) if k and d == along else i

            results.append(clone_body(body, args, index_of)[0])
            if acc is not None and not isinstance(acc, list):
                acc = results[-1]
        return results if acc is None or isinstance(acc, list) else acc

    # -- statements ----------------------------------------------------------

    def run(self, stmt):
        out = stmt.operands[-1]
        # Only the last write of an output reaches memory: an earlier one is
        # an intermediate like any other.
        stored = out in self.outputs and self.last_writes[out] is stmt
        if stmt.kind == "copy":
            src = stmt.operands[0]
            t = ir.MemRefType(out.type)
            rows = t.rank - len(self.shape.inner)
            full = tuple(t.shape[rows:]) == self.shape.inner
            exprs = list(range(t.rank)) if full else list(range(rows)) + [None] * (t.rank - rows)
            if stored and full:
                self.store_pass(out, lambda j, memo: self.lanes(src, exprs, j, memo), exprs)
            elif stored:
                self.store_scalar(out, exprs, self.lanes(src, exprs, _index(0), {})[0])
            else:
                self.state[out] = self.state.get(src, ("alias", src))
            return
        if stmt.reduction:
            self.reduce(stmt, stored)
        elif stmt.inner == 1 or self.one_per_row(stmt.exprs[-1]):
            # A per-row scalar op (a fill, rsqrt of a variance).
            if stmt.inner != 1:
                raise NotARowProgram("an elementwise loop that writes a per-row value")
            value = self.evaluate(stmt, _index(0), {}, count=1)[0]
            self.state[out] = ("scalar", value)
            if stored:
                self.store_scalar(out, stmt.exprs[-1], value)
        elif stored:
            self.store_pass(out, lambda j, memo: self.evaluate(stmt, j, memo), stmt.exprs[-1])
            self.state.pop(out, None)
        else:
            self.state[out] = ("virtual", stmt, dict(self.state))

    def store_pass(self, buffer, compute, exprs):
        """For every vector of the row: compute it, store it. The stored
        values stand for the buffer's in later reads at the same vector."""
        elt = ir.MemRefType(buffer.type).element_type
        align = self.width * irutil.element_bytes(elt)

        def step(_, j, inside, memo):
            values = compute(j, memo)
            vec = vector.from_elements(ir.VectorType.get([self.width], elt), values)
            if inside is None:
                vector.store(vec, *squeezed(buffer, self.indices(exprs, j)), alignment=align)
            else:
                guard = scf.IfOp(inside)
                with ir.InsertionPoint(guard.then_block):
                    vector.store(vec, *squeezed(buffer, self.indices(exprs, j)),
                                 alignment=align)
                    scf.YieldOp([])
            for key in [k for k in memo if isinstance(k, tuple) and k[0] == buffer]:
                del memo[key]
            memo[_key(buffer, exprs)] = values

        self.sweep(step)

    def store_scalar(self, buffer, exprs, value):
        first = arith.cmpi(arith.CmpIPredicate.eq, self.lane, _index(0))
        guard = scf.IfOp(first)
        with ir.InsertionPoint(guard.then_block):
            memref.store(value, buffer, self.indices(exprs, _index(0)))
            scf.YieldOp([])

    def fold(self, stmt):
        """(combining op, the thread's partial) of reduction ``stmt`` over
        the thread's vectors."""
        name, identity = combiner(stmt.op)
        elt = ir.MemRefType(stmt.operands[-1].type).element_type

        def step(acc, j, inside, memo):
            folded = self.evaluate(stmt, j, memo, acc=acc)
            return folded if inside is None else arith.select(inside, folded, acc)

        return name, self.sweep(step, arith.constant(elt, ir.FloatAttr.get(elt, identity)))

    def reduce(self, stmt, stored):
        name, partial = self.fold(stmt)
        out = stmt.operands[-1]
        total = self.across_threads(name, partial)
        init = self.lanes(out, stmt.exprs[-1], _index(0), {})[0]
        value = combine(name, init, total)
        self.state[out] = ("scalar", value)
        if stored:
            self.store_scalar(out, stmt.exprs[-1], value)

    def across_threads(self, name, value):
        """Combine ``value`` over the threads of the row; every thread gets it."""
        return self.merge_across_threads(
            (value,), lambda a, b: (combine(name, a[0], b[0]),))[0]

    def merge_across_threads(self, fold, merge):
        """Merge a thread's ``fold`` over the threads of the row: XOR
        shuffles, then the warps' folds in warp order through shared memory
        (a slot per Value); every thread gets the same. ``fold`` is a tuple
        of f32 Values, which are exchanged, and of Python values alike in
        every thread (a count), which are not; ``merge(a, b)`` makes one
        such tuple of two."""
        i32 = ir.IntegerType.get_signless(32)
        width = arith.constant(i32, WARP)
        for offset in (16, 8, 4, 2, 1):
            if offset >= self.in_block:
                continue
            other = tuple(gpu.ShuffleOp(x, arith.constant(i32, offset), width,
                                        gpu.ShuffleMode.XOR).results[0]
                          if isinstance(x, ir.Value) else x for x in fold)
            fold = merge(fold, other)
        warps = self.in_block // WARP
        if warps <= 1:
            return fold
        exchanged = [k for k, x in enumerate(fold) if isinstance(x, ir.Value)]
        base = self.slot * warps
        self.slot += len(exchanged)
        warp = arith.divui(self.local, _index(WARP))
        first = arith.cmpi(arith.CmpIPredicate.eq, arith.remui(self.local, _index(WARP)),
                           _index(0))
        guard = scf.IfOp(first)
        with ir.InsertionPoint(guard.then_block):
            for i, k in enumerate(exchanged):
                memref.store(fold[k], self.smem, [arith.addi(warp, _index(base + i * warps))])
            scf.YieldOp([])
        gpu.BarrierOp()

        def of_warp(w):
            out = list(fold)
            for i, k in enumerate(exchanged):
                out[k] = memref.load(self.smem, [_index(base + i * warps + w)])
            return tuple(out)

        total = of_warp(0)
        for w in range(1, warps):
            total = merge(total, of_warp(w))
        return total


def _streamed(statements, args):
    """(buffer, exprs) of the kernel arguments a row reads along its own
    elements (not broadcast across rows) and never writes: the data a held
    row loads up front."""
    written = {s.operands[-1] for s in statements}
    out = {}
    for s in statements:
        if s.kind != "generic":
            continue
        for buffer, exprs in zip(s.operands[:-1], s.exprs[:-1]):
            if (buffer in args and buffer not in written and exprs[-1] is not None
                    and all(e is not None for e in exprs)):
                out.setdefault(_key(buffer, exprs), (buffer, exprs))
    return list(out.values())


def _hardware_exp(root):
    """Every f32 math.exp under ``root`` becomes math_approx.exp_fast."""
    for op in irutil.ops(root, "math.exp"):
        x = op.operands[0]
        if not isinstance(x.type, ir.F32Type):
            continue
        with ir.InsertionPoint(op), op.location:
            y = math_approx.exp_fast(x)
        op.results[0].replace_all_uses_with(y)
        op.erase()


def _expression(value, memo):
    """A key that two values share when the same pure ops compute them from
    the same values: the lanes' copies of a per-row computation (every lane
    clones the generic's body) have one."""
    if value in memo:
        return memo[value]
    op = irutil.defining_op(value)
    if op is None or not op.name.startswith(("arith.", "math.")) or len(op.regions):
        key = value
    else:
        attrs = tuple(sorted((a.name, str(a.attr)) for a in
                             (op.attributes[i] for i in range(len(op.attributes)))))
        key = (op.name, attrs, tuple(_expression(v, memo) for v in op.operands),
               list(op.results).index(value))
    memo[value] = key
    return key


def _shared_divisors(root):
    """x / d, for a d that several divisions under ``root`` compute alike,
    becomes x * (1 / d); CSE leaves one reciprocal per thread (and LLVM
    hoists it out of a pass's loop)."""
    divisions, memo = {}, {}
    for op in irutil.ops(root, "arith.divf"):
        divisions.setdefault(_expression(op.operands[1], memo), []).append(op)
    for ops in divisions.values():
        if len(ops) < 2:
            continue
        for op in ops:
            x, d = op.operands
            if irutil.constant_scalar(x) == 1.0:
                continue  # already the reciprocal
            with ir.InsertionPoint(op), op.location:
                one = arith.constant(d.type, ir.FloatAttr.get(d.type, 1.0))
                y = arith.mulf(x, arith.divf(one, d))
            op.results[0].replace_all_uses_with(y)
            op.erase()


@dataclass
class Program:
    """What a row program is made of: kernel ``fn``'s statements and row
    shape, its arguments, the arguments it writes (``outputs``), the last
    statement writing each buffer, and the op before which the launch goes."""

    statements: list
    shape: Shape
    args: set
    outputs: set
    last_writes: dict
    first: object


def program_of(fn, width):
    """The Program of kernel ``fn`` read in vectors of ``width`` elements;
    NotARowProgram (nothing changed) when it is not a row program."""
    statements, shape = _statements(fn)
    for s in statements:
        if s.reduction:
            combiner(s.op)
    if shape.inner[shape.vector_dim] % width:
        raise NotARowProgram(f"rows of {shape.n} elements are not a multiple of the "
                             f"vector ({width})" if len(shape.inner) == 1 else
                             f"rows of {list(shape.inner)} elements: the vector dim is "
                             f"not a multiple of the vector ({width})")
    body = irutil.body(fn)
    args = set(body.arguments)
    first = next(op for op in body.operations
                 if op.operation.name not in ("arith.constant",))
    return Program(statements, shape, args,
                   {s.operands[-1] for s in statements if s.operands[-1] in args},
                   {s.operands[-1]: s for s in statements}, first)


def build(fn, width, threads, rows_per_block, registers=REGISTER_ELEMENTS):
    """Replace kernel ``fn``'s body by its row program in one gpu.launch; a
    thread holds its part of the row in registers when that is at most
    ``registers`` elements. NotARowProgram (nothing changed) when it is not
    a row program."""
    p = program_of(fn, width)
    statements, shape, args = p.statements, p.shape, p.args
    outputs, last_writes, first = p.outputs, p.last_writes, p.first
    per_row = threads // rows_per_block
    if per_row % WARP or threads % rows_per_block or (rows_per_block > 1 and per_row != WARP):
        raise NotARowProgram(f"{threads} threads for {rows_per_block} rows per block")
    warps = per_row // WARP
    slots = max(1, sum(1 for s in statements if s.reduction) * warps)
    smem_type = ir.MemRefType.get([slots], ir.F32Type.get(), memory_space=ir.Attribute.parse(
        "#gpu.address_space<workgroup>"))
    blocks = -(-shape.count // rows_per_block)
    with ir.InsertionPoint(first), fn.location:
        launch = gpu.LaunchOp((_index(blocks), _index(1), _index(1)),
                              (_index(threads), _index(1), _index(1)))
        launch.attributes["workgroup_attributions"] = ir.IntegerAttr.get(
            ir.IntegerType.get_signless(64), 1)
        block = launch.regions[0].blocks[0]
        smem = block.add_argument(smem_type, fn.location)
        row = _Row(shape, width, threads, rows_per_block, smem, outputs, last_writes,
                   registers)

        def program():
            row.load_row(_streamed(statements, args))
            for s in statements:
                row.run(s)

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
                        program()
                else:
                    program()
        except NotARowProgram:
            launch.operation.erase()
            raise
        _hardware_exp(launch)
        _shared_divisors(launch)
    erase_statements(fn, statements)
    return blocks
