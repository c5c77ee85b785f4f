"""What tc-sm90 takes: its ``Tile``, the checks that refuse a GEMM with the
reason (``check`` raises ``NotSupported``), the shared memory a tile needs,
and how each operand reaches wgmma (where TMA reads it in place, through
registers, or from a transposed copy; whether the kernel computes Cᵀ).

Nothing here emits IR: the heuristics and the kernel (kernel.py) both ask.
"""

from dataclasses import dataclass, replace

from mlir import ir

from dnnc.codegen.gpu import irutil
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
    anywhere) or TMA cannot (rows of M or N that are not a multiple
    of 16 bytes apart, a misaligned start), when the copy's rows of K are a
    multiple of 16 bytes."""
    tf32 = multiplied(gemm) == "tf32"
    copied = {}
    for name, operand in (("A", gemm.a), ("B", gemm.b)):
        eb = element_bytes(operand.stored)
        if operand.k_major or (gemm.k * eb) % 16:
            continue
        if tf32 and name == "B":
            copied[name] = "wgmma reads tf32 from shared memory only K-major"
            continue
        if gemm.fp8:
            copied[name] = "wgmma reads 8-bit operands only K-major"
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
    if element not in ("bf16", "f16", "tf32") and not gemm.fp8:
        raise NotSupported(f"{element} operands (tc-sm90 takes bf16, f16, tf32 and fp8)")
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
    size = smem_bytes(tile, element, prologue_sources(gemm))
    if size > SMEM_LIMIT:
        raise NotSupported(f"{tile.stages} stages need {size} bytes of shared memory, more "
                           f"than the {SMEM_LIMIT} an sm_90 block may use")