"""Forward convolutions for sm_90a without a GPU: which run as tc-sm90's
implicit GEMM (dnnc/codegen/gpu/tensorcore/conv.py, sm90/im2col.py) and
which fall back to simt-generic, read from the plan; and what ptxas makes of
one implicit GEMM.

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
  filter as [K, taps, C] boxes of one tap.
* ``LAID_OUT``: C = 3, row-major (NCHW) x, all operands NCHW: tc-sm90
  after dnn-conv-layouts' kernels (pixels padded to 16 bytes; transposes to
  and from channels-last), the plan naming them.
* ``FALLBACKS``: two groups, and a 3-D filter whose im2col pixel box TMA
  cannot describe: simt-generic, the reason saying why tc-sm90 does not
  apply.
* ``bias_relu_bf16`` through ptxas and the SASS (skipped without ptxas or
  cuobjdump, as test_tc_sass.py skips): no spills, no stack, no local
  memory; HGMMA of the tile's shape on bf16, TMA loads.
"""

import math

import pytest

import dnnc
from dnnc import compiler, graph_mlir
from dnnc.codegen.gpu import ptxas, sass
from dnnc.codegen.gpu.tensorcore import sm90
from test_tc_sass import ARCH, MAX_SHARED, gemm_kernels, needs_sass


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
}
# name: (graph builder, what dnn-conv-layouts' kernels do, how many): the
# convolution runs on tensor cores, its operands laid out first.
LAID_OUT = {
    # C = 3 and a filter of one column (nothing to fold into the channels,
    # tensorcore/fold.py): each pixel padded to 8 channels (16 bytes), x's
    # and w's.
    "c3_bf16": (conv_graph("c3_bf16", "bf16", [2, 3, 16, 16], 16, [7, 1], stride=[2, 2],
                           pre_padding=[3, 0], post_padding=[3, 0]),
                "its own strides, pixels padded to 16 bytes", 2),
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
    "groups2_f16": (conv_graph("groups2_f16", "f16", [2, 16, 8, 8], 16, [3, 3], groups=2,
                               padding=[1, 1]),
                    "2 groups: tc-sm90 convolutions take one so far"),
    # Corners of a rank-5 im2col box lie in [-16, 15]: pre-padding 17 is past them.
    "box_3d_f16": (conv_graph("box_3d_f16", "f16", [1, 8, 8, 4, 4], 8, [7, 1, 1],
                              dilation=[3, 1, 1], pre_padding=[17, 0, 0],
                              post_padding=[2, 0, 0]),
                   "the im2col pixel box's lower corner [-17, 0, 0]"),
}


class Built:
    """Each graph compiled, and assembled, at most once."""

    def __init__(self):
        self.packages, self.assembled = {}, {}

    def package(self, name):
        if name not in self.packages:
            build = TENSOR_CORES[name] if name in TENSOR_CORES else \
                {**FALLBACKS, **LAID_OUT}[name][0]
            self.packages[name] = compiler.compile_module(
                graph_mlir.to_module(build()),
                compiler.Options(target="cuda", arch=ARCH, tuning_db="off"), basename=name)
        return self.packages[name]

    def assembly(self, name):
        """({entry: KernelResources}, {entry: SASS text})."""
        if name not in self.assembled:
            resources, cubin = ptxas.assemble_cubin(self.package(name).ptx, ARCH)
            self.assembled[name] = resources, sass.functions(sass.disassemble(cubin))
        return self.assembled[name]


@pytest.fixture(scope="module")
def built():
    return Built()


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
    channels, window = int(x.dim[1]), [int(d) for d in w.dim[2:]]
    taps = math.prod(window)
    assert (f"implicit GEMM (fprop): x read by TMA in im2col mode, {taps} filter taps x "
            f"{channels} channels") in gemm["reason"], gemm["reason"]
    a, b = gemm["args"][:2]
    assert a["kind"] == b["kind"] == "tma" and "im2col" in a and "im2col" not in b, (a, b)
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
    for k in package.kernels:
        r = resources[k["entry"]]
        threads = k["block"][0] * k["block"][1] * k["block"][2]
        assert (r.spill_stores, r.spill_loads, r.stack_bytes) == (0, 0, 0), (k["entry"], r)
        assert 0 < r.registers <= 65536 // threads // 8 * 8, (k["entry"], r)
        assert k["shared_bytes"] + r.shared_bytes <= MAX_SHARED, (k["shared_bytes"], r)
        counts = sass.opcodes(functions[k["entry"]])
        assert counts["LDL"] == counts["STL"] == 0, (counts["LDL"], counts["STL"])
    (gemm,) = gemm_kernels(package)
    counts = sass.opcodes(functions[gemm["entry"]])
    hgmma = f"HGMMA.64x{gemm['config']['tile'][1]}x16.F32.BF16"
    assert {op for op in counts if op.startswith("HGMMA.")} == {hgmma}, sorted(counts)
    assert counts["UTMALDG"] > 0 and counts["SYNCS"] > 0, sorted(counts)
    assert sass.wgmma_hazards(functions[gemm["entry"]]) == []
