"""tf32 convolutions on tc-sm80 without a GPU: the implicit GEMM of f32
tensors multiplied as tf32 (the default compute type of f32
convolutions) with mma.sync.m16n8k8, forward, data gradient and filter
gradient, 2-D and 3-D.

The loaders are the 16-bit ones with 4-byte elements (sm80/im2col.py):
16-byte cp.async chunks of 4 channels where C is a multiple of 4, else 8-
or 4-byte chunks cut at C, zero past it in the loader. The fragments are
the tf32 matmul's (sm80/kernel.py): ldmatrix.b16 pairs of a K-major
operand (a forward convolution's x and filter, a data gradient's dy),
32-bit shared loads of an MN-major one (a data gradient's filter, C
contiguous; a filter gradient's dy and x, pixels outermost), each rounded
to tf32 in registers.

* The kernels, interpreted on the CPU (kernel_interpreter.py, whose
  mma.m16n8k8 reads a register's 19 high bits, as the tensor cores do),
  their outputs poisoned with NaN first, against the NumPy reference (which
  rounds both operands to tf32 to nearest even): the tolerance is f32's
  summation error, far below what truncating to tf32 instead of rounding
  would make.
* Plans: tc-sm80 on sm_80 for every direction; on sm_90a a tf32 filter
  gradient that tc-sm90's transposed product does not tile (C not a
  multiple of 64) goes to tc-sm80, no longer to simt-generic; an f32
  convolution asked to multiply exactly stays off the tensor cores.
* SASS (sm_80): HMMA.1688.F32.TF32 only, no spills or local memory.
"""

import math

import numpy as np
import pytest

import dnnc
from dnnc import compiler, compute_types, graph_mlir
from dnnc.codegen.gpu import ptxas, sass
from kernel_builds import assert_fit, assert_no_local_memory, family
from test_conv_phases import interpret
from test_conv_tensor_cores import channels_last
from test_tc_sass import needs_sass

HMMA = "HMMA.1688.F32.TF32"


def conv_graph(name, direction, x_dims, k, window, epilogue=None, compute=None, **attrs):
    """A builder of one f32 convolution (``direction`` "fprop", "dgrad" or
    "wgrad") of x ``x_dims`` by a ``k`` x C x ``window`` filter, every
    tensor channels-last, multiplied as ``compute`` (None: the default,
    tf32); ``epilogue`` "bias_relu" (forward only)."""
    def build():
        g = dnnc.Graph(name=name, io_data_type="f32", compute_data_type=compute)
        w_dims = [k, x_dims[1], *window]
        probe = dnnc.Graph(io_data_type="f32")
        y_dims = [int(d) for d in probe.conv_fprop(
            probe.tensor(dim=x_dims), probe.tensor(dim=w_dims), **attrs).dim]

        def tensor(tname, dims):
            return g.tensor(name=tname, dim=dims, stride=channels_last(dims))
        if direction == "fprop":
            out, dims = g.conv_fprop(tensor("x", x_dims), tensor("w", w_dims), **attrs), y_dims
            if epilogue == "bias_relu":
                b_dims = [1, k] + [1] * (len(x_dims) - 2)
                out = g.relu(g.add(out, g.tensor(name="b", dim=b_dims)))
        elif direction == "dgrad":
            out, dims = g.conv_dgrad(tensor("dy", y_dims), tensor("w", w_dims), x_dims,
                                     **attrs), x_dims
        else:
            out, dims = g.conv_wgrad(tensor("x", x_dims), tensor("dy", y_dims), w_dims,
                                     **attrs), w_dims
        out.set_output(True).set_stride(channels_last(dims))
        return g
    return build


