"""tc-sm90's epilogue: the fused pointwise chain evaluated on each
accumulator where it lies, and the stores of its outputs.

Thread t of a consumer holds, for each 8 columns j of its 64 x BN slice, the
pairs (row, col), (row, col + 1) and (row + 8, col), (row + 8, col + 1) with
row = 16 * warp + lane / 4 and col = 8 * j + 2 * (lane % 4) (the wgmma
accumulator layout). Bias, residual and other operands are loaded at the
same coordinates through their broadcast maps, the fused pointwise chain
runs in f32 registers (``PairEpilogue``,
dnnc/codegen/gpu/tensorcore/pair_epilogue.py). They are read while the last
K step's wgmmas run (``inputs``, called by the consumer before its last
wait); where an input varies along the rows (a residual: a register for
every two accumulators), a staged epilogue reads its first column slice's
then, and each next slice's while it evaluates one (AHEAD_REGISTERS), so
that a 64 x 256 slice of the tile does not spill.

The outputs go through shared memory where slots fit beside the ring
(``_staging``, ``staged``): each consumer warp writes its 16 rows of a
128-byte column slice into a slot in TMA's swizzled layout, and one lane
stores it with a TMA store (``cp.async.bulk.tensor`` shared to global),
which runs while the warp goes on to the next slice and the next tile's K
steps; an output whose rows TMA cannot store (an odd row length) is read
back from the slot by the warp and stored along its rows, 32 consecutive
elements an instruction (``store_rows``). Without room (a prologue's
converted tiles), for an output of another type, or for a stride phase's
rows (dx's pixels s apart, addressed through pixel views:
tensorcore/phases.py), the epilogue stores from registers (``apply``): 16
bytes a thread where the rows allow
(``PairEpilogue.store_quad``), else pairs or elements. Rows and columns past
M and N are computed on TMA's zero fill and not stored (TMA clips them).
"""

from mlir import ir
from mlir.dialects import arith, llvm, memref, nvvm, vector

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.tensorcore.emit import (
    cmp as _cmp, i as _i, idx as _idx, if_ as _if, launder, shared_ptr as _shared_ptr,
    to_i32 as _to_i32, to_i64 as _to_i64,
)
from dnnc.codegen.gpu.tensorcore.pair_epilogue import (
    PairEpilogue, at, quad_transpose, vector_ok,
)
from dnnc.codegen.gpu.tensorcore.sm90.amax import Amax
from dnnc.codegen.gpu.tensorcore.sm90.support import (
    SMEM_LIMIT, WARPGROUP, misaligned, smem_bytes,
)
from dnnc.codegen.gpu.tensorcore.sm90.tma import SWIZZLE, swizzled_offset, tma_descriptor

# The staged epilogue (Epilogue.staged): a consumer warp's 16 rows of a
# 128-byte-wide column slice of the tile go through a shared slot of
# STAGE_ROWS x 128 bytes, laid out as TMA's 128-byte swizzle lays them.
STAGE_ROWS = 16
SLOT_BYTES = STAGE_ROWS * SWIZZLE
# Output types a TMA store takes from a staged slot.
STAGED_TYPES = ("bf16", "f16", "f32", "f8E4M3FN", "f8E5M2")
# The staged epilogue reads the next column slice's residual-like inputs
# while it evaluates one where a slice's take at most this many registers a
# thread (one bf16 or f32 input; two would spill beside the accumulators).
AHEAD_REGISTERS = 16


def stage_problem(buffer):
    """Why the epilogue cannot stage output ``buffer`` (C's [batch,] M x N)
    in shared memory, or None: a type of 1, 2 or 4 bytes, contiguous rows."""
    t = ir.MemRefType(buffer.type)
    if str(t.element_type) not in STAGED_TYPES:
        return f"a {t.element_type} output (staged tiles take {', '.join(STAGED_TYPES)})"
    _, strides, _ = irutil.memref_geometry(t)
    if strides[-1] != 1:
        return f"its rows are strided by {strides[-1]} elements"
    return None


