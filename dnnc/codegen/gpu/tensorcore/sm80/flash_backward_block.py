"""The block both kernels of tc-sm80's attention backward
(flash_backward.py) are made of: warps of 16 rows of a tile that stays in
shared memory, a cp.async ring of two tiles a stage, and the two products
of mma.sync m16n8k16 they run:

* ``product_nt``: the warp's 16 resident rows times a ring tile transposed
  (S = Q Kᵀ, dP = dO Vᵀ; Sᵀ = K Qᵀ, dPᵀ = V dOᵀ), both operands by
  ldmatrix, over the head dim in k16 slices;
* ``product_nn``: f32 values laid out as a product_nt's (P, dS), rounded in
  pairs into A fragments, times a ring tile read .trans (dV += Pᵀ dO,
  dK += dSᵀ Q, dQ += dS K).

An accumulator of n8 tile j holds rows g and g + 8 (g = lane / 4) and
columns 8 j + 2t, + 1 (t = lane % 4); the A fragment of a k16 slice kk is
the accumulators of n8 tiles 2 kk and 2 kk + 1 (flash.py's docstring), so
nothing passes between lanes. Shared tiles are laid out as the forward's
(flash.TileRows: rows of the head dim rounded to 16 elements, 16 bytes of
padding, zero-filled past S and past D).
"""

import math

from mlir import ir
from mlir.dialects import arith, gpu, llvm, memref, nvvm, scf, vector

from dnnc.codegen.gpu.math.scalar import fma
from dnnc.codegen.gpu.tensorcore.attention_tiles import LOG2E
from dnnc.codegen.gpu.tensorcore.emit import (
    add as _add, cmp as _cmp, ex2, f32, i as _i, idx as _idx, if_ as _if, pair, shared_base,
    to_i64 as _i64,
)
from dnnc.codegen.gpu.tensorcore.sm80.flash import K_STEP, ldmatrix, mma, padded
from dnnc.codegen.gpu.tensorcore.sm80.support import WARP


def flat(tiles):
    """The values of a list of lists, in order."""
    return [x for tile in tiles for x in tile]


def position(e):
    """Which of the thread's 2 rows accumulator value ``e`` (n8 tile, 4
    values) lies in, and its column less the thread's first."""
    j, c = divmod(e, 4)
    return c // 2, 8 * j + c % 2


class BackwardBlock:
    """What both kernels share: a block of 16-row warps over two resident
    tiles (``resident``: TileRows, loaded once) and a ring of two tiles a
    stage (``ring``); the warp geometry, the ldmatrix lane offsets, the
    products, the gradients' elementwise math, the ring's steps and the
    stores."""

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
        return flat(tiles)

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
