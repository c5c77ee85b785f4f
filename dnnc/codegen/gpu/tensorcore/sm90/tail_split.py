"""tc-sm90's tail split: the tiles of the persistent grid's last, partial
wave split along K over the blocks it would leave idle, their parts summed
in split order by the last to arrive.

The scheduler (scheduler.py, ``tail_unit``) numbers the units: whole tiles
first, then each tail tile's ``parts`` consecutive parts. Whole units and
parts share the producer's and the consumers' loops; a consumer's finish
branches at run time (``finish``):

* a whole unit hands its accumulator to the epilogue, as without;
* a part stores its f32 accumulator into its slot of a compact workspace
  (parts x tail tiles slots of BM x BN f32, not [parts, M, N]), and each
  warp counts its tile's arrivals (an i32 per warp of a tail tile, which
  the runtime zeroes once and the last resets); the warp that arrives
  last adds the parts' values in split order (the result does not depend
  on which part finished last) and runs the epilogue on the sum.

The epilogue is emitted once, after the branch: it runs where the unit is
whole or this warp summed the parts, on inputs read before the last wgmma
wait for either (a code size of one epilogue; two, the second reading
its inputs after the sum, spilled far more). A slot holds a warp's 16 rows
lane-interleaved, as a warp's registers hold them (vector v of lane l at
(v x 32 + l) x 16 bytes of the warp's piece): each store and load
instruction of a warp moves 512 contiguous bytes, and rows and columns
past M and N are stored and summed like the others (TMA's zero fill) and
not stored by the epilogue.

It applies where the tiles fill at least one wave (fewer tiles than
blocks is split-K's case) and leave a partial one whose tiles the idle
blocks can take a second part of each. Refused (NotSupported) beside
split-K or a cluster sum (the whole tiles are already split), a bias
gradient (its sums are split-K's) and block scales (their mainloop
carries other temporaries). In tiles 256 wide with epilogue inputs that spill
(``_spills``: the inputs, read before the last wgmma wait for the whole
tiles, stay live across a part's store and sum beside its 128
accumulator registers a thread) the tiles run whole, and the plan says
why.
"""

from mlir import ir
from mlir.dialects import arith, llvm, memref, scf, vector

from dnnc.codegen.gpu.tensorcore.emit import cmp as _cmp, i as _i, idx as _idx, if_ as _if
from dnnc.codegen.gpu.tensorcore.sm90.splitk import arrive
from dnnc.codegen.gpu.tensorcore.sm90.support import WARPGROUP, NotSupported


def check(kernel):
    """Raise NotSupported where the tile asks for a tail split that
    ``kernel`` (kernel.Kernel) cannot run."""
    k = kernel
    tile = k.tile
    if tile.tail_split < 2:
        return
    why = None
    if tile.splits > 1:
        why = f"beside split-K (K split {tile.splits} ways)"
    elif tile.cluster > 1:
        why = f"beside a cluster sum of {tile.cluster} blocks"
    elif k.bias is not None:
        why = "beside a bias gradient (its sums follow split-K's)"
    elif k.gemm.scales is not None:
        why = "on a block-scaled GEMM (its mainloop's temporaries)"
    if why is not None:
        raise NotSupported(f"tail_split {tile.tail_split} {why}: expected tail_split 0")


def _spills(k):
    """Whether ptxas spills the tail split of kernel ``k``: in tiles 256
    wide (128 accumulators a thread), the epilogue's inputs, read for the
    whole tiles before the last wgmma wait, stay live across a part's
    store and sum, and ptxas issues the sum's loads at once. Measured
    (sm_90a; bytes spilled; 128x256 and 64x256 alike unless said): no
    input, 0; a residual alone, 0; a matmul's bias in 128x256 tiles (+
    gelu: ViT-Base's MLP), 0, in 64x256 tiles 92; a convolution's bias (+
    relu), 8 (bf16) or 0 (f16); scale and shift, 24-184; bias and
    residual, 8-24. Taken where none spilled."""
    if k.tile.n < 256:
        return False
    inputs = k.epilogue.pair.along_columns
    if not inputs:
        return False
    if len(inputs) == 1 and k.epilogue.inputs_along_rows():
        return False
    return not (len(inputs) == 1 and k.tile.m == 128 and not k.implicit_gemm)