def store_problem(buffer):
    """Why TMA cannot store a staged slot into output ``buffer`` (one
    stage_problem passes), or None: rows a multiple of 16 bytes apart, a
    16-byte aligned start."""
    t = ir.MemRefType(buffer.type)
    eb = irutil.element_bytes(t.element_type)
    broken = misaligned(*irutil.memref_geometry(t), eb)
    if broken and broken[0] == "stride" and broken[1] == t.rank - 2:
        return (f"its rows are {broken[2]} bytes apart: TMA needs a multiple of 16 "
                f"(N a multiple of {16 // eb})")
    if broken and broken[0] == "stride":
        return f"its batches are {broken[2]} bytes apart: TMA needs a multiple of 16"
    shape, strides, _ = irutil.memref_geometry(t)
    if t.rank == 3 and shape[0] > 1 and strides[0] < strides[1] * shape[1]:
        # (A grouped convolution's output: group g is channels g·N onward
        # of each pixel's row.) The store descriptors take batches outermost.
        return "its batches interleave its rows (batch stride " \
            f"{strides[0]}, rows {strides[1]} elements apart)"
    if broken:
        return f"it starts {broken[1]} bytes into its buffer: TMA needs 16-byte alignment"
    return None


class Epilogue:
    """The epilogue of ``kernel`` (kernel.Kernel): decides at construction
    how the outputs are stored (staged in shared memory and stored by TMA,
    staged and stored by the warps, or from registers), makes the TMA store
    descriptors on the host side (``make_descriptors``), and on the device
    side reads its inputs (``inputs``), evaluates and stores a unit's
    accumulator (``apply``), and waits for its last stores (``finish``)."""

    def __init__(self, kernel):
        k = self.k = kernel
        gemm, tile = k.gemm, k.tile
        self.pair = PairEpilogue(gemm, k.arguments, full_m=gemm.m % tile.m == 0,
                                 full_n=gemm.n % tile.n == 0, transposed=k.c_transposed)
        # The staged epilogue's shared slots, after the ring and the
        # converted tiles: ``slots`` a consumer warp (0: stored from
        # registers), and what the plan says of it.
        self.slots, self.by_tma, self.note = self._staging()
        self.staging_offset = k.ring_bytes + k.converted
        self.staging_bytes = self.slots * (tile.m // STAGE_ROWS) * SLOT_BYTES
        self.out_descriptors = []
        # The amax outputs taken beside the chain (amax.py).
        self.amax = Amax(k)

    def make_descriptors(self):
        """Host side: the TMA descriptors of the stored outputs, when TMA
        stores the staged slots."""
        if self.by_tma:
            box = [1] * (self.pair.rank - 2) + [STAGE_ROWS, SWIZZLE // self.out_bytes()]
            self.out_descriptors = [tma_descriptor(b, box) for b in self.pair.stored]

    def finish(self, local):
        """After a consumer's last unit: the last TMA stores are done
        (written, not just read) before the block's shared memory goes."""
        if self.by_tma:
            _if(_cmp("eq", arith.remui(local, _idx(32)), _idx(0)),
                lambda: nvvm.CpAsyncBulkWaitGroupOp(0))

    def _staging(self):
        """(slots, by_tma, note): the shared slots each consumer warp stages
        its output tiles in, and whether TMA stores them. TMA: a set of one
        slot a stored output for each column slice of the tile that fits
        beside the ring (a warp writes the next slices while TMA reads the
        last). Outputs TMA cannot store (rows of an odd length): one set,
        which the warp reads back and stores along rows. 0 when the epilogue
        stores from registers, with why (None where split-K's own stores
        run: its partials and sums store from registers)."""
        k = self.k
        stored = self.pair.stored
        if k.scheduler.splits > 1 or not stored:
            return 0, False, None
        registers = "the epilogue stores from registers"
        if k.c_transposed:
            return 0, False, f"{registers}, element by element down C's columns"
        for buffer in stored:
            problem = stage_problem(buffer)
            if problem is not None:
                return 0, False, f"{registers} ({problem})"
        if any(b in self.pair.pixels for b in stored):
            # A stride phase's rows are dx's pixels s apart (phases.py): a
            # TMA box of consecutive rows does not hold them, and a warp's
            # 16-byte stores from registers (8 rows x 64 bytes an
            # instruction) write them in fewer instructions than the warp's
            # stores of a staged slot (one row's 64 bytes).
            return 0, False, f"{registers} (its rows are the pixels of a stride phase)"
        problems = [p for p in map(store_problem, stored) if p is not None]
        widths = {irutil.element_bytes(ir.MemRefType(b.type).element_type) for b in stored}
        if len(widths) > 1:
            return 0, False, (f"{registers} (outputs of "
                              f"{' and '.join(map(str, sorted(widths)))} bytes)")
        eb = widths.pop()
        if k.tile.n * eb < SWIZZLE:
            # (fp8 in a tile 64 columns wide: half a slot row.)
            return 0, False, (f"{registers} ({k.tile.n} columns of {eb}-byte outputs fill "
                              f"less than a {SWIZZLE}-byte slot row)")
        free = SMEM_LIMIT - smem_bytes(k.tile, k.element, k.sources)
        per_set = len(stored) * (k.tile.m // STAGE_ROWS) * SLOT_BYTES
        slices = k.tile.n * eb // SWIZZLE
        sets = min(1 if problems else slices, free // per_set)
        if sets == 0:
            return 0, False, (f"{registers} (its slots need {per_set} bytes of shared memory; "
                              f"the ring leaves {free})")
        if problems:
            return sets * len(stored), False, (
                "the output tiles are staged in shared memory and each warp stores its rows "
                f"(TMA cannot: {problems[0]})")
        return sets * len(stored), True, ("the output tiles are stored by TMA from shared "
                                          f"memory ({sets} of {slices} column slices in flight)")

    def origin(self, consumer, local, tile_m, tile_n):
        """(row, col) of a consumer thread's first accumulator pair in C."""
        k = self.k
        tile = k.tile
        warp = arith.divui(local, _idx(32))
        lane = arith.remui(local, _idx(32))
        row0 = arith.addi(arith.muli(tile_m, _idx(tile.m)),
                          arith.addi(arith.muli(consumer, _idx(64)),
                                     arith.addi(arith.muli(warp, _idx(16)),
                                                arith.divui(lane, _idx(4)))))
        col0 = arith.addi(arith.muli(tile_n, _idx(tile.n)),
                          arith.muli(arith.remui(lane, _idx(4)), _idx(2)))
        return row0, col0

    def rows(self, row0, h):
        """(row, row_ok or None, a row index safe to read) of a thread's half
        ``h`` (rows row0 and row0 + 8)."""
        row = arith.addi(row0, _idx(8 * h)) if h else row0
        return (row, *self.pair.row_guard(row))

    def inputs(self, consumer, local, batch, tile_m, tile_n, groups=None):
        """{(h, j): {buffer: pair}} of the epilogue inputs a thread reads as
        aligned pairs (PairEpilogue.load_pairs) at its accumulator positions,
        for the 8-column groups j in ``groups`` (a range starting at a
        multiple of 4; None: every group of the tile), or None when N is odd
        or the kernel computes Cᵀ (then evaluate reads scalars where they are
        used)."""
        k = self.k
        tile, gemm = k.tile, k.gemm
        if not self.pair.pairs:
            return None
        groups = range(tile.n // 8) if groups is None else groups
        row0, col0 = self.origin(consumer, local, tile_m, tile_n)
        along_rows = {}   # (buffer, j) -> pair: inputs the same in every row (a bias)
        quads = self.quad_inputs()
        out = {}
        for h in range(2):
            _, _, row_safe = self.rows(row0, h)
            for j in groups:
                col = arith.addi(col0, _idx(8 * j)) if j else col0
                pair_safe = col if gemm.n % tile.n == 0 else arith.minui(col, _idx(gemm.n - 2))
                out[(h, j)] = self.pair.load_pairs(self.pair.point(batch, row_safe, pair_safe),
                                                   along_rows, j, [b for b, _ in quads])
            if quads:
                self.load_quads(quads, out, h, batch, row_safe, tile_n, local,
                                 range(groups.start // 4, -(-groups.stop // 4)))
        return out

    def inputs_along_rows(self):
        """Whether an epilogue input read as pairs varies along C's rows (a
        residual: a register for every two of the accumulator's)."""
        return self.row_input_registers(1) > 0

    def row_input_registers(self, groups):
        """The registers a thread's values of the inputs that vary along C's
        rows take over ``groups`` 8-column groups (both halves)."""
        return sum(groups * 2 * 2 * irutil.element_bytes(ir.MemRefType(b.type).element_type)
                   for b, exprs in self.pair.along_columns
                   if self.pair.rank - 2 in exprs) // 4

    def quad_inputs(self):
        """[(buffer, exprs)] of the epilogue inputs read 16 bytes a thread
        (_load_quads): 2-byte inputs that vary along C's rows and columns (a
        residual), with rows of a multiple of 8 elements; a row-constant
        input (a bias) is read once per thread anyway."""
        k = self.k
        if k.c_transposed:
            return []
        rank = self.pair.rank
        return [(b, e) for b, e in self.pair.along_columns
                if rank - 2 in e and ir.MemRefType(b.type).shape[-1] % 8 == 0
                and vector_ok(self.pair.pixels, b, 8)
                and irutil.element_bytes(ir.MemRefType(b.type).element_type) == 2]

    def load_quads(self, quads, out, h, batch, row_safe, tile_n, local, spans):
        """Read ``quads``' values at a thread's accumulator pairs of half
        ``h`` into ``out[(h, j)]`` (j in 4 g .. 4 g + 3 for g in ``spans``,
        the tile's spans of 32 columns): per 32 columns, thread q of a quad loads
        the 8 columns 8 q .. 8 q + 7 of its row with one 16-byte load, and
        quad_transpose hands each thread its pairs (columns 8 i + 2 q, i =
        0..3): a warp reads 8 rows x 64 contiguous bytes an instruction
        instead of 8 rows x 4 bytes. The inverse of PairEpilogue.store_quad."""
        k = self.k
        tile, gemm = k.tile, k.gemm
        i32 = ir.IntegerType.get_signless(32)
        lane = arith.remui(local, _idx(4))
        for g in spans:
            first = arith.addi(arith.muli(tile_n, _idx(tile.n)),
                               arith.addi(_idx(32 * g), arith.muli(lane, _idx(8))))
            # A group past N reads the row's last 8 columns (N is a multiple
            # of 8), which the epilogue does not store.
            safe = first if gemm.n % tile.n == 0 else arith.minui(first, _idx(gemm.n - 8))
            point = self.pair.point(batch, row_safe, safe)
            for buffer, exprs in quads:
                element = ir.MemRefType(buffer.type).element_type
                vec = vector.load(ir.VectorType.get([8], element), *at(
                    self.pair.pixels, buffer,
                    [point[d] if d is not None else _idx(0) for d in exprs]), alignment=16)
                words = vector.bitcast(ir.VectorType.get([4], i32), vec)
                words = quad_transpose([vector.extract(words, [], [i]) for i in range(4)], lane)
                for i in range(4):
                    pair = vector.bitcast(ir.VectorType.get([2], element),
                                          vector.from_elements(ir.VectorType.get([1], i32),
                                                               [words[i]]))
                    out[(h, 4 * g + i)][buffer] = [vector.extract(pair, [], [e])
                                                   for e in range(2)]

    def pair_values(self, acc, batch, row_safe, col, h, j, loaded, row_ok=None):
        """evaluate's results ({buffer: value}) at the thread's accumulator
        pair (``h``, ``j``): columns ``col`` and ``col`` + 1 of its row (read
        at ``row_safe``, columns clamped into N); the amax outputs take them
        where they lie inside C (``row_ok``: the row inside M, None where
        every row is)."""
        k = self.k
        full_n = k.gemm.n % k.tile.n == 0
        values = []
        for e in range(2):
            c = arith.addi(col, _idx(e)) if e else col
            c_safe = c if full_n else arith.minui(c, _idx(k.gemm.n - 1))
            v = llvm.extractvalue(ir.F32Type.get(), acc,
                                  ir.DenseI64ArrayAttr.get([4 * j + 2 * h + e]))
            values.append(self.pair.evaluate(
                v, self.pair.point(batch, row_safe, c_safe),
                {b: pair[e] for b, pair in loaded.items()}))
        self.amax.take(values, col, row_ok)
        return values

    def apply(self, acc, consumer, local, batch, tile_m, tile_n, inputs):
        self.amax.begin()
        if self.slots:
            self.staged(acc, consumer, local, batch, tile_m, tile_n, inputs)
        else:
            self.from_registers(acc, consumer, local, batch, tile_m, tile_n, inputs)
        self.amax.flush(local)

    def from_registers(self, acc, consumer, local, batch, tile_m, tile_n, inputs):
        """The epilogue stored from registers (no slots): pairs, or 16 bytes
        a thread where the outputs allow."""
        k = self.k
        tile, gemm = k.tile, k.gemm
        row0, col0 = self.origin(consumer, local, tile_m, tile_n)
        full_n = gemm.n % tile.n == 0
        # 16-byte stores where the outputs allow (PairEpilogue.store_quad).
        wide = self.pair.quads()
        lane = arith.remui(local, _idx(4))
        for h in range(2):
            row, row_ok, row_safe = self.rows(row0, h)
            group = []
            for j in range(tile.n // 8):
                col = arith.addi(col0, _idx(8 * j)) if j else col0
                loaded = inputs[(h, j)] if inputs is not None else {}
                values = self.pair_values(acc, batch, row_safe, col, h, j, loaded, row_ok)
                if not wide:
                    self.pair.store(values, batch, row, col, row_ok)
                    continue
                group.append(values)
                if len(group) == 4:
                    first = arith.addi(arith.muli(tile_n, _idx(tile.n)),
                                       arith.addi(_idx(8 * (j - 3)), arith.muli(lane, _idx(8))))
                    self.pair.store_quad(group, batch, row, first, lane, row_ok, full_n)
                    group = []

    def out_bytes(self):
        """Bytes of an element of the stored outputs (one width when staged)."""
        return irutil.element_bytes(ir.MemRefType(self.pair.stored[0].type).element_type)

    def slice_groups(self):
        """The accumulator's 8-column groups in a staged column slice (a
        128-byte row of the slot: 8 for 16-bit outputs, 4 for f32, 16 for fp8)."""
        return SWIZZLE // self.out_bytes() // 8

    def staged(self, acc, consumer, local, batch, tile_m, tile_n, inputs):
        """The epilogue through shared memory, stored by TMA.

        Each consumer warp owns 16 rows of the tile (rows 16 w .. 16 w + 15
        of its consumer's 64). For each column slice of 128 bytes (64
        columns of a 16-bit output, 32 of f32) it evaluates its pairs there,
        writes them into its slot (one per stored output) in the layout of
        TMA's 128-byte swizzle (``_swizzled``), so that the 8 rows a store
        instruction writes (lane / 4) fall in 8 different chunks, every bank
        once. Then each
        lane fences its writes for the async proxy, the warp synchronizes,
        and lane 0 stores the slot with one TMA store per output (rows past
        M and columns past N are clipped by TMA) and commits them as one
        bulk group. The warp goes on to the next slice, and after the last
        to the next tile's K steps, while TMA reads and writes.

        A slot is written again only after TMA has read it: slice s uses
        set s % sets, and lane 0 first waits (cp.async.bulk.wait_group.read)
        until at most sets - 1 of its bulk groups are pending, at a tile's
        first slice until none is (the set the last tile ended on is not
        known). The block's last stores are waited for in full before it
        exits (``finish``).

        Where TMA cannot store the output (``by_tma`` False: rows of an odd
        length), the warp synchronizes after writing the slot and stores it
        along its rows itself (_store_rows); one set of slots is enough."""
        k = self.k
        tile = k.tile
        base = k.base
        if k.block_scaling is not None:
            # A block-scaled mainloop needs its registers for the sum and
            # its temporaries: the slots' addresses are made here, each
            # tile, not hoisted out of the tile loop and kept in registers
            # across the mainloop.
            base = launder(base)
        stored = self.pair.stored
        eb = self.out_bytes()
        cols = SWIZZLE // eb                  # columns of a slot row
        groups = self.slice_groups()         # accumulator column groups (8 wide) a slot holds
        warp = arith.divui(local, _idx(32))
        lane = arith.remui(local, _idx(32))
        first_lane = _cmp("eq", lane, _idx(0))
        quad = arith.divui(lane, _idx(4))     # the thread's row within 8
        pair_byte = arith.muli(arith.remui(lane, _idx(4)), _idx(2 * eb))
        # The thread's pair in a group of 8 columns: chunk pair_byte >> 4
        # of the group's (whose first chunk is even for f32: no carry), byte
        # pair_byte & 15 within it; for 1-byte outputs a group is half a
        # chunk, odd groups its second half (8 bytes on, no carry: pair_byte
        # is below 8).
        pair_chunk = arith.shrui(pair_byte, _idx(4))
        within = arith.andi(pair_byte, _idx(15))
        warp_index = arith.addi(arith.muli(consumer, _idx(WARPGROUP // 32)), warp)
        slots = arith.addi(base, arith.addi(
            _i(self.staging_offset, 64),
            arith.muli(_to_i64(warp_index), _i(self.slots * SLOT_BYTES, 64))))
        row0, col0 = self.origin(consumer, local, tile_m, tile_n)
        warp_row = arith.addi(arith.muli(tile_m, _idx(tile.m)),
                              arith.addi(arith.muli(consumer, _idx(64)),
                                         arith.muli(warp, _idx(STAGE_ROWS))))
        first_row = _to_i32(warp_row)
        first_col = arith.muli(tile_n, _idx(tile.n))
        sets = self.slots // len(stored)
        # An fp8 pair goes to the slot as its bytes (LLVM has no fp8 type:
        # dnn-expand-fp8 makes the conversions integer code).
        bits = {b: ir.IntegerType.get_signless(8) if eb == 1 else None for b in stored}
        vec = {b: ir.VectorType.get([2], bits[b] or ir.MemRefType(b.type).element_type)
               for b in stored}
        slices = tile.n // cols
        # Inputs read a slice at a time (see mainloop.Consumer) load a slice ahead,
        # while this one is evaluated, where a slice's take few registers.
        ahead = 1 if self.row_input_registers(groups) <= AHEAD_REGISTERS else 0
        for s in range(slices):
            later = s + ahead
            if inputs is not None and later < slices and (0, later * groups) not in inputs:
                inputs.update(self.inputs(
                    consumer, local, batch, tile_m, tile_n,
                    range(later * groups, (later + 1) * groups)))
            if self.by_tma:
                keep = min(s, sets - 1)
                _if(first_lane, lambda keep=keep: nvvm.CpAsyncBulkWaitGroupOp(keep, read=True))
            nvvm.SyncWarpOp(_i(-1))
            set_ = (s % sets) * len(stored)
            for h in range(2):
                _, row_ok, row_safe = self.rows(row0, h)
                row = arith.addi(quad, _idx(8 * h)) if h else quad
                for g in range(groups):
                    j = s * groups + g
                    col = arith.addi(col0, _idx(8 * j)) if j else col0
                    loaded = inputs[(h, j)] if inputs is not None else {}
                    values = self.pair_values(acc, batch, row_safe, col, h, j, loaded, row_ok)
                    chunk = arith.addi(pair_chunk, _idx(8 * g * eb // 16))
                    half = (8 * g * eb) % 16
                    byte = arith.addi(within, _idx(half)) if half else within
                    offset = _to_i64(swizzled_offset(row, chunk, byte))
                    for i, buffer in enumerate(stored):
                        at = _i((set_ + i) * SLOT_BYTES, 64)
                        address = arith.addi(slots, arith.addi(at, offset))
                        pair = [values[0][buffer], values[1][buffer]]
                        if bits[buffer] is not None:
                            pair = [arith.bitcast(bits[buffer], v) for v in pair]
                        pair = vector.from_elements(vec[buffer], pair)
                        llvm.store(pair, _shared_ptr(address), alignment=2 * eb)
            if not self.by_tma:
                nvvm.SyncWarpOp(_i(-1))
                for i, buffer in enumerate(stored):
                    self.store_rows(buffer, arith.addi(slots, _i((set_ + i) * SLOT_BYTES, 64)),
                                     lane, batch, warp_row,
                                     arith.addi(first_col, _idx(s * cols)))
                continue
            llvm.inline_asm(None, [], "fence.proxy.async.shared::cta;", "",
                            has_side_effects=True)
            nvvm.SyncWarpOp(_i(-1))

            def store(s=s, set_=set_):
                col = _to_i32(arith.addi(first_col, _idx(s * cols)))
                coords = [col, first_row] + ([_to_i32(batch)] if self.pair.rank == 3 else [])
                for i, descriptor in enumerate(self.out_descriptors):
                    src = arith.addi(slots, _i((set_ + i) * SLOT_BYTES, 64))
                    nvvm.CpAsyncBulkTensorSharedCTAToGlobalOp(descriptor, _shared_ptr(src),
                                                              coords)
                nvvm.CpAsyncBulkCommitGroupOp()
            _if(first_lane, store)

    def store_rows(self, buffer, slot, lane, batch, first_row, first_col):
        """A warp stores its slot (16 rows of one column slice, in the
        swizzled layout ``staged`` writes) into ``buffer`` along its
        rows: lane l reads columns l, l + 32... of each row and stores them,
        a warp instruction 32 consecutive elements of one row, whatever the
        row's alignment. Rows past M and columns past N are not stored."""
        k = self.k
        gemm = k.gemm
        element = ir.MemRefType(buffer.type).element_type
        eb = irutil.element_bytes(element)
        cols = SWIZZLE // eb
        lane_byte = arith.muli(lane, _idx(eb))
        lane_chunk = arith.shrui(lane_byte, _idx(4))
        lane_within = arith.andi(lane_byte, _idx(15))
        lead = [batch] if self.pair.rank == 3 else []
        for r in range(STAGE_ROWS):
            row = arith.addi(first_row, _idx(r)) if r else first_row
            row_ok = None if gemm.m % k.tile.m == 0 else _cmp("ult", row, _idx(gemm.m))
            for i in range(cols // 32):
                # Column lane + 32 i: chunk lane_chunk + 32 i eb / 16 of row r.
                chunk = arith.addi(lane_chunk, _idx(32 * i * eb // 16))
                address = arith.addi(slot, _to_i64(swizzled_offset(r, chunk, lane_within)))
                if eb == 1:  # fp8 read as its byte (LLVM has no fp8 type)
                    value = arith.bitcast(element, llvm.load(ir.IntegerType.get_signless(8),
                                                             _shared_ptr(address)))
                else:
                    value = llvm.load(element, _shared_ptr(address))
                col = arith.addi(first_col, arith.addi(lane, _idx(32 * i)))
                ok = _cmp("ult", col, _idx(gemm.n))
                if row_ok is not None:
                    ok = arith.andi(ok, row_ok)
                _if(ok, lambda value=value, row=row, col=col:
                    memref.store(value, *at(self.pair.pixels, buffer, lead + [row, col])))