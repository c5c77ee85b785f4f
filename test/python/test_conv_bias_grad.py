"""A convolution's bias gradient (db = the sum of dy over N·(D)·P·Q) beside
its filter gradient, without a GPU (dnnc/codegen/gpu/tensorcore/
conv_bias_grad.py, sm90/bias_grad.py).

* Fusion keeps the graph's meaning: the reference interpreter gives the
  same bits before and after the front pipeline, which makes one
  conv_wgrad kernel whatever the order of the two ops (keepdims or not,
  3-D); the CPU back end, which runs the fused kernel's linalg form,
  matches the reference.
* On sm_90a the plan is one tc-sm90 kernel whose reason names the bias
  gradient, unsplit and with split K summed every way (last arrival, a
  second launch, clusters with and without partials); on sm_80 the
  filter gradient stays tc-sm80 and the sum stays kernels of its own, the
  reason saying so; what tc-sm90 does not take (K not a multiple of 8,
  groups, f32) keeps two kernels with the reason.
* ptxas and the SASS (skipped without them): HGMMA, no spills, no local
  memory.
* The consumers' sum itself (BiasGradSum.step, finish; with split K,
  sum_splits and reduce over the partials) on the kernel interpreter: fed
  swizzled dy tiles as TMA lays them, every channel of db equals NumPy's
  sum, the blocks of other columns of tiles write nothing, both ways of
  summing the splits give the same bits.
"""

import numpy as np
import pytest

import dnnc
from dnnc import compiler, graph_mlir, interpreter, passes, pipelines
from dnnc.codegen.gpu import sass
from kernel_builds import Builds, assert_fit, assert_no_local_memory
from mlir import ir
from refutil import typed
from test_conv_tensor_cores import channels_last
from test_tc_sass import ARCH, MAX_SHARED, needs_sass

FRONT = "builtin.module(" + ",".join(p for s in pipelines.FRONT for p in s.passes) + ")"
NOTE = "the bias gradient (sum of dy) taken from dy's tiles in shared memory by the first " \
    "column of tiles"


