"""A transposing copy: ``[batch,] K x R`` (R contiguous, or any strides) into
a new row-major ``[batch,] R x K`` buffer, by a launch of its own. tc-sm90
runs it ahead of a GEMM whose operand wgmma or TMA cannot read where it
lies (``tc_sm90.transposed_operands``): a tf32 operand stored MN-major, or
one whose rows TMA cannot step by.

One block of THREADS threads per TILE x TILE tile of the source (grid: R
tiles, K tiles, batch), through a shared tile of TILE rows of K::

    1. read    each thread loads its 16-byte vectors of the source's rows
               (along R; ``read_width`` elements, 1 where R is not
               contiguous or not aligned), every load before any store to
               shared memory so that they are all in flight together; a
               load past the end of R or K reads the last vector or row
               instead (in bounds, and never written out), so the loads
               need no branch
    2. barrier
    3. write   each thread gathers ``write_width`` elements of a column of
               the shared tile (consecutive K for one R) and stores them
               as one vector of the copy's row, skipped past R or K

The shared tile's rows are padded to an odd number of 4-byte words, so
that the column reads of step 3 and the row writes of step 1 fall in
distinct banks but for a 2-way overlap (a memory-bound copy does not feel
it: shared memory has several times the bandwidth a block's DRAM share
needs).
"""

from mlir import ir
from mlir.dialects import arith, gpu, memref, scf, vector

from dnnc.codegen.gpu import irutil

TILE = 64        # source rows of K and columns of R per block
THREADS = 256
VECTOR_BYTES = 16


def _idx(n):
    return irutil.index(n)


def _cmp(pred, a, b):
    return arith.cmpi(getattr(arith.CmpIPredicate, pred), a, b)


def read_width(strides, offset, extent, eb):
    """Elements a thread reads at once along R, the last of the source's
    ``strides`` ([batch,] K, R): a 16-byte vector when R is contiguous, its
    length a multiple of the vector and the other strides and the offset
    too (so each vector starts aligned); else fewer, down to 1."""
    if strides[-1] != 1:
        return 1
    steps = strides[:-1]
    for width in (VECTOR_BYTES // eb, 8 // eb, 4 // eb, 2 // eb, 1):
        if width >= 1 and extent % width == 0 and offset % width == 0 \
                and all(s % width == 0 for s in steps):
            return width
    return 1


def write_width(k, eb):
    """Elements a thread writes at once along a row of the copy (K long)."""
    for width in (VECTOR_BYTES // eb, 8 // eb, 4 // eb, 2 // eb, 1):
        if width >= 1 and k % width == 0:
            return width
    return 1


def transposed_copy(source, dims, extent, k, batch):
    """Emit the copy at the current insertion point (host side of a kernel
    function) and return the new buffer: ``[batch,] extent x k`` row-major
    with ``copy[b, r, kk] = source[b, kk, r]``. ``dims`` gives the source's
    "batch" (None when it has none), "k" and "mn" dims; a source dim in
    none of them has size 1."""
    shape, strides, offset = irutil.memref_geometry(source.type)
    element = ir.MemRefType(source.type).element_type
    eb = irutil.element_bytes(element)
    batched = dims["batch"] is not None
    # The source viewed as [batch,] K x R (vector.load reads along the last
    # dim), from its own base and offset.
    order = ([dims["batch"]] if batched else []) + [dims["k"], dims["mn"]]
    view_shape = [shape[d] for d in order]
    view_strides = [strides[d] for d in order]
    view_type = ir.MemRefType.get(view_shape, element, ir.StridedLayoutAttr.get(
        offset, view_strides))
    view = memref.reinterpret_cast(view_type, source, [], [], [], [offset], view_shape,
                                   view_strides)
    copy = memref.alloc(ir.MemRefType.get(([batch] if batched else []) + [extent, k],
                                          element), [], [])
    rw = read_width(view_strides, offset, extent, eb)
    ww = write_width(k, eb)
    # An odd number of 4-byte words a row (see the module docstring).
    pitch = TILE + max(1, 4 // eb)
    smem_type = ir.MemRefType.get([TILE, pitch], element, memory_space=ir.Attribute.parse(
        "#gpu.address_space<workgroup>"))
    grid = (-(-extent // TILE), -(-k // TILE), batch if batched else 1)
    launch = gpu.LaunchOp(tuple(_idx(g) for g in grid), (_idx(THREADS), _idx(1), _idx(1)))
    launch.attributes["workgroup_attributions"] = ir.IntegerAttr.get(
        ir.IntegerType.get_signless(64), 1)
    block = launch.regions[0].blocks[0]
    smem = block.add_argument(smem_type, ir.Location.unknown())
    with ir.InsertionPoint(block):
        tid = gpu.thread_id(gpu.Dimension.x)
        r0 = arith.muli(gpu.block_id(gpu.Dimension.x), _idx(TILE))
        k0 = arith.muli(gpu.block_id(gpu.Dimension.y), _idx(TILE))
        b = gpu.block_id(gpu.Dimension.z)

        # 1. Read: thread t loads vector t % per of rows t / per + i * rows.
        per = TILE // rw
        rows = THREADS // per
        column = arith.muli(arith.remui(tid, _idx(per)), _idx(rw))
        first = arith.divui(tid, _idx(per))
        # The last in-bounds vector and row stand in for those past the end.
        r = arith.minui(arith.addi(r0, column), _idx(extent - rw))
        vector_type = ir.VectorType.get([rw], element)
        loaded = []
        for i in range(TILE // rows):
            row = arith.addi(first, _idx(i * rows))
            where = ([b] if batched else []) + [
                arith.minui(arith.addi(k0, row), _idx(k - 1)), r]
            if rw == 1:
                loaded.append((row, [memref.load(view, where)]))
            else:
                got = vector.load(vector_type, view, where, alignment=rw * eb)
                loaded.append((row, [vector.extract(got, [], [j]) for j in range(rw)]))
        for row, values in loaded:
            for j, value in enumerate(values):
                memref.store(value, smem, [row, arith.addi(column, _idx(j))])
        gpu.barrier()

        # 3. Write: thread t stores vector t % per of copy rows t / per + i * rows.
        per = TILE // ww
        rows = THREADS // per
        kk = arith.muli(arith.remui(tid, _idx(per)), _idx(ww))
        first = arith.divui(tid, _idx(per))
        k_ok = _cmp("ult", arith.addi(k0, kk), _idx(k))
        vector_type = ir.VectorType.get([ww], element)
        for i in range(TILE // rows):
            c = arith.addi(first, _idx(i * rows))
            values = [memref.load(smem, [arith.addi(kk, _idx(j)), c]) for j in range(ww)]
            ok = arith.andi(k_ok, _cmp("ult", arith.addi(r0, c), _idx(extent)))
            guard = scf.IfOp(ok, [], has_else=False)
            with ir.InsertionPoint(guard.then_block):
                where = ([b] if batched else []) + [arith.addi(r0, c), arith.addi(k0, kk)]
                if ww == 1:
                    memref.store(values[0], copy, where)
                else:
                    vector.store(vector.from_elements(vector_type, values), copy, where,
                                 alignment=ww * eb)
                scf.YieldOp([])
        gpu.TerminatorOp()
    return copy
