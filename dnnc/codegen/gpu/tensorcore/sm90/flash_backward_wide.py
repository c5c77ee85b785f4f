"""tc-sm90's two-kernel attention backward for head dims over 128 (up to
256, d_v may differ from d_qk: 192 / 128), and the builder that launches
the two kernels for any head dim.

flash_backward.DkvKernel gives each consumer warpgroup 64 kv rows and both
their gradients: D / 2 + Dv / 2 f32 registers a thread, 256 at head dims
256, more than setmaxnreg gives a consumer (240). ``WideDkvKernel`` keeps
the algorithm and splits the gradients instead of the rows: a block holds
64 kv rows, and of its two consumer warpgroups

* the first computes Sᵀ = K Qᵀ and dPᵀ = V dOᵀ, recomputes Pᵀ, forms
  dSᵀ = Pᵀ ∘ (dPᵀ - delta) and accumulates dK += dSᵀ Q (D / 2 registers);
* the second computes Sᵀ, recomputes Pᵀ and accumulates dV += Pᵀ dO (Dv /
  2 registers).

Sᵀ is computed twice (five products a step where DkvKernel runs four), and
in exchange neither warpgroup waits on the other's registers or on shared
memory: they take turns at the tensor cores as DkvKernel's do (two turns a
step each), read the same ring stage (Q and dO, ``m`` query rows) and
release it once both are done. Each gradient element is still summed by
one thread in a fixed order: the backward stays deterministic.

The dQ kernel keeps DqKernel's blocks of 128 query rows (each warpgroup
its 64 rows and all of dQ's columns, D / 2 registers); ``WideDqKernel``
issues a step's products in two turns instead of overlapping them with the
previous step's, and its step narrows where registers or shared memory ask
(flash_backward.wide_tiles: 32 kv rows at D 256).

Both make the resident tiles' descriptors again in each step
(emit.launder): kept across the steps, the descriptors of
every K step of two resident tiles (32 of 64 bits at D 256) crowded out the
accumulators, and ptxas spilled.

Masks, GQA (the group's query heads summed into one dK, dV), an additive
bias and ragged tensors are DkvKernel's (``place``, ``at_step``,
``masked``, ``store``), at 64 kv rows a block (``ROWS``).
"""

import math

from mlir import ir
from mlir.dialects import arith, llvm, memref, nvvm, vector

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.math.scalar import fma
from dnnc.codegen.gpu.tensorcore.attention_dbias import BiasGradient
from dnnc.codegen.gpu.tensorcore.attention_tiles import LOG2E
from dnnc.codegen.gpu.tensorcore.emit import (
    add as _add, cmp as _cmp, erase_replaced, ex2, f32, for_ as _for, i as _i, idx as _idx,
    if_ as _if, launder, shared_ptr as _shared_ptr, to_i64 as _to_i64,
)
from dnnc.codegen.gpu.tensorcore.sm90.flash_backward import (
    STAGED_SET, DkvKernel, DqKernel, bias_values, check, tiles_for,
)
from dnnc.codegen.gpu.tensorcore.sm90.fragments import (
    accumulator_position, column_of, pairs, row_of, struct, unpack, wgmma_rs, wgmma_ss,
)
from dnnc.codegen.gpu.tensorcore.sm90.mainloop import descriptor_constant, matrix_descriptor
from dnnc.codegen.gpu.tensorcore.sm90.support import WARPGROUP


class WideDqKernel(DqKernel):
    """The dQ kernel of head dims over 128: DqKernel's steps in two turns
    each, as DkvKernel's (S and dP; then, once dS is formed, dQ += dS K),
    without issuing a step's S and dP beside the previous step's dQ
    product: with them beside each other ptxas spilled (D 192 / 128 with a
    bias and a causal mask, 64 kv rows a step; before ``in_step``, D 256
    at 32 kv rows a step too). The other consumer warpgroup's products
    still run under a warpgroup's elementwise work."""

    turns_per_step = 2

    def in_step(self, value):
        """The resident tiles' descriptors made again in each step: kept
        across the steps, those of all their K steps (16 of 64 bits each
        for Q and for dO at D 256) took the registers dQ needs."""
        return launder(value)

    def pipelined(self, first_products, elementwise, accumulate, inits):
        def step(j, *accs):
            turn = arith.muli(j, _idx(2))
            self.turns.begin()
            products = first_products(j)
            nvvm.WgmmaGroupSyncAlignedOp()
            self.turns.end(turn)
            nvvm.WgmmaWaitGroupSyncOp(0)
            frags = elementwise(j, products)
            self.turns.begin()
            accs = accumulate(list(accs), frags, j)
            nvvm.WgmmaGroupSyncAlignedOp()
            self.turns.end(_add(turn, 1))
            nvvm.WgmmaWaitGroupSyncOp(0)
            self.release(j)
            return accs
        return list(_for(_idx(0), self.steps, step, list(inits)).results)


