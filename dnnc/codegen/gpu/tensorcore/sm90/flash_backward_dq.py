"""The small launches around tc-sm90's fused attention backward
(flash_backward_fused.py), which sums dQ in an f32 workspace ``dq_sum``
``[B, H, Sq, D]`` where every kv block adds its part:

1. ``Preprocess``, before it: a quad of threads per query row computes
   delta = rowsum(dO ∘ O) (f32, into the ``[B, H, Sq]`` workspace the
   fused kernel reads per step) and zeroes the row of ``dq_sum`` (the
   workspace is not cleared between runs, and each run only adds to it).
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

# Threads a block of either kernel; rows a preprocess block (a quad a row).
THREADS = 128
PRE_ROWS = THREADS // 4
# Columns a thread of the conversion handles.
CHUNK = 8


def _vector(n, element):
    return ir.VectorType.get([n], element)


def _block(att):
    """(batch, head) of the block: grid y runs over B x H."""
    head = gpu.block_id(gpu.Dimension.y)
    return arith.divui(head, _idx(att.heads)), arith.remui(head, _idx(att.heads))


def preprocess(att, delta, dq_sum):
    """Launch the kernel that writes ``delta`` ([B, H, Sq] f32) and zeroes
    ``dq_sum`` ([B, H, Sq, D] f32)."""
    grid = (-(-att.sq // PRE_ROWS), att.batch * att.heads)

    def body():
        tid = gpu.thread_id(gpu.Dimension.x)
        b, h = _block(att)
        row = arith.addi(arith.muli(gpu.block_id(gpu.Dimension.x), _idx(PRE_ROWS)),
                         arith.divui(tid, _idx(4)))
        quarter = arith.remui(tid, _idx(4))
        # Every lane takes part in the quad's exchange: rows past Sq read
        # the last row and write nothing.
        clamped = arith.minui(row, _idx(att.sq - 1))
        total = quad(arith.addf, _partial_delta(att, b, h, clamped, quarter))

        def write():
            _if(_cmp("eq", quarter, _idx(0)),
                lambda: memref.store(total, delta, [b, h, row]))
            zeros = arith.constant(_vector(4, ir.F32Type.get()), ir.DenseElementsAttr.get_splat(
                _vector(4, ir.F32Type.get()), ir.FloatAttr.get(ir.F32Type.get(), 0.0)))
            # The quad's four threads each zero a quarter of the row, 4 f32
            # a store.
            share = att.d // 4
            first = arith.muli(quarter, _idx(share))
            for c in range(0, share, 4):
                vector.store(zeros, dq_sum, [b, h, row, _add(first, c)], alignment=16)
        _if(_cmp("ult", row, _idx(att.sq)), write)
    launch(grid, THREADS, 0, body)


def _partial_delta(att, b, h, row, quarter):
    """The thread's part of rowsum(dO ∘ O) of ``row``: every fourth 8-column
    chunk from ``quarter`` (a weight of 0 where a last chunk is past Dv)."""
    wide = _vector(8, ir.F32Type.get())

    def load(buffer, at):
        element = ir.MemRefType(buffer.type).element_type
        chunk = vector.load(_vector(8, element), buffer, at, alignment=16)
        return chunk if isinstance(element, ir.F32Type) else arith.extf(wide, chunk)

    def product(column):
        at = [b, h, row, column]
        return vector.reduction(ir.F32Type.get(), vector.CombiningKind.ADD,
                                arith.mulf(load(att.o, at), load(att.do, at)))
    return chunk_sums(att.dv, quarter, product)


def chunk_sums(dv, quarter, product):
    """The sum of ``product(column)`` (an f32) over a thread's 8-column
    chunks of a row of ``dv`` columns: every fourth chunk from ``quarter``,
    a last chunk past Dv clamped into the row and weighted 0. The delta
    rowsum(dO ∘ O) of both backwards, a quad of threads a row."""
    chunks = dv // 8
    total = f32(0.0)
    for t in range(-(-chunks // 4)):
        chunk = _add(quarter, 4 * t)
        weight = None
        if 4 * (t + 1) > chunks:
            weight = arith.select(_cmp("ult", chunk, _idx(chunks)), f32(1.0), f32(0.0))
            chunk = arith.minui(chunk, _idx(chunks - 1))
        part = product(arith.muli(chunk, _idx(8)))
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
