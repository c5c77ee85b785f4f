"""A GEMM's pointwise epilogue evaluated where the accumulators lie: at two
adjacent columns of one row of C, in registers.

The mma.sync accumulator fragment (and wgmma's, per 8 columns) gives each
thread pairs ``(row, col)``, ``(row, col + 1)`` with ``col`` even. For such a
pair ``PairEpilogue.apply`` reads the epilogue's inputs (a bias row, a
residual...) at the same coordinates through their broadcast maps, with one
aligned 2-element load where the input's rows have an even length, runs the
fused chain (``gemm.Epilogue``: the elementwise generics after the
contraction, cloned on f32 scalars) and stores every output the kernel must
store, as one aligned 2-element vector when N is even, else element by
element. Rows past M and columns past N are computed on clamped coordinates
(no load leaves its buffer) and not stored.

Where the epilogue maps a buffer to a pixel view (``gemm.Epilogue.pixels``:
a strided data gradient's stride phase, tensorcore/phases.py), every load
and store of it goes through ``at``, which splits C's row into the pixel's
coordinates.

A kernel that computes ``Cᵀ = Bᵀ Aᵀ`` (``transposed``: its rows are C's
columns) evaluates the same chain at C's own indices, reads every input as
a scalar and stores element by element (``store_transposed``): its pairs
run down a column of C.

Both tensor-core kernels hold an accumulator row's pairs spread over a
quad of threads (lane % 4 = q: columns 8 i + 2 q, 8 i + 2 q + 1 of each 8):
where every stored output has 2-byte elements and N is a multiple of 8,
``store_quad`` exchanges 4 such pairs within the quad (``quad_transpose``,
4 shuffles) so that each thread stores 8 consecutive columns as one 16-byte
vector, and a warp instruction writes whole 32-byte sectors.

Used by the tc-sm80 kernel (dnnc/codegen/gpu/tensorcore/sm80/), whose epilogue is
``evaluate_pair`` then ``store_quad`` or ``store`` (``apply``: both), and the
tc-sm90 kernel (dnnc/codegen/gpu/tensorcore/sm90/), which reads its input pairs
ahead (``load_pairs``) and stores 16-byte groups. ``evaluate`` (the chain at
one point) and ``store_lanes`` (a vector of lanes, aligned to its size) also
serve the window kernels (dnnc/codegen/gpu/window/forward.py).
"""

from mlir import ir
from mlir.dialects import arith, gpu, memref, vector

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.elementwise.vectorize import clone_body
from dnnc.codegen.gpu.tensorcore.emit import idx as _idx, if_ as _if


def at(pixels, buffer, indices):
    """(the memref, its indices) that C's ``indices`` ([batch,] row, col) of
    ``buffer`` address: ``buffer`` itself, or where ``pixels`` (a
    gemm.Epilogue's) maps it to a pixel view, that view at the row (and,
    where the entry gives column or batch radices, the column and the
    batch) split into its coordinates: a stride phase's rows are pixels of dx that are not one
    stride apart (tensorcore/phases.py), and an operand broadcast along some
    of the output's pixel or channel dims has no one stride along them
    (conv_views.py)."""
    if not pixels or buffer not in pixels:
        return buffer, indices
    view, rows, *more = pixels[buffer]
    cols, batches = (list(more) + [None, None])[:2]
    *lead, row, col = indices
    if batches and lead:
        # (One batch index: a convolution's groups, or a filter gradient's taps.)
        lead = split_index(lead[0], batches)
    return view, lead + split_index(row, rows) + split_index(col, cols)


def split_index(index, radices):
    """``index`` as coordinates of ``radices`` (sizes, outermost first; the
    outermost coordinate is what is left); [index] without radices."""
    if not radices:
        return [index]
    coords = []
    for size in reversed(radices[1:]):
        coords.append(arith.remui(index, _idx(size)) if size != 1 else _idx(0))
        index = arith.divui(index, _idx(size)) if size != 1 else index
    return [index] + coords[::-1]


def vector_ok(pixels, buffer, width):
    """Whether ``width`` consecutive elements of a row of ``buffer`` from a
    column that is a multiple of ``width`` are one vector aligned to its
    size in the memref ``at`` addresses: a unit stride along the innermost
    dim, whose length ``width`` divides, and every other stride and the
    offset multiples of ``width``."""
    target = pixels[buffer][0] if pixels and buffer in pixels else buffer
    shape, strides, offset = irutil.memref_geometry(target.type)
    if shape[-1] % width or strides[-1] != 1:
        return False
    return offset % width == 0 and all(s % width == 0 for s, n in zip(strides[:-1], shape[:-1])
                                       if n != 1)


