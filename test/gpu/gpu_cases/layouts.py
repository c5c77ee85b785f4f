"""The layout rule on the GPU (dnnc_runtime/layout.py; docs/python-api.md,
"Inputs, outputs and layouts"): inputs that broadcast with a stride of 0,
and outputs laid out with gaps (padded rows, column-major, channels-last),
read and written by each kernel family that touches a graph's tensors.

A broadcast input is drawn with one value along each stride-0 dim
(inputs.make_inputs), as the runtime demands of a NumPy array for it; the
reference reads the whole logical array, so a kernel that read a stride-0
dim as if it were dense would read past the one stored element and differ.
"""

import dnnc

from .case import BF16, F32, Case, contracted, outputs
from .strides import channels_last, padded_rows


def broadcast_inputs(dtype):
    """Inputs with stride-0 dims: a per-channel bias read as the whole
    image, one row read for every row, one value per row read for every
    column, one matrix for every batch entry of a matmul."""
    def build():
        g = dnnc.Graph(io_data_type=dtype)
        x = g.tensor(name="x", dim=[4, 16, 7, 9])
        bias = g.tensor(name="bias", dim=[4, 16, 7, 9], stride=[0, 1, 0, 0])
        row = g.tensor(name="row", dim=[6, 130], stride=[0, 1])
        per_row = g.tensor(name="per_row", dim=[6, 130], stride=[1, 0])
        a = g.tensor(name="a", dim=[3, 33, 40], stride=[0, 40, 1])
        b = g.tensor(name="b", dim=[3, 40, 24])
        outputs(g.relu(g.add(x, bias)).set_name("bias_relu"),
                g.softmax(g.mul(row, per_row), axis=1).set_name("softmax_rows"),
                g.reduction(row, "sum", [0]).set_name("sum_over_broadcast"),
                g.reduction(per_row, "max", [1]).set_name("max_along_broadcast"),
                contracted(g.matmul(a, b).set_name("matmul_shared_a"), a, b, 40))
        return g
    return build


def strided_outputs(dtype):
    """Outputs whose strides leave gaps or run in another order: the
    elements between them must stay as they were (the runner poisons the
    whole buffer, and compares only the logical elements)."""
    def build():
        g = dnnc.Graph(io_data_type=dtype)
        x = g.tensor(name="x", dim=[5, 7, 130])
        image = g.tensor(name="image", dim=[2, 12, 5, 6])
        a = g.tensor(name="a", dim=[3, 33, 40])
        b = g.tensor(name="b", dim=[3, 40, 24])
        relu = g.relu(x).set_name("relu_padded")
        relu.set_output(True).set_stride(padded_rows([5, 7, 130], 6))
        exp = g.exp(x).set_name("exp_column_major")
        exp.set_output(True).set_stride([1, 5, 35])
        soft = g.softmax(x, axis=2).set_name("softmax_padded")
        soft.set_output(True).set_stride(padded_rows([5, 7, 130], 2))
        total = g.reduction(x, "sum", [2]).set_name("sum_padded")
        total.set_output(True).set_stride([16, 2, 1])
        nhwc = g.sigmoid(image).set_name("sigmoid_channels_last")
        nhwc.set_output(True).set_stride(channels_last([2, 12, 5, 6]))
        mm = contracted(g.matmul(a, b).set_name("matmul_column_major"), a, b, 40)
        mm.set_output(True).set_stride([33 * 24, 1, 33])
        return g
    return build


CASES = [
    *(Case(f"layouts_broadcast_{d.mlir}", broadcast_inputs(d)) for d in (F32, BF16)),
    *(Case(f"layouts_outputs_{d.mlir}", strided_outputs(d)) for d in (F32, BF16)),
]
