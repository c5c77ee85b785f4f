"""tc-sm90's attention backward as one kernel in the FlashAttention-2/3
manner: five products a step where the two-kernel backward
(flash_backward.py, the deterministic mode) runs seven, dQ summed over the
kv blocks by TMA reduce-adds into an f32 workspace.

With P = exp(scale S - stats), delta = rowsum(dO ∘ O) and dS = P ∘ (dP -
delta) (flash_backward.py)::

    launch 1  Preprocess (flash_backward_dq.py): delta into a workspace,
              the f32 dQ workspace ``dq_sum`` zeroed
    launch 2  FusedKernel: a work unit per 128 kv rows of one (batch, kv
              head) (backward_units.py: persistent blocks looping over
              units, or a block a unit), K and V resident, Q and dO tiles
              of 64 query rows (each query head of the group, or of the
              unit's part of it, in turn) through a ring:
                  Sᵀ = K Qᵀ, dPᵀ = V dOᵀ      (SS; per warpgroup 64 kv rows)
                  Pᵀ, dSᵀ in registers
                  dV += Pᵀ dO                  (RS, as flash_backward; runs
                                                while dS is staged)
                  dS -> shared memory, then
                  dQ_i (the consumer's part) = dS K  (SS, both MN-major)
                  dK += dSᵀ Q                  (RS)
                  dq_sum[rows of Q_i] += dQ_i  (TMA tensor reduce-add, f32,
                                                while dK runs)
    launch 3  Convert (flash_backward_dq.py): dq = scale dq_sum, rounded
    launch 4  with the group's heads in parts: group_sum
              (flash_backward_dq.py), dK and dV summed over the parts

Warp roles: warpgroup 0 the producer (one thread: per unit K and V behind
their barrier, then the unit's steps' Q and dO tiles into the ring, as
flash_backward); warpgroups 1 and 2 the consumers, consumer c owning kv
rows 64 c .. 64 c + 63 of the unit for Sᵀ, dPᵀ, dK and dV, and columns
c D / 2 .. of dQ_i.

From one unit to the next (persistent blocks): the steps are numbered
across the block's units (the ring's slots and parities, the parity of the
dS tiles and of the lse/delta buffers), so nothing is re-initialized and
every argument below about step j and j - 1 or j - 2 holds across a unit's
edge as within it. K and V are guarded by two barriers: ``resident_full``
(the producer's expect_tx and the loads; consumers wait for phase k of a
block's k-th unit) and ``resident_empty`` (count 2: each consumer's leader
arrives once the last wgmma of its unit has completed, the unit's last
step having waited for all of its groups; the producer waits for phase
k - 1 before loading unit k's K and V, a fresh barrier passing parity 1 at
once). Both consumers read all 128 kv rows of K (dQ_i's B, D 128), hence
both arrive. dK and dV go from registers to global memory after the
arrival, so the next unit's K and V load under those stores. A unit
without steps (its kv rows all masked) still loads K and V and arrives,
so the phases stay in step; it writes zeros.

Each consumer writes its dSᵀ into a shared tile, stored MN-major for
dQ's A (a 128-byte row per kv row, 64 query columns, 128-byte swizzle: a
thread's pair of adjacent query columns is one 4-byte store); K is read
MN-major for dQ's B. How the consumers share dQ_i (``dq_columns``):

* D 128: each computes half of its columns (N 64, K 128: one 64-column box
  of K each) from dS of all 128 kv rows, so both write their dSᵀ and meet
  at named barrier ``MEET`` (256 threads) before either issues dQ_i. The
  tile is doubled (step parity): consumer a writes tile j % 2 at step j
  only after passing the meeting of step j - 1, which consumer b reached
  after waiting for its dQ_{j-2} (the last reader of tile j % 2).
* D 64: each computes all of dQ_i over its own 64 kv rows (N 64, K 64) and
  both add theirs: half of 64 columns would be an MN-major B narrower than
  the 128-byte swizzle's 64-column atom. A consumer reads only its own
  rows of the tile, so it needs no meeting. Both reduce-add their 64 x 64
  f32 part: twice D 128's reduce-add traffic a step.
* D 64, ``summed`` (config ``staged = 1``): as above, then consumer c keeps
  box c (columns 32 c ..) of its part and sends the other box to its
  partner through an exchange tile (16-byte stores, a thread's slots 2 KB
  apart so that a warp fills whole wavefronts; a tile per consumer and
  step parity), meets it at ``MEET``, adds the partner's box c and stages
  and reduce-adds that one box: one dQ_i a step reaches dq_sum, as for
  D 128, for a meeting, four 16-byte loads and 16 adds a thread more (its
  shared stores: four of 16 bytes and eight of 8, against sixteen of 8;
  ``reduce_dq_summed``). The heuristics keep the form above until the
  GPU times the two side by side.

A consumer's dQ_i (64 rows x ``dq_columns`` f32) goes from registers to
its staging tile (boxes of 64 rows x 32 f32 in 128-byte swizzle)
and one thread issues ``cp.reduce.async.bulk.tensor`` add.f32 per box
into dq_sum (rows past Sq dropped by TMA). The staging tile is reused the
next step: its leader waits for the previous reduce to have read it
(``cp.async.bulk.wait_group.read 0``) and the consumer meets on its own
named barrier before writing; after writing (and ``fence.proxy.async``)
it meets again before the leader issues. Why not red.global.add.v2.f32
from registers: a thread would issue one per pair of its dQ_i values (16 a
step for either D), as many instructions as the staging's 8-byte shared
stores (each with one XOR for its address), so the issue slots are about
even, two barriers and one thread's reduce-adds aside; but each would
reach L2 as an 8-byte atomic, where the reduce-add brings whole 128-byte
rows. By estimate (not measured), a B4 H16 S4096 D128 backward (1.4
TFLOP, ~2.5 ms at cuDNN's speed) would send ~5 x 10^8 such atomics, ~2 x
10^11 a second, about what L2's atomic units are reported to retire.

At D 64 under a causal mask a consumer whose kv rows no query row of the
step sees (consumer 1 on a head's first diagonal step) skips the step's
products (``idle`` in ``consumer``); D 128 computes them (its dS rows
zero), ptxas having spilled its accumulators with that branch.

A step's log-sum-exp and delta go through the consumer's shared buffer as
in flash_backward's dK dV kernel; masks (causal either alignment, a
window, padding lengths) are its ``masked``; the query tiles a block
visits are its (from the causal diagonal onward). No bias (its values a
step would not fit beside the accumulators), D 64 or 128 (dQ's halves in
whole 64-column boxes of K), Dv up to 128: the heuristics keep the two-kernel
path for the rest, saying why.
"""

