"""tc-sm80's split-K (dnnc/codegen/gpu/tensorcore/sm80/splitk.py), without a
GPU.

* The kernels, interpreted on the CPU (kernel_interpreter.py), their
  output and their f32 workspace poisoned with NaN first, against the NumPy
  reference: filter gradients (odd K; odd C in tiles spanning taps; C = 40
  with the taps as the GEMM's batch; strided), forward convolutions (with
  a bias and relu; 3-D), a strided data gradient (each stride phase's GEMM
  split), and matmuls (an odd N, a batch), with splits whose last runs
  fewer K steps than the others; a kernel split so is two launches.
* The heuristics: the odd-channel filter gradients of large N·P·Q (C or K
  in 1, 3, 7, 63, 65 over 32 x 56 x 56 pixels) take tc-sm80 with K split
  on sm_80 and on sm_90a, enough blocks for the SMs, the reason saying
  so; a layer whose tiles fill the SMs is not split; ``tc80_split``'s
  rule on its own.
* SASS (sm_80 and sm_90a) of a split filter gradient: HMMA, no spills or
  local memory, in the GEMM and in the launch that sums the partials.
"""

import math

import numpy as np
import pytest

import dnnc
from dnnc import compiler, graph_mlir
from dnnc.codegen.gpu import ptxas, sass
from dnnc.codegen.gpu.tensorcore import fold
from dnnc.heuristics.contraction import TC80_SPLIT_FROM_STEPS, tc80_split
from kernel_builds import assert_no_local_memory, assert_no_spills
from test_conv_odd_channels import conv_graph
from test_conv_phases import interpret
from test_tc_sass import needs_sass

RTOL = {"bf16": 1.6e-2, "f16": 2e-3}

# name: (direction, dtype, x dims, K, window, attrs, epilogue, split)
CONVS = {
    # 5 K steps of 32 pixels over 3 splits: 2, 2 and 1.
    "wgrad_k65_c64_bf16": ("wgrad", "bf16", [2, 64, 9, 8], 65, [3, 3], dict(padding=[1, 1]),
                           None, 3),
    "wgrad_k16_c63_spanning_f16": ("wgrad", "f16", [2, 63, 8, 7], 16, [3, 3],
                                   dict(padding=[1, 1]), None, 4),
    "wgrad_k3_c7_strided_bf16": ("wgrad", "bf16", [1, 7, 15, 12], 3, [3, 2],
                                 dict(stride=[2, 1], pre_padding=[1, 0], post_padding=[0, 1],
                                      conv_mode="convolution"), None, 2),
    "wgrad_k7_c40_tap_batched_f16": ("wgrad", "f16", [2, 40, 7, 6], 7, [3, 3],
                                     dict(padding=[1, 1]), None, 3),
    "fprop_c63_k65_bias_relu_bf16": ("fprop", "bf16", [1, 63, 6, 5], 65, [3, 3],
                                     dict(padding=[1, 1]), "bias_relu", 4),
    "fprop_c65_3d_f16": ("fprop", "f16", [1, 65, 4, 3, 5], 9, [2, 3, 1],
                         dict(pre_padding=[1, 1, 0], post_padding=[0, 1, 0]), None, 5),
    "dgrad_k65_c63_strided_bf16": ("dgrad", "bf16", [1, 63, 7, 6], 65, [3, 3],
                                   dict(stride=[2, 2], padding=[1, 1]), None, 2),
}


def _conv(name):
    direction, dtype, x_dims, k, window, attrs, epilogue, _ = CONVS[name]
    return conv_graph(name, direction, dtype, x_dims, k, window, epilogue, **attrs)


def _tolerance(dtype, products):
    rtol = RTOL[dtype]
    return rtol, rtol * max(1.0, 4 * math.sqrt(products))


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("name", sorted(CONVS))
def test_split_conv_interpreted(name, arch):
    """A convolution on tc-sm80 with K split (an override), interpreted:
    every output written (no NaN left; the workspace starts as NaN, so a
    partial the sum reads before a split wrote it shows), within the
    type's tolerance of the reference."""
    direction, dtype, x_dims, k, window, _, _, split = CONVS[name]
    override = f"*=strategy:tc-sm80,tile:64x64x32,split:{split}"
    expected, got, config = interpret(_conv(name), dtype, arch, override, poison=True)
    assert 'strategy = "tc-sm80"' in config and f"split = {split}" in config, config
    assert not np.isnan(got).any(), np.argwhere(np.isnan(got))[:5]
    reduced = {"fprop": x_dims[1] * math.prod(window), "dgrad": k * math.prod(window),
               "wgrad": x_dims[0] * math.prod(x_dims[2:])}
    rtol, atol = _tolerance(dtype, reduced[direction])
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)