def wgrad_bias(name, dtype, x_dims, k, window, bias_first=False, keepdims=True, groups=1,
               **attrs):
    """conv_wgrad(x, dy) and the sum of dy over every dim but K, channels-
    last tensors of ``dtype``; ``bias_first``: the sum before the filter
    gradient in the graph."""
    def build():
        probe = dnnc.Graph(name=name, io_data_type=dtype, compute_data_type="f32")
        w_dims = [k, x_dims[1] // groups, *window]
        xp = probe.tensor(name="x", dim=list(x_dims), stride=channels_last(list(x_dims)))
        wp = probe.tensor(name="w", dim=w_dims, stride=channels_last(w_dims))
        y_dims = [int(d) for d in probe.conv_fprop(xp, wp, **attrs).dim]
        g = dnnc.Graph(name=name, io_data_type=dtype, intermediate_data_type=dtype,
                       compute_data_type="f32")
        x = g.tensor(name="x", dim=list(x_dims), stride=channels_last(list(x_dims)))
        dy = g.tensor(name="dy", dim=y_dims, stride=channels_last(y_dims))
        axes = [0] + list(range(2, len(y_dims)))
        if bias_first:
            db = g.reduction(dy, "sum", axes, keepdims=keepdims)
        dw = g.conv_wgrad(x, dy, w_dims, **attrs)
        if not bias_first:
            db = g.reduction(dy, "sum", axes, keepdims=keepdims)
        dw.set_output(True).set_stride(channels_last(w_dims))
        db.set_output(True)
        return g
    return build


# name: graph; each fuses into one conv_wgrad kernel that tc-sm90 runs.
FUSED = {
    "wb_3x3_bf16": wgrad_bias("wb_3x3_bf16", "bf16", [2, 64, 9, 11], 128, [3, 3],
                              padding=[1, 1]),
    # K = 40: one tile of 64 rows, channels past K zero-filled.
    "wb_1x1_k40_f16": wgrad_bias("wb_1x1_k40_f16", "f16", [3, 32, 7, 6], 40, [1, 1],
                                 bias_first=True),
    # K = 200: two tiles of M (the second ragged), strided, asymmetric.
    "wb_strided_k200_bf16": wgrad_bias("wb_strided_k200_bf16", "bf16", [2, 64, 13, 9], 200,
                                       [3, 2], stride=[2, 2], pre_padding=[1, 0],
                                       post_padding=[0, 1], keepdims=False),
    # C = 24 over 3x3 taps: the taps are the GEMM's batch (only tap 0 sums).
    "wb_taps_c24_bf16": wgrad_bias("wb_taps_c24_bf16", "bf16", [2, 24, 8, 8], 64, [3, 3],
                                   padding=[1, 1], dilation=[1, 2]),
    # A long reduction (N·P·Q = 4096, 64 K steps): K splits of several steps.
    "wb_long_k96_bf16": wgrad_bias("wb_long_k96_bf16", "bf16", [4, 64, 32, 32], 96, [3, 3],
                                   padding=[1, 1]),
    # 1x1, 64 K steps: one tile, so that every split of a cluster has a block.
    "wb_1x1_long_f16": wgrad_bias("wb_1x1_long_f16", "f16", [4, 64, 32, 32], 96, [1, 1]),
    "wb_3d_f16": wgrad_bias("wb_3d_f16", "f16", [1, 16, 4, 5, 6], 24, [3, 1, 3],
                            pre_padding=[1, 0, 1], post_padding=[1, 0, 0]),
}
# name: (graph, config override): the split-K sums, forced.
SPLITS = {
    "last_arrival": ("wb_3x3_bf16", "tile:128x64x64,split:2"),
    "second_launch": ("wb_long_k96_bf16", "tile:128x64x64,split:8"),
    "cluster_owner": ("wb_3x3_bf16", "tile:128x64x64,split:2,cluster:2"),
    "cluster_partials": ("wb_1x1_long_f16", "tile:128x64x64,split:8,cluster:2"),
    "cluster_second_launch": ("wb_1x1_long_f16", "tile:128x64x64,split:16,cluster:2"),
}


def _inputs(graph, seed=0):
    rng = np.random.default_rng(seed)
    return [typed(rng.standard_normal([int(d) for d in t.dim]), t.get_data_type())
            for t in graph.inputs]


def _anchors(module):
    with module.context:
        return [str(f.attributes["dnn.anchor"]).strip('"') for f in module.body.operations
                if f.operation.name == "func.func" and "dnn.kernel" in f.attributes]


def _fused(graph, pipeline=FRONT, exact=True):
    """The module after ``pipeline``, checked bit for bit against the graph
    on the reference interpreter (not ``exact``: an f32 sum split into two
    reductions rounds its partials, to f32's rounding)."""
    module = graph_mlir.to_module(graph)
    arrays = _inputs(graph)
    before = interpreter.run_module(module, arrays)
    passes.run_pipeline(module, pipeline)
    after = interpreter.run_module(module, arrays)
    for b, a in zip(before, after):
        if exact:
            np.testing.assert_array_equal(a, b)
        else:
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    return module


@pytest.mark.parametrize("name", sorted(FUSED))
def test_bias_gradient_joins_the_filter_gradient(name):
    assert _anchors(_fused(FUSED[name]())) == ["conv_wgrad"]


def backward(name, computed=False):
    """A convolution's backward from one dy: dx, dw and db (dy computed by a
    relu_backward where ``computed``)."""
    def build():
        g = dnnc.Graph(name=name, io_data_type="bf16", intermediate_data_type="bf16",
                       compute_data_type="f32")
        xd, yd, wd = [2, 64, 8, 8], [2, 64, 8, 8], [64, 64, 3, 3]
        x = g.tensor(name="x", dim=xd, stride=channels_last(xd))
        w = g.tensor(name="w", dim=wd, stride=channels_last(wd))
        dy = g.tensor(name="dy", dim=yd, stride=channels_last(yd))
        if computed:
            y = g.tensor(name="y", dim=yd, stride=channels_last(yd))
            dy = g.relu_backward(dy, y)
        dx = g.conv_dgrad(dy, w, xd, padding=1)
        dx.set_output(True).set_stride(channels_last(xd))
        dw = g.conv_wgrad(x, dy, wd, padding=1)
        dw.set_output(True).set_stride(channels_last(wd))
        g.reduction(dy, "sum", [0, 2, 3]).set_output(True)
        return g
    return build


@pytest.mark.parametrize("computed", [False, True])
def test_backward_from_one_dy(computed):
    """dx, dw and db of one dy (a graph input, or computed): the sum joins
    the filter gradient, the data gradient stays a kernel of its own; on
    sm_90a both are tc-sm90 kernels, the filter gradient's with the sum."""
    graph = backward(f"backward_{computed}", computed)
    module = _fused(graph())
    assert _anchors(module)[-2:] == ["conv_dgrad", "conv_wgrad"], _anchors(module)
    package = compiler.compile_module(graph_mlir.to_module(graph()), compiler.Options(
        target="cuda", arch=ARCH, tuning_db="off"), basename="backward")
    convs = {k["name"].split("_")[-1]: k for k in package.kernels if "_conv_" in k["name"]}
    assert convs["dgrad"]["strategy"] == convs["wgrad"]["strategy"] == "tc-sm90"
    assert NOTE in convs["wgrad"]["reason"] and NOTE not in convs["dgrad"]["reason"]
    assert not any("reduction" in k["name"] for k in package.kernels)


def test_option_off_splits_the_sum():
    graph = FUSED["wb_3x3_bf16"]()
    off = FRONT.replace("dnn-split-reductions,", "dnn-split-reductions{conv_bias_grad=false},") \
        .replace("dnn-fuse,", "dnn-fuse{conv_bias_grad=false},")
    module = _fused(graph, off)
    anchors = _anchors(module)
    assert anchors[0] == "conv_wgrad" and anchors.count("reduction") == 2, anchors
    with module.context:
        wgrad = next(f for f in module.body.operations if "dnn.kernel" in f.attributes
                     and str(f.attributes["dnn.anchor"]) == '"conv_wgrad"')
        note = ir.StringAttr(wgrad.attributes["dnn.fusion_note"]).value
    assert note == "the bias gradient (sum of dy) left to kernels of its own (tc-sm80 " \
        "computes none beside a filter gradient)", note


@pytest.mark.parametrize("name", ["wb_3x3_bf16", "wb_1x1_k40_f16", "wb_strided_k200_bf16",
                                  "wb_3d_f16"])
def test_cpu_back_end_matches_reference(name):
    """dw to the type's rounding scaled by the reduction's length; db to
    the rounding of its sum."""
    graph = FUSED[name]()
    arrays = _inputs(graph)
    expected = interpreter.run_module(graph_mlir.to_module(graph), arrays)
    got = graph.compile(target="cpu").run(*arrays)
    dy = next(t for t in graph.inputs if t.name == "dy")
    pixels = int(np.prod([int(d) for d in dy.dim])) // int(dy.dim[1])
    eps = 2.0 ** -8 if "bf16" in name else 2.0 ** -11
    for e, o in zip(expected, got):
        e, o = np.asarray(e, np.float64), np.asarray(o, np.float64)
        assert e.shape == o.shape
        tol = 2 * eps * np.sqrt(pixels) * max(1.0, float(np.abs(e).max()))
        np.testing.assert_allclose(o, e, rtol=0, atol=tol)


@pytest.fixture(scope="module")
def built():
    """Each graph compiled once per (arch, override), and assembled once;
    an override is the config of the graph's one conv_wgrad kernel."""
    return Builds(lambda name: FUSED[name](), ARCH,
                  config=lambda name, config: f"{name}_k0_conv_wgrad={config}" if config else None)


@pytest.mark.parametrize("name", sorted(FUSED))
def test_one_tc_sm90_kernel(built, name):
    kernels = built.package(name).kernels
    assert [k["strategy"] for k in kernels] == ["tc-sm90"] * len(kernels), \
        [(k["entry"], k["strategy"], k.get("reason")) for k in kernels]
    assert {k["name"] for k in kernels} == {f"{name}_k0_conv_wgrad"}
    reason = kernels[0]["reason"]
    assert "implicit GEMM (wgrad)" in reason and NOTE in reason, reason


@pytest.mark.parametrize("case", sorted(SPLITS))
def test_split_sums_in_split_order(built, case):
    name, config = SPLITS[case]
    kernels = built.package(name, config=config).kernels
    assert [k["strategy"] for k in kernels] == ["tc-sm90"] * len(kernels), kernels
    splits = int(config.split("split:")[1].split(",")[0])
    reason = kernels[0]["reason"]
    assert f"{NOTE}, {splits} split partials summed in split order" in reason, reason
    # The second launch sums the partials only beyond four of them.
    parts = splits // int(config.split("cluster:")[1]) if "cluster" in config else splits
    assert len(kernels) == (2 if parts > 4 else 1), [k["entry"] for k in kernels]


def test_sm80_keeps_the_sum_apart(built):
    kernels = built.package("wb_3x3_bf16", "sm_80").kernels
    wgrad = [k for k in kernels if "conv_wgrad" in k["name"]]
    assert wgrad and wgrad[0]["strategy"] == "tc-sm80", \
        [(k["entry"], k["strategy"]) for k in kernels]
    assert any("reduction" in k["name"] for k in kernels), [k["name"] for k in kernels]
    assert "the bias gradient (sum of dy) left to kernels of its own (tc-sm80 computes none " \
        "beside a filter gradient)" in wgrad[0]["reason"], wgrad[0]["reason"]


@pytest.mark.parametrize("x_dims, k, groups, dtype, why", [
    ([2, 64, 8, 8], 12, 1, "bf16", "K = 12, C = 64: tc-sm90 reads dy and x by TMA in 16-byte "
                                   "pixels"),
    ([2, 128, 8, 8], 64, 2, "bf16", "2 groups: the sum is taken beside a filter gradient of "
                                    "one group"),
    ([2, 64, 8, 8], 64, 1, "f32", "dy f32, x f32: the sum is taken from dy's tiles in shared "
                                  "memory"),
])
def test_what_tc_sm90_does_not_take_keeps_two_kernels(x_dims, k, groups, dtype, why):
    graph = wgrad_bias(f"unfused_{dtype}_{groups}", dtype, x_dims, k, [3, 3], groups=groups,
                       padding=[1, 1])()
    module = _fused(graph, exact=dtype != "f32")
    anchors = _anchors(module)
    assert anchors[0] == "conv_wgrad" and "reduction" in anchors, anchors
    with module.context:
        wgrad = next(f for f in module.body.operations if "dnn.kernel" in f.attributes
                     and str(f.attributes["dnn.anchor"]) == '"conv_wgrad"')
        note = ir.StringAttr(wgrad.attributes["dnn.fusion_note"]).value
    assert note.startswith("the bias gradient (sum of dy) left to kernels of its own (tc-sm90 "
                           f"sums none beside this one: {why}"), note


@needs_sass
@pytest.mark.parametrize("name, config", [(n, None) for n in sorted(FUSED)]
                         + [SPLITS[c] for c in sorted(SPLITS)])
def test_sass(built, name, config):
    """No spills or local memory, registers within 65536 / threads, shared
    memory within sm_90's; HGMMA of the operand type."""
    package = built.package(name, config=config)
    resources, functions = built.assembly(name, config=config)
    assert_fit(package.kernels, resources, MAX_SHARED)
    assert_no_local_memory(package.kernels, functions)
    counts = sass.opcodes(functions[package.kernels[0]["entry"]])
    assert any(op.startswith("HGMMA.") for op in counts), sorted(counts)
    assert sass.wgmma_hazards(functions[package.kernels[0]["entry"]]) == []


# ---------------------------------------------------------------------------
# The consumers' sum itself, on the kernel interpreter: BiasGradSum.step
# over K steps of dy's boxes as TMA's MN-major 128-byte swizzle lays them
# (zeros past N·P·Q and past K), then finish, in a launch of its own.

class _Kernel:
    """What BiasGradSum reads of a tc-sm90 Kernel."""

    def __init__(self, k, tile):
        from types import SimpleNamespace

        self.a = SimpleNamespace(mn_major=True)
        self.registers_a = False
        self.element = "bf16"
        self.tile = tile
        self.gemm = SimpleNamespace(m=k, batch=1)
        self.scheduler = SimpleNamespace(splits=1)


def _boxes(dy, tile, tiles_m, steps):
    """[tiles_m, steps, consumers, BK, 64] bf16 values of the boxes TMA
    loads of dy ([pixels, K]), each row's 16-byte chunk j at j ^ (row % 8)."""
    pixels, k = dy.shape
    out = np.zeros((tiles_m, steps, tile.consumers, tile.k, 64), np.float32)
    for tm in range(tiles_m):
        for kt in range(steps):
            for c in range(tile.consumers):
                rows = dy[kt * tile.k:(kt + 1) * tile.k,
                          tm * tile.m + 64 * c:min(tm * tile.m + 64 * c + 64, k)]
                box = np.zeros((tile.k, 64), np.float32)
                box[:rows.shape[0], :rows.shape[1]] = rows
                for r in range(tile.k):
                    for j in range(8):
                        at = (j ^ (r % 8)) * 8
                        out[tm, kt, c, r, at:at + 8] = box[r, j * 8:j * 8 + 8]
    return out


@pytest.mark.parametrize("pixels, k, splits", [(200, 200, 1), (64, 40, 1), (129, 128, 1),
                                                (520, 200, 3), (300, 72, 2)])
def test_consumers_sum_dy_tiles(pixels, k, splits):
    """Blocks (tile_m, tile_n, split) for tile_n in 0, 1: those of tile_n 1
    read other values (their sum must not reach db); every channel of db
    equals the bf16 rounding of the f32 sum of its column of dy. Split K
    (a block sums its split's steps): the splits' partials (a workspace
    poisoned with NaN: a partial read before it is written shows) summed
    by the warps that own the channels (``sum_splits``) and by the second
    launch's threads (``reduce``), to the same bits."""
    import ml_dtypes
    from types import SimpleNamespace

    from mlir.dialects import arith, gpu, llvm, vector

    from dnnc import parsing
    from dnnc.codegen.gpu.tensorcore.conv_bias_grad import BiasGrad
    from dnnc.codegen.gpu.tensorcore.emit import idx, if_, shared_base, shared_ptr, to_i64
    from dnnc.codegen.gpu.tensorcore.sm90.bias_grad import BiasGradSum
    from dnnc.codegen.gpu.tensorcore.sm90.support import Tile
    from kernel_interpreter import run_kernel

    tile = Tile(128, 64, 64, 4, 2)
    tiles_m, steps = -(-k // tile.m), -(-pixels // tile.k)
    per_split = -(-steps // splits)
    rng = np.random.default_rng(3)
    dy = rng.standard_normal((pixels, k)).astype(ml_dtypes.bfloat16).astype(np.float32)
    other = rng.standard_normal((pixels, k)).astype(ml_dtypes.bfloat16).astype(np.float32)
    boxes = np.stack([_boxes(dy, tile, tiles_m, steps), _boxes(other, tile, tiles_m, steps)],
                     axis=1)                   # [tiles_m, tile_n, steps, consumers, BK, 64]
    box = tile.k * 64
    module = parsing.parse(
        f"func.func @bias_sum(%src: memref<{boxes.size}xbf16>, %db: memref<1x{k}x1x1xbf16>, "
        f"%again: memref<{k}xbf16>) {{\n  return\n}}")
    with module.context, ir.Location.unknown():
        fn = next(iter(module.body.operations))
        src, db, again = list(fn.regions[0].blocks[0].arguments)
        ret = list(fn.regions[0].blocks[0].operations)[-1]
        kernel = _Kernel(k, tile)
        kernel.scheduler = SimpleNamespace(splits=splits)
        summer = BiasGradSum(kernel, BiasGrad([], db, ir.BF16Type.get()))
        threads = tile.consumers * 128
        per_block = steps * tile.consumers * box
        with ir.InsertionPoint(ret):
            summer.allocate()
            launch = gpu.LaunchOp((idx(tiles_m * 2 * splits), idx(1), idx(1)),
                                  (idx(threads), idx(1), idx(1)),
                                  dynamic_shared_memory_size=arith.constant(
                                      ir.IntegerType.get_signless(32), per_block * 2))
            with ir.InsertionPoint(launch.regions[0].blocks[0]):
                b = gpu.block_id(gpu.Dimension.x)
                tid = gpu.thread_id(gpu.Dimension.x)
                base = shared_base(1024)
                unit, split = arith.divui(b, idx(splits)), arith.remui(b, idx(splits))
                tile_m, tile_n = arith.divui(unit, idx(2)), arith.remui(unit, idx(2))
                # The unit's boxes, as TMA would leave them in its stages.
                vec = ir.VectorType.get([8], ir.BF16Type.get())
                for j in range(-(-per_block // (8 * threads))):
                    e = arith.muli(arith.addi(tid, idx(j * threads)), idx(8))
                    inside = arith.cmpi(arith.CmpIPredicate.ult, e, idx(per_block))

                    def copy(e=e):
                        value = vector.load(vec, src, [arith.addi(
                            arith.muli(unit, idx(per_block)), e)])
                        llvm.store(value, shared_ptr(arith.addi(
                            base, to_i64(arith.muli(e, idx(2))))))
                    if_(inside, copy)
                gpu.barrier()
                consumer = arith.divui(tid, idx(128))
                local = arith.remui(tid, idx(128))
                active = summer.active(idx(0), tile_n)
                sums = summer.zero()
                for kt in range(steps):
                    at = arith.addi(base, to_i64(arith.muli(
                        arith.addi(idx(kt * tile.consumers), consumer), idx(box * 2))))
                    mine = arith.cmpi(arith.CmpIPredicate.eq, split, idx(kt // per_split))
                    sums = summer.step(at, local, sums, arith.andi(active, mine))
                summer.finish(sums, consumer, local, idx(0), tile_m, tile_n,
                              split if splits > 1 else None)
                gpu.TerminatorOp()
            if splits > 1:
                # The owners of each tile's rows sum them into db...
                launch = gpu.LaunchOp((idx(tiles_m), idx(1), idx(1)),
                                      (idx(threads), idx(1), idx(1)))
                with ir.InsertionPoint(launch.regions[0].blocks[0]):
                    tid = gpu.thread_id(gpu.Dimension.x)
                    summer.sum_splits(arith.divui(tid, idx(128)), arith.remui(tid, idx(128)),
                                      idx(0), gpu.block_id(gpu.Dimension.x), idx(0))
                    gpu.TerminatorOp()
                # ... and a second launch's threads into ``again``.
                second = BiasGradSum(kernel, BiasGrad([], again, ir.BF16Type.get()))
                second.partials = summer.partials
                launch = gpu.LaunchOp((idx(-(-k // 256)), idx(1), idx(1)),
                                      (idx(256), idx(1), idx(1)))
                with ir.InsertionPoint(launch.regions[0].blocks[0]):
                    second.reduce(arith.addi(arith.muli(gpu.block_id(gpu.Dimension.x),
                                                        idx(256)),
                                             gpu.thread_id(gpu.Dimension.x)))
                    gpu.TerminatorOp()
        args = [boxes.reshape(-1), np.full((1, k, 1, 1), np.nan), np.full(k, np.nan)]
        out = run_kernel(fn, args, poison=True)
        got = out[1].reshape(-1)
    want = dy.astype(np.float64).sum(axis=0)
    np.testing.assert_allclose(got, want, rtol=2.0 ** -8, atol=1e-6)
    if splits > 1:
        np.testing.assert_array_equal(out[2], got)