import math
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, llvm, memref, nvvm, scf, vector

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.math.scalar import fma
from dnnc.codegen.gpu.tensorcore.attention_tiles import LOG2E, negated, plus
from dnnc.codegen.gpu.tensorcore.emit import (
    add as _add, cmp as _cmp, erase_replaced, ex2, f32, for_ as _for, i as _i, idx as _idx,
    if_ as _if, launder, shared_ptr as _shared_ptr, to_i32 as _to_i32, to_i64 as _to_i64,
)
from dnnc.codegen.gpu.tensorcore.sm90 import flash_backward_dq
from dnnc.codegen.gpu.tensorcore.sm90.backward_units import BAND, OnePerBlock, Persistent
from dnnc.codegen.gpu.tensorcore.sm90.flash import check_operands
from dnnc.codegen.gpu.tensorcore.sm90.flash_backward import (
    CONSUMER_REGISTERS, NARROW_HEAD_DIM, PRODUCER_REGISTERS, SPARE_REGISTERS, STAGED_BYTES,
    STAGED_SET, DkvKernel, _Blocks,
)
from dnnc.codegen.gpu.tensorcore.sm90.fragments import (
    column_of, pairs, row_of, struct, unpack, wgmma_mn, wgmma_rs, wgmma_ss,
)
from dnnc.codegen.gpu.tensorcore.sm90.mainloop import descriptor_constant, matrix_descriptor
from dnnc.codegen.gpu.tensorcore.sm90.rows import Rows, padded
from dnnc.codegen.gpu.tensorcore.sm90.scheduler import PERSISTENT_CTAS
from dnnc.codegen.gpu.tensorcore.sm90.support import (
    ALIGN, SMEM_LIMIT, WARPGROUP, NotSupported,
)
from dnnc.codegen.gpu.tensorcore.sm90.tma import SWIZZLE, swizzled_offset, tma_descriptor

KV_ROWS = 128            # a block's kv rows (64 a consumer)
QUERY_ROWS = 64          # a step's query rows
MAX_STAGES = 3
# f32 columns of a dQ staging box (one 128-byte swizzled row).
DQ_BOX = SWIZZLE // 4
# The dS tile: a 128-byte row (64 query columns, 16-bit) per kv row.
DS_TILE = KV_ROWS * SWIZZLE
# Named barriers: 1 + consumer (the consumer's own, flash_backward's
# staging ids 3 and 4 are not used here), MEET for both consumers.
OWN_BARRIER, MEET = 1, 3
# D 64 with dQ summed in shared memory (FusedTile.summed): the half of a
# consumer's dQ_i (64 x 32 f32) its partner sends, 16 values a thread.
EXCHANGE = 64 * DQ_BOX * 4


@dataclass(frozen=True)
class FusedTile:
    """``m`` query rows a step, ``n`` kv rows a unit, ``stages`` of the Q
    and dO ring; ``persistent``: as many blocks as the SMs hold, each
    looping over units (else a block a unit); ``parts``: the parts of a
    grouped-query group's heads that units take apart, their dK and dV
    summed after (backward_units.py)."""

    m: int = QUERY_ROWS
    n: int = KV_ROWS
    stages: int = 2
    persistent: bool = True
    parts: int = 1
    summed: bool = False

    def sums_dq(self, d):
        """Whether the consumers sum their dQ_i in shared memory before one
        reduce-add (``summed``, D 64; D 128 sends one dQ_i a step anyway)."""
        return self.summed and dq_columns(d) == d

    @property
    def threads(self):
        return 3 * WARPGROUP


def dq_columns(d):
    """The columns of dQ_i a consumer computes: half of them for D 128,
    all (over its own kv rows) for D 64 (module docstring)."""
    return d // 2 if d > 64 else d


