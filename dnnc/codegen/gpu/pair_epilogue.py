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

A kernel that computes ``Cᵀ = Bᵀ Aᵀ`` (``transposed``: its rows are C's
columns) evaluates the same chain at C's own indices, reads every input as
a scalar and stores element by element (``store_transposed``): its pairs
run down a column of C.

Used by the tc-sm80 kernel (dnnc/codegen/gpu/tc_sm80.py), whose epilogue is
``apply``, and the tc-sm90 kernel (dnnc/codegen/gpu/tc_sm90.py), which reads
its input pairs ahead (``load_pairs``) and stores 16-byte groups
(``store_vector``). ``evaluate`` (the chain at one point) and ``store_lanes``
(a vector of lanes, aligned to its size) also serve the window kernels
(dnnc/codegen/gpu/windows.py).
"""

from mlir import ir
from mlir.dialects import arith, memref, scf, vector

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.vectorize import clone_body


def _idx(n):
    return irutil.index(n)


def _if(cond, build):
    op = scf.IfOp(cond, [], has_else=False)
    with ir.InsertionPoint(op.then_block):
        build()
        scf.YieldOp([])


def evaluate(accumulator, steps, value, point, loaded=None, index_of=None):
    """{buffer: value} of every buffer the elementwise ``steps`` write, run on
    ``value``, the scalar of ``accumulator`` at ``point`` (its indices).
    Another input is taken from ``loaded`` ({buffer: value} already read
    there) or read with a scalar load through its broadcast exprs;
    ``index_of(dim)`` answers a step's linalg.index (None: none reads one)."""
    env = {accumulator: value}
    for step in steps:
        args = []
        for buffer, exprs in step.inputs:
            if buffer in env:
                args.append(env[buffer])
            elif loaded and buffer in loaded:
                args.append(loaded[buffer])
            else:
                args.append(memref.load(buffer, [point[d] if d is not None else _idx(0)
                                                 for d in exprs]))
        args += [value] * len(step.outputs)   # outputs are never read
        for buffer, result in zip(step.outputs,
                                  clone_body(step.op.regions[0].blocks[0], args, index_of)):
            env[buffer] = result
    return env


def store_vector(vec, buffer, indices, alignment, row_ok=None, col=None, n=None):
    """Store ``vec`` into ``buffer`` at ``indices`` where ``row_ok`` holds
    (None: always) and, when ``n`` is given, ``col`` < ``n`` (a vector is
    all in or all out: N is a multiple of its length)."""

    def store():
        vector.store(vec, buffer, indices, alignment=alignment)
    ok = row_ok
    if n is not None:
        col_ok = arith.cmpi(arith.CmpIPredicate.ult, col, _idx(n))
        ok = col_ok if ok is None else arith.andi(ok, col_ok)
    if ok is None:
        store()
    else:
        _if(ok, store)


def store_lanes(values, buffer, indices, row_ok=None, col=None, n=None):
    """Store the scalars ``values`` as one vector at ``indices``, guarded as
    in store_vector. The caller's first lane is at an element offset that is
    a multiple of the length, so the vector is aligned to its size (without
    saying so the store is split)."""
    element = ir.MemRefType(buffer.type).element_type
    vec = vector.from_elements(ir.VectorType.get([len(values)], element), values)
    store_vector(vec, buffer, indices, len(values) * irutil.element_bytes(element),
                 row_ok, col, n)


def store_scalars(values, buffer, lead, row, col, n, row_ok=None):
    """Store ``values`` at columns ``col``, ``col`` + 1... of ``row`` (after
    the ``lead`` indices), each where it is inside N (and ``row_ok``)."""
    for e, value in enumerate(values):
        c = arith.addi(col, _idx(e)) if e else col
        ok = arith.cmpi(arith.CmpIPredicate.ult, c, _idx(n))
        if row_ok is not None:
            ok = arith.andi(ok, row_ok)
        _if(ok, lambda value=value, c=c: memref.store(value, buffer, lead + [row, c]))


