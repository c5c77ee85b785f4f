"""Split-KV for tc-sm90's attention forward (flash.py): where a problem has
too few query tiles to fill the GPU (decoding: a query row or a few against
a long kv sequence), ``splits`` blocks share each query tile's kv tiles,
block z taking the z-th of ``splits`` equal runs of them (``split_range``).

Each block writes its rows' partial result, normalized by its own row sums,
and their log-sum-exp (-inf where it saw no column) in f32 to two
workspaces (``Partials``)::

    o_part    [splits, B, H, Sq, Dv]      o_z = O_z / l_z
    lse_part  [splits, B, H, Sq]          lse_z = m_z + log l_z

and a second kernel merges them, a thread per row and 4 columns::

    M = max_z lse_z (0 where every lse_z is -inf),  w_z = exp(lse_z - M)
    o = sum_z w_z o_z / sum_z w_z       stats = M + log sum_z w_z

A row no split saw (every w_z = 0) gets o = 0 and stats = -inf, as
without splits.
"""

import math

from mlir import ir
from mlir.dialects import arith, gpu, memref, vector
from mlir.dialects import math as mmath

from dnnc.codegen.gpu.tensorcore.attention_tiles import LN2, LOG2E, log_sum_exp, row_sums
from dnnc.codegen.gpu.tensorcore.emit import cmp as _cmp, ex2, f32, idx as _idx, if_ as _if, launch

THREADS = 128
# Columns a thread of the combine kernel merges.
CHUNK = 4


def split_range(start, steps, splits):
    """(first kv tile, kv tiles) of this block (gpu.block_id z) of the
    ``splits`` that share a query tile's ``steps`` tiles from ``start``:
    runs of ceil(steps / splits), the last ones shorter or empty."""
    z = gpu.block_id(gpu.Dimension.z)
    per = arith.divui(arith.addi(steps, _idx(splits - 1)), _idx(splits))
    first = arith.minui(arith.muli(z, per), steps)
    return arith.addi(start, first), arith.minui(per, arith.subi(steps, first))


class Partials:
    """The workspaces of the split blocks' partial results (allocated on
    the host side, in the kernel function), their stores and the kernel
    that merges them into o and the statistics."""

    def __init__(self, att, splits):
        self.att, self.splits = att, splits
        f32_type = ir.F32Type.get()
        rows = [splits, att.batch, att.heads, att.sq]
        self.o = memref.alloc(ir.MemRefType.get(rows + [att.dv], f32_type), [], [])
        self.lse = memref.alloc(ir.MemRefType.get(rows, f32_type), [], [])

    def store(self, fwd, o, m, l_):
        """Device side, in the forward kernel ``fwd``'s consumer: the
        thread's values of O (``o``, f32, in the accumulator's order: value
        4 block + 2 r + i is row r's column 8 block + i from the thread's
        first), its rows' maxima ``m`` (base 2) and partial sums ``l_``,
        normalized, into the workspaces."""
        att = self.att
        totals, empty, scale = row_sums(l_)
        z = gpu.block_id(gpu.Dimension.z)
        pair = ir.VectorType.get([2], ir.F32Type.get())
        for r in range(2):
            def write(r=r):
                index = [z, fwd.b, fwd.heads[r], fwd.rows[r]]
                for block in range(att.dv // 8):
                    lo, hi = (arith.mulf(o[4 * block + 2 * r + i], scale[r]) for i in range(2))
                    col = arith.addi(fwd.column, _idx(8 * block))
                    vector.store(vector.from_elements(pair, [lo, hi]), self.o, index + [col],
                                 alignment=8)

                def lse():
                    memref.store(log_sum_exp(m[r], totals[r], empty[r]), self.lse, index)
                _if(_cmp("eq", fwd.column, _idx(0)), lse)
            _if(fwd.valid(r), write)

    def combine(self):
        """Host side: the launch of the kernel that merges the partials."""
        att = self.att
        work = att.batch * att.heads * att.sq * (att.dv // CHUNK)
        launch((-(-work // THREADS), 1), THREADS, 0, self._merge)

    def _merge(self):
        att = self.att
        chunks = att.dv // CHUNK
        t = arith.addi(arith.muli(gpu.block_id(gpu.Dimension.x), _idx(THREADS)),
                       gpu.thread_id(gpu.Dimension.x))
        total = att.batch * att.heads * att.sq * chunks

        def body():
            row, chunk = arith.divui(t, _idx(chunks)), arith.remui(t, _idx(chunks))
            i = arith.remui(row, _idx(att.sq))
            bh = arith.divui(row, _idx(att.sq))
            b, h = arith.divui(bh, _idx(att.heads)), arith.remui(bh, _idx(att.heads))
            lses = [memref.load(self.lse, [_idx(z), b, h, i]) for z in range(self.splits)]
            top = lses[0]
            for x in lses[1:]:
                top = arith.maxnumf(top, x)
            neg_inf = f32(-math.inf)
            shift = arith.select(arith.cmpf(arith.CmpFPredicate.OEQ, top, neg_inf), f32(0.0),
                                 top)
            weights = [ex2(arith.mulf(arith.subf(x, shift), f32(LOG2E))) for x in lses]
            wide = ir.VectorType.get([CHUNK], ir.F32Type.get())
            col = arith.muli(chunk, _idx(CHUNK))
            acc, sum_ = None, f32(0.0)
            for z, w in enumerate(weights):
                part = vector.load(wide, self.o, [_idx(z), b, h, i, col])
                term = arith.mulf(part, vector.broadcast(wide, w))
                acc = term if acc is None else arith.addf(acc, term)
                sum_ = arith.addf(sum_, w)
            empty = arith.cmpf(arith.CmpFPredicate.OEQ, sum_, f32(0.0))
            inv = arith.select(empty, f32(0.0), arith.divf(f32(1.0), sum_))
            out = arith.mulf(acc, vector.broadcast(wide, inv))
            element = ir.MemRefType(att.o.type).element_type
            if not isinstance(element, ir.F32Type):
                out = arith.truncf(ir.VectorType.get([CHUNK], element), out)
            vector.store(out, att.o, [b, h, i, col])
            if att.stats is not None:
                def stats():
                    lse = arith.addf(shift, arith.mulf(mmath.log2(sum_), f32(LN2)))
                    memref.store(arith.select(empty, neg_inf, lse), att.stats,
                                 [b, h, i, _idx(0)])
                _if(_cmp("eq", chunk, _idx(0)), stats)
        _if(_cmp("ult", t, _idx(total)), body)
