"""tc-sm90's mainloop: the warp-specialized roles that run a work unit's K
steps through the ring (pipeline.py).

* ``Producer`` (warpgroup 0, one thread issuing): for each K step of each
  unit the scheduler gives the block, wait for the stage to be empty, arm
  its full barrier with the stage's bytes, and have each operand loader
  (tma.py) issue its tile's copies into it.
* ``Consumer`` (warpgroups 1 .. consumers, 64 rows of the tile each): wait
  for the stage to be full, issue BK / k wgmma m64nBNk on it, release the
  previous step's stage once its wgmmas are done (``wgmma.wait_group 1``
  keeps one step in flight); after a unit's last step, wait for all, release
  that stage, and hand the accumulator to the epilogue (epilogue.py), to
  split-K (splitk.py), or, under a tail split, to the run-time branch
  between the two (tail_split.py). The epilogue's inputs are read while the last step's
  wgmmas run.

The producer gives registers away (setmaxnreg 40) and the consumers take
them (232): a consumer's 64 x BN f32 accumulator is BN / 2 registers per
thread. Operands with a prologue are converted by the consumers each step
(prologue.py); a tf32 A stored K x M goes from the stage into registers
(``Consumer.fragments``) and wgmma takes it from there. A filter
gradient's bias gradient is summed from dy's box of each stage while the
step's wgmmas run (bias_grad.py: the sums are the K loop's third carried
value). A block-scaled GEMM runs its own K loop (block_scales.py), which
issues each step through the consumer's ``issue`` (a step's wait and
wgmmas, as one group) into temporaries.
"""

from mlir import ir
from mlir.dialects import arith, llvm, nvvm, scf

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.tensorcore.emit import (
    cmp as _cmp, for_ as _for, i as _i, idx as _idx, if_ as _if, shared_ptr as _shared_ptr,
    to_i32 as _to_i32, to_i64 as _to_i64,
)
from dnnc.codegen.gpu.tensorcore.sm90.fragments import wgmma_registers_a
from dnnc.codegen.gpu.tensorcore.sm90.support import WARPGROUP
from dnnc.codegen.gpu.tensorcore.sm90.tma import SWIZZLE, swizzled_offset

PRODUCER_REGISTERS = 40
CONSUMER_REGISTERS = 232
# A wgmma instruction multiplies 32 bytes of K: k = 16 of bf16/f16, 8 of tf32,
# 32 of fp8.
WGMMA_K_BYTES = 32


def descriptor_constant(mn_major, rows_bytes_between_atoms):
    """The constant bits of a wgmma shared-memory matrix descriptor for a
    128-byte-swizzled tile: layout type (bits 62-63 = 1), stride byte offset
    (8 rows of 128 bytes = 1024), leading byte offset (between 64-element
    column blocks of an MN-major tile; unused K-major, 1 by convention)."""
    lbo = (rows_bytes_between_atoms >> 4) if mn_major else 1
    sbo = 1024 >> 4
    return (1 << 62) | (sbo << 32) | (lbo << 16)


def matrix_descriptor(address_i64, constant):
    """A wgmma descriptor: the constant bits | (address & 0x3FFFF) >> 4."""
    addr = arith.shrui(arith.andi(address_i64, _i(0x3FFFF, 64)), _i(4, 64))
    return arith.ori(addr, _i(constant, 64))


class Producer:
    """Warpgroup 0 of ``kernel`` (kernel.Kernel): loads the operands' tiles."""

    def __init__(self, kernel):
        self.k = kernel

    def run(self):
        k = self.k
        tile, ring = k.tile, k.ring
        nvvm.SetMaxRegisterOp(PRODUCER_REGISTERS, nvvm.SetMaxRegisterAction.decrease)

        def per_tile(batch, tile_m, tile_n, k_steps, g):
            m0 = _to_i32(arith.muli(tile_m, _idx(tile.m)))
            n0 = _to_i32(arith.muli(tile_n, _idx(tile.n)))
            b = _to_i32(batch)

            def step(kt, g):
                s, parity = ring.slot(g)
                # A fresh barrier counts as completed in the phase before
                # its first: the first pass over the ring does not wait.
                irutil.mbarrier_wait(ring.empty(s), arith.xori(parity, _i(1)))
                full = ring.full(s)
                nvvm.MBarrierArriveExpectTxOp(None, full, _i(k.stage_bytes))
                k0 = _to_i32(arith.muli(kt, _idx(tile.k)))
                stage = ring.stage(s)
                k.a.load(stage, full, b, m0, k0)
                k.b.load(arith.addi(stage, _i(k.a_bytes, 64)), full, b, n0, k0)
                return [arith.addi(g, _idx(1))]
            return _for(k_steps[0], k_steps[1], step, [g]).results

        _if(_cmp("eq", k.tid, _idx(0)), lambda: k.scheduler.loop(per_tile, [_idx(0)]))
        if k.splitk.cluster > 1:
            # The producer's threads meet the cluster at the sum's two
            # barriers too (each block runs one unit: once each).
            nvvm.cluster_arrive_relaxed()
            nvvm.cluster_wait()
            nvvm.cluster_arrive()
            nvvm.cluster_wait()