class PairEpilogue:
    """The epilogue of ``gemm`` (a gemm.Gemm) in a kernel whose arguments are
    ``arguments``; ``full_m`` / ``full_n``: every row / column a thread can
    hold is inside C (M / N is a multiple of the tile), so no guard is made."""

    def __init__(self, gemm, arguments, full_m=False, full_n=False, transposed=False):
        self.gemm = gemm
        # ``gemm`` is Cᵀ's (its M is C's N): points swap to C's indices.
        self.transposed = transposed
        self.epilogue = gemm.epilogue
        self.rank = len(ir.MemRefType(gemm.epilogue.accumulator.type).shape)
        self.stored = gemm.epilogue.stored(arguments)
        self.written = {b for step in gemm.epilogue.steps for b in step.outputs} | {
            gemm.epilogue.accumulator}
        self.full_m, self.full_n = full_m, full_n
        self.along_columns = self._inputs_along_columns()
        # An even row length: every pair is aligned (a transposed kernel's
        # pairs are not adjacent in memory).
        self.pairs = gemm.n % 2 == 0 and not transposed

    def point(self, batch, row, col):
        """The indices of C at the kernel's (``batch``, ``row``, ``col``)."""
        if self.transposed:
            row, col = col, row
        return [batch, row, col] if self.rank == 3 else [row, col]

    def store_transposed(self, envs, batch, row, col, row_ok=None, full_n=None):
        """A transposed kernel's store of ``envs`` (evaluate's results at its
        columns ``col``, ``col`` + 1...) in its ``row``: element by element
        at C's (``col`` + e, ``row``), each where ``row_ok`` holds and, unless
        ``full_n``, where the column is inside the kernel's N (C's M)."""
        full_n = self.full_n if full_n is None else full_n
        lead = [batch] if self.rank == 3 else []
        for e, env in enumerate(envs):
            c = arith.addi(col, _idx(e)) if e else col
            ok = row_ok
            if not full_n:
                inside = arith.cmpi(arith.CmpIPredicate.ult, c, _idx(self.gemm.n))
                ok = inside if ok is None else arith.andi(ok, inside)

            def store(env=env, c=c):
                for buffer in self.stored:
                    memref.store(env[buffer], buffer, lead + [c, row])
            if ok is None:
                store()
            else:
                _if(ok, store)

    def _inputs_along_columns(self):
        """[(buffer, exprs)] of the inputs that run along C's columns (an
        even row length, the last dim C's columns): what load_pairs reads
        (``along_columns``)."""
        out = []
        for step in self.epilogue.steps:
            for value, exprs in step.inputs:
                t = ir.MemRefType(value.type)
                if value in self.written or any(value == v for v, _ in out) or not exprs \
                        or exprs[-1] != self.rank - 1 or t.shape[-1] % 2:
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
            vec = vector.load(ir.VectorType.get([2], t.element_type), value, indices,
                              alignment=2 * irutil.element_bytes(t.element_type))
            out[value] = [vector.extract(vec, [], [e]) for e in range(2)]
            if same_rows:
                cache[(value, key)] = out[value]
        return out

    def evaluate(self, acc_value, point, loaded=None):
        """{buffer: value} of every buffer the epilogue writes, at ``point``;
        ``loaded`` holds input values already read there (load_pairs)."""
        return evaluate(self.epilogue.accumulator, self.epilogue.steps, acc_value, point, loaded)

    def store(self, envs, batch, row, col, row_ok=None, full_n=None):
        """Store every output the kernel must store from ``envs`` (evaluate's
        results at columns ``col``, ``col`` + 1...: a pair, or one column when
        N is odd) in ``row``, where ``row_ok`` holds; ``full_n`` overrides the
        epilogue's (True: no column guard on a pair)."""
        if self.transposed:
            self.store_transposed(envs, batch, row, col, row_ok, full_n)
            return
        full_n = self.full_n if full_n is None else full_n
        lead = [batch] if self.rank == 3 else []
        for buffer in self.stored:
            values = [env[buffer] for env in envs]
            if self.pairs:
                store_lanes(values, buffer, lead + [row, col], row_ok, col,
                            None if full_n else self.gemm.n)
            else:
                store_scalars(values, buffer, lead, row, col, self.gemm.n, row_ok)

    def apply(self, batch, row, col, values, cache, key):
        """Evaluate and store the pair ``values`` (f32) of C at (``batch``,
        ``row``, ``col``), ``col`` even; ``cache`` / ``key`` as in load_pairs."""
        gemm = self.gemm
        row_ok = None if self.full_m else arith.cmpi(arith.CmpIPredicate.ult, row,
                                                     _idx(gemm.m))
        row_safe = row if self.full_m else arith.minui(row, _idx(gemm.m - 1))
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
        self.store(envs, batch, row, col, row_ok)
