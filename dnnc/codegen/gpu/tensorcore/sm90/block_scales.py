"""Block scales in tc-sm90's mainloop (dnn.matmul_block_scaled, gemm.BlockScales):
DeepSeek-V3's fp8 GEMM, A scaled per row and 128-wide K block ("1 x 128"),
B per 128 x 128 block.

The K step of an fp8 tile is 128 (wgmma's k = 32, four instructions), the
scales' block, so each step is one block. Its products go into a temporary
accumulator from zero (the first wgmma's scale-d is 0), which is then
promoted into the tile's f32 sum: sum += temporary * (a_scale[row, kb] *
b_scale[kb, n / 128]), one FMA per value. A consumer reads its two rows'
scales of A (rows r and r + 8 of the thread's fragment, fragments.row_of)
and B's of the tile's column blocks from global memory a step before it
promotes with them, so that their latency hides behind a step's wgmmas.

Two loops, chosen by the tile (``Tile.promote_overlap``, the config's
``promote_overlap``):

* **whole steps** (promote_overlap 0): each step's wgmmas into one
  temporary, ``wgmma.wait_group 0``, then the promotion. Only the other
  consumer warpgroup's wgmmas overlap this one's promotion. A tile 256
  columns wide spans two column blocks of B's scales: its step runs as two
  halves of 128 columns (m64n128k32 wgmmas), each into the same 64
  registers of temporary and promoted with its half's scale, because the
  sum (128 f32 a thread) and a whole-width temporary (128 more) would not
  fit a consumer's 232 registers (mainloop.CONSUMER_REGISTERS).
* **overlapped** (promote_overlap G = 2, 4 or 8; tiles of at most 128
  columns): groups of G steps, two temporaries alternating. Step kt's
  wgmmas go into one while step kt - 1's are promoted from the other after
  ``wgmma.wait_group 1``, so the consumer's own promotion overlaps its
  next wgmmas, as DeepGEMM and CUTLASS's blockwise-scaled sm90 GEMMs
  arrange with their register reallocation. The sum and two temporaries
  are 3 x BN / 2 f32 a thread (192 at BN = 128). A group ends with
  ``wait_group 0`` and its last promotion: a temporary in flight across
  the loop's back edge makes ptxas serialize every wgmma of the kernel
  (C7514), as does an in-flight temporary the back edge copies (C7515).
  G - 1 of a group's G promotions overlap; a unit's first count % G steps
  run whole.

A tile's rows past M read the last row's scales (those rows are never
stored); its column blocks past N read the last column block's (B's rows
past N are zero-filled by TMA, so their products are zero); a partial last
K block (TMA zero-fills past K) takes its scales as the others do.
"""

from mlir import ir
from mlir.dialects import arith, llvm, memref, nvvm, scf

from dnnc.codegen.gpu.tensorcore.emit import (
    cmp as _cmp, for_ as _for, idx as _idx, if_ as _if,
)
from dnnc.codegen.gpu.tensorcore.sm90.fragments import row_of, struct, unpack

# The columns of one block of B's scales, and so of one temporary.
HALF = 128
# K steps a group of the overlapped loop may run (Tile.promote_overlap).
GROUPS = (2, 4, 8)


