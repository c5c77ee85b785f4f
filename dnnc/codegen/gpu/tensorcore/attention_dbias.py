"""dBias of the tensor-core attention backwards' two kernels (tc-sm90:
sm90/flash_backward.py, tc-sm80: sm80/flash_backward.py): the gradient of
an additive bias, which the bias enters after the scale, so it is dS = P ∘
(dP - delta) itself (0 where masked), summed over the dims the bias
broadcasts on.

The dQ kernel is the one to write it: it forms dS for each step with rows
the query rows and columns the kv rows, the bias's own layout, where each
thread holds pairs of adjacent columns in two rows (wgmma's accumulators
and mma.sync's m16n8 tiles alike: ``position``); the dK dV kernel holds
dSᵀ, whose stores would stride over the bias's rows. Each dS element of a
(batch, head) is formed once, by one thread, in that kernel.

1. A whole bias ``[B, H, Sq, Skv]`` whose Sq and Skv are whole dQ blocks
   and steps (``rows`` query rows, ``n`` kv rows), its column pairs
   aligned (``direct``): the dQ kernel writes each step's dS into dbias
   where it lies, two columns a store, converted to dbias's type (in q's
   type, on tc-sm90, the pairs it already rounded for dQ += dS K).
2. Otherwise (a bias broadcast over any dim: cuDNN's ``[1, H, Sq, Skv]``,
   ``[B, 1, Sq, Skv]``, rows or columns too; or a whole one of other
   sizes): the dQ kernel writes f32 partials, one slice per (batch, head),
   into a workspace ``[B, H, Sq', Skv']`` (Sq and Skv rounded up to whole
   blocks and steps), and a second launch (``BiasGradient.sum``) sums
   them: one thread per dbias element adds its partials in f32 in a fixed
   order (nested loops over the summed dims, batch outermost), and rounds
   once (over no dim: a conversion). Two runs write the same bits.

   The padding is what keeps the dQ kernel's stores unchecked: checked
   against Sq and Skv (a branch a column pair), they made ptxas spill
   tc-sm90's D 128 dQ kernel (148 bytes with a causal mask), where
   unchecked ones leave it as it was.

   Why a workspace and not a loop over the broadcast dim inside a block: a
   dQ block holds one (batch, head)'s query rows with Q and dO resident;
   looping over the batch would reload them per entry and divide the grid
   by B, and a sum across blocks without atomics needs an order, which the
   second launch gives. The price is the workspace, B x H x Sq' x Skv'
   f32 (the score matrix's size, as FlashAttention's dbias materializes
   it), and its traffic: written once, read once.

The dQ kernel visits only the kv tiles its rows see (causal, a window,
padding): ahead of its steps each thread writes zeros at its rows' columns
of the tiles it skips, so every element of dbias (or of a partial) is
written by the kernel, and masked scores get 0 as the reference's do.
"""

import math

from mlir import ir
from mlir.dialects import arith, gpu, llvm, memref, vector

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.tensorcore.emit import (
    add as _add, cmp as _cmp, f32, for_ as _for, idx as _idx, if_ as _if, launch,
)

# dbias's element types (what the bias may be: the kernels' checks).
ELEMENTS = ("bf16", "f16", "f32")
# Threads a block of the summing launch.
SUM_THREADS = 128


def refusal(att):
    """Why BiasGradient does not write ``att``'s dbias, or None (each
    strategy raises its own NotSupported with it)."""
    kind = str(ir.MemRefType(att.dbias.type).element_type)
    if kind not in ELEMENTS:
        return f"a {kind} dbias: expected {', '.join(ELEMENTS)}"
    shape = list(ir.MemRefType(att.dbias.type).shape)
    if math.prod(shape[:2]) > 65535:
        return f"dbias {shape}: the summing launch's grid y (its B x H) over 65535"
    return None


