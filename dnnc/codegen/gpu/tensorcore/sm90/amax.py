"""tc-sm90's fused amax: the largest |value| of an epilogue value over the
whole output (gemm.Epilogue.amax: dnn-fuse joins ``reduction(y, "amax")``
over every axis of a matmul's chain beside it), as Transformer Engine
records an fp8 GEMM's output range for the next scale, taken while the
epilogue computes the values, so that they are not stored for a reduction
kernel to read again.

1. Host side (``zero``): a one-thread launch ahead of the GEMM writes 0 into
   each amax output (|x| >= 0, so 0 is the max's identity; the GEMM's
   blocks only raise it).
2. Each consumer thread keeps, for a unit (tile), the running max of |v|
   over the values the epilogue evaluates (``take``), those past M or N
   (computed on TMA's zero fill and clamped inputs) counted as 0.
3. After the unit (``flush``): the warp's max by five xor shuffles, and
   lane 0 raises the output with one ``atom.global.max.s32`` on the f32's
   bit pattern: non-negative floats order as their bits do as signed
   integers, and a NaN (its sign cleared by the absolute value) is above
   every one of them, so a NaN anywhere leaves NaN, as the reference's max
   does. A tile of 128 x 256 makes 8 atomics; a 4096 x 4096 output 4096.

The order of the maxima does not matter: the result is exact and the same
in every run.
"""

from mlir import ir
from mlir.dialects import arith, gpu, llvm, math, memref

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.tensorcore.emit import (
    cmp as _cmp, i as _i, idx as _idx, if_ as _if, ptr as _ptr, to_i64 as _to_i64,
)


def _f32(x):
    return arith.constant(ir.F32Type.get(), x)


class Amax:
    """The amax outputs of ``kernel``'s epilogue (kernel.Kernel)."""

    def __init__(self, kernel):
        self.k = kernel
        self.pairs = list(kernel.gemm.epilogue.amax)   # [(buffer read, output)]
        self.running = []

    def zero(self):
        """Host side, ahead of the GEMM's launch: 0 into every output."""
        if not self.pairs:
            return
        launch = gpu.LaunchOp((_idx(1), _idx(1), _idx(1)), (_idx(1), _idx(1), _idx(1)))
        with ir.InsertionPoint(launch.regions[0].blocks[0]):
            for _, output in self.pairs:
                rank = ir.MemRefType(output.type).rank
                memref.store(_f32(0.0), output, [_idx(0)] * rank)
            gpu.TerminatorOp()

    def begin(self):
        """Device side, at a unit's epilogue: the running maxima start at 0."""
        self.running = [_f32(0.0) for _ in self.pairs]

    def take(self, envs, col, row_ok):
        """Raise the running maxima by the values of ``envs`` (the epilogue's
        {buffer: value} at columns ``col``, ``col`` + 1... of one row),
        those outside N, or outside M where ``row_ok`` (None: inside) says
        so, taken as 0."""
        if not self.pairs:
            return
        n = self.k.gemm.n
        full_n = n % self.k.tile.n == 0
        for e, env in enumerate(envs):
            ok = row_ok
            if not full_n:
                c = arith.addi(col, _idx(e)) if e else col
                inside = _cmp("ult", c, _idx(n))
                ok = inside if ok is None else arith.andi(ok, inside)
            for i, (buffer, _) in enumerate(self.pairs):
                value = math.absf(env[buffer])
                if ok is not None:
                    value = arith.select(ok, value, _f32(0.0))
                # maximumf: NaN if either is NaN, as the reference's max.
                self.running[i] = arith.maximumf(self.running[i], value)

    def flush(self, local):
        """After a unit's epilogue: each warp's max into the outputs, one
        atomic max by lane 0 (``local``: the thread's index in its
        warpgroup)."""
        if not self.pairs:
            return
        i32 = ir.IntegerType.get_signless(32)
        width = arith.constant(i32, 32)
        lane0 = _cmp("eq", arith.remui(local, _idx(32)), _idx(0))
        for (_, output), value in zip(self.pairs, self.running):
            for offset in (16, 8, 4, 2, 1):
                other = gpu.ShuffleOp(value, arith.constant(i32, offset), width,
                                      gpu.ShuffleMode.XOR).results[0]
                value = arith.maximumf(value, other)
            bits = arith.bitcast(i32, value)

            def raise_output(output=output, bits=bits):
                _, _, offset = irutil.memref_geometry(output.type)
                address = arith.addi(
                    _to_i64(memref.extract_aligned_pointer_as_index(output)), _i(4 * offset, 64))
                llvm.atomicrmw(llvm.AtomicBinOp.max, llvm.inttoptr(_ptr(), address), bits,
                               llvm.AtomicOrdering.monotonic)
            _if(lane0, raise_output)
