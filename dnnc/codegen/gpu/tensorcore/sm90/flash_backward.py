"""tc-sm90's attention backward: two kernels in the FlashAttention-2
manner, on wgmma, fed by TMA, with no atomics (each gradient element is
summed by one thread in a fixed order, so two runs write the same bits).

With P = exp(scale S - stats) recomputed from the forward's log-sum-exp
(``stats``; a row at -inf has P = 0) and delta = rowsum(dO ∘ O)::

    dV = Pᵀ dO      dP = dO Vᵀ      dS = P ∘ (dP - delta)
    dQ = scale dS K                 dK = scale dSᵀ Q

1. ``DqKernel``: a block per 128 query rows of one (batch, head), Q and
   dO resident, K and V tiles of ``n`` kv rows through a ring. Each of its
   two consumer warpgroups (64 rows) first computes delta for its rows
   (from o and do in global memory) and writes it to a workspace, then per
   kv step issues S = Q Kᵀ and dP = dO Vᵀ, recomputes P, forms dS, and
   accumulates dQ += dS K (dS from registers, K read MN-major).
2. ``DkvKernel``: a block per 128 kv rows of one (batch, kv head), K and V
   resident, the Q and dO tiles of ``m`` query rows of every query head of
   the group through a ring (grouped-query heads sum into one dK, dV).
   Per step it issues Sᵀ = K Qᵀ and dPᵀ = V dOᵀ, recomputes Pᵀ (the
   log-sum-exp and delta of its columns read from global memory), forms
   dSᵀ, and accumulates dV += Pᵀ dO and dK += dSᵀ Q (Pᵀ and dSᵀ from
   registers, dO and Q read MN-major).

Both run the forward's scheme (flash.py): a producer warpgroup and two
consumer warpgroups that take turns at the tensor cores (``Turns``), step
j's first products issued with step j - 1's accumulating ones, so the
elementwise work of one step runs under the products. dQ costs the
recomputation of S and dP a second time (seven products where a kernel
with dQ summed by atomics runs five); what it buys is a deterministic sum.

Masks are the forward's (flash.py: causal with either diagonal alignment, a
sliding window): the dQ kernel steps over the kv tiles its rows see
(``column_tiles``), the dK dV kernel over the query tiles that see its kv
rows, each masking the scores past them.

An additive bias (bf16, f16 or f32, broadcast over any dims) is read at
each thread's scores from global memory, ahead of the products, and added
to the recomputed scores in base 2. Its gradient (dbias, on request) is the
dQ kernel's dS, written as tensorcore/attention_dbias.py says.

Head dims up to 128 (multiples of 8) take these two kernels as they are: the
accumulators of both gradients of 64 kv rows (D / 2 + Dv / 2 registers a
thread) must fit beside the step's. Wider head dims, up to 256, take
flash_backward_wide's kernels (the dQ kernel's steps in two turns; a dK dV
kernel of 64 kv rows a block, dK in one consumer warpgroup and dV in the
other); ``tiles_for`` sizes both, flash_backward_wide.build_attention_backward
launches them.
"""

import math
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, gpu, llvm, memref, nvvm, scf, vector

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.math.scalar import fma
from dnnc.codegen.gpu.tensorcore.attention_dbias import refusal as dbias_refusal
from dnnc.codegen.gpu.tensorcore.attention_tiles import (
    LOG2E, Extent, mask_columns, masked_select, negated, plus, query_block,
)
from dnnc.codegen.gpu.tensorcore.emit import (
    add as _add, cmp as _cmp, ex2, f32, for_ as _for, i as _i, idx as _idx,
    if_ as _if, launch, pair, quad, shared_base, shared_ptr as _shared_ptr, to_i32 as _to_i32,
    to_i64 as _to_i64,
)
from dnnc.codegen.gpu.tensorcore.sm90.flash import (
    Turns, check_operands, check_ragged, registers,
)
from dnnc.codegen.gpu.tensorcore.sm90.flash_backward_dq import chunk_sums
from dnnc.codegen.gpu.tensorcore.sm90.fragments import (
    accumulator_position, column_of, pairs, row_of, struct, unpack, wgmma_rs, wgmma_ss,
)
from dnnc.codegen.gpu.tensorcore.sm90.mainloop import descriptor_constant, matrix_descriptor
from dnnc.codegen.gpu.tensorcore.sm90.pipeline import Ring
from dnnc.codegen.gpu.tensorcore.sm90.rows import Packed, padded, tile_rows
from dnnc.codegen.gpu.tensorcore.sm90.support import ALIGN, SMEM_LIMIT, WARPGROUP, NotSupported
from dnnc.codegen.gpu.tensorcore.sm90.tma import SWIZZLE

