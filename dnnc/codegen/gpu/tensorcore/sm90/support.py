"""What tc-sm90 takes: its ``Tile``, the checks that refuse a GEMM with the
reason (``check`` raises ``NotSupported``), the shared memory a tile needs,
and how each operand reaches wgmma (where TMA reads it in place, through
registers, or from a transposed copy; whether the kernel computes Cᵀ).

Nothing here emits IR: the heuristics and the kernel (kernel.py) both ask.
"""

from dataclasses import dataclass, replace

from mlir import ir

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.tensorcore.sm90.block_scales import GROUPS
from dnnc.codegen.gpu.tensorcore.sm90.tma import (
    SWIZZLE, element_bytes, physical_order, physical_view,
)

WARPGROUP = 128
ALIGN = 1024           # smem alignment 128-byte swizzle atoms need
# The shared memory an sm_90 block may use (dynamic, opted in).
SMEM_LIMIT = 227 * 1024


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
    # A 1x1, unit-stride, unpadded convolution's x read as a matrix by tiled
    # TMA boxes (im2col.PixelRows), not in im2col mode: the config's ``tiled``.
    tiled: bool = False
    promote_overlap: int = 0  # block scales: steps a group runs promoting step kt - 1
    #                           while kt's wgmmas run (2, 4, 8; 0: whole steps)
    tail_split: int = 0      # the last wave's tiles split along K up to this many ways
    #                           (scheduler.py, tail_split.py; 0: off)

    @property
    def threads(self):
        return WARPGROUP * (1 + self.consumers)


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


def smem_bytes(tile, element, sources=(None, None)):
    """Dynamic shared memory of a kernel: the ring, the converted tiles of
    prologue operands, the ring's barriers, alignment slack. ``sources``:
    the stored type of A and of B where a prologue converts it, else None."""
    eb = element_bytes(element)
    a, b = (element_bytes(s) if s else eb for s in sources)
    stage = (tile.m * a + tile.n * b) * tile.k
    return ALIGN + tile.stages * stage + \
        converted_bytes(tile, [s is not None for s in sources]) + 16 * tile.stages


def prologue_sources(gemm):
    """(A's stored type, B's) where a prologue converts it, else None."""
    return tuple(o.stored if o.prologue is not None else None for o in (gemm.a, gemm.b))


def multiplied(gemm):
    """The wgmma operand type of ``gemm``: bf16, f16, or tf32 for f32 operands
    a tf32 matmul rounds (wgmma reads their top 19 bits, rounding toward
    zero where the reference rounds to nearest: within tf32's precision);
    for fp8 operands A's type (B's may be the other fp8 type: wgmma_types)."""
    return "tf32" if gemm.compute == "tf32" else gemm.element


# wgmma's names of the fp8 types (#nvvm.wgmma_type, the PTX suffixes).
WGMMA_FP8 = {"f8E4M3FN": "e4m3", "f8E5M2": "e5m2"}


def wgmma_types(gemm):
    """(A's, B's) wgmma operand type names: both ``multiplied``, but for
    fp8, where each operand has its own (e4m3 x e5m2 is one instruction)."""
    if gemm.fp8:
        return WGMMA_FP8[gemm.a.element], WGMMA_FP8[gemm.b.element]
    return (multiplied(gemm),) * 2


def misaligned(shape, strides, offset, eb):
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
    eb = element_bytes(operand.stored)
    if strides[-1] != 1:
        return f"{name} has no contiguous dim (smallest stride {strides[-1]}): TMA needs one"
    inner = "K" if operand.k_major else {"A": "M", "B": "N"}[name]
    broken = misaligned(shape, strides, offset, eb)
    if broken and broken[0] == "stride":
        return (f"{name}'s dim {order[broken[1]]} stride is {broken[2]} bytes: TMA needs a "
                f"multiple of 16 ({inner}, {name}'s contiguous dim, a multiple of {16 // eb})")
    if broken:
        return f"{name} starts {broken[1]} bytes into its buffer: TMA needs 16-byte alignment"
    if t.rank > 5:
        return f"{name} has rank {t.rank}: TMA takes up to 5"
    return None