# name: (direction, x dims, K, window, attrs, epilogue, config override or None)
INTERPRETED = {
    # C a multiple of 4: 16-byte chunks; a bias and relu.
    "fprop_c16_k24_bias_relu": ("fprop", [2, 16, 7, 6], 24, [3, 3], dict(padding=[1, 1]),
                                "bias_relu", None),
    # C = 3: 4-byte chunks; strided, dilated, asymmetric padding, convolution mode.
    "fprop_c3_k10_strided_dilated": ("fprop", [2, 3, 11, 10], 10, [3, 2],
                                     dict(stride=[2, 3], dilation=[2, 1], pre_padding=[2, 0],
                                          post_padding=[1, 1], conv_mode="convolution"),
                                     None, None),
    # C = 6: 8-byte chunks, the last one of a pixel cut at C.
    "fprop_c6_k7": ("fprop", [2, 6, 7, 7], 7, [3, 3], dict(padding=[1, 1]), None, None),
    # C = 20 in K steps of 16: a tap's second step half past C.
    "fprop_c20_k9_3d": ("fprop", [1, 20, 4, 3, 5], 9, [2, 3, 1],
                        dict(pre_padding=[1, 1, 0], post_padding=[0, 1, 0]), None, None),
    "dgrad_k24_c20": ("dgrad", [2, 20, 6, 5], 24, [3, 3], dict(padding=[1, 1]), None, None),
    # Odd K and C: 4-byte chunks of dy, the filter's rows of C 4 bytes apart.
    "dgrad_k5_c7_convolution": ("dgrad", [1, 7, 7, 6], 5, [3, 3],
                                dict(pre_padding=[0, 2], post_padding=[2, 1],
                                     conv_mode="convolution"), None, None),
    # Stride phases: a stride-1 GEMM per phase with taps.
    "dgrad_k16_c12_strided": ("dgrad", [1, 12, 9, 8], 16, [3, 3],
                              dict(stride=[2, 2], padding=[1, 1]), None, None),
    "dgrad_k8_c4_3d_strided": ("dgrad", [1, 4, 5, 4, 6], 8, [3, 1, 2],
                               dict(stride=[2, 1, 2], pre_padding=[1, 0, 0],
                                    post_padding=[1, 0, 0]), None, None),
    # C = 64: tiles of N dividing C, one tap each.
    "wgrad_k24_c64": ("wgrad", [2, 64, 5, 4], 24, [3, 3], dict(padding=[1, 1]), None, None),
    # C = 24: the taps the GEMM's batch.
    "wgrad_k16_c24": ("wgrad", [1, 24, 6, 6], 16, [3, 3], dict(padding=[1, 1]), None, None),
    # C = 5: 20-byte pixels, 4-byte chunks, tiles spanning taps; odd K.
    "wgrad_k7_c5_dilated": ("wgrad", [2, 5, 9, 8], 7, [3, 2],
                            dict(dilation=[2, 1], pre_padding=[2, 0], post_padding=[1, 1]),
                            None, None),
    "wgrad_k3_c8_strided_3d": ("wgrad", [1, 8, 5, 6, 4], 3, [2, 3, 1],
                               dict(stride=[2, 2, 1], padding=[1, 1, 0]), None, None),
    # A long reduction split 4 ways, the partials summed by a second launch.
    "wgrad_k16_c8_split": ("wgrad", [4, 8, 8, 8], 16, [3, 3], dict(padding=[1, 1]), None,
                           "*=strategy:tc-sm80,tile:64x64x16,stages:3,split:4"),
}


def build_of(name):
    direction, x_dims, k, window, attrs, epilogue, _ = INTERPRETED[name]
    return conv_graph(name, direction, x_dims, k, window, epilogue, **attrs)


def tolerance(name):
    """(rtol, atol) of f32 sums of the case's products, each of operands
    drawn from N(0, 1) rounded to tf32 as the reference rounds them: the
    kernel's and the reference's roundings agree, only the order of the
    sums differs. Truncating to tf32 instead would be off by about 2^-11
    of each product's size times the square root of their count."""
    direction, x_dims, k, window, _, _, _ = INTERPRETED[name]
    reduced = {"fprop": x_dims[1] * math.prod(window), "dgrad": k * math.prod(window),
               "wgrad": x_dims[0] * math.prod(x_dims[2:])}[direction]
    return 1e-5, 1e-5 * max(1.0, 4 * math.sqrt(reduced))


@pytest.mark.parametrize("name", sorted(INTERPRETED))
def test_tf32_conv_interpreted(name):
    """The kernel tc-sm80 builds on sm_80, interpreted, NaN-poisoned, within
    f32's tolerance of the tf32 reference, every output written."""
    override = INTERPRETED[name][6]
    expected, got, config = interpret(build_of(name), "f32", "sm_80", override)
    assert 'strategy = "tc-sm80"' in config, config
    if override and "split" in override:
        assert "split = 4" in config, config
    assert not np.isnan(got).any(), np.argwhere(np.isnan(got))[:5]
    rtol, atol = tolerance(name)
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)


