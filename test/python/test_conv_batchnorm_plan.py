"""A training step's convolution, batchnorm and relu (test/gpu/gpu_cases/
conv_batchnorm.py's graphs), planned for sm_90a without a GPU: the
batchnorm runs over the convolution's channels-last memory order
(dnnc/decompose/batchnorm.py), so no kernel moves the activations between
layouts.

* forward (conv 3x3 -> batchnorm -> relu -> conv 1x1, the convolution's and
  the relu's outputs returned): the two convolutions on tc-sm90, the
  statistics as column programs over (N*H*W, C) reading the saved output in
  place (dnn-layout-views), and one pointwise pass for y with the relu,
  which writes the relu's output in place (dnn-hoist-transposes moves the
  relu above the batchnorm's restoring transpose, which is then a view);
  no copy, layout, load or store kernel.
* backward (relu gradient -> batchnorm backward -> filter and data
  gradients): the relu gradient over the saved tensors in place
  (dnn-hoist-transposes), one column program, one pointwise pass for dx,
  and the two gradients on tc-sm90.
"""

import sys
from pathlib import Path

import pytest

from dnnc import compiler, graph_mlir

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gpu"))
from gpu_cases import conv_batchnorm  # noqa: E402
from gpu_cases.case import BF16  # noqa: E402

SHAPE = conv_batchnorm.SHAPES[1]


def plan(build):
    pkg = compiler.compile_module(graph_mlir.to_module(build()), compiler.Options(
        target="cuda", arch="sm_90a", tuning_db="off"), basename="cbn")
    return [(k["entry"], k["strategy"], k.get("reason", "")) for k in pkg.kernels]


@pytest.fixture(scope="module")
def forward():
    return plan(conv_batchnorm.forward(BF16, SHAPE))


@pytest.fixture(scope="module")
def backward():
    return plan(conv_batchnorm.backward(BF16, SHAPE))


def _no_layout_kernels(kernels):
    moved = [k for k in kernels if any(w in k[0] for w in ("_layout_", "_load_", "_store_"))
             or k[1] == "simt-transpose"]
    assert not moved, moved


def test_forward_plan(forward):
    _no_layout_kernels(forward)
    strategies = [k[1] for k in forward]
    assert strategies.count("tc-sm90") == 2, forward
    columns = [k for k in forward if k[1] == "simt-reduce-columns"]
    n, _, h, w, c = SHAPE
    assert len(columns) == 2, forward
    for k in columns:
        assert f"{c} columns of {n * h * w}" in k[2], k
    assert len(forward) == 5, forward


def test_backward_plan(backward):
    _no_layout_kernels(backward)
    strategies = [k[1] for k in backward]
    assert strategies.count("tc-sm90") == 2, backward
    assert strategies.count("simt-reduce-columns") == 1, backward
    assert len(backward) == 5, backward


def test_backward_residual_plan():
    """A data gradient read by a batchnorm backward (in rows) and again, as
    its residual, by the next data gradient: the rows read the gradient's
    channels-last buffer itself (dnn-conv-layouts), with no copy of it
    between the two readers."""
    kernels = plan(conv_batchnorm.backward_residual(BF16, SHAPE))
    _no_layout_kernels(kernels)
    copies = [k for k in kernels if k[0].split("_kernel")[0].endswith("_tensor")]
    assert not copies, kernels
    strategies = [k[1] for k in kernels]
    assert strategies.count("tc-sm90") == 2, kernels
    assert len(kernels) == 4, kernels
