"""The benchmark cases: a dnn graph and the PyTorch code that computes the same.

Each case gives ``build()`` → a dnnc.Graph, ``torch_fn(*tensors)`` → the same
result with PyTorch (cuDNN / cuBLAS / its own kernels), the FLOPs, and the
minimal bytes it must move (every input read once, every output written once),
so the runner can report TFLOP/s or TB/s against the device's copy bandwidth.
Only ``build`` needs dnnc (and so MLIR); the rest is read on the GPU machine.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Case:
    name: str
    build: object          # () -> dnnc.Graph
    torch_fn: object       # (torch module, *tensors) -> tensor or tuple
    flops: float
    bytes: float
    memory_bound: bool


def _graph(name, dt="bf16"):
    # Imported here: the GPU side of the benchmark reads the cases without MLIR.
    import dnnc

    return dnnc.Graph(name=name, io_data_type=dt)


def _pointwise_gelu():
    g = _graph("gelu")
    x = g.tensor(name="x", dim=[16384, 8192])
    g.gelu(x).set_output(True)
    return g


def _bias_gelu_residual():
    g = _graph("bias_gelu_residual")
    x = g.tensor(name="x", dim=[16384, 8192])
    b = g.tensor(name="b", dim=[1, 8192])
    r = g.tensor(name="r", dim=[16384, 8192])
    g.add(g.gelu(g.add(x, b)), r).set_output(True)
    return g


def _layernorm():
    g = _graph("layernorm")
    x = g.tensor(name="x", dim=[16384, 8192])
    s = g.tensor(name="scale", dim=[1, 8192])
    b = g.tensor(name="bias", dim=[1, 8192])
    g.layernorm(x, s, b, axis=1)[0].set_output(True)
    return g


def _softmax():
    g = _graph("softmax")
    x = g.tensor(name="x", dim=[16384, 8192])
    g.softmax(x, axis=1).set_output(True)
    return g


def _matmul():
    g = _graph("matmul")
    a = g.tensor(name="a", dim=[2048, 2048])
    b = g.tensor(name="b", dim=[2048, 2048])
    g.matmul(a, b).set_output(True)
    return g


def _conv():
    g = _graph("conv3x3")
    x = g.tensor(name="x", dim=[32, 64, 56, 56], stride=[64 * 56 * 56, 1, 56 * 64, 64])
    w = g.tensor(name="w", dim=[64, 64, 3, 3], stride=[576, 1, 192, 64])
    y = g.conv_fprop(x, w, padding=1)
    y.set_output(True).set_stride([64 * 56 * 56, 1, 56 * 64, 64])
    return g


def _maxpool():
    g = _graph("maxpool")
    x = g.tensor(name="x", dim=[32, 64, 112, 112], stride=[64 * 112 * 112, 1, 112 * 64, 64])
    y = g.pooling(x, "max", window=3, stride=2, padding=1)
    y.set_output(True).set_stride([64 * 56 * 56, 1, 56 * 64, 64])
    return g


def _sdpa():
    g = _graph("sdpa")
    q = g.tensor(name="q", dim=[4, 16, 1024, 64])
    k = g.tensor(name="k", dim=[4, 16, 1024, 64])
    v = g.tensor(name="v", dim=[4, 16, 1024, 64])
    g.sdpa(q, k, v, use_causal_mask=True)[0].set_output(True)
    return g


MB = 16384 * 8192 * 2  # one bf16 16384x8192 tensor, bytes

CASES = [
    Case("gelu 16384x8192 bf16", _pointwise_gelu,
         lambda t, x: t.nn.functional.gelu(x), 0, 2 * MB, True),
    Case("add+gelu+add 16384x8192 bf16", _bias_gelu_residual,
         lambda t, x, b, r: t.nn.functional.gelu(x + b) + r, 0, 3 * MB, True),
    Case("layernorm 16384x8192 bf16", _layernorm,
         lambda t, x, s, b: t.nn.functional.layer_norm(x, (8192,), s[0], b[0]), 0, 2 * MB, True),
    Case("softmax 16384x8192 bf16", _softmax,
         lambda t, x: t.softmax(x, dim=1), 0, 2 * MB, True),
    Case("matmul 2048^3 bf16", _matmul,
         lambda t, a, b: a @ b, 2 * 2048 ** 3, 3 * 2048 * 2048 * 2, False),
    Case("conv 3x3 32x64x56x56 NHWC bf16", _conv,
         lambda t, x, w: t.nn.functional.conv2d(x, w, padding=1),
         2 * 32 * 64 * 56 * 56 * 64 * 9, 2 * (2 * 32 * 64 * 56 * 56 + 64 * 64 * 9), False),
    Case("maxpool 3x3/2 32x64x112x112 NHWC bf16", _maxpool,
         lambda t, x: t.nn.functional.max_pool2d(x, 3, 2, 1),
         0, 2 * (32 * 64 * 112 * 112 + 32 * 64 * 56 * 56), True),
    Case("sdpa causal B4 H16 S1024 D64 bf16", _sdpa,
         lambda t, q, k, v: t.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True),
         2 * 2 * 4 * 16 * 1024 * 1024 * 64 / 2, 4 * 4 * 16 * 1024 * 64 * 2, False),
]

