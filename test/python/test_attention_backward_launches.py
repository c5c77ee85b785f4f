"""The small launches around tc-sm90's fused attention backward
(sm90/flash_backward_dq.py), run on the CPU by kernel_interpreter.py
against NumPy: the preprocess's delta = rowsum(dO ∘ O) and the zeroed f32
dQ workspace (its rows in passes, tails of Sq and of D included), and the
conversion dq = scale · dq_sum."""

import types

import numpy as np
import pytest
from mlir import ir
from mlir.dialects import func

from dnnc import dialect
from dnnc.codegen.gpu.tensorcore.sm90 import flash_backward_dq as launches
from kernel_interpreter import run_kernel


def _bf16(x):
    """``x`` rounded to bf16 (to nearest even), as f32."""
    bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    return rounded.astype(np.uint32).view(np.float32)


def _function(shapes, emit):
    """A kernel function of memref arguments ``shapes`` ((dims, 'bf16' or
    'f32')) whose body ``emit(arguments)`` writes; (context, function)."""
    ctx = dialect.context()
    with ctx, ir.Location.unknown():
        module = ir.Module.create()
        kinds = {"bf16": ir.BF16Type.get(), "f32": ir.F32Type.get()}
        types_ = [ir.MemRefType.get(dims, kinds[kind]) for dims, kind in shapes]
        with ir.InsertionPoint(module.body):
            fn = func.FuncOp("launches", (types_, []))
            entry = fn.add_entry_block()
            with ir.InsertionPoint(entry):
                emit(entry.arguments)
                func.ReturnOp([])
    return ctx, module, fn


def _attention(b, h, sq, d, dv, **values):
    return types.SimpleNamespace(batch=b, heads=h, sq=sq, d=d, dv=dv, scale=0.125, **values)


# (B, H, Sq, D, Dv): Sq past a block's rows and not a multiple of a pass,
# head dims whose rows of 4-wide vectors do not fill a round of threads
# (D 40: 10 a row), Dv unlike D; a grid small enough for one pass a block
# and one large enough for PRE_PASSES.
SHAPES = [(1, 2, 75, 64, 64), (2, 1, 300, 40, 72), (1, 1, 1, 128, 128), (2, 2, 129, 256, 8),
          (8, 16, 520, 64, 64)]


@pytest.mark.parametrize("b, h, sq, d, dv", SHAPES)
def test_preprocess_writes_delta_and_zeroes_the_workspace(b, h, sq, d, dv):
    rng = np.random.default_rng(sq * d + dv)
    o, do = (rng.standard_normal((b, h, sq, dv)).astype(np.float32) for _ in range(2))
    shapes = [([b, h, sq, dv], "bf16"), ([b, h, sq, dv], "bf16"), ([b, h, sq], "f32"),
              ([b, h, sq, d], "f32")]

    def emit(args):
        launches.preprocess(_attention(b, h, sq, d, dv, o=args[0], do=args[1]), args[2], args[3])

    ctx, _, fn = _function(shapes, emit)
    with ctx:
        got = run_kernel(fn, [o, do, np.full((b, h, sq), np.nan, np.float32),
                              np.full((b, h, sq, d), np.nan, np.float32)], poison=True)
    reference = (_bf16(o).astype(np.float64) * _bf16(do)).sum(-1)
    assert np.allclose(got[2], reference, rtol=1e-5, atol=1e-5 * dv), \
        float(np.nanmax(np.abs(got[2] - reference)))
    assert not np.isnan(got[3]).any() and not got[3].any()


def test_preprocess_passes_follow_the_grid():
    """PRE_PASSES rows a quad where the grid keeps PRE_MIN_BLOCKS blocks
    and a thread's loads fit PRE_LOADS; fewer, down to one, where not."""
    assert launches.pre_passes(_attention(16, 16, 1024, 64, 64)) == launches.PRE_PASSES
    # Dv 128: 4 chunks of a row a thread, two passes' loads of O and dO fill
    # PRE_LOADS; Dv 256 one pass's.
    assert launches.pre_passes(_attention(16, 16, 1024, 128, 128)) == 2
    assert launches.pre_passes(_attention(16, 16, 1024, 256, 256)) == 1
    assert launches.pre_passes(_attention(1, 1, 75, 64, 64)) == 1
    small = _attention(1, 16, 1024, 128, 128)     # 32 x 16 blocks of one pass
    assert launches.pre_passes(small) == 1


@pytest.mark.parametrize("b, h, sq, d", [(1, 2, 75, 64), (2, 1, 130, 40)])
def test_convert_scales_and_rounds(b, h, sq, d):
    rng = np.random.default_rng(sq + d)
    dq_sum = rng.standard_normal((b, h, sq, d)).astype(np.float32)
    shapes = [([b, h, sq, d], "bf16"), ([b, h, sq, d], "f32")]

    def emit(args):
        launches.convert(_attention(b, h, sq, d, d, dq=args[0]), args[1])

    ctx, _, fn = _function(shapes, emit)
    with ctx:
        got = run_kernel(fn, [np.full((b, h, sq, d), np.nan, np.float32), dq_sum],
                         poison=True)
    assert np.array_equal(got[0], _bf16(dq_sum * np.float32(0.125)))