def evaluate(accumulator, steps, value, point, loaded=None, index_of=None, pixels=None):
    """{buffer: value} of every buffer the elementwise ``steps`` write, run on
    ``value``, the scalar of ``accumulator`` at ``point`` (its indices).
    Another input is taken from ``loaded`` ({buffer: value} already read
    there) or read with a scalar load through its broadcast exprs (through
    ``pixels``' views: ``at``); ``index_of(dim)`` answers a step's
    linalg.index (None: none reads one)."""
    env = {accumulator: value}
    for step in steps:
        args = []
        for buffer, exprs in step.inputs:
            if buffer in env:
                args.append(env[buffer])
            elif loaded and buffer in loaded:
                args.append(loaded[buffer])
            else:
                args.append(memref.load(*at(pixels, buffer, [
                    point[d] if d is not None else _idx(0) for d in exprs])))
        args += [value] * len(step.outputs)   # outputs are never read
        for buffer, result in zip(step.outputs,
                                  clone_body(step.op.regions[0].blocks[0], args, index_of)):
            env[buffer] = result
    return env


def store_vector(vec, buffer, indices, alignment, row_ok=None, col=None, n=None, pixels=None):
    """Store ``vec`` into ``buffer`` at ``indices`` (through ``pixels``:
    ``at``) where ``row_ok`` holds (None: always) and, when ``n`` is given,
    ``col`` < ``n`` (a vector is all in or all out: N is a multiple of its
    length)."""

    def store():
        vector.store(vec, *at(pixels, buffer, indices), alignment=alignment)
    ok = row_ok
    if n is not None:
        col_ok = arith.cmpi(arith.CmpIPredicate.ult, col, _idx(n))
        ok = col_ok if ok is None else arith.andi(ok, col_ok)
    if ok is None:
        store()
    else:
        _if(ok, store)


def store_lanes(values, buffer, indices, row_ok=None, col=None, n=None, pixels=None):
    """Store the scalars ``values`` as one vector at ``indices``, guarded as
    in store_vector. The caller's first lane is at an element offset that is
    a multiple of the length, so the vector is aligned to its size (without
    saying so the store is split)."""
    element = ir.MemRefType(buffer.type).element_type
    vec = vector.from_elements(ir.VectorType.get([len(values)], element), values)
    store_vector(vec, buffer, indices, len(values) * irutil.element_bytes(element),
                 row_ok, col, n, pixels)


def store_scalars(values, buffer, lead, row, col, n, row_ok=None, pixels=None):
    """Store ``values`` at columns ``col``, ``col`` + 1... of ``row`` (after
    the ``lead`` indices), each where it is inside N (and ``row_ok``)."""
    for e, value in enumerate(values):
        c = arith.addi(col, _idx(e)) if e else col
        ok = arith.cmpi(arith.CmpIPredicate.ult, c, _idx(n))
        if row_ok is not None:
            ok = arith.andi(ok, row_ok)
        _if(ok, lambda value=value, c=c: memref.store(value, *at(pixels, buffer,
                                                                  lead + [row, c])))