def registers_a(gemm):
    """A tf32 A stored K x M that TMA reads where it lies: the consumers
    read its fragments from the stage into registers (``Consumer.fragments``,
    mainloop.py) and wgmma takes A from them, since it reads tf32 from shared
    memory only K-major."""
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
    it: registers_a; an fp8 A or B, which it reads only K-major from
    anywhere) or TMA cannot (rows of M or N that are not a multiple of 16
    bytes apart, a misaligned start). Where the copy's rows of K are not a
    multiple of 16 bytes (an odd K), bf16 / f16 operands without a prologue
    are copied into rows padded to 16 bytes where that pays (``copy_pays``);
    others are not copied (tc-sm80 takes a bf16 / f16 GEMM)."""
    tf32 = multiplied(gemm) == "tf32"
    copied = {}
    for name, operand, extent in (("A", gemm.a, gemm.m), ("B", gemm.b, gemm.n)):
        eb = element_bytes(operand.stored)
        # Rows of an odd K: the copy's rows padded to 16 bytes, where the
        # copy pays (copy_pays), bf16 / f16 alone.
        odd_k = (gemm.k * eb) % 16 != 0
        if operand.k_major or odd_k and (tf32 or gemm.fp8 or operand.prologue is not None
                                         or gemm.batch_shape is not None):
            continue
        if tf32 and name == "B":
            copied[name] = "wgmma reads tf32 from shared memory only K-major"
            continue
        if gemm.fp8:
            copied[name] = "wgmma reads 8-bit operands only K-major"
            continue
        problem = tma_problem(name, operand)
        if problem is None:
            continue
        # The rows of M or N lie one K step apart.
        _, strides, _ = irutil.memref_geometry(operand.value.type)
        pitch = strides[operand.dims["k"]] * eb
        why = (f"its rows of {pitch} bytes are not a multiple of 16 for TMA"
               if pitch % 16 else problem)
        if odd_k:
            pays = copy_pays(gemm, operand, extent)
            if pays is None:
                continue
            why += f"; into rows of K padded to 16 bytes: {pays}"
        copied[name] = why
    return copied


# What padded_operands weighs (an H200's figures): tc-sm90's rate on a
# large bf16 GEMM (4096^3 at 0.175-0.186 ms: 740-785 TFLOP/s; taken lower,
# for H100s and ragged tiles), a copy's rate, a launch. tc-sm80, what such
# an operand gets otherwise, ran 4096^3 in 0.327 ms (1.8x tc-sm90's time)
# before its loader read rows element by element.
TC90_FLOPS_PER_S = 600e12
COPY_BYTES_PER_S = 2.5e12
LAUNCH_S = 5e-6
# The copy pays when it adds at most this share of the GEMM's time.
PAD_SHARE = 0.25
# tc-sm80 has no split-K: where its narrowest tiles (64 x 64) would leave
# more than half of the SMs idle (a skinny GEMM: M or N of 16, a long K),
# tc-sm90's K split fills them, and a copy of an operand of at most this
# share of the GEMM's bytes (A of 16 rows beside a weight) pays however
# short the GEMM, as long as the GEMM's own bytes take two launches' time
# (a copy's launch would double a tiny GEMM's).
SMALL_COPY_SHARE = 0.1
SM90_SMS = 132


def padded_operands(gemm):
    """{"A" or "B": why} for the K-major operands a launch ahead of the GEMM
    copies into rows of a 16-byte multiple (elementwise/pad_rows.py), which
    TMA then reads, zero past K: those TMA cannot read where they lie (rows
    of K that are not 16 bytes apart, K = 4095 or 767 of 2-byte elements;
    a row stride or start off 16 bytes), bf16 / f16 without a prologue,
    where the copy pays (``copy_pays``). Other GEMMs go to tc-sm80, whose
    loader reads such rows where they lie."""
    if gemm.batch_shape is not None or multiplied(gemm) not in ("bf16", "f16"):
        return {}
    out = {}
    for name, operand, extent in (("A", gemm.a, gemm.m), ("B", gemm.b, gemm.n)):
        if not operand.k_major or operand.prologue is not None:
            continue
        problem = tma_problem(name, operand)
        pays = None if problem is None else copy_pays(gemm, operand, extent)
        if pays is not None:
            out[name] = f"{problem}; {pays}"
    return out


def copy_pays(gemm, operand, extent):
    """Why copying ``operand`` (of ``extent`` rows of M or N) ahead of the
    GEMM, read and written once, pays for tc-sm90 over tc-sm80, or None:
    the copy's estimated time (a launch included) is at most PAD_SHARE of
    the GEMM's, or the GEMM is skinny enough that tc-sm80 would leave most
    SMs idle, the copied operand small (SMALL_COPY_SHARE) and the GEMM's
    bytes not few."""
    eb = element_bytes(multiplied(gemm))
    gemm_s = 2 * gemm.m * gemm.n * gemm.k * gemm.batch / TC90_FLOPS_PER_S
    moved = eb * (gemm.m * gemm.n * gemm.batch + sum(
        mn * gemm.k * (gemm.batch if o.dims["batch"] is not None else 1)
        for o, mn in ((gemm.a, gemm.m), (gemm.b, gemm.n))))
    skinny = -(-gemm.m // 64) * -(-gemm.n // 64) * gemm.batch < SM90_SMS // 2
    batches = gemm.batch if operand.dims["batch"] is not None else 1
    copied = 2 * extent * gemm.k * batches * eb
    copy_s = copied / COPY_BYTES_PER_S + LAUNCH_S
    if skinny and copied <= SMALL_COPY_SHARE * moved and \
            moved / COPY_BYTES_PER_S >= 2 * LAUNCH_S:
        return (f"a copy of {copied // 1024} KiB beside the GEMM's {moved // 1024} KiB, so "
                "that tc-sm90 splits K where tc-sm80's tiles would leave most SMs idle")
    if copy_s <= PAD_SHARE * gemm_s:
        return (f"the copy, {copy_s * 1e6:.0f} us at {COPY_BYTES_PER_S / 1e12:g} TB/s, is "
                f"under {PAD_SHARE:.0%} of the GEMM's {gemm_s * 1e6:.0f} us at "
                f"{TC90_FLOPS_PER_S / 1e12:g} TFLOP/s, where tc-sm80's loader would take "
                "about 1.8x tc-sm90's time")
    return None


def _check_block_scales(gemm, tile):
    """A block-scaled GEMM's tile: one K step a scale block; its columns in
    one 128-column block of B's scales, or two halves of a 256-wide tile
    each in one; two temporaries (promote_overlap) only beside a sum of at
    most 64 f32 a thread (block_scales.py)."""
    block = gemm.scales.block
    if not gemm.fp8:
        raise NotSupported(f"block scales on {gemm.a.element} x {gemm.b.element}: expected fp8")
    if tile.k != block:
        raise NotSupported(f"tile K {tile.k} with block scales: expected {block} (a K step "
                           "is one scale block)")
    if tile.n not in (64, 128, 2 * block):
        raise NotSupported(f"tile N {tile.n} with block scales: expected 64, 128 or 256 (a "
                           f"tile's columns in one or two {block}-column blocks of B's scales)")
    if tile.promote_overlap not in (0,) + GROUPS:
        raise NotSupported(f"promote_overlap {tile.promote_overlap}: expected 0 or one of "
                           f"{', '.join(map(str, GROUPS))} (K steps a group of the "
                           "overlapped loop runs)")
    if tile.promote_overlap and tile.n > block:
        raise NotSupported(f"promote_overlap with a tile {tile.n} wide: expected at most {block} "
                           f"(the sum and two temporaries, 3 x {tile.n // 2} f32 a thread, "
                           "exceed a consumer's 232 registers)")
    if gemm.batch > 1:
        raise NotSupported(f"a batch of {gemm.batch} with block scales: tc-sm90 scales one GEMM")


def check(gemm, tile):
    """Raise NotSupported unless tc-sm90 with ``tile`` computes ``gemm``."""
    if gemm.batch_shape is not None:
        raise NotSupported(f"{len(gemm.batch_shape)} batch dims {list(gemm.batch_shape)}: "
                           "tc-sm90's tiles address one")
    element = multiplied(gemm)
    if element == "f32":
        raise NotSupported("f32 operands multiplied in f32: the tensor cores take them as tf32 "
                           "(compute_data_type='tf32')")
    if element not in ("bf16", "f16", "tf32") and not gemm.fp8:
        raise NotSupported(f"{element} operands (tc-sm90 takes bf16, f16, tf32 and fp8)")
    if gemm.scales is not None:
        _check_block_scales(gemm, tile)
    elif tile.promote_overlap:
        raise NotSupported(f"promote_overlap {tile.promote_overlap} on a GEMM without block "
                           "scales: expected 0 (it groups a block-scaled GEMM's K steps)")
    eb = element_bytes(element)
    if tile.k * eb != SWIZZLE:
        raise NotSupported(f"tile K {tile.k}: expected {SWIZZLE // eb} for {element}")
    if tile.m not in (64, 128) or tile.m != 64 * tile.consumers or tile.n % 64 \
            or not 64 <= tile.n <= 256:
        raise NotSupported(f"tile {tile.m}x{tile.n}: expected M = 64 or 128 (64 per consumer "
                           "warpgroup) and N a multiple of 64 up to 256")
    for name, operand in (("A", gemm.a), ("B", gemm.b)):
        if gemm.fp8 and operand.prologue is not None:
            raise NotSupported(f"a prologue on the fp8 {name} ({operand.stored} -> "
                               f"{operand.element}): tc-sm90 converts tiles to bf16 or f16 "
                               "only")
        if gemm.fp8 and not operand.k_major and (gemm.k * element_bytes(operand.stored)) % 16:
            raise NotSupported(f"{name} is stored MN-major and K is {gemm.k}: wgmma reads fp8 "
                               "only K-major, and a K-major copy needs rows of a multiple of "
                               "16 bytes (K a multiple of 16)")
        if operand.prologue is not None and operand.stored not in PROLOGUE_SOURCES:
            raise NotSupported(f"a prologue on {name} stored as {operand.stored}: tc-sm90 "
                               f"converts {', '.join(PROLOGUE_SOURCES)} tiles")
    # An operand copied transposed (``Kernel.transposed_copy``, kernel.py) is
    # read from the copy, row-major M x K or N x K with rows of a 16-byte
    # multiple.
    transposed = {**transposed_operands(gemm), **padded_operands(gemm)}
    for name, operand in (("A", gemm.a), ("B", gemm.b)):
        if name in transposed:
            continue
        if element == "tf32" and not operand.k_major and name == "B":
            raise NotSupported(f"K is {gemm.k}: the transposed tf32 {name} needs rows of a "
                               "multiple of 16 bytes (K a multiple of 4)")
        problem = tma_problem(name, operand)
        if problem is not None:
            raise NotSupported(problem)
    size = smem_bytes(tile, element, prologue_sources(gemm))
    if size > SMEM_LIMIT:
        raise NotSupported(f"{tile.stages} stages need {size} bytes of shared memory, more "
                           f"than the {SMEM_LIMIT} an sm_90 block may use")