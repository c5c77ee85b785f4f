"""tc-sm80's split-K: ``splits`` blocks share each output tile's K steps,
and a second launch sums their partials in a fixed order, so the result
does not depend on which block finished first.

A tile whose K is long and whose grid leaves SMs idle (a filter gradient
reduces over N·P·Q output pixels into a few K x taps·C tiles) runs as
``splits`` blocks, block s of a tile taking the K steps [s·per, (s+1)·per)
(equal runs, none empty: ``per`` = ceil(steps / splits), and the split
count is what that leaves, as tc-sm90's scheduler counts them). Each
block's mainloop is the unsplit kernel's over its run (kernel.py); then::

    1. store   each thread's f32 accumulator pairs, unscaled, into its
               split's slice of the ``[splits, batch, M, N']`` workspace
               (N' = N rounded up to even: every pair is one aligned 8-byte
               store; rows past M and pairs past N are not stored)
    2. reduce  a second launch, one thread per pair of columns: the pair's
               partials added in split order 0, 1, ..., then the fused
               epilogue (pair_epilogue.py) on the sum, stored as the
               unsplit kernel's epilogue stores it

The sum in split order gives the same bits on every run. The workspace
costs splits x M x N' x 4 bytes written and read once each, small beside
the operands a long K reads (a filter gradient of 65 x 576 split 14 ways:
2 MiB against 26 MiB of dy and x).
"""

from mlir import ir
from mlir.dialects import arith, gpu, llvm, memref, vector

from dnnc.codegen.gpu.tensorcore.emit import (
    add as _add, cmp as _cmp, idx as _idx, if_ as _if, launch,
)
from dnnc.codegen.gpu.tensorcore.pair_epilogue import PairEpilogue

# Threads of a block of the second launch.
REDUCE_THREADS = 256


class SplitK:
    """How ``kernel``'s (kernel.Kernel) K steps are split over blocks, and
    how the splits' partials are summed."""

    def __init__(self, kernel):
        self.k = kernel
        steps = kernel.steps
        # Equal runs of K steps, none empty (7 steps over 4 splits run as
        # 4 of 2, the last 1; 8 over 3 as 3 of 3, the last 2).
        self.per_split = -(-steps // max(1, kernel.tile.splits)) if steps else 0
        self.splits = -(-steps // self.per_split) if self.per_split else 1
        # The steps of the last split (the others run per_split).
        self.last = steps - (self.splits - 1) * self.per_split
        gemm = kernel.gemm
        self.columns = gemm.n + gemm.n % 2
        self.partials = None   # the f32 [split, batch, M, N'] workspace

    @property
    def split(self):
        """Whether K is split (the grid holds ``splits`` blocks a tile)."""
        return self.splits > 1

    def allocate(self):
        """Host side, before the launch: the partials workspace."""
        if self.split:
            gemm = self.k.gemm
            self.partials = memref.alloc(ir.MemRefType.get(
                [self.splits, gemm.batch, gemm.m, self.columns], ir.F32Type.get()), [], [])

    def run(self, split):
        """(first K step, steps) of the block's run: index values, constants
        (0, every step) where K is not split; ``split`` the block's (index,
        None unsplit)."""
        if not self.split:
            return None, _idx(self.k.steps)
        first = arith.muli(split, _idx(self.per_split))
        if self.last == self.per_split:
            return first, _idx(self.per_split)
        return first, arith.minui(_idx(self.per_split),
                                  arith.subi(_idx(self.k.steps), first))

    def store(self, accs, lane, batch, row0, col0, split):
        """Store this thread's accumulators ``accs`` (mt x nt structs of 4
        f32, the warp tile at C's ``row0``, ``col0``: epilogue.py's
        layout) into split ``split``'s slice of the workspace, a pair of
        columns an 8-byte store, those past M or N dropped."""
        k = self.k
        gemm, tile = k.gemm, k.tile
        g, t = arith.divui(lane, _idx(4)), arith.remui(lane, _idx(4))
        col_base = arith.addi(col0, arith.muli(t, _idx(2)))
        f32 = ir.F32Type.get()
        pair = ir.VectorType.get([2], f32)
        full_m, full_n = gemm.m % tile.m == 0, gemm.n % tile.n == 0
        for mt in range(k.mt):
            for h in range(2):
                row = arith.addi(row0, k.row_of(g, mt, h))
                row_ok = None if full_m else _cmp("ult", row, _idx(gemm.m))
                for nt in range(k.nt):
                    col = _add(col_base, 8 * nt)
                    acc = accs[mt * k.nt + nt]
                    values = [llvm.extractvalue(f32, acc, ir.DenseI64ArrayAttr.get([2 * h + e]))
                              for e in range(2)]
                    vec = vector.from_elements(pair, values)
                    # A pair starts inside N or wholly past it (col is even;
                    # N' is even): its second column may be N' - 1, past N.
                    ok = row_ok
                    if not full_n:
                        inside = _cmp("ult", col, _idx(gemm.n))
                        ok = inside if ok is None else arith.andi(ok, inside)

                    def put(vec=vec, row=row, col=col):
                        vector.store(vec, self.partials, [split, batch, row, col],
                                     alignment=8)
                    if ok is None:
                        put()
                    else:
                        _if(ok, put)

    def reduce(self):
        """The second launch: each thread sums one pair of columns of one
        row over the splits, in split order, and runs the fused epilogue
        on it (one column where N is odd and the pair's second is N)."""
        k = self.k
        gemm = k.gemm
        half = self.columns // 2
        items = gemm.batch * gemm.m * half
        blocks = -(-items // REDUCE_THREADS)
        epilogue = PairEpilogue(gemm, k.arguments, full_m=True, full_n=gemm.n % 2 == 0)
        pair = ir.VectorType.get([2], ir.F32Type.get())

        def body():
            item = arith.addi(arith.muli(gpu.block_id(gpu.Dimension.x),
                                         _idx(REDUCE_THREADS)),
                              gpu.thread_id(gpu.Dimension.x))

            def one():
                col = arith.muli(arith.remui(item, _idx(half)), _idx(2))
                rows = arith.divui(item, _idx(half))
                row = arith.remui(rows, _idx(gemm.m))
                batch = arith.divui(rows, _idx(gemm.m)) if gemm.batch > 1 else _idx(0)
                total = None
                for s in range(self.splits):
                    part = vector.load(pair, self.partials, [_idx(s), batch, row, col],
                                       alignment=8)
                    total = part if total is None else arith.addf(total, part)
                values = [vector.extract(total, [], [e]) for e in range(2)]
                envs = epilogue.evaluate_pair(batch, row, col, values, {}, 0)
                epilogue.store(envs, batch, row, col)
            _if(_cmp("ult", item, _idx(items)), one)
        launch((blocks, 1), REDUCE_THREADS, 0, body)

    def note(self):
        """What the plan says of the split, or ""."""
        if not self.split:
            return ""
        steps = f"{self.per_split} K step{'s' if self.per_split != 1 else ''}"
        return (f"; K split {self.splits} ways ({steps} of {self.k.tile.k} a split), the f32 "
                "partials summed in split order by a second launch that runs the epilogue")