def matmul_graph(name, dtype, a_dims, n, bias=False):
    """C = A @ B (+ a bias row, relu), A ``a_dims`` (batched when 3-D)."""
    def build():
        g = dnnc.Graph(name=name, io_data_type=dtype, compute_data_type="f32")
        a = g.tensor(name="a", dim=a_dims)
        b = g.tensor(name="b", dim=a_dims[:-2] + [a_dims[-1], n])
        y = g.matmul(a, b)
        if bias:
            y = g.relu(g.add(y, g.tensor(name="bias", dim=[1] * (len(a_dims) - 1) + [n])))
        y.set_output(True)
        return g
    return build


# name: (dtype, A dims, N, bias, split)
MATMULS = {
    "matmul_bias_relu_bf16": ("bf16", [70, 200], 38, True, 3),
    "matmul_batched_f16": ("f16", [2, 33, 160], 72, False, 2),
}


@pytest.mark.parametrize("name", sorted(MATMULS))
def test_split_matmul_interpreted(name):
    """A tc-sm80 matmul with K split (an override) on sm_80, interpreted
    against the reference: N past the tile, a batch, a fused bias and
    relu. (An odd N, whose partials' rows are padded to an even length, is
    the convolutions': tc-sm80's matmul loader takes B's rows 4-byte
    aligned.)"""
    dtype, a_dims, n, bias, split = MATMULS[name]
    override = f"*=strategy:tc-sm80,tile:64x64x32,split:{split}"
    expected, got, config = interpret(matmul_graph(name, dtype, a_dims, n, bias), dtype,
                                      "sm_80", override, poison=True)
    assert f"split = {split}" in config, config
    assert not np.isnan(got).any(), np.argwhere(np.isnan(got))[:5]
    rtol, atol = _tolerance(dtype, a_dims[-1])
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)


def _package(build, arch, name, config=None):
    return compiler.compile_module(graph_mlir.to_module(build()), compiler.Options(
        target="cuda", arch=arch, tuning_db="off", config=config), basename=f"{name}_{arch}")


def test_split_is_two_launches_in_the_plan():
    """A split kernel runs the GEMM's launch (tiles x splits blocks) and the
    sum's; the plan's reason says how K is split."""
    name = "wgrad_k65_c64_bf16"
    kernels = _package(_conv(name), "sm_80", name,
                       "*=strategy:tc-sm80,tile:64x64x32,split:3").kernels
    assert [k["strategy"] for k in kernels] == ["tc-sm80", "tc-sm80"], kernels
    # 65 x 576 in tiles of 64 x 64: 2 x 9 tiles, 3 splits.
    assert kernels[0]["grid"] == [54, 1, 1], kernels[0]["grid"]
    assert "K split 3 ways (2 K steps of 32 a split)" in kernels[0]["reason"], \
        kernels[0]["reason"]


# Odd-channel filter gradients of large N·P·Q: (what, C, K, image).
ODD_WGRADS = [("c64_k65", 64, 65, 56), ("c63_k65", 63, 65, 56), ("c3_k64", 3, 64, 112),
              ("c64_k1", 64, 1, 56), ("c7_k64", 7, 64, 56), ("c64_k7", 64, 7, 56),
              ("c1_k63", 1, 63, 56), ("c65_k3", 65, 3, 56)]
