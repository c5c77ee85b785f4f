"""tc-sm80's attention backward: two kernels in the FlashAttention-2 manner
on mma.sync (m16n8k16: bf16 or f16 products, f32 accumulators), fed by
cp.async, with no atomics: every gradient element is summed by one thread
in a fixed order, so two runs write the same bits.

With P = exp(scale S + bias - stats) recomputed from the forward's
log-sum-exp (a row at -inf has P = 0) and delta = rowsum(dO ∘ O)::

    dV = Pᵀ dO      dP = dO Vᵀ      dS = P ∘ (dP - delta)
    dQ = scale dS K                 dK = scale dSᵀ Q

1. ``DqKernel``: a block per ``16 warps`` query rows of one (batch, head),
   each warp 16 of them (one m16 fragment). Q and dO stay in shared
   memory; K and V tiles of ``dq_n`` kv rows come through a cp.async ring::

       prologue  cp.async Q, dO and step 0's K, V (one group), then a group
                 a step up to stages - 2; meanwhile each thread computes
                 delta of its two rows from o and do in global memory and
                 writes it to a workspace (the dK dV kernel reads it)
       steps     per kv tile the rows see: S = Q Kᵀ and dP = dO Vᵀ
                 (ldmatrix, mma.sync), P and dS in registers, dQ += dS K
                 (dS passes from the accumulators to A fragments in pairs,
                 K by ldmatrix.trans); wait for the next stage, barrier
       epilogue  scale dQ, rounded to dq's type, rows past Sq dropped

2. ``DkvKernel``: a block per ``16 warps`` kv rows of one (batch, kv head),
   K and V in shared memory, the Q and dO tiles of ``dkv_m`` query rows of
   every query head of the group through the ring (the group's heads in
   turn, each over its query tiles: one fixed order). Per step Sᵀ = K Qᵀ
   and dPᵀ = V dOᵀ, Pᵀ and dSᵀ (each column's log-sum-exp and delta read
   from global memory), dV += Pᵀ dO and dK += dSᵀ Q (dO and Q by
   ldmatrix.trans).

Both use the forward's shared layout (flash.py: rows of the head dim
rounded to 16 elements and 16 bytes of padding, zero-filled past S and
past D) and its fragment algebra: an accumulator of S (m16 x n8 tiles) is,
rounded in pairs, the A fragment of the next product over those columns.

Masks (attention_tiles.py): the dQ kernel steps over the kv tiles its rows
see (``query_block``) and masks as the forward does; the dK dV kernel over
the query tiles that see its kv rows, masking the transposed scores (query
column past Sq, before the kv row's diagonal when causal, past its window,
kv rows that are padding). Padding lengths, GQA, an additive bias (bf16,
f16 or f32, any broadcast; no dbias), causal at either diagonal and
sliding windows are implemented; ragged (packed) rows and paged K, V are
not.

Registers: a dK dV thread holds dK and dV of its 16 kv rows (D / 2 + Dv /
2 f32) beside Sᵀ, dPᵀ and its columns' statistics: head dims up to
MAX_HEAD_DIM.
"""

import math
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, gpu, llvm, memref, nvvm, scf, vector

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.math.scalar import fma
from dnnc.codegen.gpu.tensorcore.attention_tiles import (
    LOG2E, Extent, mask_columns, masked_select, negated, plus, query_block,
)
from dnnc.codegen.gpu.tensorcore.emit import (
    add as _add, cmp as _cmp, erase_replaced, ex2, f32, i as _i, idx as _idx, if_ as _if,
    launch, pair, quad, shared_base, to_i64 as _i64,
)
from dnnc.codegen.gpu.tensorcore.sm80.flash import (
    K_STEP, TileRows, ldmatrix, mma, padded, pitch, unimplemented,
)
from dnnc.codegen.gpu.tensorcore.sm80.support import MAX_SHARED, WARP, NotSupported

