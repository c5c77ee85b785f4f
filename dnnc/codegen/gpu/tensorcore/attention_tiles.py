"""Where an attention kernel's blocks and steps fall, for any tensor-core
strategy: which (batch, head) and query rows a block takes, which tiles of
kv rows those rows see under the masks, and -inf at the scores a row does
not see, tested only on the tiles that need it.

The masks (dnnc/dialect/ops_attention.py; tensorcore/attention.Attention):
row i sees column j when j < Skv, j <= i + shift (``causal``: shift 0
top-left aligned, Skv - Sq bottom-right) and j > i + shift - window (a
sliding ``window`` > 0, causal too). With padding, each batch entry has
lengths of its own, read from the seq_len buffers when the block starts
(``Extent``): row i sees nothing when i >= Lq[b], column j is seen only
when j < Lkv[b], and the bottom-right shift is Lkv[b] - Lq[b]. Lengths and
shift are then index values where they are Python ints otherwise; ``plus``
adds either kind, so the IR of a kernel without padding holds only
constants there.

A block's rows see a contiguous range of kv tiles (``column_tiles``): it
loads only those, and a block whose rows see no column runs no step at all
(o = 0, stats = -inf).

The grid is (query tiles, B x H): the blocks that run together share few
heads, whose K and V stay in L2 (ordered by head first, the blocks of the
first wave would read every head's K and V, more than L2 holds, and each
again from memory). A causal grid runs each head's query tiles last first,
since the longest (the last) should not start last. A persistent block
places each tile it runs with ``query_unit`` (sm90/flash_scheduler.py
orders them).

A row's online softmax runs the same way in every kernel
(``online_softmax``: base 2, the scale folded into one FMA, ex2.approx; a
row with no score yet keeps m = -inf and takes 0 as its shift) and ends the
same way (``row_sums``, ``log_sum_exp``): the quad's partial sums added,
1 / l (0 for a row that saw nothing), and the statistics from the base-2
maximum.

Scores are a thread's accumulator values in the layout of the kernel's
products: ``mask_columns`` takes the kernel's ``position(e)``, the row (of
the thread's rows) and column (from the thread's first) of value e.
tc-sm90's kernels (sm90/flash.py, sm90/flash_backward.py) and tc-sm80's
(sm80/flash.py) take these from here.
"""

import math

from mlir import ir
from mlir.dialects import arith, gpu, memref, scf

from mlir.dialects import math as mmath

from dnnc.codegen.gpu.math.scalar import fma
from dnnc.codegen.gpu.tensorcore.emit import (
    add as _add, cmp as _cmp, ex2, f32, i as _i, idx as _idx, quad, tree,
)

LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453


def plus(*terms):
    """The sum of index values and Python ints (an index value)."""
    constant = sum(t for t in terms if isinstance(t, int))
    values = [t for t in terms if not isinstance(t, int)]
    if not values:
        return _idx(constant)
    total = values[0]
    for v in values[1:]:
        total = arith.addi(total, v)
    return _add(total, constant)


def negated(x):
    """-x of an index value or a Python int."""
    return -x if isinstance(x, int) else arith.subi(_idx(0), x)


def _length(buffer, b, limit):
    """Batch entry ``b``'s length in ``buffer`` (int32 ``[B, 1, 1, 1]``),
    clamped to [0, ``limit``], as an index value."""
    zero = _idx(0)
    x = memref.load(buffer, [b, zero, zero, zero])
    x = arith.maxsi(arith.minsi(x, _i(limit)), _i(0))
    return arith.index_cast(ir.IndexType.get(), x)


class Extent:
    """The lengths the masks of a block of batch entry ``b`` use: ``sq``,
    ``skv`` and ``shift``, Python ints, or with padding index values (the
    entry's lengths)."""

    def __init__(self, att, b):
        self.padding = att.padding
        if not att.padding:
            self.sq, self.skv, self.shift = att.sq, att.skv, att.shift
            return
        self.sq = _length(att.seq_len_q, b, att.sq)
        self.skv = _length(att.seq_len_kv, b, att.skv)
        self.shift = arith.subi(self.skv, self.sq) if att.diagonal == "bottom_right" else 0