class PairEpilogue:
    """The epilogue of ``gemm`` (a gemm.Gemm) in a kernel whose arguments are
    ``arguments``; ``full_m`` / ``full_n``: every row / column a thread can
    hold is inside C (M / N is a multiple of the tile), so no guard is made."""

    def __init__(self, gemm, arguments, full_m=False, full_n=False, transposed=False):
        self.gemm = gemm
        # ``gemm`` is Cᵀ's (its M is C's N): points swap to C's indices.
        self.transposed = transposed
        self.epilogue = gemm.epilogue
        # {[M, N] view: (pixel view, radices)}: a stride phase's (at).
        self.pixels = gemm.epilogue.pixels or {}
        self.rank = len(ir.MemRefType(gemm.epilogue.accumulator.type).shape)
        self.stored = gemm.epilogue.stored(arguments)
        self.written = {b for step in gemm.epilogue.steps for b in step.outputs} | {
            gemm.epilogue.accumulator}
        self.full_m, self.full_n = full_m, full_n
        self.along_columns = self._inputs_along_columns()
        # An even row length: every pair is aligned (a transposed kernel's
        # pairs are not adjacent in memory).
        self.pairs = gemm.n % 2 == 0 and not transposed

    def lead(self, batch):
        """C's batch indices of the kernel's flat ``batch``: none, itself,
        or with several batch dims (gemm.Gemm.batch_shape) it unravelled
        row-major over them."""
        if self.rank == 2:
            return []
        if self.rank == 3:
            return [batch]
        shape = ir.MemRefType(self.epilogue.accumulator.type).shape[:-2]
        out = []
        for size in reversed(shape):
            out.append(arith.remui(batch, _idx(size)) if size != 1 else _idx(0))
            batch = arith.divui(batch, _idx(size)) if size != 1 else batch
        return out[::-1]

    def point(self, batch, row, col):
        """The indices of C at the kernel's (``batch``, ``row``, ``col``)."""
        if self.transposed:
            row, col = col, row
        return self.lead(batch) + [row, col]

    def store_transposed(self, envs, batch, row, col, row_ok=None, full_n=None):
        """A transposed kernel's store of ``envs`` (evaluate's results at its
        columns ``col``, ``col`` + 1...) in its ``row``: element by element
        at C's (``col`` + e, ``row``), each where ``row_ok`` holds and, unless
        ``full_n``, where the column is inside the kernel's N (C's M)."""
        full_n = self.full_n if full_n is None else full_n
        lead = self.lead(batch)
        for e, env in enumerate(envs):
            c = arith.addi(col, _idx(e)) if e else col
            ok = row_ok
            if not full_n:
                inside = arith.cmpi(arith.CmpIPredicate.ult, c, _idx(self.gemm.n))
                ok = inside if ok is None else arith.andi(ok, inside)

            def store(env=env, c=c):
                for buffer in self.stored:
                    memref.store(env[buffer], *at(self.pixels, buffer, lead + [c, row]))
            if ok is None:
                store()
            else:
                _if(ok, store)

    def _inputs_along_columns(self):
        """[(buffer, exprs)] of the inputs that run along C's columns (an
        even row length, the last dim C's columns, pairs of its elements
        adjacent and aligned: vector_ok): what load_pairs reads
        (``along_columns``)."""
        out = []
        for step in self.epilogue.steps:
            for value, exprs in step.inputs:
                t = ir.MemRefType(value.type)
                if value in self.written or any(value == v for v, _ in out) or not exprs \
                        or exprs[-1] != self.rank - 1 or t.shape[-1] % 2 \
                        or not vector_ok(self.pixels, value, 2):
                    continue
                out.append((value, exprs))
        return out

    def load_pairs(self, point, cache, key, skip=()):
        """{input buffer: [value at col, value at col + 1]} of the inputs that
        run along the columns with an even row length, one aligned vector load
        each (``point``: at an even column); an input the same in every row
        (a bias) is read once per ``key`` (the thread's column pair) and kept
        in ``cache``. Inputs in ``skip`` are read by the caller."""
        out = {}
        for value, exprs in self.along_columns:
            t = ir.MemRefType(value.type)
            if value in skip:
                continue
            same_rows = self.rank - 2 not in exprs
            if same_rows and (value, key) in cache:
                out[value] = cache[(value, key)]
                continue
            indices = [point[d] if d is not None else _idx(0) for d in exprs]
            vec = vector.load(ir.VectorType.get([2], t.element_type),
                              *at(self.pixels, value, indices),
                              alignment=2 * irutil.element_bytes(t.element_type))
            out[value] = [vector.extract(vec, [], [e]) for e in range(2)]
            if same_rows:
                cache[(value, key)] = out[value]
        return out

    def evaluate(self, acc_value, point, loaded=None):
        """{buffer: value} of every buffer the epilogue writes, at ``point``;
        ``loaded`` holds input values already read there (load_pairs)."""
        return evaluate(self.epilogue.accumulator, self.epilogue.steps, acc_value, point, loaded,
                        pixels=self.pixels)

    def store(self, envs, batch, row, col, row_ok=None, full_n=None):
        """Store every output the kernel must store from ``envs`` (evaluate's
        results at columns ``col``, ``col`` + 1...: a pair, or one column when
        N is odd) in ``row``, where ``row_ok`` holds; ``full_n`` overrides the
        epilogue's (True: no column guard on a pair)."""
        if self.transposed:
            self.store_transposed(envs, batch, row, col, row_ok, full_n)
            return
        full_n = self.full_n if full_n is None else full_n
        lead = self.lead(batch)
        for buffer in self.stored:
            values = [env[buffer] for env in envs]
            if self.pairs:
                store_lanes(values, buffer, lead + [row, col], row_ok, col,
                            None if full_n else self.gemm.n, self.pixels)
            else:
                store_scalars(values, buffer, lead, row, col, self.gemm.n, row_ok, self.pixels)

    def row_guard(self, row):
        """(row_ok, row_safe) of C's ``row``: the check that it lies inside M
        (None when every row does) and the row clamped into M, where the
        inputs are read."""
        if self.full_m:
            return None, row
        m = self.gemm.m
        return (arith.cmpi(arith.CmpIPredicate.ult, row, _idx(m)),
                arith.minui(row, _idx(m - 1)))

    def evaluate_pair(self, batch, row_safe, col, values, cache, key):
        """evaluate's results ([{buffer: value}] * 2) at the pair ``values``
        (f32) of C at (``batch``, ``row_safe``, ``col``), ``col`` even, the
        columns clamped into N; ``cache`` / ``key`` as in load_pairs."""
        gemm = self.gemm
        loaded = {}
        if self.pairs:
            pair_safe = col if self.full_n else arith.minui(col, _idx(gemm.n - 2))
            loaded = self.load_pairs(self.point(batch, row_safe, pair_safe), cache, key)
        envs = []
        for e in range(2):
            c = arith.addi(col, _idx(e)) if e else col
            c_safe = c if self.full_n else arith.minui(c, _idx(gemm.n - 1))
            envs.append(self.evaluate(values[e], self.point(batch, row_safe, c_safe),
                                      {b: pair[e] for b, pair in loaded.items()}))
        return envs

    def apply(self, batch, row, col, values, cache, key):
        """Evaluate and store the pair ``values`` (f32) of C at (``batch``,
        ``row``, ``col``), ``col`` even; ``cache`` / ``key`` as in load_pairs."""
        row_ok, row_safe = self.row_guard(row)
        self.store(self.evaluate_pair(batch, row_safe, col, values, cache, key),
                   batch, row, col, row_ok)

    def quads(self):
        """Whether store_quad can store this epilogue: every stored output
        has 2-byte elements, C's rows are a multiple of 8 elements (16
        bytes) and the kernel's rows are C's."""
        return self.gemm.n % 8 == 0 and not self.transposed and all(
            irutil.element_bytes(ir.MemRefType(b.type).element_type) == 2 for b in self.stored)

    def store_quad(self, group, batch, row, col, lane, row_ok=None, full_n=None):
        """Store 4 pairs of columns of one row as one 16-byte vector per thread.

        The 4 threads of a quad (``lane`` % 4 = q) hold, for i = 0..3, the
        pair at columns 8 i + 2 q, 8 i + 2 q + 1 of a 32-column group
        (``group``: evaluate_pair's results, in i order). Packed into 32 bits
        each, that is a 4 x 4 matrix M[q][i] across the quad; transposing it
        (quad_transpose) gives thread q the 8 consecutive columns 8 q ..
        8 q + 7, which it stores at ``col`` (= the group's first column +
        8 q) with one 16-byte store: a warp writes 8 rows x 64 contiguous
        bytes instead of 8 rows x 16 bytes per instruction. A vector is all
        in or all out of N (a multiple of 8); unless ``full_n`` (default:
        the epilogue's), one past N is not stored."""
        full_n = self.full_n if full_n is None else full_n
        i32 = ir.IntegerType.get_signless(32)
        lead = self.lead(batch)
        for buffer in self.stored:
            element = ir.MemRefType(buffer.type).element_type
            m = []
            for values in group:
                pair = vector.from_elements(ir.VectorType.get([2], element),
                                            [values[0][buffer], values[1][buffer]])
                m.append(vector.extract(
                    vector.bitcast(ir.VectorType.get([1], i32), pair), [], [0]))
            m = quad_transpose(m, lane)
            packed = vector.bitcast(ir.VectorType.get([8], element),
                                    vector.from_elements(ir.VectorType.get([4], i32), m))
            store_vector(packed, buffer, lead + [row, col], 16, row_ok, col,
                         None if full_n else self.gemm.n, self.pixels)


def quad_transpose(words, lane):
    """The 4 x 4 matrix of i32 ``words`` across a quad (thread q = ``lane``
    % 4 holds row q) transposed, so that thread q holds column q: two
    butterfly exchanges (xor 2, then xor 1), 4 shuffles. Its own inverse.
    In each stage, for each (lo, hi) index pair, the thread whose bit is
    set keeps hi and takes its partner's lo as its lo; the partner keeps lo
    and takes the thread's hi as its hi."""
    i32 = ir.IntegerType.get_signless(32)
    width = arith.constant(i32, 32)
    m = list(words)
    for mask, pairs in ((2, [(0, 2), (1, 3)]), (1, [(0, 1), (2, 3)])):
        bit = arith.cmpi(arith.CmpIPredicate.ne, arith.andi(lane, _idx(mask)), _idx(0))
        out = list(m)
        for lo, hi in pairs:
            send = arith.select(bit, m[lo], m[hi])
            got = gpu.ShuffleOp(send, arith.constant(i32, mask), width,
                                gpu.ShuffleMode.XOR).results[0]
            out[lo] = arith.select(bit, got, m[lo])
            out[hi] = arith.select(bit, m[hi], got)
        m = out
    return m
