"""``dnnc.torch``: dnnc kernels as PyTorch operators, with autograd.

    import dnnc.torch as dt
    y = dt.conv2d(x, w, b, stride=2, padding=1)           # torch.nn.functional's signature
    o = dt.scaled_dot_product_attention(q, k, v, is_causal=True)
    layer = dt.nn.Linear(768, 3072)                      # a torch.nn.Linear on dnnc

Importing this package imports torch and registers the ``torch.ops.dnnc``
operators (``torch.library``: conv, matmul, linear, sdpa, the norms,
softmax, pooling, the activations, and their backwards), each with a fake
implementation, so they trace under ``torch.compile`` and run under CUDA
graph capture. ``import dnnc`` alone never imports torch.

A CUDA tensor's op is compiled with dnnc's JIT for that GPU's arch and runs
on the current stream; a CPU tensor's runs on dnnc's CPU back end. Each op
signature (dtypes, shapes, strides, attributes, device) compiles once per
process (runner.py). What dnnc does not take falls back to PyTorch's op with
a one-time ``FallbackWarning``, or raises ``UnsupportedError`` when strict
(fallback.py). See docs/torch.md.
"""

from dnnc.torch import nn
from dnnc.torch.fallback import FallbackWarning, is_strict, set_strict, strict
from dnnc.torch.functional import (
    avg_pool2d, avg_pool3d, batch_norm, conv2d, conv3d, elu, gelu, group_norm, layer_norm,
    leaky_relu, linear, log_softmax, matmul, max_pool2d, max_pool3d, relu, rms_norm,
    scaled_dot_product_attention, sigmoid, silu, softmax, softplus, tanh,
)

__all__ = [
    "FallbackWarning", "avg_pool2d", "avg_pool3d", "batch_norm", "conv2d", "conv3d", "elu",
    "gelu", "group_norm", "is_strict", "layer_norm", "leaky_relu", "linear", "log_softmax",
    "matmul", "max_pool2d", "max_pool3d", "nn", "relu", "rms_norm",
    "scaled_dot_product_attention", "set_strict", "sigmoid", "silu", "softmax", "softplus",
    "strict", "tanh",
]
