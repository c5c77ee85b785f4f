"""Runtime scalars (``Graph.scalar``): f32 kernel arguments, one package run
with several values.

Each case's graph reads one or two runtime scalars in the strategies that
take them as a kernel parameter: a pointwise chain (simt-pointwise), a
matmul's epilogue (tc-sm90, tc-sm80 forced, simt-gemm), a convolution's
epilogue (tc-sm90's implicit GEMM, the scalar seen through a view), a
column reduction's prologue, softmax after a scaled pointwise kernel, and
the epsilon of layernorm and rmsnorm (row programs), also written with
dnnc.frontend (a pass-by-value epsilon and scale). ``runs`` gives the
scalars other values: test_packages.py calls the one package again with
each and checks the reference's outputs for it, which differ from the
first run's, so a kernel that ignored the argument would fail.
"""

import dnnc

from .case import BF16, F32, Case, contracted, outputs
from .strides import channels_last

# Other values of the scalars, one run each after the package's first.
SCALE_RUNS = ({"s": -0.75, "t": 3.0}, {"s": 2.5, "t": -1.0})
SCALES = {"s": [1.5], "t": [0.25]}     # the first run's
EPS_RUNS = ({"eps": 0.5}, {"eps": 1e-2})


def pointwise(dtype):
    def build():
        g = dnnc.Graph(io_data_type=dtype)
        x = g.tensor(name="x", dim=[1000, 127])
        s, t = g.scalar(name="s"), g.scalar(name="t")
        outputs(g.relu(g.add(g.mul(x, s), t)).set_name("y"),
                g.mul(g.sigmoid(x), t).set_name("z"))
        return g
    return build


def gemm_scaled(dtype, m, n, k):
    """y = (a @ b) * s + t: the scalars in the matmul's epilogue."""
    def build():
        g = dnnc.Graph(io_data_type=dtype)
        a = g.tensor(name="a", dim=[m, k])
        b = g.tensor(name="b", dim=[k, n])
        s, t = g.scalar(name="s"), g.scalar(name="t")
        y = g.add(g.mul(g.matmul(a, b), s), t).set_name("y")
        outputs(contracted(y, a, b, k, gain=2.5))
        return g
    return build


def conv_scaled():
    """relu(conv(x, w) * s + t), bf16 channels-last: tc-sm90's epilogue reads
    the scalars through a view of them."""
    def build():
        dims, wdims = [2, 64, 15, 17], [32, 64, 3, 3]
        g = dnnc.Graph(io_data_type=BF16)
        x = g.tensor(name="x", dim=dims, stride=channels_last(dims))
        w = g.tensor(name="w", dim=wdims, stride=channels_last(wdims))
        s, t = g.scalar(name="s"), g.scalar(name="t")
        c = g.conv_fprop(x, w, padding=[1, 1])
        y = g.relu(g.add(g.mul(c, s), t)).set_name("y")
        y.set_stride(channels_last([2, 32, 15, 17]))
        outputs(contracted(y, x, w, 64 * 9, gain=2.5))
        return g
    return build


def reductions_scaled():
    """softmax(x * s) (a scaled pointwise kernel, then a row program) and
    the column sums of x * s + t (a column program's prologue)."""
    def build():
        g = dnnc.Graph(io_data_type=F32)
        x = g.tensor(name="x", dim=[33, 1000])
        s, t = g.scalar(name="s"), g.scalar(name="t")
        outputs(g.softmax(g.mul(x, s)).set_name("p"),
                g.reduction(g.add(g.mul(x, s), t), "sum", [0]).set_name("colsum"))
        return g
    return build


def norms_epsilon(dtype):
    """layernorm and rmsnorm (training: the statistics too) with a runtime
    epsilon, on rows small enough that epsilon matters."""
    def build():
        g = dnnc.Graph(io_data_type=dtype)
        x = g.tensor(name="x", dim=[37, 768])
        scale = g.tensor(name="scale", dim=[1, 768], data_type=F32)
        bias = g.tensor(name="bias", dim=[1, 768], data_type=F32)
        eps = g.scalar(name="eps")
        y, mean, inv = g.layernorm(x, scale, bias, epsilon=eps, norm_forward_phase="training")
        r, inv_rms = g.rmsnorm(x, scale, None, epsilon=eps, norm_forward_phase="training")
        outputs(y, mean, inv, r, inv_rms)
        return g
    return build


def frontend_layernorm_scale():
    """cudnn-frontend's form: a layernorm of [rows, hidden, 1, 1] whose
    epsilon and an output scale are pass-by-value tensors, lowered by
    dnnc.frontend to runtime scalars (named after the frontend tensors)."""
    def build():
        import dnnc.frontend as cudnn

        fg = cudnn.pygraph(io_data_type=cudnn.data_type.BFLOAT16,
                           intermediate_data_type=cudnn.data_type.FLOAT,
                           compute_data_type=cudnn.data_type.FLOAT, target="cpu")
        X = fg.tensor(name="x", dim=[64, 512, 1, 1], stride=[512, 1, 512, 512])
        S = fg.tensor(name="scale", dim=[1, 512, 1, 1], stride=[512, 1, 512, 512],
                      data_type=cudnn.data_type.FLOAT)
        B = fg.tensor(name="bias", dim=[1, 512, 1, 1], stride=[512, 1, 512, 512],
                      data_type=cudnn.data_type.FLOAT)
        eps = fg.tensor(name="eps", dim=[1, 1, 1, 1], is_pass_by_value=True,
                        data_type=cudnn.data_type.FLOAT)
        s = fg.tensor(name="s", dim=[1, 1, 1, 1], is_pass_by_value=True,
                      data_type=cudnn.data_type.FLOAT)
        y = fg.layernorm(norm_forward_phase=cudnn.norm_forward_phase.INFERENCE, input=X,
                         scale=S, bias=B, epsilon=eps)[0]
        fg.scale(y, s, name="out").set_output(True).set_name("y")
        return fg.to_dnnc()
    return build


CASES = [
    *(Case(f"scalars_pointwise_{d.mlir}", pointwise(d), fixed=SCALES, runs=SCALE_RUNS)
      for d in (F32, BF16)),
    Case("scalars_gemm_bf16", gemm_scaled(BF16, 256, 384, 512), fixed=SCALES, runs=SCALE_RUNS),
    Case("scalars_gemm_bf16_sm80", gemm_scaled(BF16, 200, 136, 264), fixed=SCALES,
         runs=SCALE_RUNS, config="*=strategy:tc-sm80"),
    Case("scalars_gemm_f32", gemm_scaled(F32, 129, 67, 300), fixed=SCALES, runs=SCALE_RUNS),
    Case("scalars_conv_bf16", conv_scaled(), fixed=SCALES, runs=SCALE_RUNS),
    Case("scalars_reductions", reductions_scaled(), fixed=SCALES, runs=SCALE_RUNS),
    *(Case(f"scalars_norms_{d.mlir}", norms_epsilon(d), fixed={"eps": [1e-5]}, scale=0.05,
           runs=EPS_RUNS) for d in (F32, BF16)),
    Case("scalars_frontend_layernorm", frontend_layernorm_scale(), scale=0.05,
         fixed={"eps": [1e-5], "s": [0.5]}, runs=({"eps": 0.5, "s": -2.0},)),
]
