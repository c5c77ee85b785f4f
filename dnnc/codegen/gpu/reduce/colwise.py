"""The simt-reduce-columns strategy: a kernel that reduces the leading dims
of its loops and keeps the innermost (the bias gradient of a linear layer,
Σ_rows dy; a norm's dgamma, Σ_rows dy·x̂) becomes a "column program": one
``gpu.launch`` that reads the rows once, each block writing its partials
and the last block of each column of blocks summing them
(dnn-reduce-columns). It is simt-reduce's transpose (rowwise.py): there a
row is folded by the threads of a block, here each thread folds its columns
down a slice of the rows.

What the kernel is made of, after bufferization: ``linalg.generic`` ops over
``R x N`` (R, the leading dims, are reduced; N, the innermost, is kept):

* *full* statements, parallel over ``R x N`` (``dy * (x - mean[r]) * inv[r]``);
  operands are broadcasts in loop order, so a per-row scalar (``mean``,
  shape ``R x 1``) or a per-column vector (``1 x N``) is fine;
* *reductions*: iterators ``[reduction, ..., parallel]``, the result of
  shape ``1 x N`` (or ``N``), combined by add / mul / max / min (COMBINERS
  in rowwise.py; mean is a sum and a scale statement), accumulating in f32;
* *column* statements over ``N`` (a leading extent of 1, or none): the
  accumulator's fill, and what follows the reductions (a cast to bf16, the
  mean's scale, a norm's square root);
* copies between such buffers, and ``memref.alloc`` of intermediates.

``build`` interprets the statements in order, at compile time, recording
for each buffer what it holds: a full or column intermediate is not stored
but recomputed, element by element, where it is read (as rowwise does); a
reduction's result exists only once every row is folded. Then it emits:

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
   ``V`` columns themselves. (``Finish`` below is the same sum as a launch
   of its own, blocks of Tx x Ty threads over 16-byte vectors of partials,
   for rowcolumns.py, whose blocks each write partials of every column.)

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

Anything else (a reduction over other dims, a reduction's result read over
the rows, which would need a second pass, an accumulator that is not f32,
reshapes in the kernel) raises ``NotAColumnProgram`` with the reason, before
any IR is changed; the pass then leaves the kernel to simt-generic.

Lit test: test/lit/passes/dnn_reduce_columns.mlir.
"""

import math
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, gpu, llvm, memref, scf, vector

from dnnc.codegen.gpu import irutil, loops
from dnnc.codegen.gpu.elementwise.vectorize import broadcast_exprs, clone_body, identity_layout
from dnnc.codegen.gpu.reduce.rowwise import combine, combiner, erase_statements

FINISH_THREADS = 256      # threads of a block of the finish launch (Finish)
PARTIALS_IN_FLIGHT = 16   # partial loads a finishing thread issues before it adds them
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


def _workgroup():
    return ir.Attribute.parse("#gpu.address_space<workgroup>")


class NotAColumnProgram(Exception):
    """The kernel is not a column program; the message says why."""


@dataclass
class Statement:
    op: object
    kind: str                 # "full" (R x N), "column" (N), "reduction"
    rank: int                 # loop dims; a copy's: its buffers' rank
    exprs: list               # per operand: the loop dim of each buffer dim, None for 0
    operands: list
    copy: bool = False


@dataclass
class Shape:
    rows: tuple               # extents of the reduced (leading) dims
    n: int                    # the kept, innermost dim

    @property
    def count(self):
        return math.prod(self.rows)


# ----------------------------------------------------------------------------
# Reading the kernel


def _loop_nest(op):
    """(parallel flags, operand exprs, loop extents) of a generic."""
    iterators = [irutil.is_parallel(i) for i in ir.ArrayAttr(op.attributes["iterator_types"])]
    maps = irutil.indexing_maps(op)
    if len(op.opview.outputs) != 1:
        raise NotAColumnProgram("a loop nest with several outputs")
    exprs, extents = [], [None] * len(iterators)
    for value, amap in zip(op.operands, maps):
        if not identity_layout(value.type):
            raise NotAColumnProgram("a strided buffer")
        e = broadcast_exprs(amap)
        t = ir.MemRefType(value.type)
        if e is None or len(e) != t.rank:
            raise NotAColumnProgram("an indexing map that is not a broadcast in loop order")
        for d, size in zip(e, t.shape):
            if d is not None:
                if extents[d] not in (None, size):
                    raise NotAColumnProgram(f"loop {d} runs over {extents[d]} and {size}")
                extents[d] = size
        exprs.append(e)
    if any(x is None for x in extents):
        raise NotAColumnProgram("a loop no operand indexes")
    return iterators, exprs, extents


