"""Grouped convolutions of a few channels a group on the simt-depthwise
strategy (dnnc/codegen/gpu/window/grouped_emit.py, depthwise_wgrad.py),
forward, data gradient and filter gradient, without a GPU: the
kernels dnn-depthwise-conv builds, interpreted on the CPU by
kernel_interpreter.py against the NumPy reference (outputs NaN-poisoned
first) for groups of 2 to 32 channels, more output channels a group than
input (and fewer), a vector holding two groups or a group spanning vectors,
narrow vectors (3 channels a group), strides, dilation, asymmetric padding,
convolution mode and a bias + relu epilogue; the lane permutation; the
heuristics (what the tensor cores take stays there); ResNeXt-50's layer as
one kernel with no copies and no spills.
"""

import numpy as np
import pytest

from dnnc import compiler
from dnnc.codegen.gpu import ptxas
from dnnc.codegen.gpu.window.grouped_emit import lane_sources, span
from dnnc.codegen.gpu.window.tile import blocks_per_sm
from dnnc.heuristics import rank
from dnnc.heuristics.problem import Problem, TensorSpec
from test_conv_tensor_cores import conv_graph
from test_depthwise_gradients import check, interpret

STRATEGY = "simt-depthwise"
PTXAS = ptxas.find()

GROUPED = {
    # name: (dtype, x dims, K, window, groups, attrs, epilogue)
    "4_a_group_bf16": ("bf16", [2, 16, 6, 7], 16, [3, 3], 4, dict(padding=[1, 1]), None),
    "4_a_group_s2_bias_relu_f16": ("f16", [1, 32, 5, 9], 32, [3, 3], 8,
                                   dict(padding=[1, 1], stride=[2, 2]), "bias_relu"),
    "2_in_4_out_f32": ("f32", [1, 8, 5, 6], 16, [3, 3], 4, dict(pre_padding=[1, 0],
                                                                post_padding=[0, 2]), None),
    "multiplier_2_bf16": ("bf16", [1, 8, 5, 6], 16, [3, 3], 8, dict(padding=[1, 1]), None),
    "32_in_16_out_bf16": ("bf16", [1, 64, 5, 6], 32, [3, 3], 2, dict(padding=[1, 1]), None),
    "3_a_group_dilated_f16": ("f16", [1, 12, 5, 6], 12, [5, 3], 4,
                              dict(padding=[2, 1], dilation=[1, 2]), None),
    "8_in_16_out_convolution_bf16": ("bf16", [2, 16, 7, 5], 32, [3, 3], 2,
                                     dict(padding=[1, 1], conv_mode="convolution"), None),
    "3d_f16": ("f16", [1, 16, 3, 4, 5], 16, [3, 3, 3], 4, dict(padding=[1, 1, 1]), None),
}


