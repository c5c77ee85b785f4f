"""Convolutions whose channel counts are not a multiple of 8 (16 bytes of
bf16 / f16) on tensor cores, without a GPU: tc-sm80's implicit GEMM, its
loaders reading the operands where they lie and zero-filling past C
(dnnc/codegen/gpu/tensorcore/sm80/loader.py, sm80/im2col.py), on sm_80 and
on sm_90a (where tc-sm90's TMA cannot step such pixels: conv.Unaligned).

* The kernels, interpreted on the CPU (kernel_interpreter.py), their
  output poisoned with NaN first, against the NumPy reference: forward
  convolutions of C and K in {1, 3, 6, 7, 12, 63, 65} (odd C: element-wise
  chunks; C = 6 and 12: cp.async of 4 and 8 bytes cut at C), strided,
  dilated, asymmetrically padded, 3-D, in convolution mode, with a bias and
  relu; data gradients of odd K and C, stride 1 and strided (stride
  phases); filter gradients of odd K, and of C that no tile's N divides:
  odd C and C = 12 (rows of C not a multiple of 16 bytes: a tile's
  columns span filter taps, element by element and in 8-byte chunks), and
  C = 40 of odd K (the taps the GEMM's batch, tensorcore/wgrad_taps.py,
  its dy read element by element).
* Plans: on sm_90a one tc-sm80 kernel, no layout kernel copying an operand
  into padded pixels, the reason saying why tc-sm90 does not apply.
* SASS (sm_80 and sm_90a): HMMA of the operand type, no spills or local
  memory.
"""

import math

import numpy as np
import pytest

import dnnc
from dnnc import compiler, graph_mlir
from dnnc.codegen.gpu import ptxas, sass
from dnnc.codegen.gpu.tensorcore import fold
from kernel_builds import assert_fit, assert_no_local_memory, family
from test_conv_phases import interpret
from test_conv_tensor_cores import channels_last
from test_tc_sass import needs_sass


def conv_graph(name, direction, dtype, x_dims, k, window, epilogue=None, **attrs):
    """One convolution (``direction`` "fprop", "dgrad" or "wgrad") of x
    ``x_dims`` by a ``k`` x C x ``window`` filter, every tensor
    channels-last; ``epilogue`` "bias_relu" (forward only)."""
    def build():
        g = dnnc.Graph(name=name, io_data_type=dtype, compute_data_type="f32")
        w_dims = [k, x_dims[1], *window]
        x = g.tensor(name="x", dim=x_dims, stride=channels_last(x_dims))
        w = g.tensor(name="w", dim=w_dims, stride=channels_last(w_dims))
        y = g.conv_fprop(x, w, **attrs)
        if direction == "fprop":
            if epilogue == "bias_relu":
                b_dims = [1, k] + [1] * (len(x_dims) - 2)
                y = g.relu(g.add(y, g.tensor(name="b", dim=b_dims)))
            y.set_output(True).set_stride(channels_last([int(d) for d in y.dim]))
            return g
        y_dims = [int(d) for d in y.dim]
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


