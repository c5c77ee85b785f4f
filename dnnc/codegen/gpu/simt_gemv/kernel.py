"""A simt-gemv kernel: the outputs of a matmul whose small side has R <= 8
rows (support.Sides: X, R x K, the small operand; W, L x K, the long one),
a block per ``columns`` outputs of L and per batch, ``split`` threads of
the block sharing each output's K (S below), loads of ``vector`` (V)
elements along W's contiguous dim, ``unroll`` (U) K iterations a time::

    K-major W (K contiguous)           MN-major W (L contiguous)
    lane group of S per column,        LC = threads / S lanes across L
    threads / S columns a block        (V columns each), S groups down K

    1. mainloop   for each chunk of U iterations of the thread's K:
                    issue the U loads of W (V elements each) and of X's
                    R rows at the same K, 0 past K (clamped, selected)
                    then the FFMAs, in order of K: R partial sums (R x V
                    for an MN-major W)
    2. sum        K-major: XOR shuffles over the S lanes (every lane
                  ends with the same sums: IEEE addition commutes), lane
                  s storing rows r = s mod S; MN-major: the partials
                  through shared memory, barrier, then each output's S
                  partials added in group order by one thread, neighbours
                  taking neighbouring columns
    3. epilogue   the fused pointwise chain on each output, stored where
                  its column lies inside L

The loads of W are coalesced: a K-major row's K is read by S neighbouring
lanes 16 bytes each where K allows (S x 16 bytes of one row a warp
instruction), an MN-major row of K by neighbouring lanes along L. X is
R x K, a few KB at most, and read by every block from L1/L2. Each
output is the f32 sum of its products in a fixed order (each thread's in
order of K, then the fixed shuffle tree or group order): the same on
every run.
"""

from mlir import ir
from mlir.dialects import arith, gpu, llvm, memref, scf, vector

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.math.scalar import intrinsic
from dnnc.codegen.gpu.simt_gemv.support import (
    WARP, columns_of, contiguous_width, shared_bytes, sides_of,
)
from dnnc.codegen.gpu.tensorcore.emit import (
    erase_replaced, i as _i, idx as _idx, if_ as _if, launch, ptr as _ptr, shared_base,
    to_i64 as _i64,
)
from dnnc.codegen.gpu.tensorcore.pair_epilogue import PairEpilogue
from dnnc.codegen.linalg.contraction import round_tf32