def _extra_bytes(d, summed=False):
    """Shared memory after the ring: two dS tiles, the consumers' dQ
    staging (64 rows x ``dq_columns`` f32 each; ``summed``: one 32-column
    box each, then the exchange tiles, EXCHANGE bytes a consumer at either
    step parity), the log-sum-exp and delta buffers, and the barrier of the
    resident tiles' release (``FusedKernel.resident_empty``)."""
    if summed:
        dq = 2 * 64 * DQ_BOX * 4 + 4 * EXCHANGE
    else:
        dq = 2 * 64 * dq_columns(d) * 4
    return 2 * DS_TILE + dq + STAGED_BYTES + 8


def smem_bytes(d, dv, stages, summed=False):
    """The kernel's dynamic shared memory (``_Blocks.shared``); ``summed``
    as ``FusedTile.sums_dq``."""
    resident = KV_ROWS * (padded(d) + padded(dv)) * 2
    stage = QUERY_ROWS * (padded(d) + padded(dv)) * 2
    return ALIGN + resident + stages * stage + _extra_bytes(d, summed) + 8 * (1 + 2 * stages)


def tile_for(d, dv):
    """The FusedTile of head dims ``d``, ``dv``: as many ring stages as
    shared memory holds, up to MAX_STAGES (0 where two do not fit)."""
    fits = [s for s in range(2, MAX_STAGES + 1) if smem_bytes(d, dv, s) <= SMEM_LIMIT]
    return FusedTile(stages=max(fits, default=0))


def held_registers(d, dv, m=QUERY_ROWS):
    """Accumulator registers a consumer thread holds at once: dK (D / 2)
    and dV (Dv / 2) always, then either Sᵀ and dPᵀ (m / 2 each) or Pᵀ and
    dSᵀ as fragments (m / 4 each) beside dQ_i's columns (``dq_columns`` / 2)."""
    return d // 2 + dv // 2 + max(m, m // 2 + dq_columns(d) // 2)


def refusal(d, dv, biased, tile=None):
    """Why the fused kernel (in ``tile``, default ``tile_for``) does not
    take head dims ``d``, ``dv`` (``biased``: with an additive bias), or
    None; what ``check`` says beyond the operands' types, and what the
    heuristics ask before they rank it."""
    tile = tile or tile_for(d, dv)
    if d not in (64, 128):
        return (f"head dim D = {d}: the fused backward takes 64 or 128 (its consumers' parts "
                "of dQ in whole 64-column boxes of K)")
    if dv % 8 or not 8 <= dv <= NARROW_HEAD_DIM:
        return (f"head dim Dv = {dv}: the fused backward takes multiples of 8 up to "
                f"{NARROW_HEAD_DIM}")
    if biased:
        return ("a bias: the fused backward takes none (a step's bias values do not fit "
                "beside its accumulators)")
    if (tile.m, tile.n) != (QUERY_ROWS, KV_ROWS):
        return (f"tile {tile.m}x{tile.n}: the fused backward takes {QUERY_ROWS} query rows a "
                f"step and {KV_ROWS} kv rows a block")
    size = smem_bytes(d, dv, tile.stages, tile.sums_dq(d))
    if tile.stages < 2 or size > SMEM_LIMIT:
        return (f"{tile.stages} ring stages need {size} bytes of shared memory: expected 2 or "
                f"more within {SMEM_LIMIT}")
    held, budget = held_registers(d, dv), CONSUMER_REGISTERS - SPARE_REGISTERS
    if held > budget:
        return (f"head dims {d}, {dv}: {held} accumulator registers a thread, expected at "
                f"most {budget}")
    return None


def check(att, tile):
    """Raise NotSupported unless this kernel with ``tile`` computes the
    backward ``att`` (tensorcore/attention.AttentionBackward)."""
    check_operands(att, "the attention kernels take", NARROW_HEAD_DIM,
                   "the backward kernels take multiples of 8 up to")
    why = refusal(att.d, att.dv, att.bias is not None, tile)
    if why:
        raise NotSupported(why)
    if att.dbias is not None:
        raise NotSupported("dbias: the fused backward does not write it (the two kernels do)")
    if tile.parts > 1 and att.group % tile.parts:
        raise NotSupported(f"{tile.parts} parts of a group of {att.group} query heads: "
                           "expected a divisor of the group's size")


def launder32(x):
    """``launder`` of an i32."""
    return llvm.inline_asm(x.type, [x], "mov.b32 $0, $1;", "=r,r", has_side_effects=True)


class DqSum:
    """The f32 dQ workspace ``[B, H, Sq, D]`` and its TMA reduce-adds, in
    boxes of 64 rows x 32 columns (128-byte swizzle)."""

    def __init__(self, att, summed=False):
        self.att = att
        self.value = memref.alloc(ir.MemRefType.get([att.batch, att.heads, att.sq, att.d],
                                                    ir.F32Type.get()), [], [])
        self.descriptor = None
        # A consumer's part: ``summed`` (FusedTile.sums_dq), one box of the
        # pair's sum.
        self.boxes = 1 if summed else dq_columns(att.d) // DQ_BOX

    def make_descriptor(self):
        self.descriptor = tma_descriptor(self.value, [1, 1, 64, DQ_BOX])

    def reduce(self, src_i64, b, h, m0, column):
        """Add the consumer's staged boxes at ``src_i64`` into rows m0 ..
        m0 + 63, columns ``column`` .. of (b, h) (i32 values)."""
        kind = ir.Attribute.parse("#nvvm.tma_redux_kind<add>")
        for box in range(self.boxes):
            coords = [b, h, m0, arith.addi(column, _i(box * DQ_BOX))]
            nvvm.CpAsyncBulkTensorReduceOp(
                self.descriptor, _shared_ptr(_add(src_i64, box * 64 * SWIZZLE)), kind,
                list(reversed(coords)))


