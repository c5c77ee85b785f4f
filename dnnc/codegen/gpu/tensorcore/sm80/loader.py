"""tc-sm80's operand loader: how a GEMM operand's tile goes from global memory to a
stage of the ring by cp.async, and how each warp reads its mma.sync fragments
back from the stage (ldmatrix, or scalar loads for tf32 MN-major).

**Operand loader** (``AsyncOperand``). A stage holds an operand's tile as it
lies in memory: K-major (rows of M or N, K contiguous: ``[R][BK]``) or
MN-major (rows of K, M or N contiguous: ``[BK][R]``). Each row is padded by
16 bytes; with a row of a multiple of 32 bytes the pitch is an odd number
of 16-byte units, so the 8 rows an ldmatrix reads (16 bytes each) fall in 8
distinct groups of 4 banks: no bank conflict, no swizzle to undo. Threads
copy the tile in chunks of ``width`` bytes (16: cp.async.cg; 8 or 4:
cp.async.ca, when a row stride or the base offset is not a multiple of 16
bytes), chunk c of thread t being number t + c * threads in row-major order
of the stage; when a line has fewer than 8 chunks of 16 bytes, a warp's 32
chunks are numbered down its lines instead, so that each 8 threads write 8
distinct lines (a bank-conflict-free wavefront at the odd pitch). A chunk
past M, N or K copies 0 bytes (cp.async's src-size) and the hardware fills
its destination with zeros, which the mma then multiplies harmlessly: any
M, N, K. Operands without a unit-stride K or M/N dim are NotSupported.

**Element-wise chunks.** cp.async copies 4, 8 or 16 aligned bytes; rows of a
16-bit operand that start 2 bytes apart (an odd row length: a convolution's
pixels of C = 3 or 63 channels, a filter of K = 65) allow none. Such an
operand (``element_wise``) keeps the stage layout and the chunks of 16 bytes, and
each chunk is loaded element by element into registers (2-byte loads, the
elements past the operand's end zero instead of read) and stored to the
stage as one 16-byte shared store. That is the loader padding the operand:
no padded copy is ever made in memory. The convolution loaders
(im2col.py) and a matmul's (kernel.operand_loaders: an odd K of a K-major
operand, an odd M or N of an MN-major one) take it. The loads are
synchronous where
cp.async is not: ``load`` returns the stores (``pending``) so that the
mainloop issues them after the mma.syncs of the slice it loads under,
which hide the loads' latency; the stage they write is free from the
barrier before (the one every warp passed after reading it).

**Fragments** (PTX ISA, mma.m16n8k16 / m16n8k8; g = lane / 4, t = lane % 4).
Per 32 bytes of K (16 bf16 / f16 or 8 tf32 elements):

    A  16 x 32 bytes: 4 registers, a0 (row g, bytes 4t..4t+3), a1 (row g+8),
       a2 (row g, bytes 16 + 4t..), a3 (row g+8, bytes 16 + 4t..)
    B  32 bytes x 8 columns: 2 registers, b0 (column g, K bytes 4t..), b1
       (column g, K bytes 16 + 4t..)
    C  16 x 8 f32: c0, c1 at (g, 2t), (g, 2t+1); c2, c3 at (g+8, 2t), (g+8, 2t+1)

``ldmatrix.x4`` loads four 8 x 16-byte matrices, lane l giving the address
of row l % 8 of matrix l / 8, and hands thread (g, t) the 4 bytes 4t..4t+3
of row g of each: exactly a0..a3 (matrices: rows 0-7 / 8-15 x bytes 0-15 /
16-31) and the b0, b1 of two adjacent 8-column B tiles. A K-major operand is
read as it is; an MN-major one (16-bit only) with ``.trans``, each matrix
being 8 rows of K by 8 columns. tf32 MN-major operands have no transposing
ldmatrix (it moves 16-bit elements): their fragments are read with scalar
shared loads, thread (g, t) reading line t (or t + 4), column g: its lines
are padded by ``TF32_MN_PAD`` (32) bytes, so that the pitch is 8 words past
a multiple of 32 and the warp's 32 loads fall in banks 8t + g, all
distinct (16 bytes of padding put them in banks 4t + g, where threads g and
g + 4 of neighbouring t collide: two passes a load); A's are read in 64-bit
pairs (``pair``: kernel.py's paired rows), banks 8t + 2g of each half warp,
distinct too. tf32 elements are rounded to nearest even in the stage, as
the linalg level rounds (the tensor cores would truncate): each thread
rounds the chunks it copied once they land (``slots`` says where they are;
kernel.py), before the barrier that shows them to the fragment reads.
"""

