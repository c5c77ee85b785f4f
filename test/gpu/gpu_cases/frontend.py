"""dnnc.frontend cases: graphs written as cudnn-frontend's samples write them
(``import dnnc.frontend as cudnn``), lowered to the dnnc.Graph they compile
to (``pygraph.to_dnnc``), pass-by-value scalars given their values there.
They check what the frontend adds on the GPU: the layout it gives outputs
(channels-last in, channels-last out), norms over [rows, hidden, 1, 1],
cuDNN's relu clips and batchnorm inference composed from pointwise ops, a
boolean mask as an arithmetic operand, the sdpa mask and statistics options.
"""

import dnnc.frontend as cudnn

from .case import BF16, F16, F32, Case, contracted
from .strides import channels_last


def _graph(dtype):
    return cudnn.pygraph(io_data_type=dtype, intermediate_data_type=cudnn.data_type.FLOAT,
                         compute_data_type=cudnn.data_type.FLOAT, name="frontend")


def _out(t, name):
    return t.set_output(True).set_name(name)


def layernorm_rows(dtype, rows, hidden):
    """cuDNN's layernorm form: x [rows, hidden, 1, 1] channels-last, statistics per row."""
    def build():
        g = _graph(dtype)
        dims = [rows, hidden, 1, 1]
        x = g.tensor(name="x", dim=dims, stride=channels_last(dims))
        scale = g.tensor(name="scale", dim=[1, hidden, 1, 1], stride=[hidden, 1, hidden, hidden])
        bias = g.tensor(name="bias", dim=[1, hidden, 1, 1], stride=[hidden, 1, hidden, hidden])
        eps = g.tensor(name="epsilon", dim=[1, 1, 1, 1], is_pass_by_value=True,
                       data_type=cudnn.data_type.FLOAT)
        y, mean, inv = g.layernorm(norm_forward_phase=cudnn.norm_forward_phase.TRAINING,
                                   input=x, scale=scale, bias=bias, epsilon=eps)
        _out(y, "y")
        _out(mean, "mean").set_data_type(cudnn.data_type.FLOAT)
        _out(inv, "inv_var").set_data_type(cudnn.data_type.FLOAT)
        return g.to_dnnc({eps.get_uid(): 1e-5})
    return build


def layernorm_rows_backward(dtype, rows, hidden):
    """cuDNN's layernorm backward over [rows, hidden, 1, 1]; mean and
    inv_variance drawn (inv_variance positive)."""
    def build():
        g = _graph(dtype)
        dims = [rows, hidden, 1, 1]
        dy = g.tensor(name="dy", dim=dims)
        x = g.tensor(name="x", dim=dims)
        scale = g.tensor(name="scale", dim=[1, hidden, 1, 1])
        mean = g.tensor(name="mean", dim=[rows, 1, 1, 1], data_type=cudnn.data_type.FLOAT)
        inv = g.tensor(name="inv_var", dim=[rows, 1, 1, 1], data_type=cudnn.data_type.FLOAT)
        dx, dscale, dbias = g.layernorm_backward(grad=dy, input=x, scale=scale, mean=mean,
                                                 inv_variance=inv)
        _out(dx, "dx")
        _out(dscale, "dscale").set_data_type(cudnn.data_type.FLOAT)
        _out(dbias, "dbias").set_data_type(cudnn.data_type.FLOAT)
        return g.to_dnnc()
    return build


def rmsnorm_rows(dtype, rows, hidden):
    def build():
        g = _graph(dtype)
        x = g.tensor(name="x", dim=[rows, hidden, 1, 1])
        w = g.tensor(name="w", dim=[1, hidden, 1, 1])
        y, inv = g.rmsnorm(norm_forward_phase=cudnn.norm_forward_phase.TRAINING, input=x,
                           scale=w, epsilon=1e-5)
        _out(y, "y")
        _out(inv, "inv_var").set_data_type(cudnn.data_type.FLOAT)
        return g.to_dnnc()
    return build


