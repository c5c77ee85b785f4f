"""cuDNN's BN-ReLU-conv without a GPU: relu(x * scale + shift), scale and
shift per channel of x, before a forward convolution, as a prologue of the
convolution's kernel (dnn-fuse's ``conv_prologue``; tc-sm90's conversion of
x's tiles, dnnc/codegen/gpu/tensorcore/sm90/prologue.py).

* Fusion keeps the graph's meaning: the NumPy reference interpreter gives
  the same bits before and after the front pipeline, which makes one
  conv_fprop kernel (the plain scale + shift and a relu alone too); the
  CPU back end, which runs the fused kernel's linalg form, matches the
  reference (the padding is zeros after the prologue, not relu(shift)).
* A pre-activation with another user stays a kernel of its own and only
  the ops after it join; what tc-sm90 cannot run with a prologue (C not a
  multiple of 8, a depthwise convolution) keeps two kernels; the option
  off keeps two.
* On sm_90a the plan is one tc-sm90 kernel whose reason says that the
  prologue runs on x's tiles with the padding's taps zeroed, x read by an
  im2col TMA descriptor without swizzle (without padding too, where linalg
  moves a relu into the convolution's body; and unsplit where the
  heuristics split a K of one step, which tc-sm90 refuses); on sm_80 (no prologues on
  tc-sm80) a pointwise kernel, then tc-sm80's implicit GEMM.
* ptxas and the SASS (skipped without them): HGMMA on the operand type,
  TMA loads, no spills, no local memory, shared memory within sm_90's.
* The consumers' conversion itself (Prologues.begin_tile, convert_conv)
  in a launch of its own on the kernel interpreter (kernel_interpreter.py),
  fed the tiles TMA's im2col mode would load (computed in NumPy: x at each
  row's tap, zeros in the padding and past C and M): every element of
  every converted tile, in wgmma's swizzled layout, equals the prologue
  computed in NumPy with the padding left at zero, for strides, dilations,
  asymmetric padding, 3-D and C past a K step.
"""

import math

import numpy as np
import pytest

import dnnc
from dnnc import compiler, graph_mlir, interpreter, passes, pipelines, plan
from dnnc.codegen.gpu import sass
from kernel_builds import Builds, assert_fit, assert_no_local_memory, family
from mlir import ir
from refutil import typed
from test_conv_tensor_cores import channels_last
from test_tc_sass import ARCH, MAX_SHARED, gemm_kernels, needs_sass

FRONT = "builtin.module(" + ",".join(p for s in pipelines.FRONT for p in s.passes) + ")"


