"""Filter gradients of few channels with the filter's columns folded into
them (dnnc/codegen/gpu/tensorcore/fold.py), without a GPU: what sm_90a's
plan runs and what it says, what stays on tc-sm80, and what ptxas makes of
the launches.

* ``FOLDED``: bf16 and f16 gradients of C = 1 to 7 under a filter of two
  or more columns and K a multiple of 8 (the stem, a 3x3, convolution
  mode, dilation, a 1 x S filter, 3-D): one kernel function of tc-sm90
  launches, x' written first (one thread a pixel), then the implicit GEMM
  of S x C columns with the outer taps its batch, whose B descriptor is
  x' in im2col mode with the folded geometry (R x 1 filter, the width's
  stride, dilation and padding gone).
* ``NOT_FOLDED``: K not a multiple of 8, f32 operands (tf32), a filter of
  one column, more folded channels than a tile's 64 columns: tc-sm80, as
  before, the reason saying why tc-sm90 does not apply.
* The GEMM and the fold launch through ptxas (skipped without it): no
  spills or local memory; x' written by 16-byte stores.
"""

import math

import pytest

from dnnc import compiler, graph_mlir
from dnnc.codegen.gpu import ptxas
from dnnc.codegen.gpu.tensorcore import fold
from test_conv_odd_channels import conv_graph
from test_tc_sass import gemm_kernels

# name: (dtype, x dims, K, window, attrs)
FOLDED = {
    "stem_bf16": ("bf16", [2, 3, 64, 64], 64, [7, 7], dict(stride=[2, 2], padding=[3, 3])),
    "c3_3x3_convolution_f16": ("f16", [2, 3, 20, 18], 16, [3, 3],
                               dict(padding=[1, 1], conv_mode="convolution")),
    "c5_dilated_bf16": ("bf16", [1, 5, 17, 19], 8, [2, 4],
                        dict(dilation=[2, 3], stride=[1, 2], pre_padding=[1, 0],
                             post_padding=[0, 5])),
    "c1_row_f16": ("f16", [3, 1, 9, 30], 24, [1, 5], dict(pre_padding=[0, 2],
                                                          post_padding=[0, 1])),
    "c7_3d_bf16": ("bf16", [1, 7, 6, 7, 8], 16, [2, 3, 3], dict(padding=[1, 1, 1])),
}
# name: (dtype, x dims, K, window, attrs, why tc-sm90 does not take it)
NOT_FOLDED = {
    "k7_bf16": ("bf16", [2, 3, 12, 12], 7, [3, 3], dict(padding=[1, 1]),
                "tc-sm90 does not apply (a filter gradient of K = 7: tc-sm90 reads dy "
                "K-contiguous"),
    "one_column_bf16": ("bf16", [2, 3, 12, 12], 16, [3, 1], dict(pre_padding=[1, 0],
                                                               post_padding=[1, 0]),
                        "C = 3 over 3 taps: a tile's 64 columns span filter taps"),
    "wide_fold_f16": ("f16", [1, 5, 30, 30], 8, [3, 13], dict(padding=[1, 6]),
                      "C = 5 over 39 taps: a tile's 64 columns span filter taps"),
}


def package(name, table):
    dtype, x_dims, k, window, attrs = table[name][:5]
    build = conv_graph(name, "wgrad", dtype, x_dims, k, window, **attrs)
    return compiler.compile_module(graph_mlir.to_module(build()), compiler.Options(
        target="cuda", arch="sm_90a", tuning_db="off"), basename=name)


@pytest.fixture(scope="module")
def packages():
    cache = {}

    def get(name, table=FOLDED):
        if name not in cache:
            cache[name] = package(name, table)
        return cache[name]
    return get


def _out(size, f, pre, post, stride, dilation):
    return (size + pre + post - dilation * (f - 1) - 1) // stride + 1