def test_rounding_is_to_nearest():
    """Every operand 1 + 5·2^-13, over half a tf32 unit (2^-10) above 1:
    rounded to nearest it is 1 + 2^-10, truncated (the tensor cores' own
    reading of f32 bits) 1. Eight products each: the kernel must give the
    rounded operands' sum exactly."""
    build = conv_graph("round", "fprop", [1, 8, 4, 4], 8, [1, 1])
    expected, got, config = interpret(build, "f32", "sm_80", fill=1.0 + 5 * 2.0 ** -13)
    assert 'strategy = "tc-sm80"' in config, config
    rounded = 8 * (1.0 + 2.0 ** -10) ** 2
    np.testing.assert_allclose(expected, rounded, rtol=1e-7)
    np.testing.assert_array_equal(got, np.float32(rounded))


def matmul_graph(name, a_dims, n, a_transposed=False):
    """C = A @ B of f32 tensors multiplied as tf32 (the graph asks: f32
    matmuls default to exact f32), A ``a_dims`` (batched when 3-D), stored
    M-contiguous where ``a_transposed``, then a relu."""
    def build():
        g = dnnc.Graph(name=name, io_data_type="f32", compute_data_type="tf32")
        stride = None
        if a_transposed:
            m, k = a_dims[-2:]
            stride = [m * k] * (len(a_dims) - 2) + [1, m]
        a = g.tensor(name="a", dim=a_dims, stride=stride)
        b = g.tensor(name="b", dim=a_dims[:-2] + [a_dims[-1], n])
        g.relu(g.matmul(a, b)).set_output(True)
        return g
    return build


# name: (A dims, N, A stored M-contiguous)
MATMULS = {
    # B's rows of 38 f32: 8-byte chunks, MN-major fragments read by 32-bit loads.
    "matmul_tf32_n38": ([70, 200], 38, False),
    # A stored M-contiguous (its fragments by 32-bit loads), a batch of 2.
    "matmul_tf32_batched_a_transposed": ([2, 33, 96], 72, True),
}


@pytest.mark.parametrize("name", sorted(MATMULS))
def test_tf32_matmul_interpreted(name):
    """The tf32 matmul shares the kernel (its stages rounded as they land):
    interpreted within f32's tolerance of the tf32 reference."""
    a_dims, n, transposed = MATMULS[name]
    expected, got, config = interpret(matmul_graph(name, a_dims, n, transposed), "f32",
                                      "sm_80")
    assert 'strategy = "tc-sm80"' in config, config
    assert not np.isnan(got).any(), np.argwhere(np.isnan(got))[:5]
    np.testing.assert_allclose(got, expected, rtol=1e-5,
                               atol=1e-5 * 4 * math.sqrt(a_dims[-1]))


# ----------------------------------------------------------------------------
# Plans and SASS

def package(name, arch, build=None, config=None):
    build = build or build_of(name)
    return compiler.compile_module(graph_mlir.to_module(build()), compiler.Options(
        target="cuda", arch=arch, tuning_db="off", config=config), basename=f"{name}_{arch}")


@pytest.mark.parametrize("name", ["fprop_c16_k24_bias_relu", "dgrad_k24_c20",
                                  "dgrad_k16_c12_strided", "wgrad_k24_c64", "wgrad_k7_c5_dilated"])
def test_sm80_plan_is_tc_sm80(name):
    """On sm_80 every kernel of a tf32 convolution is tc-sm80's implicit
    GEMM, the reason stating the tf32 rule."""
    kernels = package(name, "sm_80").kernels
    assert {k["strategy"] for k in kernels} == {"tc-sm80"}, \
        [(k["entry"], k["strategy"], k.get("reason")) for k in kernels]
    reason = kernels[0]["reason"]
    assert compute_types.NOTE in reason and "implicit GEMM" in reason, reason


def test_exact_f32_stays_off_the_tensor_cores():
    """compute_data_type='float': an exact f32 multiply, which mma.sync
    (tf32) cannot do, on sm_80 and sm_90a."""
    build = conv_graph("exact", "fprop", [2, 16, 7, 6], 24, [3, 3], compute="float",
                       padding=[1, 1])
    for arch in ("sm_80", "sm_90a"):
        kernels = package("exact", arch, build).kernels
        assert all(k["strategy"] not in ("tc-sm80", "tc-sm90") for k in kernels), \
            [(k["entry"], k["strategy"]) for k in kernels]