# name: (direction, dtype, x dims, K, window, attrs, epilogue)
INTERPRETED = {
    "fprop_c3_k64_3x3_bf16": ("fprop", "bf16", [2, 3, 9, 7], 64, [3, 3],
                              dict(padding=[1, 1]), None),
    "fprop_c63_k65_bias_relu_bf16": ("fprop", "bf16", [1, 63, 6, 5], 65, [3, 3],
                                     dict(padding=[1, 1]), "bias_relu"),
    "fprop_c7_k3_strided_dilated_f16": ("fprop", "f16", [2, 7, 11, 10], 3, [3, 2],
                                        dict(stride=[2, 3], dilation=[2, 1],
                                             pre_padding=[2, 0], post_padding=[1, 1],
                                             conv_mode="convolution"), None),
    "fprop_c1_k8_bf16": ("fprop", "bf16", [3, 1, 8, 9], 8, [5, 3],
                         dict(pre_padding=[2, 1], post_padding=[0, 1]), None),
    "fprop_c6_k7_f16": ("fprop", "f16", [2, 6, 7, 7], 7, [3, 3], dict(padding=[1, 1]), None),
    "fprop_c12_k10_bf16": ("fprop", "bf16", [2, 12, 6, 5], 10, [2, 2], dict(stride=[2, 1]),
                           None),
    "fprop_c65_3d_f16": ("fprop", "f16", [1, 65, 4, 3, 5], 9, [2, 3, 1],
                         dict(pre_padding=[1, 1, 0], post_padding=[0, 1, 0]), None),
    "dgrad_k65_c63_bf16": ("dgrad", "bf16", [1, 63, 5, 6], 65, [3, 3], dict(padding=[1, 1]),
                           None),
    "dgrad_k3_c16_f16": ("dgrad", "f16", [2, 16, 7, 6], 3, [3, 3],
                         dict(pre_padding=[0, 2], post_padding=[2, 1],
                              conv_mode="convolution"), None),
    "dgrad_k7_c5_strided_bf16": ("dgrad", "bf16", [1, 5, 9, 8], 7, [3, 3],
                                 dict(stride=[2, 2], padding=[1, 1]), None),
    # The fuzzer's conv #244 (seed 1): dy's K = 8 channels, a K step of 32.
    # The chunks past K (channels 16 to 31) were read, not zeroed (their
    # bound compared unsigned), past dy's end at its last pixels.
    "dgrad_k8_c1_dilated_convolution_f16": ("dgrad", "f16", [3, 1, 12, 5], 8, [3, 3],
                                            dict(dilation=[3, 1], pre_padding=[0, 0],
                                                 post_padding=[0, 1], conv_mode="convolution"),
                                            None),
    "wgrad_k65_c64_bf16": ("wgrad", "bf16", [2, 64, 5, 4], 65, [3, 3], dict(padding=[1, 1]),
                           None),
    "wgrad_k16_c63_bf16": ("wgrad", "bf16", [2, 63, 6, 5], 16, [3, 3], dict(padding=[1, 1]),
                           None),
    "wgrad_k7_c3_dilated_convolution_f16": ("wgrad", "f16", [1, 3, 9, 8], 7, [3, 2],
                                            dict(dilation=[2, 1], pre_padding=[2, 0],
                                                 post_padding=[1, 1], conv_mode="convolution"),
                                            None),
    # C = 40 (a multiple of 8, not of 64) runs with the taps as the GEMM's
    # batch (wgrad_taps.py), not in tiles spanning taps; of K = 8 tc-sm90
    # runs it on sm_90a, so K = 7 here (dy's rows TMA cannot step) keeps it
    # on tc-sm80 on both archs: the batched layout with an element-wise A.
    "wgrad_k7_c40_f16": ("wgrad", "f16", [2, 40, 6, 6], 7, [3, 3], dict(padding=[1, 1]), None),
    # C = 12: 24-byte pixels, 8-byte chunks, each in one tap, tiles spanning
    # taps.
    "wgrad_k16_c12_bf16": ("wgrad", "bf16", [2, 12, 7, 6], 16, [3, 3], dict(padding=[1, 1]),
                           None),
    "wgrad_k3_c64_strided_f16": ("wgrad", "f16", [2, 64, 9, 7], 3, [2, 3],
                                 dict(stride=[2, 2], pre_padding=[1, 0], post_padding=[0, 1]),
                                 None),
}


def build_of(name):
    direction, dtype, x_dims, k, window, attrs, epilogue = INTERPRETED[name]
    return conv_graph(name, direction, dtype, x_dims, k, window, epilogue, **attrs)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("name", sorted(INTERPRETED))