class FusedKernel(DkvKernel):
    """dK, dV of 128 kv rows of one (batch, kv head) a work unit (of the
    group's query heads, or of a part of them: ``parts``), and their part
    of dQ of every query tile that sees them; ``units`` (backward_units.py)
    says which units a block runs. Kv rows past Skv are masked
    (``mask_past_skv``): their dS goes into dQ (times K's zero rows)."""

    mask_past_skv = True

    def __init__(self, att, tile, delta, dq_sum, units, dkv_parts=None):
        self.m = tile.m
        self.summed = tile.sums_dq(att.d)
        _Blocks.__init__(self, att, [Rows(att.k, KV_ROWS, att.d), Rows(att.v, KV_ROWS, att.dv)],
                         (Rows(att.q, self.m, att.d), Rows(att.do, self.m, att.dv)),
                         tile.stages, _extra_bytes(att.d, self.summed))
        self.delta = delta
        self.dq_sum = dq_sum
        self.units = units
        # With parts: the f32 workspaces [parts x B, Hk, Skv, D or Dv] of
        # the partial dK and dV, unscaled.
        self.dkv_parts = dkv_parts
        self.kv_tiles = -(-att.skv // KV_ROWS)
        self.q_tiles = -(-att.sq // self.m)
        self.c = att.scale * LOG2E

    def grid(self):
        return self.units.grid()

    def launch(self, grid):
        self.dq_sum.make_descriptor()
        super().launch(grid)

    def place(self):
        """Nothing: each role places each of its units (``unit``)."""

    def init_barriers(self):
        super().init_barriers()
        nvvm.MBarrierInitOp(self.resident_empty, _i(2))

    @property
    def resident_empty(self):
        """The barrier both consumers arrive on once done with a unit's K
        and V, the producer waits on before loading the next unit's: the
        last 8 bytes of ``extra``."""
        return _shared_ptr(_add(self.extra_base, self.extra - 8))

    def unit(self, head, tile, part):
        """Place the unit: its kv rows, the query heads it walks."""
        parts = self.units.parts
        heads = None
        if part is not None:
            per = self.att.group // parts
            heads = (arith.muli(part, _idx(per)), per)
        self.place_unit(head, tile, heads)

    def producer(self):
        """Per unit (the same as the consumers', in the same order): K and V
        once the consumers are done with the previous unit's (phase k of
        ``resident_empty``), then its steps' Q and dO tiles into the ring,
        the steps numbered across units (``g``)."""
        nvvm.SetMaxRegisterOp(PRODUCER_REGISTERS, nvvm.SetMaxRegisterAction.decrease)

        def issue():
            def unit(k, head, tile, part, g):
                self.unit(head, tile, part)
                # Phase k - 1 done (a fresh barrier passes parity 1 at once).
                irutil.mbarrier_wait(self.resident_empty,
                                     _to_i32(arith.xori(arith.andi(k, _idx(1)), _idx(1))))
                self.load_resident()
                _for(_idx(0), self.steps, lambda j: self.load_step(j, arith.addi(g, j)))
                return [arith.addi(g, self.steps)]
            self.units.loop(unit, [_idx(0)])
        _if(_cmp("eq", self.tid, _idx(0)), issue)

    def consumer(self):
        """Per unit: the steps (module docstring), then dK and dV from
        registers; K and V released to the producer between the two."""
        att = self.att
        self.consumer_geometry()  # (no turns: the consumers meet every step)
        c = self.consumer_index
        local = arith.remui(self.tid, _idx(WARPGROUP))
        # Shared memory after the ring: dS tiles, dQ staging, lse/delta,
        # the resident_empty barrier.
        ds_base = self.extra_base
        staging = arith.addi(_add(ds_base, 2 * DS_TILE),
                             arith.muli(_to_i64(c), _i(self.dq_sum.boxes * 64 * SWIZZLE, 64)))
        own = arith.addi(_add(ds_base, self.extra - 8 - STAGED_BYTES),
                         arith.muli(_to_i64(c), _i(2 * STAGED_SET, 64)))
        i32 = ir.IntegerType.get_signless(32)
        own_barrier = arith.index_cast(i32, _add(c, OWN_BARRIER))
        # Summed (D 64): the exchange tiles after both stagings, [parity]
        # [consumer]; the thread's 16-byte slot k of either at 16 (128 k +
        # local), so that a warp's stores and loads fill whole wavefronts.
        exchange = _add(ds_base, 2 * DS_TILE + 2 * 64 * SWIZZLE)
        slot = arith.muli(_to_i64(local), _i(16, 64))
        k_desc, v_desc = self.resident_desc(0), self.resident_desc(1)
        mn = descriptor_constant(True, self.m * SWIZZLE)
        k_major = descriptor_constant(False, 0)
        # dQ_i's operands: split by columns (D 128), B is box c of K (64
        # columns, all 128 kv rows) and A all of dS; split by kv rows (D
        # 64), B is rows 64 c .. of K's box and A the same rows of dS.
        width = dq_columns(att.d)
        split_columns = width < att.d
        k_box_bytes = self.resident[0].box_bytes
        part = _to_i64(c)
        if split_columns:
            depth, k_part, ds_part = KV_ROWS, _i(k_box_bytes, 64), _i(0, 64)
            column_i32 = _to_i32(arith.muli(c, _idx(width)))
        else:
            depth, k_part = KV_ROWS // 2, _i(64 * SWIZZLE, 64)
            ds_part, column_i32 = k_part, _i(0)
            if self.summed:
                column_i32 = _to_i32(arith.muli(c, _idx(DQ_BOX)))
        k_part = arith.muli(part, k_part)
        ds_part = arith.muli(part, ds_part)
        b_desc = matrix_descriptor(arith.addi(self.bases[0], k_part),
                                   descriptor_constant(True, k_box_bytes))
        q_rows, do_rows = self.ring_tiles
        m, el = self.m, att.element

        def step(g, j, first, rows, dv, dk):
            """Step ``j`` of the unit, ``g`` of the block (the ring's slot and
            the parity of the dS tile and the lse/delta buffer): ``work``, or,
            D 64 under a causal mask, ``idle`` where no query row of the step
            sees the consumer's kv rows (consumer 1 on a unit's first
            diagonal step: its P and dS are all zero). D 128 works through
            such steps: with the idle branch ptxas spilled its accumulators
            (212 bytes, causal D 128), and with only Sᵀ and dPᵀ skipped (Pᵀ
            and dSᵀ zeros from a branch) 8 bytes (causal GQA, a window)."""
            head, m0 = self.at_step(j)
            descs = [launder(x) for x in (k_desc, v_desc, b_desc)]
            if not att.causal or split_columns:
                return work(g, head, m0, first, rows, dv, dk, *descs)
            unseen = _cmp("sgt", plus(first, negated(self.extent.shift)), _add(m0, m - 1))
            op = scf.IfOp(unseen, [dv.type, dk.type], has_else=True)
            with ir.InsertionPoint(op.then_block):
                idle(g, head, m0)
                scf.YieldOp([dv, dk])
            with ir.InsertionPoint(op.else_block):
                scf.YieldOp(work(g, head, m0, first, rows, dv, dk, *descs))
            return list(op.results)

        def send_dq(dq, parity, head, m0):
            """5. dQ_i's part into dq_sum (while dK runs)."""
            if self.summed:
                pair = arith.addi(exchange, arith.muli(_to_i64(parity), _i(2 * EXCHANGE, 64)))
                mine = arith.addi(arith.addi(pair, arith.muli(_to_i64(c), _i(EXCHANGE, 64))),
                                  slot)
                theirs = arith.addi(arith.addi(pair, arith.muli(
                    _to_i64(arith.subi(_idx(1), c)), _i(EXCHANGE, 64))), slot)
                self.reduce_dq_summed(dq, staging, mine, theirs, own_barrier, head, m0,
                                      column_i32)
            else:
                self.reduce_dq(dq, staging, own_barrier, head, m0, column_i32)

        def idle(g, head, m0):
            """A D 64 step whose products would all be zero for this
            consumer: dV and dK unchanged, no dQ_i to add. Its ring slot is
            released once full, as in a step that reads it: released before
            its fill, the arrival would count towards the slot's previous
            use, which the other consumer (not held back by a meeting
            without dQ summed) may still be reading. With dQ summed its part
            (zeros) still goes through the exchange: the other consumer
            meets it every step."""
            if self.summed:
                send_dq(llvm.mlir_zero(struct(width // 2)), arith.remui(g, _idx(2)), head, m0)
            self.stage_descs(g)
            self.release(g)

        def work(g, head, m0, first, rows, dv, dk, k_at, v_at, b_at):
            """The step's products (module docstring)."""
            # This thread's value of the step's log-sum-exp (threads 0 ..
            # m - 1) or delta (m .. 2 m - 1), loaded under the products.
            column = arith.remui(local, _idx(m))
            q = arith.minui(arith.addi(m0, column), _idx(att.sq - 1))
            lse = memref.load(att.stats, [self.b, head, q, _idx(0)])
            delta = memref.load(self.delta, [self.b, head, q])
            value = arith.select(_cmp("ult", local, _idx(m)), lse, delta)
            # 1. Sᵀ and dPᵀ.
            q_at, do_at = self.stage_descs(g)
            nvvm.WgmmaFenceAlignedOp()
            st = wgmma_ss(m, el, k_at, self.resident[0].box_bytes,
                          matrix_descriptor(q_at, k_major), q_rows.box_bytes, att.d)
            dpt = wgmma_ss(m, el, v_at, self.resident[1].box_bytes,
                           matrix_descriptor(do_at, k_major), do_rows.box_bytes, att.dv)
            nvvm.WgmmaGroupSyncAlignedOp()
            parity = arith.remui(g, _idx(2))
            buffer = arith.addi(own, arith.muli(_to_i64(parity), _i(STAGED_SET, 64)))
            _if(_cmp("ult", local, _idx(2 * m)), lambda: llvm.store(
                value, _shared_ptr(arith.addi(buffer, arith.muli(_to_i64(local), _i(4, 64)))),
                alignment=4))
            self.bar(own_barrier, WARPGROUP)
            nvvm.WgmmaWaitGroupSyncOp(0)
            # 2. Pᵀ and dSᵀ, and dV += Pᵀ dO issued at once (a group of its
            # own): it runs while dSᵀ is staged and the consumers meet.
            p, ds = self.gradients(st, dpt, m0, [launder(r) for r in rows], first, buffer)
            nvvm.WgmmaFenceAlignedOp()
            dv = wgmma_rs(dv, att.dv, el, p, matrix_descriptor(do_at, mn))
            nvvm.WgmmaGroupSyncAlignedOp()
            # 3. dSᵀ into the step's dS tile, for dQ.
            tile = arith.addi(ds_base, arith.muli(_to_i64(parity), _i(DS_TILE, 64)))
            self.stage_ds(ds, tile)
            self.fence_async()
            if split_columns:
                self.bar(_i(MEET), 2 * WARPGROUP)
            else:
                self.bar(own_barrier, WARPGROUP)
            # 4. The consumer's part of dQ_i (a group of its own), then dK.
            nvvm.WgmmaFenceAlignedOp()
            a_desc = matrix_descriptor(arith.addi(tile, ds_part),
                                       descriptor_constant(True, DS_TILE))
            dq = wgmma_mn(width, el, a_desc, b_at, depth)
            nvvm.WgmmaGroupSyncAlignedOp()
            dk = wgmma_rs(dk, att.d, el, ds, matrix_descriptor(q_at, mn))
            nvvm.WgmmaGroupSyncAlignedOp()
            # dV and dQ_i done (groups complete in order); dK may run on.
            nvvm.WgmmaWaitGroupSyncOp(1)
            send_dq(dq, parity, head, m0)
            nvvm.WgmmaWaitGroupSyncOp(0)
            self.release(g)
            return [dv, dk]

        def placed(head, tile, part):
            """The unit placed (``unit``): the consumer's first kv row and
            the thread's two."""
            self.unit(head, tile, part)
            first = arith.addi(self.n0, arith.muli(c, _idx(64)))
            return first, [arith.addi(first, _add(self.row_in, 8 * r)) for r in range(2)]

        parts = self.units.parts

        def unit(k, head, tile, part, g):
            self.unit(head, tile, part)
            steps = self.steps
            irutil.mbarrier_wait(self.resident_full, _to_i32(arith.andi(k, _idx(1))))

            # The unit's indices as one i32, (head kv_tiles + tile) parts +
            # part.
            code = arith.addi(arith.muli(head, _idx(self.kv_tiles)), tile)
            if part is not None:
                code = arith.addi(arith.muli(code, _idx(parts)), part)
            code = _to_i32(code)

            def at(j, dv, dk):
                # The unit placed again in the step from an opaque copy of
                # its code: what derives from it (batch, kv head, rows,
                # mask bounds) is then made in the step, not held across
                # the steps beside the accumulators (one register is).
                x = launder32(code)
                p = None
                if part is not None:
                    p = arith.remui(x, _i(parts))
                    x = arith.divui(x, _i(parts))
                index = ir.IndexType.get()
                first, rows = placed(*(arith.index_cast(index, y) for y in (
                    arith.divui(x, _i(self.kv_tiles)), arith.remui(x, _i(self.kv_tiles)))),
                    None if p is None else arith.index_cast(index, p))
                return step(arith.addi(g, j), j, first, rows, dv, dk)
            loop = _for(_idx(0), steps, at,
                        [llvm.mlir_zero(struct(att.dv // 2)), llvm.mlir_zero(struct(att.d // 2))])
            dv, dk = loop.results
            # Every product of the unit has completed (each step waits for
            # its own): K and V may be overwritten while dK and dV go out.
            _if(self.leader, lambda: nvvm.MBarrierArriveOp(None, self.resident_empty))
            first, _ = placed(head, tile, part)
            if part is None:
                self.store(dk, att.d, att.dk, self.b, self.hk, first, att.skv, att.scale)
                self.store(dv, att.dv, att.dv_grad, self.b, self.hk, first, att.skv)
            else:
                at_part = arith.addi(arith.muli(part, _idx(att.batch)), self.b)
                dk_parts, dv_parts = self.dkv_parts
                self.store(dk, att.d, dk_parts, at_part, self.hk, first, att.skv)
                self.store(dv, att.dv, dv_parts, at_part, self.hk, first, att.skv)
            return [arith.addi(g, steps)]
        self.units.loop(unit, [_idx(0)])
        # The last reduce has read its staging before the block's shared
        # memory goes.
        _if(self.leader, lambda: nvvm.CpAsyncBulkWaitGroupOp(0))

    @staticmethod
    def bar(barrier, threads):
        llvm.inline_asm(None, [barrier], f"bar.sync $0, {threads};", "r",
                        has_side_effects=True)

    @staticmethod
    def fence_async():
        """Make this thread's shared-memory stores visible to the async
        proxy (wgmma's and TMA's reads)."""
        llvm.inline_asm(None, [], "fence.proxy.async.shared::cta;", "",
                        has_side_effects=True)

    def gradients(self, st, dpt, m0, rows, first, buffer):
        """(Pᵀ, dSᵀ) as wgmma A fragments from the accumulators Sᵀ and dPᵀ,
        the columns' log-sum-exp and delta read from ``buffer``."""
        m, count = self.m, self.m // 2
        st = self.masked(unpack(st, count), m0, rows, first)
        dpt = unpack(dpt, count)
        # A column's two values (values e and e + 2, rows r and r + 8) are
        # next to each other: its log-sum-exp and delta are read just
        # before them, so that few are live at once.
        shift, deltas = {}, {}
        p, ds = [], []
        for e, (x, y) in enumerate(zip(st, dpt)):
            key = column_of(e)
            if key not in shift:
                at = arith.muli(_to_i64(_add(self.column, key)), _i(4, 64))
                lse = llvm.load(ir.F32Type.get(), _shared_ptr(arith.addi(buffer, at)))
                shift[key] = arith.select(
                    arith.cmpf(arith.CmpFPredicate.OEQ, lse, f32(-math.inf)), f32(math.inf),
                    arith.mulf(lse, f32(LOG2E)))
                deltas[key] = llvm.load(ir.F32Type.get(), _shared_ptr(
                    arith.addi(buffer, _add(at, 4 * m))))
            pe = ex2(fma(x, f32(self.c), arith.negf(shift[key])))
            p.append(pe)
            ds.append(arith.mulf(pe, arith.subf(y, deltas[key])))
        return pairs(p, self.att.element), pairs(ds, self.att.element)

    def swizzled_rows(self, base, first_row, chunk, byte):
        """The thread's addresses in a 128-byte-swizzled tile at ``base``
        (1024-aligned, i64) of byte ``byte`` of chunk ``chunk`` (index
        values) of rows ``first_row`` and ``first_row`` + 8: chunk chunk ^ c
        of either is then ``address ^ (c << 4)`` (the swizzle XORs the
        chunk with row % 8 in bits 4-6 of the address), one instruction a
        store where an index formula would keep a register per chunk
        across the steps."""
        return [arith.addi(base, _to_i64(swizzled_offset(_add(first_row, 8 * r), chunk, byte)))
                for r in range(2)]

    def stage_ds(self, ds, tile):
        """The consumer's dSᵀ fragments into ``tile``: kv row 64 c + r of the
        block is the tile's row, query column q its bytes 2 q .. 2 q + 1
        (swizzled); fragment k holds values 2 k, 2 k + 1 (adjacent query
        columns of one kv row): row_of(2 k) picks the row, and its
        columns column + 8 (k // 2) start at chunk k // 2, byte 2 column
        (column < 8)."""
        base_row = arith.addi(arith.muli(self.consumer_index, _idx(64)), self.row_in)
        rows = self.swizzled_rows(tile, base_row, _idx(0), arith.muli(self.column, _idx(2)))
        for k, bits in enumerate(ds):
            at = arith.xori(rows[row_of(2 * k)], _i((column_of(2 * k) // 8) << 4, 64))
            llvm.store(bits, _shared_ptr(at), alignment=4)

    def reduce_dq(self, dq, staging, own_barrier, head, m0, column):
        """dQ_i's part (in registers, its wgmma done) into the consumer's
        staging boxes, then one TMA reduce-add per box into dq_sum. Value
        pair e (columns column + 8 (e // 4), + 1 of row row_of(e)) lies in
        box b = (e // 4) // 4 at byte 4 (column + 8 ((e // 4) % 4)) of its
        row: chunk 2 ((e // 4) % 4) + column // 4, byte 4 column % 16."""
        _if(self.leader, lambda: nvvm.CpAsyncBulkWaitGroupOp(0, read=True))
        self.bar(own_barrier, WARPGROUP)
        values = unpack(dq, dq_columns(self.att.d) // 2)
        pair_type = ir.VectorType.get([2], ir.F32Type.get())
        # Chunk column // 4 (0 or 1) is the thread's own; the blocks' are
        # even, so XOR adds them.
        rows = self.swizzled_rows(staging, self.row_in, arith.divui(self.column, _idx(4)),
                                  arith.muli(arith.remui(self.column, _idx(4)), _idx(4)))
        for e in range(0, len(values), 2):
            block = e // 4
            at = arith.xori(rows[row_of(e)], _i((2 * (block % 4)) << 4, 64))
            at = _add(at, (block // 4) * 64 * SWIZZLE)
            pair = vector.from_elements(pair_type, values[e:e + 2])
            llvm.store(pair, _shared_ptr(at), alignment=8)
        self.fence_async()
        self.bar(own_barrier, WARPGROUP)

        def issue():
            self.dq_sum.reduce(staging, _to_i32(self.b), _to_i32(head), _to_i32(m0), column)
            nvvm.CpAsyncBulkCommitGroupOp()
        _if(self.leader, issue)


    def reduce_dq_summed(self, dq, staging, mine, theirs, own_barrier, head, m0, column):
        """D 64, ``summed``: consumer c keeps box c (columns 32 c ..) of its
        dQ_i (values 16 c .. 16 c + 15, ``reduce_dq``'s order) and sends
        the other box to its partner through its exchange slots ``mine``
        (the thread's, at the step's parity); after the meeting it adds
        the partner's (``theirs``: the partner's thread of the same index
        holds the same rows and columns of its dQ_i) and stages and
        reduce-adds its one box: one dQ_i a step into dq_sum, as D 128
        sends. The exchange tile written at step j was last read at step
        j - 2, before the reader's meeting of step j - 1, which the writer
        has passed (the dS tiles' argument)."""
        # The staging is free once the last reduce has read it: the leader
        # waits before the meeting, which its warpgroup passes only after.
        _if(self.leader, lambda: nvvm.CpAsyncBulkWaitGroupOp(0, read=True))
        values = unpack(dq, dq_columns(self.att.d) // 2)
        half = len(values) // 2
        quad = ir.VectorType.get([4], ir.F32Type.get())

        def send(part):
            for k in range(0, half, 4):
                llvm.store(vector.from_elements(quad, part[k:k + 4]),
                           _shared_ptr(_add(mine, k // 4 * WARPGROUP * 16)), alignment=16)
        # Box c kept, the other sent; the branch is one per warpgroup.
        keep = scf.IfOp(_cmp("eq", self.consumer_index, _idx(0)), [ir.F32Type.get()] * half,
                        has_else=True)
        for block, (sent, kept) in ((keep.then_block, (values[half:], values[:half])),
                                    (keep.else_block, (values[:half], values[half:]))):
            with ir.InsertionPoint(block):
                send(sent)
                scf.YieldOp(kept)
        self.bar(_i(MEET), 2 * WARPGROUP)
        got = []
        for k in range(0, half, 4):
            four = llvm.load(quad, _shared_ptr(_add(theirs, k // 4 * WARPGROUP * 16)),
                             alignment=16)
            got += [vector.extract(four, [], [e]) for e in range(4)]
        sums = [arith.addf(x, y) for x, y in zip(keep.results, got)]
        pair_type = ir.VectorType.get([2], ir.F32Type.get())
        rows = self.swizzled_rows(staging, self.row_in, arith.divui(self.column, _idx(4)),
                                  arith.muli(arith.remui(self.column, _idx(4)), _idx(4)))
        for e in range(0, half, 2):
            at = arith.xori(rows[row_of(e)], _i((2 * (e // 4)) << 4, 64))
            llvm.store(vector.from_elements(pair_type, sums[e:e + 2]), _shared_ptr(at),
                       alignment=8)
        self.fence_async()
        self.bar(own_barrier, WARPGROUP)

        def issue():
            self.dq_sum.reduce(staging, _to_i32(self.b), _to_i32(head), _to_i32(m0), column)
            nvvm.CpAsyncBulkCommitGroupOp()
        _if(self.leader, issue)


def units_of(att, tile, ctas=PERSISTENT_CTAS):
    """The work units' scheduler of ``att`` in ``tile`` (backward_units.py):
    persistent over at most ``ctas`` blocks, the longest units first under
    a causal mask without a window; or a block a unit."""
    kv_tiles = -(-att.skv // KV_ROWS)
    heads = att.batch * att.kv_heads
    if not tile.persistent:
        return OnePerBlock(kv_tiles, heads, tile.parts)
    # A sliding window (att.causal with one) gives the kv tiles about as many
    # query tiles each, the first and last aside: head by head then.
    longest_first = att.causal and not att.window
    return Persistent(kv_tiles, heads, tile.parts, ctas, BAND if longest_first else kv_tiles)


def _describe(units, tile):
    """What the plan says of the units."""
    per = f"{tile.n} kv rows"
    if units.parts > 1:
        per += f" and 1/{units.parts} of the group's query heads"
    if isinstance(units, OnePerBlock):
        return f"a block per {per}"
    if units.band < units.kv_tiles:
        order = (f"the longest (most query tiles) first, in bands of {units.band} kv tiles "
                 "head by head")
    else:
        order = "head by head"
    return (f"{units.ctas} persistent blocks over {units.units} units of {per} ({order}, "
            "in alternating directions round by round)")


def build_attention_backward_fused(fn, att, tile):
    """Replace kernel function ``fn``'s body by the fused backward of
    ``att`` (three launches, two workspaces; four and four with ``parts``).
    Returns what the plan should say of it."""
    check(att, tile)
    body = irutil.body(fn)
    old = [op.operation for op in body.operations]
    ret = old[-1]
    units = units_of(att, tile)
    with ir.InsertionPoint(ret), ret.location:
        delta = memref.alloc(ir.MemRefType.get([att.batch, att.heads, att.sq],
                                               ir.F32Type.get()), [], [])
        dq_sum = DqSum(att, tile.sums_dq(att.d))
        parts = None
        if tile.parts > 1:
            parts = tuple(memref.alloc(ir.MemRefType.get(
                [tile.parts * att.batch, att.kv_heads, att.skv, width], ir.F32Type.get()), [], [])
                for width in (att.d, att.dv))
        flash_backward_dq.preprocess(att, delta, dq_sum.value)
        kernel = FusedKernel(att, tile, delta, dq_sum, units, parts)
        kernel.launch(kernel.grid())
        flash_backward_dq.convert(att, dq_sum.value)
        if parts:
            flash_backward_dq.group_sum(att, tile.parts, parts)
    erase_replaced(old[:-1])
    summed = ""
    if parts:
        summed = (f"; then dK and dV summed over the {tile.parts} parts in a fixed order from "
                  "f32 workspaces")
    pair = ("the two consumers' parts summed in shared memory, then " if tile.sums_dq(att.d)
            else "")
    return [f"attention backward, fused: delta = rowsum(dO o O) and a zeroed f32 dQ workspace "
            f"first; then {_describe(units, tile)}, {tile.m} query rows a step through "
            f"{tile.stages} stages, five products on wgmma, dQ {pair}added into the workspace by "
            f"TMA reduce-adds (not deterministic: the order of the adds varies); then dQ "
            f"converted{summed}"]
