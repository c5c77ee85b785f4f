"""The simt-depthwise strategy (dnnc/codegen/gpu/window/depthwise*.py,
dnn-depthwise-conv) without a GPU: the heuristics put it first for a
depthwise convolution (groups == C) and simt-generic after it; the
benchmark's MobileNetV2 3x3 and ConvNeXt 7x7 layers (channels-last bf16)
are one kernel with no layout copies and no workspace, whose threads load
16-byte x vectors and store 16-byte y vectors; ptxas assembles them (no
spills for the 3x3); a kernel whose x is not channels-last falls back to
simt-generic and says why. Numerics are checked on the GPU
(test/gpu/gpu_cases/convolution.py's depthwise cases).
"""

import math
import os
import sys

import pytest

import dnnc
from dnnc import compiler
from dnnc.codegen.gpu import ptxas
from dnnc.heuristics import rank
from dnnc.heuristics.depthwise import is_depthwise
from dnnc.heuristics.problem import Problem, TensorSpec

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
from conv_cases import general_graph  # noqa: E402

STRATEGY = "simt-depthwise"
PTXAS = ptxas.find()


def _problem(x, w, y, dtype="bf16"):
    return Problem(kernel="k", anchor="conv_fprop", arch="sm_90a",
                   anchor_inputs=(TensorSpec(tuple(x), dtype), TensorSpec(tuple(w), dtype)),
                   anchor_outputs=(TensorSpec(tuple(y), dtype),))


def test_depthwise_ranks_simt_depthwise_first_then_simt_generic():
    configs = rank(_problem([32, 144, 56, 56], [144, 1, 3, 3], [32, 144, 56, 56]))
    assert configs[0].strategy == STRATEGY
    assert (configs[0].vector, configs[0].tile, configs[0].block) == (8, (1, 4), (256, 1, 1))
    assert "simt-generic" in [c.strategy for c in configs]
    wide = rank(_problem([32, 96, 56, 56], [96, 1, 7, 7], [32, 96, 56, 56]))[0]
    assert (wide.strategy, wide.tile, wide.block) == (STRATEGY, (1, 8), (256, 1, 1))
    # 12 channels: 4-channel vectors.
    assert rank(_problem([2, 12, 7, 7], [12, 1, 3, 3], [2, 12, 7, 7], "f16"))[0].vector == 4


def test_grouped_or_dense_convolutions_are_not_depthwise():
    for w in ([144, 2, 3, 3], [72, 1, 3, 3]):
        assert not is_depthwise(_problem([32, 144, 56, 56], w, [32, w[0], 56, 56]))
    assert is_depthwise(_problem([32, 144, 56, 56], [144, 1, 3, 3], [32, 144, 56, 56]))


def _entry(package, name):
    text = package.ptx[package.ptx.index(f".entry {name}("):]
    return text[:text.index("\n}\n")]


