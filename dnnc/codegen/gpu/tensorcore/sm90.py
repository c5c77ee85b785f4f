"""The tc-sm90 strategy: a persistent GEMM on Hopper tensor cores (wgmma),
fed by TMA through a shared-memory ring, with the epilogue fused in registers.

The grid is min(tiles, PERSISTENT_CTAS = 132) blocks. Block b computes the
``BM x BN`` tiles of ``C = A @ B`` (over every batch) numbered b, b + grid,
b + 2 grid, ... (``_tiles``), in grouped order (``_grouped``: GROUP_M tiles
of M down a column of N tiles, so that the B columns a group reads stay in
L2), with three warpgroups of 128 threads (warp specialization)::

    warpgroup 0  producer   one thread issues the TMA loads of each K step
                            (A: BM x BK, B: BN x BK or BK x BN) into stage
                            s = step % stages, after waiting for the stage
                            to be empty; the loads complete on full[s]
    warpgroups 1, 2  consumers  each owns BM/2 = 64 rows of the tile: wait
                            for full[s], issue BK/16 wgmma m64nBNk16 on
                            the stage, release the previous step's stage to
                            the producer (its empty barrier) once its wgmmas
                            are done (wgmma.wait_group 1 keeps one step in
                            flight); after a tile's last step, wait for all,
                            release that stage, then run the epilogue

The producer's and the consumers' K-step counter runs on across tiles
(``_slot``: stage = step % stages, the phase parity from step / stages), so
the ring is not drained between tiles: the consumers release a tile's last
stage before its epilogue, and the producer, which only waits for empty
stages, fills the ring with the next tile's K steps while the epilogue runs.

The producer gives registers away (setmaxnreg 40) and the consumers take
them (232): a consumer's 64 x BN f32 accumulator is BN / 2 registers per
thread.

**Operand loaders.** ``TmaOperand`` describes how a GEMM operand reaches
shared memory: the global buffer, its TMA box (128-byte swizzle: a row of
the box is 128 bytes of K, or of M or N for an operand stored MN-major),
where the batch, M/N and K coordinates go, and the wgmma descriptor layout
of what lands (K-major, or MN-major for A stored K x M or B stored K x N,
which wgmma reads transposed). wgmma reads tf32 from shared memory only
K-major, but takes A from registers too: the consumers read a tf32 A
stored K x M from the stage into wgmma's A fragments (``registers_a``,
``Builder._fragments``; the K loop runs two steps an iteration so that
consecutive steps' fragments lie in distinct registers, since a step's
wgmmas read them while the next is loaded), and a tf32 B stored K x N
makes the kernel compute ``Cᵀ = Bᵀ Aᵀ`` (``computes_transposed``: B is
then that product's A; the epilogue evaluates at C's indices and stores
element by element). An operand stored MN-major that neither reaches is
first copied transposed by a launch of its own, as is one whose rows TMA
cannot step by (``transposed_operands``). A
convolution's implicit GEMM plugs in here with an im2col TMA box and the
same mainloop. An operand with a prologue
(``gemm.Prologue``: pointwise ops between the load and the multiply, a cast
from f32 for one) is loaded as stored, without swizzle, and each K step the
consumers convert its tile into the swizzled layout wgmma reads
(``_prologues``, ``_convert``): A's 64 rows by the consumer that multiplies
them, into one of CONVERTED_A tiles of its own; B by both consumers, into
one of CONVERTED_B shared tiles; then a fence for the async proxy and a
named barrier.

**Mainloop.** ``_producer`` and ``_consumer`` above: an mbarrier pair per
stage (full: one arrival plus the TMA transaction bytes; empty: one arrival
per consumer warpgroup), phases tracked by parity from the step counter. A
wait (``irutil.mbarrier_wait``) spins on ``mbarrier.try_wait.parity`` in inline PTX, with
no suspend-time hint: nvvm.mbarrier.try_wait.parity requires one, and with
it ptxas puts a NANOSLEEP in the retry path, which a stage arriving just
after the first try then waits out.

**Epilogue.** ``Epilogue`` (dnnc/codegen/gpu/tensorcore/gemm.py) is evaluated on each
accumulator element where it lies: thread t of a consumer holds, for each 8
columns j of its 64 x BN slice, the pairs (row, col), (row, col + 1) and
(row + 8, col), (row + 8, col + 1) with row = 16 * warp + lane / 4 and col =
8 * j + 2 * (lane % 4) (the wgmma accumulator layout). Bias, residual and
other operands are loaded at the same coordinates through their broadcast
maps, the fused pointwise chain runs in f32 registers (``PairEpilogue``,
dnnc/codegen/gpu/tensorcore/pair_epilogue.py). They are read while the last K step's
wgmmas run; where an input varies along the rows (a residual: a register
for every two accumulators), a staged epilogue reads its first column
slice's then, and each next slice's while it evaluates one
(``AHEAD_REGISTERS``), so that a 64 x 256 slice of the tile does not
spill. The outputs go through shared memory
where slots fit beside the ring (``_staging``, ``_staged_epilogue``): each
consumer warp writes its 16 rows of a 128-byte column slice into a slot in
TMA's swizzled layout, and one lane stores it with a TMA store
(``cp.async.bulk.tensor`` shared to global), which runs while the warp goes
on to the next slice and the next tile's K steps; an output whose rows TMA
cannot store (an odd row length) is read back from the slot by the warp and
stored along its rows, 32 consecutive elements an instruction. Without room
(a prologue's converted tiles), or for an output of another type, the
epilogue stores from registers: 16 bytes a thread where the rows allow
(``PairEpilogue.store_quad``), else pairs or elements. Rows and columns past M and N are
computed on TMA's zero fill and not stored (TMA clips them).

**Split-K.** With ``splits`` S > 1 a work unit is one split of a tile's K
steps, and the consumers store their f32 accumulators into a ``[P, batch,
M, N]`` workspace of P = S partials. Up to LAST_ARRIVAL_SPLITS partials,
the last warp of a tile's to arrive sums them and runs the epilogue in this
launch (``_sum_if_last``); beyond, a second launch does
(``_reduce_splits``). With ``cluster`` C > 1 the launch runs in
thread-block clusters of C consecutive splits of a tile, one unit a block,
which first sum their accumulators through distributed shared memory
(``_cluster_sum``): P = S / C, and a lone partial (C = S) is not stored at
all, its owner runs the epilogue.

The TMA descriptors are made on the host side (``nvgpu.tma.create.descriptor``
on the kernel function's buffers), passed to the kernel as ``!llvm.ptr``;
the runtime encodes them (``cuTensorMapEncodeTiled``, again only when a
tensor's address changes) and passes the 128 bytes by value
(dnn-tma-grid-constant marks the parameters).
"""

from dataclasses import dataclass, replace

from mlir import ir
from mlir.dialects import arith, gpu, llvm, memref, nvgpu, nvvm, scf, vector

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.elementwise.transpose import transposed_copy
from dnnc.codegen.gpu.elementwise.vectorize import identity_layout
from dnnc.codegen.gpu.tensorcore.pair_epilogue import PairEpilogue, quad_transpose

WARPGROUP = 128
SWIZZLE = 128          # bytes: a TMA box row; BK = SWIZZLE / element bytes
PRODUCER_REGISTERS = 40
CONSUMER_REGISTERS = 232
GROUP_M = 8            # tiles of M per group in the grouped (L2-friendly) tile order
ALIGN = 1024           # smem alignment 128-byte swizzle atoms need
# Persistent blocks: one per SM of an H100 SXM / H200 (132; one block fits an
# SM). A part with fewer SMs runs the rest as a second partial wave.
PERSISTENT_CTAS = 132
# Split-K over at most this many splits sums the partials in the GEMM's own
# launch (the last warp of a tile's splits to arrive reads the others'); more
# splits leave it to a second launch, which spreads the sum over every SM
# (see Builder._sum_if_last).
LAST_ARRIVAL_SPLITS = 4
# The shared memory an sm_90 block may use (dynamic, opted in).
SMEM_LIMIT = 227 * 1024
# The staged epilogue (Builder._staged_epilogue): a consumer warp's 16 rows
# of a 128-byte-wide column slice of the tile go through a shared slot of
# STAGE_ROWS x 128 bytes, laid out as TMA's 128-byte swizzle lays them.
STAGE_ROWS = 16
SLOT_BYTES = STAGE_ROWS * SWIZZLE
# Output types a TMA store takes from a staged slot.
STAGED_TYPES = ("bf16", "f16", "f32")
# The staged epilogue reads the next column slice's residual-like inputs
# while it evaluates one where a slice's take at most this many registers a
# thread (one bf16 or f32 input; two would spill beside the accumulators).
AHEAD_REGISTERS = 16


class NotSupported(Exception):
    """tc-sm90 does not take this GEMM; the message says why."""


@dataclass(frozen=True)
class Tile:
    m: int = 128
    n: int = 128
    k: int = 64
    stages: int = 4
    consumers: int = 2
    splits: int = 1          # split-K: blocks that share one output tile's K steps
    cluster: int = 1         # split-K: consecutive splits summed in a cluster of this many

    @property
    def threads(self):
        return WARPGROUP * (1 + self.consumers)


def _element_bytes(element):
    return 4 if element in ("f32", "tf32") else 2


# Stored types a prologue operand's tile may be loaded as (TMA types whose
# elements the consumers read with 16-byte loads).
PROLOGUE_SOURCES = ("f32", "bf16", "f16")
# Converted tiles a prologue operand keeps: A's per consumer (its own wgmmas
# read the one of the step before while it writes the next), B's shared by
# both consumers (a consumer one step ahead must not write the tile the
# other's wgmmas of the step before may still read).
CONVERTED_A, CONVERTED_B = 2, 3


def converted_bytes(tile, prologues):
    """Shared memory of the converted tiles of operands with a prologue
    (``prologues``: (A has one, B has one)): 128-byte rows of K."""
    a, b = prologues
    return (CONVERTED_A * tile.m * SWIZZLE if a else 0) + \
        (CONVERTED_B * tile.n * SWIZZLE if b else 0)


# A wgmma instruction multiplies 32 bytes of K: k = 16 of bf16/f16, 8 of tf32.
WGMMA_K_BYTES = 32


def smem_bytes(tile, element, sources=(None, None)):
    """Dynamic shared memory of a kernel: the ring, the converted tiles of
    prologue operands, the ring's barriers, alignment slack. ``sources``:
    the stored type of A and of B where a prologue converts it, else None."""
    eb = _element_bytes(element)
    a, b = (_element_bytes(s) if s else eb for s in sources)
    stage = (tile.m * a + tile.n * b) * tile.k
    return ALIGN + tile.stages * stage + \
        converted_bytes(tile, [s is not None for s in sources]) + 16 * tile.stages


def _sources(gemm):
    """(A's stored type, B's) where a prologue converts it, else None."""
    return tuple(o.stored if o.prologue is not None else None for o in (gemm.a, gemm.b))


def multiplied(gemm):
    """The wgmma operand type of ``gemm``: bf16, f16, or tf32 for f32 operands
    a tf32 matmul rounds (wgmma reads their top 19 bits, rounding toward
    zero where the reference rounds to nearest: within tf32's precision)."""
    return "tf32" if gemm.compute == "tf32" else gemm.element


