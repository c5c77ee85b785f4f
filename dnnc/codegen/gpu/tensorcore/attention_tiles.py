"""Where an attention forward kernel's blocks and steps fall, for any
tensor-core strategy: which (batch, head) and query rows a block takes,
which tiles of kv rows those rows see under the masks, and the branch that
masks scores only on the tiles that need it.

The masks (dnnc/dialect/ops_attention.py; tensorcore/attention.Attention):
row i sees column j when j < Skv, j <= i + shift (``causal``: shift 0
top-left aligned, Skv - Sq bottom-right) and j > i + shift - window (a
sliding ``window`` > 0, causal too). A block's rows see a contiguous range
of kv tiles (``column_tiles``): it loads only those, and a block whose
rows see no column runs no step at all (o = 0, stats = -inf).

The grid is (query tiles, B x H): the blocks that run together share few
heads, whose K and V stay in L2 (ordered by head first, the blocks of the
first wave would read every head's K and V, more than L2 holds, and each
again from memory). A causal grid runs each head's query tiles last first,
since the longest (the last) should not start last.

tc-sm80's attention kernel (sm80/flash.py) takes these from here; tc-sm90's
(sm90/flash.py) has the same rules for its own layouts.
"""

import math

from mlir import ir
from mlir.dialects import arith, gpu, scf

from dnnc.codegen.gpu.tensorcore.emit import add, f32, idx

LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453


def column_tiles(att, first_row, rows, n):
    """[start, end) (index values) of the tiles of ``n`` key columns that
    query rows ``first_row`` .. + ``rows`` - 1 see: up to the last row's
    diagonal when causal, from the first row's window start with a window."""
    tiles = -(-att.skv // n)
    end = idx(tiles)
    if att.causal:
        # Columns up to last row + shift (+ 1, rounded up to whole tiles).
        reach = arith.maxsi(add(first_row, rows + att.shift + n - 1), idx(0))
        end = arith.minui(arith.divui(reach, idx(n)), end)
    start = idx(0)
    if att.window:
        left = arith.maxsi(add(first_row, att.shift - att.window + 1), idx(0))
        start = arith.minui(arith.divui(left, idx(n)), end)
    return start, end


def query_block(att, rows, n):
    """Device side, for a grid of (query tiles of ``rows``, B x H): the
    block's (batch, head, kv head, first query row, first kv tile, kv tiles)
    as index values, the kv tiles (of ``n`` columns) those its rows see
    (``column_tiles``). Query head h reads kv head h // (H / Hk). A causal
    grid runs each head's last query tiles, the longest, first."""
    head = gpu.block_id(gpu.Dimension.y)
    b = arith.divui(head, idx(att.heads))
    h = arith.remui(head, idx(att.heads))
    hk = arith.divui(h, idx(att.group)) if att.group > 1 else h
    tile_x = gpu.block_id(gpu.Dimension.x)
    if att.causal:
        tile_x = arith.subi(idx(-(-att.sq // rows) - 1), tile_x)
    m0 = arith.muli(tile_x, idx(rows))
    start, end = column_tiles(att, m0, rows, n)
    return b, h, hk, m0, start, arith.subi(end, start)


def mask_needed(att, n0, n, first, rows):
    """The i1 conditions (index comparisons, uniform over ``rows`` query
    rows from ``first``) under which the tile of ``n`` columns from ``n0``
    holds a score some of those rows do not see: it reaches past Skv, right
    of the first row's diagonal, or left of the last row's window. None of
    them holds on the tiles wholly inside every row's view."""
    end = add(n0, n)
    need = []
    if att.skv % n:
        need.append(arith.cmpi(arith.CmpIPredicate.ugt, end, idx(att.skv)))
    if att.causal:
        need.append(arith.cmpi(arith.CmpIPredicate.sgt, end, add(first, att.shift + 1)))
    if att.window:
        need.append(arith.cmpi(arith.CmpIPredicate.slt, n0,
                               add(first, rows + att.shift - att.window)))
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