def bn_conv(name, dtype, x_dims, k, window, prologue="bn_relu", groups=1, shared=False,
            **attrs):
    """A forward convolution of ``prologue``(x): "bn_relu" relu(x * scale +
    shift), "bn" x * scale + shift, "relu"; scale and shift f32 per
    channel, x, the filter and y channels-last of ``dtype`` (the graph's
    intermediates too). ``shared``: x * scale + shift is also returned (a
    pre-activation another user needs)."""
    g = dnnc.Graph(name=name, io_data_type=dtype, intermediate_data_type=dtype,
                   compute_data_type="f32")
    c = x_dims[1]
    w_dims = [k, c // groups, *window]
    x = g.tensor(name="x", dim=list(x_dims), stride=channels_last(list(x_dims)))
    w = g.tensor(name="w", dim=w_dims, stride=channels_last(w_dims))
    h = x
    if prologue in ("bn_relu", "bn"):
        per_channel = [1, c] + [1] * len(window)
        scale = g.tensor(name="scale", dim=per_channel, data_type="f32")
        shift = g.tensor(name="shift", dim=per_channel, data_type="f32")
        h = g.add(g.mul(h, scale), shift)
        if shared:
            h.set_output(True).set_stride(channels_last(list(x_dims)))
    if prologue in ("bn_relu", "relu"):
        h = g.relu(h)
    y = g.conv_fprop(h, w, **attrs)
    y.set_output(True).set_stride(channels_last([int(d) for d in y.dim]))
    return g


# name: graph; each fuses into one conv_fprop kernel.
FUSED = {
    "bn_relu_3x3_bf16": lambda: bn_conv("bn_relu_3x3_bf16", "bf16", [2, 64, 9, 11], 40, [3, 3],
                                        padding=[1, 1]),
    "bn_relu_strided_f16": lambda: bn_conv(
        "bn_relu_strided_f16", "f16", [3, 16, 13, 10], 24, [3, 2], stride=[2, 3],
        dilation=[2, 1], pre_padding=[2, 0], post_padding=[1, 1]),
    "bn_1x1_bf16": lambda: bn_conv("bn_1x1_bf16", "bf16", [2, 72, 5, 6], 16, [1, 1],
                                   prologue="bn"),
    "relu_3d_bf16": lambda: bn_conv("relu_3d_bf16", "bf16", [1, 8, 4, 5, 6], 8, [3, 2, 3],
                                    prologue="relu", stride=[1, 2, 1], pre_padding=[1, 0, 2],
                                    post_padding=[0, 1, 1]),
    "bn_relu_groups_bf16": lambda: bn_conv("bn_relu_groups_bf16", "bf16", [1, 128, 5, 5], 32,
                                           [3, 3], groups=2, padding=[1, 1]),
    # No padding: linalg moves a relu alone into the convolution's body.
    "relu_1x1_bf16": lambda: bn_conv("relu_1x1_bf16", "bf16", [2, 64, 5, 6], 16, [1, 1],
                                     prologue="relu"),
    # One K step, which the heuristics split in two (a cluster of 2): run
    # unsplit, not on tc-sm80 (no prologues there).
    "bn_relu_one_step_f16": lambda: bn_conv("bn_relu_one_step_f16", "f16", [1, 64, 7, 10], 128,
                                            [1, 1], stride=[3, 3]),
}


def _inputs(graph, seed=0):
    """Seeded random inputs; shifts of both signs around 0.5, so that
    relu(shift) is mostly not 0 (the padding would show it)."""
    rng = np.random.default_rng(seed)
    arrays = []
    for t in graph.inputs:
        values = rng.standard_normal([int(d) for d in t.dim])
        values = values + 0.5 if t.name == "shift" else values
        arrays.append(typed(values, t.get_data_type()))  # in its own type, as executables take
    return arrays


def _anchors(module):
    with module.context:
        return [str(f.attributes["dnn.anchor"]).strip('"') for f in module.body.operations
                if f.operation.name == "func.func" and "dnn.kernel" in f.attributes]


def _fused(graph, pipeline=FRONT):
    """The graph's module after ``pipeline``, checked to compute what the
    graph does to the last bit (the reference interpreter before and after)."""
    module = graph_mlir.to_module(graph)
    arrays = _inputs(graph)
    before = interpreter.run_module(module, arrays)
    passes.run_pipeline(module, pipeline)
    after = interpreter.run_module(module, arrays)
    for b, a in zip(before, after):
        np.testing.assert_array_equal(a, b)
    return module


@pytest.mark.parametrize("name", sorted(FUSED))
def test_prologue_joins_the_convolution(name):
    module = _fused(FUSED[name]())
    assert _anchors(module) == ["conv_fprop"], str(module)


@pytest.mark.parametrize("name", ["bn_relu_3x3_bf16", "bn_relu_strided_f16", "relu_3d_bf16",
                                  "relu_1x1_bf16"])
def test_cpu_back_end_matches_reference(name):
    """The fused kernel on the CPU against the NumPy reference: to the
    output type's rounding (accumulation orders differ), relative to the
    sum of |x| |w| of each output."""
    graph = FUSED[name]()
    arrays = _inputs(graph)
    (expected,) = interpreter.run_module(graph_mlir.to_module(graph), arrays)
    (got,) = graph.compile(target="cpu").run(*arrays)
    got = np.asarray(got, np.float64)
    w = next(t for t in graph.inputs if t.name == "w")
    reduced = math.prod(int(d) for d in w.dim[1:])
    eps = 2.0 ** -8 if "bf16" in name else 2.0 ** -11
    tol = 2 * eps * np.sqrt(reduced) * max(1.0, float(np.abs(expected).max()))
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=0, atol=tol)