def _misaligned(shape, strides, offset, eb):
    """What breaks TMA's 16-byte rule in a view of ``eb``-byte elements:
    ("stride", dim, bytes) for the innermost dim stepped by a stride that is
    not a multiple of 16 bytes (the row pitch before the batch's),
    ("offset", bytes) for a start that is not 16-byte aligned, or None."""
    for dim in reversed(range(len(strides) - 1)):
        if shape[dim] > 1 and (strides[dim] * eb) % 16:
            return "stride", dim, strides[dim] * eb
    if (offset * eb) % 16:
        return "offset", offset * eb
    return None


def tma_problem(name, operand):
    """Why TMA cannot read ``operand`` (named ``name``) where it lies, or
    None: a contiguous dim, strides of 16-byte multiples, a 16-byte aligned
    start, rank 5 at most."""
    t = ir.MemRefType(operand.value.type)
    shape, strides, offset = physical_view(t)
    order = physical_order(t)
    eb = _element_bytes(operand.stored)
    if strides[-1] != 1:
        return f"{name} has no contiguous dim (smallest stride {strides[-1]}): TMA needs one"
    inner = "K" if operand.k_major else {"A": "M", "B": "N"}[name]
    broken = _misaligned(shape, strides, offset, eb)
    if broken and broken[0] == "stride":
        return (f"{name}'s dim {order[broken[1]]} stride is {broken[2]} bytes: TMA needs a "
                f"multiple of 16 ({inner}, {name}'s contiguous dim, a multiple of {16 // eb})")
    if broken:
        return f"{name} starts {broken[1]} bytes into its buffer: TMA needs 16-byte alignment"
    if t.rank > 5:
        return f"{name} has rank {t.rank}: TMA takes up to 5"
    return None


def stage_problem(buffer):
    """Why the epilogue cannot stage output ``buffer`` (C's [batch,] M x N)
    in shared memory, or None: a type of 2 or 4 bytes, contiguous rows."""
    t = ir.MemRefType(buffer.type)
    if str(t.element_type) not in STAGED_TYPES:
        return f"a {t.element_type} output (staged tiles take {', '.join(STAGED_TYPES)})"
    _, strides, _ = irutil.memref_geometry(t)
    if strides[-1] != 1:
        return f"its rows are strided by {strides[-1]} elements"
    return None


def store_problem(buffer):
    """Why TMA cannot store a staged slot into output ``buffer`` (one
    stage_problem passes), or None: rows a multiple of 16 bytes apart, a
    16-byte aligned start."""
    t = ir.MemRefType(buffer.type)
    eb = irutil.element_bytes(t.element_type)
    broken = _misaligned(*irutil.memref_geometry(t), eb)
    if broken and broken[0] == "stride" and broken[1] == t.rank - 2:
        return (f"its rows are {broken[2]} bytes apart: TMA needs a multiple of 16 "
                f"(N a multiple of {16 // eb})")
    if broken and broken[0] == "stride":
        return f"its batches are {broken[2]} bytes apart: TMA needs a multiple of 16"
    if broken:
        return f"it starts {broken[1]} bytes into its buffer: TMA needs 16-byte alignment"
    return None


def registers_a(gemm):
    """A tf32 A stored K x M that TMA reads where it lies: the consumers
    read its fragments from the stage into registers (``Builder._fragments``)
    and wgmma takes A from them, since it reads tf32 from shared memory only
    K-major."""
    return multiplied(gemm) == "tf32" and not gemm.a.k_major \
        and tma_problem("A", gemm.a) is None


