"""A tc-sm80 kernel: one block per output tile (scheduler.py), a cp.async
ring of ``stages`` stages (loader.py), ldmatrix and mma.sync in a software
pipeline (below), and the fused epilogue (epilogue.py); with split-K, one
block per tile and K split, each running the steps of its split, whose
partials a second launch sums and runs the epilogue on (splitk.py).

``warps`` warps of 32 threads in a ``warps_m x warps_n`` grid, each warp
owning a ``WM x WN`` slice of the tile (``Tile.warp_m`` / ``Tile.warp_n``:
the squarest, 64 x 64 for 128 x 128 tiles and 4 warps, 128 x 256 or 256 x
128 and 8)::

    1. prologue   issue the cp.async copies of K steps 0 .. stages-2, one
                  commit group per step (an empty group past the last step
                  keeps the group count uniform); wait for step 0 (tf32:
                  round its chunks), barrier,
                  ldmatrix the fragments of its first K slice
    2. mainloop   for each K step kt, for each 16-element slice kk of K (8
                  for tf32), the fragments of slice kk in registers:
                    ldmatrix the fragments of slice kk+1 (A: WM / 16 x4
                    loads, B: WN / 16); at kk = 0, issue the copies of step
                    kt+stages-1 into the stage step kt-1 used, commit;
                    at the last slice instead: (the shared stores of a
                    element-wise operand's chunks, loader.py) wait until at most stages-2
                    groups are in flight (step kt+1 has landed), (tf32:
                    each thread rounds the chunks it copied of step kt+1,
                    in place: _round_landed) barrier
                    (every thread's copies are visible, and every warp is
                    done reading step kt-1's stage), ldmatrix slice 0 of step
                    kt+1; then mma.sync slice kk (WM/16 x WN/8 of them, in
                    serpentine order)
    3. epilogue   wait for all groups; each accumulator pair goes through the
                  fused pointwise chain and is stored (epilogue.py); split
                  K: stored as f32 partials instead (splitk.py)

The K steps are a block's split's (all of them unsplit): steps step0 ..
step0 + count - 1, ``count`` a constant but where the last split runs
fewer steps than the others.

The fragments are double-buffered in registers so that no mma.sync waits
for the ldmatrix just before it: the loads of slice kk+1 are in flight
under the mma.syncs of slice kk, and a step's barrier falls before its last
slice's mma.syncs, so the first slice of the next stage is read under them
and a warp leaves the barrier with a slice of mma.syncs ready to issue. The
copies come after the ldmatrix of their slice in program order: ptxas does
not move a shared load above a cp.async (which writes shared memory).
"""

from mlir import ir
from mlir.dialects import arith, gpu, llvm, nvvm, scf, vector

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.tensorcore.emit import (
    add as _add, cmp as _cmp, erase_replaced, i as _i, idx as _idx, if_ as _if, launch,
    ptr as _ptr, shared_base,
    to_i64 as _i64,
)
from dnnc.codegen.gpu.tensorcore.sm80.epilogue import Epilogue
from dnnc.codegen.gpu.tensorcore.sm80.loader import AsyncOperand
from dnnc.codegen.gpu.tensorcore.sm80.scheduler import tile_of_block
from dnnc.codegen.gpu.tensorcore.sm80.splitk import SplitK
from dnnc.codegen.gpu.tensorcore.sm80.support import (
    MAX_ACCUMULATORS, MAX_SHARED, MMA_K_BYTES, WARP, NotSupported,
)


def _round_tf32(bits):
    """An f32 bit pattern (i32) rounded to tf32, to nearest even, inf and NaN
    kept: dnnc.codegen.linalg.contraction.round_tf32 on the bits."""
    lsb = arith.andi(arith.shrui(bits, _i(13)), _i(1))
    rounded = arith.andi(arith.addi(arith.addi(bits, _i(0xFFF)), lsb), _i(-0x2000))
    finite = _cmp("ne", arith.andi(bits, _i(0x7F800000)), _i(0x7F800000))
    return arith.select(finite, rounded, bits)