class BiasGradient:
    """Where the dQ kernel writes dS for ``att.dbias`` (module docstring):
    dbias itself, or (``summed`` dims) an f32 workspace of partials that
    ``sum`` adds up. Make it where the backward's launches are emitted (the
    workspace is allocated there), after the kernel's check has called
    ``refusal``. ``position(e)``: (which of the thread's two rows, column
    less the thread's first) of accumulator value e."""

    def __init__(self, att, rows, n, position):
        self.att = att
        self.position = position
        shape = list(ir.MemRefType(att.dbias.type).shape)
        full = (att.batch, att.heads, att.sq, att.skv)
        self.shape = shape
        self.summed = tuple(d for d, (size, whole) in enumerate(zip(shape, full))
                            if size != whole)
        self.element = ir.MemRefType(att.dbias.type).element_type
        # Direct: every store of the dQ kernel's blocks (``rows`` query rows)
        # and steps (``n`` kv rows) lands inside dbias, two columns aligned.
        self.direct = not self.summed and att.sq % rows == 0 and att.skv % n == 0 \
            and _pairs_aligned(att.dbias)
        if self.direct:
            self.target = att.dbias
        else:
            # Rows and columns padded to whole blocks and steps: the dQ
            # kernel stores every value of a step, unchecked.
            self.target = memref.alloc(ir.MemRefType.get(
                [att.batch, att.heads, -(-att.sq // rows) * rows, -(-att.skv // n) * n],
                ir.F32Type.get()), [], [])
        self.wide = not self.direct or isinstance(self.element, ir.F32Type)

    @property
    def note(self):
        """What the plan says of it."""
        if self.direct:
            return "dbias = dS written by the dQ kernel"
        if not self.summed:
            return ("dbias = dS: f32 into a workspace by the dQ kernel (Sq, Skv not whole "
                    "blocks and steps, or dbias's column pairs unaligned), converted by a "
                    "second launch")
        dims = ", ".join(("B", "H", "Sq", "Skv")[d] for d in self.summed)
        return (f"dbias = dS summed over {dims}: f32 partials per (batch, head) into a "
                f"workspace by the dQ kernel, then summed in order by a second launch")

    # -- in the dQ kernel ------------------------------------------------------------------

    def write(self, b, h, rows, first, e, lo, hi, frag):
        """Write the pair of dS values ``e`` and ``e + 1`` (accumulator order,
        e even) of a step: f32 ``lo`` and ``hi`` (``frag`` the same rounded
        to q's type as one i32, or None), at the query row of ``rows`` (the
        thread's two) and the kv column from ``first`` (the step's first
        column plus the thread's) that ``position(e)`` gives."""
        if self.wide:
            element = ir.F32Type.get() if not self.direct else self.element
            value = vector.from_elements(ir.VectorType.get([2], element), [lo, hi])
        else:
            pair_type = ir.VectorType.get([2], self.element)
            if frag is not None and str(self.element) == self.att.element:
                value = llvm.bitcast(pair_type, frag)
            else:
                value = vector.from_elements(pair_type, [arith.truncf(self.element, x)
                                                         for x in (lo, hi)])
        row, column = self.position(e)
        vector.store(value, self.target, [b, h, rows[row], _add(first, column)],
                     alignment=8 if self.wide else 4)

    def zero_skipped(self, b, h, rows, column, start, steps, n):
        """Zeros at the thread's rows' columns of the kv tiles (of ``n``
        columns) before ``start`` and from ``start + steps`` on: those the
        block's rows do not see, whose dS is 0."""
        zero = f32(0.0)
        tiles = -(-self.att.skv // n)

        def tile(t):
            first = arith.addi(arith.muli(t, _idx(n)), column)
            for e in range(0, n // 2, 2):
                self.write(b, h, rows, first, e, zero, zero, None)
            return []
        _for(_idx(0), start, tile)
        _for(arith.addi(start, steps), _idx(tiles), tile)

    # -- the summing launch ------------------------------------------------------------------

    def sum(self):
        """Launch the kernel that writes dbias = the sum of the partials over
        the summed dims (none: a conversion), a thread per element, in
        order; nothing where the dQ kernel wrote dbias itself."""
        if self.direct:
            return
        att, shape = self.att, self.shape
        full = (att.batch, att.heads, att.sq, att.skv)
        plane = shape[2] * shape[3]
        grid = (-(-plane // SUM_THREADS), shape[0] * shape[1])

        def body():
            tid = gpu.thread_id(gpu.Dimension.x)
            slice_ = gpu.block_id(gpu.Dimension.y)
            at = arith.addi(arith.muli(gpu.block_id(gpu.Dimension.x), _idx(SUM_THREADS)), tid)
            out = [arith.divui(slice_, _idx(shape[1])), arith.remui(slice_, _idx(shape[1])),
                   arith.divui(at, _idx(shape[3])), arith.remui(at, _idx(shape[3]))]

            def add_over(dim, index):
                """The partials' sum over dims ``dim``.. at ``index`` (the
                dims before fixed): nested loops over the summed dims."""
                if dim == 4:
                    return memref.load(self.target, index)
                if dim not in self.summed:
                    return add_over(dim + 1, index + [out[dim]])

                def step(i, total):
                    return [arith.addf(total, add_over(dim + 1, index + [i]))]
                return _for(_idx(0), _idx(full[dim]), step, [f32(0.0)]).results[0]

            def write():
                total = add_over(0, [])
                if not isinstance(self.element, ir.F32Type):
                    total = arith.truncf(self.element, total)
                memref.store(total, att.dbias, out)
            _if(_cmp("ult", at, _idx(plane)), write)
        launch(grid, SUM_THREADS, 0, body)


def _pairs_aligned(buffer):
    """Whether two adjacent columns of ``buffer`` (``[B, H, Sq, Skv]``) from
    an even column are one aligned store: the columns contiguous, the other
    strides and the offset even."""
    shape, strides, offset = irutil.memref_geometry(buffer.type)
    if strides[3] != 1 and shape[3] > 1:
        return False
    return offset % 2 == 0 and all(s % 2 == 0 for n, s in zip(shape[:3], strides[:3]) if n > 1)
