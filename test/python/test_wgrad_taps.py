"""Filter gradients whose C is not a multiple of the tile width, without a
GPU (dnnc/codegen/gpu/tensorcore/wgrad_taps.py): read from the plan and the
SASS.

* ``WGRADS`` (bf16 and f16, channels-last, C = 24, 40, 96 and 144; 1x1,
  3x3 strided or dilated, 3-D): one tc-sm90 kernel on sm_90a (a second
  one sums split-K partials where the kernel leaves them), one tc-sm80
  kernel on sm_80 (and a second that sums its partials where K is split:
  sm80/splitk.py); the reason names the implicit GEMM, the taps as the
  GEMM's batch where the filter has several, and the columns a tap the
  tiles compute. The SASS of each: HGMMA (sm_90a) or HMMA (sm_80) of the
  operand type only, no spills, no local memory.
* A grouped gradient of several taps and such a C: simt-generic, the
  reason saying why tc-sm90 does not apply.
* The heuristics: the tile that computes the fewest columns a tap first.
"""

import math

import pytest

import dnnc
from dnnc.codegen.gpu import sass
from dnnc.codegen.gpu.tensorcore import wgrad_taps
from kernel_builds import Builds, assert_fit, assert_no_local_memory, family
from test_conv_tensor_cores import channels_last, grad_graph
from test_heuristics import problem, rank
from test_tc_sass import ARCH, MAX_SHARED, gemm_kernels, needs_sass
from test_tc_sm80_sass import MAX_SHARED as SM80_MAX_SHARED

# name: (graph builder, C): filter gradients of dw [K, C, *window].
WGRADS = {
    # MobileNetV2's 1x1 expansion and projection at 56 x 56.
    "wgrad_1x1_c144_bf16": (grad_graph("wgrad_1x1_c144_bf16", "wgrad", "bf16",
                                       [32, 144, 56, 56], 24, [1, 1]), 144),
    "wgrad_1x1_c24_f16": (grad_graph("wgrad_1x1_c24_f16", "wgrad", "f16", [32, 24, 56, 56],
                                     144, [1, 1]), 24),
    "wgrad_3x3_c144_bf16": (grad_graph("wgrad_3x3_c144_bf16", "wgrad", "bf16",
                                       [8, 144, 28, 28], 144, [3, 3], padding=[1, 1]), 144),
    "wgrad_3x3_c96_f16": (grad_graph("wgrad_3x3_c96_f16", "wgrad", "f16", [8, 96, 29, 27], 96,
                                     [3, 3], stride=[2, 2], pre_padding=[1, 0],
                                     post_padding=[0, 1]), 96),
    "wgrad_3x3_c24_bf16": (grad_graph("wgrad_3x3_c24_bf16", "wgrad", "bf16", [4, 24, 20, 20],
                                      40, [3, 3], dilation=[2, 1], padding=[2, 1],
                                      conv_mode="convolution"), 24),
    "wgrad_3d_c40_f16": (grad_graph("wgrad_3d_c40_f16", "wgrad", "f16", [2, 40, 6, 7, 8], 16,
                                    [3, 1, 3], pre_padding=[1, 0, 1], post_padding=[1, 0, 0]),
                         40),
}
# Assembled for sm_80 too.
SM80_SASS = ("wgrad_1x1_c24_f16", "wgrad_3x3_c144_bf16")


def grouped_graph():
    """Two groups of C = 24 over 3 x 3 taps."""
    g = dnnc.Graph(name="wgrad_groups", io_data_type="bf16", compute_data_type="f32")
    x_dims, y_dims, w_dims = [2, 48, 8, 8], [2, 32, 8, 8], [32, 24, 3, 3]
    x = g.tensor(name="x", dim=x_dims, stride=channels_last(x_dims))
    dy = g.tensor(name="dy", dim=y_dims, stride=channels_last(y_dims))
    dw = g.conv_wgrad(x, dy, w_dims, padding=[1, 1])
    dw.set_output(True).set_stride(channels_last(w_dims))
    return g


def graph_of(name):
    """The graph of a WGRADS name, or of ``wgrad_groups``."""
    return (WGRADS[name][0] if name in WGRADS else grouped_graph)()


@pytest.fixture(scope="module")
def built():
    """Each graph compiled for each arch, and assembled, at most once."""
    return Builds(graph_of, ARCH)


def _geometry(name):
    """(taps, C) of a WGRADS graph."""
    g = WGRADS[name][0]()
    w_dims = [int(d) for d in g.outputs[0].dim]
    return math.prod(w_dims[2:]), WGRADS[name][1]


def _columns_said(taps, channels, bn):
    """The part of a reason that says how the tiles cover a tap's C."""
    if channels % bn == 0:
        return ""
    how = "the taps the GEMM's batch" if taps > 1 else "one tap"
    return f" ({how}: {wgrad_taps.covered(channels, bn)} columns a tap, those past C " \
        "zero-filled and not stored)"


@pytest.mark.parametrize("name", sorted(WGRADS))
def test_on_tc_sm90(built, name):
    kernels = built.package(name).kernels
    assert all(k["strategy"] == "tc-sm90" for k in kernels), \
        [(k["entry"], k["strategy"], k.get("reason")) for k in kernels]
    (gemm,) = gemm_kernels(built.package(name))
    assert gemm is kernels[0] and len(kernels) <= 2, [k["entry"] for k in kernels]
    taps, channels = _geometry(name)
    bn = gemm["config"]["tile"][1]
    said = _columns_said(taps, channels, bn)
    assert (f"implicit GEMM (wgrad): x read by TMA in im2col mode, {taps} filter taps x "
            f"{channels} channels{said}") in gemm["reason"], gemm["reason"]
    # The tile computes the fewest columns a tap of the widths tc-sm90
    # takes for C (256 above 128 columns, 128 above 64, 64).
    widths = [w for w, floor in ((256, 128), (128, 64), (64, 0)) if channels > floor]
    assert wgrad_taps.covered(channels, bn) == min(wgrad_taps.covered(channels, w)
                                                   for w in widths), (bn, gemm["reason"])
    b = gemm["args"][1]
    assert b["kind"] == "tma" and "im2col" in b, b