@pytest.mark.parametrize("name", sorted(GROUPED))
def test_grouped_kernel_computes_the_convolution(name):
    dtype, x_dims, k, window, groups, attrs, epilogue = GROUPED[name]
    build = conv_graph(f"gr_{name}", dtype, x_dims, k, window, groups=groups,
                       epilogue=epilogue, **attrs)
    expected, got, config, launches = interpret(build, dtype)
    assert f'strategy = "{STRATEGY}"' in config, config
    assert launches == 1
    check(expected, got, dtype, x_dims[1] // groups * int(np.prod(window)))


def test_lanes_pick_their_groups_channels():
    # 4 in, 4 out a group, 8 lanes: lanes 0-3 read span 0-3, 4-7 span 4-7.
    assert span(4, 4, 8) == 8
    assert lane_sources(4, 4, 8)[1] == [1, 1, 1, 1, 5, 5, 5, 5]
    # 8 in, 16 out: a group spans two vectors, every lane reads channel c.
    assert span(8, 16, 8) == 8 and lane_sources(8, 16, 8)[3] == [3] * 8
    # Multiplier 2 (1 in, 2 out): 8 lanes read 4 input channels.
    assert span(1, 2, 8) == 4 and lane_sources(1, 2, 8)[0] == [0, 0, 1, 1, 2, 2, 3, 3]


def _problem(x, w, dtype="bf16"):
    y = [x[0], w[0]] + x[2:]
    return Problem(kernel="k", anchor="conv_fprop", arch="sm_90a",
                   anchor_inputs=(TensorSpec(tuple(x), dtype), TensorSpec(tuple(w), dtype)),
                   anchor_outputs=(TensorSpec(tuple(y), dtype),))


def test_heuristics_take_small_groups_and_leave_wide_ones_to_the_tensor_cores():
    # ResNeXt's 4 in, 4 out a group: 4 channels x 8 outputs a thread (a
    # row's f32 weights for 8 channels, 3 x 4 x 8, would overflow the 48
    # registers the heuristics allow them: test_resnext_layer_...).
    resnext = rank(_problem([32, 128, 56, 56], [128, 4, 3, 3]))[0]
    assert (resnext.strategy, resnext.vector, resnext.tile) == (STRATEGY, 4, (1, 8))
    assert "32 groups of 4" in resnext.reason
    # 2 in, 2 out a group: a row's weights fit at 8 channels, 4 outputs.
    pairs = rank(_problem([32, 128, 56, 56], [128, 2, 3, 3]))[0]
    assert (pairs.strategy, pairs.vector, pairs.tile) == (STRATEGY, 8, (1, 4))
    # 64 channels a group: tc-sm90's grouped implicit GEMM.
    assert rank(_problem([32, 256, 28, 28], [256, 64, 3, 3]))[0].strategy == "tc-sm90"
    # 3 output channels a group: one channel a thread.
    assert rank(_problem([2, 12, 9, 9], [12, 3, 3, 3]))[0].vector == 1


def test_resnext_layer_is_one_kernel_without_copies_or_spills():
    build = conv_graph("resnext", "bf16", [32, 128, 56, 56], 128, [3, 3], groups=32,
                       padding=[1, 1])
    package = compiler.compile_cuda(build(), "sm_90a", cache=False)
    m = package.manifest
    (kernel,) = m["kernels"]
    assert kernel["strategy"] == STRATEGY, kernel["reason"]
    assert m["workspace_bytes"] == 0
    text = package.ptx[package.ptx.index(f".entry {kernel['entry']}("):]
    text = text[:text.index("\n}\n")]
    # Staging, before the barrier: the block's 128 channels x 9 taps of a
    # group's 4 filters, 4 of them a load (4608 elements, 256 threads):
    # 4 loads a thread, all issued before the first store to shared
    # memory, and a fifth for half of them. Then 3 rows x (8 + 2) pixels of one
    # 8-byte span each (a group's 4 channels); 8 vectors of 4 channels
    # stored.
    ops = [line.split()[0] for line in text.splitlines() if line.startswith("\t")]
    barrier = ops.index("bar.sync")
    staging, tile = ops[:barrier], ops[barrier:]
    assert staging.count("ld.global.v4.b16") == 5
    loads = [i for i, op in enumerate(staging) if op == "ld.global.v4.b16"]
    assert loads[3] < staging.index("st.shared.b16") < loads[4]
    assert tile.count("ld.global.v4.b16") == 30
    assert tile.count("st.global.v2.b32") == 8
    if PTXAS is None:
        return
    resources, _ = ptxas.assemble_cubin(package.ptx, "sm_90a")
    for info in resources.values():
        assert info.spill_stores == 0
    # Two 256-thread blocks an SM (8 channels x 4 outputs took 170).
    (info,) = resources.values()
    assert blocks_per_sm(info.registers, kernel["block"][0]) >= 2, info


GROUPED_DGRADS = {
    # name: (dtype, dx dims, K, window, groups, attrs)
    "4_a_group_bf16": ("bf16", [2, 16, 6, 7], 16, [3, 3], 4, dict(padding=[1, 1])),
    "4_a_group_s2_f16": ("f16", [1, 32, 9, 9], 32, [3, 3], 8, dict(padding=[1, 1],
                                                                  stride=[2, 2])),
    "2_dx_4_dy_s3_dilated_f32": ("f32", [1, 8, 10, 11], 16, [3, 3], 4, dict(
        stride=[3, 3], dilation=[2, 1], pre_padding=[2, 0], post_padding=[1, 2])),
    "multiplier_2_bf16": ("bf16", [1, 8, 5, 6], 16, [3, 3], 8, dict(padding=[1, 1])),
    "8_dx_16_dy_convolution_f16": ("f16", [2, 16, 7, 5], 32, [3, 3], 2,
                                   dict(padding=[1, 1], conv_mode="convolution")),
    "3_a_group_bf16": ("bf16", [1, 12, 5, 6], 12, [5, 3], 4, dict(padding=[2, 1])),
}


def _grouped_dgrad(name, dtype, dx_dims, k, window, groups, attrs):
    from test_conv_tensor_cores import channels_last

    import dnnc

    def build():
        g = dnnc.Graph(name=name, io_data_type=dtype, compute_data_type="f32")
        w_dims = [k, dx_dims[1] // groups, *window]
        x = g.tensor(name="x", dim=dx_dims, stride=channels_last(dx_dims))
        w = g.tensor(name="w", dim=w_dims, stride=channels_last(w_dims))
        y_dims = [int(d) for d in g.conv_fprop(x, w, **attrs).dim]
        g = dnnc.Graph(name=name, io_data_type=dtype, compute_data_type="f32")
        dy = g.tensor(name="dy", dim=y_dims, stride=channels_last(y_dims))
        w = g.tensor(name="w", dim=w_dims, stride=channels_last(w_dims))
        dx = g.conv_dgrad(dy, w, dx_dims, **attrs)
        dx.set_output(True).set_stride(channels_last(dx_dims))
        return g
    return build


@pytest.mark.parametrize("name", sorted(GROUPED_DGRADS))
def test_grouped_dgrad_kernel_computes_the_gradient(name):
    dtype, dx_dims, k, window, groups, attrs = GROUPED_DGRADS[name]
    build = _grouped_dgrad(f"gd_{name}", dtype, dx_dims, k, window, groups, attrs)
    expected, got, config, launches = interpret(build, dtype)
    assert f'strategy = "{STRATEGY}"' in config, config
    assert launches == 1
    check(expected, got, dtype, k // groups * int(np.prod(window)))


GROUPED_WGRADS = {
    # name: (dtype, x dims, K, window, groups, attrs, config override)
    "4_a_group_bf16": ("bf16", [2, 16, 6, 7], 16, [3, 3], 4, dict(padding=[1, 1]), ""),
    # 8 a group, 3 x 3: a thread per filter row (3 taps x 8 channels x 8
    # lanes), split over 3 blocks of 4 lanes.
    "8_a_group_rows_split_f16": ("f16", [1, 32, 9, 9], 32, [3, 3], 4, dict(
        padding=[1, 1], stride=[2, 2]), "*=strategy:simt-depthwise,block:64,tile:1x3,split:3"),
    # 32 in, 16 out a group: rows and chunks of the 32 input channels.
    "32_in_16_out_chunks_bf16": ("bf16", [1, 64, 5, 6], 32, [3, 3], 2, dict(padding=[1, 1]),
                                 ""),
    "2_in_4_out_dilated_f32": ("f32", [2, 8, 10, 11], 16, [3, 3], 4, dict(
        stride=[3, 3], dilation=[2, 1], pre_padding=[2, 0], post_padding=[1, 2]), ""),
    "multiplier_2_convolution_bf16": ("bf16", [1, 8, 5, 6], 16, [3, 3], 8, dict(
        padding=[1, 1], conv_mode="convolution"), ""),
    "3_a_group_f16": ("f16", [1, 12, 5, 6], 12, [5, 3], 4, dict(padding=[2, 1]), ""),
}


def _grouped_wgrad(name, dtype, x_dims, k, window, groups, attrs):
    from test_conv_tensor_cores import channels_last

    import dnnc

    def build():
        g = dnnc.Graph(name=name, io_data_type=dtype, compute_data_type="f32")
        w_dims = [k, x_dims[1] // groups, *window]
        x = g.tensor(name="x", dim=x_dims, stride=channels_last(x_dims))
        w = g.tensor(name="w", dim=w_dims, stride=channels_last(w_dims))
        y_dims = [int(d) for d in g.conv_fprop(x, w, **attrs).dim]
        g = dnnc.Graph(name=name, io_data_type=dtype, compute_data_type="f32")
        x = g.tensor(name="x", dim=x_dims, stride=channels_last(x_dims))
        dy = g.tensor(name="dy", dim=y_dims, stride=channels_last(y_dims))
        dw = g.conv_wgrad(x, dy, w_dims, **attrs)
        dw.set_output(True).set_stride(channels_last(w_dims))
        return g
    return build


@pytest.mark.parametrize("name", sorted(GROUPED_WGRADS))
def test_grouped_wgrad_kernels_compute_the_gradient(name):
    dtype, x_dims, k, window, groups, attrs, config = GROUPED_WGRADS[name]
    build = _grouped_wgrad(f"gw_{name}", dtype, x_dims, k, window, groups, attrs)
    expected, got, found, launches = interpret(build, dtype, config)
    assert f'strategy = "{STRATEGY}"' in found, found
    assert launches == 2
    check(expected, got, dtype, int(np.prod(x_dims)) // x_dims[1])


# ----------------------------------------------------------------------------
# The GPU family's random draws, interpreted


def _family_graph(name, direction, dtype, conv):
    """One draw of conv_grouped_simt.py (no epilogue) as a graph of one
    kernel, every tensor channels-last."""
    import dnnc
    from test_conv_tensor_cores import channels_last

    geometry = dict(pre_padding=list(conv.pre), post_padding=list(conv.post),
                    stride=list(conv.stride), dilation=list(conv.dilation),
                    conv_mode=conv.mode)

    def build():
        g = dnnc.Graph(name=name, io_data_type=dtype, compute_data_type="f32")
        if direction == "fprop":
            x = g.tensor(name="x", dim=conv.x_dims, stride=channels_last(conv.x_dims))
            w = g.tensor(name="w", dim=conv.w_dims, stride=channels_last(conv.w_dims))
            out, dims = g.conv_fprop(x, w, **geometry), conv.y_dims
        elif direction == "dgrad":
            dy = g.tensor(name="dy", dim=conv.y_dims, stride=channels_last(conv.y_dims))
            w = g.tensor(name="w", dim=conv.w_dims, stride=channels_last(conv.w_dims))
            out, dims = g.conv_dgrad(dy, w, conv.x_dims, **geometry), conv.x_dims
        else:
            x = g.tensor(name="x", dim=conv.x_dims, stride=channels_last(conv.x_dims))
            dy = g.tensor(name="dy", dim=conv.y_dims, stride=channels_last(conv.y_dims))
            out, dims = g.conv_wgrad(x, dy, conv.w_dims, **geometry), conv.w_dims
        out.set_output(True).set_stride(channels_last(dims))
        return g
    return build


FAMILY_DRAWS = 8


@pytest.mark.parametrize("direction", ["fprop", "dgrad", "wgrad"])
@pytest.mark.parametrize("index", range(FAMILY_DRAWS))
def test_family_draws_interpreted(direction, index):
    """The first draws of each direction of the GPU family (depthwise,
    multipliers, small groups; strides, dilations, asymmetric padding, 3-D),
    interpreted, against the reference."""
    from test_cuda_compile import _load_gpu_cases

    conv = _load_gpu_cases().conv_grouped_simt.CONFIGS[direction][index]
    dtype = ("bf16", "f16", "f32")[index % 3]
    build = _family_graph(f"fam_{direction}_{index}", direction, dtype, conv)
    expected, got, config, _ = interpret(build, dtype)
    assert f'strategy = "{STRATEGY}"' in config, (conv, config)
    reduced = (conv.n * int(np.prod(conv.out)) if direction == "wgrad" else
               (conv.c if direction == "fprop" else conv.k) // conv.groups
               * int(np.prod(conv.filter)))
    check(expected, got, dtype, reduced)
