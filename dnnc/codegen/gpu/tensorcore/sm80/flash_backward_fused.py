"""tc-sm80's attention backward as one kernel in the FlashAttention-2
manner: five products a step where the two kernels (flash_backward.py, the
deterministic form) run seven, dQ summed over the kv blocks by f32
reductions (``red.global.add.f32``) into a workspace, in no fixed order.

With P, dS and delta as flash_backward.py defines them::

    launch 1  preprocess (sm90/flash_backward_dq.py, plain SIMT): delta =
              rowsum(dO ∘ O) into a workspace, the f32 dQ workspace
              ``dq_sum`` [B, H, Sq, D] zeroed
    launch 2  FusedKernel: flash_backward_kernels.DkvKernel's block (128 kv
              rows of one (batch, kv head) over 8 warps of 16, K and V
              resident, the Q and dO tiles of ``dkv_m`` query rows of each
              query head of the group through the cp.async ring); a step:
                  Sᵀ = K Qᵀ, dPᵀ = V dOᵀ, Pᵀ and dSᵀ in registers
                  dSᵀ -> shared memory (rounded pairs, as dK's A takes them)
                  dV += Pᵀ dO,  dK += dSᵀ Q          (as DkvKernel)
                  barrier
                  dQ_i = dS K over the block's kv rows, a warp per 16 query
                  rows and D / (warps / (dkv_m / 16)) columns
                  dq_sum[rows of Q_i] += dQ_i       (red.global.add.f32)
    launch 3  convert (sm90/flash_backward_dq.py): dq = scale dq_sum,
              rounded to dq's type

dQ_i's operands: dSᵀ is stored as it lies in the accumulators ([kv row]
[query], 2 dkv_m + 16 bytes a row: a warp's 4-byte stores of rows g and
columns 2t fall in 32 banks, as do ldmatrix's 8 rows of 16 bytes) and
read by ldmatrix.trans as dS's A fragments (query rows by kv columns); K is
the resident tile, read by ldmatrix.trans as B ([kv][D]), as the two-kernel
form reads its ring tiles for the accumulating products. Each warp sums
its part of dQ_i over all the block's kv rows, so each element of dQ_i is
one reduction a step (16 a thread at D 64 with 64 query rows a step, or at
D 128 with 32). ``red.global.add.v2.f32`` (a thread's pair of adjacent
columns) would halve the instructions but needs sm_90 and PTX ISA 8.1: the
kernel builder does not know the arch, these kernels are meant for sm_80
too, and the PTX dnnc emits declares ISA 8.0.

The step's dS tile is read by every warp after the barrier and written
again only after the ring's end-of-step barrier. The last reader of a
step's registers before the products is the same as DkvKernel's: ptxas
keeps the dK dV kernel's registers (dQ_i's 16 accumulators live while
Sᵀ and dPᵀ do not).

What it takes: what the two kernels take (flash_backward.check) but the
bias's gradient (dbias is summed from the dQ kernel's dS); a step's query
rows in 16-row warps that divide the block's warps, and D in whole n8
tiles a warp. The heuristics rank it first on sm_80 without a bias where D
= Dv is 64 or 128 and the graph does not ask for a deterministic
backward; elsewhere a config's ``fused = 1`` asks for it (an override).
"""

from mlir import ir
from mlir.dialects import arith, gpu, llvm, memref

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.tensorcore.emit import (
    add as _add, cmp as _cmp, erase_replaced, f32, idx as _idx, if_ as _if, launch, pair,
    shared_ptr as _shared_ptr, to_i64 as _i64,
)
from dnnc.codegen.gpu.tensorcore.sm80.flash import ldmatrix, mma
from dnnc.codegen.gpu.tensorcore.sm80.flash_backward import check as check_two_kernels
from dnnc.codegen.gpu.tensorcore.sm80.flash_backward import smem_bytes
from dnnc.codegen.gpu.tensorcore.sm80.flash_backward_kernels import DkvKernel
from dnnc.codegen.gpu.tensorcore.sm80.support import MAX_SHARED, WARP, NotSupported
from dnnc.codegen.gpu.tensorcore.sm90 import flash_backward_dq as launches


def ds_pitch(tile):
    """Bytes a kv row of the shared dSᵀ tile: dkv_m 16-bit values and 16
    bytes of padding (a 4-word shift a row keeps ldmatrix's 8 rows and a
    warp's stores in distinct banks)."""
    return 2 * tile.dkv_m + 16


def fused_smem_bytes(tile, d, dv):
    """The fused kernel's dynamic shared memory: the dK dV kernel's (K, V,
    the ring) and the dSᵀ tile."""
    return smem_bytes(tile, d, dv)[1] + tile.rows * ds_pitch(tile)


