"""simt-gemv's parameters and limits: ``Skinny`` (a block's threads, the
threads sharing a column's K, the load width, the unroll), ``Sides`` (which
operand is small), ``NotSupported``, ``check``, and the geometry the
kernel, the pass and the heuristics share."""

from dataclasses import dataclass

from mlir import ir

from dnnc.codegen.gpu import irutil

# The small side's rows a thread holds partial sums of.
MAX_ROWS = 8
# Partial sums a thread may hold: R x vector (MN-major W).
MAX_ACCUMULATORS = 32
MAX_THREADS = 1024
MAX_UNROLL = 16
# Static shared memory a block may use without the opt-in (the partials
# of an MN-major W's K groups).
MAX_SHARED = 48 * 1024
WARP = 32
ELEMENTS = ("f32", "f16", "bf16")


class NotSupported(Exception):
    """simt-gemv does not take this GEMM; the message says why."""


@dataclass(frozen=True)
class Skinny:
    """A block of ``threads``; ``split`` of them share each output
    column's K; loads of ``vector`` elements along W's contiguous dim;
    ``unroll`` K iterations' loads issued together."""

    threads: int = 256
    split: int = 8
    vector: int = 1
    unroll: int = 4


@dataclass(frozen=True)
class Sides:
    """Which operand is small: X (``rows`` R of it) and W (``length`` L
    columns), and whether they are swapped (N is the small side: X is B,
    W is A, and output (r, l) is C[l, r])."""

    x: object
    w: object
    rows: int
    length: int
    swapped: bool

    @property
    def w_k_major(self):
        return self.w.k_major


def sides_of(gemm):
    """The Sides of ``gemm``: the smaller of M and N is the small side
    (M on a tie)."""
    if gemm.m <= gemm.n:
        return Sides(gemm.a, gemm.b, gemm.m, gemm.n, False)
    return Sides(gemm.b, gemm.a, gemm.n, gemm.m, True)


def contiguous_width(operand, inner, element_bytes):
    """The widest load (elements, a power of 2 of at most 16 bytes) that
    reads ``operand`` along its buffer dim ``inner``: stride 1 there, the
    dim's size, every other stride and the offset multiples of it (the
    runtime aligns every buffer to 16 bytes)."""
    shape, strides, offset = irutil.memref_geometry(operand.value.type)
    if strides[inner] != 1:
        return 1
    width = 16 // element_bytes
    while width > 1:
        if shape[inner] % width == 0 and offset % width == 0 and \
                all(s % width == 0 for d, s in enumerate(strides) if d != inner):
            return width
        width //= 2
    return 1


def widest_vector(gemm):
    """The widest ``vector`` W allows along its contiguous dim (K for a
    K-major W, L for an MN-major one)."""
    side = sides_of(gemm)
    element = ir.MemRefType(side.w.value.type).element_type
    inner = side.w.dims["k" if side.w_k_major else "mn"]
    return contiguous_width(side.w, inner, irutil.element_bytes(element))


def columns_of(gemm, skinny):
    """Output columns (of L) a block computes."""
    side = sides_of(gemm)
    if side.w_k_major:
        return skinny.threads // skinny.split
    return skinny.threads // skinny.split * skinny.vector


def shared_bytes(gemm, skinny):
    """Shared memory of an MN-major W's partials: split x R x columns
    floats (none where one group walks all of K, or W is K-major)."""
    side = sides_of(gemm)
    if side.w_k_major or skinny.split == 1:
        return 0
    return skinny.split * side.rows * columns_of(gemm, skinny) * 4


def check(gemm, skinny):
    """Raise NotSupported unless simt-gemv with ``skinny`` computes ``gemm``."""
    if gemm.a.element != gemm.b.element or gemm.a.element not in ELEMENTS:
        raise NotSupported(f"operands {gemm.a.element} x {gemm.b.element}: expected both f32, "
                           "f16 or bf16")
    for name, operand in (("A", gemm.a), ("B", gemm.b)):
        if operand.prologue is not None:
            raise NotSupported(f"a prologue on {name}: simt-gemv applies none")
    if min(gemm.m, gemm.n, gemm.k, gemm.batch) < 1:
        raise NotSupported(f"an empty GEMM ({gemm.m}x{gemm.n}x{gemm.k} x{gemm.batch}): "
                           "expected M, N, K and the batch at least 1")
    side = sides_of(gemm)
    if side.rows > MAX_ROWS:
        raise NotSupported(f"M {gemm.m} and N {gemm.n}: expected one of them at most "
                           f"{MAX_ROWS}")
    if gemm.batch_shape is not None:
        raise NotSupported(f"batch dims {list(gemm.batch_shape)} broadcast against each other: "
                           "simt-gemv addresses one batch dim")
    if gemm.epilogue.pixels or gemm.epilogue.amax or gemm.scales is not None:
        raise NotSupported("an epilogue through pixel views, an amax or block scales: "
                           "expected a matmul's pointwise epilogue")
    t, s, v = skinny.threads, skinny.split, skinny.vector
    if not WARP <= t <= MAX_THREADS or t % WARP:
        raise NotSupported(f"{t} threads: expected a multiple of {WARP} up to {MAX_THREADS}")
    if s < 1 or t % s:
        raise NotSupported(f"split {s}: expected a divisor of the block's {t} threads")
    if side.w_k_major and (s > WARP or s & (s - 1)):
        raise NotSupported(f"split {s} of a K-major W (lanes of one warp, summed by "
                           f"shuffles): expected a power of 2 up to {WARP}")
    if v < 1 or v & (v - 1) or v > widest_vector(gemm):
        raise NotSupported(f"vector {v}: expected a power of 2 up to {widest_vector(gemm)} "
                           "(what W's contiguous dim, strides and offset allow)")
    accumulators = side.rows * (1 if side.w_k_major else v)
    if accumulators > MAX_ACCUMULATORS:
        raise NotSupported(f"{accumulators} partial sums a thread ({side.rows} rows x vector "
                           f"{v}): expected at most {MAX_ACCUMULATORS}")
    if not 1 <= skinny.unroll <= MAX_UNROLL:
        raise NotSupported(f"unroll {skinny.unroll}: expected 1 to {MAX_UNROLL}")
    if shared_bytes(gemm, skinny) > MAX_SHARED:
        raise NotSupported(f"{shared_bytes(gemm, skinny)} bytes of partials in shared memory: "
                           f"expected at most {MAX_SHARED}")