SMS = {"sm_80": 108, "sm_90a": 132}


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("what,c,k,image", ODD_WGRADS)
def test_odd_wgrad_heuristics_split(what, c, k, image, arch):
    """The 3x3 filter gradients of 32 x ``image``² pixels whose C or K is
    odd or not a multiple of 8 run on tc-sm80 (on sm_90a too: TMA cannot
    step such rows) with K split: as many blocks as the SMs at least
    (their tiles alone leave most SMs idle), the reason saying the split.
    On sm_90a a C below 8 under a K that is a multiple of 8 has its
    filter's columns folded into its channels on tc-sm90 instead
    (test_conv_fold_wgrad.py)."""
    if arch == "sm_90a" and fold.folds("wgrad", c, [3, 3], 2) and k % 8 == 0:
        pytest.skip("tc-sm90 folds the filter's columns into the channels (fold.py)")
    build = conv_graph(f"odd_{what}", "wgrad", "bf16", [32, c, image, image], k, [3, 3],
                       padding=[1, 1])
    gemm, reduce_ = _package(build, arch, f"odd_{what}").kernels
    assert gemm["strategy"] == "tc-sm80", gemm["reason"]
    split = gemm["config"].get("split", 1)
    assert split > 1, gemm["reason"]
    tiles = gemm["grid"][0] // split
    assert tiles < SMS[arch] <= gemm["grid"][0] or split == 64, (tiles, split)
    assert f"K split {split} ways" in gemm["reason"], gemm["reason"]
    # The sum: one thread per pair of dw's columns.
    assert reduce_["block"] == [256, 1, 1], reduce_
    assert reduce_["grid"][0] == -(-k * -(-9 * c // 2) // 256), reduce_


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_layer_that_fills_the_sms_is_not_split(arch):
    """The forward 3x3 convolution of 63 -> 65 channels over 32 x 56²
    pixels: hundreds of tiles, one launch, no split."""
    build = conv_graph("fprop_layer", "fprop", "bf16", [32, 63, 56, 56], 65, [3, 3],
                       padding=[1, 1])
    (k,) = _package(build, arch, "fprop_layer").kernels
    assert k["strategy"] == "tc-sm80" and "split" not in k["config"], k["config"]


def test_small_forward_is_split():
    """A forward convolution of a few output pixels and a long reduction
    (1 x 512 x 7 x 7, 3x3, C = 511: 2 tiles of 64 x 64 for 108 SMs) splits
    its K on sm_80."""
    build = conv_graph("fprop_small", "fprop", "bf16", [1, 511, 7, 7], 65, [3, 3],
                       padding=[1, 1])
    gemm, _ = _package(build, "sm_80", "fprop_small").kernels
    assert gemm["config"].get("split", 1) > 1, gemm["reason"]


def test_tc80_split_rule():
    """tc80_split: 1 where the tiles give every SM a block or K is short;
    else the blocks the SMs hold at once (two 4-warp blocks an SM, one of
    8 warps), each split at least 8 K steps, equal runs, at most 64."""
    assert tc80_split(132, 10000, 4, 132) == 1
    assert tc80_split(18, TC80_SPLIT_FROM_STEPS - 1, 4, 132) == 1
    assert tc80_split(18, 3136, 4, 132) == 14        # 264 // 18
    assert tc80_split(18, 3136, 8, 132) == 7         # 132 // 18
    assert tc80_split(1, 100000, 4, 132) == 64
    # 70 steps: at most 8 splits of 8 (as 8 of 9, the last 7); 100 steps
    # over 12 splits run as 12 of 9 (the last 1).
    assert tc80_split(2, 70, 4, 132) == 8
    split = tc80_split(20, 100, 4, 132)
    per = -(-100 // split)
    assert -(-100 // per) == split and (split - 1) * per < 100


@needs_sass
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_split_wgrad_sass(arch):
    """ptxas's verdict and the SASS of the split K = 65 filter gradient
    (the layer's size): the GEMM is HMMA.16816.F32.BF16 with dy's elements
    loaded one by one, the sum reads the partials; neither spills nor uses
    local memory."""
    build = conv_graph("sass_split", "wgrad", "bf16", [32, 64, 56, 56], 65, [3, 3],
                       padding=[1, 1])
    built = _package(build, arch, "sass_split")
    resources, cubin = ptxas.assemble_cubin(built.ptx, arch)
    functions = sass.functions(sass.disassemble(cubin))
    gemm, reduce_ = built.kernels
    assert gemm["config"].get("split", 1) > 1, gemm["config"]
    assert_no_spills([gemm, reduce_], resources)
    assert_no_local_memory([gemm, reduce_], functions)
    counts = sass.opcodes(functions[gemm["entry"]])
    assert counts["HMMA.16816.F32.BF16"] > 0, sorted(counts)
    assert any(op.startswith("LDG") and "U16" in op for op in counts), sorted(counts)
    assert not any(op.startswith("HMMA") for op in sass.opcodes(functions[reduce_["entry"]]))


def test_narrowed_tile_keeps_the_grid():
    """A tile narrowed for its element-wise loads (sm80.fit_element_wise)
    after the heuristics sized its split: the split shrinks by as much as
    the tiles grow, so the grid stays about the size the heuristics chose."""
    from types import SimpleNamespace

    from dnnc.codegen.gpu.tensorcore.sm80 import Tile
    from dnnc.passes.dnn_map_tensor_cores import sm80_refit_split

    gemm = SimpleNamespace(m=128, n=576)
    tile = Tile(128, 128, 64, 4, 8, splits=12)            # 5 tiles, 60 blocks
    narrowed = Tile(128, 64, 32, 4, 8, splits=12)          # 9 tiles
    assert sm80_refit_split(gemm, tile, narrowed).splits == 6
    assert sm80_refit_split(gemm, Tile(128, 128, 64, 4, 8), Tile(128, 64, 32, 4, 8)).splits == 1
    assert sm80_refit_split(gemm, tile, Tile(32, 32, 32, 4, 4, splits=12)).splits == 1


def test_sm90a_matmul_handed_to_tc_sm80_is_split():
    """A matmul tc-sm90 does not take (K = 2058: rows of A of 4116 bytes,
    which TMA cannot step) with one tile and 65 K steps: tc-sm80 on sm_90a
    splits its K (8 splits of 9 steps, the last 2) and says so; interpreted
    against the reference."""
    dtype = "bf16"
    build = matmul_graph("handed", dtype, [40, 2058], 24, True)
    expected, got, config = interpret(build, dtype, "sm_90a", poison=True)
    assert 'strategy = "tc-sm80"' in config and "split = 8" in config, config
    assert not np.isnan(got).any(), np.argwhere(np.isnan(got))[:5]
    rtol, atol = _tolerance(dtype, 2058)
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)
    gemm, _ = _package(build, "sm_90a", "handed").kernels
    assert gemm["reason"].startswith("tc-sm90 does not apply ("), gemm["reason"]
    assert "K split 8 ways (9 K steps of 32 a split)" in gemm["reason"], gemm["reason"]
