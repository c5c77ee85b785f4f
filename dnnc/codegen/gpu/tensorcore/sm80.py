"""The tc-sm80 strategy: a GEMM on Ampere tensor cores (mma.sync), fed by
cp.async through a multi-stage shared-memory ring, with the epilogue fused
in registers. It runs on sm_80 and later (sm_90a takes it where tc-sm90
does not: strides TMA cannot describe, such as rows of A or B that are not
a multiple of 16 bytes).

One block per ``BM x BN`` output tile (over every batch), numbered in
grouped order (GROUP_M tiles of M down a column of N tiles, so the B columns
a group reads stay in L2), ``warps`` warps of 32 threads in a ``warps_m x
warps_n`` grid, each warp owning a ``WM x WN`` slice of the tile
(``Tile.warp_m`` / ``Tile.warp_n``: the squarest, 64 x 64 for 128 x 128
tiles and 4 warps, 128 x 256 or 256 x 128 and 8)::

    1. prologue   issue the cp.async copies of K steps 0 .. stages-2, one
                  commit group per step (an empty group past the last step
                  keeps the group count uniform); wait for step 0, barrier,
                  ldmatrix the fragments of its first K slice
    2. mainloop   for each K step kt, for each 16-element slice kk of K (8
                  for tf32), the fragments of slice kk in registers:
                    ldmatrix the fragments of slice kk+1 (A: WM / 16 x4
                    loads, B: WN / 16); at kk = 0, issue the copies of step
                    kt+stages-1 into the stage step kt-1 used, commit;
                    at the last slice instead: wait until at most stages-2
                    groups are in flight (step kt+1 has landed), barrier
                    (every thread's copies are visible, and every warp is
                    done reading step kt-1's stage), ldmatrix slice 0 of step
                    kt+1; then mma.sync slice kk (WM/16 x WN/8 of them, in
                    serpentine order)
    3. epilogue   wait for all groups; each accumulator pair goes through the
                  fused pointwise chain and is stored (pair_epilogue.py):
                  16 bytes a thread where the outputs allow (store_quad)

The fragments are double-buffered in registers so that no mma.sync waits
for the ldmatrix just before it: the loads of slice kk+1 are in flight
under the mma.syncs of slice kk, and a step's barrier falls before its last
slice's mma.syncs, so the first slice of the next stage is read under them
and a warp leaves the barrier with a slice of mma.syncs ready to issue. The
copies come after the ldmatrix of their slice in program order: ptxas does
not move a shared load above a cp.async (which writes shared memory).

**Operand loader** (``AsyncOperand``). A stage holds an operand's tile as it
lies in memory: K-major (rows of M or N, K contiguous: ``[R][BK]``) or
MN-major (rows of K, M or N contiguous: ``[BK][R]``). Each row is padded by
16 bytes; with a row of a multiple of 32 bytes the pitch is an odd number
of 16-byte units, so the 8 rows an ldmatrix reads (16 bytes each) fall in 8
distinct groups of 4 banks: no bank conflict, no swizzle to undo. Threads
copy the tile in chunks of ``width`` bytes (16: cp.async.cg; 8 or 4:
cp.async.ca, when a row stride or the base offset is not a multiple of 16
bytes), chunk c of thread t being number t + c * threads in row-major order
of the stage; when a line has fewer than 8 chunks of 16 bytes, a warp's 32
chunks are numbered down its lines instead, so that each 8 threads write 8
distinct lines (a bank-conflict-free wavefront at the odd pitch). A chunk
past M, N or K copies 0 bytes (cp.async's src-size) and the hardware fills
its destination with zeros, which the mma then multiplies harmlessly: any
M, N, K. Operands without a unit-stride K or M/N
dim, or whose rows are not 4-byte aligned (odd K or N of a 16-bit type),
are NotSupported.

**Fragments** (PTX ISA, mma.m16n8k16 / m16n8k8; g = lane / 4, t = lane % 4).
Per 32 bytes of K (16 bf16 / f16 or 8 tf32 elements):

    A  16 x 32 bytes: 4 registers, a0 (row g, bytes 4t..4t+3), a1 (row g+8),
       a2 (row g, bytes 16 + 4t..), a3 (row g+8, bytes 16 + 4t..)
    B  32 bytes x 8 columns: 2 registers, b0 (column g, K bytes 4t..), b1
       (column g, K bytes 16 + 4t..)
    C  16 x 8 f32: c0, c1 at (g, 2t), (g, 2t+1); c2, c3 at (g+8, 2t), (g+8, 2t+1)

``ldmatrix.x4`` loads four 8 x 16-byte matrices, lane l giving the address
of row l % 8 of matrix l / 8, and hands thread (g, t) the 4 bytes 4t..4t+3
of row g of each: exactly a0..a3 (matrices: rows 0-7 / 8-15 x bytes 0-15 /
16-31) and the b0, b1 of two adjacent 8-column B tiles. A K-major operand is
read as it is; an MN-major one (16-bit only) with ``.trans``, each matrix
being 8 rows of K by 8 columns. tf32 MN-major operands have no transposing
ldmatrix (it moves 16-bit elements): their fragments are read with scalar
shared loads, which the padded pitch also keeps free of conflicts (bank
= 4t + g). tf32 fragments are rounded to nearest even in registers, as the
linalg level rounds (the tensor cores would truncate).

**Epilogue.** Thread (g, t) of warp (wm, wn) holds, for each mt < WM/16 and
nt < WN/8, C at rows ``BM*tile_m + WM*wm + 16 mt + g (+ 8)`` and columns
``BN*tile_n + WN*wn + 8 nt + 2t (+ 1)``: pairs of adjacent columns, which
``PairEpilogue`` evaluates. Where every output has 2-byte elements, N is a
multiple of 8 and a warp tile has a multiple of 32 columns, the pairs of 4
adjacent n8 fragments are exchanged within each quad and every thread
stores 8 consecutive columns as one 16-byte vector (``store_quad``): a warp
instruction then writes whole 32-byte sectors, where a pair's 4-byte
stores leave each sector half written. Else each pair is stored as it lies.
"""

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, gpu, llvm, memref, nvvm, scf

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.tensorcore.pair_epilogue import PairEpilogue