def column_tiles(att, ext, first_row, rows, n):
    """[start, end) (index values) of the tiles of ``n`` key columns that
    query rows ``first_row`` .. + ``rows`` - 1 see: up to Skv (``ext``'s),
    up to the last row's diagonal when causal, from the first row's window
    start with a window; none when the rows are all padding."""
    if isinstance(ext.skv, int):
        end = _idx(-(-ext.skv // n))
    else:
        end = arith.divui(_add(ext.skv, n - 1), _idx(n))
    last = rows - 1
    if ext.padding:
        # The last row that is not padding (the rows past it see nothing).
        last = arith.subi(arith.minsi(plus(first_row, rows), ext.sq), first_row)
        last = arith.subi(last, _idx(1))
    if att.causal:
        # Columns up to last row + shift (+ 1, rounded up to whole tiles).
        reach = arith.maxsi(plus(first_row, last, ext.shift, n), _idx(0))
        end = arith.minui(arith.divui(reach, _idx(n)), end)
    start = _idx(0)
    if att.window:
        left = arith.maxsi(plus(first_row, ext.shift, 1 - att.window), _idx(0))
        start = arith.minui(arith.divui(left, _idx(n)), end)
    if ext.padding:
        end = arith.select(_cmp("sge", first_row, ext.sq), start, end)
    return start, end


def query_block(att, rows, n):
    """Device side, for a grid of (query tiles of ``rows``, B x H): the
    block's (batch, head, kv head, first query row, first kv tile, kv tiles,
    Extent) with index values, the kv tiles (of ``n`` columns) those its
    rows see (``column_tiles``). A causal grid runs each head's last query
    tiles, the longest, first."""
    heads = _heads(att, gpu.block_id(gpu.Dimension.y))
    tile_x = gpu.block_id(gpu.Dimension.x)
    if att.causal:
        tile_x = arith.subi(_idx(-(-att.sq // rows) - 1), tile_x)
    return _placed(att, rows, n, heads, tile_x)


def query_unit(att, rows, n, tile_x, head):
    """query_block's values for query tile ``tile_x`` (of ``rows`` rows) of
    ``head`` = b x H + h (index values): what a persistent block computes
    for each work unit it takes (sm90/flash_scheduler.py)."""
    return _placed(att, rows, n, _heads(att, head), tile_x)


def _heads(att, head):
    """(b, h, kv head) of ``head`` = b x H + h."""
    b = arith.divui(head, _idx(att.heads))
    h = arith.remui(head, _idx(att.heads))
    hk = arith.divui(h, _idx(att.group)) if att.group > 1 else h
    return b, h, hk


def _placed(att, rows, n, heads, tile_x):
    """query_block's values from ``_heads`` and the query tile."""
    b, h, hk = heads
    m0 = arith.muli(tile_x, _idx(rows))
    ext = Extent(att, b)
    start, end = column_tiles(att, ext, m0, rows, n)
    return b, h, hk, m0, start, arith.subi(end, start), ext


def group_block(att, fold, n):
    """Device side, for a grid of (1, B x Hkv) blocks that each hold the
    ``fold`` (= H / Hkv) query heads of one kv head, all Sq rows of each
    (tc-sm90's folded GQA): query_block's values, the head the group's
    first (kv head x fold) and the first query row 0; the kv tiles those
    of query rows 0 .. Sq - 1 (``column_tiles``: each folded row sees what
    its query does)."""
    head = gpu.block_id(gpu.Dimension.y)
    b = arith.divui(head, _idx(att.kv_heads))
    hk = arith.remui(head, _idx(att.kv_heads))
    h = arith.muli(hk, _idx(fold))
    m0 = _idx(0)
    ext = Extent(att, b)
    start, end = column_tiles(att, ext, m0, att.sq, n)
    return b, h, hk, m0, start, arith.subi(end, start), ext


def mask_needed(att, ext, n0, n, first, rows):
    """The i1 conditions (index comparisons, uniform over ``rows`` query
    rows from ``first``) under which the tile of ``n`` columns from ``n0``
    holds a score some of those rows do not see: it reaches past Skv (the
    ``Extent``'s), right of the first row's diagonal, or left of the last
    row's window, or some of the rows are padding. None of them holds on
    the tiles wholly inside every row's view."""
    end = _add(n0, n)
    need = []
    if not isinstance(ext.skv, int):
        need.append(_cmp("ugt", end, ext.skv))
    elif ext.skv % n:
        need.append(_cmp("ugt", end, _idx(ext.skv)))
    if att.causal:
        need.append(_cmp("sgt", end, plus(first, ext.shift, 1)))
    if att.window:
        need.append(_cmp("slt", n0, plus(first, ext.shift, rows - att.window)))
    if ext.padding:
        need.append(_cmp("sgt", _add(first, rows), ext.sq))
    return need


def masked_select(scores, need, bad_of):
    """``scores`` with -inf where ``bad_of()(e)`` (an i1 built in the
    masking branch) holds, in an scf.if on the OR of the conditions ``need``
    (the scores unchanged otherwise, and without a condition)."""
    if not need:
        return scores
    cond = need[0]
    for c in need[1:]:
        cond = arith.ori(cond, c)
    op = scf.IfOp(cond, [ir.F32Type.get()] * len(scores), has_else=True)
    with ir.InsertionPoint(op.then_block):
        bad = bad_of()
        scf.YieldOp([arith.select(bad(e), f32(-math.inf), x) for e, x in enumerate(scores)])
    with ir.InsertionPoint(op.else_block):
        scf.YieldOp(scores)
    return list(op.results)


def mask_columns(att, ext, scores, n0, n, rows, column, first, span, position):
    """``scores`` (a thread's accumulator values: value e at query row
    ``rows[r]`` and key column n0 + ``column`` + c, (r, c) =
    ``position(e)``) with -inf where a row does not see the column (past
    Skv, right of its diagonal when causal, left of its window, the row or
    the column padding); the test runs only where the tile of ``n``
    columns at ``n0`` reaches past one of those for some of the ``span``
    rows from ``first`` (``mask_needed``)."""
    need = mask_needed(att, ext, n0, n, first, span)

    def bad_of():
        i32 = ir.IntegerType.get_signless(32)
        base = arith.addi(n0, column)

        def offset(x):
            return arith.index_cast(i32, arith.subi(x, base))
        his, los = [], []
        for r in rows:
            last = plus(ext.skv, -1)
            if att.causal:
                last = arith.minsi(plus(r, ext.shift), last)
            if ext.padding:
                last = arith.select(_cmp("sge", r, ext.sq), _idx(-1), last)
            his.append(offset(last))
            if att.window:
                los.append(offset(plus(r, ext.shift, 1 - att.window)))

        def bad(e):
            row, col = position(e)
            o = _i(col)
            out = _cmp("sgt", o, his[row])
            if att.window:
                out = arith.ori(out, _cmp("slt", o, los[row]))
            return out
        return bad
    return masked_select(scores, need, bad_of)


def online_softmax(scores, m, l_, c, row, biases=None):
    """One step of the online softmax over a thread's ``scores`` (value e
    in row ``row(e)`` of the thread's ``len(m)`` rows): the new row maxima
    and sums, the factor O takes for the new maxima, and P (the
    exponentials, f32). ``m`` holds the running maxima of the scores times
    ``c`` (the scale times log2 e), ``l_`` the thread's parts of the row
    sums. With ``biases`` (the step's bias values, times log2 e) the scores
    are first c S + bias log2 e, in base 2 already."""
    c = f32(c)
    if biases is not None:
        scores = [fma(x, c, b) for x, b in zip(scores, biases)]
        c = f32(1.0)
    zero, neg_inf = f32(0.0), f32(-math.inf)
    rows = range(len(m))
    new_m, shift = [], []
    for r in rows:
        mine = [x for e, x in enumerate(scores) if row(e) == r]
        top = quad(arith.maxnumf, tree(arith.maxnumf, mine))
        new = arith.maxnumf(m[r], arith.mulf(top, c))
        new_m.append(new)
        # A row with no score yet keeps m = -inf: its exponentials are 0.
        shift.append(arith.select(arith.cmpf(arith.CmpFPredicate.OEQ, new, neg_inf),
                                  zero, new))
    alpha = [ex2(arith.subf(m[r], shift[r])) for r in rows]
    negated = [arith.negf(x) for x in shift]
    p = [ex2(fma(x, c, negated[row(e)])) for e, x in enumerate(scores)]
    new_l = []
    for r in rows:
        total = tree(arith.addf, [x for e, x in enumerate(p) if row(e) == r])
        new_l.append(arith.addf(arith.mulf(l_[r], alpha[r]), total))
    return new_m, new_l, alpha, p


def row_sums(l_):
    """(totals, empty, scale) of a thread's rows from their partial sums
    ``l_`` (a quad's four threads hold parts of a row): the row sums l,
    whether l = 0 (the row saw no column), and 1 / l (0 where l = 0)."""
    zero, one = f32(0.0), f32(1.0)
    totals = [quad(arith.addf, x) for x in l_]
    empty = [arith.cmpf(arith.CmpFPredicate.OEQ, x, zero) for x in totals]
    scale = [arith.select(e, zero, arith.divf(one, x)) for e, x in zip(empty, totals)]
    return totals, empty, scale


def log_sum_exp(m, total, empty):
    """A row's statistics: its natural log-sum-exp, (m + log2 l) ln 2 from
    the base-2 maximum ``m`` and the sum ``total``; -inf where ``empty``."""
    lse = arith.mulf(arith.addf(m, mmath.log2(total)), f32(LN2))
    return arith.select(empty, f32(-math.inf), lse)