class TailSplit:
    """The tail split of ``kernel`` (kernel.Kernel): its workspace and the
    consumers' run-time branch between a whole unit and a part."""

    def __init__(self, kernel):
        check(kernel)
        self.k = kernel
        units = kernel.scheduler
        # Where it would spill, the tiles run whole (the kernel is
        # tail_split 0's), and the plan says why.
        self.spills = units.tail_split and _spills(kernel)
        if self.spills:
            units.drop_tail_split()
        self.active = units.tail_split
        self.parts = units.tail_parts
        self.tiles = units.tail_tiles
        self.warps = kernel.tile.consumers * WARPGROUP // 32
        # A warp's piece of a slot: its lanes' BN / 2 f32 each.
        self.piece = kernel.tile.n // 2 * 32 * 4
        self.partials = None    # f32 [parts x tiles x warps x piece / 4]
        self.arrivals = None    # i32 [tiles x warps]

    def note(self):
        """What the plan says of it (None when it does not apply)."""
        units = self.k.scheduler
        if not self.active:
            if self.k.tile.tail_split < 2:
                return None
            if self.spills:
                return (f"tail_split {self.k.tile.tail_split} does not apply (in "
                        f"{self.k.tile.m}x{self.k.tile.n} tiles with these epilogue inputs, "
                        "read before a part's sum beside its 128 accumulator registers a "
                        "thread, ptxas spills): tiles run whole")
            tail = units.total_tiles % units.max_ctas
            why = f"{units.steps} K step" if units.steps < 2 else \
                f"the {units.total_tiles} tiles fill their waves" if tail == 0 else \
                f"{units.total_tiles} tiles for {units.max_ctas} blocks, none whole: split-K's " \
                "case (config split)" if units.total_tiles < units.max_ctas else \
                f"the last wave's {tail} tiles leave {units.max_ctas - tail} blocks idle, " \
                "too few for a second part of each"
            return f"tail_split {self.k.tile.tail_split} does not apply ({why}): tiles run whole"
        return (f"the last wave's {self.tiles} of {units.total_tiles} tiles split along K "
                f"{self.parts} ways ({units.tail_per_split} of {units.steps} K steps each) "
                f"over {units.ctas} blocks, summed in split order by the last to arrive")

    def allocate(self):
        """Host side, before the launch: the parts' slots and the arrival
        counters."""
        if not self.active:
            return
        self.partials = memref.alloc(ir.MemRefType.get(
            [self.parts * self.tiles * self.warps * self.piece // 4], ir.F32Type.get()), [], [])
        self.arrivals = memref.alloc(ir.MemRefType.get(
            [self.tiles * self.warps], ir.IntegerType.get_signless(32)), [], [])

    def finish(self, acc, consumer, local, split, unit):
        """A consumer's accumulator ``acc`` of a unit (``split`` its part,
        ``unit`` the scheduler's (tail, tail tile)): (the accumulator the
        epilogue takes, an i1 whether it runs), through one scf.if on
        ``tail`` (module docstring)."""
        tail, tail_tile = unit
        i1 = ir.IntegerType.get_signless(1)
        op = scf.IfOp(tail, [acc.type, i1], has_else=True)
        with ir.InsertionPoint(op.then_block):
            scf.YieldOp(list(self._part(acc, consumer, local, split, tail_tile)))
        with ir.InsertionPoint(op.else_block):
            scf.YieldOp([acc, arith.constant(i1, 1)])
        return op.results[0], op.results[1]

    def _part(self, acc, consumer, local, split, tail_tile):
        """A part: store it, count the warp's arrival, and sum the parts
        if it is the last; (the sum, or undef where it was not, whether it
        was last)."""
        warp = arith.addi(arith.muli(consumer, _idx(WARPGROUP // 32)),
                          arith.divui(local, _idx(32)))
        lane = arith.remui(local, _idx(32))
        first_lane = _cmp("eq", lane, _idx(0))
        vectors = self.k.tile.n // 8       # 4 f32 a vector, BN / 2 a thread
        f32 = ir.F32Type.get()
        v4 = ir.VectorType.get([4], f32)
        # Elements: the warp's piece of tail tile t in part 0's slot, lane l's
        # vector v at (v x 32 + l) x 4 of it; part s lies s slots (tiles x
        # warps pieces) on.
        counter = arith.addi(arith.muli(tail_tile, _idx(self.warps)), warp)
        piece = self.piece // 4
        slot = self.tiles * self.warps * piece
        first = arith.addi(arith.muli(counter, _idx(piece)), arith.muli(lane, _idx(4)))
        mine = arith.addi(arith.muli(split, _idx(slot)), first)
        for v in range(vectors):
            values = [llvm.extractvalue(f32, acc, ir.DenseI64ArrayAttr.get([4 * v + e]))
                      for e in range(4)]
            at = arith.addi(mine, _idx(128 * v)) if v else mine
            vector.store(vector.from_elements(v4, values), self.partials, [at], alignment=16)
        before = arrive(self.arrivals, counter, first_lane)
        last = _cmp("eq", before, _i(self.parts - 1))
        summed = scf.IfOp(last, [acc.type], has_else=True)
        with ir.InsertionPoint(summed.then_block):
            _if(first_lane, lambda: memref.store(_i(0), self.arrivals, [counter]))
            # From undef, not from ``acc``: the part's own registers are
            # dead once stored, and the loads may take them.
            out = llvm.mlir_undef(acc.type)
            for v in range(vectors):
                total = None
                for s in range(self.parts):
                    at = arith.addi(first, _idx(s * slot + 128 * v)) if s or v else first
                    value = vector.load(v4, self.partials, [at], alignment=16)
                    total = value if total is None else arith.addf(total, value)
                for e in range(4):
                    out = llvm.insertvalue(out, vector.extract(total, [], [e]),
                                           ir.DenseI64ArrayAttr.get([4 * v + e]))
            scf.YieldOp([out])
        with ir.InsertionPoint(summed.else_block):
            # (The epilogue does not run: any value.)
            scf.YieldOp([llvm.mlir_undef(acc.type)])
        return summed.results[0], last


