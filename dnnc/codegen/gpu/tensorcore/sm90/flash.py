"""tc-sm90's attention forward: one kernel in the FlashAttention manner, on
wgmma, fed by TMA.

A block computes ``tile.m`` query rows of one (batch, head): 1 + consumers
warpgroups of 128 threads (warp specialization, as the GEMM's mainloop),
the consumers taking turns at the tensor cores (``Turns``)::

    warpgroup 0  producer   one thread loads the block's Q tile once (its
                            own barrier), then each K tile and V tile of
                            ``tile.n`` kv rows into stage j % stages of
                            K's ring and of V's (pipeline.py), after
                            waiting for the stage to be empty (from
                            the pages their tables name, with a paged
                            cache: paged.py)
    warpgroups 1..  consumers  each owns 64 query rows: in its turn, issue
                            S_j = Q K_jᵀ (Q and K from shared memory) and
                            O += P_{j-1} V_{j-1} (P from registers: inline
                            PTX, the NVVM op takes A only from shared
                            memory); release K_j once S_j is done; the
                            online softmax of S_j in registers, while P V
                            and the other warpgroups' products run; then
                            release V_{j-1}

Q, K and V tiles lie in TMA's 128-byte swizzle, in boxes of 64 columns of
the head dim (a head dim that is not a multiple of 64 is zero-filled by TMA
past its end; a K step of QKᵀ is 16 of it). V is read MN-major (its head
dim, wgmma's N, is contiguous). The wgmma accumulator layout of S is the
layout of wgmma's A fragments for a 16-bit type, so P goes from S's
registers to P V's without any exchange: a thread's four 32-bit A registers
of a 16-column slice kk are its S values 8 kk .. 8 kk + 7 rounded in pairs.

The softmax keeps, per row, the running maximum ``m`` of the scaled scores
in base 2 (scale x log2 e folded into one FMA with the subtraction, the
exponential ``ex2.approx``) and the thread's part of the row sum ``l``
(the quad's four parts are summed once, at the end). Scores past the kv
length, right of the diagonal under a causal mask (row i sees columns j <=
i + shift: shift 0 top-left aligned, Skv - Sq bottom-right) and left of a
sliding window (j <= i + shift - window) are -inf (``mask_columns``); only
the tiles that reach past one of those are tested, and a block loads only
the kv tiles its rows see (``column_tiles``). A row whose scores are all
-inf keeps m = -inf, takes 0 as its shift, and ends with l = 0: o = 0 and
stats = -inf; a block whose rows see no column runs no step.

The epilogue scales O by 1 / l, rounds it to the output type, writes it
into the warpgroup's rows of the Q tile (free once its last S is done) and
stores each warp's 16 rows by TMA (from registers where Dv needs more boxes
than D); the statistics ``(m + log2 l) ln 2``, the natural log-sum-exp of
the scaled scores, go from registers.

With a GQA group folded (``tile.fold`` = G = H / Hkv, a decoding step:
G x Sq rows within the tile) a block holds every query row of the G
query heads of one kv head, and reads each K and V tile once for them: Q
comes in one box of [1, G, Sq, 64] (``GroupRows``, which says where each
tile row's head and query are), the masks and the kv tiles the block sees
use each row's query, and O and the statistics go from registers to each
valid row's own (b, h, s). The grid is then (1, B x Hkv, splits).

The grid is (query tiles, B x H): the blocks that run together share few
heads, whose K and V stay in L2 (ordered by head first, the blocks of the
first wave would read every head's K and V, more than L2 holds, and each
again from memory). A causal grid runs each head's query tiles last first,
since the longest (the last) should not start last.

A persistent grid (``tile.persistent``: a block an SM, flash_scheduler.py)
runs tile after tile in each block, in the same head-major order (causal:
pairs of tiles of equal work, the longer first). Both roles walk the
block's tiles: the producer's K and V steps and the consumers' waits count
through the rings across tiles (``g``), and the Q tile gets an empty
barrier (``q_empty``, one arrival a consumer warpgroup) that the producer
waits on before the next tile's Q. Where O is staged through shared
memory and the V tile is as tall as the Q tile (n = m), the consumers give
the Q tile back once their last S is done and stage O in the V stage of
the tile's last step instead (after every consumer's last P V: a named
barrier), so the next Q loads under the last step and the epilogue; each
warp's TMA store is awaited for its reads only (``wait_group.read``)
before its warpgroup gives the stage back (the writes before the block
exits). Elsewhere (n < m, or a tile with no step) O is staged in the Q
tile, which goes back after those reads; O from registers frees the Q
tile after the last S. The warpgroups' setmaxnreg stay within the
registers the block holds at entry (``registers``: a consumer asking for
more than the producer gave back waits forever); a persistent producer
walking ragged tiles keeps up to 40 (``register_plan``).

The synchronization of a persistent block, for its c-th tile (c from 0,
S steps, steps numbered g0 + j across the block's tiles, g0 the steps of
its tiles before; C consumer warpgroups; test/python/flash_protocol.py
models it and the tests run the model)::

    q_full      count 1 + Q's bytes; the producer arms it once a tile;
                the consumers wait parity c % 2
    q_empty     count C; each consumer's leader arrives once a tile (after
                its last S, or after its O stores read the Q tile); the
                producer waits parity (c % 2) ^ 1 before the tile's Q (the
                first wait passes on a fresh barrier)
    K/V full    stage g % stages, count 1 + bytes; the consumers wait
                parity (g / stages) % 2
    K/V empty   count C; each consumer arrives once a step g (K after S_g,
                V after P V_g, the last step's V after the O stores that
                staged in it read it); the producer waits the parity
                flipped before loading the stage again
    turns 1..C  named, 256 threads: consumer k syncs 1 + k before each of
                its S turns; k arrives on the next's after each, the last
                consumer once at the tile's start (if S > 0) and not after
                its last turn: S syncs, S arrivals a barrier a tile
    4           named (EPILOGUE_BARRIER), C x 128: every consumer's last P
                V is done before O goes into the V stage (staged there only)
    5 + k       named, 128: consumer k's warps' TMA stores have read its
                rows before its leader gives the staging back

A block a tile takes the same barriers without q_empty and the last two
(the O stores awaited whole), with Turns started once.

The block's dynamic shared memory, from its 1024-byte aligned base::

    Q          tile.m x padded(D) elements (O's staging at the end)
    K ring     stages x tile.n x padded(D)
    V ring     stages x tile.n x padded(Dv)
    barriers   q_full, K's full[stages] and empty[stages], V's likewise,
               q_empty (persistent)
"""