def test_shared_preactivation_is_not_computed_twice():
    """x * scale + shift also returned: its kernel stores it, the relu alone
    joins the convolution."""
    graph = bn_conv("shared_bf16", "bf16", [2, 64, 6, 6], 32, [3, 3], shared=True,
                    padding=[1, 1])
    module = _fused(graph)
    assert _anchors(module) == ["pointwise", "conv_fprop"], str(module)
    kernels = plan.kernels(module)
    assert kernels[0].ops == ["mul", "add"] and kernels[1].ops == ["relu", "conv_fprop"], \
        [str(k) for k in kernels]


@pytest.mark.parametrize("x_dims, groups, why", [
    ([2, 3, 8, 8], 1, "C = 3: a prologue's x is read by TMA in 16-byte pixels"),
    ([2, 64, 8, 8], 64, "64 groups of 1 channels: a group's channels are read in whole K "
                        "steps of 64"),
])
def test_what_tc_sm90_cannot_run_keeps_two_kernels(x_dims, groups, why):
    """C = 3 (pixels of 6 bytes) and a depthwise convolution: no prologue;
    the convolution's kernel says why (dnn.fusion_note, which ends its
    reason in the plan)."""
    graph = bn_conv(f"unfused_{x_dims[1]}", "bf16", x_dims, x_dims[1], [3, 3], groups=groups,
                    padding=[1, 1])
    module = _fused(graph)
    assert _anchors(module) == ["pointwise", "conv_fprop"]
    with module.context:
        conv = next(f for f in module.body.operations if "dnn.kernel" in f.attributes
                    and str(f.attributes["dnn.anchor"]) == '"conv_fprop"')
        note = ir.StringAttr(conv.attributes["dnn.fusion_note"]).value
    assert note.startswith("x's mul, add, relu left to a kernel of their own (tc-sm90 runs no "
                           f"prologue on x here: {why}"), note


def test_option_off_keeps_two_kernels():
    graph = FUSED["bn_relu_3x3_bf16"]()
    off = FRONT.replace("dnn-fuse,", "dnn-fuse{conv_prologue=false},")
    assert _anchors(_fused(graph, off)) == ["pointwise", "conv_fprop"]


@pytest.fixture(scope="module")
def built():
    """Each graph compiled for each arch, and assembled, at most once."""
    return Builds(lambda name: FUSED[name](), ARCH)


@pytest.mark.parametrize("name", sorted(FUSED))
def test_one_tc_sm90_kernel(built, name):
    kernels = built.package(name).kernels
    assert [k["strategy"] for k in kernels] == ["tc-sm90"] * len(kernels), \
        [(k["entry"], k["strategy"], k.get("reason")) for k in kernels]
    (gemm,) = gemm_kernels(built.package(name))
    assert gemm is kernels[0], [k["entry"] for k in kernels]
    reason = gemm["reason"]
    assert "implicit GEMM (fprop): x read by TMA in im2col mode" in reason, reason
    assert "a prologue on x (" in reason and \
        "run on each tile of x in shared memory, the taps in the padding zeroed after it" \
        in reason, reason
    assert "a prologue on A (" in reason, reason    # the heuristics counted its shared memory
    # x as it lies (no swizzle: the consumers convert it), the per-channel
    # operands read as buffers.
    a = gemm["args"][0]
    assert a["kind"] == "tma" and "im2col" in a and a["swizzle"] == 0, a
    inputs = [t["name"] for t in built.package(name).manifest["inputs"]]
    buffers = {inputs[arg["buffer"]] for arg in gemm["args"]
               if arg["kind"] == "buffer" and arg["buffer"] < len(inputs)}
    assert buffers == ({"scale", "shift"} if "bn" in name else set()), gemm["args"]


def test_plan_says_why_the_prologue_is_a_kernel():
    graph = bn_conv("c3_plan", "bf16", [2, 3, 8, 8], 8, [3, 3], padding=[1, 1])
    package = compiler.compile_module(graph_mlir.to_module(graph), compiler.Options(
        target="cuda", arch=ARCH, tuning_db="off"), basename="c3_plan")
    (conv,) = [k for k in package.kernels if k["entry"].endswith("conv_fprop_kernel")]
    assert "x's mul, add, relu left to a kernel of their own (tc-sm90 runs no prologue on x " \
        "here: C = 3" in conv["reason"], conv["reason"]