def dq_split(tile, d):
    """(query row groups, column groups) of a step's dQ_i over the block's
    warps: a warp per 16 rows and D / column groups columns."""
    row_groups = tile.dkv_m // 16
    return row_groups, max(1, tile.warps // row_groups)


def refusal(tile, d, dv, dbias=False, shared=MAX_SHARED):
    """Why the fused kernel does not take head dims ``d``, ``dv`` in
    ``tile`` (beyond what the two kernels refuse), or None."""
    if dbias:
        return ("the bias's gradient (summed from the dQ kernel's dS: the two-kernel "
                "backward)")
    row_groups, col_groups = dq_split(tile, d)
    if tile.warps % row_groups:
        return (f"{tile.dkv_m} query rows a step over {tile.warps} warps of 16 rows: expected "
                "the step's 16-row groups to divide the warps")
    if (d // 8) % col_groups:
        return (f"D {d} over {col_groups} warps' columns a step: expected a multiple of "
                f"{8 * col_groups}")
    size = fused_smem_bytes(tile, d, dv)
    if size > shared:
        return f"the fused kernel needs {size} bytes of shared memory, more than {shared}"
    return None


def check(att, tile):
    """Raise NotSupported unless FusedKernel with ``tile`` computes the
    backward ``att``."""
    why = refusal(tile, att.d, att.dv, att.dbias is not None)
    if why:
        raise NotSupported(f"tc-sm80's fused attention backward: {why}")
    check_two_kernels(att, tile)


class FusedKernel(DkvKernel):
    """dK and dV of ``tile.rows`` kv rows of one (batch, kv head), and their
    part of dQ added into ``dq_sum``."""

    def __init__(self, att, tile, delta, dq_sum):
        super().__init__(att, tile, delta)
        self.dq_sum = dq_sum
        self.ds_pitch = ds_pitch(tile)
        row_groups, col_groups = dq_split(tile, att.d)
        self.row_groups, self.dq_width = row_groups, att.d // col_groups

    @property
    def shared(self):
        return super().shared + self.tile.rows * self.ds_pitch

    def geometry(self):
        """DkvKernel's, and the warp's part of dQ_i: its query rows
        (``dq_row``, 16 from there) and columns (``dq_col``), the ldmatrix
        lane addresses of dS (.trans: A from [kv][query]) and K (.trans: B
        from [kv][D]), where the thread stores its dSᵀ pairs."""
        super().geometry()
        t = self.tile
        warp = arith.divui(self.tid, _idx(WARP))
        self.dq_row = arith.muli(arith.remui(warp, _idx(self.row_groups)), _idx(16))
        self.dq_col = arith.muli(arith.divui(warp, _idx(self.row_groups)), _idx(self.dq_width))
        ds_base = _add(self.ring, t.stages * self.stage_bytes)
        i, r = arith.divui(self.lane, _idx(8)), arith.remui(self.lane, _idx(8))
        i_lo, i_hi = arith.remui(i, _idx(2)), arith.divui(i, _idx(2))

        def at(base, row, col, row_pitch):
            return arith.addi(base, _i64(arith.addi(arith.muli(row, _idx(row_pitch)),
                                                    arith.muli(col, _idx(2)))))
        # Matrix i of dS's A: query rows 8 (i % 2), kv columns 8 (i / 2),
        # stored as kv rows 8 (i / 2) + r of query columns 8 (i % 2).
        eight = lambda x: arith.muli(x, _idx(8))   # noqa: E731
        self.ds_lane = at(ds_base, arith.addi(eight(i_hi), r),
                          arith.addi(self.dq_row, eight(i_lo)), self.ds_pitch)
        # Matrix i of K's B (two n8 tiles): kv rows 8 (i % 2) + r, D columns
        # 8 (i / 2) from the warp's first.
        self.k_lane = at(self.bases[0], arith.addi(eight(i_lo), r),
                         arith.addi(self.dq_col, eight(i_hi)), self.resident[0].pitch)
        self.ds_store = at(ds_base, arith.addi(self.warp_row, self.g), self.column,
                           self.ds_pitch)
        base = _i64(memref.extract_aligned_pointer_as_index(self.dq_sum))
        # The thread's first column of dQ_i, in bytes from its row's start.
        self.dq_at = arith.addi(base, _i64(arith.muli(arith.addi(self.dq_col, self.column),
                                                      _idx(4))))

    def accumulate(self, stage, head, m0, p, ds, dv, dk):
        """DkvKernel's dV and dK, and the step's dQ_i added into dq_sum."""
        att, m = self.att, self.tile.dkv_m
        # dSᵀ into shared memory first: its stores go while dV and dK run.
        for j in range(m // 8):
            for half in range(2):
                value = pair(ds[4 * j + 2 * half], ds[4 * j + 2 * half + 1], att.element)
                llvm.store(value, _shared_ptr(_add(self.ds_store,
                                                   half * 8 * self.ds_pitch + 16 * j)))
        out = super().accumulate(stage, head, m0, p, ds, dv, dk)
        # Every warp's dSᵀ is in; the ring's barrier at the end of the step
        # keeps the next step's stores behind every warp's reads.
        gpu.barrier()
        self.add_dq(self.product_dq(), head, m0)
        return out

    def product_dq(self):
        """The warp's 16 query rows and ``dq_width`` columns of dQ_i = dS K
        over the block's kv rows: [n8 tile] lists of 4 f32."""
        element, ot = self.att.element, self.dq_width // 8
        pitch_k = self.resident[0].pitch
        tiles = [[f32(0.0)] * 4 for _ in range(ot)]
        for kk in range(self.tile.rows // 16):
            a = ldmatrix(_add(self.ds_lane, kk * 16 * self.ds_pitch), transpose=True)
            for dp in range(-(-ot // 2)):
                b = ldmatrix(_add(self.k_lane, kk * 16 * pitch_k + dp * 32), transpose=True)
                for half in range(2):
                    j = 2 * dp + half
                    if j < ot:
                        tiles[j] = mma(tiles[j], a, b[2 * half:2 * half + 2], element)
        return tiles

    def add_dq(self, tiles, head, m0):
        """``tiles`` (rows g and g + 8 of the warp's 16, columns 8 j + 2t, +
        1) added into dq_sum[b, head, m0 + ...], rows past Sq left out."""
        att = self.att
        row_bytes = att.d * 4
        first = arith.addi(arith.addi(m0, self.dq_row), self.g)
        # dq_sum is dense [B, H, Sq, D]: (b, head, row) is row (b H + head) Sq + row.
        head_row = arith.muli(arith.addi(arith.muli(self.b, _idx(att.heads)), head),
                              _idx(att.sq))
        for half in range(2):
            row = _add(first, 8 * half)

            def add(half=half, row=row):
                at = arith.addi(self.dq_at, _i64(arith.muli(arith.addi(head_row, row),
                                                            _idx(row_bytes))))
                for j, tile in enumerate(tiles):
                    for c in range(2):
                        reduce_add(_add(at, 4 * (8 * j + c)), tile[2 * half + c])
            _if(_cmp("ult", row, _idx(att.sq)), add)


def reduce_add(address_i64, value):
    """``red.global.add.f32``: ``value`` added to the f32 at global address
    ``address_i64``, relaxed, no result (atomic; in no fixed order)."""
    llvm.inline_asm(None, [address_i64, value], "red.global.add.f32 [$0], $1;", "l,f",
                    has_side_effects=True)


def build_attention_backward_fused(fn, att, tile):
    """Replace kernel function ``fn``'s body by the fused backward of
    ``att`` in ``tile``: three launches, two workspaces (delta, dq_sum).
    Returns what the plan should say of it."""
    check(att, tile)
    body = irutil.body(fn)
    old = [op.operation for op in body.operations]
    ret = old[-1]
    with ir.InsertionPoint(ret), ret.location:
        f32_type = ir.F32Type.get()
        delta = memref.alloc(ir.MemRefType.get([att.batch, att.heads, att.sq], f32_type), [], [])
        dq_sum = memref.alloc(ir.MemRefType.get([att.batch, att.heads, att.sq, att.d],
                                                f32_type), [], [])
        launches.preprocess(att, delta, dq_sum)
        kernel = FusedKernel(att, tile, delta, dq_sum)
        launch(kernel.grid, tile.threads, kernel.shared, kernel.kernel)
        launches.convert(att, dq_sum)
    erase_replaced(old[:-1])
    group = ", the group of query heads in turn" if att.group > 1 else ""
    return [f"attention backward on mma.sync, fused: delta = rowsum(dO o O) and a zeroed f32 "
            f"dQ workspace first; then one kernel ({tile.rows} kv rows a block over "
            f"{tile.warps} warps, {tile.dkv_m} query rows a step{group}, Q and dO through a "
            f"cp.async ring of {tile.stages} stages, five products a step), dQ added into the "
            "workspace by red.global.add.f32 (not deterministic: the order of the adds "
            "varies); then dQ converted"]
