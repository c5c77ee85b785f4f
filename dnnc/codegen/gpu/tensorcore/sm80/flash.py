"""tc-sm80's attention forward: one kernel in the FlashAttention-2 manner,
on mma.sync (m16n8k16: bf16 or f16 products, f32 accumulators), fed by
cp.async. It runs where there is no wgmma (sm_80), and on sm_90a where a
config names tc-sm80.

A block computes ``tile.m`` query rows of one (batch, head) with
``tile.warps`` warps; each warp owns ``tile.rows`` of them (16 or 32: one
or two m16 fragments) and runs every step on its own rows, so that nothing
passes between warps but the K and V tiles they share::

    1. prologue  cp.async the block's Q tile and the K and V tiles of steps
                 0 .. stages - 2 (Q with step 0 in one commit group, a
                 group a step after it); wait for step 0, barrier; the
                 warp's Q fragments into registers by ldmatrix where they
                 fit (``q_in_registers``), else each step reads them again
    2. steps     for each kv tile j the block's rows see (one step):
                   S = Q K_jᵀ, per 16 columns of the head dim: ldmatrix.x4
                   of K_j (two n8 fragments each) and mma.sync; the copies
                   of step j + stages - 1 go out after the first K loads,
                   into the stage step j - 1 used
                   the online softmax of S in registers, masked only on the
                   tiles that need it; O rescaled
                   O += P V_j, V_j by ldmatrix.x4.trans
                   wait until step j + 1 has landed, barrier
    3. epilogue  O / l rounded to o's type into the warp's own rows of the
                 Q tile and from there 16 bytes a lane to o (rows past Sq
                 dropped); an f32 o, or a Dv wider than the Q tile's rows,
                 from registers; the statistics from registers

Shared memory holds each tile as its rows lie in memory, the head dim
rounded up to 16 elements and each row followed by 16 bytes of padding: a
pitch of an odd number of 16-byte units, so the 8 rows an ldmatrix reads
lie in 8 distinct bank groups (as tc-sm80's GEMM loader lays its stages
out). cp.async copies 16-byte chunks; a chunk past S, or padding past the
head dim, copies 0 bytes and the hardware zero-fills it, so the products
over it add zeros (and a zero V row meets P = 0 there)::

    Q          tile.m rows of pitch(D) bytes (O's staging at the end)
    ring       stages x (K: tile.n rows of pitch(D), V: tile.n of pitch(Dv))

Fragments (PTX ISA, mma.m16n8k16; g = lane / 4, t = lane % 4): an
accumulator of n8 tile j holds rows g and g + 8, columns 8 j + 2t and
8 j + 2t + 1. The A fragment of a k16 slice kk holds rows g and g + 8,
columns 16 kk + 2t (+ 1) and 16 kk + 8 + 2t (+ 1): exactly the
accumulators of n8 tiles 2 kk and 2 kk + 1, so P passes from S's
registers to P V's, rounded in pairs, without any exchange.

The softmax keeps, per row, the running maximum ``m`` of the scaled scores
in base 2 (scale x log2 e folded into one FMA with the subtraction, the
exponential ``ex2.approx``) and the thread's part of the row sum ``l``
(the quad's four parts are summed once, at the end). The masks
(attention_tiles.py) make scores -inf; a row whose scores are all -inf
keeps m = -inf, takes 0 as its shift, and ends with l = 0: o = 0 and stats
= -inf. The statistics are ``(m + log2 l) ln 2``, the natural log-sum-exp
of the scaled scores. An additive bias is read from global memory a step
ahead of its use, each value where the thread's score is.
"""

import dataclasses
import math
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, gpu, llvm, memref, nvvm, scf, vector

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.tensorcore.attention_tiles import (
    LOG2E, log_sum_exp, mask_columns, online_softmax, query_block, row_sums,
)
from dnnc.codegen.gpu.tensorcore.emit import (
    add as _add, cmp as _cmp, erase_replaced, f32, i as _i, idx as _idx, if_ as _if, launch,
    pair, ptr as _ptr, shared_base, shared_ptr as _shared_ptr, to_i32 as _i32, to_i64 as _i64,
)
from dnnc.codegen.gpu.tensorcore.sm80.support import MAX_SHARED, WARP, NotSupported

