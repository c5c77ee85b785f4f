"""The two kernels of tc-sm80's attention backward (flash_backward.py):
``DqKernel`` (dQ, and delta into a workspace) and ``DkvKernel`` (dK and dV),
each a BackwardBlock (flash_backward_block.py) with its own placement,
loads, step and masks."""

from mlir import ir
from mlir.dialects import arith, gpu, memref, vector

from dnnc.codegen.gpu.tensorcore.attention_tiles import (
    Extent, mask_columns, masked_select, negated, plus, query_block,
)
from dnnc.codegen.gpu.tensorcore.emit import (
    add as _add, cmp as _cmp, f32, i as _i, idx as _idx, if_ as _if, quad, to_i64 as _i64,
)
from dnnc.codegen.gpu.tensorcore.sm80.flash import TileRows
from dnnc.codegen.gpu.tensorcore.sm80.flash_backward_block import (
    BackwardBlock, flat, position,
)


class DqKernel(BackwardBlock):
    """dQ (and delta) for ``tile.rows`` query rows of one (batch, head)."""

    def __init__(self, att, tile, delta, bias_gradient=None):
        t = tile.threads
        # Where dS goes as dbias (attention_dbias.BiasGradient), or None.
        self.bias_gradient = bias_gradient
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
                                  [rows[position(e)[0]] for e in range(n // 2)],
                                  [_add(arith.addi(n0, self.column), position(e)[1])
                                   for e in range(n // 2)])
            s = flat(self.product_nt(0, stage, n, att.d, copy_ahead))
            s = mask_columns(att, self.extent, s, n0, n, rows, self.column, first, 16,
                             position)
            dp = flat(self.product_nt(1, stage, n, att.dv))
            _, ds = self.gradients(lambda e: position(e)[0], s, dp, biases, known["shift"],
                                   known["delta"])
            if self.bias_gradient is not None:
                at = arith.addi(n0, self.column)
                for e in range(0, n // 2, 2):
                    self.bias_gradient.write(self.b, self.h, rows, at, e, ds[e], ds[e + 1],
                                             None)
            return self.product_nn(carried, ds, 0, stage, n, att.d)
        if self.bias_gradient is not None:
            # The kv tiles the rows do not see: dS = 0.
            self.bias_gradient.zero_skipped(self.b, self.h, rows, self.column, self.start,
                                            self.steps, n)
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


class DkvKernel(BackwardBlock):
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
                                  [_add(base, position(e)[1]) for e in range(count)],
                                  [rows[position(e)[0]] for e in range(count)])
            # The log-sum-exp and delta of the thread's query columns.
            shift, deltas = {}, {}
            for e in range(count):
                key = position(e)[1]
                if key in shift:
                    continue
                q = arith.minui(_add(base, key), _idx(att.sq - 1))
                shift[key] = self.lse_shift(memref.load(att.stats, [self.b, head, q, _idx(0)]))
                deltas[key] = memref.load(self.delta, [self.b, head, q])
            st = flat(self.product_nt(0, stage, m, att.d, copy_ahead))
            st = self.masked(st, m0, rows, first)
            dpt = flat(self.product_nt(1, stage, m, att.dv))
            p, ds = self.gradients(lambda e: position(e)[1], st, dpt, biases, shift, deltas)
            return self.accumulate(stage, head, m0, p, ds, dv, dk)
        out = self.run_steps(prologue, load_step, step, [f32(0.0)] * ((att.dv + att.d) // 2))
        dv, dk = out[:att.dv // 2], out[att.dv // 2:]
        self.store(dk, att.dk, self.b, self.hk, rows, _idx(att.skv), att.d, att.scale)
        self.store(dv, att.dv_grad, self.b, self.hk, rows, _idx(att.skv), att.dv)

    def accumulate(self, stage, head, m0, p, ds, dv, dk):
        """dV += Pᵀ dO and dK += dSᵀ Q of a step (query head ``head``, its
        rows from ``m0``; ``p``, ``ds`` as a product_nt's): the dV and dK
        values the step carries on."""
        att, m = self.att, self.tile.dkv_m
        dv = self.product_nn(dv, p, 1, stage, m, att.dv)
        dk = self.product_nn(dk, ds, 0, stage, m, att.d)
        return dv + dk

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
                row, col = position(e)
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