def test_sm80_keeps_the_prologue_a_kernel(built):
    kernels = built.package("bn_relu_3x3_bf16", "sm_80").kernels
    convs = [k for k in kernels if "conv_fprop" in k["entry"]]
    assert len(convs) == 1 and convs[0]["strategy"] == "tc-sm80", \
        [(k["entry"], k["strategy"]) for k in kernels]
    assert any("pointwise" in k["entry"] for k in kernels), [k["entry"] for k in kernels]


@needs_sass
@pytest.mark.parametrize("name", ["bn_relu_3x3_bf16", "bn_relu_strided_f16",
                                  "bn_relu_groups_bf16"])
def test_prologue_sass(built, name):
    """No spills or local memory, registers within what 65536 / threads
    leaves, shared memory within sm_90's; HGMMA of the operand type only,
    TMA loads, no use of an accumulator before its wgmma's wait."""
    package = built.package(name)
    resources, functions = built.assembly(name)
    assert_fit(package.kernels, resources, MAX_SHARED)
    assert_no_local_memory(package.kernels, functions)
    (gemm,) = gemm_kernels(package)
    counts = sass.opcodes(functions[gemm["entry"]])
    kind = "BF16" if "bf16" in name else "F16"
    assert family(counts, "HGMMA.") == {f"HGMMA.64x{gemm['config']['tile'][1]}x16.F32"
                                        + (".BF16" if kind == "BF16" else "")}, sorted(counts)
    assert counts["UTMALDG"] > 0 and counts["SYNCS"] > 0, sorted(counts)
    assert sass.wgmma_hazards(functions[gemm["entry"]]) == []


# ---------------------------------------------------------------------------
# The conversion itself, on the kernel interpreter: tc-sm90's consumers'
# conversion of x's tiles (Prologues.begin_tile, convert_conv) in a launch of
# its own, its source tiles as TMA's im2col mode would load them (x at each
# row's tap, zeros in the padding, past C and past M), its output against
# the prologue applied in NumPy with the padding's zeros kept.

def _gpu_ready(graph):
    """The graph's module at dnn-map-tensor-cores (before it runs) and its
    convolution's kernel function."""
    from dnnc.stages import run_stages

    module = graph_mlir.to_module(graph)
    stages = pipelines.cuda(ARCH)
    gpu = next(s for s in stages if s.name == "gpu")
    run_stages(module, stages[:stages.index(gpu)])
    before = gpu.passes[:gpu.passes.index("dnn-map-tensor-cores")]
    with module.context:
        passes.run_pipeline(module, "builtin.module(" + ",".join(before) + ")")
        fn = next(f.operation for f in module.body.operations
                  if "dnn.conv" in f.attributes)
    return module, fn


def _arguments(module, fn):
    """(graph tensor name, shape) of each argument of kernel function
    ``fn``, from the graph function's call of it."""
    from dnnc.codegen.gpu import irutil

    graph = next(f.operation for f in module.body.operations if "dnn.graph" in f.attributes)
    names = [ir.StringAttr(ir.DictAttr(a)["dnn.name"]).value
             for a in ir.ArrayAttr(graph.attributes["arg_attrs"])]
    arguments = list(irutil.body(graph).arguments)
    callee = irutil.symbol(fn)
    call = next(op.operation for op in irutil.body(graph).operations
                if op.operation.name == "func.call"
                and ir.FlatSymbolRefAttr(op.attributes["callee"]).value == callee)
    out = []
    for v in call.operands:
        index = next(i for i, a in enumerate(arguments) if a == v)
        out.append((names[index], list(ir.MemRefType(v.type).shape)))
    return out


class _Stub:
    """What Prologues reads of a tc-sm90 Kernel."""

    def __init__(self, conv, tile):
        from dnnc.codegen.gpu.tensorcore.sm90.im2col import Im2colOperand

        self.gemm, self.tile = conv.gemm, tile
        self.element = conv.gemm.element
        self.a = Im2colOperand(conv, tile.m, self.element, tile.k, swizzled=False)


