"""The small launches around tc-sm90's fused attention backward
(flash_backward_fused.py), which sums dQ in an f32 workspace ``dq_sum``
``[B, H, Sq, D]`` where every kv block adds its part (the preprocess and
the conversion also frame tc-sm80's fused backward,
sm80/flash_backward_fused.py: plain SIMT kernels, nothing of Hopper's):

1. ``Preprocess``, before it: a quad of threads per query row computes
   delta = rowsum(dO ∘ O) (f32, into the ``[B, H, Sq]`` workspace the
   fused kernel reads per step), a block taking PRE_PASSES rows per quad
   with every load of them issued before the first sum; and the block
   zeroes its rows of ``dq_sum`` (the workspace is not cleared between
   runs, and each run only adds to it), which are one contiguous span of
   the workspace: consecutive threads store consecutive 16-byte vectors.
2. ``Convert``, after it: dQ = scale · ``dq_sum``, rounded to dq's type (or
   kept f32), a thread per 8 columns of a row, written where dq lies.
3. ``group_sum``, after it where the fused kernel's units took a grouped-query
   group's heads in parts (backward_units.py): dK = scale · the sum of the
   parts' f32 partial dK, dV the sum of theirs, each element summed by one
   thread from part 0 up (the same bits every run), a thread per 8
   columns.

All are plain SIMT kernels on a (row tiles, B x H) grid: they read or write
each element of O, dO, dQ (dK, dV) once, in vectors of 8 (rows of q, o, do,
dq, dk and dv start 16-byte aligned: tensorcore/attention.py checks it).
"""

from mlir import ir
from mlir.dialects import arith, gpu, memref, vector

from dnnc.codegen.gpu.tensorcore.emit import (
    add as _add, cmp as _cmp, f32, idx as _idx, if_ as _if, launch, quad,
)

# Threads a block of either kernel; rows a pass of a preprocess block (a
# quad a row), and passes a block where the grid keeps PRE_MIN_BLOCKS
# blocks.
THREADS = 128
PRE_ROWS = THREADS // 4
PRE_PASSES = 4
PRE_MIN_BLOCKS = 4 * 132
# 16-byte loads of O and dO a preprocess thread holds in flight at most
# (64 registers): passes x its 8-column chunks of a row x 2.
PRE_LOADS = 16
# Columns a thread of the conversion handles.
CHUNK = 8


def _vector(n, element):
    return ir.VectorType.get([n], element)


def _block(att):
    """(batch, head) of the block: grid y runs over B x H."""
    head = gpu.block_id(gpu.Dimension.y)
    return arith.divui(head, _idx(att.heads)), arith.remui(head, _idx(att.heads))