MAX_HEAD_DIM = 256
# f32 registers a thread may give its Q fragments (Q stays in registers
# for the whole kernel where they fit; else each step reads it again from
# shared memory).
Q_REGISTERS = 32
# What ptxas may give a thread, and what the kernel keeps beside O, S, P,
# Q and a step's bias values (addresses, the softmax's temporaries, the
# fragments of K and V in flight): with 192 held, ptxas 13 fits D 64 in 4
# warps of 32 rows (233 registers) and spills a few bytes at 224 (D 128,
# 64 kv rows a step).
MAX_REGISTERS = 255
SPARE_REGISTERS = 63
# Tiles of the head dim (mma.sync's k16 and n8 steps) and cp.async chunks.
K_STEP, CHUNK = 16, 16
# The features of an Attention this kernel implements; any other the
# matcher sets makes it refuse (``check``).
IMPLEMENTED = ("q", "k", "v", "o", "stats", "bias", "batch", "heads", "kv_heads", "sq", "skv",
               "d", "dv", "scale", "causal", "element", "diagonal", "window")


@dataclass(frozen=True)
class FlashTile:
    """``m`` query rows a block over ``warps`` warps (16 or 32 rows a
    warp), ``n`` kv rows a step, ``stages`` ring stages of K and V."""

    m: int = 128
    n: int = 64
    stages: int = 2
    warps: int = 8

    @property
    def rows(self):
        """Query rows a warp owns."""
        return self.m // self.warps

    @property
    def mt(self):
        """m16 fragments a warp owns."""
        return self.rows // 16

    @property
    def threads(self):
        return WARP * self.warps