class WideDkvKernel(DkvKernel):
    """dK (first consumer warpgroup) and dV (second) of 64 kv rows of one
    (batch, kv head) a block."""

    ROWS = 64

    def resident_desc(self, which):
        """Both warpgroups read the block's 64 rows of K and V."""
        return matrix_descriptor(self.bases[which], descriptor_constant(False, 0))

    def at_step(self, j):
        """DkvKernel.at_step (the group's query heads in turn, each over
        its query tiles), dividing by the span in 32 bits, and not at all
        without grouped heads (step j is then tile j): a 64-bit index
        division is a subroutine call in SASS, whose return address ptxas
        put on the stack beside these accumulators."""
        att = self.att
        if att.group == 1:
            return self.hk, arith.muli(arith.addi(self.first_tile, j), _idx(self.m))
        i32 = ir.IntegerType.get_signless(32)
        span = arith.index_cast(i32, arith.maxui(self.span, _idx(1)))
        step = arith.index_cast(i32, j)
        g = arith.index_cast(ir.IndexType.get(), arith.divui(step, span))
        tile = arith.addi(self.first_tile,
                          arith.index_cast(ir.IndexType.get(), arith.remui(step, span)))
        head = arith.addi(arith.muli(self.hk, _idx(att.group)), g)
        return head, arith.muli(tile, _idx(self.m))

    def store(self, acc, n, buffer, b, h, first_row, limit, scale=None, name=None):
        """_Blocks.store, each row's values scaled and rounded inside that
        row's write: rounding all 128 a thread (D 256) ahead of the writes,
        ptxas kept the output's address on the stack (ragged outputs)."""
        values = unpack(acc, n // 2)
        element = ir.MemRefType(buffer.type).element_type
        pair_type = ir.VectorType.get([2], element)
        wide = isinstance(element, ir.F32Type)
        address = self.address(name, buffer, b)
        for r in range(2):
            row = arith.addi(first_row, _add(self.row_in, 8 * r))

            def write(r=r, row=row):
                batch, at = address(row)
                for block in range(n // 8):
                    # Values 4 block + 2 r and the next: columns 8 block +
                    # (0, 1) of the thread's row r (fragments.row_of).
                    pair = values[4 * block + 2 * r:4 * block + 2 * r + 2]
                    if scale is not None:
                        pair = [arith.mulf(x, f32(scale)) for x in pair]
                    if wide:
                        packed = vector.from_elements(pair_type, pair)
                    else:
                        packed = llvm.bitcast(pair_type, pairs(pair, self.att.element)[0])
                    vector.store(packed, buffer, [batch, h, at, _add(self.column, 8 * block)],
                                 alignment=8 if wide else 4)
            bound = limit if name in self.att.ragged else _idx(limit)
            _if(_cmp("ult", row, bound), write)

    def consumer(self):
        self.consumer_setup()
        _if(_cmp("eq", self.consumer_index, _idx(0)),
            lambda: self.gradient(True), lambda: self.gradient(False))

    def gradient(self, dk):
        """The warpgroup's steps: dK's (``dk``) or dV's. Per step, in two
        turns: Sᵀ (and for dK dPᵀ); then, once Pᵀ (dSᵀ) is formed from
        registers, the accumulation. A step's log-sum-exp (and delta) are
        staged one value a thread through the warpgroup's shared buffer
        for the step's parity, as DkvKernel stages them."""
        att = self.att
        first = self.n0
        (rows, local, own, staging, k_desc, v_desc, mn,
         k_major) = self.consumer_prelude(first)
        q_rows, do_rows = self.ring_tiles
        m, el = self.m, att.element
        count = m // 2
        # The values a step stages: the log-sum-exp of its m query rows,
        # and for dK their delta after them.
        staged = 2 * m if dk else m

        def step(j, acc):
            head, m0 = self.at_step(j)
            column = arith.remui(local, _idx(m))
            q = arith.minui(arith.addi(m0, column), _idx(att.sq - 1))
            value = memref.load(att.stats, [self.b, head, q, _idx(0)])
            if dk:
                delta = memref.load(self.delta, [self.b, head, q])
                value = arith.select(_cmp("ult", local, _idx(m)), value, delta)
            base = arith.addi(m0, self.column)
            biases = bias_values(att, self.b, head,
                                 [_add(base, column_of(e)) for e in range(count)],
                                 [rows[row_of(e)] for e in range(count)])
            turn = arith.muli(j, _idx(2))
            self.turns.begin()
            q_at, do_at = self.stage_descs(j)
            nvvm.WgmmaFenceAlignedOp()
            # The resident tiles' descriptors made again in each step (as
            # WideDqKernel.in_step).
            st = wgmma_ss(m, el, launder(k_desc), self.resident[0].box_bytes,
                          matrix_descriptor(q_at, k_major), q_rows.box_bytes, att.d)
            if dk:
                dpt = wgmma_ss(m, el, launder(v_desc), self.resident[1].box_bytes,
                               matrix_descriptor(do_at, k_major), do_rows.box_bytes, att.dv)
            nvvm.WgmmaGroupSyncAlignedOp()
            self.turns.end(turn)
            buffer = arith.addi(own, arith.muli(_to_i64(arith.remui(j, _idx(2))),
                                                _i(STAGED_SET, 64)))
            _if(_cmp("ult", local, _idx(staged)), lambda: llvm.store(
                value, _shared_ptr(arith.addi(buffer, arith.muli(_to_i64(local), _i(4, 64)))),
                alignment=4))
            llvm.inline_asm(None, [staging], f"bar.sync $0, {WARPGROUP};", "r",
                            has_side_effects=True)
            nvvm.WgmmaWaitGroupSyncOp(0)
            shift, deltas = self.columns(buffer, count, m, dk)
            st = self.masked(unpack(st, count), m0, rows, first)
            dpt = unpack(dpt, count) if dk else None
            out = []
            for e, x in enumerate(st):
                key = column_of(e)
                offset = arith.negf(shift[key])
                if biases is not None:
                    offset = arith.subf(biases[e], shift[key])
                p = ex2(fma(x, f32(self.c), offset))
                out.append(arith.mulf(p, arith.subf(dpt[e], deltas[key])) if dk else p)
            frags = pairs(out, el)
            self.turns.begin()
            nvvm.WgmmaFenceAlignedOp()
            if dk:
                acc = wgmma_rs(acc, att.d, el, frags, matrix_descriptor(q_at, mn))
            else:
                acc = wgmma_rs(acc, att.dv, el, frags, matrix_descriptor(do_at, mn))
            nvvm.WgmmaGroupSyncAlignedOp()
            self.turns.end(_add(turn, 1))
            nvvm.WgmmaWaitGroupSyncOp(0)
            self.release(j)
            return [acc]

        width = att.d if dk else att.dv
        loop = _for(_idx(0), self.steps, step, [llvm.mlir_zero(struct(width // 2))])
        acc, = loop.results
        limit = self.extent.skv if self.extent.padding else att.skv
        if dk:
            self.store(acc, att.d, att.dk, self.b, self.hk, first,
                       limit if "dk" in att.ragged else att.skv, att.scale, "dk")
        else:
            self.store(acc, att.dv, att.dv_grad, self.b, self.hk, first,
                       limit if "dv" in att.ragged else att.skv, name="dv")

    def columns(self, buffer, count, m, dk):
        """The thread's query columns' log-sum-exp in base 2 (+inf where it
        is -inf: P = 0) and, for dK, delta, read from the staged
        ``buffer``: {column offset: value}."""
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
            if dk:
                deltas[key] = llvm.load(ir.F32Type.get(), _shared_ptr(
                    arith.addi(buffer, _add(at, 4 * m))))
        return shift, deltas


def build_attention_backward(fn, att):
    """Replace kernel function ``fn``'s body by the two backward kernels of
    ``att`` (a delta workspace between them): the dQ kernel, then
    DkvKernel, or WideDkvKernel for head dims over 128
    (flash_backward.tiles_for). Returns what the plan should say of it."""
    tiles = tiles_for(att.d, att.dv, att.bias is not None)
    check(att, tiles)
    body = irutil.body(fn)
    old = [op.operation for op in body.operations]
    ret = old[-1]
    with ir.InsertionPoint(ret), ret.location:
        delta = memref.alloc(ir.MemRefType.get([att.batch, att.heads, att.sq],
                                               ir.F32Type.get()), [], [])
        gradient = BiasGradient(att, 128, tiles.dq_n, accumulator_position) \
            if att.dbias is not None else None
        dq = (WideDqKernel if tiles.wide else DqKernel)(att, tiles, delta, gradient)
        dq.launch(dq.grid())
        dkv = (WideDkvKernel if tiles.wide else DkvKernel)(att, tiles, delta)
        dkv.launch(dkv.grid())
        if gradient is not None:
            gradient.sum()
    erase_replaced(old[:-1])
    split = (": dK in one consumer warpgroup, dV in the other, both computing S"
             if tiles.wide else "")
    return [f"attention backward: a dQ kernel (128 query rows a block, {tiles.dq_n} kv rows "
            f"a step, {tiles.dq_stages} stages; delta = rowsum(dO o O) into a workspace) "
            f"and a dK dV kernel ({tiles.dkv_rows} kv rows a block{split}, {tiles.dkv_m} "
            f"query rows a step, {tiles.dkv_stages} stages), products on wgmma, no atomics"
            + (f"; ragged {', '.join(att.ragged)} at each entry's packed rows"
               if att.ragged else "") + (f"; {gradient.note}" if gradient else "")]