import math
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, gpu, llvm, memref, nvvm, scf, vector

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.tensorcore.attention_tiles import (
    LOG2E, group_block, log_sum_exp, mask_columns, online_softmax, query_block, query_unit,
    row_sums,
)
from dnnc.codegen.gpu.tensorcore.emit import (
    add as _add, cmp as _cmp, erase_replaced, f32, for_ as _for, i as _i, idx as _idx,
    if_ as _if, launch, shared_base, shared_ptr as _shared_ptr,
    to_i32 as _to_i32, to_i64 as _to_i64,
)
from dnnc.codegen.gpu.tensorcore.sm90.flash_combine import Partials, split_range
from dnnc.codegen.gpu.tensorcore.sm90.flash_scheduler import FlashScheduler
from dnnc.codegen.gpu.tensorcore.sm90.scheduler import PERSISTENT_CTAS
from dnnc.codegen.gpu.tensorcore.sm90.fragments import (
    accumulator_position, column_of, pack, pairs as fragment_pairs, row_of, struct,
    unpack, wgmma_rs, wgmma_ss,
)
from dnnc.codegen.gpu.tensorcore.sm90.mainloop import descriptor_constant, matrix_descriptor
from dnnc.codegen.gpu.tensorcore.sm90.paged import PagedRows, check_pages
from dnnc.codegen.gpu.tensorcore.sm90.rows import (
    GroupRows, Packed, StoredRows, merge_problem, padded, tile_rows,
)
from dnnc.codegen.gpu.tensorcore.sm90.pipeline import Ring
from dnnc.codegen.gpu.tensorcore.sm90.support import (
    ALIGN, SMEM_LIMIT, WARPGROUP, NotSupported,
)
from dnnc.codegen.gpu.tensorcore.sm90.tma import SWIZZLE, swizzled_offset

# Named barriers of a persistent block's epilogue (after Turns' 1 ..
# consumers): every consumer before O is staged in a V stage, then one per
# consumer warpgroup (this + 1 + c) after its stores have read their rows.
EPILOGUE_BARRIER = 4
# A persistent producer's registers where it walks ragged tiles
# (register_plan): two consumer warpgroups then keep 232.
PERSISTENT_PRODUCER_REGISTERS = 40

# Registers a consumer thread keeps beside its accumulators and P (O: Dv /
# 2, S: tile.n / 2, P: tile.n / 4), for the addresses and the softmax's
# temporaries.
SPARE_REGISTERS = 32


@dataclass(frozen=True)
class FlashTile:
    """``m`` query rows per block (64 per consumer warpgroup), ``n`` kv rows
    per step, ``stages`` ring stages of K and V tiles; ``splits`` blocks
    share each query tile's kv tiles (split-KV, ``flash_combine``);
    ``fold`` query heads (a GQA group, > 1) share a block's rows
    (``GroupRows``); ``persistent`` 1: a block an SM, each running query
    tile after query tile (flash_scheduler.py), N > 1: at most N such
    blocks."""

    m: int = 128
    n: int = 128
    stages: int = 2
    splits: int = 1
    fold: int = 1
    persistent: int = 0

    @property
    def consumers(self):
        return self.m // 64

    @property
    def threads(self):
        return WARPGROUP * (1 + self.consumers)


def smem_bytes(tile, d, dv):
    """Dynamic shared memory of the kernel: Q, the rings, the barriers
    (q_full, and a full and an empty one a stage of K's ring and of V's; a
    persistent block's q_empty too), slack."""
    ring = tile.stages * tile.n * (padded(d) + padded(dv)) * 2
    return ALIGN + tile.m * padded(d) * 2 + ring + 8 * (1 + 4 * tile.stages) \
        + (8 if tile.persistent else 0)


def check_operands(att, kernels, max_head_dim, head_dims, ragged=False):
    """What both attention kernels refuse of ``att``'s operands, in the
    words of ``kernels`` ("the attention kernel takes") and ``head_dims``
    (what a head dim must be, up to ``max_head_dim``): raise NotSupported.
    ``ragged``: the kernel reads and writes ragged tensors at their packed
    rows (rows.RaggedRows, rows.Packed); a kernel that does not say so
    refuses them (it would address padded rows)."""
    if att.ragged and not ragged:
        raise NotSupported(f"ragged {', '.join(att.ragged)}: {kernels} padded tensors only")
    if att.element not in ("bf16", "f16"):
        raise NotSupported(f"{att.element} q, k, v ({kernels} bf16 and f16)")
    for name, d in (("D", att.d), ("Dv", att.dv)):
        if d % 8 or not 8 <= d <= max_head_dim:
            raise NotSupported(f"head dim {name} = {d}: {head_dims} {max_head_dim}")
    if att.bias is not None:
        kind = str(ir.MemRefType(att.bias.type).element_type)
        if kind not in (att.element, "f32"):
            raise NotSupported(f"a {kind} bias with {att.element} q, k, v: expected "
                               f"{att.element} or f32")
    if not att.scale > 0:
        raise NotSupported(f"scale {att.scale}: expected a positive scale")