@pytest.mark.parametrize("what,x,w,pad,loads,spills", [
    # 3 rows x (4 + 2) pixels for 4 outputs; 7 rows x (8 + 6) for 8.
    ("3x3", [32, 144, 56, 56], [144, 1, 3, 3], 1, 18, False),
    ("7x7", [32, 96, 56, 56], [96, 1, 7, 7], 3, 98, True),
])
def test_benchmark_layers_are_one_kernel_without_copies(what, x, w, pad, loads, spills):
    g = general_graph(f"dw{what}", x, w, 1, pad, x[1], "bf16")
    package = compiler.compile_cuda(g, "sm_90a", cache=False)
    m = package.manifest
    (kernel,) = m["kernels"]
    assert m["workspace_bytes"] == 0
    assert kernel["strategy"] == STRATEGY, kernel["reason"]
    tile = kernel["config"]["tile"][-1]
    groups = x[1] // 8
    # A block: every channel group (their filters fit shared memory) of
    # 256 // groups tiles of W.
    pixels = 256 // groups
    tiles = x[0] * x[2] * -(-x[3] // tile)
    assert kernel["block"] == [pixels * groups, 1, 1]
    assert kernel["grid"] == [-(-tiles // pixels), 1, 1]
    ops = [line.split()[0] for line in _entry(package, kernel["entry"]).splitlines()
           if line.startswith("\t")]
    assert ops.count("ld.global.v4.b32") == loads
    assert ops.count("st.global.v4.b32") == tile
    assert ops.count("bar.sync") == 1
    if PTXAS is None:
        return
    resources, _ = ptxas.assemble_cubin(package.ptx, "sm_90a")
    for info in resources.values():
        # The 7x7's 8 outputs a thread hold all 255 registers and spill a
        # few bytes (faster on an H200 than 4 outputs without spills).
        assert info.spill_stores <= (64 if spills else 0)


# W not a multiple of the tile: the last tile along W starts early so that it
# ends at W (depthwise_emit's Geometry), or, where it cannot start on a
# stride phase, guards its outputs past W.
# name: (direction, dtype, x dims, window, attrs, config)
LAST_TILES = {
    "fprop_7x7_w14_tile8_bf16": ("fprop", "bf16", [1, 16, 5, 14], [7, 7], dict(padding=[3, 3]),
                                 "*=strategy:simt-depthwise,block:32,vector:8,tile:1x8"),
    "dgrad_3x3_w11_tile4_f16": ("dgrad", "f16", [2, 8, 4, 11], [3, 3], dict(padding=[1, 1]),
                                "*=strategy:simt-depthwise,block:16,vector:8,tile:1x4"),
    # dx W = 14, tile 4, stride 2: the last tile starts at 10, a phase.
    "dgrad_3x3_s2_w14_tile4_bf16": ("dgrad", "bf16", [1, 8, 6, 14], [3, 3],
                                    dict(padding=[1, 1], stride=[2, 2]),
                                    "*=strategy:simt-depthwise,block:16,vector:8,tile:1x4"),
    # dx W = 13: a last tile ending at 13 would start at 9, no phase: guarded.
    "dgrad_3x3_s2_w13_tile4_f32": ("dgrad", "f32", [1, 8, 5, 13], [3, 3],
                                   dict(padding=[1, 1], stride=[2, 2]),
                                   "*=strategy:simt-depthwise,block:16,vector:4,tile:1x4"),
}


@pytest.mark.parametrize("name", sorted(LAST_TILES))
def test_last_tile_along_w_computes_the_convolution(name):
    """Interpreted on the CPU against the NumPy reference, outputs
    NaN-poisoned first (every output written)."""
    from test_depthwise_gradients import check, depthwise_graph, interpret

    direction, dtype, x_dims, window, attrs, config = LAST_TILES[name]
    build = depthwise_graph(f"lt_{name}", direction, dtype, x_dims, window, **attrs)
    expected, got, found, launches = interpret(build, dtype, config)
    assert f'strategy = "{STRATEGY}"' in found and launches == 1, found
    check(expected, got, dtype, int(math.prod(window)))


def test_convnext_7x7_at_14_is_one_kernel_without_a_spill_storm():
    """ConvNeXt's 7x7 at 14 x 14 (8 outputs a thread, W = 14): with its last
    tile's outputs past W guarded, LLVM kept every x pixel of the tile live
    into the guards and ptxas spilled 15 KB a thread; the shifted last tile
    keeps it to the few bytes of the 56 x 56 layer."""
    g = general_graph("dw7x7_14", [32, 384, 14, 14], [384, 1, 7, 7], 1, 3, 384, "bf16")
    package = compiler.compile_cuda(g, "sm_90a", cache=False)
    (kernel,) = package.manifest["kernels"]
    assert kernel["strategy"] == STRATEGY and kernel["config"]["tile"] == [1, 8], kernel
    if PTXAS is None:
        return
    resources, _ = ptxas.assemble_cubin(package.ptx, "sm_90a")
    for info in resources.values():
        assert info.spill_stores <= 256, info


def test_row_major_x_falls_back_to_simt_generic():
    g = dnnc.Graph(name="dw_nchw", io_data_type="bf16")
    x = g.tensor(name="x", dim=[2, 16, 8, 8])
    w = g.tensor(name="w", dim=[16, 1, 3, 3])
    g.conv_fprop(x, w, padding=1).set_output(True)
    package = compiler.compile_cuda(g, "sm_90a", cache=False)
    kernels = package.manifest["kernels"]
    assert {k["strategy"] for k in kernels} == {"simt-generic"}
    assert kernels[0]["reason"].startswith("simt-depthwise does not apply (x's channels are not "
                                           "contiguous)")