def pre_passes(att):
    """Passes of PRE_ROWS rows a preprocess block takes: PRE_PASSES (more
    loads in flight a thread, fewer blocks) where a thread's loads stay
    within PRE_LOADS and the grid still has PRE_MIN_BLOCKS blocks, else
    fewer."""
    chunks = -(-(att.dv // 8) // 4)       # a thread's 8-column chunks of a row
    passes = PRE_PASSES
    while passes > 1 and (passes * chunks * 2 > PRE_LOADS or -(-att.sq // (PRE_ROWS * passes))
                          * att.batch * att.heads < PRE_MIN_BLOCKS):
        passes //= 2
    return passes


def preprocess(att, delta, dq_sum):
    """Launch the kernel that writes ``delta`` ([B, H, Sq] f32) and zeroes
    ``dq_sum`` ([B, H, Sq, D] f32, dense)."""
    passes = pre_passes(att)
    rows = PRE_ROWS * passes
    grid = (-(-att.sq // rows), att.batch * att.heads)
    f32_type = ir.F32Type.get()

    def body():
        tid = gpu.thread_id(gpu.Dimension.x)
        b, h = _block(att)
        first = arith.muli(gpu.block_id(gpu.Dimension.x), _idx(rows))
        quarter = arith.remui(tid, _idx(4))
        mine = arith.addi(first, arith.divui(tid, _idx(4)))
        # Every pass's loads first, then the sums. Every lane takes part in
        # the quad's exchange: rows past Sq read the last row and write
        # nothing.
        loaded = []
        for p in range(passes):
            row = _add(mine, p * PRE_ROWS)
            clamped = arith.minui(row, _idx(att.sq - 1))
            loaded.append((row, _row_chunks(att, b, h, clamped, quarter)))
        for row, chunks in loaded:
            total = quad(arith.addf, _row_delta(chunks))
            _if(arith.andi(_cmp("ult", row, _idx(att.sq)), _cmp("eq", quarter, _idx(0))),
                lambda row=row, total=total: memref.store(total, delta, [b, h, row]))
        # The block's rows of dq_sum: 16-byte vectors, thread t the t-th of
        # every THREADS.
        zeros = arith.constant(_vector(4, f32_type), ir.DenseElementsAttr.get_splat(
            _vector(4, f32_type), ir.FloatAttr.get(f32_type, 0.0)))
        per_row = att.d // 4
        vectors = rows * per_row
        for k in range(-(-vectors // THREADS)):
            at = _add(tid, k * THREADS)
            row = arith.addi(first, arith.divui(at, _idx(per_row)))
            column = arith.muli(arith.remui(at, _idx(per_row)), _idx(4))
            inside = _cmp("ult", row, _idx(att.sq))
            if (k + 1) * THREADS > vectors:     # the last, partial round
                inside = arith.andi(inside, _cmp("ult", at, _idx(vectors)))
            _if(inside, lambda row=row, column=column:
                vector.store(zeros, dq_sum, [b, h, row, column], alignment=16))
    launch(grid, THREADS, 0, body)


def _row_chunks(att, b, h, row, quarter):
    """The thread's 8-column chunks of ``row`` of O and dO, loaded (as
    stored), each with its weight (``chunk_columns``)."""
    at = lambda column: [b, h, row, column]   # noqa: E731
    out = []
    for column, weight in chunk_columns(att.dv, quarter):
        chunks = []
        for buffer in (att.o, att.do):
            element = ir.MemRefType(buffer.type).element_type
            chunks.append(vector.load(_vector(8, element), buffer, at(column), alignment=16))
        out.append((*chunks, weight))
    return out


def _row_delta(chunks):
    """The thread's part of rowsum(dO ∘ O) from its ``_row_chunks``."""
    wide = _vector(8, ir.F32Type.get())

    def f32_of(chunk):
        return chunk if ir.VectorType(chunk.type).element_type == ir.F32Type.get() \
            else arith.extf(wide, chunk)
    total = f32(0.0)
    for o, do, weight in chunks:
        part = vector.reduction(ir.F32Type.get(), vector.CombiningKind.ADD,
                                arith.mulf(f32_of(o), f32_of(do)))
        if weight is not None:
            part = arith.mulf(part, weight)
        total = arith.addf(total, part)
    return total


def chunk_columns(dv, quarter):
    """(first column, weight) of a thread's 8-column chunks of a row of
    ``dv`` columns: every fourth chunk from ``quarter``, a last chunk past
    Dv clamped into the row and weighted 0 (the weight None where the
    chunk is always inside). A generator: each chunk's index arithmetic is
    emitted when it is taken."""
    chunks = dv // 8
    for t in range(-(-chunks // 4)):
        chunk = _add(quarter, 4 * t)
        weight = None
        if 4 * (t + 1) > chunks:
            weight = arith.select(_cmp("ult", chunk, _idx(chunks)), f32(1.0), f32(0.0))
            chunk = arith.minui(chunk, _idx(chunks - 1))
        yield arith.muli(chunk, _idx(8)), weight


def chunk_sums(dv, quarter, product):
    """The sum of ``product(column)`` (an f32) over a thread's 8-column
    chunks of a row of ``dv`` columns (``chunk_columns``). The delta
    rowsum(dO ∘ O) of both backwards, a quad of threads a row."""
    total = f32(0.0)
    for column, weight in chunk_columns(dv, quarter):
        part = product(column)
        if weight is not None:
            part = arith.mulf(part, weight)
        total = arith.addf(total, part)
    return total


def convert(att, dq_sum):
    """Launch the kernel that writes dq = scale · ``dq_sum``."""
    per_row = att.d // CHUNK
    grid = (-(-att.sq * per_row // THREADS), att.batch * att.heads)

    def body():
        b, h = _block(att)
        at = arith.addi(arith.muli(gpu.block_id(gpu.Dimension.x), _idx(THREADS)),
                        gpu.thread_id(gpu.Dimension.x))
        row = arith.divui(at, _idx(per_row))
        column = arith.muli(arith.remui(at, _idx(per_row)), _idx(CHUNK))

        def write():
            f32_type = ir.F32Type.get()
            x = vector.load(_vector(CHUNK, f32_type), dq_sum, [b, h, row, column], alignment=16)
            scale = vector.broadcast(_vector(CHUNK, f32_type), f32(att.scale))
            x = arith.mulf(x, scale)
            element = ir.MemRefType(att.dq.type).element_type
            if not isinstance(element, ir.F32Type):
                x = arith.truncf(_vector(CHUNK, element), x)
            vector.store(x, att.dq, [b, h, row, column], alignment=16)
        _if(_cmp("ult", row, _idx(att.sq)), write)
    launch(grid, THREADS, 0, body)


def group_sum(att, parts, sums):
    """Launch the kernel that writes dk = scale · the sum over ``parts`` of
    ``sums[0]`` and dv = the sum of ``sums[1]`` (each ``[parts x B, Hk,
    Skv, D or Dv]`` f32, part p's entry b at p B + b), one launch for both:
    grid y runs over B x Hk twice, dK's then dV's."""
    per_row = max(att.d, att.dv) // CHUNK
    grid = (-(-att.skv * per_row // THREADS), 2 * att.batch * att.kv_heads)
    f32_type = ir.F32Type.get()

    def one(buffer, out, width, b, h, row, column, scale):
        def write():
            total = None
            for p in range(parts):
                x = vector.load(_vector(CHUNK, f32_type), buffer,
                                [_add(b, p * att.batch), h, row, column], alignment=16)
                total = x if total is None else arith.addf(total, x)
            if scale is not None:
                total = arith.mulf(total, vector.broadcast(_vector(CHUNK, f32_type), f32(scale)))
            element = ir.MemRefType(out.type).element_type
            if not isinstance(element, ir.F32Type):
                total = arith.truncf(_vector(CHUNK, element), total)
            vector.store(total, out, [b, h, row, column], alignment=16)
        inside = arith.andi(_cmp("ult", row, _idx(att.skv)), _cmp("ult", column, _idx(width)))
        _if(inside, write)

    def body():
        y = gpu.block_id(gpu.Dimension.y)
        heads = att.batch * att.kv_heads
        second = _cmp("uge", y, _idx(heads))
        at_head = arith.remui(y, _idx(heads))
        b, h = arith.divui(at_head, _idx(att.kv_heads)), arith.remui(at_head, _idx(att.kv_heads))
        at = arith.addi(arith.muli(gpu.block_id(gpu.Dimension.x), _idx(THREADS)),
                        gpu.thread_id(gpu.Dimension.x))
        row = arith.divui(at, _idx(per_row))
        column = arith.muli(arith.remui(at, _idx(per_row)), _idx(CHUNK))
        _if(second,
            lambda: one(sums[1], att.dv_grad, att.dv, b, h, row, column, None),
            lambda: one(sums[0], att.dk, att.d, b, h, row, column, att.scale))
    launch(grid, THREADS, 0, body)