def test_odd_channels_interpreted(name, arch):
    """The kernel tc-sm80 builds (on sm_90a: handed over by tc-sm90),
    interpreted, within the type's tolerance of the reference, every output
    written (no NaN left). Poisoned: the bytes around the operands and the
    shared memory start as NaN, so that a read past an operand or of
    shared memory never written shows as a NaN."""
    direction, dtype, x_dims, k, window, _, _ = INTERPRETED[name]
    if arch == "sm_90a" and fold.folds(direction, x_dims[1], window, 2, 64) and \
            (direction == "fprop" or k % 8 == 0):
        pytest.skip("tc-sm90 folds the filter's columns into the channels (fold.py)")
    expected, got, config = interpret(build_of(name), dtype, arch)
    assert 'strategy = "tc-sm80"' in config, config
    assert not np.isnan(got).any(), np.argwhere(np.isnan(got))[:5]
    rtol = {"bf16": 1.6e-2, "f16": 2e-3}[dtype]
    reduced = {"fprop": x_dims[1], "dgrad": k, "wgrad": x_dims[0] * math.prod(x_dims[2:])}
    products = reduced[direction] * (1 if direction == "wgrad" else math.prod(window))
    atol = rtol * max(1.0, 4 * math.sqrt(products))
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)


# ----------------------------------------------------------------------------
# Plans and SASS

def package(name, arch):
    return compiler.compile_module(graph_mlir.to_module(build_of(name)()), compiler.Options(
        target="cuda", arch=arch, tuning_db="off"), basename=f"{name}_{arch}")


PLANNED = ["fprop_c63_k65_bias_relu_bf16", "dgrad_k65_c63_bf16", "wgrad_k65_c64_bf16",
           "wgrad_k16_c63_bf16",
           "fprop_c12_k10_bf16", "dgrad_k3_c16_f16", "dgrad_k7_c5_strided_bf16"]


@pytest.mark.parametrize("name", PLANNED)
def test_sm90a_plan_is_one_tc_sm80_kernel(name):
    """On sm_90a: one tc-sm80 kernel reading the operands where they lie (no
    layout kernel padding pixels), the reason naming why tc-sm90 does not
    apply."""
    kernels = package(name, "sm_90a").kernels
    # One kernel function (a strided data gradient's: its stride phases'
    # launches).
    assert {k["entry"].rsplit("_kernel", 1)[0] for k in kernels} == \
        {f"{name}_k0_conv_{INTERPRETED[name][0]}"}, [k["entry"] for k in kernels]
    assert {k["strategy"] for k in kernels} == {"tc-sm80"}, \
        [(k["entry"], k["strategy"], k.get("reason")) for k in kernels]
    reason = kernels[0]["reason"]
    # Handed over by dnn-map-tensor-cores (tc-sm90's TMA cannot step the
    # channels), or ranked first by the heuristics (a filter gradient's C
    # that no tc-sm90 tile of N divides).
    assert reason.startswith(("tc-sm90 does not apply (", "fallback for when tc-sm90 does "
                              "not apply")), reason
    assert "implicit GEMM" in reason, reason
    assert "zero past the channels in the loader (no padded copy" in reason, reason


SASS = {"fprop_c63_k65_bias_relu_bf16": "HMMA.16816.F32.BF16",
        "dgrad_k65_c63_bf16": "HMMA.16816.F32.BF16",
        "fprop_c12_k10_bf16": "HMMA.16816.F32.BF16",
        "wgrad_k3_c64_strided_f16": "HMMA.16816.F32",
        "wgrad_k16_c63_bf16": "HMMA.16816.F32.BF16",
        "wgrad_k7_c40_f16": "HMMA.16816.F32"}