def check(att, tile):
    """Raise NotSupported unless this kernel with ``tile`` computes ``att``
    (tensorcore/attention.Attention)."""
    check_operands(att, "the attention kernel takes", 256, "expected a multiple of 8 up to",
                   ragged=True)
    if tile.m not in (64, 128, 192) or tile.n not in (64, 128) or tile.stages < 2:
        raise NotSupported(f"tile {tile.m}x{tile.n} in {tile.stages} stages: expected 64, 128 "
                           "or 192 query rows, 64 or 128 kv rows and 2 stages or more")
    held = accumulator_registers(att, tile)
    budget = register_plan(att, tile)[1] - SPARE_REGISTERS
    if held > budget:
        raise NotSupported(f"Dv {att.dv} with {tile.n} kv rows a step: {held} accumulator "
                           f"registers a thread, expected at most {budget} with "
                           f"{tile.consumers} consumer warpgroups")
    if att.paged:
        check_pages(att, tile.n)
    check_ragged(att)
    if att.ragged and (tile.fold > 1 or tile.splits > 1):
        raise NotSupported("ragged tensors with query heads folded or the kv tiles split: "
                           "expected neither")
    if tile.fold > 1:
        check_fold(att, tile)
    if tile.persistent and (tile.fold > 1 or tile.splits > 1):
        raise NotSupported("a persistent grid with query heads folded or the kv tiles split: "
                           "expected neither (a decode's few units fill no more than a wave)")
    size = smem_bytes(tile, att.d, att.dv)
    if size > SMEM_LIMIT:
        raise NotSupported(f"{tile.stages} stages of {tile.n} kv rows need {size} bytes of "
                           f"shared memory, more than {SMEM_LIMIT}")


def o_staging(att, tile, same_type):
    """Where the forward of ``att`` in ``tile``s stages O for its TMA
    stores (``same_type``: o has q's element type): None where O goes from
    registers (Dv needs more boxes than D, another type, split or folded
    blocks, a ragged o, whose last box would write into the next entry's
    rows); "v" in a persistent block whose V tile is as tall as the Q tile
    (n = m): the V stage of the tile's last step, so that the next tile's Q
    may load into the Q tile once the last S is done, under the last step
    and the epilogue (a tile with no step stages it in the Q tile); else
    "q", the Q tile (a persistent block's next Q then waits for the
    stores' reads)."""
    if padded(att.dv) > padded(att.d) or not same_type or tile.splits > 1 \
            or tile.fold > 1 or "o" in att.ragged:
        return None
    return "v" if tile.persistent and tile.n == tile.m else "q"


def check_ragged(att):
    """Raise NotSupported unless the attention kernels read and write
    ``att``'s ragged tensors as packed rows (rows.merge_problem)."""
    for name in att.ragged:
        value = att.dv_grad if name == "dv" else getattr(att, name)
        problem = merge_problem(name, value)
        if problem:
            raise NotSupported(problem)


def check_fold(att, tile):
    """Raise NotSupported unless ``tile.fold`` query heads fold into one
    block of ``att``: the whole group H / Hkv, its fold x Sq rows within
    the tile's, no bias (read per row's head, which the kernel does not
    do)."""
    if tile.fold != att.group:
        raise NotSupported(f"{tile.fold} query heads folded into a block: expected the "
                           f"group's H / Hkv = {att.group}")
    if tile.fold * att.sq > tile.m:
        raise NotSupported(f"{tile.fold} query heads of Sq = {att.sq} rows folded into a "
                           f"block: {tile.fold * att.sq} rows, expected at most {tile.m}")
    if att.bias is not None:
        raise NotSupported("a bias with query heads folded into a block: expected none")


class Turns:
    """The consumer warpgroups take turns issuing their products
    (FlashAttention-3's ping-pong): warpgroup c waits on named barrier 1 + c
    before it issues and then arrives on the next one's (c + 1, the last on
    the first's), so that the others' softmax runs while one's wgmmas do.
    Warpgroup 0 goes first: the last arrives on its barrier once at the
    start, and skips its arrival after its last turn (of ``steps`` a
    warpgroup), so that every wait meets exactly one arrival."""

    THREADS = 2 * WARPGROUP

    def __init__(self, consumer, consumers, steps):
        i32 = ir.IntegerType.get_signless(32)
        self.consumer = consumer
        self.last = consumers - 1
        self.steps = steps
        self.mine = arith.index_cast(i32, _add(consumer, 1))
        following = arith.remui(_add(consumer, 1), _idx(consumers))
        self.next = arith.index_cast(i32, _add(following, 1))

    def _bar(self, op, barrier):
        llvm.inline_asm(None, [barrier], f"{op} $0, {self.THREADS};", "r",
                        has_side_effects=True)

    def start(self):
        _if(_cmp("eq", self.consumer, _idx(self.last)),
            lambda: self._bar("bar.arrive", self.next))

    def begin(self):
        self._bar("bar.sync", self.mine)

    def end(self, j):
        last = _cmp("eq", j, arith.subi(self.steps, _idx(1)))
        skip = arith.andi(last, _cmp("eq", self.consumer, _idx(self.last)))
        _if(arith.xori(skip, arith.constant(ir.IntegerType.get_signless(1), 1)),
            lambda: self._bar("bar.arrive", self.next))