def _emit_conversion(fn, conv, tile, tiles_m, steps):
    """A launch at the end of ``fn``: block b converts tile b // steps of
    M at K step b % steps, read from a new argument (tiles x BM x BK as
    stored) into another (the two consumers' converted tiles, swizzled, as
    raw elements)."""
    from mlir.dialects import arith, gpu, llvm, vector

    from dnnc.codegen.gpu import irutil
    from dnnc.codegen.gpu.tensorcore.emit import idx, shared_base, shared_ptr, to_i64
    from dnnc.codegen.gpu.tensorcore.sm90.prologue import Prologues

    block = irutil.body(fn)
    element = ir.MemRefType(conv.x.type).element_type
    blocks = tiles_m * steps
    shape = ir.MemRefType.get([blocks, tile.m * tile.k], element)
    loc = ir.Location.unknown()
    src, out = block.add_argument(shape, loc), block.add_argument(shape, loc)
    inputs = [a.type for a in block.arguments]
    fn.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(inputs, []))
    ret = list(block.operations)[-1]
    threads = 2 * 128
    per = tile.m * tile.k // threads
    with ir.InsertionPoint(ret), loc:
        launch = gpu.LaunchOp((idx(blocks), idx(1), idx(1)), (idx(threads), idx(1), idx(1)),
                              dynamic_shared_memory_size=arith.constant(
                                  ir.IntegerType.get_signless(32), 2 * tile.m * 128))
        with ir.InsertionPoint(launch.regions[0].blocks[0]):
            b = gpu.block_id(gpu.Dimension.x)
            tid = gpu.thread_id(gpu.Dimension.x)
            base = shared_base(1024)
            # The source tile as TMA would leave it: rows of BK elements.
            vec = ir.VectorType.get([8], element)
            for j in range(per // 8):
                e = arith.muli(arith.addi(tid, idx(j * threads)), idx(8))
                value = vector.load(vec, src, [b, e])
                llvm.store(value, shared_ptr(arith.addi(base, to_i64(arith.muli(e, idx(2))))))
            gpu.barrier()
            stub = _Stub(conv, tile)
            prologues = Prologues(stub)
            consumer = arith.divui(tid, idx(128))
            local = arith.remui(tid, idx(128))
            tile_m, kt = arith.divui(b, idx(steps)), arith.remui(b, idx(steps))
            prologues.begin_tile(consumer, local, idx(0), tile_m)
            part = to_i64(arith.muli(consumer, idx(64 * 128)))
            converted = arith.addi(base, to_i64(idx(tile.m * 128)))
            prologues.convert_conv(arith.addi(base, part), arith.addi(converted, part), local,
                                   arith.muli(kt, idx(tile.k)))
            gpu.barrier()
            for j in range(per // 8):
                e = arith.muli(arith.addi(tid, idx(j * threads)), idx(8))
                at = arith.addi(converted, to_i64(arith.muli(e, idx(2))))
                vector.store(llvm.load(vec, shared_ptr(at)), out, [b, e])
            gpu.TerminatorOp()
    return launch


def _reference_tiles(conv_dims, x, scale, shift, tile, tiles_m, steps, prologue):
    """(source tiles as TMA loads them, converted tiles in wgmma's swizzled
    layout), each [tiles x BM x BK], from NumPy."""
    import ml_dtypes

    (n, c, image, window, stride, dilation, pre, out) = conv_dims
    padded = -(-c // tile.k) * tile.k
    m_total = n * math.prod(out)
    src = np.zeros((tiles_m * steps, tile.m, tile.k), np.float32)
    want = np.zeros_like(src)
    bf16 = ml_dtypes.bfloat16
    for t in range(tiles_m * steps):
        tm, kt = divmod(t, steps)
        tap, c0 = divmod(kt * tile.k, padded)
        taps = np.unravel_index(tap, window)
        for r in range(tile.m):
            m = tm * tile.m + r
            if m >= m_total:
                continue
            image_index, *pixel = np.unravel_index(m, [n] + list(out))
            at = [o * s - p + t_ * d for o, s, p, t_, d in
                  zip(pixel, stride, pre, taps, dilation)]
            if not all(0 <= a < size for a, size in zip(at, image)):
                continue
            channels = np.arange(c0, min(c0 + tile.k, c))
            if not len(channels):
                continue
            values = x[(image_index, *at)][channels]          # x is [N, *image, C]
            src[t, r, :len(channels)] = values
            h = values.astype(np.float32)
            if prologue in ("bn_relu", "bn"):
                h = (h * scale[channels]).astype(bf16).astype(np.float32)
                h = (h + shift[channels]).astype(bf16).astype(np.float32)
            if prologue in ("bn_relu", "relu"):
                h = np.maximum(h, 0)
            want[t, r, :len(channels)] = h.astype(bf16).astype(np.float32)
    # wgmma's layout: each consumer's 64 rows of 128 bytes, 16-byte chunk j
    # of row L at chunk j ^ (L % 8).
    swizzled = np.zeros_like(want)
    for r in range(tile.m):
        for j in range(tile.k // 8):
            at = (j ^ (r % 64 % 8)) * 8
            swizzled[:, r, at:at + 8] = want[:, r, j * 8:j * 8 + 8]
    return src, swizzled


@pytest.mark.parametrize("prologue, x_dims, window, attrs", [
    ("bn_relu", [3, 72, 10, 9], [3, 3], dict(stride=[2, 1], dilation=[1, 2],
                                              pre_padding=[2, 1], post_padding=[0, 3])),
    ("bn", [1, 16, 5, 4, 6], [2, 3, 3], dict(stride=[1, 1, 2], dilation=[2, 1, 1],
                                             pre_padding=[1, 0, 2], post_padding=[0, 2, 1])),
    ("relu", [3, 8, 9, 5], [1, 2], dict(pre_padding=[0, 1], post_padding=[0, 0])),
])
def test_conversion_zeroes_the_padding(prologue, x_dims, window, attrs):
    """Every tile of M (the last past M in part) at every K step (C = 72:
    two steps a tap, the second past C in part). The first case has two
    tiles of M, stride, dilation and asymmetric padding; the second is 3-D
    with a shift and no relu; the third a relu alone (relu(0) is 0: the
    rows, channels and layout)."""
    from dnnc.codegen.gpu.tensorcore import conv as conv_match
    from dnnc.codegen.gpu.tensorcore.sm90 import Tile
    from kernel_interpreter import run_kernel

    graph = bn_conv("convert", "bf16", x_dims, 8, window, prologue=prologue, **attrs)
    module, fn = _gpu_ready(graph)
    tile = Tile(128, 64, 64, 4, 2)
    with module.context, ir.Location.unknown():
        conv = conv_match.match(fn, tile.k)
        assert conv.gemm.a.prologue is not None
        tiles_m = -(-conv.gemm.m // tile.m)
        steps = conv.gemm.k // tile.k
        _emit_conversion(fn, conv, tile, tiles_m, steps)
        dims = (x_dims[0], x_dims[1], x_dims[2:], window, conv.stride, conv.dilation, conv.pre,
                conv.out)
    rng = np.random.default_rng(7)
    arrays = {t.name: rng.standard_normal([int(d) for d in t.dim]) for t in graph.inputs}
    arrays["shift"] = arrays.get("shift", np.zeros(1)) + 0.5
    nhwc = np.moveaxis(arrays["x"], 1, -1)
    import ml_dtypes
    nhwc = nhwc.astype(ml_dtypes.bfloat16).astype(np.float32)
    scale = arrays.get("scale", np.ones(x_dims[1])).reshape(-1).astype(np.float32)
    shift = arrays.get("shift", np.zeros(x_dims[1])).reshape(-1).astype(np.float32)
    src, want = _reference_tiles(dims, nhwc, scale, shift, tile, tiles_m, steps, prologue)
    with module.context:
        args = [arrays.get(name, np.zeros(shape)) for name, shape in _arguments(module, fn)]
        args += [src.reshape(len(src), -1), np.zeros((len(src), tile.m * tile.k))]
        got = run_kernel(fn, args)[-1].reshape(want.shape)
    # Where the padding's taps kept relu(shift), this fails.
    np.testing.assert_array_equal(got, want)