def _kind(extents, shape):
    """"column" or "full" for a loop nest (or buffer) of ``extents``, else None."""
    if extents and extents[-1] == shape.n and all(x == 1 for x in extents[:-1]):
        return "column"  # (when R is all 1s, a full nest is a column one: the same thing)
    if tuple(extents[:-1]) == shape.rows and extents and extents[-1] == shape.n:
        return "full"
    return None


def _statements(fn, skip=()):
    """(statements, shape) of kernel ``fn``, but for the ops ``skip``
    (another program's: rowcolumns.py); NotAColumnProgram otherwise."""
    nests, shape = [], None
    for op in irutil.body(fn).operations:
        op = op.operation
        if op.name in ("arith.constant", "memref.alloc", "func.return") or op in skip:
            continue
        if op.name in ("linalg.copy", "memref.copy"):
            nests.append((op, None))
            continue
        if op.name != "linalg.generic":
            raise NotAColumnProgram(f"'{op.name}' in the kernel")
        parallel, exprs, extents = _loop_nest(op)
        if not all(parallel):
            if len(parallel) < 2 or any(parallel[:-1]) or not parallel[-1]:
                raise NotAColumnProgram("a reduction that is not over the leading dims alone")
            this = Shape(tuple(extents[:-1]), extents[-1])
            if shape is not None and this != shape:
                raise NotAColumnProgram(f"reductions over {list(shape.rows)} x {shape.n} "
                                        f"and {list(this.rows)} x {this.n}")
            shape = this
        nests.append((op, (parallel, exprs, extents)))
    if shape is None:
        raise NotAColumnProgram("no reduction over the leading dims")
    out = []
    for op, nest in nests:
        if nest is None:
            src, dst = op.operands
            dims = list(ir.MemRefType(dst.type).shape)
            kind = _kind(dims, shape)
            if kind is None or list(ir.MemRefType(src.type).shape) != dims:
                raise NotAColumnProgram(f"a copy of a {'x'.join(map(str, dims))} buffer")
            rank = len(dims)
            out.append(Statement(op, kind, rank, [list(range(rank))] * 2, [src, dst], True))
            continue
        parallel, exprs, extents = nest
        rank = len(extents)
        if not all(parallel):
            if exprs[-1] and exprs[-1][-1] not in (None, rank - 1) or \
                    any(d is not None for d in exprs[-1][:-1]):
                raise NotAColumnProgram("a reduction whose result keeps a reduced dim")
            out.append(Statement(op, "reduction", rank, exprs, list(op.operands)))
            continue
        kind = _kind(extents, shape)
        if kind is None:
            raise NotAColumnProgram(f"a loop nest over {'x'.join(map(str, extents))}, not "
                                    f"{'x'.join(map(str, shape.rows))} x {shape.n} or {shape.n}")
        if exprs[-1] != list(range(rank)):
            raise NotAColumnProgram("an output written through a broadcast")
        out.append(Statement(op, kind, rank, exprs, list(op.operands)))
    return out, shape


class _Program:
    """The statements interpreted: what the rows launch folds and stores,
    and what the finish does, in program order. A buffer's state is
    ("alias", buffer), ("virtual", statement, state before it) or
    ("reduced", k); none: read memory."""

    def __init__(self, statements, outputs):
        self.reductions = []   # (statement, state before it)
        self.row_stores = []   # (statement, state): full outputs, stored row by row
        self.finish = []       # ("reduce", k) | ("store", statement, state)
        state = {}
        for s in statements:
            out = s.operands[-1]
            if s.copy:
                if out in outputs:
                    self._store(s, dict(state))
                state[out] = state.get(s.operands[0], ("alias", s.operands[0]))
            elif s.kind == "reduction":
                combiner(s.op, NotAColumnProgram)
                if ir.MemRefType(out.type).element_type != ir.F32Type.get():
                    raise NotAColumnProgram(f"a reduction that accumulates in "
                                            f"{ir.MemRefType(out.type).element_type}, not f32")
                self.reductions.append((s, dict(state)))
                self.finish.append(("reduce", len(self.reductions) - 1))
                state[out] = ("reduced", len(self.reductions) - 1)
                if out in outputs:
                    self._store(s, dict(state))
            else:
                state[out] = ("virtual", s, dict(state))
                if out in outputs:
                    self._store(s, state[out][2])

    def _store(self, s, state):
        if s.kind == "full":
            self.row_stores.append((s, state))
        else:
            self.finish.append(("store", s, state))


# ----------------------------------------------------------------------------
# Emission