MAX_HEAD_DIM = 256
# Head dims up to which the dK dV kernel holds both gradients in each
# consumer warpgroup (DkvKernel, 128 kv rows a block); wider ones take
# flash_backward_wide.WideDkvKernel.
NARROW_HEAD_DIM = 128
MAX_STAGES = 4
# What the held registers of ``dq_registers`` and ``wide_dkv_registers`` may
# come to at head dims over NARROW_HEAD_DIM (flash_backward_wide): ptxas
# spilled both kernels at 224 (D 224 with a bias, 64 rows a step) and 240
# (D 256 with a bias), not at 208 (D 256 causal, D 192 with a bias, 64 rows
# a step; D 256 with a bias, 32 rows).
WIDE_REGISTERS = 208
# Registers a consumer thread keeps beside its accumulators.
SPARE_REGISTERS = 40
# The dK dV kernel's shared buffers of a step's log-sum-exp and delta: a
# set of 2 x 64 f32 per step parity per consumer warpgroup.
STAGED_SET = 2 * 64 * 4
STAGED_BYTES = 2 * 2 * STAGED_SET
# setmaxnreg (flash.registers for two consumer warpgroups).
PRODUCER_REGISTERS, CONSUMER_REGISTERS = registers(2)


@dataclass(frozen=True)
class BackwardTiles:
    """``dq_n``: kv rows a step of the dQ kernel; ``dkv_m``: query rows a
    step of the dK dV kernel; their rings' stages. The dQ kernel's blocks
    hold 128 query rows (two consumer warpgroups of 64), the dK dV
    kernel's ``dkv_rows`` kv rows (128: DkvKernel, a warpgroup's 64 each;
    64: WideDkvKernel, the same 64 for both)."""

    dq_n: int
    dkv_m: int
    dq_stages: int
    dkv_stages: int

    rows: int = 128
    consumers: int = 2
    dkv_rows: int = 128

    @property
    def wide(self):
        return self.dkv_rows != self.rows

    @property
    def threads(self):
        return WARPGROUP * (1 + self.consumers)


def _smem(resident_rows, resident_widths, ring_rows, ring_widths, stages):
    return ALIGN + 8 * (1 + 2 * stages) + 2 * (
        resident_rows * sum(padded(w) for w in resident_widths)
        + stages * ring_rows * sum(padded(w) for w in ring_widths))


def bias_values(att, b, h, queries, keys):
    """The bias at (query ``queries[e]``, key ``keys[e]``) for each e (index
    values; clamped into the bias, whose dims of size 1 broadcast), times
    log2 e, as f32; None without a bias."""
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


def _stages(rows, d, dv, ring_rows):
    """The most ring stages (2 .. MAX_STAGES; 0 for none) whose tiles of
    ``ring_rows`` fit shared memory beside resident tiles of ``rows``."""
    fits = [s for s in range(2, MAX_STAGES + 1)
            if _smem(rows, (d, dv), ring_rows, (d, dv), s) + STAGED_BYTES <= SMEM_LIMIT]
    return max(fits, default=0)


def dq_registers(d, n, bias):
    """Registers a dQ consumer thread of head dims over NARROW_HEAD_DIM
    holds (flash_backward_wide.WideDqKernel): dQ (D / 2), a step's S and dP
    (n / 2 each), dS as A fragments (n / 4) and, with a bias, the step's
    bias values (n / 2)."""
    return d // 2 + n + n // 4 + (n // 2 if bias else 0)