def _ceil(a, b):
    return -(-a // b)


class _Reader:
    """Loads of one operand's elements (mn, k) in batch ``batch``, as f32:
    16-bit types widened, rounded to tf32 where the GEMM multiplies so."""

    def __init__(self, operand, batch, tf32):
        self.operand, self.tf32 = operand, tf32
        t = ir.MemRefType(operand.value.type)
        self.rank, self.element = t.rank, t.element_type
        self.bytes = irutil.element_bytes(self.element)
        self.batch = batch
        self.shape, self.strides, self.offset = irutil.memref_geometry(t)
        self.base = None

    def prepare_vectors(self):
        """The buffer's i64 address, made once at the top of the kernel."""
        self.base = _i64(memref.extract_aligned_pointer_as_index(self.operand.value))

    def _indices(self, mn, k):
        dims = self.operand.dims
        out = [_idx(0)] * self.rank
        out[dims["mn"]] = mn
        out[dims["k"]] = k
        if dims["batch"] is not None:
            out[dims["batch"]] = self.batch
        return out

    def _f32(self, values):
        out = []
        for v in values:
            if str(v.type) != "f32":
                v = arith.extf(ir.F32Type.get(), v)
            out.append(round_tf32(v) if self.tf32 else v)
        return out

    def scalar(self, mn, k):
        """The element at (``mn``, ``k``)."""
        return self._f32([memref.load(self.operand.value, self._indices(mn, k))])[0]

    def vector(self, mn, k, width):
        """``width`` elements along the buffer's contiguous dim from
        (``mn``, ``k``): one aligned load through the buffer's address
        (vector.load takes vectors along a memref's last dim only)."""
        if width == 1:
            return [self.scalar(mn, k)]
        element = _idx(self.offset)
        for index, stride in zip(self._indices(mn, k), self.strides):
            element = arith.addi(element, arith.muli(index, _idx(stride)))
        address = arith.addi(self.base, arith.muli(_i64(element), _i(self.bytes, 64)))
        vt = ir.VectorType.get([width], self.element)
        v = llvm.load(vt, llvm.inttoptr(_ptr(1), address), alignment=width * self.bytes)
        if str(self.element) != "f32":
            v = arith.extf(ir.VectorType.get([width], ir.F32Type.get()), v)
        return self._f32([vector.extract(v, [], [e]) for e in range(width)])


class Kernel:
    """The simt-gemv kernel of ``gemm`` with ``skinny`` (support.Skinny),
    replacing kernel function ``fn``'s body."""

    def __init__(self, fn, gemm, skinny):
        self.fn, self.gemm, self.skinny = fn, gemm, skinny
        self.side = sides_of(gemm)
        self.columns = columns_of(gemm, skinny)
        self.blocks = _ceil(self.side.length, self.columns)
        self.arguments = list(irutil.body(fn).arguments)
        self.zero = None

    def build(self):
        """Replace the kernel function's body by the launch, then erase the
        linalg ops the kernel computes."""
        body = irutil.body(self.fn)
        old = [op.operation for op in body.operations]
        with ir.InsertionPoint(old[-1]):
            self.epilogue = PairEpilogue(self.gemm, self.arguments)
            launch((self.blocks, self.gemm.batch), self.skinny.threads,
                   shared_bytes(self.gemm, self.skinny), self.kernel)
        erase_replaced(old[:-1])

    def kernel(self):
        """The body of a block."""
        gemm, side, sk = self.gemm, self.side, self.skinny
        tf32 = gemm.compute == "tf32"
        self.zero = arith.constant(ir.F32Type.get(), 0.0)
        tid = gpu.thread_id(gpu.Dimension.x)
        block = gpu.block_id(gpu.Dimension.x)
        batch = gpu.block_id(gpu.Dimension.y)
        x = _Reader(side.x, batch, tf32)
        w = _Reader(side.w, batch, tf32)
        if sk.vector > 1:
            w.prepare_vectors()
        first = arith.muli(block, _idx(self.columns))
        if side.w_k_major:
            self._k_major(tid, first, batch, x, w)
        else:
            self._mn_major(tid, first, batch, x, w)

    # -- 1. the mainloop ---------------------------------------------------------------

    def _mainloop(self, group, per_iteration, along_k, load):
        """This thread's partial sums over its K: chunk c's iteration u
        starts at K ``group`` + ``per_iteration`` (U c + u); ``load(k)``
        returns (X's values [R][V], W's [V]) there. ``along_k``: W's V
        elements are V successive K of one column (R sums, X's rows read
        at the same K), else V columns at one K (R x V sums, X's rows one
        value each). A K past the end is clamped and its values selected
        to 0."""
        gemm, sk, rows, v = self.gemm, self.skinny, self.side.rows, self.skinny.vector
        chunk = per_iteration * sk.unroll
        chunks = _ceil(_ceil(gemm.k, per_iteration), sk.unroll)
        guarded = gemm.k % chunk != 0
        # The last K a load may start at: a vector along K starts V before
        # the end (K is a multiple of V then).
        last = gemm.k - (v if along_k else 1)
        count = rows if along_k else rows * v
        loop = scf.ForOp(_idx(0), _idx(chunks), _idx(1), [self.zero] * count)
        with ir.InsertionPoint(loop.body):
            accs = list(loop.inner_iter_args)
            start = arith.addi(arith.muli(loop.induction_variable, _idx(chunk)), group)
            # Every load of the chunk first: U x (1 + R) in flight.
            loaded = []
            for u in range(sk.unroll):
                k = arith.addi(start, _idx(u * per_iteration)) if u else start
                k_safe = arith.minui(k, _idx(last)) if guarded else k
                xs, ws = load(k_safe)
                if guarded:
                    ok = arith.cmpi(arith.CmpIPredicate.ult, k, _idx(gemm.k))
                    xs = [[arith.select(ok, e, self.zero) for e in row] for row in xs]
                    ws = [arith.select(ok, e, self.zero) for e in ws]
                loaded.append((xs, ws))
            # Then the FFMAs, each sum's in order of K.
            for xs, ws in loaded:
                for e in range(v):
                    for r in range(rows):
                        if along_k:
                            accs[r] = intrinsic("llvm.fma.f32", xs[r][e], ws[e], accs[r])
                        else:
                            at = r * v + e
                            accs[at] = intrinsic("llvm.fma.f32", xs[r][0], ws[e], accs[at])
            scf.YieldOp(accs)
        return list(loop.results)

    # -- K-major W: a lane group per column, shuffles --------------------------------

    def _k_major(self, tid, first, batch, x, w):
        """A K-major W: ``split`` neighbouring lanes per column of L (from
        ``first``), each reading ``vector`` successive K; their sums added
        by XOR shuffles; lane r mod split stores row r."""
        side, sk = self.side, self.skinny
        s, v = sk.split, sk.vector
        lane = arith.remui(tid, _idx(s)) if s > 1 else _idx(0)
        column = arith.addi(first, arith.divui(tid, _idx(s)) if s > 1 else tid)
        full = side.length % self.columns == 0
        safe = column if full else arith.minui(column, _idx(side.length - 1))
        # X read as W is where its K is contiguous enough, else element by
        # element at the same K.
        x_bytes = irutil.element_bytes(ir.MemRefType(side.x.value.type).element_type)
        x_vector = v > 1 and contiguous_width(side.x, side.x.dims["k"], x_bytes) >= v
        if x_vector:
            x.prepare_vectors()

        def load(k):
            ws = w.vector(safe, k, v)
            if x_vector:
                xs = [x.vector(_idx(r), k, v) for r in range(side.rows)]
            else:
                xs = [[x.scalar(_idx(r), arith.addi(k, _idx(e)) if e else k) for e in range(v)]
                      for r in range(side.rows)]
            return xs, ws

        group = arith.muli(lane, _idx(v)) if v > 1 else lane
        sums = self._mainloop(group, s * v, True, load)

        # 2. The lane group's sums, by XOR shuffles (all S lanes in one warp).
        i32 = ir.IntegerType.get_signless(32)
        offset = s // 2
        while offset:
            sums = [arith.addf(value, gpu.ShuffleOp(
                value, arith.constant(i32, offset), arith.constant(i32, WARP),
                gpu.ShuffleMode.XOR).results[0]) for value in sums]
            offset //= 2

        # 3. Lane r mod S stores row r.
        inside = None if full else arith.cmpi(arith.CmpIPredicate.ult, column, _idx(side.length))
        for r, value in enumerate(sums):
            ok = inside
            if s > 1:
                mine = arith.cmpi(arith.CmpIPredicate.eq, lane, _idx(r % s))
                ok = mine if ok is None else arith.andi(ok, mine)
            self._store(value, batch, r, column, ok)

    # -- MN-major W: lanes across L, groups down K, shared memory --------------------

    def _mn_major(self, tid, first, batch, x, w):
        """An MN-major W: lanes across L (``vector`` columns each, from
        ``first``), ``split`` groups of them down K, interleaved; their
        partials added in group order through shared memory."""
        side, sk = self.side, self.skinny
        s, v, rows = sk.split, sk.vector, side.rows
        lanes = sk.threads // s
        lc = arith.remui(tid, _idx(lanes)) if s > 1 else tid
        group = arith.divui(tid, _idx(lanes)) if s > 1 else _idx(0)
        local = arith.muli(lc, _idx(v)) if v > 1 else lc
        column = arith.addi(first, local)
        full = side.length % self.columns == 0
        # L is a multiple of V: a vector lies inside L or past it.
        safe = column if full else arith.minui(column, _idx(side.length - v))

        def load(k):
            return [[x.scalar(_idx(r), k)] for r in range(rows)], w.vector(safe, k, v)

        partial = self._mainloop(group, s, False, load)
        if s == 1:
            inside = None if full else \
                arith.cmpi(arith.CmpIPredicate.ult, column, _idx(side.length))
            for r in range(rows):
                for e in range(v):
                    col = arith.addi(column, _idx(e)) if e else column
                    self._store(partial[r * v + e], batch, r, col, inside)
            return

        # 2. Partials at float ((group R + r) columns + local + e), then each
        #    output's S partials added in group order.
        base = shared_base()
        f32 = ir.F32Type.get()
        for r in range(rows):
            at = arith.addi(arith.muli(arith.addi(arith.muli(group, _idx(rows)), _idx(r)),
                                       _idx(self.columns)), local)
            address = arith.addi(base, arith.muli(_i64(at), _i(4, 64)))
            values = partial[r * v:(r + 1) * v]
            if v == 1:
                llvm.store(values[0], llvm.inttoptr(_ptr(3), address), alignment=4)
            else:
                vec = vector.from_elements(ir.VectorType.get([v], f32), values)
                llvm.store(vec, llvm.inttoptr(_ptr(3), address), alignment=4 * v)
        gpu.barrier()
        outputs = rows * self.columns
        for j in range(_ceil(outputs, sk.threads)):
            o = arith.addi(tid, _idx(sk.threads * j)) if j else tid

            def emit(o=o):
                r = arith.divui(o, _idx(self.columns))
                c = arith.remui(o, _idx(self.columns))
                value = None
                for g in range(s):
                    at = arith.addi(arith.muli(arith.addi(r, _idx(g * rows)),
                                               _idx(self.columns)), c)
                    address = arith.addi(base, arith.muli(_i64(at), _i(4, 64)))
                    part = llvm.load(f32, llvm.inttoptr(_ptr(3), address), alignment=4)
                    value = part if value is None else arith.addf(value, part)
                col = arith.addi(first, c)
                inside = None if full else \
                    arith.cmpi(arith.CmpIPredicate.ult, col, _idx(side.length))
                self._store(value, batch, r, col, inside)
            if outputs % sk.threads and j == outputs // sk.threads:
                _if(arith.cmpi(arith.CmpIPredicate.ult, o, _idx(outputs)), emit)
            else:
                emit()

    # -- 3. the epilogue ---------------------------------------------------------------

    def _store(self, value, batch, r, column, ok):
        """Output (row ``r`` of the small side, ``column`` of L) through the
        fused chain, stored where ``ok`` holds (None: always)."""
        row = _idx(r) if isinstance(r, int) else r
        m, n = (column, row) if self.side.swapped else (row, column)

        def emit():
            point = self.epilogue.point(batch, m, n)
            env = self.epilogue.evaluate(value, point)
            for buffer in self.epilogue.stored:
                memref.store(env[buffer], buffer, point)
        if ok is None:
            emit()
        else:
            _if(ok, emit)