def entry_registers(threads):
    """The registers a thread of a block of ``threads`` holds at the
    kernel's entry: ptxas gives a kernel of one block an SM
    (dnn-register-budget's ``.minnctapersm 1``) the SM's 64K over its
    threads, in whole multiples of 8 (168 for 384 threads), at most 255."""
    return min(65536 // threads, 255) // 8 * 8


def registers(consumers, producer=24):
    """(producer's, each consumer's) registers a thread, setmaxnreg's
    multiples of 8, within what the block's 1 + consumers warpgroups hold
    at entry (``entry_registers``). That is the block's pool: the
    producer's setmaxnreg.dec gives registers to it, and a consumer
    warpgroup's setmaxnreg.inc waits until it holds what the warpgroup
    asks for; asked for more than the producer gave back, the last
    consumer waits forever (two consumers at 240 need the producer at
    24: 128 x (24 + 2 x 240) = 168 x 384)."""
    warpgroups = 1 + consumers
    pool = entry_registers(WARPGROUP * warpgroups) * warpgroups
    per = (pool - producer) // consumers // 8 * 8
    return producer, min(per, 240)


def accumulator_registers(att, tile):
    """Registers a consumer thread holds for O, S, P and a step's bias
    values."""
    return att.dv // 2 + tile.n // 2 + tile.n // 4 + (tile.n // 2 if att.bias is not None else 0)


def register_plan(att, tile):
    """(producer's, each consumer's) setmaxnreg of the forward of ``att``
    in ``tile``s: the producer keeps 24, the consumers what is left
    (``registers``). A producer that walks a persistent block's ragged
    tiles (it reads each entry's offsets; ptxas spilled it at 24) keeps
    up to PERSISTENT_PRODUCER_REGISTERS, as many as leave the consumers
    room for their accumulators (two consumers: 40 and 232; three at D 64:
    32 and 160)."""
    if tile.persistent and att.ragged:
        for producer in range(PERSISTENT_PRODUCER_REGISTERS, 24, -8):
            plan = registers(tile.consumers, producer)
            if accumulator_registers(att, tile) <= plan[1] - SPARE_REGISTERS:
                return plan
    return registers(tile.consumers)


class FlashForward:
    """The attention forward kernel of ``att`` in ``tile``s, replacing kernel
    function ``fn``'s body."""

    def __init__(self, fn, att, tile):
        check(att, tile)
        self.fn, self.att, self.tile = fn, att, tile
        self.folded = tile.fold > 1
        if self.folded:  # a GQA group's rows in one block (GroupRows)
            self.q = GroupRows(att.q, tile.m, att.d, tile.fold, att.sq)
        else:
            self.q = tile_rows(att, "q", tile.m, att.d)  # ragged: rows.RaggedRows
        if att.paged:  # K and V tiles from their pages (paged.py)
            self.k = PagedRows(att.k, att.page_table_k, tile.n, att.d)
            self.v = PagedRows(att.v, att.page_table_v, tile.n, att.dv)
        else:
            self.k = tile_rows(att, "k", tile.n, att.d)
            self.v = tile_rows(att, "v", tile.n, att.dv)
        # O is stored by TMA from the Q tile's boxes where it fits them (and
        # has q's type; an f32 o goes from registers). A ragged o goes from
        # registers too: a TMA box of the last tile would write past the
        # entry's length into the next entry's rows.
        same = ir.MemRefType(att.o.type).element_type == ir.MemRefType(att.q.type).element_type
        staging = o_staging(att, tile, same)
        self.o = StoredRows(att.o, 16, att.dv, tile.m) if staging else None
        # Two rings, K's then V's, their barriers after both (after q_full).
        k_ring, v_ring = tile.stages * self.k.bytes, tile.stages * self.v.bytes
        self.ring_k = Ring(tile.stages, self.k.bytes, k_ring + v_ring + 8, tile.consumers)
        self.ring_v = Ring(tile.stages, self.v.bytes, v_ring + 8 + 16 * tile.stages,
                           tile.consumers)
        self.q_tiles = 1 if self.folded else -(-att.sq // tile.m)
        self.blocks = att.batch * (att.kv_heads if self.folded else att.heads)
        self.persistent = bool(tile.persistent)
        self.scheduler = FlashScheduler(att, tile.m, PERSISTENT_CTAS if tile.persistent == 1
                                        else tile.persistent) if self.persistent else None
        self.o_in_v = staging == "v"
        # O always staged in the Q tile: the next Q waits for its stores.
        self.q_staging = self.persistent and staging == "q"
        self.g0 = None  # the ring's step count before the tile (persistent)
        self.n_s = tile.n // 2            # S values a thread holds
        self.n_o = att.dv // 2            # O values a thread holds
        self.c = att.scale * LOG2E        # scores to base-2 exponents

    def notes(self):
        t = self.tile
        split = (f"; the kv tiles split over {t.splits} blocks, their partial O and "
                 "log-sum-exp merged by a second kernel" if t.splits > 1 else "")
        if self.folded:
            rows = "g x Sq + s" if self.q.heads_outer else "s x G + g"
            split = (f"; the {t.fold} query heads g of each kv head in one block's rows "
                     f"(row {rows} for query s), each K and V tile read once for the "
                     f"group" + split)
        if self.att.ragged:
            split += (f"; ragged {', '.join(self.att.ragged)} at each entry's packed rows"
                      " (o stored a row at a time below the entry's length)"
                      if "o" in self.att.ragged else
                      f"; ragged {', '.join(self.att.ragged)} at each entry's packed rows")
        if self.persistent:
            split += "; " + self.scheduler.note() + (
                ", O staged in the V stage of the tile's last step (the next Q loads under "
                "the epilogue)" if self.o_in_v else "")
        return [f"attention forward: {t.m} query rows a block ({t.consumers} consumer "
                f"warpgroup{'s' if t.consumers > 1 else ''}), {t.n} kv rows a step, K and V "
                f"in rings of {t.stages} stages; S = QK^T and O += PV on wgmma, the online "
                f"softmax in registers{split}"]

    # -- host side ----------------------------------------------------------

    def build(self):
        body = irutil.body(self.fn)
        old = [op.operation for op in body.operations]
        ret = old[-1]
        t = self.tile
        with ir.InsertionPoint(ret), ret.location:
            for operand in (self.q, self.k, self.v, self.o):
                if operand is not None:
                    operand.make_descriptor()
            shared = smem_bytes(t, self.att.d, self.att.dv)
            if t.splits > 1:
                self.partials = Partials(self.att, t.splits)
            grid = (self.scheduler.ctas, 1, 1) if self.persistent \
                else (self.q_tiles, self.blocks, t.splits)
            launch(grid, t.threads, shared, self.kernel)
            if t.splits > 1:
                self.partials.combine()
        # The expansion's ops go.
        erase_replaced(old[:-1])

    # -- device side --------------------------------------------------------

    def kernel(self):
        att, t = self.att, self.tile
        tid = gpu.thread_id(gpu.Dimension.x)
        self.tid = tid
        base = shared_base(ALIGN)
        self.q_base = base
        self.ring_k.base = _add(base, self.q.bytes)
        self.ring_v.base = _add(self.ring_k.base, t.stages * self.k.bytes)
        self.q_full = _shared_ptr(_add(self.ring_v.base, t.stages * self.v.bytes))
        if self.persistent:
            # After q_full and both rings' barriers.
            self.q_empty = _shared_ptr(_add(self.ring_v.base, t.stages * self.v.bytes + 8
                                            + 32 * t.stages))
        else:
            # Step j loads kv tile start + j.
            block = group_block(att, t.fold, t.n) if self.folded \
                else query_block(att, t.m, t.n)
            self.place(block)
            if t.splits > 1:
                self.start, self.steps = split_range(self.start, self.steps, t.splits)

        def init():
            nvvm.MBarrierInitOp(self.q_full, _i(1))
            if self.persistent:
                nvvm.MBarrierInitOp(self.q_empty, _i(t.consumers))
            self.ring_k.init_barriers()
            self.ring_v.init_barriers()
        _if(_cmp("eq", tid, _idx(0)), init)
        gpu.barrier()
        warpgroup = arith.divui(tid, _idx(WARPGROUP))
        _if(_cmp("eq", warpgroup, _idx(0)), self.producer, self.consumer)

    def registers(self):
        """(producer's, each consumer's) setmaxnreg (``register_plan``)."""
        return register_plan(self.att, self.tile)

    def place(self, block):
        """Take the query tile ``block`` (attention_tiles.query_block's
        values) as the one the code that follows computes."""
        self.b, self.h, self.hk, self.m0, self.start, self.steps, self.extent = block

    def tiles(self, body):
        """A persistent block's loop over its query tiles
        (flash_scheduler.py), each placed, calling ``body(count)`` (the
        tiles run before, an index value) with ``g0`` the ring's step count
        before the tile; it runs the tile's steps."""
        t = self.tile

        def run(count, tile_x, head, g0):
            self.place(query_unit(self.att, t.m, t.n, tile_x, head))
            self.g0 = g0
            body(count)
            return [arith.addi(g0, self.steps)]
        self.scheduler.loop(run, [_idx(0)])

    def g(self, j):
        """The ring's step number of the tile's step ``j``: steps run
        through the rings across a persistent block's tiles (pipeline.Ring)."""
        return j if self.g0 is None else arith.addi(self.g0, j)

    @staticmethod
    def parity(count):
        """The phase parity (i32) of the count-th use of a barrier."""
        return _to_i32(arith.andi(count, _idx(1)))

    def producer(self):
        nvvm.SetMaxRegisterOp(self.registers()[0],
                              nvvm.SetMaxRegisterAction.decrease)
        t = self.tile

        def issue(count=None):
            b, h, hk = _to_i32(self.b), _to_i32(self.h), _to_i32(self.hk)
            if self.att.paged:
                for rows in (self.k, self.v):
                    rows.bind(self.extent.skv)
            if count is not None:
                # The Q tile is free once the consumers are done with the
                # last tile's Q (and its O, where staged there).
                irutil.mbarrier_wait(self.q_empty, arith.xori(self.parity(count), _i(1)))
            nvvm.MBarrierArriveExpectTxOp(None, self.q_full, _i(self.q.arrival_bytes))
            self.q.load(self.q_base, self.q_full, b, h, _to_i32(self.m0))

            def step(j):
                n0 = _to_i32(arith.muli(arith.addi(self.start, j), _idx(t.n)))
                for ring, rows in ((self.ring_k, self.k), (self.ring_v, self.v)):
                    s, parity = ring.slot(self.g(j))
                    # A fresh barrier counts as completed in the phase
                    # before its first: the first pass does not wait.
                    irutil.mbarrier_wait(ring.empty(s), arith.xori(parity, _i(1)))
                    full = ring.full(s)
                    nvvm.MBarrierArriveExpectTxOp(None, full, _i(rows.bytes))
                    rows.load(ring.stage(s), full, b, hk, n0)
            _for(_idx(0), self.steps, step)
        if self.persistent:
            _if(_cmp("eq", self.tid, _idx(0)), lambda: self.tiles(issue))
        else:
            _if(_cmp("eq", self.tid, _idx(0)), issue)

    def consumer(self):
        nvvm.SetMaxRegisterOp(self.registers()[1],
                              nvvm.SetMaxRegisterAction.increase)
        local = arith.remui(self.tid, _idx(WARPGROUP))
        consumer = arith.subi(arith.divui(self.tid, _idx(WARPGROUP)), _idx(1))
        self.leader = _cmp("eq", local, _idx(0))
        lane = arith.remui(local, _idx(32))
        self.local, self.lane, self.consumer = local, lane, consumer
        if not self.persistent:
            self.place_rows()
            irutil.mbarrier_wait(self.q_full, _i(0))
            self.descriptors()
            self.compute()
            return
        self.descriptors()

        def tile(count):
            self.place_rows()
            irutil.mbarrier_wait(self.q_full, self.parity(count))
            self.compute()
        self.tiles(tile)
        if self.o is not None:
            # The last tile's TMA stores are done before the block exits.
            _if(_cmp("eq", lane, _idx(0)), lambda: nvvm.CpAsyncBulkWaitGroupOp(0))

    def place_rows(self):
        """The thread's query rows in the tile (and, folded, their heads)."""
        local, lane, consumer = self.local, self.lane, self.consumer
        first = arith.addi(self.m0, arith.muli(consumer, _idx(64)))  # the warpgroup's first row
        row = arith.addi(first, arith.addi(arith.muli(arith.divui(local, _idx(32)), _idx(16)),
                                           arith.divui(lane, _idx(4))))
        self.rows = [row, _add(row, 8)]
        self.column = arith.muli(arith.remui(lane, _idx(4)), _idx(2))  # the thread's first
        self.first = first
        # The query rows the masks test at once: the warpgroup's 64, or
        # with a folded group every query row (its rows hold each of them).
        self.span = (first, 64)
        # Each of the thread's two rows: its head (where its O and
        # statistics go) and, folded, the tile row it is, self.rows then
        # holding its query row.
        self.heads = [self.h, self.h]
        if self.folded:
            self.tile_rows = self.rows
            pairs = [self.q.head_and_query(r) for r in self.tile_rows]
            self.heads = [arith.addi(self.h, g) for g, _ in pairs]
            self.rows = [s for _, s in pairs]
            self.span = (_idx(0), self.att.sq)

    def descriptors(self):
        """The wgmma descriptors' parts that hold for every step: Q's (the
        warpgroup's 64 rows of each box, K-major), K's mode, V's."""
        t = self.tile
        self.k_major = descriptor_constant(False, 0)
        self.q_desc = matrix_descriptor(
            arith.addi(self.q_base, arith.muli(_to_i64(self.consumer), _i(64 * SWIZZLE, 64))),
            self.k_major)
        self.v_const = descriptor_constant(True, t.n * SWIZZLE)

    def compute(self):
        """The placed tile's steps and epilogue, O and the statistics
        stored."""
        t = self.tile
        turns = Turns(self.consumer, t.consumers, self.steps) if t.consumers > 1 else None
        if turns and not self.persistent:
            turns.start()
        neg_inf, zero = f32(-math.inf), f32(0.0)
        # A block whose rows see no column (bottom-right aligned, Sq > Skv)
        # has no step: O = 0, stats = -inf.
        none = [llvm.mlir_zero(struct(self.n_o)), neg_inf, neg_inf, zero, zero]
        run = scf.IfOp(_cmp("ugt", self.steps, _idx(0)), [x.type for x in none],
                       has_else=True)
        with ir.InsertionPoint(run.else_block):
            if self.persistent and self.o is None:
                self.release_q()  # nothing was read of Q, nor is O staged there
            scf.YieldOp(none)
        with ir.InsertionPoint(run.then_block):
            scf.YieldOp(self.steps_of(turns))
        o_acc, m_a, m_b, l_a, l_b = run.results
        if t.splits > 1:
            self.partials.store(self, unpack(o_acc, self.n_o), [m_a, m_b], [l_a, l_b])
        else:
            self.store(o_acc, [m_a, m_b], [l_a, l_b])

    def release_q(self):
        """Give the Q tile back to the producer (one arrival a warpgroup),
        for the next tile's Q (persistent)."""
        _if(self.leader, lambda: nvvm.MBarrierArriveOp(None, self.q_empty))

    def steps_of(self, turns):
        """The block's steps (at least one): returns O, the row maxima and
        the row sums."""
        if turns and self.persistent:
            # Inside the tile's steps: a tile with none takes no turn.
            turns.start()
        # Step 0: S_0, its softmax; no P V yet.
        biases = self.biases(_idx(0))
        if turns:
            turns.begin()
        acc = self.qk(_idx(0))
        nvvm.WgmmaGroupSyncAlignedOp()
        if turns:
            turns.end(_idx(0))
        nvvm.WgmmaWaitGroupSyncOp(0)
        self.release(self.ring_k, _idx(0))
        neg_inf, zero = f32(-math.inf), f32(0.0)
        m, l_, _, p = self.softmax(self.masked(unpack(acc, self.n_s), _idx(0)),
                                   [neg_inf, neg_inf], [zero, zero], biases)
        pairs = self.pairs(p)

        # Step j: S_j, then O (rescaled for step j - 1's maxima) += P_{j-1}
        # V_{j-1}, issued together in this warpgroup's turn; S_j's softmax
        # runs while P V (and the other warpgroup's products) do; then the
        # stage of step j - 1 is released.
        def step(j, o_acc, m_a, m_b, l_a, l_b, alpha_a, alpha_b, *pairs):
            # The step's bias values are loaded ahead of the turn: their
            # latency passes while the warpgroup waits for it.
            biases = self.biases(j)
            if turns:
                turns.begin()
            acc = self.qk(j)
            nvvm.WgmmaGroupSyncAlignedOp()
            o_acc = self.rescale(o_acc, [alpha_a, alpha_b])
            before = arith.subi(j, _idx(1))
            o_acc = self.pv(o_acc, list(pairs), before)
            nvvm.WgmmaGroupSyncAlignedOp()
            if turns:
                turns.end(j)
            nvvm.WgmmaWaitGroupSyncOp(1)
            self.release(self.ring_k, j)
            m, l_, alpha, p = self.softmax(self.masked(unpack(acc, self.n_s), j),
                                           [m_a, m_b], [l_a, l_b], biases)
            nvvm.WgmmaWaitGroupSyncOp(0)
            self.release(self.ring_v, before)
            return [o_acc] + m + l_ + alpha + self.pairs(p)
        one = f32(1.0)
        loop = _for(_idx(1), self.steps, step,
                    [llvm.mlir_zero(struct(self.n_o))] + m + l_ + [one, one] + pairs)
        o_acc, m_a, m_b, l_a, l_b, alpha_a, alpha_b = loop.results[:7]
        pairs = list(loop.results[7:])
        if self.persistent and not self.q_staging:
            # Every S is done: the next tile's Q may load.
            self.release_q()
        # The last step's P V.
        last = arith.subi(self.steps, _idx(1))
        o_acc = self.rescale(o_acc, [alpha_a, alpha_b])
        o_acc = self.pv(o_acc, pairs, last)
        nvvm.WgmmaGroupSyncAlignedOp()
        nvvm.WgmmaWaitGroupSyncOp(0)
        if not self.o_in_v:  # else O is staged there: the epilogue releases it
            self.release(self.ring_v, last)
        return [o_acc, m_a, m_b, l_a, l_b]

    # -- the products ---------------------------------------------------------

    def qk(self, j):
        """Issue S = Q K_j^T over the head dim (16 columns a wgmma), after
        waiting for step ``j``'s stage; returns the accumulator in flight."""
        att, t, ring = self.att, self.tile, self.ring_k
        s, parity = ring.slot(self.g(j))
        irutil.mbarrier_wait(ring.full(s), parity)
        k_desc = matrix_descriptor(ring.stage(s), self.k_major)
        # After the wait: registers the wgmmas read (O, P) were written by
        # ordinary instructions.
        nvvm.WgmmaFenceAlignedOp()
        return wgmma_ss(t.n, att.element, self.q_desc, self.q.box_bytes, k_desc,
                        self.k.box_bytes, att.d)

    def pv(self, o_acc, pairs, j):
        """Issue O += P V_j over step ``j``'s kv rows (16 a wgmma), P from
        registers (``pairs``: 4 i32 per 16 columns of S)."""
        s, parity = self.ring_v.slot(self.g(j))
        irutil.mbarrier_wait(self.ring_v.full(s), parity)
        v_desc = matrix_descriptor(self.ring_v.stage(s), self.v_const)
        nvvm.WgmmaFenceAlignedOp()
        return wgmma_rs(o_acc, self.att.dv, self.att.element, pairs, v_desc)

    def release(self, ring, j):
        """Give step ``j``'s stage of ``ring`` back to the producer (one
        arrival a warpgroup)."""
        s = arith.remui(self.g(j), _idx(self.tile.stages))
        _if(self.leader, lambda: nvvm.MBarrierArriveOp(None, ring.empty(s)))

    # -- the softmax ----------------------------------------------------------

    def biases(self, j):
        """The bias values at the thread's scores of step ``j``, times
        log2 e (f32), or None without a bias. The bias broadcasts over its
        dims of size 1; rows and columns past the ends are read clamped (the
        mask makes those scores -inf)."""
        att = self.att
        if att.bias is None:
            return None
        shape = list(ir.MemRefType(att.bias.type).shape)
        wide = str(ir.MemRefType(att.bias.type).element_type) == "f32"
        n0 = arith.muli(arith.addi(self.start, j), _idx(self.tile.n))
        batch = self.b if shape[0] > 1 else _idx(0)
        head = self.h if shape[1] > 1 else _idx(0)
        rows = [arith.minui(r, _idx(att.sq - 1)) if shape[2] > 1 else _idx(0)
                for r in self.rows]
        base = arith.addi(n0, self.column)
        log2e = f32(LOG2E)
        out = []
        for e in range(self.n_s):
            col = _idx(0)
            if shape[3] > 1:
                col = arith.minui(_add(base, column_of(e)), _idx(att.skv - 1))
            x = memref.load(att.bias, [batch, head, rows[row_of(e)], col])
            if not wide:
                x = arith.extf(ir.F32Type.get(), x)
            out.append(arith.mulf(x, log2e))
        return out

    def masked(self, scores, j):
        """``scores`` of step ``j`` with -inf where a row does not see the
        column (mask_columns)."""
        n0 = arith.muli(arith.addi(self.start, j), _idx(self.tile.n))
        return mask_columns(self.att, self.extent, scores, n0, self.tile.n, self.rows,
                            self.column, *self.span, accumulator_position)

    def softmax(self, scores, m, l_, biases=None):
        """One step of the online softmax (attention_tiles.online_softmax)
        over the thread's two rows."""
        return online_softmax(scores, m, l_, self.c, row_of, biases)

    def rescale(self, o_acc, alpha):
        """O's rows times their factors ``alpha``."""
        o = unpack(o_acc, self.n_o)
        return pack([arith.mulf(x, alpha[row_of(e)]) for e, x in enumerate(o)])

    def pairs(self, p):
        """P rounded and packed as wgmma's A fragments (fragments.pairs)."""
        return fragment_pairs(p, self.att.element)

    def pair(self, lo, hi):
        return fragment_pairs([lo, hi], self.att.element)[0]

    # -- the epilogue ---------------------------------------------------------

    def store(self, o_acc, m, l_):
        """O / l rounded to the output type, and the statistics, for the
        thread's rows that exist."""
        att = self.att
        totals, empty, scale = row_sums(l_)
        o = unpack(o_acc, self.n_o)
        element = ir.MemRefType(att.o.type).element_type
        wide = isinstance(element, ir.F32Type)

        def two(r, block):
            lo, hi = (arith.mulf(o[4 * block + 2 * r + i], scale[r]) for i in range(2))
            if wide:
                return vector.from_elements(ir.VectorType.get([2], element), [lo, hi])
            return self.pair(lo, hi)
        # pairs[r][block]: row r's two columns of 8-column block ``block``
        # (an i32 of two 16-bit values, or two f32).
        pairs = [[two(r, block) for block in range(att.dv // 8)] for r in range(2)]
        if self.o is not None:
            self.store_staged(pairs)
        ragged = att.ragged.get("o")
        if ragged:  # entry b's rows below Lq at its packed rows (rows.Packed)
            packed = Packed(att.o, *ragged)
            first = packed.first(self.b)
        for r in range(2):
            def write(r=r):
                index = [self.b, self.heads[r], self.rows[r]]

                def write_o(index=index):
                    pair_type = ir.VectorType.get([2], element)
                    for block, bits in enumerate(pairs[r]):
                        value = bits if wide else llvm.bitcast(pair_type, bits)
                        vector.store(value, att.o, index + [_add(self.column, 8 * block)],
                                     alignment=8 if wide else 4)
                if ragged:
                    batch, row = packed.at(first, self.rows[r])
                    _if(_cmp("ult", self.rows[r], self.extent.sq),
                        lambda: write_o([batch, self.heads[r], row]))
                elif self.o is None:
                    write_o()
                if att.stats is not None:
                    def stats():
                        memref.store(log_sum_exp(m[r], totals[r], empty[r]), att.stats,
                                     index + [_idx(0)])
                    _if(_cmp("eq", self.column, _idx(0)), stats)
            _if(self.valid(r), write)

    def valid(self, r):
        """Whether the thread's row ``r`` is one of the problem's: its query
        row below Sq, folded its tile row below the group's G x Sq (an i1)."""
        if self.folded:
            return _cmp("ult", self.tile_rows[r], _idx(self.tile.fold * self.att.sq))
        return _cmp("ult", self.rows[r], _idx(self.att.sq))

    def store_staged(self, pairs):
        """O through shared memory and TMA stores: each warp writes its 16
        rows into its warpgroup's rows of the Q tile (free once the last S
        is done), in the same swizzled boxes, and its first lane stores them
        (TMA drops the rows past Sq and the columns past Dv). A persistent
        block with ``o_in_v`` writes them into the V stage of the tile's
        last step instead (the Q tile then loads the next tile's Q), once
        every consumer's last P V is done; after the stores have read
        shared memory it gives back whichever it used."""
        t = self.tile
        staging = self.q_base
        if self.o_in_v:
            if t.consumers > 1:
                # The stage holds V rows other warpgroups' last P V read.
                self._bar("bar.sync", _i(EPILOGUE_BARRIER), t.consumers * WARPGROUP)
            last = arith.remui(self.g(arith.subi(self.steps, _idx(1))), _idx(t.stages))
            staging = arith.select(_cmp("ugt", self.steps, _idx(0)),
                                   self.ring_v.stage(last), self.q_base)
        byte = arith.muli(arith.remui(self.lane, _idx(4)), _idx(4))
        first = arith.addi(arith.muli(self.consumer, _idx(64)),
                           arith.muli(arith.divui(self.local, _idx(32)), _idx(16)))
        for r in range(2):
            row = arith.addi(first, _add(arith.divui(self.lane, _idx(4)), 8 * r))
            for block, bits in enumerate(pairs[r]):
                box, chunk = divmod(block, 8)
                at = arith.addi(staging, _to_i64(swizzled_offset(row, chunk, byte)))
                llvm.store(bits, _shared_ptr(_add(at, box * self.q.box_bytes)), alignment=4)
        llvm.inline_asm(None, [], "fence.proxy.async.shared::cta;", "", has_side_effects=True)
        nvvm.SyncWarpOp(_i(-1))

        def issue():
            src = arith.addi(staging, _to_i64(arith.muli(first, _idx(SWIZZLE))))
            self.o.store(src, _to_i32(self.b), _to_i32(self.h),
                         _to_i32(arith.addi(self.m0, first)))
            nvvm.CpAsyncBulkCommitGroupOp()
            # A persistent block waits only for the stores' reads of shared
            # memory (the last tile's writes are awaited before it exits).
            nvvm.CpAsyncBulkWaitGroupOp(0, read=self.persistent)
        _if(_cmp("eq", self.lane, _idx(0)), issue)
        if not self.persistent:
            return
        # Each warp's stores have read its rows: the warpgroup's arrival.
        nvvm.SyncWarpOp(_i(-1))
        mine = arith.index_cast(ir.IntegerType.get_signless(32),
                                _add(self.consumer, EPILOGUE_BARRIER + 1))
        self._bar("bar.sync", mine, WARPGROUP)
        if self.o_in_v:
            _if(_cmp("ugt", self.steps, _idx(0)),
                lambda: self.release(self.ring_v, arith.subi(self.steps, _idx(1))),
                self.release_q)
        else:
            self.release_q()

    @staticmethod
    def _bar(op, barrier, threads):
        """Named barrier ``barrier`` (an i32) over ``threads`` threads."""
        llvm.inline_asm(None, [barrier], f"{op} $0, {threads};", "r", has_side_effects=True)


def build_attention(fn, att, tile):
    """Replace kernel function ``fn``'s body by the attention forward kernel
    of ``att`` in ``tile``s. Returns what the plan should say of it."""
    kernel = FlashForward(fn, att, tile)
    kernel.build()
    return kernel.notes()
