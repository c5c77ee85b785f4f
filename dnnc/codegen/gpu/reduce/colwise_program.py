"""Reading a column program (the simt-reduce-columns strategy, colwise.py):
the statements of a kernel that reduces one run of dims of its loops and
keeps the innermost, and what they compute, interpreted in program order.

What the kernel is made of, after bufferization: ``linalg.generic`` ops over
``O x R x N`` (R, a run of dims, is reduced; N, the dims after it down to
the innermost, and O, the dims before it, possibly none, are kept: a sum
over H of ``[B, H, S, D]`` is O = B, R = H, N = S x D). Each outer index is
a column problem of its own (the launches' grid z); the text below speaks of
``R x N`` for one of them:

* *full* statements, parallel over ``R x N`` (``dy * (x - mean[r]) * inv[r]``);
  operands are broadcasts in loop order, so a per-row scalar (``mean``,
  shape ``R x 1``) or a per-column vector (``1 x N``) is fine;
* *reductions*: iterators ``[reduction, ..., parallel]``, the result of
  shape ``1 x N`` (or ``N``), combined by add / mul / max / min (COMBINERS
  in rowwise.py; mean is a sum and a scale statement), accumulating in f32;
* *column* statements over ``O x N`` (extents of 1 for R, or none): the
  accumulator's fill, and what follows the reductions (a cast to bf16, the
  mean's scale, a norm's square root);
* copies between such buffers, and ``memref.alloc`` of intermediates.

``statements_of`` reads them into ``Statement``s and their ``Shape``;
``Program`` interprets the statements in order, at compile time, recording
for each buffer what it holds: a full or column intermediate is not stored
but recomputed, element by element, where it is read (as rowwise does); a
reduction's result exists only once every row is folded. What the rows
launch folds and stores, and what the finish does, follow from it.

Anything else (a reduction over other dims, a reduction's result read over
the rows, which would need a second pass, an accumulator that is not f32,
reshapes in the kernel) raises ``NotAColumnProgram`` with the reason, before
any IR is changed; the pass then leaves the kernel to simt-generic.

The launches are emitted by colwise_emitter.py (what both share),
colwise_finish.py (the partials summed, the column statements) and
colwise.py (the rows launch, and ``build``).
"""

import math
from dataclasses import dataclass

from mlir import ir

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.elementwise.vectorize import broadcast_exprs, identity_layout
from dnnc.codegen.gpu.reduce.rowwise import combiner


class NotAColumnProgram(Exception):
    """The kernel is not a column program; the message says why."""


@dataclass
class Statement:
    op: object
    kind: str                 # "full" (O x R x N), "column" (O x N), "reduction"
    rank: int                 # loop dims; a copy's: its buffers' rank
    exprs: list               # per operand: the loop dim of each buffer dim, None for 0
    operands: list
    copy: bool = False
    # Per loop dim, what it runs over: ("o", i) outer dim i, ("r", i) reduced
    # dim i, ("i", i) inner dim i, None a dim of extent 1 (index 0).
    roles: list = None


@dataclass
class Shape:
    rows: tuple               # extents of the reduced dims
    n: int                    # elements of the kept dims after them (N)
    outer: tuple = ()         # extents of the kept dims before them (O)
    inner: tuple = None       # extents of the kept dims after them; default (n,)

    def __post_init__(self):
        if self.inner is None:
            self.inner = (self.n,)

    @property
    def count(self):
        return math.prod(self.rows)

    @property
    def outers(self):
        """Column problems: the product of the outer extents."""
        return math.prod(self.outer)


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


def _roles(prefix, extents):
    """Roles of ``extents`` laid as ``prefix``: [(kind, dims)] in order."""
    roles = []
    for kind, dims in prefix:
        roles += [None if kind is None else (kind, i) for i in range(len(dims))]
    return roles


def _kind(extents, shape):
    """("column" or "full", roles of its dims) for a loop nest (or buffer) of
    ``extents``, else (None, None)."""
    extents, o, r, i = tuple(extents), shape.outer, shape.rows, shape.inner
    # (when R is all 1s, a full nest is a column one: the same thing)
    if extents == o + i:
        return "column", _roles((("o", o), ("i", i)), extents)
    if extents == o + (1,) * len(r) + i:
        return "column", _roles((("o", o), (None, r), ("i", i)), extents)
    if not o and len(i) == 1 and extents and extents[-1] == shape.n and \
            all(x == 1 for x in extents[:-1]):
        return "column", [None] * (len(extents) - 1) + [("i", 0)]
    if extents == o + r + i:
        return "full", _roles((("o", o), ("r", r), ("i", i)), extents)
    return None, None


def _reduction_shape(parallel, extents):
    """The Shape of a reduction nest: iterators parallel (O), reduction (R),
    parallel (N, at least one); NotAColumnProgram otherwise."""
    a = 0
    while a < len(parallel) and parallel[a]:
        a += 1
    b = a
    while b < len(parallel) and not parallel[b]:
        b += 1
    if b == len(parallel) or not all(parallel[b:]):
        raise NotAColumnProgram("a reduction that is not over one run of dims before the "
                                "innermost")
    inner = tuple(extents[b:])
    return Shape(tuple(extents[a:b]), math.prod(inner), tuple(extents[:a]), inner)


def statements_of(fn, skip=()):
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
            this = _reduction_shape(parallel, extents)
            if shape is not None and this != shape:
                raise NotAColumnProgram(f"reductions over {_text(shape)} and {_text(this)}")
            shape = this
        nests.append((op, (parallel, exprs, extents)))
    if shape is None:
        raise NotAColumnProgram("no reduction over a run of dims before the innermost")
    out = []
    for op, nest in nests:
        if nest is None:
            src, dst = op.operands
            dims = list(ir.MemRefType(dst.type).shape)
            kind, roles = _kind(dims, shape)
            if kind is None or list(ir.MemRefType(src.type).shape) != dims:
                raise NotAColumnProgram(f"a copy of a {'x'.join(map(str, dims))} buffer")
            rank = len(dims)
            out.append(Statement(op, kind, rank, [list(range(rank))] * 2, [src, dst], True,
                                 roles))
            continue
        parallel, exprs, extents = nest
        rank = len(extents)
        if not all(parallel):
            roles = _kind(extents, shape)[1]
            kept = [d for d in range(rank) if parallel[d]]
            if any(d is not None and d not in kept for d in exprs[-1]) or \
                    [d for d in exprs[-1] if d is not None] != sorted(
                        d for d in exprs[-1] if d is not None) or \
                    (exprs[-1] and exprs[-1][-1] not in (None, rank - 1)):
                raise NotAColumnProgram("a reduction whose result keeps a reduced dim")
            out.append(Statement(op, "reduction", rank, exprs, list(op.operands), roles=roles))
            continue
        kind, roles = _kind(extents, shape)
        if kind is None:
            raise NotAColumnProgram(f"a loop nest over {'x'.join(map(str, extents))}, not "
                                    f"{_text(shape)} or its columns")
        if exprs[-1] != list(range(rank)):
            raise NotAColumnProgram("an output written through a broadcast")
        out.append(Statement(op, kind, rank, exprs, list(op.operands), roles=roles))
    return out, shape


def _text(shape):
    """``O x R x N`` of a shape, as its extents."""
    outer = f"{list(shape.outer)} x " if shape.outer else ""
    return f"{outer}{list(shape.rows)} x {'x'.join(map(str, shape.inner))}"


class Program:
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
