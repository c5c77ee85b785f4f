"""Convolutions without a GPU: which run as tc-sm90's implicit GEMM on
sm_90a (dnnc/codegen/gpu/tensorcore/conv.py, sm90/im2col.py), as tc-sm80's
on sm_80 (sm80/im2col.py), and which fall back, read from the plan; and what
ptxas makes of some implicit GEMMs.

Each graph holds one convolution, compiled once (module-scoped fixture)
without a tuning database:

* ``TENSOR_CORES``: bf16 / f16, one group, channels-last x
  ([HWC, 1, WC, C]), KRSC filters, channels-last output, C a multiple of 8;
  2-D and 3-D, strided, dilated, asymmetrically padded, in convolution mode,
  C up to 256 and K down to 1, with the epilogues a network fuses (bias +
  relu, bias + residual + relu, scale * y + shift). The plan is one tc-sm90
  kernel (a second one sums split-K partials where more than
  LAST_ARRIVAL_SPLITS a tile are left), no copy into or out of
  channels-last and no kernel of its own for the epilogue; its reason names
  the implicit GEMM with the filter's taps and each tap's channels rounded
  up to whole K steps; x is read through an im2col-mode TMA descriptor, the
  filter as [K, taps, C] boxes of one tap, but for the 1x1 unit-stride
  unpadded ones (``PIXEL_ROWS``), whose x the heuristics read as the
  [N*H*W, C] matrix by tiled boxes (``tiled``).
* ``TILED``: that choice undone by ``tiled:0``, refused with the reason for
  a padded and a strided 1x1, and taken for a 1x1 data gradient's dy.
* ``LAID_OUT``: an RGB stem (its filter's columns folded into its
  channels, no layout kernel), row-major (NCHW) x, all operands NCHW:
  tc-sm90 after dnn-conv-layouts' kernels (transposes to and from
  channels-last), the plan naming them.
* ``FALLBACKS``: two groups of more channels than simt-depthwise stages:
  simt-generic, the reason saying why tc-sm90 does not apply.
* ``SM80_FALLBACKS``: a 3-D filter whose im2col pixel box TMA cannot
  describe, C = 3 pixels with nothing to fold: tc-sm80's implicit GEMM, the
  reason saying why tc-sm90 does not apply.
* ``bias_relu_bf16`` through ptxas and the SASS (skipped without ptxas or
  cuobjdump, as test_tc_sass.py skips): no spills, no stack, no local
  memory; HGMMA of the tile's shape on bf16, TMA loads; one CTA barrier
  (BAR.SYNC), the one after the ring's initialization. A tiled 1x1's SASS:
  tiled TMA loads only.

For sm_80, the graphs of ``TENSOR_CORES`` and ``GRADS`` (data gradients of
stride 1 and filter gradients, channels-last) are one tc-sm80 kernel each,
whose reason names the implicit GEMM gathered by cp.async; groups fall back
to simt-generic, naming tc-sm80. ``SM80_SASS`` through ptxas and the SASS:
no spills, no stack, no local memory, registers within 255; HMMA of the
operand type only, cp.async (LDGSTS) and ldmatrix (LDSM).
"""

import math

import pytest

import dnnc
from dnnc.codegen.gpu import sass
from dnnc.codegen.gpu.tensorcore import sm90
from kernel_builds import Builds, assert_fit, assert_no_local_memory, family
from test_tc_sass import ARCH, MAX_SHARED, gemm_kernels, needs_sass
from test_tc_sm80_sass import MAX_SHARED as SM80_MAX_SHARED


def channels_last(dims):
    """Strides of logical (N, C, *spatial) dims stored (N, *spatial, C)."""
    strides, step = [0] * len(dims), dims[1]
    strides[1] = 1
    for d in reversed(range(2, len(dims))):
        strides[d] = step
        step *= dims[d]
    strides[0] = step
    return strides


