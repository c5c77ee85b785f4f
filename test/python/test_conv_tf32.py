"""tf32 convolutions without a GPU: the default compute type of f32
convolutions (dnnc/compute_types.py), on the graph, in the IR, on the CPU
back end and in the plan; and the tf32 data and filter gradients on
tc-sm90 (sm90/tf32_conv.py), read from the plan and from what ptxas makes
of them.

* The rule: f32 convolutions multiply as tf32 unless the op or the graph
  asks for a compute type; matmuls and 16-bit convolutions in f32. Inputs
  of 1 + 2^-12 tell the two apart exactly on the CPU back end: tf32 rounds
  them to 1.
* ``GRADS``: a stride-1 and a strided data gradient (filter copied K-major
  by a launch of its own, then one GEMM, or one a stride phase) and a
  filter gradient (dy copied K-major, then dwᵀ = im2col(x)ᵀ dy): every
  kernel on tc-sm90, the reasons naming the choice; through ptxas (skipped
  without ptxas or cuobjdump, as test_tc_sass.py skips): HGMMA on tf32
  only, no spills, no local memory, and for the filter gradient every
  HGMMA's A a register.
* tc-sm80's tf32 implicit GEMM (sm_80, and on sm_90a what tc-sm90 does
  not take: a filter gradient of C not a multiple of 64) is
  test_conv_sm80_tf32.py's.
"""

import numpy as np
import pytest

import dnnc
from dnnc import compiler, compute_types, graph_mlir
from dnnc.codegen.gpu import sass
from dnnc.dialect.types import data_type
from kernel_builds import Builds, assert_fit, assert_no_local_memory, family
from test_conv_tensor_cores import channels_last
from test_tc_sass import A_REGISTER, ARCH, MAX_SHARED, gemm_kernels, needs_sass


