"""dnn-widen-groups (dnnc/passes/dnn_widen_groups.py): a convolution of 8,
16 or 32 channels a group becomes one of 64 channels a group with a
block-diagonal filter. Checked here with the NumPy reference before and
after the pass (the interpreter), on every direction, 2-D and 3-D, with
strides, dilation, asymmetric padding and convolution mode; which
convolutions it leaves alone; and sm_90a's plan: the widened convolution
on tc-sm90, one kernel building the filter (and, for a filter gradient,
one selecting and one summing the diagonal blocks), no copies."""

import numpy as np
import pytest

import dnnc
from dnnc import compiler, graph_mlir, interpreter, passes
from refutil import typed

BF16, F16, F32 = dnnc.data_type.BFLOAT16, dnnc.data_type.HALF, dnnc.data_type.FLOAT
PIPELINE = "builtin.module(dnn-widen-groups,dnn-canonicalize)"


def _conv_graph(direction, dtype, x_dims, k, window, groups, channels_last=True, **attrs):
    g = dnnc.Graph(name=f"widen_{direction}", io_data_type=dtype, compute_data_type=F32)
    c = x_dims[1]
    w_dims = [k, c // groups, *window]
    nd = len(window)

    def strides(dims):
        if not channels_last:
            return None
        order = [0] + list(range(2, 2 + nd)) + [1]
        out, step = [0] * len(dims), 1
        for d in reversed(order):
            out[d] = step
            step *= dims[d]
        return out

    geometry = dict(pre_padding=attrs.get("pre", [1] * nd), post_padding=attrs.get("post", [1] * nd),
                    stride=attrs.get("stride", [1] * nd), dilation=attrs.get("dilation", [1] * nd),
                    conv_mode=attrs.get("mode", "cross_correlation"))
    if direction == "fprop":
        x = g.tensor(name="x", dim=x_dims, stride=strides(x_dims))
        w = g.tensor(name="w", dim=w_dims, stride=strides(w_dims))
        y = g.conv_fprop(x, w, **geometry)
        if attrs.get("bias"):
            y = g.relu(g.add(y, g.tensor(name="b", dim=[1, k] + [1] * nd)))
        y.set_name("y").set_output(True)
        if channels_last:
            y.set_stride(strides([int(d) for d in y.dim]))
        return g
    probe = dnnc.Graph(io_data_type=dtype, compute_data_type=F32)
    y_dims = [int(d) for d in probe.conv_fprop(probe.tensor(dim=x_dims),
                                               probe.tensor(dim=w_dims), **geometry).dim]
    dy = g.tensor(name="dy", dim=y_dims, stride=strides(y_dims))
    if direction == "dgrad":
        w = g.tensor(name="w", dim=w_dims, stride=strides(w_dims))
        out, dims = g.conv_dgrad(dy, w, x_dims, **geometry), x_dims
    else:
        x = g.tensor(name="x", dim=x_dims, stride=strides(x_dims))
        out, dims = g.conv_wgrad(x, dy, w_dims, **geometry), w_dims
    out.set_name("out").set_output(True)
    if channels_last:
        out.set_stride(strides(dims))
    return g


def _run(graph, seed=0):
    module = graph_mlir.to_module(graph)
    rng = np.random.default_rng(seed)
    arrays = [typed(rng.standard_normal(t.dim), t.get_data_type()) for t in graph.inputs]
    before = interpreter.run_module(module, arrays)
    passes.run_pipeline(module, PIPELINE)
    after = interpreter.run_module(module, arrays)
    return str(module), before, after


CASES = {
    # name: (direction, dtype, x dims, K, window, groups, attrs)
    "fprop_8_a_group": ("fprop", BF16, [2, 64, 6, 7], 64, [3, 3], 8, {}),
    "fprop_16_bias_relu_strided": ("fprop", F16, [1, 128, 9, 8], 128, [3, 2], 8,
                                   dict(stride=[2, 1], dilation=[1, 2], pre=[2, 0],
                                        post=[0, 1], bias=True)),
    "fprop_32_convolution_mode": ("fprop", BF16, [1, 128, 5, 5], 128, [3, 3], 4,
                                  dict(mode="convolution")),
    "fprop_8_3d": ("fprop", BF16, [1, 64, 3, 4, 5], 64, [2, 3, 3], 8,
                   dict(pre=[0, 1, 1], post=[1, 1, 1])),
    "dgrad_8_a_group": ("dgrad", BF16, [2, 64, 6, 5], 64, [3, 3], 8, {}),
    "dgrad_16_stride_2": ("dgrad", F16, [1, 128, 7, 8], 128, [3, 3], 8, dict(stride=[2, 2])),
    "wgrad_8_a_group": ("wgrad", BF16, [2, 64, 6, 5], 64, [3, 3], 8, {}),
    "wgrad_32_dilated": ("wgrad", F16, [1, 128, 7, 6], 128, [3, 2], 4,
                         dict(dilation=[2, 1], pre=[1, 0], post=[2, 1])),
    "wgrad_16_3d": ("wgrad", BF16, [1, 128, 3, 4, 4], 128, [1, 3, 3], 8,
                    dict(pre=[0, 1, 1], post=[0, 1, 1])),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_widened_convolution_keeps_its_meaning(name):
    direction, dtype, x_dims, k, window, groups, attrs = CASES[name]
    text, before, after = _run(_conv_graph(direction, dtype, x_dims, k, window, groups,
                                           **attrs))
    # The small groups are gone: every convolution reads or writes a
    # filter of 64 channels a group.
    op = f"dnn.conv_{direction}"
    assert op in text
    filters = [line for line in text.splitlines() if op in line]
    assert all(f"x64x{window[0]}" in line for line in filters), filters
    for b, a in zip(before, after):
        # The zeros of the block-diagonal filter add nothing: the sums are
        # the small groups' own, in float64, up to the order of additions.
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("what, args", [
    ("4 channels a group", ("fprop", BF16, [1, 64, 5, 5], 64, [3, 3], 16, {})),
    ("64 channels a group", ("fprop", BF16, [1, 128, 5, 5], 128, [3, 3], 2, {})),
    ("f32", ("fprop", F32, [1, 64, 5, 5], 64, [3, 3], 8, {})),
    ("Kg twice Cg", ("fprop", BF16, [1, 64, 5, 5], 128, [3, 3], 8, {})),
    ("C no multiple of 64", ("dgrad", BF16, [1, 96, 5, 5], 96, [3, 3], 12, {})),
])
def test_other_convolutions_are_left_alone(what, args):
    direction, dtype, x_dims, k, window, groups, attrs = args
    graph = _conv_graph(direction, dtype, x_dims, k, window, groups, **attrs)
    module = graph_mlir.to_module(graph)
    text = str(module)
    passes.run_pipeline(module, PIPELINE)
    assert str(module) == text, what


def _plan(graph):
    package = compiler.compile_cuda(graph_mlir.to_module(graph), "sm_90a", cache=False)
    return [(k["strategy"], k["entry"]) for k in package.manifest["kernels"]]


def test_sm90a_plan_of_resnext_layers():
    fprop = _plan(_conv_graph("fprop", BF16, [2, 256, 8, 8], 256, [3, 3], 32, bias=True))
    assert [s for s, _ in fprop] == ["simt-pointwise", "tc-sm90"], fprop
    dgrad = _plan(_conv_graph("dgrad", BF16, [2, 256, 8, 8], 256, [3, 3], 32))
    assert [s for s, _ in dgrad] == ["simt-pointwise", "tc-sm90"], dgrad
    wgrad = _plan(_conv_graph("wgrad", BF16, [2, 256, 8, 8], 256, [3, 3], 32))
    assert [s for s, _ in wgrad][0] == "tc-sm90" and len(wgrad) == 3, wgrad
    # No copy kernel: the filter kernel writes [K, R, S, 64], which
    # dnn-conv-layouts hands to the convolution as its channels-last view.
    assert not any("tensor" in entry or "layout" in entry for _, entry in fprop + dgrad + wgrad)


@pytest.mark.parametrize("direction, window", [("fprop", [2, 1]), ("fprop", [1, 1]),
                                               ("wgrad", [1, 3]), ("wgrad", [1, 1])])
def test_sm90a_plan_with_unit_window_dims(direction, window):
    # A window dim of 1: the filter's transposes move it (a plain copy in
    # memory, or a reshape), and still no copy kernel is left.
    plan = _plan(_conv_graph(direction, BF16, [1, 128, 6, 6], 128, window, 8,
                             pre=[0, 0], post=[0, 0]))
    assert "tc-sm90" in [s for s, _ in plan], plan
    assert not any("tensor" in entry or "layout" in entry or s == "simt-generic"
                   for s, entry in plan), plan


def test_sm80_keeps_small_groups():
    plan = _plan_arch(_conv_graph("fprop", BF16, [2, 256, 8, 8], 256, [3, 3], 32), "sm_80")
    assert plan == ["simt-depthwise"], plan


def _plan_arch(graph, arch):
    package = compiler.compile_cuda(graph_mlir.to_module(graph), arch, cache=False)
    return [k["strategy"] for k in package.manifest["kernels"]]