def conv_graph(name, dtype, x_dims, k, window, groups=1, row_major=(), epilogue=None,
               **attrs):
    """One forward convolution of x ``x_dims`` with a filter of ``k`` x
    C / ``groups`` x ``window``; its operands channels-last but those
    ``row_major`` names ("x", "w", "y": the output and a residual);
    ``epilogue``: None, "bias_relu", "bias_residual_relu" or
    "scale_shift"."""
    def layout(operand, dims):
        return None if operand in row_major else channels_last(dims)

    def build():
        g = dnnc.Graph(name=name, io_data_type=dtype, compute_data_type="f32")
        w_dims = [k, x_dims[1] // groups, *window]
        x = g.tensor(name="x", dim=x_dims, stride=layout("x", x_dims))
        w = g.tensor(name="w", dim=w_dims, stride=layout("w", w_dims))
        y = g.conv_fprop(x, w, **attrs)
        y_dims = [int(d) for d in y.dim]
        per_channel = [1, k] + [1] * len(window)
        if epilogue in ("bias_relu", "bias_residual_relu"):
            y = g.add(y, g.tensor(name="bias", dim=per_channel))
            if epilogue == "bias_residual_relu":
                y = g.add(y, g.tensor(name="residual", dim=y_dims, stride=layout("y", y_dims)))
            y = g.relu(y)
        elif epilogue == "scale_shift":
            y = g.add(g.mul(y, g.tensor(name="scale", dim=per_channel)),
                      g.tensor(name="shift", dim=per_channel))
        y.set_output(True)
        if "y" not in row_major:
            y.set_stride(channels_last(y_dims))
        return g
    return build


# name: graph builder (each its own conv_fprop attributes).
TENSOR_CORES = {
    "nhwc_3x3_bf16": conv_graph("nhwc_3x3_bf16", "bf16", [2, 64, 9, 11], 40, [3, 3],
                                padding=[1, 1]),
    "strided_dilated_f16": conv_graph(
        "strided_dilated_f16", "f16", [3, 16, 20, 17], 65, [5, 3], stride=[2, 3],
        dilation=[2, 1], pre_padding=[1, 2], post_padding=[6, 0], conv_mode="convolution"),
    "conv3d_bf16": conv_graph(
        "conv3d_bf16", "bf16", [2, 24, 5, 6, 7], 16, [3, 2, 3], stride=[1, 2, 1],
        dilation=[1, 1, 2], pre_padding=[1, 0, 2], post_padding=[0, 1, 3]),
    "wide_c_k1_bf16": conv_graph("wide_c_k1_bf16", "bf16", [1, 256, 7, 7], 1, [1, 1]),
    "bias_relu_bf16": conv_graph("bias_relu_bf16", "bf16", [4, 32, 14, 14], 64, [3, 3],
                                 epilogue="bias_relu", stride=[2, 2], padding=[1, 1]),
    "bias_residual_relu_f16": conv_graph(
        "bias_residual_relu_f16", "f16", [2, 40, 10, 12], 24, [1, 3],
        epilogue="bias_residual_relu", pre_padding=[0, 2], post_padding=[0, 0]),
    "scale_shift_bf16": conv_graph("scale_shift_bf16", "bf16", [1, 128, 8, 8], 128, [1, 1],
                                   epilogue="scale_shift"),
    # Two groups of 64 channels: a batch of two GEMMs.
    "groups2_bf16": conv_graph("groups2_bf16", "bf16", [2, 128, 6, 6], 64, [3, 3], groups=2,
                               padding=[1, 1]),
}
# The graphs of TENSOR_CORES whose x the heuristics read as a plain matrix
# (1x1, unit stride, no padding, one group: tensorcore/pixel_rows.py).
PIXEL_ROWS = ("wide_c_k1_bf16", "scale_shift_bf16")
# name: (graph builder, what dnn-conv-layouts' kernels do, how many): the
# convolution runs on tensor cores, its operands laid out first.
LAID_OUT = {
    # An RGB stem, 7 x 7 / 2: its columns folded into the channels by the
    # convolution's own launches, no layout kernel.
    "stem_bf16": (conv_graph("stem_bf16", "bf16", [2, 3, 32, 32], 64, [7, 7], stride=[2, 2],
                             padding=[3, 3]),
                  None, 0),
    "nchw_x_bf16": (conv_graph("nchw_x_bf16", "bf16", [2, 16, 8, 8], 32, [3, 3],
                               row_major=("x",), padding=[1, 1]),
                    "the row-major one", 1),
    # All of it NCHW: x and w transposed in, y out.
    "nchw_f16": (conv_graph("nchw_f16", "f16", [2, 16, 8, 8], 32, [3, 3],
                            row_major=("x", "w", "y"), padding=[1, 1]),
                 "the row-major one", 3),
}
# name: (graph builder, what the reason says of why tc-sm90 does not apply).
FALLBACKS = {
    # (Fewer channels a group run on simt-depthwise, test_grouped_simt.py;
    # these 48 a group of 7 x 7 taps are more filters than it stages.)
    "groups2_f16": (conv_graph("groups2_f16", "f16", [1, 96, 8, 8], 16, [7, 7], groups=2,
                               padding=[3, 3]),
                    "2 groups of 48 channels: a group's channels are read in whole K steps "
                    "of 64"),
}
# name: (graph builder, why tc-sm90 does not apply): tc-sm80 takes them.
SM80_FALLBACKS = {
    # Corners of a rank-5 im2col box lie in [-16, 15]: pre-padding 17 is past them.
    "box_3d_f16": (conv_graph("box_3d_f16", "f16", [1, 8, 8, 4, 4], 8, [7, 1, 1],
                              dilation=[3, 1, 1], pre_padding=[17, 0, 0],
                              post_padding=[2, 0, 0]),
                   "the im2col pixel box's lower corner [-17, 0, 0]"),
    # C = 3 and a filter of one column (nothing to fold into the channels,
    # tensorcore/fold.py): pixels TMA cannot step, read where they lie by
    # tc-sm80's loader (no layout kernel padding them).
    "c3_bf16": (conv_graph("c3_bf16", "bf16", [2, 3, 16, 16], 16, [7, 1], stride=[2, 2],
                           pre_padding=[3, 0], post_padding=[3, 0]),
                "x's pixels are 3 elements apart (C = 3)"),
}


def grad_graph(name, direction, dtype, x_dims, k, window, **attrs):
    """The data (``direction`` "dgrad") or filter ("wgrad") gradient of the
    convolution of x ``x_dims`` by a ``k`` x C x ``window`` filter, every
    tensor channels-last."""
    def build():
        g = dnnc.Graph(name=name, io_data_type=dtype, compute_data_type="f32")
        w_dims = [k, x_dims[1], *window]
        x = g.tensor(name="x", dim=x_dims, stride=channels_last(x_dims))
        w = g.tensor(name="w", dim=w_dims, stride=channels_last(w_dims))
        y_dims = [int(d) for d in g.conv_fprop(x, w, **attrs).dim]
        g = dnnc.Graph(name=name, io_data_type=dtype, compute_data_type="f32")
        dy = g.tensor(name="dy", dim=y_dims, stride=channels_last(y_dims))
        if direction == "dgrad":
            w = g.tensor(name="w", dim=w_dims, stride=channels_last(w_dims))
            out, dims = g.conv_dgrad(dy, w, x_dims, **attrs), x_dims
        else:
            x = g.tensor(name="x", dim=x_dims, stride=channels_last(x_dims))
            out, dims = g.conv_wgrad(x, dy, w_dims, **attrs), w_dims
        out.set_output(True).set_stride(channels_last(dims))
        return g
    return build


# name: (graph builder, direction): tc-sm80 on sm_80.
GRADS = {
    "dgrad_3x3_bf16": (grad_graph("dgrad_3x3_bf16", "dgrad", "bf16", [2, 24, 9, 11], 40,
                                  [3, 3], padding=[1, 1]), "dgrad"),
    "dgrad_dilated_f16": (grad_graph("dgrad_dilated_f16", "dgrad", "f16", [3, 16, 12, 10], 32,
                                     [3, 2], dilation=[2, 1], pre_padding=[2, 0],
                                     post_padding=[1, 1], conv_mode="convolution"), "dgrad"),
    "wgrad_3x3_bf16": (grad_graph("wgrad_3x3_bf16", "wgrad", "bf16", [2, 64, 9, 11], 24,
                                  [3, 3], padding=[1, 1]), "wgrad"),
    "wgrad_strided_f16": (grad_graph("wgrad_strided_f16", "wgrad", "f16", [2, 128, 13, 9],
                                     16, [2, 3], stride=[2, 2], pre_padding=[1, 0],
                                     post_padding=[0, 1]), "wgrad"),
}
# name: (graph builder, config override, what the reason says of how x is
# read): the tiled loader asked by an override, taken or refused.
TILED = {
    "tiled_off_1x1_bf16": (conv_graph("tiled_off_1x1_bf16", "bf16", [2, 64, 6, 6], 32, [1, 1]),
                           "*=tiled:0", "x read by TMA in im2col mode, 1 filter taps"),
    "tiled_padded_1x1_bf16": (
        conv_graph("tiled_padded_1x1_bf16", "bf16", [2, 64, 6, 6], 32, [1, 1], padding=[1, 1]),
        "*=tiled:1", "x read by TMA in im2col mode (tiled asked, but padding [1, 1] / [1, 1] "
                     "(none only)), 1 filter taps"),
    "tiled_strided_1x1_bf16": (
        conv_graph("tiled_strided_1x1_bf16", "bf16", [2, 64, 6, 6], 32, [1, 1], stride=[2, 2]),
        "*=tiled:1", "x read by TMA in im2col mode (tiled asked, but stride [2, 2] (unit stride "
                     "only)), 1 filter taps"),
    # A 1x1 data gradient of unit stride: dy is the matrix, by default.
    "tiled_dgrad_1x1_bf16": (grad_graph("tiled_dgrad_1x1_bf16", "dgrad", "bf16", [2, 64, 6, 6],
                                        32, [1, 1]),
                             None, "dy read as a matrix of pixels by channels with tiled TMA "
                                   "loads (1x1, unit stride, no padding), 1 filter taps"),
}
# Assembled for sm_80: the HMMA opcode of each one's type.
SM80_SASS = {"bias_relu_bf16": "HMMA.16816.F32.BF16", "strided_dilated_f16": "HMMA.16816.F32",
             "dgrad_3x3_bf16": "HMMA.16816.F32.BF16", "wgrad_strided_f16": "HMMA.16816.F32"}


def graph_of(name):
    """The graph of a name of any of the tables above."""
    build = TENSOR_CORES.get(name) or GRADS.get(name, (None,))[0] or \
        {**FALLBACKS, **SM80_FALLBACKS, **LAID_OUT, **TILED}[name][0]
    return build()


@pytest.fixture(scope="module")
def built():
    """Each graph compiled for each arch, and assembled, at most once."""
    return Builds(graph_of, ARCH)


@pytest.mark.parametrize("name", sorted(TENSOR_CORES))
def test_implicit_gemm_on_tensor_cores(built, name):
    kernels = built.package(name).kernels
    assert all(k["strategy"] == "tc-sm90" for k in kernels), \
        [(k["entry"], k["strategy"], k.get("reason")) for k in kernels]
    (gemm,) = gemm_kernels(built.package(name))
    assert gemm is kernels[0], [k["entry"] for k in kernels]
    split = gemm["config"].get("split", 1)
    cluster = gemm["config"].get("cluster", 1)
    second = split // cluster > sm90.LAST_ARRIVAL_SPLITS  # a launch that sums the partials
    assert len(kernels) == (2 if second else 1), [k["entry"] for k in kernels]

    g = TENSOR_CORES[name]()
    x, w = (t for t in g.inputs if t.name in ("x", "w"))
    channels, window = int(w.dim[1]), [int(d) for d in w.dim[2:]]  # a group's
    taps = math.prod(window)
    a, b = gemm["args"][:2]
    if name in PIXEL_ROWS:
        # x's pixels a [N*H*W, C] matrix: tiled boxes of it, as a matmul's A.
        assert gemm["config"].get("tiled") == 1, gemm["config"]
        assert (f"implicit GEMM (fprop): x read as a matrix of pixels by channels with tiled "
                f"TMA loads (1x1, unit stride, no padding), 1 filter taps x {channels} "
                "channels") in gemm["reason"], gemm["reason"]
        assert a["kind"] == "tma" and "im2col" not in a, a
        assert a["shape"] == [math.prod(int(d) for d in x.dim) // channels, channels], a
    else:
        assert "tiled" not in gemm["config"], gemm["config"]
        assert (f"implicit GEMM (fprop): x read by TMA in im2col mode, {taps} filter taps x "
                f"{channels} channels") in gemm["reason"], gemm["reason"]
        assert a["kind"] == "tma" and "im2col" in a, a
    assert b["kind"] == "tma" and "im2col" not in b, b
    # The filter as [K, taps, C] (its dims in the order of their strides, a
    # single tap's first), a box of one tap.
    assert sorted(b["shape"]) == sorted([int(w.dim[0]), taps, channels]), b
    assert len(b["box"]) == 3 and min(b["box"]) == 1, b


@pytest.mark.parametrize("name", sorted(LAID_OUT))
def test_operands_laid_out_for_tensor_cores(built, name):
    kernels = built.package(name).kernels
    _, what, count = LAID_OUT[name]
    layouts = [k for k in kernels if "_layout_" in k["entry"]]
    assert len(layouts) == count, [k["entry"] for k in kernels]
    if what is None:
        gemm = gemm_kernels(built.package(name))[0]
        assert "7 filter taps x 21 channels, the filter's columns folded into its channels " \
            "first" in gemm["reason"], gemm["reason"]
    for k in layouts:
        assert k["reason"].startswith("created by dnn-conv-layouts") and what in k["reason"], \
            k["reason"]
    convs = [k for k in kernels if "conv_fprop" in k["entry"]]
    assert convs and all(k["strategy"] == "tc-sm90" for k in convs), \
        [(k["entry"], k["strategy"], k.get("reason")) for k in kernels]


@pytest.mark.parametrize("name", sorted(TILED))
def test_tiled_pixel_rows(built, name):
    """``tiled`` (the heuristics' default for a 1x1, unit-stride, unpadded
    convolution) read x (dy) as a matrix; ``tiled:0`` reads it in im2col
    mode; asked where it does not apply, im2col, the reason saying why."""
    _, override, how = TILED[name]
    (gemm,) = gemm_kernels(built.package(name, config=override))
    assert gemm["strategy"] == "tc-sm90", (gemm["strategy"], gemm["reason"])
    assert how in gemm["reason"], gemm["reason"]
    a = gemm["args"][0]
    assert a["kind"] == "tma" and ("im2col" in a) == ("im2col mode" in how), a


@pytest.mark.parametrize("name", sorted(FALLBACKS))
def test_fallback_says_why(built, name):
    kernels = built.package(name).kernels
    why = FALLBACKS[name][1]
    convs = [k for k in kernels if "conv_fprop" in k["entry"]]
    assert convs and not any(k["strategy"] == "tc-sm90" for k in kernels), \
        [(k["entry"], k["strategy"]) for k in kernels]
    for k in convs:
        assert k["strategy"] == "simt-generic", (k["entry"], k["strategy"])
        assert k["reason"].startswith(f"tc-sm90 does not apply ({why}"), k["reason"]


@needs_sass
def test_implicit_gemm_sass(built):
    """ptxas's verdict and the SASS of the bias + relu implicit GEMM: no
    spills or local memory, registers within what 65536 / threads leaves,
    shared memory within sm_90's; HGMMA 64 x BN x 16 on bf16 only, TMA
    loads (UTMALDG) and mbarrier operations (SYNCS)."""
    name = "bias_relu_bf16"
    package = built.package(name)
    resources, functions = built.assembly(name)
    assert_fit(package.kernels, resources, MAX_SHARED)
    assert_no_local_memory(package.kernels, functions)
    (gemm,) = gemm_kernels(package)
    counts = sass.opcodes(functions[gemm["entry"]])
    hgmma = f"HGMMA.64x{gemm['config']['tile'][1]}x16.F32.BF16"
    assert family(counts, "HGMMA.") == {hgmma}, sorted(counts)
    assert counts["UTMALDG"] > 0 and counts["SYNCS"] > 0, sorted(counts)
    assert sass.wgmma_hazards(functions[gemm["entry"]]) == []
    # One CTA barrier, after the ring's mbarriers are initialized: the
    # warpgroups meet nowhere else (the ring's mbarriers order the K steps,
    # each warp stages and stores its own epilogue rows, bar.warp.sync).
    assert family(counts, "BAR.") == {"BAR.SYNC.DEFER_BLOCKING"}, sorted(counts)
    assert counts["BAR.SYNC.DEFER_BLOCKING"] == 1, counts["BAR.SYNC.DEFER_BLOCKING"]


@needs_sass
def test_tiled_pixel_rows_sass(built):
    """A 1x1 convolution's x read as a matrix: tiled TMA loads only
    (UTMALDG.2D for x, .3D for the filter), no im2col-mode load."""
    name = "wide_c_k1_bf16"
    package = built.package(name)
    (gemm,) = gemm_kernels(package)
    resources, functions = built.assembly(name)
    assert_fit(package.kernels, resources, MAX_SHARED)
    assert_no_local_memory(package.kernels, functions)
    loads = family(sass.opcodes(functions[gemm["entry"]]), "UTMALDG.")
    assert loads == {"UTMALDG.2D", "UTMALDG.3D"}, sorted(loads)
    assert sass.wgmma_hazards(functions[gemm["entry"]]) == []


@pytest.mark.parametrize("name", sorted(SM80_FALLBACKS))
def test_tc_sm90_falls_back_to_tc_sm80(built, name):
    (k,) = built.package(name).kernels
    why = SM80_FALLBACKS[name][1]
    assert k["strategy"] == "tc-sm80", (k["entry"], k["strategy"], k["reason"])
    assert k["reason"].startswith(f"tc-sm90 does not apply ({why}"), k["reason"]
    assert "implicit GEMM (fprop): x gathered by cp.async" in k["reason"], k["reason"]


# tc-sm80's implicit GEMM takes one group.
@pytest.mark.parametrize("name", sorted(n for n in TENSOR_CORES if "groups" not in n)
                         + sorted(GRADS))
def test_implicit_gemm_on_tc_sm80(built, name):
    """One tc-sm80 kernel: the operands read where they lie (no copy into or
    out of channels-last), the epilogue fused."""
    kernels = built.package(name, "sm_80").kernels
    assert [k["strategy"] for k in kernels] == ["tc-sm80"], \
        [(k["entry"], k["strategy"], k.get("reason")) for k in kernels]
    (k,) = kernels
    direction = GRADS[name][1] if name in GRADS else "fprop"
    g = (GRADS[name][0] if name in GRADS else TENSOR_CORES[name])()
    x = next(t for t in g.inputs if t.name in ("x", "dy") and
             (direction != "wgrad" or t.name == "x"))
    w_dims = [int(d) for d in (g.outputs[0] if direction == "wgrad" else
                               next(t for t in g.inputs if t.name == "w")).dim]
    taps = math.prod(w_dims[2:])
    read = "dy" if direction == "dgrad" else "x"
    assert (f"implicit GEMM ({direction}): {read} gathered by cp.async, {taps} filter taps "
            f"x {int(x.dim[1])} channels") in k["reason"], k["reason"]
    bm, bn, bk = k["config"]["tile"]
    assert k["block"][0] in (128, 256) and k["shared_bytes"] <= SM80_MAX_SHARED, k
    if direction == "wgrad":   # a tile of N lies in one filter tap
        assert w_dims[1] % bn == 0, (w_dims, k["config"])


def test_tc_sm80_fallback_names_tc_sm80(built):
    kernels = built.package("groups2_f16", "sm_80").kernels
    convs = [k for k in kernels if "conv_fprop" in k["entry"]]
    assert convs and all(k["strategy"] == "simt-generic" for k in convs), \
        [(k["entry"], k["strategy"]) for k in kernels]
    assert convs[0]["reason"].startswith(
        "tc-sm80 does not apply (2 groups: tc-sm80 convolutions take one so far)"), \
        convs[0]["reason"]


@needs_sass
@pytest.mark.parametrize("name", sorted(SM80_SASS))
def test_implicit_gemm_tc_sm80_sass(built, name):
    """ptxas's verdict and the SASS of tc-sm80 implicit GEMMs: no spills or
    local memory, registers within 255 and what the block's threads may
    have, shared memory within sm_80's; HMMA of the operand type only,
    cp.async and ldmatrix."""
    package = built.package(name, "sm_80")
    resources, functions = built.assembly(name, "sm_80")
    (k,) = package.kernels
    assert_fit([k], resources, SM80_MAX_SHARED, most_registers=255)
    assert_no_local_memory([k], functions)
    counts = sass.opcodes(functions[k["entry"]])
    hmma = SM80_SASS[name]
    assert counts[hmma] > 0 and family(counts, "HMMA.") == {hmma}, sorted(counts)
    assert counts["LDGSTS"] > 0 and counts["LDSM"] > 0, sorted(counts)