class Consumer:
    """Warpgroups 1 .. consumers of ``kernel``: the wgmmas, then the epilogue."""

    def __init__(self, kernel):
        self.k = kernel

    def run(self):
        k = self.k
        tile, ring = k.tile, k.ring
        nvvm.SetMaxRegisterOp(CONSUMER_REGISTERS, nvvm.SetMaxRegisterAction.increase)
        local = arith.remui(k.tid, _idx(WARPGROUP))
        consumer = arith.subi(arith.divui(k.tid, _idx(WARPGROUP)), _idx(1))
        leader = _cmp("eq", local, _idx(0))
        a_const = descriptor_constant(k.a.mn_major, tile.k * SWIZZLE)
        b_const = descriptor_constant(k.b.mn_major, tile.k * SWIZZLE)
        # A consumer's 64 rows of A: 64 rows of K (K-major), or the tile's
        # box of 64 columns of M (MN-major).
        a_part = tile.k * SWIZZLE if k.a.mn_major else 64 * SWIZZLE
        a_row_offset = arith.muli(_to_i64(consumer), _i(a_part, 64))
        instr_k = WGMMA_K_BYTES // k.eb
        shape = ir.Attribute.parse(f"#nvvm.shape<m = 64, n = {tile.n}, k = {instr_k}>")
        # fp8: k = 32 an instruction, and A and B each name their own type.
        type_a, type_b = (ir.Attribute.parse(f"#nvvm.wgmma_type<{t}>") for t in k.types)
        attrs = {
            "shape": shape, "typeA": type_a, "typeB": type_b,
            "typeD": ir.Attribute.parse("#nvvm.wgmma_type<f32>"),
            "scaleD": ir.Attribute.parse("#nvvm.wgmma_scale_out<one>"),
            "scaleA": ir.Attribute.parse("#nvvm.wgmma_scale_in<one>"),
            "scaleB": ir.Attribute.parse("#nvvm.wgmma_scale_in<one>"),
            "layoutA": ir.Attribute.parse(
                "#nvvm.mma_layout<col>" if k.a.mn_major else "#nvvm.mma_layout<row>"),
            "layoutB": ir.Attribute.parse(
                "#nvvm.mma_layout<row>" if k.b.mn_major else "#nvvm.mma_layout<col>"),
            "satfinite": ir.Attribute.parse("#nvvm.mma_int_overflow<wrapped>"),
        }

        # A block-scaled step's temporary starts at its first product.
        fresh_attrs = dict(attrs, scaleD=ir.Attribute.parse("#nvvm.wgmma_scale_out<zero>"))
        if k.bias is not None:
            # Each warp's lanes read the stage (the bias gradient's sums): the
            # warp meets (bar.warp.sync orders its lanes' loads) and lane 0
            # arrives, one arrival per warp.
            leader = _cmp("eq", arith.remui(local, _idx(32)), _idx(0))

        def release(g):
            """Give the stage of step ``g`` back to the producer (one arrival per
            consumer warpgroup, or per warp: ring.arrivals)."""
            s = arith.remui(g, _idx(tile.stages))
            if k.bias is not None:
                nvvm.SyncWarpOp(_i(-1))
            _if(leader, lambda: nvvm.MBarrierArriveOp(None, ring.empty(s)))

        fragments = self.fragment_offsets(consumer, local) if k.registers_a else None
        scaling = k.block_scaling

        def issue(kt, acc, g, columns=None, wait=True):
            """Wait for step ``g``'s stage to be full (unless ``wait`` is
            False: the caller did) and issue its wgmmas into ``acc``, as one
            committed group; return (the accumulator in flight, the stage).
            ``columns``: (first, count) of the tile's columns these wgmmas
            compute, into a temporary from zero (block scales; None: all of
            them, into ``acc``)."""
            s, parity = ring.slot(g)
            if wait:
                irutil.mbarrier_wait(ring.full(s), parity)
            stage = ring.stage(s)
            a_tile = arith.addi(stage, a_row_offset)
            b_tile = arith.addi(stage, _i(k.a_bytes, 64))
            if any(k.sources):
                a_tile, b_tile = k.prologues.convert_step(stage, a_tile, b_tile, consumer,
                                                          local, kt, g)
            kinds = (attrs, attrs)
            if columns is not None:
                # Rows of B's K-major tile (128 bytes each) from the first
                # column on; fp8 B is always K-major (support.check).
                b_tile = arith.addi(b_tile, _i(columns[0] * SWIZZLE, 64)) if columns[0] \
                    else b_tile
                width = ir.Attribute.parse(
                    f"#nvvm.shape<m = 64, n = {columns[1]}, k = {instr_k}>")
                kinds = (dict(fresh_attrs, shape=width), dict(attrs, shape=width))
            if not k.registers_a:
                desc_a = matrix_descriptor(a_tile, a_const)
            desc_b = matrix_descriptor(b_tile, b_const)
            if k.registers_a:
                a_values = self.fragments(stage, fragments)
            nvvm.WgmmaFenceAlignedOp()
            for kk in range(tile.k // instr_k):
                # Along a 128-byte row of K; an MN-major operand steps
                # instr_k rows of K (128 bytes of M or N each).
                step_a, step_b = ((instr_k * SWIZZLE * kk if operand.mn_major
                                   else WGMMA_K_BYTES * kk) >> 4
                                  for operand in (k.a, k.b))
                if not k.registers_a:
                    da = arith.addi(desc_a, _i(step_a, 64)) if step_a else desc_a
                db = arith.addi(desc_b, _i(step_b, 64)) if step_b else desc_b
                if k.registers_a:
                    acc = self.wgmma_registers(acc, a_values[kk], db)
                    continue
                acc = ir.Operation.create("nvvm.wgmma.mma_async", results=[acc.type],
                                          operands=[acc, da, db],
                                          attributes=kinds[min(kk, 1)]).results[0]
            nvvm.WgmmaGroupSyncAlignedOp()
            return acc, stage

        def step(kt, acc, g, first=None, sums=None, active=None):
            acc, stage = issue(kt, acc, g)
            if sums is not None:
                # A bias gradient: the consumer's dy rows summed while the
                # wgmmas read the same stage (bias_grad.py).
                sums = k.bias.step(arith.addi(stage, a_row_offset), local, sums, active)
            # One group stays in flight: the previous step's wgmmas are done,
            # so its stage can be refilled.
            nvvm.WgmmaWaitGroupSyncOp(1)
            _if(_cmp("ugt", kt, first), lambda: release(arith.subi(g, _idx(1))))
            out = [acc, arith.addi(g, _idx(1))]
            return out if sums is None else out + [sums]

        def two_steps(first, end):
            """Steps kt and kt + 1 (if before ``end``) an iteration: with A
            from registers, the fragments of a step still in flight must stay
            untouched, so consecutive steps load into distinct registers."""
            def body(kt, acc, g):
                acc, g = step(kt, acc, g, first)
                after = arith.addi(kt, _idx(1))
                op = scf.IfOp(_cmp("ult", after, end), [k.acc_type, ir.IndexType.get()],
                              has_else=True)
                with ir.InsertionPoint(op.then_block):
                    scf.YieldOp(step(after, acc, g, first))
                with ir.InsertionPoint(op.else_block):
                    scf.YieldOp([acc, g])
                return list(op.results)
            return body

        def per_tile(batch, tile_m, tile_n, k_steps, g):
            zero = llvm.mlir_zero(k.acc_type)
            if k.prologues.conv is not None:
                # The rows' pixels, once a tile, for the padding's predicate.
                k.prologues.begin_tile(consumer, local, batch, tile_m)
            if k.registers_a:
                loop = scf.ForOp(k_steps[0], k_steps[1], _idx(2), [zero, g])
                with ir.InsertionPoint(loop.body):
                    scf.YieldOp(two_steps(k_steps[0], k_steps[1])(
                        loop.induction_variable, *loop.inner_iter_args))
            elif scaling is not None:
                # Block scales: each step's products into temporaries,
                # promoted into the sum (block_scales.py).
                loop = scaling.loop(consumer, local, tile_m, tile_n, k_steps, zero, g,
                                    issue, release)
            elif k.bias is not None:
                active = k.bias.active(batch, tile_n)
                loop = _for(k_steps[0], k_steps[1],
                            lambda kt, acc, g, sums: step(kt, acc, g, k_steps[0], sums, active),
                            [zero, g, k.bias.zero()])
            else:
                loop = _for(k_steps[0], k_steps[1],
                            lambda kt, acc, g: step(kt, acc, g, k_steps[0]), [zero, g])
            acc, g = list(loop.results)[:2]
            # The epilogue's inputs (bias, residual) are read while the last
            # K step's wgmmas finish: their latency hides behind them. A
            # staged epilogue with an input that varies along the rows reads
            # its first column slice's here and each next slice's while it
            # works on one (a whole tile of such inputs beside the
            # accumulators would not fit a consumer's registers).
            epilogue = k.epilogue
            first = range(epilogue.slice_groups()) \
                if epilogue.slots and epilogue.inputs_along_rows() else None
            inputs = None if k.scheduler.splits > 1 else \
                epilogue.inputs(consumer, local, batch, tile_m, tile_n, first)
            nvvm.WgmmaWaitGroupSyncOp(0)
            if k.scheduler.steps:
                release(arith.subi(g, _idx(1)))
            where = (consumer, local, batch, tile_m, tile_n)
            if k.bias is not None:
                # db's channels, or this split's partial of them.
                k.bias.finish(list(loop.results)[2], *where,
                              k_steps[2] if k.scheduler.splits > 1 else None)
            if k.splitk.cluster > 1:
                k.splitk.cluster_sum(acc, where, k_steps[2])
            elif k.scheduler.splits > 1:
                k.splitk.finish_part(acc, where, k_steps[2])
            elif k.scheduler.tail_split:
                # A whole unit, or the part that sums its tile's: one
                # epilogue after the branch (tail_split.py). The inputs
                # were read early for either.
                acc, run = k.tail.finish(acc, consumer, local, k_steps[2], k_steps[3])
                _if(run, lambda: epilogue.apply(acc, *where, inputs))
            else:
                epilogue.apply(acc, *where, inputs)
            return [g]

        k.scheduler.loop(per_tile, [_idx(0)])
        k.epilogue.finish(local)

    # -- A from registers ----------------------------------------------------------

    def fragment_offsets(self, consumer, local):
        """Byte offsets in a stage of where this thread's A fragment of the
        first k = 8 slice lies (registers_a; the tile MN-major as TMA lays
        it: boxes of 32 columns of M, each BK rows of K by 128 bytes,
        swizzled), keyed (h, e) for its elements at rows r + 8 h and columns
        q + 4 e of the consumer's 64 x 8 slice of A, with r = 16 warp + lane
        / 4 and q = lane % 4 (wgmma's tf32 A fragment: a0 = (0, 0), a1 = (1,
        0), a2 = (0, 1), a3 = (1, 1)). Slice kk lies kk * 8 rows of K on. A
        warp's loads of one register meet two-way bank conflicts: its lanes'
        32 words lie in 16 banks."""
        k = self.k
        warp = arith.divui(local, _idx(32))
        lane = arith.remui(local, _idx(32))
        g, q = arith.divui(lane, _idx(4)), arith.remui(lane, _idx(4))
        box = k.tile.k * SWIZZLE             # bytes of a box of 32 columns of M
        # The consumer's 64 rows of M are boxes 2 c and 2 c + 1; warp w's 16
        # rows are the half w % 2 of box 2 c + w / 2.
        piece = arith.addi(arith.muli(consumer, _idx(2)), arith.divui(warp, _idx(2)))
        chunk0 = arith.addi(arith.muli(arith.remui(warp, _idx(2)), _idx(4)),
                            arith.divui(g, _idx(4)))
        byte = arith.muli(arith.remui(g, _idx(4)), _idx(4))
        offsets = {}
        for h in range(2):
            for e in range(2):
                k_index = arith.addi(q, _idx(4 * e)) if e else q
                chunk = arith.addi(chunk0, _idx(2 * h)) if h else chunk0
                at = arith.addi(arith.muli(piece, _idx(box)),
                                swizzled_offset(k_index, chunk, byte))
                offsets[(h, e)] = _to_i64(at)
        return offsets

    def fragments(self, stage, offsets):
        """This thread's A fragments of each k = 8 slice of the stage at
        ``stage`` (A's tile first in it): [a0, a1, a2, a3] as i32 bits."""
        k = self.k
        i32 = ir.IntegerType.get_signless(32)
        out = []
        for kk in range(k.tile.k // (WGMMA_K_BYTES // k.eb)):
            base = arith.addi(stage, _i(kk * 8 * SWIZZLE, 64)) if kk else stage
            out.append([llvm.load(i32, _shared_ptr(arith.addi(base, offsets[key])), alignment=4)
                        for key in ((0, 0), (1, 0), (0, 1), (1, 1))])
        return out

    def wgmma_registers(self, acc, fragment, desc_b):
        """One tf32 wgmma m64nBNk8 with A from registers (``fragment``, four
        i32) and B from shared memory (``desc_b``), accumulating into
        ``acc`` (fragments.wgmma_registers_a)."""
        return wgmma_registers_a(acc, self.k.tile.n, 8, "tf32", fragment, desc_b)
