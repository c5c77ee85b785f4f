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

Used by the tc-sm80 kernel (dnnc/codegen/gpu/tc_sm80.py).
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


class PairEpilogue:
    """The epilogue of ``gemm`` (a gemm.Gemm) in a kernel whose arguments are
    ``arguments``; ``full_m`` / ``full_n``: every row / column a thread can
    hold is inside C (M / N is a multiple of the tile), so no guard is made."""

    def __init__(self, gemm, arguments, full_m=False, full_n=False):
        self.gemm = gemm
        self.epilogue = gemm.epilogue
        self.rank = len(ir.MemRefType(gemm.epilogue.accumulator.type).shape)
        self.stored = gemm.epilogue.stored(arguments)
        self.written = {b for step in gemm.epilogue.steps for b in step.outputs} | {
            gemm.epilogue.accumulator}
        self.full_m, self.full_n = full_m, full_n
        self.pairs = gemm.n % 2 == 0   # an even row length: every pair is aligned

    def _point(self, batch, row, col):
        return [batch, row, col] if self.rank == 3 else [row, col]

    def _load_pairs(self, point, cache, key):
        """{input buffer: [value at col, value at col + 1]} of the inputs that
        run along the columns with an even row length, one aligned vector load
        each; an input the same in every row (a bias) is read once per ``key``
        (the thread's column pair) and kept in ``cache``."""
        out = {}
        for step in self.epilogue.steps:
            for value, exprs in step.inputs:
                t = ir.MemRefType(value.type)
                if value in self.written or value in out or exprs[-1] != self.rank - 1 \
                        or t.shape[-1] % 2:
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

    def _evaluate(self, acc_value, point, loaded):
        """{buffer: value} of every buffer the epilogue writes, at ``point``."""
        env = {self.epilogue.accumulator: acc_value}
        for step in self.epilogue.steps:
            args = []
            for value, exprs in step.inputs:
                if value in env:
                    args.append(env[value])
                elif value in loaded:
                    args.append(loaded[value])
                else:
                    args.append(memref.load(value, [point[d] if d is not None else _idx(0)
                                                    for d in exprs]))
            args += [acc_value] * len(step.outputs)   # outputs are never read
            for buffer, value in zip(step.outputs,
                                     clone_body(step.op.regions[0].blocks[0], args, None)):
                env[buffer] = value
        return env

    def apply(self, batch, row, col, values, cache, key):
        """Evaluate and store the pair ``values`` (f32) of C at (``batch``,
        ``row``, ``col``), ``col`` even; ``cache`` / ``key`` as in _load_pairs."""
        gemm = self.gemm
        row_ok = None if self.full_m else arith.cmpi(arith.CmpIPredicate.ult, row,
                                                     _idx(gemm.m))
        row_safe = row if self.full_m else arith.minui(row, _idx(gemm.m - 1))
        loaded = {}
        if self.pairs:
            pair_safe = col if self.full_n else arith.minui(col, _idx(gemm.n - 2))
            loaded = self._load_pairs(self._point(batch, row_safe, pair_safe), cache, key)
        envs = []
        for e in range(2):
            c = arith.addi(col, _idx(e)) if e else col
            c_safe = c if self.full_n else arith.minui(c, _idx(gemm.n - 1))
            envs.append(self._evaluate(values[e], self._point(batch, row_safe, c_safe),
                                       {b: pair[e] for b, pair in loaded.items()}))
        lead = [batch] if self.rank == 3 else []
        for buffer in self.stored:
            element = ir.MemRefType(buffer.type).element_type
            if self.pairs:
                vec = vector.from_elements(ir.VectorType.get([2], element),
                                           [envs[0][buffer], envs[1][buffer]])
                # col and N are even: the pair is aligned to its size (without
                # saying so the store is split in two).
                align = 2 * irutil.element_bytes(element)

                def store(buffer=buffer, vec=vec, align=align):
                    vector.store(vec, buffer, lead + [row, col], alignment=align)
                ok = row_ok
                if not self.full_n:
                    col_ok = arith.cmpi(arith.CmpIPredicate.ult, col, _idx(gemm.n))
                    ok = col_ok if ok is None else arith.andi(ok, col_ok)
                if ok is None:
                    store()
                else:
                    _if(ok, store)
                continue
            for e in range(2):
                c = arith.addi(col, _idx(e)) if e else col
                ok = arith.cmpi(arith.CmpIPredicate.ult, c, _idx(gemm.n))
                if row_ok is not None:
                    ok = arith.andi(ok, row_ok)
                _if(ok, lambda buffer=buffer, c=c, e=e:
                    memref.store(envs[e][buffer], buffer, lead + [row, c]))
