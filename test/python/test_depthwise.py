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