def operand_loaders(gemm, tile):
    """A GEMM's loaders: each operand a plain tile (AsyncOperand), read
    element by element where its rows start 2 bytes apart (an odd K or N
    of 16-bit elements): loader.py's element-wise chunks, zero past M, N
    and K, so that no operand is ever padded in memory."""
    return (AsyncOperand("A", gemm.a, tile.m, tile, gemm.m, gemm.k, element_wise=True,
                         batch_shape=gemm.batch_shape),
            AsyncOperand("B", gemm.b, tile.n, tile, gemm.n, gemm.k, element_wise=True,
                         batch_shape=gemm.batch_shape))


def smem_bytes(gemm, tile, loaders=None):
    """Dynamic shared memory of the kernel: ``stages`` stages of A and B
    (brought by ``loaders``, else by operand_loaders)."""
    a, b = loaders or operand_loaders(gemm, tile)
    return tile.stages * (a.bytes + b.bytes)


def check(gemm, tile, loaders=None):
    """Raise NotSupported unless tc-sm80 with ``tile`` computes ``gemm``
    (its operands brought by ``loaders``, else by operand_loaders)."""
    element = gemm.element
    if element not in ("bf16", "f16", "f32"):
        raise NotSupported(f"{element} operands: expected bf16, f16, or f32 as tf32")
    if element == "f32" and gemm.compute != "tf32":
        raise NotSupported("f32 operands with f32 compute: mma.sync multiplies f32 only as "
                           "tf32 (compute_data_type='tf32')")
    for name, operand in (("A", gemm.a), ("B", gemm.b)):
        if operand.prologue is not None:
            raise NotSupported(f"a prologue on {name} ({operand.stored} -> {element}): "
                               "tc-sm80 applies none")
    if tile.splits < 1:
        raise NotSupported(f"K split {tile.splits} ways: expected at least 1")
    if gemm.epilogue.amax:
        raise NotSupported("an amax beside the epilogue: tc-sm80's epilogue takes none")
    if tile.warps not in (1, 2, 4, 8) or tile.stages < 2:
        raise NotSupported(f"{tile.warps} warps, {tile.stages} stages: expected 1, 2, 4 or 8 "
                           "warps and at least 2 stages")
    if tile.m % tile.warps_m or tile.n % tile.warps_n or tile.warp_m % 16 \
            or tile.warp_n % 16:
        raise NotSupported(f"tile {tile.m}x{tile.n} over {tile.warps_m}x{tile.warps_n} warps: "
                           "expected warp tiles of multiples of 16 x 16")
    accumulators = tile.warp_m * tile.warp_n // WARP
    if accumulators > MAX_ACCUMULATORS:
        raise NotSupported(f"warp tile {tile.warp_m}x{tile.warp_n}: {accumulators} accumulator "
                           f"registers a thread, expected at most {MAX_ACCUMULATORS}")
    # Making the loaders also checks each operand's layout (AsyncOperand).
    size = smem_bytes(gemm, tile, loaders)
    if size > MAX_SHARED:
        raise NotSupported(f"{tile.stages} stages need {size} bytes of shared memory, more "
                           f"than the {MAX_SHARED} a block may use")