def conv_graph(direction, graph_compute=None, op_compute=None, dtype="f32", x_dims=(1, 8, 5, 5),
               k=8, window=(3, 3), groups=1, **attrs):
    """One ``direction`` convolution of f32 (or ``dtype``) tensors,
    channels-last, with the graph's and the op's compute types as given."""
    g = dnnc.Graph(io_data_type=dtype, compute_data_type=graph_compute)
    x_dims = list(x_dims)
    w_dims = [k, x_dims[1] // groups, *window]
    probe = dnnc.Graph(io_data_type=dtype)
    y_dims = [int(d) for d in probe.conv_fprop(
        probe.tensor(dim=x_dims), probe.tensor(dim=w_dims), **attrs).dim]

    def tensor(name, dims):
        return g.tensor(name=name, dim=dims, stride=channels_last(dims))
    if direction == "fprop":
        out, dims = g.conv_fprop(tensor("x", x_dims), tensor("w", w_dims),
                                 compute_data_type=op_compute, **attrs), y_dims
    elif direction == "dgrad":
        out, dims = g.conv_dgrad(tensor("dy", y_dims), tensor("w", w_dims), x_dims,
                                 compute_data_type=op_compute, **attrs), x_dims
    else:
        out, dims = g.conv_wgrad(tensor("x", x_dims), tensor("dy", y_dims), w_dims,
                                 compute_data_type=op_compute, **attrs), w_dims
    out.set_output(True).set_stride(channels_last(dims))
    return g


def compute_type(g):
    """The compute_type attribute of the graph's one convolution or matmul."""
    (line,) = [line for line in g.to_mlir().splitlines() if "compute_type" in line]
    return line.split("compute_type = ")[1].split(",")[0].split("}")[0].strip()


# -- the rule ---------------------------------------------------------------------


@pytest.mark.parametrize("direction", ["fprop", "dgrad", "wgrad"])
@pytest.mark.parametrize("graph_compute, op_compute, expected", [
    (None, None, "tf32"),          # not asked: the f32 convolution default
    ("float", None, "f32"),        # the graph asks for exact f32
    (None, "float", "f32"),        # the op does
    ("tf32", None, "tf32"),
    ("float", "tf32", "tf32"),     # the op's wins over the graph's
    ("tf32", "float", "f32"),
])
def test_f32_convolutions_default_to_tf32(direction, graph_compute, op_compute, expected):
    g = conv_graph(direction, graph_compute, op_compute)
    assert compute_type(g) == expected


@pytest.mark.parametrize("dtype", ["bf16", "f16"])
def test_16_bit_convolutions_multiply_in_f32(dtype):
    assert compute_type(conv_graph("fprop", dtype=dtype)) == "f32"


def test_matmuls_default_to_f32():
    """f32 matmuls stay exact unless asked (cuBLAS's default in PyTorch)."""
    g = dnnc.Graph(io_data_type="f32")
    g.matmul(g.tensor(name="a", dim=[4, 8]), g.tensor(name="b", dim=[8, 4])).set_output(True)
    assert compute_type(g) == "f32"
    g = dnnc.Graph(io_data_type="f32", compute_data_type="tf32")
    g.matmul(g.tensor(name="a", dim=[4, 8]), g.tensor(name="b", dim=[8, 4])).set_output(True)
    assert compute_type(g) == "tf32"


def test_resolve():
    f32, bf16, tf32 = data_type.FLOAT, data_type.BFLOAT16, data_type.TF32
    assert compute_types.resolve("conv_dgrad", None, [f32, f32]) is tf32
    assert compute_types.resolve("conv_dgrad", f32, [f32, f32]) is f32
    assert compute_types.resolve("conv_fprop", None, [bf16, bf16]) is f32
    assert compute_types.resolve("conv_fprop", None, [f32, bf16]) is f32
    assert compute_types.resolve("matmul", None, [f32, f32]) is f32
    assert compute_types.resolve("matmul", tf32, [f32, f32]) is tf32
    # Grouped and depthwise f32 convolutions run on simt-depthwise's f32 FMAs.
    assert compute_types.resolve("conv_fprop", None, [f32, f32], groups=32) is f32
    assert compute_types.resolve("conv_wgrad", tf32, [f32, f32], groups=2) is tf32
    i8, u8, i32 = data_type.INT8, data_type.UINT8, data_type.INT32
    assert compute_types.resolve("matmul", None, [i8, u8]) is i32


@pytest.mark.parametrize("direction", ["fprop", "dgrad", "wgrad"])
def test_grouped_f32_convolutions_default_to_f32(direction):
    import dnnc

    g = dnnc.Graph(io_data_type="float32")
    x = g.tensor(name="x", dim=[2, 32, 9, 9])
    w = g.tensor(name="w", dim=[32, 1, 3, 3])
    dy = g.tensor(name="dy", dim=[2, 32, 9, 9])
    if direction == "fprop":
        y = g.conv_fprop(x, w, padding=[1, 1])
    elif direction == "dgrad":
        y = g.conv_dgrad(dy, w, [2, 32, 9, 9], padding=[1, 1])
    else:
        y = g.conv_wgrad(x, dy, [32, 1, 3, 3], padding=[1, 1])
    y.set_output(True)
    assert "compute_type = f32" in g.to_mlir()


def test_intermediate_f32_operands_default_to_tf32():
    """An operand computed in the graph (f32 intermediates) counts as f32."""
    g = dnnc.Graph(io_data_type="bf16")
    x = g.relu(g.tensor(name="x", dim=[1, 8, 5, 5]))
    w = g.tensor(name="w", dim=[8, 8, 3, 3], data_type="f32")
    g.conv_fprop(x, w, padding=[1, 1]).set_output(True)
    assert compute_type(g) == "tf32"


def test_the_graph_form_tells_default_from_asked():
    """The JIT cache keys graphs by their form: a graph that asks for
    float and one that asks for nothing must not share an entry."""
    forms = {conv_graph("fprop", c).serialize() for c in (None, "float", "tf32")}
    assert len(forms) == 3
    # Asking for what the default gives is still asking (the graph differs).
    assert conv_graph("fprop", None).serialize() != conv_graph("fprop", "tf32").serialize()


@pytest.mark.parametrize("direction", ["fprop", "dgrad", "wgrad"])
def test_cpu_back_end_rounds_to_tf32_by_default(direction):
    """Every input 1 + 2^-12: tf32 rounds it to 1, so the default sums
    exactly the products' count where float sums (1 + 2^-12)^2 each. The
    CPU back end and the NumPy reference agree either way."""
    value = 1.0 + 2.0 ** -12
    for compute, each in ((None, 1.0), ("float", value * value)):
        g = conv_graph(direction, compute, padding=[1, 1])
        inputs = {t.name: np.full([int(d) for d in t.dim], value, np.float32)
                  for t in g.inputs}
        got = g.compile(target="cpu")(**inputs)
        if isinstance(got, dict):
            (got,) = got.values()
        elif isinstance(got, (list, tuple)):
            (got,) = got
        got = np.asarray(got, np.float64)
        ref = next(iter(g.execute_reference(inputs).values()))
        # Each output sums a whole number of equal products (the padding
        # contributes none): a multiple of one product.
        counts = np.rint(ref / each)
        assert np.all(counts >= 1)
        np.testing.assert_allclose(ref, counts * each, rtol=1e-6)
        np.testing.assert_allclose(got, ref, rtol=1e-6)


def test_plan_states_the_rule():
    package = compiler.compile_module(
        graph_mlir.to_module(conv_graph("dgrad", x_dims=(2, 64, 9, 11), k=64, padding=[1, 1])),
        compiler.Options(target="cuda", arch=ARCH, tuning_db="off"), basename="rule")
    reasons = [k.get("reason", "") for k in package.kernels]
    assert any(compute_types.NOTE in r for r in reasons), reasons


# -- tf32 gradients on tc-sm90 ------------------------------------------------------

# name: (direction, x dims, K, window, attrs)
GRADS = {
    "dgrad_3x3": ("dgrad", [2, 64, 9, 11], 40, [3, 3], dict(padding=[1, 1])),
    "dgrad_3x3_s2": ("dgrad", [2, 32, 13, 10], 48, [3, 3], dict(padding=[1, 1], stride=[2, 2])),
    "dgrad_c20": ("dgrad", [1, 20, 6, 7], 16, [3, 3], dict(padding=[1, 1],
                                                             conv_mode="convolution")),
    # Two groups of 64 channels each way: the copy [G·C/G, taps, K/G].
    "dgrad_groups2": ("dgrad", [2, 128, 6, 7], 128, [3, 3], dict(padding=[1, 1], groups=2)),
    "wgrad_3x3": ("wgrad", [2, 64, 9, 11], 24, [3, 3], dict(padding=[1, 1])),
    "wgrad_groups2": ("wgrad", [2, 128, 6, 7], 64, [3, 3], dict(padding=[1, 1], groups=2)),
    "wgrad_5x3_s2": ("wgrad", [3, 128, 13, 9], 64, [5, 3], dict(stride=[2, 2],
                                                                 pre_padding=[2, 0],
                                                                 post_padding=[1, 1])),
}


def grad_graph(name):
    """The graph of GRADS[name]."""
    direction, x_dims, k, window, attrs = GRADS[name]
    # Grouped f32 convolutions multiply in f32 unless asked for tf32.
    return conv_graph(direction, "tf32" if attrs.get("groups", 1) > 1 else None,
                      x_dims=x_dims, k=k, window=window, **attrs)


@pytest.fixture(scope="module")
def built():
    return Builds(grad_graph, ARCH)


@pytest.mark.parametrize("name", sorted(GRADS))
def test_tf32_gradient_on_tc_sm90(built, name):
    kernels = built.package(name).kernels
    assert all(k["strategy"] == "tc-sm90" for k in kernels), \
        [(k["entry"], k["strategy"], k.get("reason")) for k in kernels]
    reason = kernels[0]["reason"]
    assert compute_types.NOTE in reason, reason
    gemms = gemm_kernels(built.package(name))
    assert gemms, [k["entry"] for k in kernels]
    if GRADS[name][0] == "dgrad":
        assert "the filter copied K-major first (wgmma reads tf32 from shared memory only " \
            "K-major)" in reason, reason
        strided = "stride" in GRADS[name][4]
        groups = GRADS[name][4].get("groups", 1)
        assert (f"{groups} groups" in reason) == (groups > 1), reason
        assert ("stride phases" in reason) == strided, reason
        # The copy's launch, then a GEMM (one a stride phase with taps).
        assert kernels[0] not in gemms
    else:
        groups = GRADS[name][4].get("groups", 1)
        assert (f"{groups} groups" in reason) == (groups > 1), reason
        assert "computes dw^T = im2col(x)^T dy" in reason and "x is its A, read into " \
            "registers, dy copied K-major first" in reason, reason
        (gemm,) = gemms
        # A: x by im2col, boxes of 32 channels; B: dy's copy, K-major.
        a, b = gemm["args"][:2]
        assert "im2col" in a and "im2col" not in b, (a, b)


@needs_sass
@pytest.mark.parametrize("name", sorted(GRADS))
def test_tf32_gradient_sass(built, name):
    """No spills or local memory, registers within 65536 / threads, shared
    memory within sm_90's; the GEMMs' HGMMA on tf32 only, TMA loads, and
    (filter gradients) every HGMMA's A from registers."""
    package = built.package(name)
    resources, functions = built.assembly(name)
    assert_fit(package.kernels, resources, MAX_SHARED)
    assert_no_local_memory(package.kernels, functions)
    for gemm in gemm_kernels(package):
        text = functions[gemm["entry"]]
        counts = sass.opcodes(text)
        hgmma = family(counts, "HGMMA.")
        assert hgmma and all(op.endswith(".F32.TF32") and "x8." in op for op in hgmma), hgmma
        assert counts["UTMALDG"] > 0, sorted(counts)
        assert sass.wgmma_hazards(text) == []
        if GRADS[name][0] == "wgrad":
            lines = [line for line in text.splitlines() if "HGMMA" in line]
            assert lines and all(A_REGISTER.search(line) for line in lines), lines[:2]