from mlir import ir
from mlir.dialects import arith, llvm, memref, nvvm, scf, vector

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.tensorcore.emit import (
    add as _add, cmp as _cmp, i as _i, idx as _idx, if_ as _if, ptr as _ptr, to_i32 as _i32,
    to_i64 as _i64,
)
from dnnc.codegen.gpu.tensorcore.sm80.support import (
    MMA_K_BYTES, PAD, TF32_MN_PAD, WARP, NotSupported, element_bytes,
)


class AsyncOperand:
    """How one GEMM operand goes from global memory to a stage of the ring
    (cp.async), and where its fragments are in the stage (see the module
    docstring). ``rows`` is BM (A) or BN (B); ``element_wise``: rows 2
    bytes apart are loaded element by element (a convolution's loaders ask
    for it), else NotSupported."""

    def __init__(self, name, operand, rows, tile, extent_mn, extent_k, element_wise=False,
                 batch_shape=None):
        self.name, self.operand = name, operand
        # C's batch dims where there are several (gemm.Gemm.batch_shape).
        self.batch_shape = batch_shape
        self.value = operand.value
        self.rows, self.bk = rows, tile.k
        self.eb = element_bytes(operand.element)
        self.extent = {"mn": extent_mn, "k": extent_k}
        shape, strides, offset = irutil.memref_geometry(self.value.type)
        self.strides, self.offset = strides, offset
        self.k_major = operand.k_major
        inner = "k" if self.k_major else "mn"
        if strides[operand.dims[inner]] != 1:
            raise NotSupported(f"{name} has neither K nor {'M' if name == 'A' else 'N'} "
                               f"contiguous (strides {strides}): cp.async copies rows")
        self.inner = inner
        # The widest copy every row start and the base allow; none (rows 2
        # bytes apart): chunks of 16 bytes loaded element by element.
        steps = [s * self.eb for d, s in enumerate(strides) if d != operand.dims[inner]
                 and shape[d] > 1] + [offset * self.eb]
        self.width = next((w for w in (16, 8, 4) if all(x % w == 0 for x in steps)), None)
        if self.width is None and not element_wise:
            raise NotSupported(f"{name}'s rows start {min(x for x in steps if x % 4)} bytes "
                               "apart or in: cp.async copies at least 4 aligned bytes "
                               f"(an even {'K' if self.k_major else 'M or N'} for "
                               f"{operand.element})")
        self.element_wise = self.width is None
        if self.element_wise:
            self.width = 16
        # Shared layout: lines of `line_bytes` (+ PAD), `lines` of them.
        self.lines, line_bytes = (rows, self.bk * self.eb) if self.k_major else \
            (self.bk, rows * self.eb)
        if line_bytes % 32:
            raise NotSupported(f"{name}'s shared rows are {line_bytes} bytes: expected a "
                               "multiple of 32 (tile K a multiple of 16 elements, or 8 for tf32)")
        pad = TF32_MN_PAD if self.eb == 4 and not self.k_major else PAD
        self.pitch = line_bytes + pad
        self.bytes = self.lines * self.pitch
        self.per_line = line_bytes // self.width
        self.chunks = self.lines * self.per_line

    # -- global -> shared ---------------------------------------------------

    def chunk(self, tid, c, threads):
        """(chunk number, line, column in elements along the line, exists: an
        i1, or None where it always does) of this thread's ``c``-th chunk of
        a stage's tile.

        A warp's 32 chunks cover 32 / per_line whole lines. With fewer than
        8 chunks of 16 bytes a line (64-byte K-major rows), numbering them
        row-major puts two lines in each quarter warp (8 threads: one
        128-byte wavefront of shared stores), whose chunks collide in a bank
        group (pitch 5 x 16 bytes: chunk 0 of line 0 and chunk 3 of line 1).
        Numbered down the lines instead, a quarter warp writes one chunk of
        8 consecutive lines, distinct bank groups at an odd pitch; the warp
        still reads the same whole rows of global memory."""
        elems = self.width // self.eb
        down = self.width == 16 and self.per_line < 8 and WARP % self.per_line == 0 \
            and self.chunks % WARP == 0
        lines_per_warp = WARP // self.per_line
        chunk = _add(tid, c * threads)
        if down:
            j = arith.remui(chunk, _idx(WARP))
            line = arith.addi(arith.muli(arith.divui(chunk, _idx(WARP)),
                                         _idx(lines_per_warp)),
                              arith.remui(j, _idx(lines_per_warp)))
            col = arith.muli(arith.divui(j, _idx(lines_per_warp)), _idx(elems))
        else:
            line = arith.divui(chunk, _idx(self.per_line))
            col = arith.muli(arith.remui(chunk, _idx(self.per_line)), _idx(elems))
        exists = None if self.chunks % threads == 0 or (c + 1) * threads <= self.chunks \
            else _cmp("ult", chunk, _idx(self.chunks))
        return chunk, line, col, exists

    def prepare(self, tid, threads, batch, mn0):
        """Per-thread copy plan, before the mainloop: for each of its chunks,
        (shared byte offset in a stage, i64 global byte address at k = 0, row
        coordinate, column coordinate along the line, in-bounds check of the
        coordinate that does not move with K, chunk exists)."""
        dims, st = self.operand.dims, self.strides
        base = _i64(memref.extract_aligned_pointer_as_index(self.value))
        lead = self.offset
        lead_v = self.batch_offset(batch)
        plan = []
        for c in range(-(-self.chunks // threads)):
            chunk, line, col, exists = self.chunk(tid, c, threads)
            # K-major: a line is a row of M/N at mn0 + line, its chunks run
            # along K; MN-major: a line is a row of K, chunks run along M/N
            # from mn0.
            dst = arith.addi(arith.muli(line, _idx(self.pitch)), arith.muli(col, _idx(self.eb)))
            if self.k_major:
                mn, along = arith.addi(mn0, line), col
            else:
                mn, along = arith.addi(mn0, col), line
            # Element offset of (batch, mn, k = the line's/chunk's own K part).
            elem = arith.addi(_add(lead_v, lead), arith.muli(mn, _idx(st[dims["mn"]])))
            elem = arith.addi(elem, arith.muli(along, _idx(st[dims["k"]])))
            address = arith.addi(base, arith.muli(_i64(elem), _i(self.eb, 64)))
            plan.append((_i64(dst), address, base, mn, along, exists))
        return plan

    def slots(self, plan):
        """(shared byte offset in a stage, exists: an i1 or None) of each of
        this thread's chunks in ``plan`` (``prepare``'s): where its copies
        land."""
        return [(chunk[0], chunk[-1]) for chunk in plan]

    def batch_offset(self, batch):
        """The element offset of flat batch ``batch`` (index) in the operand:
        its batch dim's stride times it, or with several batch dims
        (``Operand.batches``: C's ``batch_shape``) each dim's index, the flat
        one unravelled row-major, times its stride; 0 along those it is
        broadcast over."""
        dims, st = self.operand.dims, self.strides
        if self.operand.batches is None:
            if dims["batch"] is None:
                return _idx(0)
            return arith.muli(batch, _idx(st[dims["batch"]]))
        offset, inner = _idx(0), 1
        for dim, size in reversed(list(zip(self.operand.batches, self.batch_shape))):
            if dim is not None and size > 1:
                index = arith.remui(arith.divui(batch, _idx(inner)), _idx(size))
                offset = arith.addi(offset, arith.muli(index, _idx(st[dim])))
            inner *= size
        return offset

    def load(self, plan, stage_i64, k0):
        """Issue this thread's cp.async copies of K step ``k0`` (index: the
        first K element) into the stage at shared address ``stage_i64``;
        returns the shared stores of element-wise chunks still to issue (see
        ``copy``)."""
        k_first, k_step_bytes = self.k_step(k0)
        pending = []
        for dst, address, base, mn, along, exists in plan:
            k = arith.addi(k_first, along)
            # Bytes that lie inside the operand: 0 past M/N or K; a chunk
            # that crosses the end of a line's contiguous dim copies its part.
            if self.k_major:
                left, other_ok = arith.subi(_idx(self.extent["k"]), k), \
                    _cmp("ult", mn, _idx(self.extent["mn"]))
            else:
                left, other_ok = arith.subi(_idx(self.extent["mn"]), mn), \
                    _cmp("ult", k, _idx(self.extent["k"]))
            left_bytes = arith.muli(left, _idx(self.eb))
            size = arith.maxsi(arith.minsi(left_bytes, _idx(self.width)), _idx(0))
            size = arith.select(other_ok, size, _idx(0))
            # Nothing to read: point at the operand's base (never dereferenced).
            src = arith.select(_cmp("sgt", size, _idx(0)),
                               arith.addi(address, k_step_bytes), base)
            pending += self.copy(arith.addi(stage_i64, dst), src, size, exists)
        return pending

    def k_step(self, k0):
        """(the K coordinate the bounds check of K step ``k0`` starts from,
        the i64 byte offset of the step from the plan's addresses): ``k0``
        and ``k0`` times K's stride, for an operand whose K is one dim."""
        stride = self.strides[self.operand.dims["k"]] * self.eb
        return k0, arith.muli(_i64(k0), _i(stride, 64))

    def copy(self, dst_i64, src_i64, size, exists=None):
        """One cp.async of ``width`` bytes from global address ``src_i64`` to
        shared address ``dst_i64``, reading ``size`` (index) bytes of them
        and zero-filling the rest; only where ``exists`` (an i1) holds.
        Returns the stores still to issue: none, or for an element-wise operand
        the chunk's (``element_chunk``)."""
        if self.element_wise:
            return [self.element_chunk(dst_i64, src_i64, size, exists)]
        dst_ptr = llvm.inttoptr(_ptr(3), dst_i64)

        def issue():
            nvvm.CpAsyncOp(dst_ptr, llvm.inttoptr(_ptr(1), src_i64), self.width,
                           ir.Attribute.parse("#nvvm<load_cache_modifier cg>"
                                              if self.width == 16 else
                                              "#nvvm<load_cache_modifier ca>"),
                           cpSize=_i32(size))
        if exists is None:
            issue()
        else:
            _if(exists, issue)
        return []

    def element_chunk(self, dst_i64, src_i64, size, exists=None):
        """A chunk of an element-wise operand: its elements loaded now, 2
        bytes each, the ones at or past ``size`` bytes zero (their load
        reads the chunk's first element, which lies inside wherever
        ``size`` > 0, and else ``src_i64`` is the operand's base). Returns
        a function that stores them to ``dst_i64`` (``element_gather``)."""
        pieces = []
        for j in range(self.width // 2):
            inside = _cmp("sgt", size, _idx(2 * j)) if j else None
            pieces.append((_add(src_i64, 2 * j), inside))
        return self.element_gather(dst_i64, src_i64, pieces, exists,
                                   _cmp("sgt", size, _idx(0)))

    def element_gather(self, dst_i64, safe_i64, pieces, exists=None, any_=None):
        """Load a chunk's 2-byte elements from ``pieces`` ((i64 address,
        i1 or None: whether to read it) each), zero where not read (their
        load reads ``safe_i64`` instead, an address inside the operand);
        ``any_``: an i1 that holds where some piece is read (their loads
        are skipped where it does not: a chunk past C, past M or in the
        padding, which C = 3's K steps are mostly), the pieces' own i1s
        then read only where it does. Returns a function that stores them
        to shared ``dst_i64`` as one 16-byte vector, where ``exists`` holds.
        A chunk that does not exist loads all the same: its addresses are
        checked like any other's."""
        i16, i32 = ir.IntegerType.get_signless(16), ir.IntegerType.get_signless(32)

        def load():
            elements = []
            for address, ok in pieces:
                if ok is not None:
                    address = arith.select(ok, address, safe_i64)
                value = llvm.load(i16, llvm.inttoptr(_ptr(1), address))
                elements.append(value if ok is None else arith.select(ok, value, _i(0, 16)))
            # Packed in pairs at once: a word per two elements is what
            # stays live until the store (half the registers of one per
            # element).
            return [arith.ori(arith.extui(i32, lo), arith.shli(arith.extui(i32, hi), _i(16)))
                    for lo, hi in zip(elements[0::2], elements[1::2])]

        if any_ is None:
            words = load()
        else:
            branch = scf.IfOp(any_, [i32] * (len(pieces) // 2), has_else=True)
            with ir.InsertionPoint(branch.then_block):
                scf.YieldOp(load())
            with ir.InsertionPoint(branch.else_block):
                zero = _i(0)
                scf.YieldOp([zero] * (len(pieces) // 2))
            words = list(branch.results)

        def store():
            vec = vector.from_elements(ir.VectorType.get([len(words)], i32), words)
            dst = llvm.inttoptr(_ptr(3), dst_i64)
            if exists is None:
                llvm.store(vec, dst, alignment=16)
            else:
                _if(exists, lambda: llvm.store(vec, dst, alignment=16))
        return store

    # -- shared -> registers ------------------------------------------------

    def lane_offset(self, lane, first_row, fragment_rows):
        """Byte offset in a stage of the row this lane gives ldmatrix.x4 for
        the fragments at M/N row ``first_row`` (the warp's first), K slice 0.
        Matrix i = lane / 8 (row r = lane % 8) is, for A (``fragment_rows``
        = "a"), rows 8 (i % 2) of K bytes 16 (i / 2); for B ("b"), rows 8 (i
        / 2) (the second 8-column tile) of K bytes 16 (i % 2)."""
        i, r = arith.divui(lane, _idx(8)), arith.remui(lane, _idx(8))
        if fragment_rows == "a":
            mn_part, k_part = arith.remui(i, _idx(2)), arith.divui(i, _idx(2))
        else:
            mn_part, k_part = arith.divui(i, _idx(2)), arith.remui(i, _idx(2))
        if self.k_major:
            # [R][BK]: row = first + 8 mn_part + r, bytes 16 k_part along K.
            row = arith.addi(_idx(first_row) if isinstance(first_row, int) else first_row,
                             arith.addi(arith.muli(mn_part, _idx(8)), r))
            return arith.addi(arith.muli(row, _idx(self.pitch)), arith.muli(k_part, _idx(16)))
        # [BK][R] read with .trans: line (K) = 8 k_part + r, columns from
        # first + 8 mn_part.
        line = arith.addi(arith.muli(k_part, _idx(8)), r)
        column = arith.addi(first_row, arith.muli(mn_part, _idx(8)))
        return arith.addi(arith.muli(line, _idx(self.pitch)),
                          arith.muli(column, _idx(self.eb)))

    def ldmatrix(self, stage_i64, lane_off, kk, block):
        """The 4 registers (i32) of ldmatrix.x4 at K slice ``kk`` and
        fragment block ``block`` (16 rows of M/N further per block)."""
        if self.k_major:
            const = block * 16 * self.pitch + kk * MMA_K_BYTES
        else:
            const = kk * (MMA_K_BYTES // self.eb) * self.pitch + block * 16 * self.eb
        address = _add(arith.addi(stage_i64, lane_off), const)
        i32 = ir.IntegerType.get_signless(32)
        struct = ir.Type.parse("!llvm.struct<(i32, i32, i32, i32)>")
        layout = "#nvvm.mma_layout<row>" if self.k_major else "#nvvm.mma_layout<col>"
        got = nvvm.LdMatrixOp(struct, llvm.inttoptr(_ptr(3), address), 4,
                              ir.Attribute.parse(layout),
                              ir.Attribute.parse("#nvvm.ld_st_matrix_shape<m = 8, n = 8>"),
                              ir.Attribute.parse("#nvvm.ld_st_matrix_elt_type<b16>")).result
        return [llvm.extractvalue(i32, got, ir.DenseI64ArrayAttr.get([j])) for j in range(4)]

    def scalar_offset(self, g, t, first):
        """tf32 MN-major: byte offset in a stage of (K line t, M/N column
        ``first`` + g), the first register of a fragment."""
        return arith.addi(arith.muli(t, _idx(self.pitch)),
                          arith.muli(arith.addi(first, g), _idx(self.eb)))

    def pair(self, stage_i64, offset, const):
        """Two 32-bit words at ``offset`` + ``const`` bytes, one 64-bit
        shared load."""
        address = _add(arith.addi(stage_i64, offset), const)
        i32 = ir.IntegerType.get_signless(32)
        got = llvm.load(ir.VectorType.get([2], i32), llvm.inttoptr(_ptr(3), address),
                        alignment=8)
        return [vector.extract(got, [], [j]) for j in range(2)]

    def scalar(self, stage_i64, offset, const):
        """One 32-bit shared load at ``offset`` + ``const`` bytes."""
        address = _add(arith.addi(stage_i64, offset), const)
        return llvm.load(ir.IntegerType.get_signless(32), llvm.inttoptr(_ptr(3), address))