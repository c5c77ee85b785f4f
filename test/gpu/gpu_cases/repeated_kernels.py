"""Graphs that repeat kernels, which dnn-dedup-kernels compiles once: the
package launches one PTX entry several times, with the launches' own
arguments (and, for a tensor-core convolution or matmul, its dynamic shared
memory beyond 48 KiB, opted in once for the entry).

* ``repeated_conv_bf16``: ResNet's bottleneck 3 x 3 convolution (64
  channels, 14 x 14, channels-last) with a relu, on three independent inputs
  and once more on the first one's output (an intermediate the graph
  allocates channels-last: the same kernel), beside a 1 x 1 convolution of
  another shape (a kernel of its own).
* ``repeated_matmul_bf16``: a 256 x 128 x 128 matmul with a bias and a relu
  three times, and a 256 x 128 x 64 one.
"""

import dnnc

from .case import BF16, Case, contracted, outputs
from .strides import channels_last

CONV_X = [2, 64, 14, 14]
CONV_W = [64, 64, 3, 3]


def _conv_graph():
    g = dnnc.Graph(io_data_type=BF16)
    ys = []
    for i in range(3):
        x = g.tensor(name=f"x{i}", dim=CONV_X, stride=channels_last(CONV_X))
        w = g.tensor(name=f"w{i}", dim=CONV_W, stride=channels_last(CONV_W))
        y = g.relu(g.conv_fprop(x, w, padding=[1, 1])).set_name(f"y{i}")
        y.set_stride(channels_last(CONV_X))
        outputs(contracted(y, x, w, 64 * 9))
        ys.append(y)
    w3 = g.tensor(name="w3", dim=CONV_W, stride=channels_last(CONV_W))
    z = g.relu(g.conv_fprop(ys[0], w3, padding=[1, 1])).set_name("z")
    z.set_stride(channels_last(CONV_X))
    outputs(z)
    w4 = g.tensor(name="w4", dim=[128, 64, 1, 1], stride=channels_last([128, 64, 1, 1]))
    x4 = g.tensor(name="x4", dim=CONV_X, stride=channels_last(CONV_X))
    v = g.conv_fprop(x4, w4).set_name("v")
    v.set_stride(channels_last([2, 128, 14, 14]))
    outputs(contracted(v, x4, w4, 64))
    return g


def _matmul_graph():
    g = dnnc.Graph(io_data_type=BF16, compute_data_type="f32")
    for i, n in enumerate((128, 128, 128, 64)):
        a = g.tensor(name=f"a{i}", dim=[1, 256, 128])
        b = g.tensor(name=f"b{i}", dim=[1, 128, n])
        bias = g.tensor(name=f"bias{i}", dim=[1, 1, n])
        y = g.relu(g.add(g.matmul(a, b), bias)).set_name(f"y{i}")
        outputs(contracted(y, a, b, 128))
    return g


CASES = [
    Case("repeated_conv_bf16", _conv_graph, seed=61,
         notes="identical tc-sm90 convolutions share one PTX entry"),
    Case("repeated_matmul_bf16", _matmul_graph, seed=62,
         notes="identical tc-sm90 matmuls share one PTX entry"),
]
