"""Normalization cases: batchnorm (training, inference, backward; also
channels-last), layernorm and rmsnorm, groupnorm and instancenorm, forward
and backward, with and without their parameters; the norms' backwards over
rows of 1 to 8192 and over many rows; groupnorm as row programs; norms over
several trailing dims (cudnn-frontend's [rows, hidden, 1, 1]) as row programs.
"""

import dnnc

from .case import BF16, F16, F32, Case, outputs
from .strides import channels_last


def batch_norm_nhwc(dtype):
    """Training forward, inference and backward on channels-last x, dy, y, dx."""
    def build():
        dims = [3, 64, 5, 13]
        nhwc = channels_last(dims)
        g = dnnc.Graph(io_data_type=dtype)
        x = g.tensor(name="x", dim=dims, stride=nhwc)
        scale = g.tensor(name="scale", dim=[1, 64, 1, 1], data_type=F32)
        bias = g.tensor(name="bias", dim=[1, 64, 1, 1], data_type=F32)
        rm = g.tensor(name="running_mean", dim=[1, 64, 1, 1], data_type=F32)
        rv = g.tensor(name="running_var", dim=[1, 64, 1, 1], data_type=F32)
        outs = g.batchnorm(x, scale, bias, rm, rv, momentum=0.1)
        outs[0].set_stride(nhwc)
        dy = g.tensor(name="dy", dim=dims, stride=nhwc)
        dx, dscale, dbias = g.batchnorm_backward(dy, x, scale, outs[1], outs[2])
        dx.set_stride(nhwc)
        infer = g.batchnorm_inference(x, rm, rv, scale, bias, epsilon=1e-3).set_name("infer")
        infer.set_stride(nhwc)
        outputs(*outs, dx, dscale, dbias, infer)
        return g
    return build


def layer_rms_norm(dtype):
    def build():
        g = dnnc.Graph(io_data_type=dtype)
        x = g.tensor(name="x", dim=[3, 7, 127])
        scale = g.tensor(name="scale", dim=[1, 7, 127])
        bias = g.tensor(name="bias", dim=[1, 7, 127])
        y, mean, inv = g.layernorm(x, scale, bias, axis=1, norm_forward_phase="training")
        dy = g.tensor(name="dy", dim=[3, 7, 127])
        gamma = g.tensor(name="gamma", dim=[1, 1, 127])
        ry, inv_rms = g.rmsnorm(x, gamma, axis=2, epsilon=1e-3, norm_forward_phase="training")
        outputs(y, mean, inv, *g.layernorm_backward(dy, x, scale, mean, inv, axis=1),
                ry, inv_rms, *g.rmsnorm_backward(dy, x, gamma, inv_rms, axis=2),
                g.layernorm(x, axis=2)[0])
        return g
    return build


def batch_norm(dtype):
    def build():
        g = dnnc.Graph(io_data_type=dtype)
        x = g.tensor(name="x", dim=[3, 7, 5, 13])
        scale = g.tensor(name="scale", dim=[1, 7, 1, 1])
        bias = g.tensor(name="bias", dim=[1, 7, 1, 1])
        rm = g.tensor(name="running_mean", dim=[1, 7, 1, 1], data_type=F32)
        rv = g.tensor(name="running_var", dim=[1, 7, 1, 1], data_type=F32)
        outs = g.batchnorm(x, scale, bias, rm, rv, momentum=0.2)
        dy = g.tensor(name="dy", dim=[3, 7, 5, 13])
        outputs(*outs, *g.batchnorm_backward(dy, x, scale, outs[1], outs[2]),
                g.batchnorm_inference(x, rm, rv, scale, bias, epsilon=1e-3))
        return g
    return build


def group_instance_norm(dtype):
    def build():
        g = dnnc.Graph(io_data_type=dtype)
        x = g.tensor(name="x", dim=[2, 6, 7, 5])
        scale = g.tensor(name="scale", dim=[1, 6, 1, 1])
        bias = g.tensor(name="bias", dim=[1, 6, 1, 1])
        dy = g.tensor(name="dy", dim=[2, 6, 7, 5])
        y, mean, inv = g.groupnorm(x, 3, scale, bias, norm_forward_phase="training")
        iy, imean, iinv = g.instancenorm(x, scale, bias, norm_forward_phase="training")
        outputs(y, mean, inv, *g.groupnorm_backward(dy, x, 3, scale, mean, inv),
                iy, imean, iinv, *g.instancenorm_backward(dy, x, scale, imean, iinv))
        return g
    return build