@pytest.mark.parametrize("name", sorted(FOLDED))
def test_folded_plan(packages, name):
    dtype, x_dims, k, window, attrs = FOLDED[name]
    c, nd = x_dims[1], len(window)
    assert fold.folds("wgrad", c, window, 2)
    kernels = packages(name).kernels
    entries = {kk["entry"].rsplit("_kernel", 1)[0] for kk in kernels}
    assert entries == {f"{name}_k0_conv_wgrad"}, entries
    assert {kk["strategy"] for kk in kernels} == {"tc-sm90"}, \
        [(kk["entry"], kk["strategy"], kk.get("reason")) for kk in kernels]
    (gemm,) = gemm_kernels(packages(name))
    s = window[-1]
    outer = math.prod(window[:-1])
    reason = gemm["reason"]
    assert (f"{outer} filter taps x {s * c} channels, the filter's columns folded into its "
            "channels first (tensorcore/fold.py)") in reason, reason
    assert f"the filter's {s} columns folded into its C = {c} channels" in reason, reason
    if outer > 1:
        assert f"the {outer} outer taps the GEMM's batch" in reason, reason
        assert "(the taps the GEMM's batch: 64 columns a tap" in reason, reason
    # x' before the GEMM: one thread a pixel of x' ([N, *outer dims, Q]).
    first = kernels[0]
    assert first["entry"] == f"{name}_k0_conv_wgrad_kernel", first["entry"]
    pre = attrs.get("pre_padding", attrs.get("padding", [0] * nd))
    post = attrs.get("post_padding", attrs.get("padding", [0] * nd))
    stride = attrs.get("stride", [1] * nd)
    dilation = attrs.get("dilation", [1] * nd)
    q = _out(x_dims[-1], s, pre[-1], post[-1], stride[-1], dilation[-1])
    pixels = x_dims[0] * math.prod(x_dims[2:-1]) * q
    assert first["grid"][0] * first["block"][0] >= pixels > \
        (first["grid"][0] - 1) * first["block"][0], (first["grid"], first["block"], pixels)
    # B: x' by TMA in im2col mode, S x C channels a pixel padded to 16
    # bytes, the folded filter's geometry (a column, the width unstrided).
    a, b = gemm["args"][:2]
    assert "im2col" not in a and a["shape"][-1] == k, a
    assert b["kind"] == "tma" and "im2col" in b, b
    pitch = -(-s * c // 8) * 8
    assert b["shape"] == [x_dims[0], *x_dims[2:-1], q, s * c], b
    assert b["strides"][-2:] == [pitch, 1], b
    assert b["im2col"]["element_strides"][1:-1] == [*stride[:-1], 1] or \
        b["im2col"]["element_strides"][-2:0:-1] == [*stride[:-1], 1], b
    extent = [(f - 1) * d for f, d in zip(window, dilation)]
    assert b["im2col"]["lower"] == [-p for p in pre[:-1]] + [0], b
    assert b["im2col"]["upper"] == [p - e for p, e in zip(post[:-1], extent[:-1])] + [0], b


@pytest.mark.parametrize("name", sorted(NOT_FOLDED))
def test_not_folded_stays_on_tc_sm80(packages, name):
    why = NOT_FOLDED[name][5]
    kernels = packages(name, NOT_FOLDED).kernels
    assert {kk["strategy"] for kk in kernels} == {"tc-sm80"}, \
        [(kk["entry"], kk["strategy"], kk.get("reason")) for kk in kernels]
    reason = kernels[0]["reason"]
    assert why in reason, reason
    # tc-sm80's kernel reads x where it lies, all taps by C in its columns.
    dtype, x_dims, k, window = NOT_FOLDED[name][:4]
    assert (f"implicit GEMM (wgrad): x gathered by cp.async, {math.prod(window)} filter taps "
            f"x {x_dims[1]} channels") in reason, reason


def test_tf32_is_not_folded():
    """f32 operands of C = 3 (tf32): tc-sm90's tf32 filter gradient takes C
    a multiple of 64, and the fold takes 16-bit types only."""
    assert not fold.folds("wgrad", 3, [7, 7], 4)
    assert fold.folds("fprop", 3, [7, 7], 4, 32)


@pytest.mark.skipif(ptxas.find() is None, reason="no ptxas")
@pytest.mark.parametrize("name", ["stem_bf16", "c7_3d_bf16"])
def test_folded_launches_assemble(packages, name):
    pkg = packages(name)
    resources = ptxas.assemble(pkg.ptx, "sm_90a")
    for entry, r in resources.items():
        assert r.spill_stores == r.spill_loads == r.stack_bytes == 0, (entry, r)
    ptx = pkg.ptx
    start = ptx.index(f".entry {name}_k0_conv_wgrad_kernel(")
    end = ptx.find(".entry", start + 1)
    body = ptx[start:end if end > 0 else len(ptx)]
    dtype, x_dims, k, window, _ = FOLDED[name]
    pitch = -(-window[-1] * x_dims[1] // 8) * 8
    assert body.count("st.global.v4") == pitch // 8, body.count("st.global.v4")
    assert body.count("st.global") == pitch // 8