class BlockScaling:
    """The scale reads, the promotion and the K loop of ``kernel``'s
    (kernel.Kernel) block-scaled GEMM."""

    def __init__(self, kernel):
        self.k = kernel
        self.scales = kernel.gemm.scales
        tile = kernel.tile
        # The column blocks of B's scales a tile spans, each its own temporary.
        self.parts = max(1, tile.n // HALF)
        self.width = tile.n // self.parts
        self.temp_type = struct(self.width // 2)
        # Steps a group of the overlapped loop runs; 0: whole steps.
        self.group = tile.promote_overlap

    def note(self):
        """What the plan says of the mainloop's scaling."""
        tile = self.k.tile
        how = (f"two temporaries alternating in groups of {self.group} steps, each step's "
               "promoted while the next step's wgmmas run" if self.group else
               "waited for and promoted before the next step")
        if self.parts > 1:
            how += f", in {self.parts} parts of {self.width} columns, one scale of B each"
        return (f"block-scaled: each {tile.k}-wide K step summed apart ({how}), then scaled "
                "by its 1x128 scale of A and 128x128 scale of B into the accumulator")

    # -- scales ---------------------------------------------------------------

    def tile_origin(self, consumer, local, tile_m, tile_n, end):
        """(row of A's scales of each of the thread's two fragment rows, the
        column of B's scales of each part of the tile, the last K block of
        the unit's steps, which end at ``end``) of a tile: computed once a
        tile."""
        k = self.k
        gemm, tile = k.gemm, k.tile
        warp = arith.divui(local, _idx(32))
        lane = arith.remui(local, _idx(32))
        row0 = arith.addi(arith.muli(tile_m, _idx(tile.m)),
                          arith.addi(arith.muli(consumer, _idx(64)),
                                     arith.addi(arith.muli(warp, _idx(16)),
                                                arith.divui(lane, _idx(4)))))
        rows = []
        for h in range(2):
            row = arith.addi(row0, _idx(8 * h)) if h else row0
            # Rows past M (a ragged last tile): their products are zero (TMA
            # fills A's rows past M with zeros) and never stored; the last
            # row's scale keeps the read in bounds.
            rows.append(row if gemm.m % tile.m == 0 else arith.minui(row, _idx(gemm.m - 1)))
        blocks = -(-gemm.n // self.scales.block)
        first = arith.divui(arith.muli(tile_n, _idx(tile.n)), _idx(self.scales.block))
        columns = []
        # A last tile's part wholly past N (N not a multiple of 256) reads
        # the last block's scale.
        past = -(-gemm.n // tile.n) * self.parts > blocks
        for p in range(self.parts):
            column = arith.addi(first, _idx(p)) if p else first
            columns.append(arith.minui(column, _idx(blocks - 1)) if p and past else column)
        return rows, columns, arith.subi(end, _idx(1))

    def first_block(self, start):
        """The K block of a unit's first step ``start``, kept in bounds for a
        unit of no steps (an empty K split)."""
        return arith.minui(start, _idx(-(-self.k.gemm.k // self.scales.block) - 1))

    @staticmethod
    def next_block(kt, origin):
        """The K block after ``kt``, or ``kt`` at the unit's last (its read
        is then unused, and stays in bounds)."""
        return arith.minui(arith.addi(kt, _idx(1)), origin[2])

    def factors(self, origin, kt):
        """The f32 factors a_scale[row, kt] * b_scale[kt, column] at K block
        ``kt``: for each part of the tile, one for each of the thread's two
        fragment rows (flat: part-major)."""
        rows, columns, _ = origin
        a_scales = [memref.load(self.scales.a, [row, kt]) for row in rows]
        out = []
        for column in columns:
            b_scale = memref.load(self.scales.b, [kt, column])
            out += [arith.mulf(a, b_scale) for a in a_scales]
        return out

    def promote(self, acc, partial, factors, part=0):
        """acc + partial * factor of each value's row, value by value: the
        temporary ``partial`` of the tile's part ``part`` (its values are
        the sum's from part x width / 2 on: an m64nN fragment's values run
        along the columns in 8-column groups of four)."""
        f32 = ir.F32Type.get()
        base = part * (self.width // 2)
        for e in range(self.width // 2):
            at = ir.DenseI64ArrayAttr.get([base + e])
            total = llvm.extractvalue(f32, acc, at)
            block = llvm.extractvalue(f32, partial, ir.DenseI64ArrayAttr.get([e]))
            acc = llvm.insertvalue(acc, llvm.intr_fma(block, factors[2 * part + row_of(e)],
                                                      total), at)
        return acc

    # -- the K loop --------------------------------------------------------------

    def loop(self, consumer, local, tile_m, tile_n, k_steps, zero, g, issue, release):
        """A unit's K steps ``k_steps`` (start, end) for a consumer:
        ``issue(kt, temporary, g, columns, wait)`` issues step kt's wgmmas
        (mainloop.Consumer), ``release(g)`` gives a stage back. Returns the
        op whose first two results are the sum and the next global step; the
        stage of the unit's last step is left for the caller to release."""
        origin = self.tile_origin(consumer, local, tile_m, tile_n, k_steps[1])
        if self.group:
            return self._overlapped(origin, k_steps, zero, g, issue, release)
        return self._whole_steps(origin, k_steps, zero, g, issue, release)

    def _step(self, kt, total, g, factors, issue):
        """Step ``kt`` whole: each part's wgmmas into the temporary, wait for
        them, promote. Returns the sum."""
        for p in range(self.parts):
            partial, _ = issue(kt, llvm.mlir_undef(self.temp_type), g,
                               (p * self.width, self.width), wait=p == 0)
            nvvm.WgmmaWaitGroupSyncOp(0)
            total = self.promote(total, partial, factors, p)
        return total

    def _whole_steps(self, origin, k_steps, zero, g, issue, release, end=None):
        """A step an iteration, each whole (module docstring); ``end``: the
        last step + 1 of these, if before the unit's."""
        first = k_steps[0]

        def body(kt, total, g, *factors):
            # This step's factors were read a step ahead; read the next's now.
            ahead = self.factors(origin, self.next_block(kt, origin))
            total = self._step(kt, total, g, factors, issue)
            # The step before is done (wait_group 0 above): its stage goes back.
            _if(_cmp("ugt", kt, first), lambda: release(arith.subi(g, _idx(1))))
            return [total, arith.addi(g, _idx(1)), *ahead]

        return _for(first, k_steps[1] if end is None else end, body,
                    [zero, g, *self.factors(origin, self.first_block(first))])

    def _overlapped(self, origin, k_steps, zero, g, issue, release):
        """Groups of ``self.group`` steps, two temporaries alternating
        within each (module docstring); the unit's first count % group
        steps whole."""
        start, end = k_steps[0], k_steps[1]
        # 1. The steps short of a whole group, whole.
        grouped = arith.addi(start, arith.remui(arith.subi(end, start), _idx(self.group)))
        head = self._whole_steps(origin, k_steps, zero, g, issue, release, end=grouped)
        total, g = list(head.results)[:2]

        def overlapped(kt, total, g, in_flight, factors_in_flight):
            """Issue step kt into a fresh temporary, then promote the one in
            flight (step kt - 1's) once it is done and give its stage back."""
            factors = self.factors(origin, kt)
            partial, _ = issue(kt, llvm.mlir_undef(self.temp_type), g, (0, self.width))
            nvvm.WgmmaWaitGroupSyncOp(1)
            release(arith.subi(g, _idx(1)))
            total = pinned(self.promote(total, in_flight, factors_in_flight),
                           self.k.tile.n // 2)
            return total, arith.addi(g, _idx(1)), partial, factors

        # 2. The groups. Each ends with wait_group 0: no temporary is in
        #    flight across the loop's back edge, where ptxas would serialize
        #    every wgmma (C7514) for want of knowing which group is older.
        def body(kt, total, g):
            factors = self.factors(origin, kt)
            in_flight, _ = issue(kt, llvm.mlir_undef(self.temp_type), g, (0, self.width))
            # The step before (the group before's last, or a whole one) is done.
            _if(_cmp("ugt", kt, start), lambda: release(arith.subi(g, _idx(1))))
            g = arith.addi(g, _idx(1))
            for j in range(1, self.group):
                total, g, in_flight, factors = overlapped(
                    arith.addi(kt, _idx(j)), total, g, in_flight, factors)
            nvvm.WgmmaWaitGroupSyncOp(0)
            return [self.promote(total, in_flight, factors), g]

        loop = scf.ForOp(grouped, end, _idx(self.group), [total, g])
        with ir.InsertionPoint(loop.body):
            scf.YieldOp(body(loop.induction_variable, *loop.inner_iter_args))
        return loop


def pinned(acc, count):
    """``acc`` passed through an empty inline asm with side effects: the
    promotion's FMAs stay ahead of the next step's wgmmas. Without it LLVM
    sinks them to the loop's latch, past those wgmmas, where the temporary
    being promoted, the one in flight and the sum are live at once, and the
    back edge copies a temporary still in flight (ptxas then serializes
    every wgmma of the kernel, C7515). ``count``: its f32 values. It emits
    no instruction."""
    constraints = ",".join(["=f"] * count + [str(e) for e in range(count)])
    return llvm.inline_asm(acc.type, unpack(acc, count), "", constraints,
                           has_side_effects=True)