def padded(d):
    """A head dim rounded up to the mma's k16 steps."""
    return -(-d // K_STEP) * K_STEP


def pitch(d):
    """Bytes of a shared row of head dim ``d``: its elements rounded up to
    16, then 16 bytes of padding (an odd number of 16-byte units)."""
    return padded(d) * 2 + 16


def smem_bytes(tile, d, dv):
    """Dynamic shared memory of the kernel: the Q tile, then the ring."""
    return tile.m * pitch(d) + tile.stages * tile.n * (pitch(d) + pitch(dv))


def _held(tile, dv, biased):
    """f32 registers a thread holds through a step beside Q: O (Dv / 2 a
    16-row fragment), S (n / 2), P (n / 4) and a step's bias values (n /
    2)."""
    return tile.mt * (dv // 2 + tile.n // 2 + tile.n // 4 + (tile.n // 2 if biased else 0))


def q_in_registers(tile, d, dv, biased):
    """Whether a warp keeps its Q fragments in registers (4 a thread per
    m16 fragment and k16 slice): at most Q_REGISTERS of them, within the
    budget beside what a step holds."""
    q = tile.mt * padded(d) // 4
    return q <= Q_REGISTERS and _held(tile, dv, biased) + q <= MAX_REGISTERS - SPARE_REGISTERS


def held_registers(tile, d, dv, biased):
    """The f32 registers a thread holds through a step: ``_held``'s, and Q
    where it stays in registers."""
    q = tile.mt * padded(d) // 4 if q_in_registers(tile, d, dv, biased) else 0
    return _held(tile, dv, biased) + q


def fits(tile, d, dv, biased, shared=MAX_SHARED):
    """Why ``tile`` does not fit head dims ``d`` and ``dv`` (a bias:
    ``biased``) within ``shared`` bytes of shared memory and a thread's
    registers, or None. Pure: the heuristics ask it too."""
    if tile.warps not in (4, 8) or tile.m % tile.warps or tile.rows not in (16, 32) \
            or tile.n not in (32, 64, 128) or not 2 <= tile.stages <= 4:
        return (f"tile {tile.m}x{tile.n} in {tile.stages} stages over {tile.warps} warps: "
                "expected 4 or 8 warps of 16 or 32 query rows, 32, 64 or 128 kv rows a "
                "step and 2 to 4 stages")
    held = held_registers(tile, d, dv, biased)
    budget = MAX_REGISTERS - SPARE_REGISTERS
    if held > budget:
        return (f"D {d}, Dv {dv} with {tile.rows} query rows a warp and {tile.n} kv rows a "
                f"step: {held} registers a thread for O, S, P"
                f"{', Q' if q_in_registers(tile, d, dv, biased) else ''}"
                f"{' and the bias' if biased else ''}"
                f", expected at most {budget}")
    size = smem_bytes(tile, d, dv)
    if size > shared:
        return (f"{tile.m} query rows and {tile.stages} stages of {tile.n} kv rows need {size} "
                f"bytes of shared memory, more than {shared}")
    return None


def unimplemented(att, implemented=IMPLEMENTED):
    """The first field of ``att`` that asks for a feature this kernel (or
    the one whose ``implemented`` fields are given) does not implement
    (set and not among them: what a newer matcher records, such as
    per-batch sequence lengths or paged K and V), or None."""
    for field in dataclasses.fields(att):
        if field.name in implemented:
            continue
        value = getattr(att, field.name)
        if value is None or value is False:
            continue
        if isinstance(value, (int, float)) and value == 0:
            continue
        if isinstance(value, (str, tuple, list, dict)) and not value:
            continue
        return field.name
    return None


def check(att, tile):
    """Raise NotSupported unless this kernel with ``tile`` computes ``att``
    (tensorcore/attention.Attention)."""
    feature = unimplemented(att)
    if feature is not None:
        raise NotSupported(f"the attention's {feature.replace('_', ' ')}: not implemented in "
                           "tc-sm80's attention kernel")
    if att.element not in ("bf16", "f16"):
        raise NotSupported(f"{att.element} q, k, v (tc-sm80's attention kernel takes bf16 and "
                           "f16)")
    for name, d in (("D", att.d), ("Dv", att.dv)):
        if d % 8 or not 8 <= d <= MAX_HEAD_DIM:
            raise NotSupported(f"head dim {name} = {d}: tc-sm80's attention kernel takes "
                               f"multiples of 8 up to {MAX_HEAD_DIM}")
    if att.bias is not None:
        kind = str(ir.MemRefType(att.bias.type).element_type)
        if kind not in (att.element, "f32"):
            raise NotSupported(f"a {kind} bias with {att.element} q, k, v: expected "
                               f"{att.element} or f32")
    if not att.scale > 0:
        raise NotSupported(f"scale {att.scale}: expected a positive scale")
    why = fits(tile, att.d, att.dv, att.bias is not None)
    if why:
        raise NotSupported(why)


class TileRows:
    """The cp.async copies of a tile of ``rows`` rows of a ``[B, H, S, D]``
    operand (D = ``width``, contiguous; S = ``length``) into shared rows of
    ``pitch(width)`` bytes, by ``threads`` threads: chunk c of thread t is
    number t + c x threads, row-major (a warp's 32 chunks are whole rows of
    global memory, each 8 lanes 128 consecutive bytes of shared memory)."""

    def __init__(self, value, rows, width, length, threads):
        _, strides, offset = irutil.memref_geometry(value.type)
        self.value, self.rows, self.width, self.length = value, rows, width, length
        self.threads = threads
        self.strides, self.offset = strides, offset
        self.per_row = padded(width) // 8
        self.chunks = rows * self.per_row
        self.pitch = pitch(width)
        self.bytes = rows * self.pitch
        # A tile may reach past S, or hold padding past the head dim: the
        # size of each chunk is checked (0 bytes: zeros).
        self.checked = length % rows != 0 or padded(width) != width

    def prepare(self, tid, b, h):
        """Per thread, before the steps: (the operand's base address, the
        address of (b, h, row 0), [(the chunk's byte offset in the tile,
        its byte offset from row 0 of a tile in global memory, the row it
        must be below (i32, past the head dim: never), it exists (i1) or
        None)]) for head ``h`` of batch ``b``."""
        base = _i64(memref.extract_aligned_pointer_as_index(self.value))
        s_b, s_h, s_s, _ = self.strides
        lead = _add(arith.addi(arith.muli(b, _idx(s_b)), arith.muli(h, _idx(s_h))),
                    self.offset)
        head = arith.addi(base, arith.muli(_i64(lead), _i(2, 64)))
        plan = []
        for c in range(-(-self.chunks // self.threads)):
            chunk = _add(tid, c * self.threads)
            row = arith.divui(chunk, _idx(self.per_row))
            col = arith.muli(arith.remui(chunk, _idx(self.per_row)), _idx(8))
            dst = _i64(arith.addi(arith.muli(row, _idx(self.pitch)), arith.muli(col, _idx(2))))
            src = _i64(arith.muli(arith.addi(arith.muli(row, _idx(s_s)), col), _idx(2)))
            limit = None
            if self.checked:
                limit = row
                if padded(self.width) != self.width:
                    limit = arith.select(_cmp("ult", col, _idx(self.width)), row,
                                         _idx(1 << 30))
                limit = _i32(limit)
            exists = None
            if self.chunks % self.threads and (c + 1) * self.threads > self.chunks:
                exists = _cmp("ult", chunk, _idx(self.chunks))
            plan.append((dst, src, limit, exists))
        return base, head, plan

    def load(self, prepared, stage_i64, s0):
        """Issue this thread's copies of the tile of rows ``s0`` .. (index)
        into the shared tile at ``stage_i64``."""
        base, head, plan = prepared
        start = arith.addi(head, arith.muli(_i64(s0), _i(self.strides[2] * 2, 64)))
        left = _i32(arith.subi(_idx(self.length), s0)) if self.checked else None
        for dst, src, limit, exists in plan:
            size, address = None, arith.addi(start, src)
            if limit is not None:
                inside = _cmp("slt", limit, left)
                size = arith.select(inside, _i(CHUNK), _i(0))
                # Nothing to read: the operand's base (never dereferenced).
                address = arith.select(inside, address, base)
            self._copy(arith.addi(stage_i64, dst), address, size, exists)

    @staticmethod
    def _copy(dst_i64, src_i64, size, exists):
        def issue():
            nvvm.CpAsyncOp(llvm.inttoptr(_ptr(3), dst_i64), llvm.inttoptr(_ptr(1), src_i64),
                           CHUNK, ir.Attribute.parse("#nvvm<load_cache_modifier cg>"),
                           cpSize=size)
        if exists is None:
            issue()
        else:
            _if(exists, issue)


def ldmatrix(address_i64, transpose=False):
    """ldmatrix.x4 (``.trans`` with ``transpose``): the 4 i32 registers of
    the four 8 x 8 matrices whose rows the lanes address."""
    struct = ir.Type.parse("!llvm.struct<(i32, i32, i32, i32)>")
    layout = "#nvvm.mma_layout<col>" if transpose else "#nvvm.mma_layout<row>"
    got = nvvm.LdMatrixOp(struct, _shared_ptr(address_i64), 4, ir.Attribute.parse(layout),
                          ir.Attribute.parse("#nvvm.ld_st_matrix_shape<m = 8, n = 8>"),
                          ir.Attribute.parse("#nvvm.ld_st_matrix_elt_type<b16>")).result
    i32 = ir.IntegerType.get_signless(32)
    return [llvm.extractvalue(i32, got, ir.DenseI64ArrayAttr.get([j])) for j in range(4)]


def mma(acc, a, b, element):
    """One mma.sync.m16n8k16 (row.col) of A fragment ``a`` (4 i32) and B
    fragment ``b`` (2 i32) into ``acc`` (4 f32); returns the 4 new f32."""
    if element == "f16":  # f16 operands are vector<2xf16> registers
        half2 = ir.VectorType.get([2], ir.F16Type.get())
        a = [llvm.bitcast(half2, r) for r in a]
        b = [llvm.bitcast(half2, r) for r in b]
    struct = ir.Type.parse("!llvm.struct<(f32, f32, f32, f32)>")
    kind = ir.Attribute.parse(f"#nvvm.mma_type<{element}>")
    got = nvvm.MmaOp(struct, ir.Attribute.parse("#nvvm.shape<m = 16, n = 8, k = 16>"),
                     ir.Attribute.parse("#nvvm.mma_layout<row>"),
                     ir.Attribute.parse("#nvvm.mma_layout<col>"), list(a), list(b), list(acc),
                     multiplicandAPtxType=kind, multiplicandBPtxType=kind).result
    t = ir.F32Type.get()
    return [llvm.extractvalue(t, got, ir.DenseI64ArrayAttr.get([j])) for j in range(4)]


def _flat(tiles):
    return [x for tile in tiles for x in tile]


class FlashForward:
    """The attention forward kernel of ``att`` in ``tile``s, replacing kernel
    function ``fn``'s body."""

    def __init__(self, fn, att, tile):
        check(att, tile)
        self.fn, self.att, self.tile = fn, att, tile
        t = tile.threads
        self.q = TileRows(att.q, tile.m, att.d, att.sq, t)
        self.k = TileRows(att.k, tile.n, att.d, att.skv, t)
        self.v = TileRows(att.v, tile.n, att.dv, att.skv, t)
        self.stage_bytes = self.k.bytes + self.v.bytes
        self.q_registers = q_in_registers(tile, att.d, att.dv, att.bias is not None)
        self.kd = padded(att.d) // K_STEP    # k16 slices of the head dim
        self.nt = tile.n // 8                # n8 tiles of S
        self.ot = att.dv // 8                # n8 tiles of O
        self.c = att.scale * LOG2E           # scores to base-2 exponents
        # O goes through the warp's rows of the Q tile where it has q's type
        # and its rows fit them; else from registers.
        element = ir.MemRefType(att.o.type).element_type
        self.o_wide = isinstance(element, ir.F32Type)
        self.staged = not self.o_wide and padded(att.dv) <= padded(att.d)

    def notes(self):
        t = self.tile
        q = "in registers" if self.q_registers else "read again each step"
        return [f"attention forward: {t.m} query rows a block ({t.warps} warps of {t.rows}), "
                f"{t.n} kv rows a step, K and V through a cp.async ring of {t.stages} stages "
                f"(Q {q}); S = QK^T and O += PV on mma.sync, the online softmax in registers"]

    # -- host side ----------------------------------------------------------

    def build(self):
        body = irutil.body(self.fn)
        old = [op.operation for op in body.operations]
        ret = old[-1]
        att, t = self.att, self.tile
        with ir.InsertionPoint(ret), ret.location:
            launch((-(-att.sq // t.m), att.batch * att.heads), t.threads,
                   smem_bytes(t, att.d, att.dv), self.kernel)
        # The expansion's ops go.
        erase_replaced(old[:-1])

    # -- device side --------------------------------------------------------

    def kernel(self):
        att, t = self.att, self.tile
        tid = gpu.thread_id(gpu.Dimension.x)
        warp, lane = arith.divui(tid, _idx(WARP)), arith.remui(tid, _idx(WARP))
        self.lane = lane
        self.g, self.t4 = arith.divui(lane, _idx(4)), arith.remui(lane, _idx(4))
        self.b, self.h, hk, self.m0, self.start, self.steps, self.extent = \
            query_block(att, t.m, t.n)
        self.base = shared_base()
        self.ring = _add(self.base, self.q.bytes)
        q_plan = self.q.prepare(tid, self.b, self.h)
        self.k_plan = self.k.prepare(tid, self.b, hk)
        self.v_plan = self.v.prepare(tid, self.b, hk)
        # The warp's rows: within the tile, and the query rows of each of
        # its 2 mt thread rows (m16 fragment mi, half: rows g, g + 8).
        self.warp_row = arith.muli(warp, _idx(t.rows))
        self.first = arith.addi(self.m0, self.warp_row)
        self.rows = [arith.addi(self.first, _add(self.g, 16 * mi + 8 * half))
                     for mi in range(t.mt) for half in range(2)]
        self.column = arith.muli(self.t4, _idx(2))   # the thread's first column of an n8 tile

        # 1. Prologue: Q and step 0 in the first group, then a group a step
        # up to step stages - 2; wait for the first.
        self.q.load(q_plan, self.base, self.m0)
        for s in range(t.stages - 1):
            stage = _add(self.ring, s * self.stage_bytes)
            _if(_cmp("ult", _idx(s), self.steps),
                lambda s=s, stage=stage: self.load_step(_idx(s), stage))
            nvvm.CpAsyncCommitGroupOp()
        nvvm.CpAsyncWaitGroupOp(t.stages - 2)
        gpu.barrier()
        self._lane_offsets(lane)
        self.q_frags = None
        if self.q_registers:
            self.q_frags = [[self.q_fragment(mi, kk) for kk in range(self.kd)]
                            for mi in range(t.mt)]

        # 2. Steps: O, the row maxima and sums carried; the ring's read and
        # write stages (byte offsets) move round it.
        neg_inf, zero = f32(-math.inf), f32(0.0)
        n_o = t.mt * self.ot * 4
        init = [zero] * n_o + [neg_inf] * (2 * t.mt) + [zero] * (2 * t.mt) + \
            [_i(0, 64), _i((t.stages - 1) * self.stage_bytes, 64)]
        loop = scf.ForOp(_idx(0), self.steps, _idx(1), init)
        with ir.InsertionPoint(loop.body):
            carried = list(loop.inner_iter_args)
            out = self.step(loop.induction_variable, carried[:n_o],
                            carried[n_o:n_o + 2 * t.mt], carried[n_o + 2 * t.mt:-2],
                            *carried[-2:])
            scf.YieldOp(out)
        nvvm.CpAsyncWaitGroupOp(0)
        results = list(loop.results)

        # 3. Epilogue.
        self.store(results[:n_o], results[n_o:n_o + 2 * t.mt], results[n_o + 2 * t.mt:-2])

    def load_step(self, j, stage_i64):
        """Issue the copies of step ``j``'s K and V tiles into the stage at
        ``stage_i64``."""
        n0 = arith.muli(arith.addi(self.start, j), _idx(self.tile.n))
        self.k.load(self.k_plan, stage_i64, n0)
        self.v.load(self.v_plan, _add(stage_i64, self.k.bytes), n0)

    def _lane_offsets(self, lane):
        """The byte offsets of the rows each lane gives ldmatrix.x4. Matrix
        i = lane / 8 (its row r = lane % 8) is, for Q (A of S = Q Kᵀ), rows
        8 (i % 2) of head-dim columns 8 (i / 2): a0..a3; for K (B, K-major),
        kv rows 8 (i / 2) of columns 8 (i % 2): b0, b1 of two n8 tiles; for
        V (B, N-major, read .trans), kv rows 8 (i % 2) of Dv columns
        8 (i / 2): b0, b1 of two n8 tiles of Dv."""
        i, r = arith.divui(lane, _idx(8)), arith.remui(lane, _idx(8))
        i_lo, i_hi = arith.remui(i, _idx(2)), arith.divui(i, _idx(2))

        def offset(row_part, col_part, row_pitch, first_row=None):
            row = arith.addi(arith.muli(row_part, _idx(8)), r)
            if first_row is not None:
                row = arith.addi(row, first_row)
            return _i64(arith.addi(arith.muli(row, _idx(row_pitch)),
                                   arith.muli(col_part, _idx(16))))
        self.q_lane = arith.addi(self.base, offset(i_lo, i_hi, self.q.pitch, self.warp_row))
        self.k_lane = offset(i_hi, i_lo, self.k.pitch)
        self.v_lane = _add(offset(i_lo, i_hi, self.v.pitch), self.k.bytes)

    def q_fragment(self, mi, kk):
        """The A fragment of the warp's m16 fragment ``mi``, k16 slice
        ``kk`` of the head dim, from the Q tile."""
        return ldmatrix(_add(self.q_lane, mi * 16 * self.q.pitch + kk * 32))

    # -- a step -------------------------------------------------------------

    def step(self, j, o, m, l_, read, write):
        """Step ``j`` of the block: returns the carried values after it."""
        t = self.tile
        stage = arith.addi(self.ring, read)
        ring_bytes = t.stages * self.stage_bytes

        def following(offset):
            """The stage after ``offset``'s, round the ring."""
            nxt = _add(offset, self.stage_bytes)
            return arith.select(_cmp("eq", nxt, _i(ring_bytes, 64)), _i(0, 64), nxt)

        def copy_ahead():
            # Step j + stages - 1 goes to the stage step j - 1 used: every
            # warp was done with it at the last barrier.
            ahead = _add(j, t.stages - 1)
            _if(_cmp("ult", ahead, self.steps),
                lambda: self.load_step(ahead, arith.addi(self.ring, write)))
            nvvm.CpAsyncCommitGroupOp()

        n0 = arith.muli(arith.addi(self.start, j), _idx(t.n))
        biases = self.biases(n0)
        s = self.qk(stage, copy_ahead)
        scores = self.masked(_flat(_flat(s)), n0)
        m, l_, alpha, p = self.softmax(scores, m, l_, biases)
        o = [arith.mulf(x, alpha[self._o_row(e)]) for e, x in enumerate(o)]
        o = self.pv(stage, p, o)
        # Step j + 1 has landed and every thread's copies are visible; every
        # warp is done with step j's stage.
        nvvm.CpAsyncWaitGroupOp(t.stages - 2)
        gpu.barrier()
        return o + m + l_ + [following(read), following(write)]

    def _o_row(self, e):
        """Which of the thread's 2 mt rows O value ``e`` (m16 fragment, n8
        tile, 4 values) lies in."""
        mi, c = e // (self.ot * 4), e % 4
        return 2 * mi + c // 2

    def _s_row(self, e):
        """Which of the thread's rows score ``e`` (m16 fragment, n8 tile, 4
        values) lies in, and its column less the thread's first."""
        mi, rest = divmod(e, self.nt * 4)
        j, c = divmod(rest, 4)
        return 2 * mi + c // 2, 8 * j + c % 2

    def qk(self, stage, copy_ahead):
        """S = Q K_jᵀ of the step's stage ``stage``: [mi][n8 tile] lists of 4
        f32. The copies ahead go out after the first slice's loads (ptxas
        keeps shared loads behind a cp.async before them)."""
        t, element = self.tile, self.att.element
        zero = f32(0.0)
        acc = [[[zero] * 4 for _ in range(self.nt)] for _ in range(t.mt)]

        def fragments(kk):
            a = [self.q_frags[mi][kk] if self.q_frags else self.q_fragment(mi, kk)
                 for mi in range(t.mt)]
            b = [ldmatrix(_add(arith.addi(stage, self.k_lane), jp * 16 * self.k.pitch + kk * 32))
                 for jp in range(self.nt // 2)]
            return a, b
        ahead = fragments(0)
        copy_ahead()
        for kk in range(self.kd):
            a, b = ahead
            if kk + 1 < self.kd:
                ahead = fragments(kk + 1)
            for jp in range(self.nt // 2):
                for mi in range(t.mt):
                    for half in range(2):
                        acc[mi][2 * jp + half] = mma(acc[mi][2 * jp + half], a[mi],
                                                     b[jp][2 * half:2 * half + 2], element)
        return acc

    def pv(self, stage, p, o):
        """O += P V_j: ``p`` the step's exponentials (f32, as S's values),
        rounded in pairs into A fragments; ``o`` the thread's O values (m16
        fragment, n8 tile of Dv, 4 values)."""
        t, element = self.tile, self.att.element
        tiles = [[o[(mi * self.ot + j) * 4:(mi * self.ot + j + 1) * 4] for j in range(self.ot)]
                 for mi in range(t.mt)]
        v_base = arith.addi(stage, self.v_lane)

        def fragment(mi, kk):
            # n8 tiles 2 kk and 2 kk + 1 of S: a0, a1 from the first (rows g,
            # g + 8), a2, a3 from the second.
            first = (mi * self.nt + 2 * kk) * 4
            x = p[first:first + 8]
            return [pair(x[0], x[1], element), pair(x[2], x[3], element),
                    pair(x[4], x[5], element), pair(x[6], x[7], element)]
        pairs_of_dv = -(-self.ot // 2)
        for kk in range(t.n // 16):
            a = [fragment(mi, kk) for mi in range(t.mt)]
            for dp in range(pairs_of_dv):
                b = ldmatrix(_add(v_base, kk * 16 * self.v.pitch + dp * 32), transpose=True)
                for mi in range(t.mt):
                    for half in range(2):
                        j = 2 * dp + half
                        if j < self.ot:
                            tiles[mi][j] = mma(tiles[mi][j], a[mi], b[2 * half:2 * half + 2],
                                               element)
        return _flat(_flat(tiles))

    # -- the softmax ----------------------------------------------------------

    def biases(self, n0):
        """The bias values at the thread's scores of the step at kv column
        ``n0``, times log2 e (f32), or None without a bias. The bias
        broadcasts over its dims of size 1; rows and columns past the ends
        are read clamped (the mask makes those scores -inf)."""
        att = self.att
        if att.bias is None:
            return None
        shape = list(ir.MemRefType(att.bias.type).shape)
        wide = str(ir.MemRefType(att.bias.type).element_type) == "f32"
        batch = self.b if shape[0] > 1 else _idx(0)
        head = self.h if shape[1] > 1 else _idx(0)
        rows = [arith.minui(r, _idx(att.sq - 1)) if shape[2] > 1 else _idx(0)
                for r in self.rows]
        base = arith.addi(n0, self.column)
        log2e = f32(LOG2E)
        out = []
        for e in range(self.tile.mt * self.nt * 4):
            row, column = self._s_row(e)
            col = _idx(0)
            if shape[3] > 1:
                col = arith.minui(_add(base, column), _idx(att.skv - 1))
            x = memref.load(att.bias, [batch, head, rows[row], col])
            if not wide:
                x = arith.extf(ir.F32Type.get(), x)
            out.append(arith.mulf(x, log2e))
        return out

    def masked(self, scores, n0):
        """``scores`` of the step at kv column ``n0`` with -inf where a row
        does not see the column (past Skv, right of its diagonal when
        causal, left of its window); tested only on the tiles that reach
        past one of those for some row of the warp."""
        t = self.tile
        return mask_columns(self.att, self.extent, scores, n0, t.n, self.rows, self.column,
                            self.first, t.rows, self._s_row)

    def softmax(self, scores, m, l_, biases=None):
        """One step of the online softmax (attention_tiles.online_softmax)
        over the thread's rows."""
        return online_softmax(scores, m, l_, self.c, lambda e: self._s_row(e)[0], biases)

    # -- the epilogue ---------------------------------------------------------

    def store(self, o, m, l_):
        """O / l rounded to o's type, and the statistics, for the thread's
        rows that exist."""
        att = self.att
        totals, empty, scale = row_sums(l_)
        o = [arith.mulf(x, scale[self._o_row(e)]) for e, x in enumerate(o)]
        element = ir.MemRefType(att.o.type).element_type

        def values(r, j):
            """Row r's two values of n8 tile j of Dv."""
            mi, half = divmod(r, 2)
            first = (mi * self.ot + j) * 4 + 2 * half
            return o[first], o[first + 1]
        if self.staged:
            self.store_staged(values)
        for r, row in enumerate(self.rows):
            def write(r=r, row=row):
                index = [self.b, self.h, row]
                if not self.staged:
                    pair_type = ir.VectorType.get([2], element)
                    for j in range(self.ot):
                        lo, hi = values(r, j)
                        if self.o_wide:
                            value = vector.from_elements(pair_type, [lo, hi])
                        else:
                            value = llvm.bitcast(pair_type, pair(lo, hi, att.element))
                        vector.store(value, att.o, index + [_add(self.column, 8 * j)],
                                     alignment=8 if self.o_wide else 4)
                if att.stats is not None:
                    def stats():
                        memref.store(log_sum_exp(m[r], totals[r], empty[r]), att.stats,
                                     index + [_idx(0)])
                    _if(_cmp("eq", self.t4, _idx(0)), stats)
            _if(_cmp("ult", row, _idx(att.sq)), write)

    def store_staged(self, values):
        """O through shared memory: each warp writes its rows of O into its
        own rows of the Q tile (no other warp reads them; the warp's last
        reads of them are behind a warp barrier), then each lane copies
        16-byte chunks of them to o, row by row (rows past Sq dropped)."""
        att, t = self.att, self.tile
        # The warp's ldmatrix reads of its Q rows are done (Q read again
        # each step) before any lane writes over them.
        nvvm.SyncWarpOp(_i(-1))
        for r in range(2 * t.mt):
            mi, half = divmod(r, 2)
            row = arith.addi(self.warp_row, _add(self.g, 16 * mi + 8 * half))
            at = arith.addi(self.base, _i64(arith.addi(arith.muli(row, _idx(self.q.pitch)),
                                                       arith.muli(self.column, _idx(2)))))
            for j in range(self.ot):
                lo, hi = values(r, j)
                llvm.store(pair(lo, hi, att.element), _shared_ptr(_add(at, 16 * j)),
                           alignment=4)
        nvvm.SyncWarpOp(_i(-1))
        per_row = att.dv // 8
        chunks = t.rows * per_row
        element = ir.MemRefType(att.o.type).element_type
        eight = ir.VectorType.get([8], element)
        for c in range(-(-chunks // WARP)):
            chunk = _add(self.lane, c * WARP)
            line = arith.divui(chunk, _idx(per_row))
            col = arith.muli(arith.remui(chunk, _idx(per_row)), _idx(8))
            row = arith.addi(self.first, line)
            ok = _cmp("ult", row, _idx(att.sq))
            if chunks % WARP and (c + 1) * WARP > chunks:
                ok = arith.andi(ok, _cmp("ult", chunk, _idx(chunks)))

            def copy(line=line, col=col, row=row):
                at = arith.addi(self.warp_row, line)
                offset = arith.addi(arith.muli(at, _idx(self.q.pitch)),
                                    arith.muli(col, _idx(2)))
                value = llvm.load(eight, _shared_ptr(arith.addi(self.base, _i64(offset))),
                                  alignment=16)
                vector.store(value, att.o, [self.b, self.h, row, col], alignment=16)
            _if(ok, copy)


def build_attention(fn, att, tile):
    """Replace kernel function ``fn``'s body by the attention forward kernel
    of ``att`` in ``tile``s. Returns what the plan should say of it."""
    kernel = FlashForward(fn, att, tile)
    kernel.build()
    return kernel.notes()