def norm_backward_rows(dtype, n):
    """layernorm / rmsnorm backward over rows of ``n``: with scale and bias
    (a row program for dx, a column program for dscale and dbias), without
    them (dx alone), and over a single row."""
    def build():
        g = dnnc.Graph(io_data_type=dtype)
        rows = {1: 5, 7: 9, 1000: 6}.get(n, 3)
        x = g.tensor(name="x", dim=[rows, n])
        dy = g.tensor(name="dy", dim=[rows, n])
        scale = g.tensor(name="scale", dim=[1, n])
        bias = g.tensor(name="bias", dim=[1, n])
        _, mean, inv = g.layernorm(x, scale, bias, axis=1, norm_forward_phase="training")
        _, inv_rms = g.rmsnorm(x, scale, axis=1, norm_forward_phase="training")
        one = g.tensor(name="one", dim=[1, n])
        one_dy = g.tensor(name="one_dy", dim=[1, n])
        _, one_mean, one_inv = g.layernorm(one, axis=1, norm_forward_phase="training")
        outputs(*g.layernorm_backward(dy, x, scale, mean, inv, axis=1, has_bias=True),
                *g.layernorm_backward(dy, x, None, mean, inv, axis=1, has_bias=False),
                *g.rmsnorm_backward(dy, x, scale, inv_rms, axis=1, has_bias=True),
                *g.rmsnorm_backward(dy, x, None, inv_rms, axis=1),
                *g.layernorm_backward(one_dy, one, scale, one_mean, one_inv, axis=1))
        return g
    return build


def norm_backward_many_rows(dtype):
    """layernorm and rmsnorm backward over 2000 rows of 264: dx rows with
    dscale and dbias column partials in one launch, from 250 blocks of 8
    rows, and the finish that sums the partials: more partials than its row
    lanes and not a multiple of them, 66 vectors of partials over blocks of
    32 (ragged)."""
    def build():
        g = dnnc.Graph(io_data_type=dtype)
        x = g.tensor(name="x", dim=[2000, 264])
        dy = g.tensor(name="dy", dim=[2000, 264])
        scale = g.tensor(name="scale", dim=[1, 264])
        bias = g.tensor(name="bias", dim=[1, 264])
        _, mean, inv = g.layernorm(x, scale, bias, axis=1, norm_forward_phase="training")
        _, inv_rms = g.rmsnorm(x, scale, axis=1, norm_forward_phase="training")
        outputs(*g.layernorm_backward(dy, x, scale, mean, inv, axis=1, has_bias=True),
                *g.rmsnorm_backward(dy, x, scale, inv_rms, axis=1))
        return g
    return build


def group_norm_variants(dtype):
    """groupnorm / instancenorm without parameters, with a bias alone, on
    rank 3 and 5, one group, and their backwards without scale."""
    def build():
        g = dnnc.Graph(io_data_type=dtype)
        x = g.tensor(name="x", dim=[3, 8, 16, 16])
        dy = g.tensor(name="dy", dim=[3, 8, 16, 16])
        bias = g.tensor(name="bias", dim=[1, 8, 1, 1])
        y, mean, inv = g.groupnorm(x, 4, norm_forward_phase="training")
        by, _, _ = g.groupnorm(x, 1, None, bias)
        iy, imean, iinv = g.instancenorm(x, None, bias, norm_forward_phase="training")
        x3 = g.tensor(name="x3", dim=[2, 6, 33])
        s3 = g.tensor(name="s3", dim=[1, 6, 1])
        x5 = g.tensor(name="x5", dim=[2, 4, 3, 5, 7])
        s5 = g.tensor(name="s5", dim=[1, 4, 1, 1, 1])
        y3, _, _ = g.groupnorm(x3, 2, s3, s3)
        y5, _, _ = g.groupnorm(x5, 2, s5, None)
        outputs(y, mean, inv, by, iy, imean, iinv, y3, y5,
                *g.groupnorm_backward(dy, x, 4, None, mean, inv, has_bias=False),
                *g.instancenorm_backward(dy, x, None, imean, iinv, has_bias=True))
        return g
    return build


def group_norm_rows(dtype):
    """groupnorm as one row program per (sample, group) whose scale and bias
    vary along the row by channel: rows held in registers (2048), looped
    (147456, over a block's sweep), ragged (300: 3 channels of 100), with an
    odd spatial size (vectors of one), and instancenorm's rows of 2500."""
    def build():
        g = dnnc.Graph(io_data_type=dtype)
        outs = []
        for name, shape, groups in (("a", [4, 64, 32, 32], 32), ("b", [2, 320, 24, 24], 32),
                                    ("c", [2, 16, 96, 96], 1), ("d", [2, 6, 10, 10], 2),
                                    ("e", [3, 12, 7, 9], 4)):
            x = g.tensor(name=f"x_{name}", dim=shape)
            channels = [1, shape[1], 1, 1]
            scale = g.tensor(name=f"scale_{name}", dim=channels)
            bias = g.tensor(name=f"bias_{name}", dim=channels)
            outs.extend(g.groupnorm(x, groups, scale, bias, norm_forward_phase="training"))
        x = g.tensor(name="x_i", dim=[2, 16, 50, 50])
        scale = g.tensor(name="scale_i", dim=[1, 16, 1, 1])
        outs.extend(g.instancenorm(x, scale, None, norm_forward_phase="training"))
        outputs(*outs)
        return g
    return build


