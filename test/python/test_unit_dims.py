"""Kernels over cudnn-frontend's tensor shapes, whose trailing dims are one
element (x as [rows, hidden, 1, 1]): vectors run along hidden, as over
[rows, hidden], and the code is the same. No GPU needed; the numerics are
the pointwise_unit_dims and norms_over_trailing_dims GPU cases."""

import re

import dnnc
import dnnc.graph_mlir
from dnnc import compiler
from dnnc.dialect.types import data_type as dt


def compile_cuda(g):
    module = dnnc.graph_mlir.to_module(g)
    return compiler.compile_module(module, compiler.Options(target="cuda", arch="sm_90a"),
                                   basename=g.name)


def chain(rows, hidden, trailing):
    g = dnnc.Graph(name="chain", io_data_type=dt.BFLOAT16)
    unit = [1] * trailing
    x = g.tensor(name="x", dim=[rows, hidden] + unit)
    r = g.tensor(name="r", dim=[rows, 1] + unit)
    p = g.tensor(name="p", dim=[1, hidden] + unit)
    g.gelu(g.add(g.mul(x, r), p)).set_output(True)
    return g


def test_pointwise_chain_over_trailing_unit_dims_is_vectorized_as_without():
    four, two = compile_cuda(chain(64, 1024, 2)), compile_cuda(chain(64, 1024, 0))
    (kernel,) = four.kernels
    assert kernel["strategy"] == "simt-pointwise"
    assert kernel["config"]["vector"] == 8  # 16 bytes of bf16
    assert len(re.findall(r"ld\.global\.v4", four.ptx)) == len(re.findall(r"ld\.global\.v4",
                                                                           two.ptx)) > 0
    assert four.ptx == two.ptx


def test_pointwise_vectors_shrink_to_divide_hidden():
    (kernel,) = compile_cuda(chain(5, 770, 2)).kernels
    assert kernel["strategy"] == "simt-pointwise"
    assert kernel["config"]["vector"] == 2