def wide_dkv_registers(d, dv, m, bias):
    """Registers a WideDkvKernel consumer thread holds, the larger of its
    two warpgroups': dK (D / 2), Sᵀ and
    dPᵀ (m / 2 each) and dSᵀ as A fragments (m / 4); or dV (Dv / 2), Sᵀ
    and Pᵀ (m / 2 + m / 4); both a step's bias values (m / 2)."""
    return max(d // 2 + m + m // 4, dv // 2 + m // 2 + m // 4) + (m // 2 if bias else 0)


def tiles_for(d, dv, bias=False):
    """The BackwardTiles of head dims ``d``, ``dv``: steps of 64 kv rows (dQ
    kernel) and of 64 query rows (dK dV kernel); as many stages as shared
    memory holds, up to MAX_STAGES. With a bias (its values beside the
    step's in registers) the dK dV kernel steps 32 query rows. Head dims
    over NARROW_HEAD_DIM: ``wide_tiles``."""
    if max(d, dv) > NARROW_HEAD_DIM:
        return wide_tiles(d, dv, bias)
    dkv_m = 64 if max(d, dv) <= 64 and not bias else 32
    return BackwardTiles(64, dkv_m, _stages(128, d, dv, 64), _stages(128, d, dv, dkv_m))


def wide_tiles(d, dv, bias=False):
    """The BackwardTiles of head dims over NARROW_HEAD_DIM: the dQ kernel
    (128 query rows a block) steps the most kv rows of 64, 32 and 16 whose
    registers (``dq_registers``) fit, the dK dV kernel (64 kv rows a
    block, WideDkvKernel) the most query rows that fit
    (``wide_dkv_registers``), each with two ring stages or more in shared
    memory, and as many stages as it holds: at D 256, 64 rows a step in
    both (32 with a bias)."""
    dq_n = next((n for n in (64, 32) if dq_registers(d, n, bias) <= WIDE_REGISTERS
                 and _stages(128, d, dv, n)), 16)
    dkv_m = next((m for m in (64, 32) if wide_dkv_registers(d, dv, m, bias) <= WIDE_REGISTERS
                  and _stages(64, d, dv, m)), 16)
    return BackwardTiles(dq_n, dkv_m, _stages(128, d, dv, dq_n), _stages(64, d, dv, dkv_m),
                         dkv_rows=64)


def check(att, tiles):
    """Raise NotSupported unless these kernels compute the backward ``att``
    (tensorcore/attention.AttentionBackward)."""
    check_operands(att, "the attention kernels take", MAX_HEAD_DIM,
                   "the backward kernels take multiples of 8 up to", ragged=True)
    check_ragged(att)
    why = dbias_refusal(att) if att.dbias is not None else None
    if why:
        raise NotSupported(why)
    if not tiles.dq_stages or not tiles.dkv_stages:
        raise NotSupported("the resident tiles and two ring stages do not fit shared memory")
    budget = CONSUMER_REGISTERS - SPARE_REGISTERS
    biased = att.bias is not None
    if max(att.d, att.dv) > NARROW_HEAD_DIM:
        if not tiles.wide:
            raise NotSupported(f"head dims {att.d}, {att.dv} over {NARROW_HEAD_DIM}: expected "
                               f"a dK dV block of 64 kv rows, got {tiles.dkv_rows}")
        held = max(dq_registers(att.d, tiles.dq_n, biased),
                   wide_dkv_registers(att.d, att.dv, tiles.dkv_m, biased))
        budget = WIDE_REGISTERS
    else:
        held = att.d // 2 + att.dv // 2 + tiles.dkv_m + tiles.dkv_m // 2 - 32 + \
            (tiles.dkv_m // 2 if biased else 0)
    if held > budget:
        raise NotSupported(f"head dims {att.d}, {att.dv}: {held} accumulator registers a "
                           f"thread, expected at most {budget}")


class _Blocks:
    """What both kernels share: the block's shared memory (resident tiles
    behind one barrier, then a ring whose stage holds two tiles, then
    ``extra`` bytes), the warpgroup roles, the consumer's thread geometry
    and the turns (``turns_per_step`` a step)."""

    turns_per_step = 1

    def __init__(self, att, resident, ring_tiles, stages, extra=0):
        self.att = att
        self.extra = extra                  # bytes after the ring (1024-aligned)
        self.resident = resident            # Rows, loaded once
        self.ring_tiles = ring_tiles        # (Rows, Rows): a stage's two tiles
        self.stages = stages
        self.resident_bytes = sum(r.bytes for r in resident)
        self.stage_bytes = sum(r.bytes for r in ring_tiles)
        self.ring = Ring(stages, self.stage_bytes, stages * self.stage_bytes + extra + 8, 2)

    @property
    def threads(self):
        return 3 * WARPGROUP

    @property
    def shared(self):
        return ALIGN + self.resident_bytes + self.stages * self.stage_bytes + self.extra \
            + 8 * (1 + 2 * self.stages)

    def launch(self, grid):
        for rows in list(self.resident) + list(self.ring_tiles):
            if rows.descriptor is None:
                rows.make_descriptor()
        launch(grid, self.threads, self.shared, self.kernel)

    def kernel(self):
        tid = gpu.thread_id(gpu.Dimension.x)
        self.tid = tid
        base = shared_base(ALIGN)
        self.bases = []
        at = base
        for rows in self.resident:
            self.bases.append(at)
            at = _add(at, rows.bytes)
        self.ring.base = at
        self.extra_base = _add(at, self.stages * self.stage_bytes)
        self.resident_full = _shared_ptr(_add(self.extra_base, self.extra))
        self.place()

        _if(_cmp("eq", tid, _idx(0)), self.init_barriers)
        gpu.barrier()
        warpgroup = arith.divui(tid, _idx(WARPGROUP))
        _if(_cmp("eq", warpgroup, _idx(0)), self.producer, self.consumer)

    def init_barriers(self):
        """The block's mbarriers initialized (one thread, before the block's
        first barrier)."""
        nvvm.MBarrierInitOp(self.resident_full, _i(1))
        self.ring.init_barriers()

    def producer(self):
        nvvm.SetMaxRegisterOp(PRODUCER_REGISTERS, nvvm.SetMaxRegisterAction.decrease)

        def issue():
            self.load_resident()
            _for(_idx(0), self.steps, lambda j: self.load_step(j, j))
        _if(_cmp("eq", self.tid, _idx(0)), issue)

    def load_resident(self):
        """The producer's loads of the resident tiles (K and V), on
        ``resident_full``."""
        nvvm.MBarrierArriveExpectTxOp(None, self.resident_full, _i(self.resident_bytes))
        for rows, base, coords in zip(self.resident, self.bases, self.resident_coords()):
            rows.load(base, self.resident_full, *[_to_i32(c) for c in coords])

    def load_step(self, j, index):
        """The producer's loads of step ``j``'s ring tiles into the ring's
        stage for ``index`` (the step's number in the ring: ``j``, or the
        steps counted across a persistent block's units)."""
        ring = self.ring
        s, parity = ring.slot(index)
        irutil.mbarrier_wait(ring.empty(s), arith.xori(parity, _i(1)))
        full = ring.full(s)
        nvvm.MBarrierArriveExpectTxOp(None, full, _i(self.stage_bytes))
        at = ring.stage(s)
        for rows, coords in zip(self.ring_tiles, self.step_coords(j)):
            rows.load(at, full, *[_to_i32(c) for c in coords])
            at = _add(at, rows.bytes)

    def consumer_geometry(self):
        """A consumer's registers raised, its warpgroup, leader and lane, and
        the thread's first row of the warpgroup's 64 and first column."""
        nvvm.SetMaxRegisterOp(CONSUMER_REGISTERS, nvvm.SetMaxRegisterAction.increase)
        local = arith.remui(self.tid, _idx(WARPGROUP))
        self.consumer_index = arith.subi(arith.divui(self.tid, _idx(WARPGROUP)), _idx(1))
        self.leader = _cmp("eq", local, _idx(0))
        self.lane = arith.remui(local, _idx(32))
        self.row_in = arith.addi(arith.muli(arith.divui(local, _idx(32)), _idx(16)),
                                 arith.divui(self.lane, _idx(4)))
        self.column = arith.muli(arith.remui(self.lane, _idx(4)), _idx(2))

    def consumer_setup(self):
        self.consumer_geometry()
        self.turns = Turns(self.consumer_index, 2,
                           arith.muli(self.steps, _idx(self.turns_per_step)))
        self.turns.start()

    def resident_desc(self, which):
        """The wgmma descriptor of the warpgroup's 64 rows of resident tile
        ``which`` (K-major)."""
        offset = arith.muli(_to_i64(self.consumer_index), _i(64 * SWIZZLE, 64))
        return matrix_descriptor(arith.addi(self.bases[which], offset),
                                 descriptor_constant(False, 0))

    def in_step(self, value):
        """``value`` (made before the steps) as a step uses it: itself
        here; flash_backward_wide's kernels make it again in each step."""
        return value

    def stage_descs(self, j):
        """Step ``j``'s stage: (first tile's address, second's), after
        waiting for it to be full."""
        s, parity = self.ring.slot(j)
        irutil.mbarrier_wait(self.ring.full(s), parity)
        first = self.ring.stage(s)
        return first, _add(first, self.ring_tiles[0].bytes)

    def stage_of(self, j):
        first = self.ring.stage(arith.remui(j, _idx(self.stages)))
        return first, _add(first, self.ring_tiles[0].bytes)

    def release(self, j):
        s = arith.remui(j, _idx(self.stages))
        _if(self.leader, lambda: nvvm.MBarrierArriveOp(None, self.ring.empty(s)))

    def pipelined(self, first_products, elementwise, accumulate, inits):
        """The consumer's steps: step j's ``first_products(j)`` (issued in
        the warpgroup's turn with step j - 1's ``accumulate(accs, frags,
        j - 1)``), then ``elementwise(j, products)`` -> A fragments for
        step j's accumulation; returns the accumulators after the last
        step (``inits`` where there is none)."""
        types = [x.type for x in inits]
        op = scf.IfOp(_cmp("ugt", self.steps, _idx(0)), types, has_else=True)
        with ir.InsertionPoint(op.else_block):
            scf.YieldOp(list(inits))
        with ir.InsertionPoint(op.then_block):
            self.turns.begin()
            products = first_products(_idx(0))
            nvvm.WgmmaGroupSyncAlignedOp()
            self.turns.end(_idx(0))
            nvvm.WgmmaWaitGroupSyncOp(0)
            frags = elementwise(_idx(0), products)
            n_acc, n_frag = len(inits), len(frags)

            def step(j, *state):
                accs, frags = list(state[:n_acc]), list(state[n_acc:])
                self.turns.begin()
                products = first_products(j)
                nvvm.WgmmaGroupSyncAlignedOp()
                before = arith.subi(j, _idx(1))
                accs = accumulate(accs, frags, before)
                nvvm.WgmmaGroupSyncAlignedOp()
                self.turns.end(j)
                nvvm.WgmmaWaitGroupSyncOp(1)
                frags = elementwise(j, products)
                nvvm.WgmmaWaitGroupSyncOp(0)
                self.release(before)
                return accs + frags
            loop = _for(_idx(1), self.steps, step, list(inits) + frags)
            accs, frags = list(loop.results[:n_acc]), list(loop.results[n_acc:n_acc + n_frag])
            last = arith.subi(self.steps, _idx(1))
            accs = accumulate(accs, frags, last)
            nvvm.WgmmaGroupSyncAlignedOp()
            nvvm.WgmmaWaitGroupSyncOp(0)
            self.release(last)
            scf.YieldOp(accs)
        return list(op.results)

    def address(self, name, buffer, b):
        """(row -> (batch, row) indices of ``buffer``, tensor ``name``'s),
        through its packed rows where it is ragged (rows.Packed)."""
        if name not in self.att.ragged:
            return lambda row: (b, row)
        packed = Packed(buffer, *self.att.ragged[name])
        first = packed.first(b)
        return lambda row: packed.at(first, row)

    def store(self, acc, n, buffer, b, h, first_row, limit, scale=None, name=None):
        """Accumulator ``acc`` (64 rows by n columns, times ``scale``) into
        rows ``first_row`` + the warpgroup's of ``buffer`` [B, H, S, n],
        the rows below ``limit`` (an int, or the entry's length, an index
        value, for a ragged ``name``: its rows past it are the next
        entry's)."""
        values = unpack(acc, n // 2)
        if scale is not None:
            c = f32(scale)
            values = [arith.mulf(x, c) for x in values]
        element = ir.MemRefType(buffer.type).element_type
        pair_type = ir.VectorType.get([2], element)
        wide = isinstance(element, ir.F32Type)
        if wide:
            packed = [vector.from_elements(pair_type, values[2 * e:2 * e + 2])
                      for e in range(len(values) // 2)]
        else:
            packed = [llvm.bitcast(pair_type, x) for x in pairs(values, self.att.element)]
        address = self.address(name, buffer, b)
        for r in range(2):
            row = arith.addi(first_row, _add(self.row_in, 8 * r))

            def write(r=r, row=row):
                batch, at = address(row)
                for block in range(n // 8):
                    vector.store(packed[2 * block + r], buffer,
                                 [batch, h, at, _add(self.column, 8 * block)],
                                 alignment=8 if wide else 4)
            _if(_cmp("ult", row, limit if name in self.att.ragged else _idx(limit)), write)


class DqKernel(_Blocks):
    """dQ (and delta) for 128 query rows of one (batch, head) a block."""

    def __init__(self, att, tiles, delta, bias_gradient=None):
        self.n = tiles.dq_n
        # Where dS goes as dbias (attention_dbias.BiasGradient), or None.
        self.bias_gradient = bias_gradient
        super().__init__(att, [tile_rows(att, "q", 128, att.d),
                               tile_rows(att, "do", 128, att.dv)],
                         (tile_rows(att, "k", self.n, att.d),
                          tile_rows(att, "v", self.n, att.dv)),
                         tiles.dq_stages)
        self.delta = delta
        self.q_tiles = -(-att.sq // 128)
        self.c = att.scale * LOG2E

    def grid(self):
        return (self.q_tiles, self.att.batch * self.att.heads)

    def place(self):
        # The kv tiles the block's rows see: step j's is start + j.
        self.b, self.h, self.hk, self.m0, self.start, self.steps, self.extent = \
            query_block(self.att, 128, self.n)

    def resident_coords(self):
        return [(self.b, self.h, self.m0)] * 2

    def step_coords(self, j):
        n0 = arith.muli(arith.addi(self.start, j), _idx(self.n))
        return [(self.b, self.hk, n0)] * 2

    def consumer(self):
        att = self.att
        self.consumer_setup()
        first = arith.addi(self.m0, arith.muli(self.consumer_index, _idx(64)))
        rows = [arith.addi(first, _add(self.row_in, 8 * r)) for r in range(2)]
        clamped = [arith.minui(r, _idx(att.sq - 1)) for r in rows]
        # The rows' log-sum-exp in base 2 (+inf where it is -inf: P = 0).
        shift = []
        for r in clamped:
            lse = memref.load(att.stats, [self.b, self.h, r, _idx(0)])
            scaled = arith.mulf(lse, f32(LOG2E))
            shift.append(arith.select(arith.cmpf(arith.CmpFPredicate.OEQ, lse,
                                                 f32(-math.inf)), f32(math.inf), scaled))
        delta = [self.row_delta(r) for r in clamped]
        for r, row, d in zip(range(2), rows, delta):
            _if(arith.andi(_cmp("eq", self.column, _idx(0)), _cmp("ult", row, _idx(att.sq))),
                lambda row=row, d=d: memref.store(d, self.delta, [self.b, self.h, row]))
        irutil.mbarrier_wait(self.resident_full, _i(0))
        q_desc, do_desc = self.resident_desc(0), self.resident_desc(1)
        k_mn = descriptor_constant(True, self.n * SWIZZLE)
        k_rows, v_rows = self.ring_tiles
        n, el = self.n, att.element

        def first_products(j):
            # The step's bias values, loaded ahead of the products.
            base = arith.addi(arith.muli(arith.addi(self.start, j), _idx(n)), self.column)
            biases = bias_values(att, self.b, self.h,
                                 [rows[row_of(e)] for e in range(n // 2)],
                                 [_add(base, column_of(e)) for e in range(n // 2)])
            k_at, v_at = self.stage_descs(j)
            nvvm.WgmmaFenceAlignedOp()
            s = wgmma_ss(n, el, self.in_step(q_desc), self.resident[0].box_bytes,
                         matrix_descriptor(k_at, descriptor_constant(False, 0)),
                         k_rows.box_bytes, att.d)
            dp = wgmma_ss(n, el, self.in_step(do_desc), self.resident[1].box_bytes,
                          matrix_descriptor(v_at, descriptor_constant(False, 0)),
                          v_rows.box_bytes, att.dv)
            return s, dp, biases

        def elementwise(j, products):
            s = self.masked(unpack(products[0], n // 2), j, first, rows)
            dp = unpack(products[1], n // 2)
            biases = products[2]
            ds = []
            for e, (x, y) in enumerate(zip(s, dp)):
                offset = arith.negf(shift[row_of(e)])
                if biases is not None:
                    offset = arith.subf(biases[e], shift[row_of(e)])
                p = ex2(fma(x, f32(self.c), offset))
                ds.append(arith.mulf(p, arith.subf(y, delta[row_of(e)])))
            if self.bias_gradient is None:
                return pairs(ds, el)
            # dbias: each pair stored as soon as it is formed and rounded.
            at = arith.addi(arith.muli(arith.addi(self.start, j), _idx(n)), self.column)
            frags = []
            for e in range(0, n // 2, 2):
                frags.append(pair(ds[e], ds[e + 1], el))
                self.bias_gradient.write(self.b, self.h, rows, at, e, ds[e], ds[e + 1],
                                         frags[-1])
            return frags

        def accumulate(accs, frags, j):
            k_at, _ = self.stage_of(j)
            nvvm.WgmmaFenceAlignedOp()
            return [wgmma_rs(accs[0], att.d, el, frags, matrix_descriptor(k_at, k_mn))]

        if self.bias_gradient is not None:
            # Ahead of the steps: what the zeros need is then not held across them.
            self.bias_gradient.zero_skipped(self.b, self.h, rows, self.column, self.start,
                                            self.steps, n)
        dq, = self.pipelined(first_products, elementwise, accumulate,
                             [llvm.mlir_zero(struct(att.d // 2))])
        self.store(dq, att.d, att.dq, self.b, self.h, first,
                   self.extent.sq if "dq" in att.ragged else att.sq, att.scale, "dq")

    def row_delta(self, row):
        """rowsum(dO ∘ O) of ``row``, the quad's four threads each summing
        every fourth 8-column chunk, then exchanging."""
        att = self.att
        wide = ir.VectorType.get([8], ir.F32Type.get())

        def load(buffer, at):
            element = ir.MemRefType(buffer.type).element_type
            chunk = vector.load(ir.VectorType.get([8], element), buffer, at)
            return chunk if isinstance(element, ir.F32Type) else arith.extf(wide, chunk)
        quarter = arith.remui(self.lane, _idx(4))
        # A ragged o or do: the row of the entry's packed rows (clamped into
        # the buffer; rows past the entry's length are masked, P = 0).
        o_at, do_at = (self.address(name, getattr(att, name), self.b)(row)
                       for name in ("o", "do"))

        def product(column):
            o = load(att.o, [o_at[0], self.h, o_at[1], column])
            do = load(att.do, [do_at[0], self.h, do_at[1], column])
            return vector.reduction(ir.F32Type.get(), vector.CombiningKind.ADD,
                                    arith.mulf(o, do))
        return quad(arith.addf, chunk_sums(att.dv, quarter, product))

    def masked(self, scores, j, first, rows):
        """``scores`` of step ``j`` with -inf where a row does not see the
        column (flash.mask_columns)."""
        n0 = arith.muli(arith.addi(self.start, j), _idx(self.n))
        return mask_columns(self.att, self.extent, scores, n0, self.n, rows, self.column,
                            first, 64, accumulator_position)


class DkvKernel(_Blocks):
    """dK and dV for 128 kv rows of one (batch, kv head) a block."""

    turns_per_step = 2
    mask_past_skv = False
    # kv rows a block (flash_backward_wide.WideDkvKernel takes 64).
    ROWS = 128

    def __init__(self, att, tiles, delta):
        self.m = tiles.dkv_m
        super().__init__(att, [tile_rows(att, "k", self.ROWS, att.d),
                               tile_rows(att, "v", self.ROWS, att.dv)],
                         (tile_rows(att, "q", self.m, att.d),
                          tile_rows(att, "do", self.m, att.dv)),
                         tiles.dkv_stages, STAGED_BYTES)
        self.delta = delta
        self.kv_tiles = -(-att.skv // self.ROWS)
        self.q_tiles = -(-att.sq // self.m)
        self.c = att.scale * LOG2E

    def grid(self):
        return (self.kv_tiles, self.att.batch * self.att.kv_heads)

    def place(self):
        self.place_unit(gpu.block_id(gpu.Dimension.y), gpu.block_id(gpu.Dimension.x))

    def place_unit(self, head, tile, query_heads=None):
        """The block's kv rows: tile ``tile`` of (batch, kv head) ``head``
        (of B x Hk), and the steps over the query tiles that see them, for
        ``query_heads`` (the first query head within the group, an index
        value, and how many, an int; None: all of the group's)."""
        att = self.att
        self.b = arith.divui(head, _idx(att.kv_heads))
        self.hk = arith.remui(head, _idx(att.kv_heads))
        self.n0 = arith.muli(tile, _idx(self.ROWS))
        self.query_heads = query_heads
        ext = self.extent = Extent(att, self.b)
        # The query tiles that see the block's kv rows: kv row j is seen by
        # query rows i >= j - shift when causal, i <= j - shift + window - 1
        # with a window, i < Sq (Lq with padding); none when the kv rows
        # are all padding.
        if ext.padding:
            end = arith.divui(_add(ext.sq, self.m - 1), _idx(self.m))
        else:
            end = _idx(self.q_tiles)
        shift = negated(ext.shift)
        if att.window:
            last = arith.maxsi(plus(self.n0, shift, self.ROWS + att.window - 1), _idx(0))
            end = arith.minui(arith.divui(_add(last, self.m - 1), _idx(self.m)), end)
        self.first_tile = _idx(0)
        if att.causal:
            first = arith.maxsi(plus(self.n0, shift), _idx(0))
            self.first_tile = arith.minui(arith.divui(first, _idx(self.m)), end)
        self.span = arith.subi(end, self.first_tile)
        if ext.padding:
            self.span = arith.select(_cmp("uge", self.n0, ext.skv), _idx(0), self.span)
        count = att.group if self.query_heads is None else self.query_heads[1]
        self.steps = arith.muli(self.span, _idx(count))

    def at_step(self, j):
        """(query head, first query row) of step ``j``: the group's heads (or
        the unit's, ``query_heads``) in turn, each over its query tiles."""
        span = arith.maxui(self.span, _idx(1))
        g = arith.divui(j, span)
        tile = arith.addi(self.first_tile, arith.remui(j, span))
        if self.att.group == 1:
            head = self.hk
        else:
            head = arith.addi(arith.muli(self.hk, _idx(self.att.group)), g)
            if self.query_heads is not None:
                head = arith.addi(head, self.query_heads[0])
        return head, arith.muli(tile, _idx(self.m))

    def resident_coords(self):
        return [(self.b, self.hk, self.n0)] * 2

    def step_coords(self, j):
        head, m0 = self.at_step(j)
        return [(self.b, head, m0)] * 2

    def consumer_prelude(self, first):
        """What a consumer of kv rows from ``first`` sets up before its steps:
        its two rows, its lane in the warpgroup, its staging buffer (a
        step's log-sum-exp and delta, two parities) and named barrier, the
        resident K and V descriptors once their load has landed, and the
        MN- and K-major descriptor constants."""
        rows = [arith.addi(first, _add(self.row_in, 8 * r)) for r in range(2)]
        local = arith.remui(self.tid, _idx(WARPGROUP))
        own = arith.addi(self.extra_base, arith.muli(_to_i64(self.consumer_index),
                                                     _i(2 * STAGED_SET, 64)))
        staging = arith.index_cast(ir.IntegerType.get_signless(32),
                                   _add(self.consumer_index, 3))
        irutil.mbarrier_wait(self.resident_full, _i(0))
        k_desc, v_desc = self.resident_desc(0), self.resident_desc(1)
        mn = descriptor_constant(True, self.m * SWIZZLE)
        k_major = descriptor_constant(False, 0)
        return rows, local, own, staging, k_desc, v_desc, mn, k_major

    def consumer(self):
        """Per step, in two turns: Sᵀ and dPᵀ; then, once Pᵀ and dSᵀ are
        formed, dV += Pᵀ dO and dK += dSᵀ Q. A step's log-sum-exp and delta
        (m of each) are loaded one value a thread into the warpgroup's
        shared buffer for the step's parity, so no thread keeps the
        columns' values in registers across the products."""
        att = self.att
        self.consumer_setup()
        first = arith.addi(self.n0, arith.muli(self.consumer_index, _idx(64)))
        (rows, local, own, staging, k_desc, v_desc, mn,
         k_major) = self.consumer_prelude(first)
        q_rows, do_rows = self.ring_tiles
        m, el = self.m, att.element
        count = m // 2

        def step(j, dv, dk):
            head, m0 = self.at_step(j)
            # This thread's value of the step's log-sum-exp (threads 0 ..
            # m - 1) or delta (m .. 2 m - 1), loaded under the products.
            column = arith.remui(local, _idx(m))
            q = arith.minui(arith.addi(m0, column), _idx(att.sq - 1))
            lse = memref.load(att.stats, [self.b, head, q, _idx(0)])
            delta = memref.load(self.delta, [self.b, head, q])
            value = arith.select(_cmp("ult", local, _idx(m)), lse, delta)
            # The bias at the thread's (kv row, query column) scores.
            base = arith.addi(m0, self.column)
            biases = bias_values(att, self.b, head,
                                 [_add(base, column_of(e)) for e in range(count)],
                                 [rows[row_of(e)] for e in range(count)])
            turn = arith.muli(j, _idx(2))
            self.turns.begin()
            q_at, do_at = self.stage_descs(j)
            nvvm.WgmmaFenceAlignedOp()
            st = wgmma_ss(m, el, k_desc, self.resident[0].box_bytes,
                          matrix_descriptor(q_at, k_major), q_rows.box_bytes, att.d)
            dpt = wgmma_ss(m, el, v_desc, self.resident[1].box_bytes,
                           matrix_descriptor(do_at, k_major), do_rows.box_bytes, att.dv)
            nvvm.WgmmaGroupSyncAlignedOp()
            self.turns.end(turn)
            buffer = arith.addi(own, arith.muli(_to_i64(arith.remui(j, _idx(2))),
                                                _i(STAGED_SET, 64)))
            _if(_cmp("ult", local, _idx(2 * m)), lambda: llvm.store(
                value, _shared_ptr(arith.addi(buffer, arith.muli(_to_i64(local), _i(4, 64)))),
                alignment=4))
            llvm.inline_asm(None, [staging], f"bar.sync $0, {WARPGROUP};", "r",
                            has_side_effects=True)
            nvvm.WgmmaWaitGroupSyncOp(0)
            # The thread's columns' values from the buffer.
            shift, deltas = {}, {}
            for e in range(count):
                key = column_of(e)
                if key in shift:
                    continue
                at = arith.muli(_to_i64(_add(self.column, key)), _i(4, 64))
                x = llvm.load(ir.F32Type.get(), _shared_ptr(arith.addi(buffer, at)))
                shift[key] = arith.select(
                    arith.cmpf(arith.CmpFPredicate.OEQ, x, f32(-math.inf)), f32(math.inf),
                    arith.mulf(x, f32(LOG2E)))
                deltas[key] = llvm.load(ir.F32Type.get(), _shared_ptr(
                    arith.addi(buffer, _add(at, 4 * m))))
            st = self.masked(unpack(st, count), m0, rows, first)
            dpt = unpack(dpt, count)
            p, ds = [], []
            for e, (x, y) in enumerate(zip(st, dpt)):
                key = column_of(e)
                offset = arith.negf(shift[key])
                if biases is not None:
                    offset = arith.subf(biases[e], shift[key])
                pe = ex2(fma(x, f32(self.c), offset))
                p.append(pe)
                ds.append(arith.mulf(pe, arith.subf(y, deltas[key])))
            p, ds = pairs(p, el), pairs(ds, el)
            self.turns.begin()
            nvvm.WgmmaFenceAlignedOp()
            dv = wgmma_rs(dv, att.dv, el, p, matrix_descriptor(do_at, mn))
            dk = wgmma_rs(dk, att.d, el, ds, matrix_descriptor(q_at, mn))
            nvvm.WgmmaGroupSyncAlignedOp()
            self.turns.end(_add(turn, 1))
            nvvm.WgmmaWaitGroupSyncOp(0)
            self.release(j)
            return [dv, dk]

        loop = _for(_idx(0), self.steps, step,
                    [llvm.mlir_zero(struct(att.dv // 2)), llvm.mlir_zero(struct(att.d // 2))])
        dv, dk = loop.results
        limit = self.extent.skv if self.extent.padding else att.skv
        self.store(dk, att.d, att.dk, self.b, self.hk, first,
                   limit if "dk" in att.ragged else att.skv, att.scale, "dk")
        self.store(dv, att.dv, att.dv_grad, self.b, self.hk, first,
                   limit if "dv" in att.ragged else att.skv, name="dv")

    def masked(self, scores, m0, rows, first):
        """Sᵀ (rows kv, columns q) with -inf where the query row does not see
        the kv row (past Sq; before the kv row's diagonal, q < kv - shift,
        when causal; past its window, q > kv - shift + window - 1), in the
        steps whose tile reaches one of those for some kv row of the
        warpgroup's 64 from ``first``."""
        att, m, ext = self.att, self.m, self.extent
        end = _add(m0, m)
        need = []
        if ext.padding:
            need.append(_cmp("ugt", end, ext.sq))
            need.append(_cmp("sgt", _add(first, 64), ext.skv))
        elif att.sq % m:
            need.append(_cmp("ugt", end, _idx(att.sq)))
        # Kv rows past Skv (without padding) are masked only where a
        # kernel asks (``mask_past_skv``): the dK dV kernel drops their
        # rows, the fused kernel also multiplies their dS into dQ.
        past_skv = self.mask_past_skv and not ext.padding and att.skv % self.ROWS
        if past_skv:
            need.append(_cmp("sgt", _add(first, 64), _idx(att.skv)))
        shift = negated(ext.shift)
        if att.causal:
            need.append(_cmp("sgt", plus(first, shift, 63), m0))
        if att.window:
            need.append(_cmp("sgt", end, plus(first, shift, att.window)))

        def bad_of():
            i32 = ir.IntegerType.get_signless(32)
            base = arith.addi(m0, self.column)

            def offset(x):
                return arith.index_cast(i32, arith.subi(x, base))
            # Column offset o (from the thread's first) is query m0 + column
            # + o: valid when below Sq and within the kv row's band.
            high = offset(plus(ext.sq))
            lows = [offset(plus(r, shift)) for r in rows]
            tops = [offset(plus(r, shift, att.window - 1)) for r in rows]
            dead = [_cmp("sge", r, plus(ext.skv)) for r in rows] \
                if ext.padding or past_skv else None

            def bad(e):
                o = _i(column_of(e))
                out = _cmp("sge", o, high)
                if att.causal:
                    out = arith.ori(out, _cmp("slt", o, lows[row_of(e)]))
                if att.window:
                    out = arith.ori(out, _cmp("sgt", o, tops[row_of(e)]))
                if dead:
                    out = arith.ori(out, dead[row_of(e)])
                return out
            return bad
        return masked_select(scores, need, bad_of)