def transposed_tile(tile):
    """The tile of ``Cᵀ = Bᵀ Aᵀ`` that covers what ``tile`` covers of C (its
    M and N swapped, a consumer warpgroup per 64 rows), or None where that
    is not a tile tc-sm90 takes (M 64 or 128)."""
    if tile.n not in (64, 128):
        return None
    return replace(tile, m=tile.n, n=tile.m, consumers=tile.n // 64)


def computes_transposed(gemm, tile):
    """Whether tc-sm90 computes ``Cᵀ = Bᵀ Aᵀ`` instead of ``C``: a tf32 B
    stored K x N, which wgmma reads from shared memory only K-major, is the
    A of the transposed product and goes through registers (registers_a)
    rather than through a transposing copy, which would read and write all
    of B ahead of the GEMM. Taken where A is stored K-major and TMA reads B
    where it lies; with K split, where the transposed product has as many
    tiles as C (the heuristics chose the split for that many), which a
    transposed_tile always has."""
    if multiplied(gemm) != "tf32" or not gemm.a.k_major or gemm.b.k_major \
            or tma_problem("B", gemm.b) is not None:
        return False

    def tiles(m, n):
        return -(-m // tile.m) * -(-n // tile.n)
    return tile.splits == 1 or transposed_tile(tile) is not None \
        or tiles(gemm.n, gemm.m) == tiles(gemm.m, gemm.n)


def transposed_gemm(gemm):
    """``gemm`` as ``Cᵀ = Bᵀ Aᵀ``: B's operand is A, A's is B, M and N
    swap. The epilogue stays C's (PairEpilogue swaps the indices back)."""
    return replace(gemm, a=gemm.b, b=gemm.a, m=gemm.n, n=gemm.m)


def transposed_operands(gemm):
    """{"A" or "B": why} for the operands that a launch ahead of the GEMM
    copies transposed (row-major M x K or N x K): those stored MN-major
    that wgmma cannot read in place (a tf32 B, which it reads from shared
    memory only K-major; a tf32 A goes through registers where TMA can read
    it: registers_a) or TMA cannot (rows of M or N that are not a multiple
    of 16 bytes apart, a misaligned start), when the copy's rows of K are a
    multiple of 16 bytes."""
    tf32 = multiplied(gemm) == "tf32"
    copied = {}
    for name, operand in (("A", gemm.a), ("B", gemm.b)):
        eb = _element_bytes(operand.stored)
        if operand.k_major or (gemm.k * eb) % 16:
            continue
        if tf32 and name == "B":
            copied[name] = "wgmma reads tf32 from shared memory only K-major"
            continue
        problem = tma_problem(name, operand)
        if problem is not None:
            # The rows of M or N lie one K step apart.
            _, strides, _ = irutil.memref_geometry(operand.value.type)
            pitch = strides[operand.dims["k"]] * eb
            copied[name] = (f"its rows of {pitch} bytes are not a multiple of 16 for TMA"
                            if pitch % 16 else problem)
    return copied


def check(gemm, tile):
    """Raise NotSupported unless tc-sm90 with ``tile`` computes ``gemm``."""
    element = multiplied(gemm)
    if element == "f32":
        raise NotSupported("f32 operands multiplied in f32: the tensor cores take them as tf32 "
                           "(compute_data_type='tf32')")
    if element not in ("bf16", "f16", "tf32"):
        raise NotSupported(f"{element} operands (tc-sm90 takes bf16, f16 and tf32 so far)")
    eb = _element_bytes(element)
    if tile.k * eb != SWIZZLE:
        raise NotSupported(f"tile K {tile.k}: expected {SWIZZLE // eb} for {element}")
    if tile.m not in (64, 128) or tile.m != 64 * tile.consumers or tile.n % 64 \
            or not 64 <= tile.n <= 256:
        raise NotSupported(f"tile {tile.m}x{tile.n}: expected M = 64 or 128 (64 per consumer "
                           "warpgroup) and N a multiple of 64 up to 256")
    for name, operand in (("A", gemm.a), ("B", gemm.b)):
        if operand.prologue is not None and operand.stored not in PROLOGUE_SOURCES:
            raise NotSupported(f"a prologue on {name} stored as {operand.stored}: tc-sm90 "
                               f"converts {', '.join(PROLOGUE_SOURCES)} tiles")
    # An operand copied transposed (Builder._transpose) is read from the
    # copy, row-major M x K or N x K with rows of a 16-byte multiple.
    transposed = transposed_operands(gemm)
    for name, operand in (("A", gemm.a), ("B", gemm.b)):
        if name in transposed:
            continue
        if element == "tf32" and not operand.k_major and name == "B":
            raise NotSupported(f"K is {gemm.k}: the transposed tf32 {name} needs rows of a "
                               "multiple of 16 bytes (K a multiple of 4)")
        problem = tma_problem(name, operand)
        if problem is not None:
            raise NotSupported(problem)
    size = smem_bytes(tile, element, _sources(gemm))
    if size > SMEM_LIMIT:
        raise NotSupported(f"{tile.stages} stages need {size} bytes of shared memory, more "
                           f"than the {SMEM_LIMIT} an sm_90 block may use")


# ----------------------------------------------------------------------------
# Small builders


def _i(n, bits=32):
    return arith.constant(ir.IntegerType.get_signless(bits), int(n))


def _idx(n):
    return irutil.index(n)


def _ptr(space=0):
    return ir.Type.parse(f"!llvm.ptr<{space}>" if space else "!llvm.ptr")


def _if(cond, build_then, build_else=None):
    op = scf.IfOp(cond, [], has_else=build_else is not None)
    with ir.InsertionPoint(op.then_block):
        build_then()
        scf.YieldOp([])
    if build_else is not None:
        with ir.InsertionPoint(op.else_block):
            build_else()
            scf.YieldOp([])
    return op


def _for(lower, upper, body, inits=()):
    """scf.for over index [lower, upper) calling body(iv, *iter_args) -> yields."""
    loop = scf.ForOp(lower, upper, _idx(1), list(inits))
    with ir.InsertionPoint(loop.body):
        out = body(loop.induction_variable, *loop.inner_iter_args)
        scf.YieldOp(list(out or []))
    return loop


def _cmp(pred, a, b):
    return arith.cmpi(getattr(arith.CmpIPredicate, pred), a, b)


def _to_i32(v):
    return arith.index_cast(ir.IntegerType.get_signless(32), v)


def _to_i64(v):
    return arith.index_cast(ir.IntegerType.get_signless(64), v)


def _shared_ptr(address_i64):
    return llvm.inttoptr(_ptr(3), address_i64)


def _swizzled(row, chunk, byte):
    """The offset of byte ``byte`` of 16-byte chunk ``chunk`` of 128-byte row
    ``row`` of a tile in TMA's 128-byte swizzle (the layout wgmma reads and
    TMA loads and stores): row * 128 + (chunk ^ row % 8) * 16 + byte, as an
    index (each argument an index value or an int)."""
    row, chunk, byte = (_idx(x) if isinstance(x, int) else x for x in (row, chunk, byte))
    swizzled = arith.xori(chunk, arith.andi(row, _idx(7)))
    return arith.addi(arith.muli(row, _idx(SWIZZLE)),
                      arith.addi(arith.muli(swizzled, _idx(16)), byte))


# ----------------------------------------------------------------------------
# Operand loaders


def physical_order(type_):
    """The dims of memref type ``type_`` from outermost to innermost in
    memory. A row-major buffer keeps its order; a strided one (a graph input
    with transposed strides) is sorted by decreasing stride, its size-1
    dims (which never advance) first."""
    rank = ir.MemRefType(type_).rank
    if identity_layout(type_) or rank == 0:
        return list(range(rank))
    return irutil.memory_order(type_)


def physical_view(type_):
    """(shape, strides, offset) of ``type_`` with its dims in memory order
    (``physical_order``); a size-1 dim's stride becomes the buffer's span,
    a valid TMA stride that is never stepped."""
    shape, strides, offset = irutil.memref_geometry(type_)
    order = physical_order(type_)
    if order == list(range(len(shape))):
        return shape, strides, offset
    span = max([s * n for s, n in zip(strides, shape) if n != 1] + [1])
    return ([shape[d] for d in order],
            [strides[d] if shape[d] != 1 else span for d in order], offset)


@dataclass
class TmaOperand:
    """How one operand goes from global memory to a stage of the ring.

    ``dims`` maps "batch" / "mn" / "k" to the buffer's dims (gemm.Operand);
    ``mn_major`` is True for an operand stored with M or N contiguous (A
    stored K x M, B stored K x N): the box's rows are then 64 elements of M
    or N (128 bytes), a tile of BM or BN takes BM / 64 or BN / 64 boxes, and
    wgmma reads it transposed (16-bit types only).

    ``swizzled`` False loads the tile as it lies (rows of ``k`` elements, or
    of ``rows`` elements of M or N for an MN-major operand), without swizzle, in one
    box: the source tile of an operand with a prologue, which the consumers
    read, convert and write in the swizzled layout wgmma reads
    (``Builder._convert``).

    The descriptor, its box and the load coordinates are in memory order
    (``physical_order``): for a buffer whose strides are a permutation of
    row-major (a weight ``W[N, K]`` read as ``B[K, N]`` with strides
    ``[1, K]``) the descriptor describes a ``memref.reinterpret_cast`` of it
    to the dims as they lie in memory, so TMA sees a row-major tensor.
    """

    value: object
    dims: dict
    rows: int               # tile rows (or, MN-major, columns) of M or N
    mn_major: bool
    element: str
    descriptor: object = None   # host-side !llvm.ptr
    swizzled: bool = True
    k: int = 0                  # the tile's K (elements): the rows of an unswizzled box

    def __post_init__(self):
        t = ir.MemRefType(self.value.type)
        self.order = physical_order(t)
        # Buffer dims -> dims of the physical view.
        self.dims = {key: (None if d is None else self.order.index(d))
                     for key, d in self.dims.items()}

    @property
    def eb(self):
        return _element_bytes(self.element)

    @property
    def tile_bytes(self):
        """rows x BK elements as stored (swizzled: 128-byte rows of K, or BK
        rows of 128 bytes)."""
        return self.rows * self.k * self.eb

    @property
    def pieces(self):
        """TMA boxes per tile: an MN-major swizzled tile takes one per 128 bytes of M or N."""
        return self.rows // (SWIZZLE // self.eb) if self.mn_major and self.swizzled else 1

    def box(self, bk):
        """The TMA box in memory order (outermost first)."""
        rank = ir.MemRefType(self.value.type).rank
        box = [1] * rank
        box[self.dims["k"]] = bk
        box[self.dims["mn"]] = self.rows // self.pieces
        return box

    def make_descriptor(self, bk):
        """Host side: the TMA descriptor of the buffer, as an !llvm.ptr."""
        self.descriptor = tma_descriptor(self.value, self.box(bk), self.swizzled)
        return self.descriptor

    def load(self, dest_i64, barrier, batch, mn0, k0):
        """Issue the TMA load(s) of one stage; coordinates are i32 values."""
        rank = ir.MemRefType(self.value.type).rank
        pieces = self.pieces
        for piece in range(pieces):
            coords = [_i(0)] * rank
            if self.dims["batch"] is not None:
                coords[self.dims["batch"]] = batch
            coords[self.dims["k"]] = k0
            mn = mn0
            if piece:
                mn = arith.addi(mn0, _i(piece * (SWIZZLE // self.eb)))
            coords[self.dims["mn"]] = mn
            dest = dest_i64
            if piece:
                dest = arith.addi(dest_i64, _i(piece * self.tile_bytes // pieces, 64))
            dst = llvm.addrspacecast(_ptr(7), _shared_ptr(dest))
            nvvm.CpAsyncBulkTensorGlobalToSharedClusterOp(
                dst, self.descriptor, list(reversed(coords)), barrier, [])


def tma_descriptor(value, box, swizzled=True):
    """Host side: a TMA descriptor of buffer ``value`` with ``box`` (in memory
    order, outermost first; 128-byte swizzle or none), as the !llvm.ptr the
    kernel takes. A buffer whose dims do not lie in order is described
    through a ``memref.reinterpret_cast`` to its physical view."""
    t = ir.MemRefType(value.type)
    element = t.element_type
    source = value
    if physical_order(t) != list(range(t.rank)):
        shape, strides, offset = physical_view(t)
        view = ir.MemRefType.get(shape, element,
                                 layout=ir.StridedLayoutAttr.get(offset, strides))
        source = memref.reinterpret_cast(view, source, [], [], [], [offset], shape, strides)
    unranked = ir.UnrankedMemRefType.get(element, None)
    cast = memref.cast(unranked, source)
    desc_type = ir.Type.parse(
        f"!nvgpu.tensormap.descriptor<tensor = memref<{'x'.join(map(str, box))}x{element}, 3>, "
        f"swizzle = {'swizzle_128b' if swizzled else 'none'}, l2promo = l2promo_256b, "
        "oob = zero, interleave = none>")
    desc = nvgpu.TmaCreateDescriptorOp(desc_type, cast, [_idx(b) for b in box]).result
    return ir.Operation.create("builtin.unrealized_conversion_cast", results=[_ptr()],
                               operands=[desc]).results[0]


def _descriptor_constant(mn_major, rows_bytes_between_atoms):
    """The constant bits of a wgmma shared-memory matrix descriptor for a
    128-byte-swizzled tile: layout type (bits 62-63 = 1), stride byte offset
    (8 rows of 128 bytes = 1024), leading byte offset (between 64-element
    column blocks of an MN-major tile; unused K-major, 1 by convention)."""
    lbo = (rows_bytes_between_atoms >> 4) if mn_major else 1
    sbo = 1024 >> 4
    return (1 << 62) | (sbo << 32) | (lbo << 16)


def _matrix_descriptor(address_i64, constant):
    """A wgmma descriptor: the constant bits | (address & 0x3FFFF) >> 4."""
    addr = arith.shrui(arith.andi(address_i64, _i(0x3FFFF, 64)), _i(4, 64))
    return arith.ori(addr, _i(constant, 64))


# ----------------------------------------------------------------------------
# The kernel


class Builder:
    def __init__(self, fn, gemm, tile, ctas, c_transposed=False):
        self.fn = fn
        self.gemm = gemm
        self.tile = tile
        # ``gemm`` is Cᵀ = Bᵀ Aᵀ's (computes_transposed): the accumulator's
        # rows are C's columns.
        self.c_transposed = c_transposed
        self.element = multiplied(gemm)
        self.eb = _element_bytes(self.element)
        # An operand with a prologue is loaded as stored, unswizzled, and
        # converted by the consumers (_convert).
        self.sources = _sources(gemm)
        a_source, b_source = self.sources
        # An operand wgmma or TMA cannot read where it lies (transposed_operands)
        # is first copied transposed (M x K, N x K) by a launch of its own
        # (_transpose, at build); its TmaOperand is the copy's.
        self.transposed = transposed_operands(gemm)
        self.a = None if "A" in self.transposed else \
            TmaOperand(gemm.a.value, gemm.a.dims, tile.m, not gemm.a.k_major,
                       a_source or self.element, swizzled=a_source is None, k=tile.k)
        self.b = None if "B" in self.transposed else \
            TmaOperand(gemm.b.value, gemm.b.dims, tile.n, not gemm.b.k_major,
                       b_source or self.element, swizzled=b_source is None, k=tile.k)
        # A's fragments go from the stage to registers (registers_a).
        self.registers_a = self.a is not None and registers_a(gemm)
        self.steps = -(-gemm.k // tile.k)
        self.tiles_m = -(-gemm.m // tile.m)
        self.tiles_n = -(-gemm.n // tile.n)
        self.total_tiles = self.tiles_m * self.tiles_n * gemm.batch
        # Split-K: each split takes ``per_split`` consecutive K steps; no
        # split is left empty (7 steps over 4 splits of 2 run as 4, 8 steps
        # over 3 of 3 as 3).
        self.per_split = -(-self.steps // max(1, tile.splits)) if self.steps else 0
        self.splits = -(-self.steps // self.per_split) if self.per_split else 1
        self.units = self.total_tiles * self.splits
        self.ctas = min(self.units, ctas)
        # A's tile first in a stage, then B's: rows x BK elements as stored
        # (what the TmaOperand of a transposed copy will load too).
        self.a_bytes = tile.m * tile.k * _element_bytes(a_source or self.element)
        self.stage_bytes = self.a_bytes + \
            tile.n * tile.k * _element_bytes(b_source or self.element)
        self.ring_bytes = tile.stages * self.stage_bytes
        # Split-K in clusters: each cluster of ``cluster`` consecutive splits
        # sums its accumulators through distributed shared memory
        # (_cluster_sum) and leaves one partial; ``parts`` partials a tile.
        self.cluster = tile.cluster
        self._check_cluster()
        self.parts = self.splits // self.cluster
        self.partials = None     # split-K: the f32 [part, batch, M, N] workspace
        # Partials summed in this launch: an i32 arrival count per warp of a
        # tile ([tile, consumer, warp]), zero between calls.
        self.last_arrival = 1 < self.parts <= LAST_ARRIVAL_SPLITS
        self.arrivals = None
        self.converted = converted_bytes(tile, [x is not None for x in self.sources])
        self.acc_type = ir.Type.parse(
            "!llvm.struct<(" + ", ".join(["f32"] * (tile.n // 2)) + ")>")
        self.arguments = list(irutil.body(fn).arguments)
        self.pair = PairEpilogue(gemm, self.arguments, full_m=gemm.m % tile.m == 0,
                                 full_n=gemm.n % tile.n == 0, transposed=c_transposed)
        # The staged epilogue's shared slots, after the ring and the
        # converted tiles: ``slots`` a consumer warp (0: stored from
        # registers), and what the plan says of it.
        self.slots, self.by_tma, self.epilogue_note = self._staging()
        self.staging_offset = self.ring_bytes + self.converted
        self.staging_bytes = self.slots * (tile.m // STAGE_ROWS) * SLOT_BYTES
        self.out_descriptors = []

    def _staging(self):
        """(slots, by_tma, note): the shared slots each consumer warp stages
        its output tiles in, and whether TMA stores them. TMA: a set of one
        slot a stored output for each column slice of the tile that fits
        beside the ring (a warp writes the next slices while TMA reads the
        last). Outputs TMA cannot store (rows of an odd length): one set,
        which the warp reads back and stores along rows. 0 when the epilogue
        stores from registers, with why (None where split-K's own stores
        run: its partials and sums store from registers)."""
        stored = self.pair.stored
        if self.splits > 1 or not stored:
            return 0, False, None
        registers = "the epilogue stores from registers"
        if self.c_transposed:
            return 0, False, f"{registers}, element by element down C's columns"
        for buffer in stored:
            problem = stage_problem(buffer)
            if problem is not None:
                return 0, False, f"{registers} ({problem})"
        problems = [p for p in map(store_problem, stored) if p is not None]
        widths = {irutil.element_bytes(ir.MemRefType(b.type).element_type) for b in stored}
        if len(widths) > 1:
            return 0, False, (f"{registers} (outputs of "
                              f"{' and '.join(map(str, sorted(widths)))} bytes)")
        free = SMEM_LIMIT - smem_bytes(self.tile, self.element, self.sources)
        per_set = len(stored) * (self.tile.m // STAGE_ROWS) * SLOT_BYTES
        slices = self.tile.n * widths.pop() // SWIZZLE
        sets = min(1 if problems else slices, free // per_set)
        if sets == 0:
            return 0, False, (f"{registers} (its slots need {per_set} bytes of shared memory; "
                              f"the ring leaves {free})")
        if problems:
            return sets * len(stored), False, (
                "the output tiles are staged in shared memory and each warp stores its rows "
                f"(TMA cannot: {problems[0]})")
        return sets * len(stored), True, ("the output tiles are stored by TMA from shared "
                                          f"memory ({sets} of {slices} column slices in flight)")

    def notes(self):
        """What the plan says of this kernel: how each operand that wgmma
        cannot read from where it lies gets there, how the epilogue stores."""
        stored = {"A": "A stored K x M", "B": "B stored K x N"}
        out = [f"{stored[name]} copied transposed first ({why})"
               for name, why in self.transposed.items()]
        if self.c_transposed:
            out.append(f"computes C^T = B^T A^T in {self.tile.m}x{self.tile.n} tiles: B stored "
                       "K x N is its A, read into registers (wgmma reads tf32 from shared "
                       "memory only K-major)")
        elif self.registers_a:
            out.append("A stored K x M is read into registers (wgmma reads tf32 from shared "
                       "memory only K-major)")
        if self.epilogue_note:
            out.append(self.epilogue_note)
        return out

    def _check_cluster(self):
        """Raise NotSupported unless the splits can be summed in clusters of
        ``self.cluster`` blocks (each of which runs one work unit and lends
        its drained ring to the sum)."""
        c, tile = self.cluster, self.tile
        if c == 1:
            return
        slices = tile.consumers * WARPGROUP // 32
        if c not in (2, 4, 8) or c > slices:
            raise NotSupported(f"a cluster of {c} blocks summing K splits: expected 2, 4 or 8, "
                               f"at most the tile's {slices} warps of accumulators")
        if self.splits % c:
            raise NotSupported(f"K split {self.splits} ways (of {self.per_split} steps) in "
                               f"clusters of {c}: expected a multiple of {c}")
        if self.units > self.ctas:
            raise NotSupported(f"{self.units} split tiles for {self.ctas} blocks: a cluster "
                               "sum needs a block for each")
        if self.ring_bytes < tile.m * tile.n * 4:
            raise NotSupported(f"a cluster sum of {tile.m}x{tile.n} f32 accumulators in a "
                               f"ring of {self.ring_bytes} bytes: expected at least "
                               f"{tile.m * tile.n * 4}")

    # -- host side ----------------------------------------------------------

    def build(self):
        body = irutil.body(self.fn)
        old = [op.operation for op in body.operations]
        ret = old[-1]
        with ir.InsertionPoint(ret):
            if "A" in self.transposed:
                self.a = self._transpose(self.gemm.a, self.gemm.m, self.tile.m, self.sources[0])
            if "B" in self.transposed:
                self.b = self._transpose(self.gemm.b, self.gemm.n, self.tile.n, self.sources[1])
            self.a.make_descriptor(self.tile.k)
            self.b.make_descriptor(self.tile.k)
            if self.by_tma:
                box = [1] * (self.pair.rank - 2) + [STAGE_ROWS, SWIZZLE // self._out_bytes()]
                self.out_descriptors = [tma_descriptor(b, box) for b in self.pair.stored]
            if self.parts > 1:
                self.partials = memref.alloc(ir.MemRefType.get(
                    [self.parts, self.gemm.batch, self.gemm.m, self.gemm.n],
                    ir.F32Type.get()), [], [])
            if self.last_arrival:
                self.arrivals = memref.alloc(ir.MemRefType.get(
                    [self.total_tiles * self.tile.consumers * WARPGROUP // 32],
                    ir.IntegerType.get_signless(32)), [], [])
            shared = smem_bytes(self.tile, self.element, self.sources) + self.staging_bytes
            if self.cluster > 1:
                _, block = irutil.cluster_launch(self.ctas, self.tile.threads, self.cluster,
                                                 shared=shared)
            else:
                launch = gpu.LaunchOp((_idx(self.ctas), _idx(1), _idx(1)),
                                      (_idx(self.tile.threads), _idx(1), _idx(1)),
                                      dynamic_shared_memory_size=_i(shared))
                block = launch.regions[0].blocks[0]
            with ir.InsertionPoint(block):
                self._kernel()
                gpu.TerminatorOp()
            if self.parts > 1 and not self.last_arrival:
                self._reduce_splits()
        # The linalg ops and their buffers go; constants stay (the epilogue's
        # cloned bodies use them; canonicalize drops the rest).
        for op in reversed(old[:-1]):
            if op.name != "arith.constant":
                op.erase()

    def _transpose(self, operand, extent, rows, source):
        """A stored K x M or B stored K x N (``operand``, ``extent`` its M or
        N, ``rows`` its tile's, ``source`` its stored type where a prologue
        converts its tiles): copy it into a row-major [batch,] M x K or N x K
        buffer by a launch of its own (transpose.transposed_copy), and return
        the TmaOperand of the copy (K-major). It costs a read and a write of
        the operand ahead of the GEMM."""
        batched = operand.dims["batch"] is not None
        copy = transposed_copy(operand.value, operand.dims, extent, self.gemm.k,
                               self.gemm.batch)
        rank = 3 if batched else 2
        return TmaOperand(copy, {"batch": 0 if batched else None, "mn": rank - 2,
                                 "k": rank - 1}, rows, False, source or self.element,
                          swizzled=source is None, k=self.tile.k)

    # -- device side --------------------------------------------------------

    def _kernel(self):
        tile = self.tile
        tid = gpu.thread_id(gpu.Dimension.x)
        self.tid = tid
        warpgroup = arith.divui(tid, _idx(WARPGROUP))
        raw = gpu.dynamic_shared_memory(ir.MemRefType.get(
            [ir.ShapedType.get_dynamic_size()], ir.IntegerType.get_signless(8),
            memory_space=ir.Attribute.parse("#gpu.address_space<workgroup>")))
        base = _to_i64(memref.extract_aligned_pointer_as_index(raw))
        self.base = arith.andi(arith.addi(base, _i(ALIGN - 1, 64)), _i(-ALIGN, 64))

        def init():
            for s in range(tile.stages):
                nvvm.MBarrierInitOp(self._full(s), _i(1))
                nvvm.MBarrierInitOp(self._empty(s), _i(tile.consumers))
        _if(_cmp("eq", tid, _idx(0)), init)
        gpu.barrier()
        _if(_cmp("eq", warpgroup, _idx(0)), self._producer, self._consumer)

    def _tiles(self, body, inits):
        """The persistent loop over work units: block b takes units b, b +
        grid, ...; a unit is a tile and, with split-K, one of its K splits
        (the splits of a tile are consecutive units). ``body(batch, tile_m,
        tile_n, (first K step, end, split), *iter_args)`` -> new iter_args."""
        def step(u, *args):
            t = arith.divui(u, _idx(self.splits)) if self.splits > 1 else u
            per_batch = self.tiles_m * self.tiles_n
            batch = arith.divui(t, _idx(per_batch)) if self.gemm.batch > 1 else _idx(0)
            within = arith.remui(t, _idx(per_batch)) if self.gemm.batch > 1 else t
            tile_m, tile_n = self._grouped(within)
            if self.splits > 1:
                split = arith.remui(u, _idx(self.splits))
                first = arith.muli(split, _idx(self.per_split))
                end = arith.minui(arith.addi(first, _idx(self.per_split)), _idx(self.steps))
            else:
                first, end, split = _idx(0), _idx(self.steps), None
            return body(batch, tile_m, tile_n, (first, end, split), *args)
        loop = scf.ForOp(gpu.block_id(gpu.Dimension.x), _idx(self.units),
                         _idx(self.ctas), list(inits))
        with ir.InsertionPoint(loop.body):
            scf.YieldOp(list(step(loop.induction_variable, *loop.inner_iter_args) or []))
        return loop

    def _grouped(self, t):
        """(tile_m, tile_n) of tile ``t`` of a batch in grouped order:
        GROUP_M tiles of M run down a column of N tiles before moving on,
        so that the B columns a group reads stay in L2."""
        per_group = GROUP_M * self.tiles_n
        group = arith.divui(t, _idx(per_group))
        first_m = arith.muli(group, _idx(GROUP_M))
        within = arith.remui(t, _idx(per_group))
        # A group has GROUP_M rows of tiles but the last, which has tiles_m %
        # GROUP_M: both constants, so no division by a runtime value (a
        # subroutine call in SASS) lands in the consumers' code.
        tail = self.tiles_m % GROUP_M
        if tail == 0:
            return (arith.addi(first_m, arith.remui(within, _idx(GROUP_M))),
                    arith.divui(within, _idx(GROUP_M)))
        full = _cmp("ule", arith.addi(first_m, _idx(GROUP_M)), _idx(self.tiles_m))
        row = arith.select(full, arith.remui(within, _idx(GROUP_M)),
                           arith.remui(within, _idx(tail)))
        col = arith.select(full, arith.divui(within, _idx(GROUP_M)),
                           arith.divui(within, _idx(tail)))
        return arith.addi(first_m, row), col

    def _stage_address(self, s):
        """i64 shared address of stage ``s`` (an index value)."""
        return arith.addi(self.base, arith.muli(_to_i64(s), _i(self.stage_bytes, 64)))

    def _barrier(self, which, s):
        offset = self.staging_offset + self.staging_bytes + 8 * which * self.tile.stages
        if isinstance(s, int):
            address = arith.addi(self.base, _i(offset + 8 * s, 64))
        else:
            address = arith.addi(self.base, arith.addi(_i(offset, 64),
                                                       arith.muli(_to_i64(s), _i(8, 64))))
        return _shared_ptr(address)

    def _full(self, s):
        return self._barrier(0, s)

    def _empty(self, s):
        return self._barrier(1, s)

    def _slot(self, g):
        """(stage, parity of its fill) of global K step ``g``: steps run
        through the ring across tiles, each pass over it flips the parity."""
        stages = _idx(self.tile.stages)
        return (arith.remui(g, stages),
                _to_i32(arith.andi(arith.divui(g, stages), _idx(1))))

    def _producer(self):
        tile = self.tile
        nvvm.SetMaxRegisterOp(PRODUCER_REGISTERS, nvvm.SetMaxRegisterAction.decrease)

        def per_tile(batch, tile_m, tile_n, k_steps, g):
            m0 = _to_i32(arith.muli(tile_m, _idx(tile.m)))
            n0 = _to_i32(arith.muli(tile_n, _idx(tile.n)))
            b = _to_i32(batch)

            def step(kt, g):
                s, parity = self._slot(g)
                # A fresh barrier counts as completed in the phase before
                # its first: the first pass over the ring does not wait.
                irutil.mbarrier_wait(self._empty(s), arith.xori(parity, _i(1)))
                full = self._full(s)
                nvvm.MBarrierArriveExpectTxOp(None, full, _i(self.stage_bytes))
                k0 = _to_i32(arith.muli(kt, _idx(tile.k)))
                stage = self._stage_address(s)
                self.a.load(stage, full, b, m0, k0)
                self.b.load(arith.addi(stage, _i(self.a_bytes, 64)), full, b, n0, k0)
                return [arith.addi(g, _idx(1))]
            return _for(k_steps[0], k_steps[1], step, [g]).results

        _if(_cmp("eq", self.tid, _idx(0)), lambda: self._tiles(per_tile, [_idx(0)]))
        if self.cluster > 1:
            # The producer's threads meet the cluster at the sum's two
            # barriers too (each block runs one unit: once each).
            nvvm.cluster_arrive_relaxed()
            nvvm.cluster_wait()
            nvvm.cluster_arrive()
            nvvm.cluster_wait()

    def _consumer(self):
        tile = self.tile
        nvvm.SetMaxRegisterOp(CONSUMER_REGISTERS, nvvm.SetMaxRegisterAction.increase)
        local = arith.remui(self.tid, _idx(WARPGROUP))
        consumer = arith.subi(arith.divui(self.tid, _idx(WARPGROUP)), _idx(1))
        leader = _cmp("eq", local, _idx(0))
        a_const = _descriptor_constant(self.a.mn_major, tile.k * SWIZZLE)
        b_const = _descriptor_constant(self.b.mn_major, tile.k * SWIZZLE)
        # A consumer's 64 rows of A: 64 rows of K (K-major), or the tile's
        # box of 64 columns of M (MN-major).
        a_part = tile.k * SWIZZLE if self.a.mn_major else 64 * SWIZZLE
        a_row_offset = arith.muli(_to_i64(consumer), _i(a_part, 64))
        instr_k = WGMMA_K_BYTES // self.eb
        shape = ir.Attribute.parse(f"#nvvm.shape<m = 64, n = {tile.n}, k = {instr_k}>")
        wtype = ir.Attribute.parse(f"#nvvm.wgmma_type<{self.element}>")
        attrs = {
            "shape": shape, "typeA": wtype, "typeB": wtype,
            "typeD": ir.Attribute.parse("#nvvm.wgmma_type<f32>"),
            "scaleD": ir.Attribute.parse("#nvvm.wgmma_scale_out<one>"),
            "scaleA": ir.Attribute.parse("#nvvm.wgmma_scale_in<one>"),
            "scaleB": ir.Attribute.parse("#nvvm.wgmma_scale_in<one>"),
            "layoutA": ir.Attribute.parse(
                "#nvvm.mma_layout<col>" if self.a.mn_major else "#nvvm.mma_layout<row>"),
            "layoutB": ir.Attribute.parse(
                "#nvvm.mma_layout<row>" if self.b.mn_major else "#nvvm.mma_layout<col>"),
            "satfinite": ir.Attribute.parse("#nvvm.mma_int_overflow<wrapped>"),
        }

        def release(g):
            """Give the stage of step ``g`` back to the producer (one arrival per
            consumer warpgroup)."""
            s = arith.remui(g, _idx(tile.stages))
            _if(leader, lambda: nvvm.MBarrierArriveOp(None, self._empty(s)))

        fragments = self._fragment_offsets(consumer, local) if self.registers_a else None

        def step(kt, acc, g, first=None):
            s, parity = self._slot(g)
            irutil.mbarrier_wait(self._full(s), parity)
            stage = self._stage_address(s)
            a_tile = arith.addi(stage, a_row_offset)
            b_tile = arith.addi(stage, _i(self.a_bytes, 64))
            if any(self.sources):
                a_tile, b_tile = self._prologues(stage, a_tile, b_tile, consumer, local, kt, g)
            if not self.registers_a:
                desc_a = _matrix_descriptor(a_tile, a_const)
            desc_b = _matrix_descriptor(b_tile, b_const)
            if self.registers_a:
                a_values = self._fragments(stage, fragments)
            nvvm.WgmmaFenceAlignedOp()
            for kk in range(tile.k // instr_k):
                # Along a 128-byte row of K; an MN-major operand steps
                # instr_k rows of K (128 bytes of M or N each).
                step_a, step_b = ((instr_k * SWIZZLE * kk if operand.mn_major
                                   else WGMMA_K_BYTES * kk) >> 4
                                  for operand in (self.a, self.b))
                if not self.registers_a:
                    da = arith.addi(desc_a, _i(step_a, 64)) if step_a else desc_a
                db = arith.addi(desc_b, _i(step_b, 64)) if step_b else desc_b
                if self.registers_a:
                    acc = self._wgmma_registers(acc, a_values[kk], db)
                    continue
                acc = ir.Operation.create("nvvm.wgmma.mma_async", results=[self.acc_type],
                                          operands=[acc, da, db], attributes=attrs).results[0]
            nvvm.WgmmaGroupSyncAlignedOp()
            # One group stays in flight: the previous step's wgmmas are done,
            # so its stage can be refilled.
            nvvm.WgmmaWaitGroupSyncOp(1)
            _if(_cmp("ugt", kt, first), lambda: release(arith.subi(g, _idx(1))))
            return [acc, arith.addi(g, _idx(1))]

        def two_steps(first, end):
            """Steps kt and kt + 1 (if before ``end``) an iteration: with A
            from registers, the fragments of a step still in flight must stay
            untouched, so consecutive steps load into distinct registers."""
            def body(kt, acc, g):
                acc, g = step(kt, acc, g, first)
                after = arith.addi(kt, _idx(1))
                op = scf.IfOp(_cmp("ult", after, end), [self.acc_type, ir.IndexType.get()],
                              has_else=True)
                with ir.InsertionPoint(op.then_block):
                    scf.YieldOp(step(after, acc, g, first))
                with ir.InsertionPoint(op.else_block):
                    scf.YieldOp([acc, g])
                return list(op.results)
            return body

        def per_tile(batch, tile_m, tile_n, k_steps, g):
            zero = llvm.mlir_zero(self.acc_type)
            if self.registers_a:
                loop = scf.ForOp(k_steps[0], k_steps[1], _idx(2), [zero, g])
                with ir.InsertionPoint(loop.body):
                    scf.YieldOp(two_steps(k_steps[0], k_steps[1])(
                        loop.induction_variable, *loop.inner_iter_args))
            else:
                loop = _for(k_steps[0], k_steps[1],
                            lambda kt, acc, g: step(kt, acc, g, k_steps[0]), [zero, g])
            acc, g = loop.results
            # The epilogue's inputs (bias, residual) are read while the last
            # K step's wgmmas finish: their latency hides behind them. A
            # staged epilogue with an input that varies along the rows reads
            # its first column slice's here and each next slice's while it
            # works on one (a whole tile of such inputs beside the
            # accumulators would not fit a consumer's registers).
            first = range(self._slice_groups()) \
                if self.slots and self._inputs_along_rows() else None
            inputs = None if self.splits > 1 else \
                self._epilogue_inputs(consumer, local, batch, tile_m, tile_n, first)
            nvvm.WgmmaWaitGroupSyncOp(0)
            if self.steps:
                release(arith.subi(g, _idx(1)))
            where = (consumer, local, batch, tile_m, tile_n)
            if self.cluster > 1:
                self._cluster_sum(acc, where, k_steps[2])
            elif self.splits > 1:
                self._finish_part(acc, where, k_steps[2])
            else:
                self._epilogue(acc, *where, inputs)
            return [g]

        self._tiles(per_tile, [_idx(0)])
        if self.by_tma:
            # The last TMA stores are done (written, not just read) before
            # the block's shared memory goes.
            _if(_cmp("eq", arith.remui(local, _idx(32)), _idx(0)),
                lambda: nvvm.CpAsyncBulkWaitGroupOp(0))

    # -- A from registers ----------------------------------------------------------

    def _fragment_offsets(self, consumer, local):
        """Byte offsets in a stage of where this thread's A fragment of the
        first k = 8 slice lies (registers_a; the tile MN-major as TMA lays
        it: boxes of 32 columns of M, each BK rows of K by 128 bytes,
        swizzled), keyed (h, e) for its elements at rows r + 8 h and columns
        q + 4 e of the consumer's 64 x 8 slice of A, with r = 16 warp + lane
        / 4 and q = lane % 4 (wgmma's tf32 A fragment: a0 = (0, 0), a1 = (1,
        0), a2 = (0, 1), a3 = (1, 1)). Slice kk lies kk * 8 rows of K on. A
        warp's loads of one register meet two-way bank conflicts: its lanes'
        32 words lie in 16 banks."""
        warp = arith.divui(local, _idx(32))
        lane = arith.remui(local, _idx(32))
        g, q = arith.divui(lane, _idx(4)), arith.remui(lane, _idx(4))
        box = self.tile.k * SWIZZLE             # bytes of a box of 32 columns of M
        # The consumer's 64 rows of M are boxes 2 c and 2 c + 1; warp w's 16
        # rows are the half w % 2 of box 2 c + w / 2.
        piece = arith.addi(arith.muli(consumer, _idx(2)), arith.divui(warp, _idx(2)))
        chunk0 = arith.addi(arith.muli(arith.remui(warp, _idx(2)), _idx(4)),
                            arith.divui(g, _idx(4)))
        byte = arith.muli(arith.remui(g, _idx(4)), _idx(4))
        offsets = {}
        for h in range(2):
            for e in range(2):
                k = arith.addi(q, _idx(4 * e)) if e else q
                chunk = arith.addi(chunk0, _idx(2 * h)) if h else chunk0
                at = arith.addi(arith.muli(piece, _idx(box)), _swizzled(k, chunk, byte))
                offsets[(h, e)] = _to_i64(at)
        return offsets

    def _fragments(self, stage, offsets):
        """This thread's A fragments of each k = 8 slice of the stage at
        ``stage`` (A's tile first in it): [a0, a1, a2, a3] as i32 bits."""
        i32 = ir.IntegerType.get_signless(32)
        out = []
        for kk in range(self.tile.k // (WGMMA_K_BYTES // self.eb)):
            base = arith.addi(stage, _i(kk * 8 * SWIZZLE, 64)) if kk else stage
            out.append([llvm.load(i32, _shared_ptr(arith.addi(base, offsets[key])), alignment=4)
                        for key in ((0, 0), (1, 0), (0, 1), (1, 1))])
        return out

    def _wgmma_registers(self, acc, fragment, desc_b):
        """One tf32 wgmma m64nBNk8 with A from registers (``fragment``, four
        i32) and B from shared memory (``desc_b``), accumulating into
        ``acc``. Inline PTX: nvvm.wgmma.mma_async takes A only as a
        descriptor."""
        count = self.tile.n // 2
        f32 = ir.F32Type.get()
        values = [llvm.extractvalue(f32, acc, ir.DenseI64ArrayAttr.get([i]))
                  for i in range(count)]
        d = ", ".join(f"${i}" for i in range(count))
        a = ", ".join(f"${2 * count + i}" for i in range(4))
        asm = ("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
               f"wgmma.mma_async.sync.aligned.m64n{self.tile.n}k8.f32.tf32.tf32 "
               f"{{{d}}}, {{{a}}}, ${2 * count + 4}, p, 1, 1;\n}}\n")
        constraints = ",".join(["=f"] * count + [str(i) for i in range(count)]
                               + ["r"] * 4 + ["l"])
        return llvm.inline_asm(self.acc_type, values + fragment + [desc_b], asm, constraints,
                               has_side_effects=True)

    # -- operand prologues -------------------------------------------------------

    def _converted(self, operand, slot, consumer=None):
        """i64 shared address of converted tile ``slot`` of A (of ``consumer``)
        or of B, after the ring."""
        start = self.ring_bytes
        if operand == "a":
            per = 64 * SWIZZLE
            index = arith.addi(arith.muli(consumer, _idx(CONVERTED_A)), slot)
        else:
            start += converted_bytes(self.tile, (self.sources[0] is not None, False))
            per = self.tile.n * SWIZZLE
            index = slot
        offset = arith.addi(_i(start, 64), arith.muli(_to_i64(index), _i(per, 64)))
        return arith.addi(self.base, offset)

    def _prologues(self, stage, a_tile, b_tile, consumer, local, kt, g):
        """Convert this step's tiles of the operands with a prologue; returns
        the addresses wgmma reads A (this consumer's 64 rows) and B from.
        Each thread fences its shared-memory writes for the async proxy
        (wgmma), then the threads that wrote a tile meet at a named barrier:
        a consumer's warpgroup for A alone, both consumers for B."""
        k0 = arith.muli(kt, _idx(self.tile.k))
        if self.sources[0] is not None:
            # The consumer's 64 rows of A as stored: 64 rows of K elements,
            # or (MN-major) 64 columns of each row of K.
            part = 64 * self.a.eb * (1 if self.a.mn_major else self.tile.k)
            src = arith.addi(stage, arith.muli(_to_i64(consumer), _i(part, 64)))
            a_tile = self._converted("a", arith.remui(g, _idx(CONVERTED_A)), consumer)
            self._convert(self.a, self.gemm.a.prologue, src, a_tile, 64, local, WARPGROUP, k0)
        if self.sources[1] is not None:
            threads = WARPGROUP * self.tile.consumers
            thread = arith.addi(arith.muli(consumer, _idx(WARPGROUP)), local)
            b_tile = self._converted("b", arith.remui(g, _idx(CONVERTED_B)))
            self._convert(self.b, self.gemm.b.prologue, arith.addi(stage, _i(self.a_bytes, 64)),
                          b_tile, self.tile.n, thread, threads, k0)
        llvm.inline_asm(None, [], "fence.proxy.async.shared::cta;", "", has_side_effects=True)
        if self.sources[1] is not None:
            ident, count = _i(1), _i(WARPGROUP * self.tile.consumers)
        else:
            ident, count = _to_i32(arith.addi(consumer, _idx(1))), _i(WARPGROUP)
        llvm.inline_asm(None, [ident, count], "bar.sync $0, $1;", "r,r",
                        has_side_effects=True)
        return a_tile, b_tile

    def _convert(self, operand, prologue, src, dst, lines, thread, threads, k0):
        """Threads 0 .. ``threads`` - 1 (``thread``: this one) convert ``lines``
        128-byte rows of a tile into the swizzled layout wgmma reads (the 16-
        byte chunk c of line L lies at L * 128 + (c ^ L % 8) * 16, as TMA would
        have written it): each thread reads 16 bytes of the unswizzled source
        tile ``src`` (``operand``'s stored elements: 8 of 16 bits, 4 of f32, so
        that 8 threads read 128 contiguous bytes), runs ``prologue`` on them
        and stores them at ``dst``. A K-major line is a row of the tile's K;
        an MN-major operand's line L is K row L % BK of the M or N columns
        64 (L / BK) .. + 63 (A's 64 lines a consumer: its 64 columns of M, BK
        being 64 for the 16-bit types a prologue makes). Elements past K are zeroed when K is ragged (the prologue of
        TMA's zero fill need not be zero)."""
        bk, es = self.tile.k, operand.eb
        per = 16 // es                     # elements a thread converts at once
        parts = SWIZZLE // (2 * per)       # of a 128-byte line of the multiplied type
        stored = ir.MemRefType(operand.value.type).element_type
        element = ir.BF16Type.get() if self.element == "bf16" else ir.F16Type.get()
        src_type = ir.VectorType.get([per], stored)
        ragged = self.gemm.k % bk != 0
        zero = arith.constant(element, 0.0) if ragged else None
        k_total = _idx(self.gemm.k)
        for j in range(lines * parts // threads):
            item = arith.addi(thread, _idx(j * threads))
            line = arith.divui(item, _idx(parts))
            first = arith.muli(arith.remui(item, _idx(parts)), _idx(per))  # along the line
            if operand.mn_major:
                row, piece = arith.remui(line, _idx(bk)), arith.divui(line, _idx(bk))
                at = arith.addi(arith.muli(row, _idx(operand.rows)),
                                arith.addi(arith.muli(piece, _idx(64)), first))
                ks = [arith.addi(k0, row)] * per
            else:
                at = arith.addi(arith.muli(line, _idx(bk)), first)
                k_first = arith.addi(k0, first)
                ks = [arith.addi(k_first, _idx(e)) if e else k_first for e in range(per)]
            source = arith.addi(src, arith.muli(_to_i64(at), _i(es, 64)))
            vec = llvm.load(src_type, _shared_ptr(source), alignment=16)
            values = []
            for e in range(per):
                value = prologue.apply(vector.extract(vec, [], [e]))
                if ragged:
                    value = arith.select(_cmp("ult", ks[e], k_total), value, zero)
                values.append(value)
            # Chunk first / 8 of the line; f32's half chunk within it.
            offset = _swizzled(line, arith.shrui(first, _idx(3)),
                               arith.muli(arith.andi(first, _idx(7)), _idx(2)))
            target = arith.addi(dst, _to_i64(offset))
            llvm.store(vector.from_elements(ir.VectorType.get([per], element), values),
                       _shared_ptr(target), alignment=2 * per)

    # -- epilogue -------------------------------------------------------------

    def _origin(self, consumer, local, tile_m, tile_n):
        """(row, col) of a consumer thread's first accumulator pair in C."""
        tile = self.tile
        warp = arith.divui(local, _idx(32))
        lane = arith.remui(local, _idx(32))
        row0 = arith.addi(arith.muli(tile_m, _idx(tile.m)),
                          arith.addi(arith.muli(consumer, _idx(64)),
                                     arith.addi(arith.muli(warp, _idx(16)),
                                                arith.divui(lane, _idx(4)))))
        col0 = arith.addi(arith.muli(tile_n, _idx(tile.n)),
                          arith.muli(arith.remui(lane, _idx(4)), _idx(2)))
        return row0, col0

    def _finish_part(self, acc, where, part):
        """Split-K: store partial ``part`` of the tile and, when this launch
        sums the partials, sum them if it is the last; a lone part (a cluster
        that took every split) runs the epilogue at once."""
        if self.parts == 1:
            self._epilogue(acc, *where, self._epilogue_inputs(*where))
            return
        self._store_partial(acc, *where, part)
        if self.last_arrival:
            self._sum_if_last(acc, *where)

    def _cluster_sum(self, acc, where, split):
        """Split-K in clusters: the ``cluster`` blocks of consecutive splits
        (cluster rank = split % cluster) sum their accumulators through
        distributed shared memory; then the block that owns each warp's
        slice finishes it as one partial (_finish_part).

        Warp w of the 8 (4) consumer warps holds slice w of the tile (its 16
        rows); rank w % cluster owns it. Once every block of the cluster is
        past its last K step (a cluster barrier: the rings are drained),
        every warp stores its slice's BN / 2 accumulator values, 16 bytes a
        lane (lane-interleaved: the layout does not matter, the owner reads
        it back the same way), into slot (w / cluster, sender rank) of the
        owner's ring (mapa to the owner's rank, then st.shared::cluster).
        After a second barrier, whose arrival releases those stores to the
        cluster, the owning warps add the slots in rank order: the sum does
        not depend on timing. The first barrier orders execution only (the
        rings' last reads are done): its arrival is relaxed."""
        consumer, local = where[0], where[1]
        c = self.cluster
        rank = arith.remui(split, _idx(c))
        slice_ = arith.addi(arith.muli(consumer, _idx(WARPGROUP // 32)),
                            arith.divui(local, _idx(32)))
        owner = arith.remui(slice_, _idx(c))
        lane = _to_i64(arith.remui(local, _idx(32)))
        vectors = self.tile.n // 8           # 4 values a vector, BN / 2 values a thread
        fragment = vectors * 32 * 16         # bytes of a warp's slice
        f32 = ir.F32Type.get()
        v4 = ir.VectorType.get([4], f32)
        first_slot = _to_i64(arith.muli(arith.divui(slice_, _idx(c)), _idx(c)))

        def slot(sender, v):
            """shared::cta address of vector ``v`` of this lane in the slot of
            ``sender`` (an i64 rank) for this warp's slice."""
            index = arith.addi(first_slot, sender)
            offset = arith.addi(arith.muli(index, _i(fragment, 64)),
                                arith.addi(_i(v * 512, 64), arith.muli(lane, _i(16, 64))))
            return _shared_ptr(arith.addi(self.base, offset))

        nvvm.cluster_arrive_relaxed(aligned=True)
        nvvm.cluster_wait(aligned=True)
        to = _to_i32(owner)
        for v in range(vectors):
            values = [llvm.extractvalue(f32, acc, ir.DenseI64ArrayAttr.get([4 * v + e]))
                      for e in range(4)]
            remote = nvvm.mapa(_ptr(7), slot(_to_i64(rank), v), to)
            llvm.store(vector.from_elements(v4, values), remote, alignment=16)
        nvvm.cluster_arrive(aligned=True)
        nvvm.cluster_wait(aligned=True)

        def own():
            summed = acc
            for v in range(vectors):
                total = None
                for q in range(c):
                    part = llvm.load(v4, slot(_i(q, 64), v), alignment=16)
                    total = part if total is None else arith.addf(total, part)
                for e in range(4):
                    summed = llvm.insertvalue(summed, vector.extract(total, [], [e]),
                                              ir.DenseI64ArrayAttr.get([4 * v + e]))
            self._finish_part(summed, where, arith.divui(split, _idx(c)))
        _if(_cmp("eq", owner, rank), own)

    def _store_partial(self, acc, consumer, local, batch, tile_m, tile_n, split):
        """Split-K: this split's accumulator, unscaled f32, into its slice of
        the partials workspace (rows and columns past M and N are dropped)."""
        gemm = self.gemm
        row0, col0 = self._origin(consumer, local, tile_m, tile_n)
        f32 = ir.F32Type.get()
        pairs = gemm.n % 2 == 0
        for h in range(2):
            row = arith.addi(row0, _idx(8 * h)) if h else row0
            row_ok = _cmp("ult", row, _idx(gemm.m))
            for j in range(self.tile.n // 8):
                col = arith.addi(col0, _idx(8 * j)) if j else col0
                v = [llvm.extractvalue(f32, acc, ir.DenseI64ArrayAttr.get([4 * j + 2 * h + e]))
                     for e in range(2)]
                where = [split, batch, row]
                if pairs:
                    ok = arith.andi(row_ok, _cmp("ult", col, _idx(gemm.n)))
                    vec = vector.from_elements(ir.VectorType.get([2], f32), v)
                    _if(ok, lambda vec=vec, col=col:
                        vector.store(vec, self.partials, where + [col], alignment=8))
                    continue
                for e in range(2):
                    c = arith.addi(col, _idx(e)) if e else col
                    ok = arith.andi(row_ok, _cmp("ult", c, _idx(gemm.n)))
                    _if(ok, lambda c=c, e=e: memref.store(v[e], self.partials, where + [c]))

    def _sum_if_last(self, acc, consumer, local, batch, tile_m, tile_n):
        """Split-K in one launch: each warp counts its tile's arrivals; the
        last of the partials' warps to arrive sums every partial at its
        accumulator positions and runs the epilogue.

        Every lane's partial stores are fenced (membar.gl) and the warp
        synchronized before lane 0 adds 1 to the warp's counter; lane 0 of
        the warp that takes it to ``parts`` fences again (its later loads
        see every partial's stores), puts the counter back to zero for the
        next call, and the warp reads the partials in order: the sum, as the
        second launch's, does not depend on which split came last. The
        warps of the earlier partials go on to their next tile at once; no
        block waits for another. The last warp reads (parts - 1) partials
        more than it wrote, so many would leave a few SMs reading long
        after the others are done: beyond LAST_ARRIVAL_SPLITS the sum is a
        second launch."""
        i32 = ir.IntegerType.get_signless(32)
        warp = arith.divui(local, _idx(32))
        lane = arith.remui(local, _idx(32))
        tile_index = arith.addi(
            arith.muli(arith.addi(arith.muli(batch, _idx(self.tiles_m)), tile_m),
                       _idx(self.tiles_n)), tile_n)
        counter = arith.addi(arith.muli(arith.addi(
            arith.muli(tile_index, _idx(self.tile.consumers)), consumer), _idx(WARPGROUP // 32)),
            warp)
        first_lane = _cmp("eq", lane, _idx(0))
        nvvm.MembarOp(nvvm.MemScopeKind.GPU)
        nvvm.SyncWarpOp(_i(-1))
        count = scf.IfOp(first_lane, [i32], has_else=True)
        with ir.InsertionPoint(count.then_block):
            before = memref.atomic_rmw(arith.AtomicRMWKind.addi, _i(1), self.arrivals, [counter])
            nvvm.MembarOp(nvvm.MemScopeKind.GPU)
            scf.YieldOp([before])
        with ir.InsertionPoint(count.else_block):
            scf.YieldOp([_i(0)])
        nvvm.SyncWarpOp(_i(-1))
        before = gpu.ShuffleOp(count.results[0], _i(0), _i(32), gpu.ShuffleMode.IDX).results[0]

        def last():
            _if(first_lane, lambda: memref.store(_i(0), self.arrivals, [counter]))
            row0, col0 = self._origin(consumer, local, tile_m, tile_n)
            summed = acc
            for h in range(2):
                _, _, row_safe = self._rows(row0, h)
                for j in range(self.tile.n // 8):
                    col = arith.addi(col0, _idx(8 * j)) if j else col0
                    sums = self._in_split_order(
                        lambda s, col=col, row_safe=row_safe:
                        self._load_partial(s, batch, row_safe, col))
                    for e in range(2):
                        summed = llvm.insertvalue(summed, sums[e],
                                                  ir.DenseI64ArrayAttr.get([4 * j + 2 * h + e]))
            inputs = self._epilogue_inputs(consumer, local, batch, tile_m, tile_n)
            self._epilogue(summed, consumer, local, batch, tile_m, tile_n, inputs)
        _if(_cmp("eq", before, _i(self.parts - 1)), last)

    def _in_split_order(self, load):
        """The sums over the partials of ``load(part)`` (a list of f32 values),
        added in order: both ways of summing split-K (_sum_if_last,
        _reduce_splits) give the same bits, whatever split finished last."""
        sums = load(0)
        for s in range(1, self.parts):
            sums = [arith.addf(a, b) for a, b in zip(sums, load(s))]
        return sums

    def _load_partial(self, split, batch, row, col, count=2):
        """Split ``split``'s partials at columns col .. col + count - 1 of
        ``row``, read at clamped positions (a column past N reads a valid
        one, whose value the epilogue does not store): one aligned pair when
        N is even (count 2), else scalars."""
        gemm = self.gemm
        f32 = ir.F32Type.get()
        where = [_idx(split), batch, row]
        if gemm.n % 2 == 0:
            safe = col if gemm.n % self.tile.n == 0 else arith.minui(col, _idx(gemm.n - 2))
            vec = vector.load(ir.VectorType.get([2], f32), self.partials, where + [safe],
                              alignment=8)
            return [vector.extract(vec, [], [e]) for e in range(2)]
        out = []
        for e in range(count):
            c = arith.addi(col, _idx(e)) if e else col
            out.append(memref.load(self.partials, where + [arith.minui(c, _idx(gemm.n - 1))]))
        return out

    def _reduce_splits(self):
        """Split-K, second launch: sum each output's partials in a fixed
        order (the result does not depend on timing), then
        run the epilogue on it. One thread per pair of columns (per column
        when N is odd), 256 threads per block."""
        gemm = self.gemm
        width = 2 if gemm.n % 2 == 0 else 1
        per_row = gemm.n // width
        items = gemm.batch * gemm.m * per_row
        threads = 256
        blocks = -(-items // threads)
        launch = gpu.LaunchOp((_idx(blocks), _idx(1), _idx(1)),
                              (_idx(threads), _idx(1), _idx(1)))
        block = launch.regions[0].blocks[0]
        with ir.InsertionPoint(block):
            end = gpu.TerminatorOp()
        with ir.InsertionPoint(end):
            item = arith.addi(arith.muli(gpu.block_id(gpu.Dimension.x), _idx(threads)),
                              gpu.thread_id(gpu.Dimension.x))

            def body():
                col = arith.muli(arith.remui(item, _idx(per_row)), _idx(width))
                rows = arith.divui(item, _idx(per_row))
                row = arith.remui(rows, _idx(gemm.m))
                batch = arith.divui(rows, _idx(gemm.m))
                sums = self._in_split_order(
                    lambda s: self._load_partial(s, batch, row, col, width))
                envs = []
                for e, v in enumerate(sums):
                    c = arith.addi(col, _idx(e)) if e else col
                    envs.append(self.pair.evaluate(v, self.pair.point(batch, row, c)))
                self.pair.store(envs, batch, row, col, full_n=True)
            _if(_cmp("ult", item, _idx(items)), body)

    def _rows(self, row0, h):
        """(row, row_ok or None, a row index safe to read) of a thread's half
        ``h`` (rows row0 and row0 + 8)."""
        row = arith.addi(row0, _idx(8 * h)) if h else row0
        return (row, *self.pair.row_guard(row))

    def _epilogue_inputs(self, consumer, local, batch, tile_m, tile_n, groups=None):
        """{(h, j): {buffer: pair}} of the epilogue inputs a thread reads as
        aligned pairs (PairEpilogue.load_pairs) at its accumulator positions,
        for the 8-column groups j in ``groups`` (a range starting at a
        multiple of 4; None: every group of the tile), or None when N is odd
        or the kernel computes Cᵀ (then evaluate reads scalars where they are
        used)."""
        tile, gemm = self.tile, self.gemm
        if not self.pair.pairs:
            return None
        groups = range(tile.n // 8) if groups is None else groups
        row0, col0 = self._origin(consumer, local, tile_m, tile_n)
        along_rows = {}   # (buffer, j) -> pair: inputs the same in every row (a bias)
        quads = self._quad_inputs()
        out = {}
        for h in range(2):
            _, _, row_safe = self._rows(row0, h)
            for j in groups:
                col = arith.addi(col0, _idx(8 * j)) if j else col0
                pair_safe = col if gemm.n % tile.n == 0 else arith.minui(col, _idx(gemm.n - 2))
                out[(h, j)] = self.pair.load_pairs(self.pair.point(batch, row_safe, pair_safe),
                                                   along_rows, j, [b for b, _ in quads])
            if quads:
                self._load_quads(quads, out, h, batch, row_safe, tile_n, local,
                                 range(groups.start // 4, -(-groups.stop // 4)))
        return out

    def _inputs_along_rows(self):
        """Whether an epilogue input read as pairs varies along C's rows (a
        residual: a register for every two of the accumulator's)."""
        return self._row_input_registers(1) > 0

    def _row_input_registers(self, groups):
        """The registers a thread's values of the inputs that vary along C's
        rows take over ``groups`` 8-column groups (both halves)."""
        return sum(groups * 2 * 2 * irutil.element_bytes(ir.MemRefType(b.type).element_type)
                   for b, exprs in self.pair.along_columns
                   if self.pair.rank - 2 in exprs) // 4

    def _quad_inputs(self):
        """[(buffer, exprs)] of the epilogue inputs read 16 bytes a thread
        (_load_quads): 2-byte inputs that vary along C's rows and columns (a
        residual), with rows of a multiple of 8 elements; a row-constant
        input (a bias) is read once per thread anyway."""
        if self.c_transposed:
            return []
        rank = self.pair.rank
        return [(b, e) for b, e in self.pair.along_columns
                if rank - 2 in e and ir.MemRefType(b.type).shape[-1] % 8 == 0
                and irutil.element_bytes(ir.MemRefType(b.type).element_type) == 2]

    def _load_quads(self, quads, out, h, batch, row_safe, tile_n, local, spans):
        """Read ``quads``' values at a thread's accumulator pairs of half
        ``h`` into ``out[(h, j)]`` (j in 4 g .. 4 g + 3 for g in ``spans``,
        the tile's spans of 32 columns): per 32 columns, thread q of a quad loads
        the 8 columns 8 q .. 8 q + 7 of its row with one 16-byte load, and
        quad_transpose hands each thread its pairs (columns 8 i + 2 q, i =
        0..3): a warp reads 8 rows x 64 contiguous bytes an instruction
        instead of 8 rows x 4 bytes. The inverse of PairEpilogue.store_quad."""
        tile, gemm = self.tile, self.gemm
        i32 = ir.IntegerType.get_signless(32)
        lane = arith.remui(local, _idx(4))
        for g in spans:
            first = arith.addi(arith.muli(tile_n, _idx(tile.n)),
                               arith.addi(_idx(32 * g), arith.muli(lane, _idx(8))))
            # A group past N reads the row's last 8 columns (N is a multiple
            # of 8), which the epilogue does not store.
            safe = first if gemm.n % tile.n == 0 else arith.minui(first, _idx(gemm.n - 8))
            point = self.pair.point(batch, row_safe, safe)
            for buffer, exprs in quads:
                element = ir.MemRefType(buffer.type).element_type
                vec = vector.load(ir.VectorType.get([8], element), buffer,
                                  [point[d] if d is not None else _idx(0) for d in exprs],
                                  alignment=16)
                words = vector.bitcast(ir.VectorType.get([4], i32), vec)
                words = quad_transpose([vector.extract(words, [], [i]) for i in range(4)], lane)
                for i in range(4):
                    pair = vector.bitcast(ir.VectorType.get([2], element),
                                          vector.from_elements(ir.VectorType.get([1], i32),
                                                               [words[i]]))
                    out[(h, 4 * g + i)][buffer] = [vector.extract(pair, [], [e])
                                                   for e in range(2)]

    def _pair(self, acc, batch, row_safe, col, h, j, loaded):
        """evaluate's results ({buffer: value}) at the thread's accumulator
        pair (``h``, ``j``): columns ``col`` and ``col`` + 1 of its row (read
        at ``row_safe``, columns clamped into N)."""
        full_n = self.gemm.n % self.tile.n == 0
        values = []
        for e in range(2):
            c = arith.addi(col, _idx(e)) if e else col
            c_safe = c if full_n else arith.minui(c, _idx(self.gemm.n - 1))
            v = llvm.extractvalue(ir.F32Type.get(), acc,
                                  ir.DenseI64ArrayAttr.get([4 * j + 2 * h + e]))
            values.append(self.pair.evaluate(
                v, self.pair.point(batch, row_safe, c_safe),
                {b: pair[e] for b, pair in loaded.items()}))
        return values

    def _epilogue(self, acc, consumer, local, batch, tile_m, tile_n, inputs):
        if self.slots:
            self._staged_epilogue(acc, consumer, local, batch, tile_m, tile_n, inputs)
            return
        tile, gemm = self.tile, self.gemm
        row0, col0 = self._origin(consumer, local, tile_m, tile_n)
        full_n = gemm.n % tile.n == 0
        # 16-byte stores where the outputs allow (PairEpilogue.store_quad).
        wide = self.pair.quads()
        lane = arith.remui(local, _idx(4))
        for h in range(2):
            row, row_ok, row_safe = self._rows(row0, h)
            group = []
            for j in range(tile.n // 8):
                col = arith.addi(col0, _idx(8 * j)) if j else col0
                loaded = inputs[(h, j)] if inputs is not None else {}
                values = self._pair(acc, batch, row_safe, col, h, j, loaded)
                if not wide:
                    self.pair.store(values, batch, row, col, row_ok)
                    continue
                group.append(values)
                if len(group) == 4:
                    first = arith.addi(arith.muli(tile_n, _idx(tile.n)),
                                       arith.addi(_idx(8 * (j - 3)), arith.muli(lane, _idx(8))))
                    self.pair.store_quad(group, batch, row, first, lane, row_ok, full_n)
                    group = []

    def _out_bytes(self):
        """Bytes of an element of the stored outputs (one width when staged)."""
        return irutil.element_bytes(ir.MemRefType(self.pair.stored[0].type).element_type)

    def _slice_groups(self):
        """The accumulator's 8-column groups in a staged column slice (a
        128-byte row of the slot: 8 for 16-bit outputs, 4 for f32)."""
        return SWIZZLE // self._out_bytes() // 8

    def _staged_epilogue(self, acc, consumer, local, batch, tile_m, tile_n, inputs):
        """The epilogue through shared memory, stored by TMA.

        Each consumer warp owns 16 rows of the tile (rows 16 w .. 16 w + 15
        of its consumer's 64). For each column slice of 128 bytes (64
        columns of a 16-bit output, 32 of f32) it evaluates its pairs there,
        writes them into its slot (one per stored output) in the layout of
        TMA's 128-byte swizzle (``_swizzled``), so that the 8 rows a store
        instruction writes (lane / 4) fall in 8 different chunks, every bank
        once. Then each
        lane fences its writes for the async proxy, the warp synchronizes,
        and lane 0 stores the slot with one TMA store per output (rows past
        M and columns past N are clipped by TMA) and commits them as one
        bulk group. The warp goes on to the next slice, and after the last
        to the next tile's K steps, while TMA reads and writes.

        A slot is written again only after TMA has read it: slice s uses
        set s % sets, and lane 0 first waits (cp.async.bulk.wait_group.read)
        until at most sets - 1 of its bulk groups are pending, at a tile's
        first slice until none is (the set the last tile ended on is not
        known). The block's last stores are waited for in full before it
        exits (_consumer).

        Where TMA cannot store the output (``by_tma`` False: rows of an odd
        length), the warp synchronizes after writing the slot and stores it
        along its rows itself (_store_rows); one set of slots is enough."""
        tile = self.tile
        stored = self.pair.stored
        eb = self._out_bytes()
        cols = SWIZZLE // eb                  # columns of a slot row
        groups = self._slice_groups()         # accumulator column groups (8 wide) a slot holds
        warp = arith.divui(local, _idx(32))
        lane = arith.remui(local, _idx(32))
        first_lane = _cmp("eq", lane, _idx(0))
        quad = arith.divui(lane, _idx(4))     # the thread's row within 8
        pair_byte = arith.muli(arith.remui(lane, _idx(4)), _idx(2 * eb))
        # The thread's pair in a group of 8 columns: chunk pair_byte >> 4
        # of the group's (whose first chunk is even for f32: no carry), byte
        # pair_byte & 15 within it.
        pair_chunk = arith.shrui(pair_byte, _idx(4))
        within = arith.andi(pair_byte, _idx(15))
        warp_index = arith.addi(arith.muli(consumer, _idx(WARPGROUP // 32)), warp)
        slots = arith.addi(self.base, arith.addi(
            _i(self.staging_offset, 64),
            arith.muli(_to_i64(warp_index), _i(self.slots * SLOT_BYTES, 64))))
        row0, col0 = self._origin(consumer, local, tile_m, tile_n)
        warp_row = arith.addi(arith.muli(tile_m, _idx(tile.m)),
                              arith.addi(arith.muli(consumer, _idx(64)),
                                         arith.muli(warp, _idx(STAGE_ROWS))))
        first_row = _to_i32(warp_row)
        first_col = arith.muli(tile_n, _idx(tile.n))
        sets = self.slots // len(stored)
        vec = {b: ir.VectorType.get([2], ir.MemRefType(b.type).element_type) for b in stored}
        slices = tile.n // cols
        # Inputs read a slice at a time (see _consumer) load a slice ahead,
        # while this one is evaluated, where a slice's take few registers.
        ahead = 1 if self._row_input_registers(groups) <= AHEAD_REGISTERS else 0
        for s in range(slices):
            later = s + ahead
            if inputs is not None and later < slices and (0, later * groups) not in inputs:
                inputs.update(self._epilogue_inputs(
                    consumer, local, batch, tile_m, tile_n,
                    range(later * groups, (later + 1) * groups)))
            if self.by_tma:
                keep = min(s, sets - 1)
                _if(first_lane, lambda keep=keep: nvvm.CpAsyncBulkWaitGroupOp(keep, read=True))
            nvvm.SyncWarpOp(_i(-1))
            set_ = (s % sets) * len(stored)
            for h in range(2):
                _, _, row_safe = self._rows(row0, h)
                row = arith.addi(quad, _idx(8 * h)) if h else quad
                for g in range(groups):
                    j = s * groups + g
                    col = arith.addi(col0, _idx(8 * j)) if j else col0
                    loaded = inputs[(h, j)] if inputs is not None else {}
                    values = self._pair(acc, batch, row_safe, col, h, j, loaded)
                    chunk = arith.addi(pair_chunk, _idx(8 * g * eb // 16))
                    offset = _to_i64(_swizzled(row, chunk, within))
                    for i, buffer in enumerate(stored):
                        at = _i((set_ + i) * SLOT_BYTES, 64)
                        address = arith.addi(slots, arith.addi(at, offset))
                        pair = vector.from_elements(vec[buffer],
                                                    [values[0][buffer], values[1][buffer]])
                        llvm.store(pair, _shared_ptr(address), alignment=2 * eb)
            if not self.by_tma:
                nvvm.SyncWarpOp(_i(-1))
                for i, buffer in enumerate(stored):
                    self._store_rows(buffer, arith.addi(slots, _i((set_ + i) * SLOT_BYTES, 64)),
                                     lane, batch, warp_row,
                                     arith.addi(first_col, _idx(s * cols)))
                continue
            llvm.inline_asm(None, [], "fence.proxy.async.shared::cta;", "",
                            has_side_effects=True)
            nvvm.SyncWarpOp(_i(-1))

            def store(s=s, set_=set_):
                col = _to_i32(arith.addi(first_col, _idx(s * cols)))
                coords = [col, first_row] + ([_to_i32(batch)] if self.pair.rank == 3 else [])
                for i, descriptor in enumerate(self.out_descriptors):
                    src = arith.addi(slots, _i((set_ + i) * SLOT_BYTES, 64))
                    nvvm.CpAsyncBulkTensorSharedCTAToGlobalOp(descriptor, _shared_ptr(src),
                                                              coords)
                nvvm.CpAsyncBulkCommitGroupOp()
            _if(first_lane, store)

    def _store_rows(self, buffer, slot, lane, batch, first_row, first_col):
        """A warp stores its slot (16 rows of one column slice, in the
        swizzled layout _staged_epilogue writes) into ``buffer`` along its
        rows: lane l reads columns l, l + 32... of each row and stores them,
        a warp instruction 32 consecutive elements of one row, whatever the
        row's alignment. Rows past M and columns past N are not stored."""
        gemm = self.gemm
        element = ir.MemRefType(buffer.type).element_type
        eb = irutil.element_bytes(element)
        cols = SWIZZLE // eb
        lane_byte = arith.muli(lane, _idx(eb))
        lane_chunk = arith.shrui(lane_byte, _idx(4))
        lane_within = arith.andi(lane_byte, _idx(15))
        lead = [batch] if self.pair.rank == 3 else []
        for r in range(STAGE_ROWS):
            row = arith.addi(first_row, _idx(r)) if r else first_row
            row_ok = None if gemm.m % self.tile.m == 0 else _cmp("ult", row, _idx(gemm.m))
            for i in range(cols // 32):
                # Column lane + 32 i: chunk lane_chunk + 32 i eb / 16 of row r.
                chunk = arith.addi(lane_chunk, _idx(32 * i * eb // 16))
                address = arith.addi(slot, _to_i64(_swizzled(r, chunk, lane_within)))
                value = llvm.load(element, _shared_ptr(address))
                col = arith.addi(first_col, arith.addi(lane, _idx(32 * i)))
                ok = _cmp("ult", col, _idx(gemm.n))
                if row_ok is not None:
                    ok = arith.andi(ok, row_ok)
                _if(ok, lambda value=value, row=row, col=col:
                    memref.store(value, buffer, lead + [row, col]))


def build(fn, gemm, tile, ctas=PERSISTENT_CTAS):
    """Replace kernel function ``fn``'s body by the tc-sm90 kernel of ``gemm``,
    run by up to ``ctas`` persistent blocks. Returns what the plan should say
    of it (Builder.notes)."""
    transposed = computes_transposed(gemm, tile)
    if transposed:
        gemm = transposed_gemm(gemm)
        tile = transposed_tile(tile) or tile
    check(gemm, tile)
    builder = Builder(fn, gemm, tile, ctas, transposed)
    builder.build()
    return builder.notes()