def conv_bias_relu_clip(dtype):
    """conv_fprop + bias + relu(lower_clip, upper_clip), channels-last."""
    def build():
        g = _graph(dtype)
        xd, wd = [4, 32, 17, 17], [64, 32, 3, 3]
        x = g.tensor(name="x", dim=xd, stride=channels_last(xd))
        w = g.tensor(name="w", dim=wd, stride=channels_last(wd))
        b = g.tensor(name="b", dim=[1, 64, 1, 1])
        conv = g.conv_fprop(image=x, weight=w, padding=[1, 1], stride=[1, 1], dilation=[1, 1])
        y = _out(g.relu(input=g.bias(input=conv, bias=b), lower_clip=-0.5, upper_clip=2.0), "y")
        d = g.to_dnnc()
        contracted(d.outputs[0], d.inputs[0], d.inputs[1], 32 * 9)
        assert y.get_stride() == channels_last([4, 64, 17, 17])
        return d
    return build


def matmul_bias_relu(dtype):
    def build():
        g = _graph(dtype)
        a = g.tensor(name="a", dim=[2, 127, 96])
        b = g.tensor(name="b", dim=[2, 96, 130])
        bias = g.tensor(name="bias", dim=[1, 1, 130])
        _out(g.relu(input=g.bias(input=g.matmul(A=a, B=b), bias=bias)), "c")
        d = g.to_dnnc()
        contracted(d.outputs[0], d.inputs[0], d.inputs[1], 96)
        return d
    return build


def batchnorm_inference_and_mask(dtype):
    """cuDNN's batchnorm inference (inverse std dev), then dy * (x > 0)."""
    def build():
        g = _graph(dtype)
        dims = [3, 16, 7, 9]
        x = g.tensor(name="x", dim=dims, stride=channels_last(dims))
        dy = g.tensor(name="dy", dim=dims, stride=channels_last(dims))
        p = {n: g.tensor(name=n, dim=[1, 16, 1, 1], data_type=cudnn.data_type.FLOAT)
             for n in ("mean", "inv_variance", "scale", "bias")}
        _out(g.batchnorm_inference(input=x, **p), "y")
        mask = g.cmp_gt(input=x, comparison=g.tensor_scalar(0.0))
        _out(g.mul(a=dy, b=mask), "dx")
        return g.to_dnnc()
    return build


def sdpa_causal_stats(dtype, bottom_right):
    def build():
        g = _graph(dtype)
        q = g.tensor(name="q", dim=[1, 2, 100, 64])
        k = g.tensor(name="k", dim=[1, 2, 130, 64])
        v = g.tensor(name="v", dim=[1, 2, 130, 64])
        o, stats = g.sdpa(q=q, k=k, v=v, attn_scale=0.125, generate_stats=True,
                          diagonal_alignment=cudnn.diagonal_alignment.BOTTOM_RIGHT
                          if bottom_right else cudnn.diagonal_alignment.TOP_LEFT,
                          diagonal_band_right_bound=0)
        _out(o, "o")
        _out(stats, "stats").set_data_type(cudnn.data_type.FLOAT)
        return g.to_dnnc()
    return build


CASES = [
    *(Case(f"frontend_layernorm_rows_{t}_{h}", layernorm_rows(dt, 256, h))
      for t, dt in (("f32", F32), ("bf16", BF16)) for h in (768, 1000)),
    *(Case(f"frontend_layernorm_rows_backward_{t}", layernorm_rows_backward(dt, 256, 768),
           positive=("inv_var",)) for t, dt in (("f32", F32), ("bf16", BF16))),
    *(Case(f"frontend_rmsnorm_rows_{t}", rmsnorm_rows(dt, 256, 1024))
      for t, dt in (("f16", F16), ("bf16", BF16))),
    *(Case(f"frontend_conv_bias_relu_clip_{t}", conv_bias_relu_clip(dt))
      for t, dt in (("f32", F32), ("f16", F16))),
    *(Case(f"frontend_matmul_bias_relu_{t}", matmul_bias_relu(dt))
      for t, dt in (("f32", F32), ("bf16", BF16))),
    Case("frontend_batchnorm_inference_mask_f16", batchnorm_inference_and_mask(F16),
         positive=("inv_variance",)),
    *(Case(f"frontend_sdpa_{name}_f16", sdpa_causal_stats(F16, br), scale=0.5)
      for name, br in (("causal", False), ("causal_bottom_right", True))),
]