@needs_sass
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("name", sorted(SASS))
def test_odd_channels_sass(name, arch):
    """ptxas's verdict and the SASS: no spills or local memory, registers
    within what the block's threads may have; HMMA of the operand type only;
    the odd operands' element loads (LDG.E.U16) and shared stores (STS.128)
    where C or K is odd, cp.async (LDGSTS) for the rest."""
    built = package(name, arch)
    resources, cubin = ptxas.assemble_cubin(built.ptx, arch)
    functions = sass.functions(sass.disassemble(cubin))
    (k,) = built.kernels
    assert_fit([k], resources, most_registers=255)
    assert_no_local_memory([k], functions)
    counts = sass.opcodes(functions[k["entry"]])
    hmma = SASS[name]
    assert counts[hmma] > 0 and family(counts, "HMMA.") == {hmma}, sorted(counts)
    if "c63" in name or "k65" in name:
        assert any(op.startswith("LDG") and "U16" in op for op in counts), sorted(counts)


def test_fold_tc_sm90_does_not_take_goes_to_tc_sm80():
    """A stem-like convolution folded for tc-sm90 whose folded GEMM tc-sm90
    then does not take (one K step, which a K split in clusters of 2 cannot
    divide): the fold's launches are removed again and tc-sm80 runs the
    convolution unfolded, in one launch; interpreted against the
    reference."""
    build = conv_graph("fold_out", "fprop", "bf16", [3, 1, 13, 10], 65, [1, 7],
                       stride=[2, 3], dilation=[2, 3], pre_padding=[0, 10],
                       post_padding=[0, 17], conv_mode="convolution")
    kernels = compiler.compile_module(graph_mlir.to_module(build()), compiler.Options(
        target="cuda", arch="sm_90a", tuning_db="off"), basename="fold_out").kernels
    assert [k["strategy"] for k in kernels] == ["tc-sm80"], \
        [(k["entry"], k["strategy"], k.get("reason")) for k in kernels]
    assert "tc-sm90 does not apply (K split" in kernels[0]["reason"], kernels[0]["reason"]
    expected, got, _ = interpret(build, "bf16", "sm_90a")
    assert not np.isnan(got).any()
    np.testing.assert_allclose(got, expected, rtol=1.6e-2, atol=1.6e-2 * 4 * math.sqrt(7))


@needs_sass
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("direction", ["fprop", "dgrad"])
def test_large_odd_channels_fit_registers(direction, arch):
    """A layer-sized 3x3 convolution of 63 -> 65 channels: the heuristics'
    tile (256 x 128 x 64 on sm_90a) holds too many element-wise loads for
    a thread's registers; the tile runs narrowed (sm80.fit_element_wise)
    and ptxas spills nothing."""
    build = conv_graph(f"big_{direction}", direction, "bf16", [32, 63, 56, 56], 65, [3, 3],
                       padding=[1, 1])
    built = compiler.compile_module(graph_mlir.to_module(build()), compiler.Options(
        target="cuda", arch=arch, tuning_db="off"), basename=f"big_{direction}_{arch}")
    (k,) = built.kernels
    assert k["strategy"] == "tc-sm80", k.get("reason")
    resources, _ = ptxas.assemble_cubin(built.ptx, arch)
    r = resources[k["entry"]]
    assert (r.spill_stores, r.spill_loads, r.stack_bytes) == (0, 0, 0), (k["config"], r)


def test_wgrad_layout_in_plan():
    """The plan says how a filter gradient's columns meet the taps
    (wgrad_taps.py): C = 40 with the taps as the GEMM's batch (a multiple
    of 8, which tc-sm90 would read too: preferred to tiles spanning taps),
    C = 63 and 12 in tiles spanning taps (rows TMA cannot step), on sm_90a's
    tc-sm80 and on sm_80."""
    for arch in ("sm_80", "sm_90a"):
        for name, says in (("wgrad_k7_c40_f16", "the taps the GEMM's batch: 64 columns a tap"),
                           ("wgrad_k16_c63_bf16", "columns may span filter taps: C = 63"),
                           ("wgrad_k16_c12_bf16", "columns may span filter taps: C = 12")):
            (k,) = package(name, arch).kernels
            assert k["strategy"] == "tc-sm80", (arch, name, k.get("reason"))
            assert says in k["reason"], (arch, name, k["reason"])
