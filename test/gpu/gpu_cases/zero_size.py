"""Zero-size cases: dims of size 0 through pointwise, row, column, matmul,
concat and convolution kernels.
"""

import dnnc

from .case import BF16, F32, Case, outputs


def zero_size(dtype):
    """Zero-size dims. Outputs without elements need no launch; the others
    must still be written: sums over an empty axis are 0, a mean is NaN (as
    NumPy and PyTorch give), a matmul with K = 0 is 0, a concat with an empty
    operand copies the other. Inputs without elements may arrive at address 0."""
    def build():
        g = dnnc.Graph(io_data_type=dtype)
        x = g.tensor(name="x", dim=[0, 127])
        b = g.tensor(name="b", dim=[127])
        z = g.tensor(name="z", dim=[7, 0])
        a = g.tensor(name="a", dim=[7, 0])
        k0 = g.tensor(name="k0", dim=[0, 33])
        m0 = g.tensor(name="m0", dim=[0, 5])
        w = g.tensor(name="w", dim=[5, 33])
        v = g.tensor(name="v", dim=[3, 33])
        nhwc = g.tensor(name="nhwc", dim=[2, 0, 5, 7], stride=[0, 1, 0, 0])
        image = g.tensor(name="image", dim=[0, 3, 7, 5])
        filt = g.tensor(name="filt", dim=[4, 3, 3, 3])
        outputs(g.relu(g.add(x, b)).set_name("add_relu"),
                g.softmax(x, axis=1).set_name("softmax"),
                g.reduction(x, "sum", [0]).set_name("sum_rows"),
                g.reduction(z, "sum", [1]).set_name("sum_empty_axis"),
                g.reduction(z, "mean", [1]).set_name("mean_empty_axis"),
                g.reduction(z, "sum", [0, 1], keepdims=False).set_name("sum_all"),
                g.matmul(a, k0).set_name("matmul_k0"),
                g.matmul(m0, w).set_name("matmul_m0"),
                g.concat([k0, v], axis=0).set_name("concat_empty"),
                g.reduction(nhwc, "sum", [1]).set_name("sum_channels_last"),
                g.conv_fprop(image, filt, padding=[1, 1]).set_name("conv_n0"))
        return g
    return build


CASES = [
    *(Case(f"zero_size_{d.mlir}", zero_size(d)) for d in (F32, BF16)),
]