WARP = 32
PAD = 16                 # bytes after each shared row: an odd pitch in 16-byte units
GROUP_M = 8              # tiles of M per group in the grouped (L2-friendly) order
MMA_K_BYTES = 32         # K bytes per mma: k16 of bf16 / f16, k8 of tf32
# Bytes of shared memory a block may use (opt-in): 227 KiB on sm_90; an
# sm_80 block gets 163 KiB, which the heuristics keep to (tc80_stages), and
# the runtime refuses a kernel that asks its device for more.
MAX_SHARED = 232448
MAX_ACCUMULATORS = 128   # f32 accumulator registers per thread


class NotSupported(Exception):
    """tc-sm80 does not take this GEMM; the message says why."""


@dataclass(frozen=True)
class Tile:
    m: int = 128
    n: int = 128
    k: int = 32
    stages: int = 4
    warps: int = 4

    @property
    def threads(self):
        return WARP * self.warps

    @property
    def warps_m(self):
        """Warps down M: of the grids whose warp tiles have 16 rows or more,
        the one whose warp tile reads the fewest fragments per K slice
        (warp_m / 16 ldmatrix of A, warp_n / 16 of B: the squarest tile),
        two on a tie, else the fewer. 8 warps of 128 x 256 are 2 x 4 of
        64 x 64, of 256 x 128 4 x 2 of 64 x 64; 4 warps of 128 x 128 2 x 2,
        of 64 x 128 2 x 2 of 32 x 64."""
        grids = [w for w in (1, 2, 4, 8) if self.warps % w == 0 and self.m // w >= 16
                 and self.n * w // self.warps >= 16]
        if not grids:
            return 1
        return min(grids, key=lambda w: (self.m // w + self.n * w // self.warps, w != 2, w))

    @property
    def warps_n(self):
        return self.warps // self.warps_m

    @property
    def warp_m(self):
        return self.m // self.warps_m

    @property
    def warp_n(self):
        return self.n // self.warps_n


def _element_bytes(element):
    return 4 if element == "f32" else 2


def _i(n, bits=32):
    return arith.constant(ir.IntegerType.get_signless(bits), int(n))


def _idx(n):
    return irutil.index(n)


def _i64(v):
    return arith.index_cast(ir.IntegerType.get_signless(64), v)


def _i32(v):
    return arith.index_cast(ir.IntegerType.get_signless(32), v)


def _ptr(space):
    return ir.Type.parse(f"!llvm.ptr<{space}>")


def _cmp(pred, a, b):
    return arith.cmpi(getattr(arith.CmpIPredicate, pred), a, b)


def _if(cond, build):
    op = scf.IfOp(cond, [], has_else=False)
    with ir.InsertionPoint(op.then_block):
        build()
        scf.YieldOp([])


def _add(v, n):
    """v + n (an index or i64 value), no op when n is 0."""
    if not n:
        return v
    const = _idx(n) if isinstance(v.type, ir.IndexType) else _i(n, 64)
    return arith.addi(v, const)


# ----------------------------------------------------------------------------
# Operand loader


class AsyncOperand:
    """How one GEMM operand goes from global memory to a stage of the ring
    (cp.async), and where its fragments are in the stage (see the module
    docstring). ``rows`` is BM (A) or BN (B)."""

    def __init__(self, name, operand, rows, tile, extent_mn, extent_k):
        self.name, self.operand = name, operand
        self.value = operand.value
        self.rows, self.bk = rows, tile.k
        self.eb = _element_bytes(operand.element)
        self.extent = {"mn": extent_mn, "k": extent_k}
        shape, strides, offset = irutil.memref_geometry(self.value.type)
        self.strides, self.offset = strides, offset
        self.k_major = operand.k_major
        inner = "k" if self.k_major else "mn"
        if strides[operand.dims[inner]] != 1:
            raise NotSupported(f"{name} has neither K nor {'M' if name == 'A' else 'N'} "
                               f"contiguous (strides {strides}): cp.async copies rows")
        self.inner = inner
        # The widest copy every row start and the base allow.
        steps = [s * self.eb for d, s in enumerate(strides) if d != operand.dims[inner]
                 and shape[d] > 1] + [offset * self.eb]
        self.width = next((w for w in (16, 8, 4) if all(x % w == 0 for x in steps)), None)
        if self.width is None:
            raise NotSupported(f"{name}'s rows start {min(x for x in steps if x % 4)} bytes "
                               "apart or in: cp.async copies at least 4 aligned bytes "
                               f"(an even {'K' if self.k_major else 'M or N'} for "
                               f"{operand.element})")
        # Shared layout: lines of `line_bytes` (+ PAD), `lines` of them.
        self.lines, line_bytes = (rows, self.bk * self.eb) if self.k_major else \
            (self.bk, rows * self.eb)
        if line_bytes % 32:
            raise NotSupported(f"{name}'s shared rows are {line_bytes} bytes: expected a "
                               "multiple of 32 (tile K a multiple of 16 elements, or 8 for tf32)")
        self.pitch = line_bytes + PAD
        self.bytes = self.lines * self.pitch
        self.per_line = line_bytes // self.width
        self.chunks = self.lines * self.per_line

    # -- global -> shared ---------------------------------------------------

    def prepare(self, tid, threads, batch, mn0):
        """Per-thread copy plan, before the mainloop: for each of its chunks,
        (shared byte offset in a stage, i64 global byte address at k = 0, row
        coordinate, column coordinate along the line, in-bounds check of the
        coordinate that does not move with K, chunk exists)."""
        dims, st = self.operand.dims, self.strides
        base = _i64(memref.extract_aligned_pointer_as_index(self.value))
        lead = self.offset
        if dims["batch"] is not None:
            lead_v = arith.muli(batch, _idx(st[dims["batch"]]))
        else:
            lead_v = _idx(0)
        elems = self.width // self.eb
        plan = []
        # A warp's 32 chunks cover 32 / per_line whole lines. With fewer than
        # 8 chunks of 16 bytes a line (64-byte K-major rows), numbering them
        # row-major puts two lines in each quarter warp (8 threads: one
        # 128-byte wavefront of shared stores), whose chunks collide in a bank
        # group (pitch 5 x 16 bytes: chunk 0 of line 0 and chunk 3 of line 1).
        # Numbered down the lines instead, a quarter warp writes one chunk of
        # 8 consecutive lines, distinct bank groups at an odd pitch; the warp
        # still reads the same whole rows of global memory.
        down = self.width == 16 and self.per_line < 8 and WARP % self.per_line == 0 \
            and self.chunks % WARP == 0
        lines_per_warp = WARP // self.per_line
        for c in range(-(-self.chunks // threads)):
            chunk = _add(tid, c * threads)
            if down:
                j = arith.remui(chunk, _idx(WARP))
                line = arith.addi(arith.muli(arith.divui(chunk, _idx(WARP)),
                                             _idx(lines_per_warp)),
                                  arith.remui(j, _idx(lines_per_warp)))
                col = arith.muli(arith.divui(j, _idx(lines_per_warp)), _idx(elems))
            else:
                line = arith.divui(chunk, _idx(self.per_line))
                col = arith.muli(arith.remui(chunk, _idx(self.per_line)), _idx(elems))
            # K-major: a line is a row of M/N at mn0 + line, its chunks run
            # along K; MN-major: a line is a row of K, chunks run along M/N
            # from mn0.
            dst = arith.addi(arith.muli(line, _idx(self.pitch)), arith.muli(col, _idx(self.eb)))
            if self.k_major:
                mn, along = arith.addi(mn0, line), col
            else:
                mn, along = arith.addi(mn0, col), line
            # Element offset of (batch, mn, k = the line's/chunk's own K part).
            elem = arith.addi(_add(lead_v, lead), arith.muli(mn, _idx(st[dims["mn"]])))
            elem = arith.addi(elem, arith.muli(along, _idx(st[dims["k"]])))
            address = arith.addi(base, arith.muli(_i64(elem), _i(self.eb, 64)))
            exists = None if self.chunks % threads == 0 or (c + 1) * threads <= self.chunks \
                else _cmp("ult", chunk, _idx(self.chunks))
            plan.append((_i64(dst), address, base, mn, along, exists))
        return plan

    def load(self, plan, stage_i64, k0):
        """Issue this thread's cp.async copies of K step ``k0`` (index: the
        first K element) into the stage at shared address ``stage_i64``."""
        k_step_bytes = arith.muli(_i64(k0), _i(self.strides[self.operand.dims["k"]] * self.eb,
                                               64))
        for dst, address, base, mn, along, exists in plan:
            k = arith.addi(k0, along)
            # Bytes that lie inside the operand: 0 past M/N or K; a chunk
            # that crosses the end of a line's contiguous dim copies its part.
            if self.k_major:
                left, other_ok = arith.subi(_idx(self.extent["k"]), k), \
                    _cmp("ult", mn, _idx(self.extent["mn"]))
            else:
                left, other_ok = arith.subi(_idx(self.extent["mn"]), mn), \
                    _cmp("ult", k, _idx(self.extent["k"]))
            left_bytes = arith.muli(left, _idx(self.eb))
            size = arith.maxsi(arith.minsi(left_bytes, _idx(self.width)), _idx(0))
            size = arith.select(other_ok, size, _idx(0))
            # Nothing to read: point at the operand's base (never dereferenced).
            src = arith.select(_cmp("sgt", size, _idx(0)),
                               arith.addi(address, k_step_bytes), base)
            dst_ptr = llvm.inttoptr(_ptr(3), arith.addi(stage_i64, dst))

            def copy(dst_ptr=dst_ptr, src=src, size=size):
                nvvm.CpAsyncOp(dst_ptr, llvm.inttoptr(_ptr(1), src), self.width,
                               ir.Attribute.parse("#nvvm<load_cache_modifier cg>"
                                                  if self.width == 16 else
                                                  "#nvvm<load_cache_modifier ca>"),
                               cpSize=_i32(size))
            if exists is None:
                copy()
            else:
                _if(exists, copy)

    # -- shared -> registers ------------------------------------------------

    def lane_offset(self, lane, first_row, fragment_rows):
        """Byte offset in a stage of the row this lane gives ldmatrix.x4 for
        the fragments at M/N row ``first_row`` (the warp's first), K slice 0.
        Matrix i = lane / 8 (row r = lane % 8) is, for A (``fragment_rows``
        = "a"), rows 8 (i % 2) of K bytes 16 (i / 2); for B ("b"), rows 8 (i
        / 2) (the second 8-column tile) of K bytes 16 (i % 2)."""
        i, r = arith.divui(lane, _idx(8)), arith.remui(lane, _idx(8))
        if fragment_rows == "a":
            mn_part, k_part = arith.remui(i, _idx(2)), arith.divui(i, _idx(2))
        else:
            mn_part, k_part = arith.divui(i, _idx(2)), arith.remui(i, _idx(2))
        if self.k_major:
            # [R][BK]: row = first + 8 mn_part + r, bytes 16 k_part along K.
            row = arith.addi(_idx(first_row) if isinstance(first_row, int) else first_row,
                             arith.addi(arith.muli(mn_part, _idx(8)), r))
            return arith.addi(arith.muli(row, _idx(self.pitch)), arith.muli(k_part, _idx(16)))
        # [BK][R] read with .trans: line (K) = 8 k_part + r, columns from
        # first + 8 mn_part.
        line = arith.addi(arith.muli(k_part, _idx(8)), r)
        column = arith.addi(first_row, arith.muli(mn_part, _idx(8)))
        return arith.addi(arith.muli(line, _idx(self.pitch)),
                          arith.muli(column, _idx(self.eb)))

    def ldmatrix(self, stage_i64, lane_off, kk, block):
        """The 4 registers (i32) of ldmatrix.x4 at K slice ``kk`` and
        fragment block ``block`` (16 rows of M/N further per block)."""
        if self.k_major:
            const = block * 16 * self.pitch + kk * MMA_K_BYTES
        else:
            const = kk * (MMA_K_BYTES // self.eb) * self.pitch + block * 16 * self.eb
        address = _add(arith.addi(stage_i64, lane_off), const)
        i32 = ir.IntegerType.get_signless(32)
        struct = ir.Type.parse("!llvm.struct<(i32, i32, i32, i32)>")
        layout = "#nvvm.mma_layout<row>" if self.k_major else "#nvvm.mma_layout<col>"
        got = nvvm.LdMatrixOp(struct, llvm.inttoptr(_ptr(3), address), 4,
                              ir.Attribute.parse(layout),
                              ir.Attribute.parse("#nvvm.ld_st_matrix_shape<m = 8, n = 8>"),
                              ir.Attribute.parse("#nvvm.ld_st_matrix_elt_type<b16>")).result
        return [llvm.extractvalue(i32, got, ir.DenseI64ArrayAttr.get([j])) for j in range(4)]

    def scalar_offset(self, g, t, first):
        """tf32 MN-major: byte offset in a stage of (K line t, M/N column
        ``first`` + g), the first register of a fragment."""
        return arith.addi(arith.muli(t, _idx(self.pitch)),
                          arith.muli(arith.addi(first, g), _idx(self.eb)))

    def scalar(self, stage_i64, offset, const):
        """One 32-bit shared load at ``offset`` + ``const`` bytes."""
        address = _add(arith.addi(stage_i64, offset), const)
        return llvm.load(ir.IntegerType.get_signless(32), llvm.inttoptr(_ptr(3), address))


def _round_tf32(bits):
    """An f32 bit pattern (i32) rounded to tf32, to nearest even, inf and NaN
    kept: dnnc.codegen.linalg.contraction.round_tf32 on the bits."""
    lsb = arith.andi(arith.shrui(bits, _i(13)), _i(1))
    rounded = arith.andi(arith.addi(arith.addi(bits, _i(0xFFF)), lsb), _i(-0x2000))
    finite = _cmp("ne", arith.andi(bits, _i(0x7F800000)), _i(0x7F800000))
    return arith.select(finite, rounded, bits)


# ----------------------------------------------------------------------------
# Checks


def smem_bytes(gemm, tile):
    """Dynamic shared memory of the kernel: ``stages`` stages of A and B."""
    a = AsyncOperand("A", gemm.a, tile.m, tile, gemm.m, gemm.k)
    b = AsyncOperand("B", gemm.b, tile.n, tile, gemm.n, gemm.k)
    return tile.stages * (a.bytes + b.bytes)


def check(gemm, tile):
    """Raise NotSupported unless tc-sm80 with ``tile`` computes ``gemm``."""
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
    size = smem_bytes(gemm, tile)   # also checks each operand's layout (AsyncOperand)
    if size > MAX_SHARED:
        raise NotSupported(f"{tile.stages} stages need {size} bytes of shared memory, more "
                           f"than the {MAX_SHARED} a block may use")


# ----------------------------------------------------------------------------
# The kernel


class Builder:
    def __init__(self, fn, gemm, tile):
        self.fn, self.gemm, self.tile = fn, gemm, tile
        self.a = AsyncOperand("A", gemm.a, tile.m, tile, gemm.m, gemm.k)
        self.b = AsyncOperand("B", gemm.b, tile.n, tile, gemm.n, gemm.k)
        self.tf32 = gemm.element == "f32"
        self.steps = -(-gemm.k // tile.k)
        self.kk_steps = tile.k * self.a.eb // MMA_K_BYTES
        self.tiles_m = -(-gemm.m // tile.m)
        self.tiles_n = -(-gemm.n // tile.n)
        self.stage_bytes = self.a.bytes + self.b.bytes
        self.mt = tile.warp_m // 16      # m16 fragments per warp
        self.nt = tile.warp_n // 8       # n8 fragments per warp
        self.acc_type = ir.Type.parse("!llvm.struct<(f32, f32, f32, f32)>")
        self.arguments = list(irutil.body(fn).arguments)

    # -- host side ----------------------------------------------------------

    def build(self):
        body = irutil.body(self.fn)
        old = [op.operation for op in body.operations]
        with ir.InsertionPoint(old[-1]):
            blocks = self.tiles_m * self.tiles_n * self.gemm.batch
            launch = gpu.LaunchOp((_idx(blocks), _idx(1), _idx(1)),
                                  (_idx(self.tile.threads), _idx(1), _idx(1)),
                                  dynamic_shared_memory_size=_i(
                                      self.tile.stages * self.stage_bytes))
            block = launch.regions[0].blocks[0]
            with ir.InsertionPoint(block):
                self._kernel()
                gpu.TerminatorOp()
        # The linalg ops and their buffers go; constants stay (the epilogue's
        # cloned bodies use them; canonicalize drops the rest).
        for op in reversed(old[:-1]):
            if op.name != "arith.constant":
                op.erase()

    # -- device side --------------------------------------------------------

    def _tile_of_block(self):
        """(batch, tile_m, tile_n) of this block: batch-major, then grouped
        order within a batch (GROUP_M tiles of M down a column of N tiles)."""
        t = gpu.block_id(gpu.Dimension.x)
        per_batch = self.tiles_m * self.tiles_n
        batch = arith.divui(t, _idx(per_batch)) if self.gemm.batch > 1 else _idx(0)
        within = arith.remui(t, _idx(per_batch)) if self.gemm.batch > 1 else t
        per_group = GROUP_M * self.tiles_n
        group = arith.divui(within, _idx(per_group))
        first_m = arith.muli(group, _idx(GROUP_M))
        rows = arith.minui(arith.subi(_idx(self.tiles_m), first_m), _idx(GROUP_M))
        rest = arith.remui(within, _idx(per_group))
        return batch, arith.addi(first_m, arith.remui(rest, rows)), arith.divui(rest, rows)

    def _kernel(self):
        tile = self.tile
        tid = gpu.thread_id(gpu.Dimension.x)
        warp, lane = arith.divui(tid, _idx(WARP)), arith.remui(tid, _idx(WARP))
        # Warps row-major over the warps_m x warps_n grid.
        wm0 = arith.muli(arith.divui(warp, _idx(tile.warps_n)), _idx(tile.warp_m))
        wn0 = arith.muli(arith.remui(warp, _idx(tile.warps_n)), _idx(tile.warp_n))
        batch, tile_m, tile_n = self._tile_of_block()
        m0 = arith.muli(tile_m, _idx(tile.m))
        n0 = arith.muli(tile_n, _idx(tile.n))
        raw = gpu.dynamic_shared_memory(ir.MemRefType.get(
            [ir.ShapedType.get_dynamic_size()], ir.IntegerType.get_signless(8),
            memory_space=ir.Attribute.parse("#gpu.address_space<workgroup>")))
        self.base = _i64(memref.extract_aligned_pointer_as_index(raw))
        plan_a = self.a.prepare(tid, tile.threads, batch, m0)
        plan_b = self.b.prepare(tid, tile.threads, batch, n0)
        ring = tile.stages * self.stage_bytes

        def load(kt, stage_offset):
            stage = arith.addi(self.base, stage_offset)
            k0 = arith.muli(kt, _idx(tile.k))
            self.a.load(plan_a, stage, k0)
            self.b.load(plan_b, _add(stage, self.a.bytes), k0)

        def following(stage_offset):
            """The byte offset of the stage after ``stage_offset``'s, round
            the ring (a compare and a select: no remainder in the loop)."""
            step = _add(stage_offset, self.stage_bytes)
            return arith.select(_cmp("eq", step, _i(ring, 64)), _i(0, 64), step)

        # 1. Prologue: steps 0 .. stages-2, one commit group each; then wait
        # for step 0 and read its first K slice's fragments.
        for s in range(tile.stages - 1):
            if s < self.steps:
                load(_idx(s), _i(s * self.stage_bytes, 64))
            nvvm.CpAsyncCommitGroupOp()
        nvvm.CpAsyncWaitGroupOp(tile.stages - 2)
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
        loop = scf.ForOp(_idx(0), _idx(self.steps), _idx(1), init)
        with ir.InsertionPoint(loop.body):
            kt = loop.induction_variable
            carried = list(loop.inner_iter_args)
            accs = carried[:accumulators]
            frags = self._unflat(carried[accumulators:-2])
            read, write = carried[-2:]
            stage = arith.addi(self.base, read)
            read_next = following(read)

            def copy_ahead():
                # Step kt + stages-1 goes to the stage step kt-1 used: every
                # warp read it before the last barrier.
                ahead = _add(kt, tile.stages - 1)
                _if(_cmp("ult", ahead, _idx(self.steps)), lambda: load(ahead, write))
                nvvm.CpAsyncCommitGroupOp()

            for kk in range(self.kk_steps):
                if kk + 1 < self.kk_steps:
                    after = self._load_fragments(stage, kk + 1, offsets)
                    # The copies after the ldmatrix: ptxas keeps shared loads
                    # behind the cp.async before them (they may alias), and
                    # the mma.syncs would wait for the copies' issue.
                    if kk == 0:
                        copy_ahead()
                else:
                    if kk == 0:   # one slice a stage: step kt+1 may be this copy
                        copy_ahead()
                    # Step kt+1 has landed (at most stages-2 groups, steps
                    # kt+2 .., in flight) and every thread's copies are
                    # visible. Past the last step this reads a stale stage,
                    # unused.
                    nvvm.CpAsyncWaitGroupOp(tile.stages - 2)
                    gpu.barrier()
                    after = self._load_fragments(arith.addi(self.base, read_next), 0, offsets)
                accs = self._mma(frags, accs)
                frags = after
            scf.YieldOp(accs + self._flat(frags) + [read_next, following(write)])
        nvvm.CpAsyncWaitGroupOp(0)

        # 3. Epilogue.
        self._epilogue(list(loop.results)[:accumulators], lane, batch, arith.addi(m0, wm0),
                       arith.addi(n0, wn0))

    def _fragment_offsets(self, lane, wm0, wn0):
        """Per-lane byte offsets in a stage of the fragment reads."""
        g, t = arith.divui(lane, _idx(4)), arith.remui(lane, _idx(4))
        out = {"g": g, "t": t}
        for name, op, first in (("a", self.a, wm0), ("b", self.b, wn0)):
            if op.k_major or not self.tf32:
                out[name] = _i64(op.lane_offset(lane, first, name))
            else:
                out[name] = _i64(op.scalar_offset(g, t, first))
        return out

    def _a_fragment(self, stage, kk, mt, offsets):
        a = self.a
        if a.k_major or not self.tf32:
            return a.ldmatrix(stage, offsets["a"], kk, mt)
        # tf32 from [BK][BM]: a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4).
        line = kk * (MMA_K_BYTES // 4)
        return [a.scalar(stage, offsets["a"], (line + 4 * (j // 2)) * a.pitch
                         + (16 * mt + 8 * (j % 2)) * 4) for j in range(4)]

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
        if self.tf32:
            a_frags = [[_round_tf32(r) for r in f] for f in a_frags]
            b_frags = [tuple(_round_tf32(r) for r in f) for f in b_frags]
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

    def _epilogue(self, accs, lane, batch, row0, col0):
        tile, gemm = self.tile, self.gemm
        g, t = arith.divui(lane, _idx(4)), arith.remui(lane, _idx(4))
        row_base = arith.addi(row0, g)                       # + 16 mt + 8 h
        col_base = arith.addi(col0, arith.muli(t, _idx(2)))  # + 8 nt
        epilogue = PairEpilogue(gemm, self.arguments, full_m=gemm.m % tile.m == 0,
                                full_n=gemm.n % tile.n == 0)
        # Four n8 fragments side by side are a 32-column group whose pairs a
        # quad exchanges, each thread then storing 16 bytes (store_quad).
        wide = epilogue.quads() and self.nt % 4 == 0
        quad_col = arith.addi(col0, arith.muli(t, _idx(8)))  # + 8 (nt - 3)
        f32 = ir.F32Type.get()
        cache = {}
        for mt in range(self.mt):
            for h in range(2):
                row = _add(row_base, 16 * mt + 8 * h)
                row_ok, row_safe = epilogue.row_guard(row)
                group = []
                for nt in range(self.nt):
                    acc = accs[mt * self.nt + nt]
                    values = [llvm.extractvalue(f32, acc, ir.DenseI64ArrayAttr.get([2 * h + e]))
                              for e in range(2)]
                    col = _add(col_base, 8 * nt)
                    envs = epilogue.evaluate_pair(batch, row_safe, col, values, cache, nt)
                    if not wide:
                        epilogue.store(envs, batch, row, col, row_ok)
                        continue
                    group.append(envs)
                    if len(group) == 4:
                        epilogue.store_quad(group, batch, row, _add(quad_col, 8 * (nt - 3)),
                                            t, row_ok)
                        group = []


def build(fn, gemm, tile):
    """Replace kernel function ``fn``'s body by the tc-sm80 kernel of ``gemm``."""
    check(gemm, tile)
    Builder(fn, gemm, tile).build()
