"""Norms in the layouts of cudnn-frontend's tests and samples: instance and
group norms of channels-last (NHWC) x, forward in training and inference
and backward, read in place as (N, H*W, C) by column programs per sample
(dnnc/decompose/norm_channels_last.py), with [1, C, 1, 1] parameters in
NCHW or NHWC strides, without parameters, with y stored NCHW; and
layernorm / rmsnorm over [rows, hidden, 1, 1] in NHWC strides. f32, bf16
and f16; channel counts that give 16-byte vectors and ones that do not;
one sample; the benchmark problems at their size.
"""

import dnnc

from .case import BF16, F16, F32, Case, outputs
from .strides import channels_last


def _param(g, name, c, layout, dtype, rank=4):
    dims = [1, c] + [1] * (rank - 2)
    stride = channels_last(dims) if layout == "nhwc" else None
    return g.tensor(name=name, dim=dims, stride=stride, data_type=dtype)


def group(dtype, dims, groups=None, params="nhwc", affine=True, phase="training",
          y_layout="nhwc", param_type=F32):
    """groupnorm (``groups``) or instancenorm (None) of an NHWC x; in
    training, the backward from the forward's statistics too."""
    def build():
        g = dnnc.Graph(io_data_type=dtype, compute_data_type=F32)
        nhwc = channels_last(dims)
        x = g.tensor(name="x", dim=dims, stride=nhwc)
        c = dims[1]
        scale = _param(g, "scale", c, params, param_type, len(dims)) if affine else None
        bias = _param(g, "bias", c, params, param_type, len(dims)) if affine else None
        if groups is None:
            y, mean, inv = g.instancenorm(x, scale, bias, epsilon=1e-5,
                                          norm_forward_phase=phase)
        else:
            y, mean, inv = g.groupnorm(x, groups, scale, bias, epsilon=1e-5,
                                       norm_forward_phase=phase)
        if y_layout == "nhwc":
            y.set_stride(nhwc)
        outputs(y)
        if phase == "training":
            mean.set_data_type(F32)
            inv.set_data_type(F32)
            dy = g.tensor(name="dy", dim=dims, stride=nhwc)
            if groups is None:
                dx, dscale, dbias = g.instancenorm_backward(dy, x, scale, mean, inv)
            else:
                dx, dscale, dbias = g.groupnorm_backward(dy, x, groups, scale, mean, inv)
            dx.set_stride(nhwc)
            outputs(mean, inv, dx, dscale, dbias)
        return g
    return build


def rows(dtype, n, hidden, op="layernorm"):
    """layernorm or rmsnorm over x [n, hidden, 1, 1] in NHWC strides
    (cudnn-frontend's samples), training, and its backward."""
    def build():
        g = dnnc.Graph(io_data_type=dtype, compute_data_type=F32)
        dims = [n, hidden, 1, 1]
        nhwc = channels_last(dims)
        x = g.tensor(name="x", dim=dims, stride=nhwc)
        scale = _param(g, "scale", hidden, "nhwc", F32)
        bias = _param(g, "bias", hidden, "nhwc", F32)
        dy = g.tensor(name="dy", dim=dims, stride=nhwc)
        if op == "layernorm":
            y, mean, inv = g.layernorm(x, scale, bias, norm_forward_phase="training")
            grads = g.layernorm_backward(dy, x, scale, mean, inv)
            stats = (mean, inv)
        else:
            y, inv = g.rmsnorm(x, scale, None, norm_forward_phase="training")
            grads = g.rmsnorm_backward(dy, x, scale, inv, has_bias=False)
            stats = (inv,)
        y.set_stride(nhwc)
        grads[0].set_stride(nhwc)
        outputs(y, *stats, *grads)
        return g
    return build


CASES = [
    # Instance norms: each dtype, C a multiple of 8 and not, one sample.
    *(Case(f"norm_channels_last_instance_{d.mlir}", group(d, [3, 32, 7, 9]))
      for d in (F32, BF16, F16)),
    Case("norm_channels_last_instance_odd_c_bf16", group(BF16, [2, 13, 5, 11])),
    Case("norm_channels_last_instance_one_sample_f32", group(F32, [1, 24, 9, 10])),
    Case("norm_channels_last_instance_nchw_params_bf16", group(BF16, [2, 40, 6, 6],
                                                               params="nchw")),
    Case("norm_channels_last_instance_plain_f16", group(F16, [2, 16, 8, 8], affine=False)),
    Case("norm_channels_last_instance_inference_bf16",
         group(BF16, [4, 64, 12, 12], phase="inference")),
    Case("norm_channels_last_instance_nchw_y_f32",
         group(F32, [2, 16, 5, 7], phase="inference", y_layout="nchw")),
    Case("norm_channels_last_instance_3d_bf16", group(BF16, [2, 16, 3, 4, 5])),
    # Group norms: groups of 1, 2, 4 and 8 channels, one group, odd sizes.
    *(Case(f"norm_channels_last_group{gr}_{d.mlir}", group(d, [2, 32, 6, 7], gr))
      for d in (F32, BF16) for gr in (4, 16)),
    Case("norm_channels_last_group1_bf16", group(BF16, [3, 24, 5, 5], 1)),
    Case("norm_channels_last_group_odd_f16", group(F16, [2, 30, 7, 3], 3)),
    Case("norm_channels_last_group_inference_bf16",
         group(BF16, [2, 64, 8, 8], 32, phase="inference")),
    Case("norm_channels_last_group_plain_f32", group(F32, [2, 12, 4, 9], 3, affine=False)),
    # The benchmark problems (bench/cases.py's norm-nhwc cases).
    Case("norm_channels_last_instance_bench_bf16", group(BF16, [16, 128, 64, 64],
                                                         param_type=BF16)),
    Case("norm_channels_last_group_bench_bf16", group(BF16, [8, 320, 64, 64], 32,
                                                      param_type=BF16)),
    # cudnn-frontend's layernorm and rmsnorm shape in NHWC strides.
    Case("norm_channels_last_layernorm_rows_bf16", rows(BF16, 64, 768)),
    Case("norm_channels_last_rmsnorm_rows_bf16", rows(BF16, 48, 1000, "rmsnorm")),
]