MAX_HEAD_DIM = 128
MAX_REGISTERS = 255
# What a thread keeps beside the accumulators and a step's scores:
# addresses, the fragments in flight, the softmax's temporaries.
SPARE_REGISTERS = 48
# The features of an AttentionBackward these kernels implement.
IMPLEMENTED = ("q", "k", "v", "o", "stats", "bias", "batch", "heads", "kv_heads", "sq", "skv",
               "d", "dv", "scale", "causal", "element", "diagonal", "window", "seq_len_q",
               "seq_len_kv", "do", "dq", "dk", "dv_grad")


@dataclass(frozen=True)
class BackwardTile:
    """Both kernels' blocks: ``warps`` warps of 16 rows (query rows in the
    dQ kernel, kv rows in the dK dV kernel); ``dq_n`` kv rows a step of the
    dQ kernel, ``dkv_m`` query rows a step of the dK dV kernel; ``stages``
    ring stages."""

    warps: int = 8
    dq_n: int = 64
    dkv_m: int = 32
    stages: int = 2

    @property
    def rows(self):
        return 16 * self.warps

    @property
    def threads(self):
        return WARP * self.warps


def smem_bytes(tile, d, dv):
    """(dQ kernel's, dK dV kernel's) dynamic shared memory: two resident
    tiles of ``rows`` rows, then the ring."""
    resident = tile.rows * (pitch(d) + pitch(dv))
    return (resident + tile.stages * tile.dq_n * (pitch(d) + pitch(dv)),
            resident + tile.stages * tile.dkv_m * (pitch(d) + pitch(dv)))