class Kernel:
    """The tc-sm80 kernel of ``gemm`` in ``tile``s, replacing kernel function
    ``fn``'s body. ``loaders``: the (A, B) CopyLoaders, where they are not
    plain tiles of the operands (an implicit GEMM's: im2col.py)."""

    def __init__(self, fn, gemm, tile, loaders=None):
        self.fn, self.gemm, self.tile = fn, gemm, tile
        self.a, self.b = loaders or operand_loaders(gemm, tile)
        self.tf32 = gemm.element == "f32"
        self.steps = -(-gemm.k // tile.k)
        self.kk_steps = tile.k * self.a.eb // MMA_K_BYTES
        self.tiles_m = -(-gemm.m // tile.m)
        self.tiles_n = -(-gemm.n // tile.n)
        self.stage_bytes = self.a.bytes + self.b.bytes
        # An operand loaded through registers (loader.py: element-wise chunks).
        self.element_wise = getattr(self.a, "element_wise", False) or \
            getattr(self.b, "element_wise", False)
        # tf32 A stored M-contiguous (a filter gradient's dy, a transposed
        # matmul A): an m16 fragment's rows g and g + 8 are the tile's rows
        # 2g and 2g + 1, so that a0, a1 (and a2, a3) are adjacent words, one
        # 64-bit shared load, not two 32-bit ones; the accumulators' rows
        # follow (``row_of``), which the epilogue and split-K store by.
        self.paired_rows = self.tf32 and not self.a.k_major
        self.mt = tile.warp_m // 16      # m16 fragments per warp
        self.nt = tile.warp_n // 8       # n8 fragments per warp
        self.acc_type = ir.Type.parse("!llvm.struct<(f32, f32, f32, f32)>")
        self.arguments = list(irutil.body(fn).arguments)
        self.epilogue = Epilogue(self)
        self.splitk = SplitK(self)

    # -- host side ----------------------------------------------------------

    def build(self, erase=True):
        """Replace the kernel function's body: the launch, then erase the
        linalg ops the kernel computes (``erase`` False: the caller does,
        after more kernels of the same body: a data gradient's stride
        phases)."""
        body = irutil.body(self.fn)
        old = [op.operation for op in body.operations]
        with ir.InsertionPoint(old[-1]):
            self.splitk.allocate()
            blocks = self.tiles_m * self.tiles_n * self.gemm.batch * self.splitk.splits
            launch((blocks, 1), self.tile.threads, self.tile.stages * self.stage_bytes,
                   self.kernel)
            if self.splitk.split:
                self.splitk.reduce()
        # The linalg ops and their buffers go; views the launch reads (an
        # implicit GEMM's operands) stay.
        if erase:
            erase_replaced(old[:-1])

    def kernel(self):
        """The body of a block: the prologue, the mainloop, the epilogue."""
        tile = self.tile
        tid = gpu.thread_id(gpu.Dimension.x)
        warp, lane = arith.divui(tid, _idx(WARP)), arith.remui(tid, _idx(WARP))
        # Warps row-major over the warps_m x warps_n grid.
        wm0 = arith.muli(arith.divui(warp, _idx(tile.warps_n)), _idx(tile.warp_m))
        wn0 = arith.muli(arith.remui(warp, _idx(tile.warps_n)), _idx(tile.warp_n))
        batch, tile_m, tile_n, split = tile_of_block(self.tiles_m, self.tiles_n,
                                                     self.gemm.batch, self.splitk.splits)
        # This block's K steps: step0 .. step0 + count - 1 (step0 None: 0).
        step0, count = self.splitk.run(split)
        m0 = arith.muli(tile_m, _idx(tile.m))
        n0 = arith.muli(tile_n, _idx(tile.n))
        self.base = shared_base()
        plan_a = self.a.prepare(tid, tile.threads, batch, m0)
        plan_b = self.b.prepare(tid, tile.threads, batch, n0)
        ring = tile.stages * self.stage_bytes

        def load(kt, stage_offset):
            """Issue the copies of the block's K step ``kt`` (counted from
            its split's first); the shared stores of element-wise chunks
            still to issue (loader.py)."""
            stage = arith.addi(self.base, stage_offset)
            if step0 is not None:
                kt = arith.addi(step0, kt)
            k0 = arith.muli(kt, _idx(tile.k))
            pending = self.a.load(plan_a, stage, k0) or []
            return pending + (self.b.load(plan_b, _add(stage, self.a.bytes), k0) or [])

        def following(stage_offset):
            """The byte offset of the stage after ``stage_offset``'s, round
            the ring (a compare and a select: no remainder in the loop)."""
            step = _add(stage_offset, self.stage_bytes)
            return arith.select(_cmp("eq", step, _i(ring, 64)), _i(0, 64), step)

        # 1. Prologue: steps 0 .. stages-2, one commit group each; then wait
        # for step 0 and read its first K slice's fragments.
        def load_now(s):
            for store in load(_idx(s), _i(s * self.stage_bytes, 64)):
                store()

        for s in range(tile.stages - 1):
            if s < self.splitk.last:
                load_now(s)
            elif s < self.splitk.per_split:
                # Only the last split may run fewer steps than this.
                _if(_cmp("ult", _idx(s), count), lambda s=s: load_now(s))
            nvvm.CpAsyncCommitGroupOp()
        nvvm.CpAsyncWaitGroupOp(tile.stages - 2)
        if self.tf32:
            self._round_landed(self.base, plan_a, plan_b)
        gpu.barrier()
        offsets = self._fragment_offsets(lane, wm0, wn0)
        first = self._load_fragments(self.base, 0, offsets)

        # 2. Mainloop. The fragments are double-buffered in registers: the
        # mma.syncs of K slice kk are issued after the ldmatrix of slice kk+1,
        # so that they hide its latency; the last slice's wait and barrier
        # come before its mma.syncs and the first slice of the next stage is
        # read under them (and carried into the next iteration), so no warp
        # waits on shared memory after a barrier.
        accumulators = self.mt * self.nt
        zero = llvm.mlir_zero(self.acc_type)
        init = [zero] * accumulators + self._flat(first) + \
            [_i(0, 64), _i((tile.stages - 1) * self.stage_bytes, 64)]
        loop = scf.ForOp(_idx(0), count, _idx(1), init)
        with ir.InsertionPoint(loop.body):
            kt = loop.induction_variable
            carried = list(loop.inner_iter_args)
            accs = carried[:accumulators]
            frags = self._unflat(carried[accumulators:-2])
            read, write = carried[-2:]
            stage = arith.addi(self.base, read)
            read_next = following(read)

            def copy_ahead():
                """Step kt + stages-1 goes to the stage step kt-1 used: every
                warp read it before the last barrier. With an element-wise
                operand the loads are not under an scf.if (their stores
                come later, outside it): past the last step they reload
                the last one, into a stage no later step reads."""
                ahead = _add(kt, tile.stages - 1)
                if self.element_wise:
                    final = _idx(self.steps - 1) if step0 is None else \
                        arith.subi(count, _idx(1))
                    pending = load(arith.minui(ahead, final), write)
                else:
                    _if(_cmp("ult", ahead, count), lambda: load(ahead, write))
                    pending = []
                nvvm.CpAsyncCommitGroupOp()
                return pending

            pending = []
            for kk in range(self.kk_steps):
                if kk + 1 < self.kk_steps:
                    after = self._load_fragments(stage, kk + 1, offsets)
                    # The copies after the ldmatrix: ptxas keeps shared loads
                    # behind the cp.async before them (they may alias), and
                    # the mma.syncs would wait for the copies' issue.
                    if kk == 0:
                        pending = copy_ahead()
                else:
                    if kk == 0:   # one slice a stage: step kt+1 may be this copy
                        pending = copy_ahead()
                    # An element-wise chunk's loads had the step's mma.syncs to
                    # land under; its stores precede the barrier that makes
                    # them visible.
                    for store in pending:
                        store()
                    # Step kt+1 has landed (at most stages-2 groups, steps
                    # kt+2 .., in flight) and every thread's copies are
                    # visible. Past the last step this reads a stale stage,
                    # unused.
                    nvvm.CpAsyncWaitGroupOp(tile.stages - 2)
                    if self.tf32:
                        self._round_landed(arith.addi(self.base, read_next), plan_a, plan_b)
                    gpu.barrier()
                    after = self._load_fragments(arith.addi(self.base, read_next), 0, offsets)
                accs = self._mma(frags, accs)
                frags = after
            scf.YieldOp(accs + self._flat(frags) + [read_next, following(write)])
        nvvm.CpAsyncWaitGroupOp(0)

        # 3. Epilogue (split K: the partials, which a second launch sums).
        accs = list(loop.results)[:accumulators]
        if self.splitk.split:
            self.splitk.store(accs, lane, batch, arith.addi(m0, wm0), arith.addi(n0, wn0),
                              split)
        else:
            self.epilogue.apply(accs, lane, batch, arith.addi(m0, wm0), arith.addi(n0, wn0))

    def _round_landed(self, stage, plan_a, plan_b):
        """tf32: round this thread's chunks of the stage at ``stage`` (i64)
        to tf32 in place, between the wait that landed its copies (a
        thread sees its own completed cp.async writes) and the barrier
        that shows them to the other warps. Each element is rounded once,
        where rounding the fragments at every use cost each warp 32
        registers x 7 instructions a K slice of a 64 x 64 warp tile, and
        every warp of a row (column) of the grid rounded the same A (B).
        ptxas for sm_90a, the 3x3 128 -> 128 channel forward: the mainloop
        of 128x128x16 tiles (4 warps) went from 602 instructions to 427 for
        its 64 HMMA, of 256x128x32 (8 warps) from 1101 to 644 for 128.
        Past the last step the stage holds an old step's tf32 values, no
        copy in flight to it: rounding them again leaves them as they
        are."""
        i32 = ir.IntegerType.get_signless(32)
        for op, plan, first in ((self.a, plan_a, 0), (self.b, plan_b, self.a.bytes)):
            words = op.width // 4
            vec = ir.VectorType.get([words], i32)
            for dst, exists in op.slots(plan):
                def round_chunk(dst=dst, vec=vec, words=words):
                    ptr = llvm.inttoptr(_ptr(3), _add(arith.addi(stage, dst), first))
                    got = llvm.load(vec, ptr, alignment=op.width)
                    rounded = [_round_tf32(vector.extract(got, [], [j])) for j in range(words)]
                    llvm.store(vector.from_elements(vec, rounded), ptr, alignment=op.width)
                if exists is None:
                    round_chunk()
                else:
                    _if(exists, round_chunk)

    def _fragment_offsets(self, lane, wm0, wn0):
        """Per-lane byte offsets in a stage of the fragment reads."""
        g, t = arith.divui(lane, _idx(4)), arith.remui(lane, _idx(4))
        out = {"g": g, "t": t}
        for name, op, first in (("a", self.a, wm0), ("b", self.b, wn0)):
            if op.k_major or not self.tf32:
                out[name] = _i64(op.lane_offset(lane, first, name))
            elif name == "a":   # paired rows: 2g
                out[name] = _i64(op.scalar_offset(arith.muli(g, _idx(2)), t, first))
            else:
                out[name] = _i64(op.scalar_offset(g, t, first))
        return out

    def row_of(self, g, mt, h):
        """The row in the warp tile of accumulator registers 2h, 2h + 1 of
        m16 fragment ``mt`` for lane group ``g`` (index): 16 mt + g + 8 h,
        or 16 mt + 2g + h where A's rows are paired (``paired_rows``)."""
        if self.paired_rows:
            return _add(arith.muli(g, _idx(2)), 16 * mt + h)
        return _add(g, 16 * mt + 8 * h)

    def _a_fragment(self, stage, kk, mt, offsets):
        a = self.a
        if a.k_major or not self.tf32:
            return a.ldmatrix(stage, offsets["a"], kk, mt)
        # tf32 from [BK][BM]: a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4),
        # fragment rows g and g+8 the tile's 2g and 2g+1 (paired_rows).
        line = kk * (MMA_K_BYTES // 4)
        return [word for j in range(2)
                for word in a.pair(stage, offsets["a"], (line + 4 * j) * a.pitch + 16 * mt * 4)]

    def _b_fragments(self, stage, kk, pair, offsets):
        """(b0, b1) of the 8-column B tiles 2 pair and 2 pair + 1."""
        b = self.b
        stage = _add(stage, self.a.bytes)   # B's tile follows A's in a stage
        if b.k_major or not self.tf32:
            r = b.ldmatrix(stage, offsets["b"], kk, pair)
            return [(r[0], r[1]), (r[2], r[3])]
        # tf32 from [BK][BN]: b0 (k t, column g), b1 (k t + 4, column g).
        line = kk * (MMA_K_BYTES // 4)
        return [tuple(b.scalar(stage, offsets["b"], (line + 4 * j) * b.pitch
                               + (16 * pair + 8 * half) * 4) for j in range(2))
                for half in range(2)]

    def _load_fragments(self, stage, kk, offsets):
        """The fragments of K slice ``kk`` of the stage at ``stage``: (A's,
        WM / 16 lists of 4 i32; B's, WN / 8 pairs of i32), as loaded."""
        a_frags = [self._a_fragment(stage, kk, mt, offsets) for mt in range(self.mt)]
        b_frags = []
        for pair in range(self.nt // 2):
            b_frags += self._b_fragments(stage, kk, pair, offsets)
        return a_frags, b_frags

    def _flat(self, frags):
        a_frags, b_frags = frags
        return [r for f in a_frags for r in f] + [r for f in b_frags for r in f]

    def _unflat(self, values):
        a_values, b_values = values[:4 * self.mt], values[4 * self.mt:]
        return ([a_values[4 * i:4 * i + 4] for i in range(self.mt)],
                [tuple(b_values[2 * i:2 * i + 2]) for i in range(self.nt)])

    def _mma(self, frags, accs):
        """The mma.syncs of one K slice's fragments; new accumulators."""
        a_frags, b_frags = frags
        element = self.gemm.element
        # (tf32 fragments come from stages rounded as they land: _round_landed.)
        if element == "f16":  # f16 operands are vector<2xf16> registers
            half2 = ir.VectorType.get([2], ir.F16Type.get())
            a_frags = [[llvm.bitcast(half2, r) for r in f] for f in a_frags]
            b_frags = [tuple(llvm.bitcast(half2, r) for r in f) for f in b_frags]
        ptx = "tf32" if self.tf32 else element
        shape = "#nvvm.shape<m = 16, n = 8, k = 8>" if self.tf32 else \
            "#nvvm.shape<m = 16, n = 8, k = 16>"
        f32 = ir.F32Type.get()
        out = list(accs)
        for mt in range(self.mt):
            # Serpentine order: a row of mma.syncs starts with the B fragment
            # the previous row ended with, so consecutive mma.syncs share an
            # operand register (the operand reuse cache keeps it).
            for nt in (range(self.nt) if mt % 2 == 0 else reversed(range(self.nt))):
                acc = out[mt * self.nt + nt]
                c = [llvm.extractvalue(f32, acc, ir.DenseI64ArrayAttr.get([j]))
                     for j in range(4)]
                out[mt * self.nt + nt] = nvvm.MmaOp(
                    self.acc_type, ir.Attribute.parse(shape),
                    ir.Attribute.parse("#nvvm.mma_layout<row>"),
                    ir.Attribute.parse("#nvvm.mma_layout<col>"),
                    a_frags[mt], list(b_frags[nt]), c,
                    multiplicandAPtxType=ir.Attribute.parse(f"#nvvm.mma_type<{ptx}>"),
                    multiplicandBPtxType=ir.Attribute.parse(f"#nvvm.mma_type<{ptx}>")).result
        return out