class _Point:
    """Where values are computed: ``width`` columns from ``j``, at one row
    (``rows``: its indices) in the rows launch, at no row in the finish,
    where ``totals`` holds each reduction's result."""

    def __init__(self, rows, j, width, totals=None):
        self.rows, self.j, self.width, self.totals = rows, j, width, totals

    def index(self, stmt, d):
        """The value of loop dim ``d`` of ``stmt`` here (lane 0)."""
        if d == stmt.rank - 1:
            return self.j
        if stmt.kind == "column":
            return _index(0)
        return self.rows[d]


def _token(stmt, d):
    """What index loop dim ``d`` of ``stmt`` (None: a broadcast) reads, as a
    key: two reads of a buffer with the same tokens load the same data."""
    if d is None or (stmt.kind == "column" and d != stmt.rank - 1):
        return "0"
    return "j" if d == stmt.rank - 1 else d


class _Memo(dict):
    """What one point has computed: values by key, and the keys of its
    memory loads in the order they were issued (``loads``)."""

    def __init__(self):
        super().__init__()
        self.loads = []

    def loaded(self):
        return [self[k] for k in self.loads]

    def restored(self, values):
        """A memo holding only this one's loads, with ``values`` instead."""
        memo = _Memo()
        for key, value in zip(self.loads, values):
            memo[key] = value
            memo.loads.append(key)
        return memo


def _alignment(width, element):
    # A vector of V elements starts at a multiple of V; buffers are 16-byte aligned.
    return min(16, width * irutil.element_bytes(element))


