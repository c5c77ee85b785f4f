"""The copy tc-sm90 runs ahead of a GEMM whose K-major operand has rows TMA
cannot step by (``sm90.padded_operands``: K of 2-byte elements not a
multiple of 8, such as 4095 or 767): the operand's rows copied into a
buffer whose rows are ``pitch`` elements apart, a multiple of 16 bytes,
and the GEMM reads a view of its first K columns (TMA zero-fills past K,
so the padding is never read as data).

One thread per 16 bytes of a padded row (``VECTOR_BYTES`` / element
bytes elements), ``THREADS`` a block, threads numbered along the row then
down the rows, batch by batch::

    1. read    the chunk's elements one by one (the rows start 2 bytes
               apart: no wider load is aligned at every row), 0 past K;
               a warp reads 32 consecutive chunks of a row, whose loads
               share their 32-byte sectors
    2. write   them as one 16-byte vector at the chunk's place in the
               padded row

Reading element by element costs no DRAM traffic beyond the operand's
bytes; the copy moves the operand once in and once out (what
``sm90.padded_operands`` weighs against the GEMM).
"""

from mlir import ir
from mlir.dialects import arith, gpu, memref, scf, vector

from dnnc.codegen.gpu import irutil

THREADS = 256
VECTOR_BYTES = 16


def _idx(n):
    return irutil.index(n)


def pitch_of(k, eb):
    """Elements of a padded row of ``k`` elements of ``eb`` bytes: ``k``
    rounded up to a multiple of 16 bytes."""
    per = VECTOR_BYTES // eb
    return -(-k // per) * per


def padded_copy(source, dims, extent, k, batch):
    """Emit the copy of K-major operand ``source`` (``dims``: its "batch"
    (None when it has none), "mn" and "k" dims, any other dim of size 1)
    at the current insertion point (host side) into a new ``[batch,]
    extent x pitch`` buffer, and return the view of it a GEMM reads:
    ``[batch,] extent x k`` with rows ``pitch_of(k)`` elements apart."""
    element = ir.MemRefType(source.type).element_type
    pitch = pitch_of(k, irutil.element_bytes(element))
    lead = [batch] if dims["batch"] is not None else []
    dest = memref.alloc(ir.MemRefType.get(lead + [extent, pitch], element), [], [])
    emit(source, dims, dest, k)
    # The view the GEMM reads: the first k elements of each padded row.
    shape = lead + [extent, k]
    view_strides = ([extent * pitch] if lead else []) + [pitch, 1]
    view_type = ir.MemRefType.get(shape, element,
                                  layout=ir.StridedLayoutAttr.get(0, view_strides))
    return memref.reinterpret_cast(view_type, dest, [], [], [], [0], shape, view_strides)


def emit(source, dims, dest, k):
    """The copy's launch, at the current insertion point: ``dest``
    (``[batch,] extent x pitch``, row-major, the pitch a multiple of 16
    bytes) gets ``source``'s rows of ``k`` elements, zero after them."""
    t = ir.MemRefType(source.type)
    element = t.element_type
    per = VECTOR_BYTES // irutil.element_bytes(element)
    shape = list(ir.MemRefType(dest.type).shape)
    batched = dims["batch"] is not None
    batch = shape[0] if batched else 1
    extent, pitch = shape[-2], shape[-1]
    chunks = pitch // per
    total = batch * extent * chunks
    launch = gpu.LaunchOp((_idx(-(-total // THREADS)), _idx(1), _idx(1)),
                          (_idx(THREADS), _idx(1), _idx(1)))
    with ir.InsertionPoint(launch.regions[0].blocks[0]):
        tid = gpu.thread_id(gpu.Dimension.x)
        bid = gpu.block_id(gpu.Dimension.x)
        flat = arith.addi(arith.muli(bid, _idx(THREADS)), tid)
        guard = scf.IfOp(arith.cmpi(arith.CmpIPredicate.ult, flat, _idx(total)), [],
                         has_else=False)
        with ir.InsertionPoint(guard.then_block):
            chunk = arith.remui(flat, _idx(chunks))
            rows = arith.divui(flat, _idx(chunks))
            row = arith.remui(rows, _idx(extent))
            b = arith.divui(rows, _idx(extent))
            k0 = arith.muli(chunk, _idx(per))
            # 1. Read: element by element, 0 past K (the load reads the
            # row's first element instead, inside the operand).
            values = []
            zero = arith.constant(element, 0.0)
            for j in range(per):
                kj = arith.addi(k0, _idx(j)) if j else k0
                ok = arith.cmpi(arith.CmpIPredicate.ult, kj, _idx(k))
                at = [_idx(0)] * t.rank
                at[dims["mn"]] = row
                at[dims["k"]] = arith.select(ok, kj, _idx(0))
                if batched:
                    at[dims["batch"]] = b
                values.append(arith.select(ok, memref.load(source, at), zero))
            # 2. Write: one 16-byte vector.
            vec = vector.from_elements(ir.VectorType.get([per], element), values)
            vector.store(vec, dest, ([b] if batched else []) + [row, k0],
                         alignment=VECTOR_BYTES)
            scf.YieldOp([])
        gpu.TerminatorOp()
    return launch