def test_forced_tc_sm80_on_an_exact_f32_conv_says_why():
    build = conv_graph("exact_forced", "dgrad", [2, 16, 7, 6], 24, [3, 3], compute="float",
                       padding=[1, 1])
    kernels = package("exact_forced", "sm_80", build, config="*=strategy:tc-sm80").kernels
    for k in kernels:
        assert k["strategy"] == "simt-generic", k
        assert k["reason"].startswith("tc-sm80 does not apply (f32 operands multiplied in "
                                      "f32"), k["reason"]


def test_sm90a_tf32_wgrad_tc_sm90_does_not_tile_goes_to_tc_sm80():
    """C = 24: no tile of tc-sm90's transposed product (64 or 128 rows)
    lies in one filter tap; tc-sm80 runs it, the taps as its GEMM's batch."""
    kernels = package("wgrad_k16_c24", "sm_90a").kernels
    assert [k["strategy"] for k in kernels] == ["tc-sm80"], \
        [(k["entry"], k["strategy"], k.get("reason")) for k in kernels]
    reason = kernels[0]["reason"]
    assert "the 9 taps the GEMM's batch" in reason, reason
    assert "tc-sm90 does not take this tf32 filter gradient: it takes C (a group's, 24) a " \
        "multiple of 64" in reason, reason


@pytest.mark.parametrize("direction", ["fprop", "dgrad", "wgrad"])
def test_sm90a_tc_sm80_forced(direction):
    """The strategy override puts a tf32 convolution on tc-sm80 on sm_90a
    (what the bench's "tc-sm80 forced" cases time against tc-sm90)."""
    build = conv_graph(f"forced_{direction}", direction, [2, 64, 9, 11], 40, [3, 3],
                       padding=[1, 1])
    kernels = package(f"forced_{direction}", "sm_90a", build,
                      config="*=strategy:tc-sm80").kernels
    assert {k["strategy"] for k in kernels} == {"tc-sm80"}, \
        [(k["entry"], k["strategy"], k.get("reason")) for k in kernels]
    # The K step a tf32 block of 4 warps reads: 64 bytes, 16 elements.
    assert all(k["config"]["tile"][2] == 16 for k in kernels), [k["config"] for k in kernels]


# Layer-sized cases, their heuristics' tiles: (direction, x dims, K, window, attrs)
LAYERS = {
    "fprop_3x3_64": ("fprop", [32, 64, 56, 56], 64, [3, 3], dict(padding=[1, 1])),
    "fprop_c3_stem": ("fprop", [32, 3, 224, 224], 64, [7, 7], dict(padding=[3, 3],
                                                                   stride=[2, 2])),
    "dgrad_3x3_128_s2": ("dgrad", [32, 128, 28, 28], 128, [3, 3], dict(padding=[1, 1],
                                                                       stride=[2, 2])),
    "wgrad_3x3_256": ("wgrad", [32, 256, 14, 14], 256, [3, 3], dict(padding=[1, 1])),
    "wgrad_c3_stem": ("wgrad", [32, 3, 224, 224], 64, [7, 7], dict(padding=[3, 3],
                                                                   stride=[2, 2])),
    "fprop_3d": ("fprop", [4, 32, 16, 28, 28], 64, [3, 3, 3], dict(padding=[1, 1, 1])),
}


@needs_sass
@pytest.mark.parametrize("name", sorted(LAYERS))
def test_tf32_conv_sass(name):
    """ptxas for sm_80: no spills or local memory, registers within what
    the block's threads may have; HMMA.1688.F32.TF32 only, cp.async
    (LDGSTS) loads."""
    direction, x_dims, k, window, attrs = LAYERS[name]
    built = package(name, "sm_80", conv_graph(name, direction, x_dims, k, window, **attrs))
    resources, cubin = ptxas.assemble_cubin(built.ptx, "sm_80")
    functions = sass.functions(sass.disassemble(cubin))
    gemms = [k for k in built.kernels if k["strategy"] == "tc-sm80"
             and "HMMA" in " ".join(sass.opcodes(functions[k["entry"]]))]
    assert gemms, [(k["entry"], k["strategy"]) for k in built.kernels]
    assert_fit(built.kernels, resources, most_registers=255)
    assert_no_local_memory(built.kernels, functions)
    for gemm in gemms:
        counts = sass.opcodes(functions[gemm["entry"]])
        assert family(counts, "HMMA.") == {HMMA}, sorted(counts)
        assert any(op.startswith("LDGSTS") for op in counts), sorted(counts)