def held_registers(tile, d, dv, biased):
    """(dQ kernel's, dK dV kernel's) f32 registers a thread holds through a
    step: the accumulators, the step's two products, the pairs of P and
    dS, and the bias values; the dK dV kernel also its columns' log-sum-exp
    and delta."""
    def step(n):
        return n // 2 + n // 2 + n // 4 + (n // 2 if biased else 0)
    return (d // 2 + step(tile.dq_n),
            d // 2 + dv // 2 + step(tile.dkv_m) + tile.dkv_m // 2)


def fits(tile, d, dv, biased, shared=MAX_SHARED):
    """Why ``tile`` does not fit head dims ``d``, ``dv`` (``biased``: with
    a bias) within ``shared`` bytes and a thread's registers, or None."""
    if tile.warps not in (4, 8) or tile.dq_n not in (32, 64, 128) \
            or tile.dkv_m not in (32, 64, 128) or not 2 <= tile.stages <= 4:
        return (f"backward tile of {tile.warps} warps, {tile.dq_n} kv rows and {tile.dkv_m} "
                f"query rows a step in {tile.stages} stages: expected 4 or 8 warps, 32, 64 or "
                "128 rows a step and 2 to 4 stages")
    budget = MAX_REGISTERS - SPARE_REGISTERS
    for kernel, held in zip(("dQ", "dK dV"), held_registers(tile, d, dv, biased)):
        if held > budget:
            return (f"D {d}, Dv {dv}: the {kernel} kernel holds {held} registers a thread, "
                    f"expected at most {budget}")
    for kernel, size in zip(("dQ", "dK dV"), smem_bytes(tile, d, dv)):
        if size > shared:
            return (f"the {kernel} kernel needs {size} bytes of shared memory, more than "
                    f"{shared}")
    return None


def tile_for(d, dv, biased, shared=MAX_SHARED):
    """The BackwardTile of head dims ``d``, ``dv``: 8 warps (128 rows a
    block in both kernels), 64 kv rows a dQ step, 64 query rows a dK dV
    step for head dims up to 64 (no bias), else 32 (dK, dV and the step's
    scores in a thread's registers); the first that ``fits``, or None."""
    wide = max(d, dv) > 64 or biased
    for dkv_m in ((32,) if wide else (64, 32)):
        for dq_n in (64, 32):
            for warps in (8, 4):
                tile = BackwardTile(warps, dq_n, dkv_m)
                if fits(tile, d, dv, biased, shared) is None:
                    return tile
    return None


def check(att, tile):
    """Raise NotSupported unless these kernels with ``tile`` compute the
    backward ``att`` (tensorcore/attention.AttentionBackward)."""
    feature = unimplemented(att, IMPLEMENTED)
    if feature is not None:
        raise NotSupported(f"the attention's {feature.replace('_', ' ')}: not implemented in "
                           "tc-sm80's attention backward")
    if att.element not in ("bf16", "f16"):
        raise NotSupported(f"{att.element} q, k, v (tc-sm80's attention backward takes bf16 "
                           "and f16)")
    for name, d in (("D", att.d), ("Dv", att.dv)):
        if d % 8 or not 8 <= d <= MAX_HEAD_DIM:
            raise NotSupported(f"head dim {name} = {d}: tc-sm80's attention backward takes "
                               f"multiples of 8 up to {MAX_HEAD_DIM} (dK and dV of a kv row "
                               "are held in a thread's registers)")
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


def _flat(tiles):
    return [x for tile in tiles for x in tile]


def _position(e):
    """Which of the thread's 2 rows accumulator value ``e`` (n8 tile, 4
    values) lies in, and its column less the thread's first."""
    j, c = divmod(e, 4)
    return c // 2, 8 * j + c % 2


class _Kernel:
    """What both kernels share: the warp geometry, the ldmatrix lane
    offsets, the products, the ring."""

    def __init__(self, att, tile, resident, ring, grid):
        self.att, self.tile = att, tile
        self.resident, self.ring_tiles = resident, ring    # (TileRows, TileRows) each
        self.stage_bytes = sum(r.bytes for r in ring)
        self.grid = grid
        self.c = att.scale * LOG2E                          # scores to base-2 exponents

    @property
    def shared(self):
        return sum(r.bytes for r in self.resident) + self.tile.stages * self.stage_bytes

    def geometry(self):
        tid = gpu.thread_id(gpu.Dimension.x)
        self.tid = tid
        warp, lane = arith.divui(tid, _idx(WARP)), arith.remui(tid, _idx(WARP))
        self.lane = lane
        self.g, self.t4 = arith.divui(lane, _idx(4)), arith.remui(lane, _idx(4))
        self.warp_row = arith.muli(warp, _idx(16))
        self.column = arith.muli(self.t4, _idx(2))    # the thread's first column of an n8 tile
        self.base = shared_base()
        self.bases = [self.base, _add(self.base, self.resident[0].bytes)]
        self.ring = _add(self.bases[1], self.resident[1].bytes)
        # ldmatrix.x4 row addresses: matrix i = lane / 8 (row r = lane % 8).
        # A (row-major, the warp's 16 rows): rows 8 (i % 2), k columns 8 (i
        # / 2). B read as [n][k] (K-major): n rows 8 (i / 2), k columns
        # 8 (i % 2): b0, b1 of two n8 tiles. B read as [k][n] (.trans): k
        # rows 8 (i % 2), n columns 8 (i / 2).
        i, r = arith.divui(lane, _idx(8)), arith.remui(lane, _idx(8))
        i_lo, i_hi = arith.remui(i, _idx(2)), arith.divui(i, _idx(2))

        def offset(row_part, col_part, row_pitch, first_row=None):
            row = arith.addi(arith.muli(row_part, _idx(8)), r)
            if first_row is not None:
                row = arith.addi(row, first_row)
            return _i64(arith.addi(arith.muli(row, _idx(row_pitch)),
                                   arith.muli(col_part, _idx(16))))
        self.a_lane = [arith.addi(base, offset(i_lo, i_hi, rows.pitch, self.warp_row))
                       for base, rows in zip(self.bases, self.resident)]
        self.b_lane = [offset(i_hi, i_lo, rows.pitch) for rows in self.ring_tiles]
        self.bt_lane = [offset(i_lo, i_hi, rows.pitch) for rows in self.ring_tiles]

    def ring_tile(self, stage, which):
        """The shared address (i64) of ring tile ``which`` in ``stage``."""
        return stage if which == 0 else _add(stage, self.ring_tiles[0].bytes)

    def product_nt(self, which, stage, n, width, before=None):
        """Resident tile ``which``'s warp rows times ring tile ``which`` of
        ``stage`` transposed, over ``width`` head-dim columns: [n8 tile] lists
        of 4 f32 (n ring rows). ``before()`` runs after the first slice's
        loads (the copies ahead: ptxas keeps shared loads behind a cp.async
        before them)."""
        element = self.att.element
        nt, kd = n // 8, padded(width) // K_STEP
        zero = f32(0.0)
        acc = [[zero] * 4 for _ in range(nt)]
        pitch_b = self.ring_tiles[which].pitch
        b_base = arith.addi(self.ring_tile(stage, which), self.b_lane[which])

        def fragments(kk):
            a = ldmatrix(_add(self.a_lane[which], kk * 32))
            b = [ldmatrix(_add(b_base, jp * 16 * pitch_b + kk * 32)) for jp in range(nt // 2)]
            return a, b
        ahead = fragments(0)
        if before is not None:
            before()
        for kk in range(kd):
            a, b = ahead
            if kk + 1 < kd:
                ahead = fragments(kk + 1)
            for jp in range(nt // 2):
                for half in range(2):
                    acc[2 * jp + half] = mma(acc[2 * jp + half], a, b[jp][2 * half:2 * half + 2],
                                             element)
        return acc

    def product_nn(self, acc, values, which, stage, n, width):
        """``acc`` (the thread's values of [16 rows, ``width``]: n8 tiles of
        4) += ``values`` (f32, as a product_nt's over ``n`` ring rows,
        rounded in pairs into A fragments) times ring tile ``which`` of
        ``stage`` ([n rows][width], read .trans)."""
        element = self.att.element
        ot = width // 8
        tiles = [acc[4 * j:4 * j + 4] for j in range(ot)]
        pitch_b = self.ring_tiles[which].pitch
        b_base = arith.addi(self.ring_tile(stage, which), self.bt_lane[which])
        for kk in range(n // 16):
            # n8 tiles 2 kk and 2 kk + 1: a0, a1 from the first (rows g,
            # g + 8), a2, a3 from the second.
            x = values[8 * kk:8 * kk + 8]
            a = [pair(x[0], x[1], element), pair(x[2], x[3], element),
                 pair(x[4], x[5], element), pair(x[6], x[7], element)]
            for dp in range(-(-ot // 2)):
                b = ldmatrix(_add(b_base, kk * 16 * pitch_b + dp * 32), transpose=True)
                for half in range(2):
                    j = 2 * dp + half
                    if j < ot:
                        tiles[j] = mma(tiles[j], a, b[2 * half:2 * half + 2], element)
        return _flat(tiles)

    def bias_at(self, b, h, queries, keys):
        """The bias at (``queries[e]``, ``keys[e]``) (clamped into the bias,
        its dims of size 1 broadcast) times log2 e, f32; None without."""
        att = self.att
        if att.bias is None:
            return None
        shape = list(ir.MemRefType(att.bias.type).shape)
        wide = str(ir.MemRefType(att.bias.type).element_type) == "f32"
        batch = b if shape[0] > 1 else _idx(0)
        head = h if shape[1] > 1 else _idx(0)
        out = []
        for q, k in zip(queries, keys):
            row = arith.minui(q, _idx(att.sq - 1)) if shape[2] > 1 else _idx(0)
            col = arith.minui(k, _idx(att.skv - 1)) if shape[3] > 1 else _idx(0)
            x = memref.load(att.bias, [batch, head, row, col])
            if not wide:
                x = arith.extf(ir.F32Type.get(), x)
            out.append(arith.mulf(x, f32(LOG2E)))
        return out

    def gradients(self, p_of, s, dp, biases, shift, delta):
        """(P, dS) of scores ``s`` and ``dp`` (value e's shift and delta by
        ``p_of(e)``): P = 2^(c s + bias - shift), dS = P (dP - delta)."""
        p, ds = [], []
        for e, (x, y) in enumerate(zip(s, dp)):
            key = p_of(e)
            offset = arith.negf(shift[key])
            if biases is not None:
                offset = arith.subf(biases[e], shift[key])
            pe = ex2(fma(x, f32(self.c), offset))
            p.append(pe)
            ds.append(arith.mulf(pe, arith.subf(y, delta[key])))
        return p, ds

    @staticmethod
    def lse_shift(lse):
        """A log-sum-exp in base 2, +inf where it is -inf (P = 0)."""
        return arith.select(arith.cmpf(arith.CmpFPredicate.OEQ, lse, f32(-math.inf)),
                            f32(math.inf), arith.mulf(lse, f32(LOG2E)))

    def run_steps(self, prologue, load_step, step, inits):
        """The ring: ``prologue()`` (the resident tiles' copies) with step 0's
        in one group, a group a step up to stages - 2, wait for the first,
        barrier; then per step j ``step(j, stage, copy_ahead, *carried)``
        -> carried, and the wait and barrier after it. Returns the carried
        values after the last step."""
        t = self.tile
        prologue()
        for s in range(t.stages - 1):
            stage = _add(self.ring, s * self.stage_bytes)
            _if(_cmp("ult", _idx(s), self.steps),
                lambda s=s, stage=stage: load_step(_idx(s), stage))
            nvvm.CpAsyncCommitGroupOp()
        nvvm.CpAsyncWaitGroupOp(t.stages - 2)
        gpu.barrier()
        ring_bytes = t.stages * self.stage_bytes

        def following(offset):
            nxt = _add(offset, self.stage_bytes)
            return arith.select(_cmp("eq", nxt, _i(ring_bytes, 64)), _i(0, 64), nxt)
        n = len(inits)
        loop = scf.ForOp(_idx(0), self.steps, _idx(1),
                         list(inits) + [_i(0, 64), _i((t.stages - 1) * self.stage_bytes, 64)])
        with ir.InsertionPoint(loop.body):
            j = loop.induction_variable
            carried = list(loop.inner_iter_args)
            read, write = carried[n:]

            def copy_ahead():
                # Step j + stages - 1 goes to the stage step j - 1 used:
                # every warp was done with it at the last barrier.
                ahead = _add(j, t.stages - 1)
                _if(_cmp("ult", ahead, self.steps),
                    lambda: load_step(ahead, arith.addi(self.ring, write)))
                nvvm.CpAsyncCommitGroupOp()
            out = step(j, arith.addi(self.ring, read), copy_ahead, carried[:n])
            # Step j + 1 has landed and every thread's copies are visible;
            # every warp is done with step j's stage.
            nvvm.CpAsyncWaitGroupOp(t.stages - 2)
            gpu.barrier()
            scf.YieldOp(list(out) + [following(read), following(write)])
        nvvm.CpAsyncWaitGroupOp(0)
        return list(loop.results)[:n]

    def store(self, values, buffer, b, h, rows, limit, width, scale=None):
        """The thread's accumulator ``values`` of [16 rows, ``width``] (times
        ``scale``) into ``buffer`` [B, H, S, width] at ``rows`` (its two),
        those below ``limit``."""
        element = ir.MemRefType(buffer.type).element_type
        wide = isinstance(element, ir.F32Type)
        pair_type = ir.VectorType.get([2], element)
        if scale is not None:
            values = [arith.mulf(x, f32(scale)) for x in values]
        for r, row in enumerate(rows):
            def write(r=r, row=row):
                for j in range(width // 8):
                    lo, hi = values[4 * j + 2 * r], values[4 * j + 2 * r + 1]
                    if wide:
                        value = vector.from_elements(pair_type, [lo, hi])
                    else:
                        value = llvm.bitcast(pair_type, pair(lo, hi, self.att.element))
                    vector.store(value, buffer, [b, h, row, _add(self.column, 8 * j)],
                                 alignment=8 if wide else 4)
            _if(_cmp("ult", row, limit), write)


class DqKernel(_Kernel):
    """dQ (and delta) for ``tile.rows`` query rows of one (batch, head)."""

    def __init__(self, att, tile, delta):
        t = tile.threads
        super().__init__(att, tile,
                         (TileRows(att.q, tile.rows, att.d, att.sq, t),
                          TileRows(att.do, tile.rows, att.dv, att.sq, t)),
                         (TileRows(att.k, tile.dq_n, att.d, att.skv, t),
                          TileRows(att.v, tile.dq_n, att.dv, att.skv, t)),
                         (-(-att.sq // tile.rows), att.batch * att.heads))
        self.delta = delta

    def kernel(self):
        att, n = self.att, self.tile.dq_n
        self.geometry()
        self.b, self.h, hk, self.m0, self.start, self.steps, self.extent = \
            query_block(att, self.tile.rows, n)
        q_plan = self.resident[0].prepare(self.tid, self.b, self.h)
        do_plan = self.resident[1].prepare(self.tid, self.b, self.h)
        k_plan = self.ring_tiles[0].prepare(self.tid, self.b, hk)
        v_plan = self.ring_tiles[1].prepare(self.tid, self.b, hk)
        first = arith.addi(self.m0, self.warp_row)
        rows = [arith.addi(first, _add(self.g, 8 * half)) for half in range(2)]
        clamped = [arith.minui(r, _idx(att.sq - 1)) for r in rows]

        known = {}

        def prologue():
            self.resident[0].load(q_plan, self.bases[0], self.m0)
            self.resident[1].load(do_plan, self.bases[1], self.m0)
            # The rows' log-sum-exp and delta, read from global memory while
            # the copies fly; delta into the workspace for the dK dV kernel.
            known["shift"] = [self.lse_shift(memref.load(att.stats,
                                                         [self.b, self.h, r, _idx(0)]))
                              for r in clamped]
            known["delta"] = [self.row_delta(r) for r in clamped]
            for row, value in zip(rows, known["delta"]):
                _if(arith.andi(_cmp("eq", self.t4, _idx(0)), _cmp("ult", row, _idx(att.sq))),
                    lambda row=row, value=value: memref.store(value, self.delta,
                                                              [self.b, self.h, row]))

        def load_step(j, stage):
            n0 = arith.muli(arith.addi(self.start, j), _idx(n))
            self.ring_tiles[0].load(k_plan, stage, n0)
            self.ring_tiles[1].load(v_plan, _add(stage, self.ring_tiles[0].bytes), n0)

        def step(j, stage, copy_ahead, carried):
            n0 = arith.muli(arith.addi(self.start, j), _idx(n))
            biases = self.bias_at(self.b, self.h,
                                  [rows[_position(e)[0]] for e in range(n // 2)],
                                  [_add(arith.addi(n0, self.column), _position(e)[1])
                                   for e in range(n // 2)])
            s = _flat(self.product_nt(0, stage, n, att.d, copy_ahead))
            s = mask_columns(att, self.extent, s, n0, n, rows, self.column, first, 16,
                             _position)
            dp = _flat(self.product_nt(1, stage, n, att.dv))
            _, ds = self.gradients(lambda e: _position(e)[0], s, dp, biases, known["shift"],
                                   known["delta"])
            return self.product_nn(carried, ds, 0, stage, n, att.d)
        dq = self.run_steps(prologue, load_step, step, [f32(0.0)] * (att.d // 2))
        # Rows past a padded length saw no column (P = 0): their dQ is 0.
        self.store(dq, att.dq, self.b, self.h, rows, _idx(att.sq), att.d, att.scale)

    def row_delta(self, row):
        """rowsum(dO ∘ O) of ``row``: each thread of the quad sums its
        columns 8 j + 2 t, + 1, then the quad exchanges."""
        att = self.att
        two = ir.VectorType.get([2], ir.F32Type.get())

        def load(buffer, column):
            element = ir.MemRefType(buffer.type).element_type
            x = vector.load(ir.VectorType.get([2], element), buffer,
                            [self.b, self.h, row, column])
            return x if isinstance(element, ir.F32Type) else arith.extf(two, x)
        total = f32(0.0)
        for j in range(att.dv // 8):
            column = _add(self.column, 8 * j)
            both = arith.mulf(load(att.o, column), load(att.do, column))
            for lane in range(2):
                total = arith.addf(total, vector.extract(both, [], [lane]))
        return quad(arith.addf, total)


class DkvKernel(_Kernel):
    """dK and dV for ``tile.rows`` kv rows of one (batch, kv head)."""

    def __init__(self, att, tile, delta):
        t = tile.threads
        super().__init__(att, tile,
                         (TileRows(att.k, tile.rows, att.d, att.skv, t),
                          TileRows(att.v, tile.rows, att.dv, att.skv, t)),
                         (TileRows(att.q, tile.dkv_m, att.d, att.sq, t),
                          TileRows(att.do, tile.dkv_m, att.dv, att.sq, t)),
                         (-(-att.skv // tile.rows), att.batch * att.kv_heads))
        self.delta = delta

    def place(self):
        """The block's batch entry, kv head, first kv row and the query
        tiles that see its kv rows: kv row j is seen by query rows i >= j -
        shift when causal, i <= j - shift + window - 1 with a window, i < Sq
        (Lq with padding); none when the kv rows are all padding."""
        att, m, rows = self.att, self.tile.dkv_m, self.tile.rows
        head = gpu.block_id(gpu.Dimension.y)
        self.b = arith.divui(head, _idx(att.kv_heads))
        self.hk = arith.remui(head, _idx(att.kv_heads))
        self.n0 = arith.muli(gpu.block_id(gpu.Dimension.x), _idx(rows))
        ext = self.extent = Extent(att, self.b)
        if ext.padding:
            end = arith.divui(_add(ext.sq, m - 1), _idx(m))
        else:
            end = _idx(-(-att.sq // m))
        shift = negated(ext.shift)
        if att.window:
            last = arith.maxsi(plus(self.n0, shift, rows + att.window - 1), _idx(0))
            end = arith.minui(arith.divui(_add(last, m - 1), _idx(m)), end)
        self.first_tile = _idx(0)
        if att.causal:
            first = arith.maxsi(plus(self.n0, shift), _idx(0))
            self.first_tile = arith.minui(arith.divui(first, _idx(m)), end)
        self.span = arith.subi(end, self.first_tile)
        if ext.padding:
            self.span = arith.select(_cmp("uge", self.n0, ext.skv), _idx(0), self.span)
        self.steps = arith.muli(self.span, _idx(att.group))

    def at_step(self, j):
        """(query head, first query row) of step ``j``: the group's heads in
        turn, each over its query tiles."""
        span = arith.maxsi(self.span, _idx(1))
        g = arith.divui(j, span)
        tile = arith.addi(self.first_tile, arith.remui(j, span))
        head = arith.addi(arith.muli(self.hk, _idx(self.att.group)), g) \
            if self.att.group > 1 else self.hk
        return head, arith.muli(tile, _idx(self.tile.dkv_m))

    def kernel(self):
        att, m = self.att, self.tile.dkv_m
        self.geometry()
        self.place()
        k_plan = self.resident[0].prepare(self.tid, self.b, self.hk)
        v_plan = self.resident[1].prepare(self.tid, self.b, self.hk)
        # The ring's plans for the group's first head; a step of head h
        # adds (h - first) head strides.
        first_head = arith.muli(self.hk, _idx(att.group)) if att.group > 1 else self.hk
        plans = [rows.prepare(self.tid, self.b, first_head) for rows in self.ring_tiles]
        first = arith.addi(self.n0, self.warp_row)
        rows = [arith.addi(first, _add(self.g, 8 * half)) for half in range(2)]

        def prologue():
            self.resident[0].load(k_plan, self.bases[0], self.n0)
            self.resident[1].load(v_plan, self.bases[1], self.n0)

        def load_step(j, stage):
            head, m0 = self.at_step(j)
            at = stage
            for rows_, (base, lead, plan) in zip(self.ring_tiles, plans):
                step_h = arith.subi(head, first_head)
                lead = arith.addi(lead, _i64(arith.muli(step_h, _idx(rows_.strides[1] * 2))))
                rows_.load((base, lead, plan), at, m0)
                at = _add(at, rows_.bytes)
        count = m // 2

        def step(j, stage, copy_ahead, carried):
            head, m0 = self.at_step(j)
            dv, dk = carried[:att.dv // 2], carried[att.dv // 2:]
            base = arith.addi(m0, self.column)
            biases = self.bias_at(self.b, head,
                                  [_add(base, _position(e)[1]) for e in range(count)],
                                  [rows[_position(e)[0]] for e in range(count)])
            # The log-sum-exp and delta of the thread's query columns.
            shift, deltas = {}, {}
            for e in range(count):
                key = _position(e)[1]
                if key in shift:
                    continue
                q = arith.minui(_add(base, key), _idx(att.sq - 1))
                shift[key] = self.lse_shift(memref.load(att.stats, [self.b, head, q, _idx(0)]))
                deltas[key] = memref.load(self.delta, [self.b, head, q])
            st = _flat(self.product_nt(0, stage, m, att.d, copy_ahead))
            st = self.masked(st, m0, rows, first)
            dpt = _flat(self.product_nt(1, stage, m, att.dv))
            p, ds = self.gradients(lambda e: _position(e)[1], st, dpt, biases, shift, deltas)
            dv = self.product_nn(dv, p, 1, stage, m, att.dv)
            dk = self.product_nn(dk, ds, 0, stage, m, att.d)
            return dv + dk
        out = self.run_steps(prologue, load_step, step, [f32(0.0)] * ((att.dv + att.d) // 2))
        dv, dk = out[:att.dv // 2], out[att.dv // 2:]
        self.store(dk, att.dk, self.b, self.hk, rows, _idx(att.skv), att.d, att.scale)
        self.store(dv, att.dv_grad, self.b, self.hk, rows, _idx(att.skv), att.dv)

    def masked(self, scores, m0, rows, first):
        """Sᵀ (rows kv, columns queries from ``m0``) with -inf where the
        query does not see the kv row: past Sq, before the kv row's
        diagonal (q < kv - shift) when causal, past its window (q > kv -
        shift + window - 1), or the kv row past a padded length; tested only
        in the steps whose tile reaches one of those for some kv row of the
        warp's 16 from ``first``."""
        att, m, ext = self.att, self.tile.dkv_m, self.extent
        end = _add(m0, m)
        need = []
        if ext.padding:
            need.append(_cmp("ugt", end, ext.sq))
            need.append(_cmp("sgt", _add(first, 16), ext.skv))
        elif att.sq % m:
            need.append(_cmp("ugt", end, _idx(att.sq)))
        shift = negated(ext.shift)
        if att.causal:
            need.append(_cmp("sgt", plus(first, shift, 15), m0))
        if att.window:
            need.append(_cmp("sgt", end, plus(first, shift, att.window)))

        def bad_of():
            i32 = ir.IntegerType.get_signless(32)
            base = arith.addi(m0, self.column)

            def offset(x):
                return arith.index_cast(i32, arith.subi(x, base))
            high = offset(plus(ext.sq))
            lows = [offset(plus(r, shift)) for r in rows]
            tops = [offset(plus(r, shift, att.window - 1)) for r in rows]
            dead = [_cmp("sge", r, plus(ext.skv)) for r in rows] if ext.padding else None

            def bad(e):
                row, col = _position(e)
                o = _i(col)
                out = _cmp("sge", o, high)
                if att.causal:
                    out = arith.ori(out, _cmp("slt", o, lows[row]))
                if att.window:
                    out = arith.ori(out, _cmp("sgt", o, tops[row]))
                if dead:
                    out = arith.ori(out, dead[row])
                return out
            return bad
        return masked_select(scores, need, bad_of)


def build_attention_backward(fn, att, tile):
    """Replace kernel function ``fn``'s body by the two backward kernels of
    ``att`` in ``tile`` (a delta workspace between them). Returns what the
    plan should say of it."""
    check(att, tile)
    body = irutil.body(fn)
    old = [op.operation for op in body.operations]
    ret = old[-1]
    with ir.InsertionPoint(ret), ret.location:
        delta = memref.alloc(ir.MemRefType.get([att.batch, att.heads, att.sq],
                                               ir.F32Type.get()), [], [])
        for kernel in (DqKernel(att, tile, delta), DkvKernel(att, tile, delta)):
            launch(kernel.grid, tile.threads, kernel.shared, kernel.kernel)
    erase_replaced(old[:-1])
    return [f"attention backward on mma.sync: a dQ kernel ({tile.rows} query rows a block "
            f"over {tile.warps} warps, {tile.dq_n} kv rows a step; delta = rowsum(dO o O) "
            f"into a workspace) and a dK dV kernel ({tile.rows} kv rows a block, "
            f"{tile.dkv_m} query rows a step{', the group of query heads in turn' if att.group > 1 else ''}), "
            f"K, V and Q, dO through cp.async rings of {tile.stages} stages, no atomics "
            "(deterministic)"]