def norms_over_trailing_dims(dtype):
    """Norms over several trailing dims as row programs: cudnn-frontend's
    layernorm and rmsnorm of x [rows, hidden, 1, 1] (after a residual add,
    training and inference, and the backward), a hidden size whose vectors
    are 2 elements (770), unit dims between the row's dims ([rows, 4, 96,
    1]), and a layernorm over (C, H, W) of an NCHW tensor whose W (6) holds
    no 16-byte vector."""
    def build():
        g = dnnc.Graph(io_data_type=dtype)
        outs = []
        for name, dims in (("a", [96, 1024, 1, 1]), ("b", [33, 770, 1, 1]),
                           ("c", [40, 4, 96, 1]), ("d", [5, 12, 7, 6])):
            x = g.tensor(name=f"x_{name}", dim=dims)
            params = [1] + dims[1:]
            scale = g.tensor(name=f"scale_{name}", dim=params, data_type=F32)
            bias = g.tensor(name=f"bias_{name}", dim=params, data_type=F32)
            if name == "a":
                x = g.add(x, g.tensor(name="residual_a", dim=dims))
            y, mean, inv = g.layernorm(x, scale, bias, axis=1, norm_forward_phase="training")
            dy = g.tensor(name=f"dy_{name}", dim=dims)
            outs += [y, mean, inv, *g.layernorm_backward(dy, x, scale, mean, inv, axis=1)]
            ry, inv_rms = g.rmsnorm(x, scale, axis=1, norm_forward_phase="training")
            outs += [ry, inv_rms, g.layernorm(x, scale, bias, axis=1)[0]]
        outputs(*outs)
        return g
    return build


CASES = [
    *(Case(f"batch_norm_nhwc_{d.mlir}", batch_norm_nhwc(d), positive=("running_var",))
      for d in (F32, BF16, F16)),
    *(Case(f"layer_rms_norm_{d.mlir}", layer_rms_norm(d)) for d in (F32, BF16)),
    *(Case(f"batch_norm_{d.mlir}", batch_norm(d), positive=("running_var",))
      for d in (F32, BF16, F16)),
    *(Case(f"group_instance_norm_{d.mlir}", group_instance_norm(d))
      for d in (F32, BF16, F16)),
    *(Case(f"norm_backward_rows_{n}_{d.mlir}", norm_backward_rows(d, n))
      for n in (1, 7, 1000, 8192) for d in (F32, BF16)),
    *(Case(f"norm_backward_many_rows_{d.mlir}", norm_backward_many_rows(d)) for d in (F32, BF16)),
    *(Case(f"group_norm_variants_{d.mlir}", group_norm_variants(d))
      for d in (F32, BF16, F16)),
    *(Case(f"group_norm_rows_{d.mlir}", group_norm_rows(d)) for d in (F32, BF16, F16)),
    *(Case(f"norms_over_trailing_dims_{d.mlir}", norms_over_trailing_dims(d))
      for d in (F32, BF16, F16)),
]


def layernorm_backward_params_cast(dtype):
    """A layernorm's backward as the torch backend lowers ATen's
    native_layer_norm_backward of bf16 activations: rows of 768 over [4, 33],
    the f32 dscale and dbias reshaped to [768] and cast to the parameters'
    type. dnn-canonicalize folds each cast into its column reduction, which
    stores the type itself: no cast kernels."""
    def build():
        g = dnnc.Graph(io_data_type=dtype, intermediate_data_type=F32, compute_data_type=F32)
        x = g.tensor(name="x", dim=[4, 33, 768])
        dy = g.tensor(name="dy", dim=[4, 33, 768])
        scale = g.tensor(name="scale", dim=[1, 1, 768])
        bias = g.tensor(name="bias", dim=[1, 1, 768])
        _, mean, inv = g.layernorm(x, scale, bias, axis=2, norm_forward_phase="training")
        dx, dscale, dbias = g.layernorm_backward(dy, x, scale, mean, inv, axis=2, has_bias=True)
        outputs(dx, *(g.cast(g.reshape(t, [768]), dtype) for t in (dscale, dbias)))
        return g
    return build


CASES += [Case(f"layernorm_backward_params_cast_{d.mlir}", layernorm_backward_params_cast(d))
          for d in (BF16, F16)]