class _Emitter:
    def __init__(self, program, shape, width, block, unroll, tile):
        self.program, self.shape, self.width = program, shape, width
        self.tx, self.ty = block
        self.unroll, self.tile = unroll, tile
        self.vectors = shape.n // width
        self.splits = -(-shape.count // tile)
        self.f32 = ir.F32Type.get()
        self.partials = []
        self.arrivals = None   # G > 1: an i32 count per column of blocks, zero between calls

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
                                            alignment=_alignment(point.width, elt))
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

    # -- the rows launch -----------------------------------------------------

    def column(self, bx, tx):
        """(first element of the thread's vector, in-bounds flag or None)."""
        c = arith.addi(arith.muli(bx, _index(self.tx)), tx)
        if self.vectors % self.tx == 0:
            return arith.muli(c, _index(self.width)), None
        inside = arith.cmpi(arith.CmpIPredicate.ult, c, _index(self.vectors))
        c = arith.minui(c, _index(self.vectors - 1))
        return arith.muli(c, _index(self.width)), inside

    def load_rows(self, rows, j):
        """(points, memos) of ``rows``: every memory read their reductions
        and stores need, issued now."""
        points = [_Point(loops.delinearize(r, list(self.shape.rows)), j, self.width)
                  for r in rows]
        memos = [_Memo() for _ in rows]
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
                here = [_Point(loops.delinearize(r, list(self.shape.rows)), j, self.width)
                        for r in self.step_rows(base, i, ty)]
                _, ahead = self.load_rows(
                    self.step_rows(base, arith.addi(i, _index(1)), ty), j)
                folded = self.fold_loaded(here, now, None, inside, self.unflatten(values[:n]))
                scf.YieldOp([a for acc in folded for a in acc] +
                            [v for m in ahead for v in m.loaded()])
            results = list(loop.results)
            accs, memos = self.unflatten(results[:n]), self.restore(memos, results[n:])
            points = [_Point(loops.delinearize(r, list(self.shape.rows)), j, self.width)
                      for r in self.step_rows(base, _index(steps - 1), ty)]
        return self.fold_loaded(points, memos, None, inside, accs)

    @staticmethod
    def restore(memos, values):
        out, at = [], 0
        for memo in memos:
            out.append(memo.restored(values[at:at + len(memo.loads)]))
            at += len(memo.loads)
        return out

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
        vector.store(vec, out, idx, alignment=_alignment(point.width, elt))

    def new_launch(self, created, splits, ticket):
        """A launch of ``ceil(vectors / Tx) x splits`` blocks of Tx x Ty
        threads, its terminator, and its workgroup buffers: the row lanes'
        slots (Ty > 1; else None) and, with ``ticket``, the block's arrival
        count (else None)."""
        grid = (-(-self.vectors // self.tx), splits, 1)
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
        with ir.InsertionPoint(block):
            terminator = gpu.TerminatorOp()
        return (block, terminator, buffers[0] if self.ty > 1 else None,
                buffers[-1] if ticket else None)

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
            self.finish(_Point(None, j, self.width), lambda k: totals[k])
            return
        for k, lanes in enumerate(totals):
            vec = vector.from_elements(ir.VectorType.get([self.width], self.f32), lanes)
            vector.store(vec, self.partials[k], [by, j],
                         alignment=_alignment(self.width, self.f32))

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
            before = memref.atomic_rmw(arith.AtomicRMWKind.addi, _i32(1), self.arrivals, [bx])
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
                memref.store(_i32(0), self.arrivals, [bx])
                scf.YieldOp([])
            j, inside = self.column(bx, tx)
            sums = self.fold_partials(j, ty)
            if smem is not None:
                self.to_slots(sums, smem, tx, ty)
                return
            point = _Point(None, j, self.width)
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
                _Point(None, j, self.width), lambda k: totals[k])))

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
        buffer = self.partials[k]
        if self.width == 1:
            return [memref.load(buffer, [g, j])]
        raw = vector.load(ir.VectorType.get([self.width], self.f32), buffer, [g, j],
                          alignment=_alignment(self.width, self.f32))
        return [vector.extract(raw, [], [lane]) for lane in range(self.width)]

    def identity(self, stmt):
        _, value = combiner(stmt.op, NotAColumnProgram)
        return arith.constant(self.f32, ir.FloatAttr.get(self.f32, value))

    def unflatten(self, values):
        w = self.width
        return [values[k * w:(k + 1) * w] for k in range(len(values) // w)]

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
                self.finish(_Point(None, j, self.width), lambda k: totals[k])

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
        point.totals, memo = {}, _Memo()
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
    per-block partials, ``tile`` rows a block (None: all): ``allocate`` makes the
    ``[G, N]`` f32 partials (one per reduction, in program order) that it
    writes, ``launch`` the finish launch that sums them in order and runs
    the column statements (3. above). ``reductions``: the reductions'
    linalg ops; ``statements``: what the finish interprets (to erase)."""

    def __init__(self, fn, skip, tile):
        self.statements, self.shape = _statements(fn, skip)
        args = set(irutil.body(fn).arguments)
        outputs = {s.operands[-1] for s in self.statements if s.operands[-1] in args}
        program = _Program(self.statements, outputs)
        if program.row_stores:
            raise NotAColumnProgram("an output over the rows beside the column sums")
        self.reductions = [s.op for s, _ in program.reductions]
        tile = tile or self.shape.count
        width = 16 // 4   # 16 bytes of f32 partials
        while self.shape.n % width:
            width //= 2
        vectors, tx = self.shape.n // width, 1
        while tx < 32 and tx < vectors:
            tx *= 2
        splits, ty = -(-self.shape.count // tile), 1
        while ty < FINISH_THREADS // tx and ty < splits:
            ty *= 2
        self._emitter = _Emitter(program, self.shape, width, (tx, ty), 1, tile)
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


def build(fn, width, block, unroll, tile=None):
    """Replace kernel ``fn``'s body by its column program: a rows launch of
    ``block = (Tx, Ty)`` threads folding ``tile`` rows per block (None: all
    of them), ``unroll`` rows of ``width``-element vectors at a time, and a
    finish launch when the rows are split over several blocks. Returns the
    number of splits G.
    NotAColumnProgram (nothing changed) when it is not a column program."""
    statements, shape = _statements(fn)
    args = set(irutil.body(fn).arguments)
    outputs = {s.operands[-1] for s in statements if s.operands[-1] in args}
    program = _Program(statements, outputs)
    if shape.count == 0 or shape.n == 0:
        raise NotAColumnProgram(f"{list(shape.rows)} x {shape.n}: no element to fold")
    if width < 1 or shape.n % width:
        raise NotAColumnProgram(f"rows of {shape.n} elements are not a multiple of the "
                                f"vector ({width})")
    tile = shape.count if tile is None else tile
    if min(unroll, tile) < 1:
        raise NotAColumnProgram(f"unroll {unroll} and tile {tile}: expected >= 1")
    emitter = _Emitter(program, shape, width, tuple(block[:2]), unroll, tile)
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
                    alloc = memref.alloc(ir.MemRefType.get([emitter.splits, shape.n],
                                                           emitter.f32), [], [])
                    created.append(alloc.owner)
                    emitter.partials.append(alloc)
                emitter.arrivals = memref.alloc(ir.MemRefType.get(
                    [-(-emitter.vectors // emitter.tx)], ir.IntegerType.get_signless(32)), [], [])
                created.append(emitter.arrivals.owner)
            emitter.rows_launch(created)
        except NotAColumnProgram:
            for op in reversed(created):
                op.erase()
            raise
    erase_statements(fn, statements)
    return emitter.splits