@pytest.mark.parametrize("name", sorted(WGRADS))
def test_on_tc_sm80(built, name):
    kernels = built.package(name, "sm_80").kernels
    k = kernels[0]
    # A split K's partials are summed by a second launch (sm80/splitk.py).
    launches = 2 if k["config"].get("split", 1) > 1 else 1
    assert [k["strategy"] for k in kernels] == ["tc-sm80"] * launches, \
        [(k["entry"], k["strategy"], k.get("reason")) for k in kernels]
    taps, channels = _geometry(name)
    bn = k["config"]["tile"][1]
    said = _columns_said(taps, channels, bn)
    assert (f"implicit GEMM (wgrad): x gathered by cp.async, {taps} filter taps x {channels} "
            f"channels{said}") in k["reason"], k["reason"]
    assert k["shared_bytes"] <= SM80_MAX_SHARED, k


@needs_sass
@pytest.mark.parametrize("name", sorted(WGRADS))
def test_tc_sm90_sass(built, name):
    """No spills or local memory, registers within what the block's threads
    may have, shared memory within sm_90's; HGMMA 64 x BN x 16 of the
    operand type only, TMA loads."""
    package = built.package(name)
    resources, functions = built.assembly(name)
    assert_fit(package.kernels, resources, MAX_SHARED)
    assert_no_local_memory(package.kernels, functions)
    (gemm,) = gemm_kernels(package)
    counts = sass.opcodes(functions[gemm["entry"]])
    kind = ".BF16" if name.endswith("bf16") else ""
    hgmma = f"HGMMA.64x{gemm['config']['tile'][1]}x16.F32{kind}"
    assert family(counts, "HGMMA.") == {hgmma}, sorted(counts)
    assert counts["UTMALDG"] > 0 and counts["SYNCS"] > 0, sorted(counts)
    assert sass.wgmma_hazards(functions[gemm["entry"]]) == []


@needs_sass
@pytest.mark.parametrize("name", SM80_SASS)
def test_tc_sm80_sass(built, name):
    """No spills or local memory, registers within 255; HMMA of the operand
    type only, cp.async and ldmatrix (the launch that sums a split K's
    partials, where there is one: no spills or local memory either)."""
    k, *sums = built.package(name, "sm_80").kernels
    resources, functions = built.assembly(name, "sm_80")
    assert_fit([k] + sums, resources, most_registers=255)
    assert_no_local_memory([k] + sums, functions)
    counts = sass.opcodes(functions[k["entry"]])
    hmma = "HMMA.16816.F32.BF16" if name.endswith("bf16") else "HMMA.16816.F32"
    assert counts[hmma] > 0 and family(counts, "HMMA.") == {hmma}, sorted(counts)
    assert counts["LDGSTS"] > 0 and counts["LDSM"] > 0, sorted(counts)


def test_grouped_taps_run_on_simt_depthwise(built):
    """2 groups of C = 24 over 9 taps: no tensor-core layout (wgrad_taps.problem
    says why), and simt-depthwise's small-group filter gradient takes it."""
    kernels = built.package("wgrad_groups").kernels
    convs = [k for k in kernels if "conv_wgrad" in k["entry"]]
    assert convs and all(k["strategy"] == "simt-depthwise" for k in convs), \
        [(k["entry"], k["strategy"]) for k in kernels]


def test_layouts():
    """Which layout each C, taps and groups take (wgrad_taps.py)."""
    assert not wgrad_taps.tap_batched(1, 128, 9) and wgrad_taps.tiles_in_tap(128, 9)
    assert wgrad_taps.tap_batched(1, 144, 9) and not wgrad_taps.tiles_in_tap(144, 9)
    # One tap: any C, any groups, no batch of taps.
    assert not wgrad_taps.tap_batched(1, 24, 1) and not wgrad_taps.tiles_in_tap(24, 1)
    assert wgrad_taps.problem(4, 24, 1) is None
    assert "2 groups of C = 24 channels over 9 filter taps" in wgrad_taps.problem(2, 24, 9)
    assert wgrad_taps.problem(2, 128, 9) is None
    assert [wgrad_taps.covered(144, bn) for bn in (64, 128, 256)] == [192, 256, 256]


@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
def test_heuristics_compute_the_fewest_columns(arch):
    """The first tensor-core config of each strategy computes the fewest
    columns a tap; its reason says how many and what share is C."""
    wgrad = rank(problem("conv_wgrad", [([8, 144, 28, 28], "bf16"),
                                        ([8, 144, 28, 28], "bf16")],
                         [([144, 144, 3, 3], "bf16")], arch=arch))
    for strategy in ("tc-sm90", "tc-sm80") if arch == "sm_90a" else ("tc-sm80",):
        first = next(c for c in wgrad if c.strategy == strategy)
        assert first.tile[1] == 64, (strategy, first)
        assert "the 9 taps the GEMM's batch, C = 144 in tiles of 64: 192 columns a tap, " \
            "75% of them C" in first.reason, first.reason
    assert wgrad[0].strategy == ("tc-sm90" if arch == "sm_90a" else "tc-sm80")
