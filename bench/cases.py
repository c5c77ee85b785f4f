"""The benchmark cases: a dnn graph and the PyTorch code that computes the same.

Each case gives ``build()`` → a dnnc.Graph, ``torch_fn(torch, *tensors)`` → the
same result with PyTorch (cuDNN / cuBLAS / its own kernels), the FLOPs, and the
minimal bytes it must move (every input it needs read once, every output written
once), so the runner can report TFLOP/s or TB/s against the device's copy
bandwidth. Only ``build`` needs dnnc (and so MLIR); the rest is read on the GPU
machine.

Together the cases use every op of the dialect (test/python/test_bench_cases.py
checks it), one case per pointwise op. ``group`` is the family: pointwise,
activation-backward, tensor, reduction, norm, softmax, pooling, matmul, conv,
attention; the name says forward or backward.

The runner fills the inputs with random normal values (bool: fair coin flips)
in the layouts of the package's manifest. Two optional hooks refine that:

* ``init(torch, *inputs)`` overwrites inputs in place with the values the op
  expects, for both sides alike: positive numbers for log, statistics computed
  from x for a norm's backward, the forward's output for softmax backward.
* ``torch_prepare(torch, *inputs)`` returns what PyTorch keeps from the forward
  pass in training (max-pool indices, sigmoid's output, an autograd graph). It
  runs once per input set, untimed, and its results follow the inputs in the
  arguments of ``torch_fn``.

The reference is the call a PyTorch user makes: torch.nn.functional, torch.*,
the aten backward op that autograd runs (gelu_backward, _softmax_backward_data,
native_layer_norm_backward, ...), torch.nn.grad for convolution gradients, and
``torch.autograd.grad`` on a prepared forward where the backward has no stable
direct entry point (rms_norm, group_norm, instance_norm and
scaled_dot_product_attention, whose backward kernel and saved tensors depend on
the PyTorch version and the backend it picks). Where the target is one library
the reference pins it: the attention forward cases of the issue's table run
PyTorch's SDPA on cuDNN attention only. ``others`` names further PyTorch paths
to the same result, timed beside the reference and reported apart
(``torch_<name>_ms``): those cases also time SDPA's flash backend.

FLOPs of matmul, convolution and attention are the usual 2 per multiply-add
(causal attention counts the half it computes). For memory-bound cases they are
nominal, only for information: one per element per elementary operation, zero
for pure data movement; their rate is bytes / time.
"""

import math
from dataclasses import dataclass, field

GROUPS = ("pointwise", "activation-backward", "tensor", "reduction", "norm", "softmax",
          "pooling", "matmul", "conv", "attention")

# What each group's torch_fn reaches in PyTorch: the name docs/performance.md's
# summary table gives the PyTorch side (bench/summary.py). Cases marked
# ``compiled`` are also timed under torch.compile, which the table shows apart.
BACKENDS = {
    "pointwise": "PyTorch's own kernels",
    "activation-backward": "PyTorch's own kernels (aten backward ops)",
    "tensor": "PyTorch's own copy kernels",
    "reduction": "PyTorch's own kernels",
    "norm": "PyTorch's own kernels",
    "softmax": "PyTorch's own kernels",
    "pooling": "PyTorch's own kernels",
    "matmul": "cuBLAS",
    "conv": "cuDNN",
    "attention": "PyTorch's SDPA on cuDNN attention (its own backend choice for the "
                 "S1024 D64 forward and backward)",
}


@dataclass(frozen=True)
class Case:
    name: str
    build: object          # () -> dnnc.Graph
    torch_fn: object       # (torch module, *tensors, *prepared) -> tensor or tuple
    flops: float
    bytes: float
    memory_bound: bool
    group: str = ""
    init: object = None            # (torch module, *tensors) -> None, in place
    torch_prepare: object = None   # (torch module, *tensors) -> tuple, untimed
    compiled: bool = False         # also time torch.compile(torch_fn) (fused patterns)
    host_timed: bool = False       # timed by the host's clock, launch included (tiny problems)
    config: str = None             # a config override (Options.config): force a strategy
    # Other PyTorch paths to the same result, timed beside torch_fn: {name:
    # fn}, fn as torch_fn (another SDPA backend). Left out of the hash: a dict.
    others: dict = field(default_factory=dict, hash=False)


def _graph(name, dt="bf16"):
    # Imported here: the GPU side of the benchmark reads the cases without MLIR.
    import dnnc

    return dnnc.Graph(name=name, io_data_type=dt)


def _numel(shape):
    return math.prod(shape)


def _nhwc(n, c, h, w):
    """Strides of a logical (N, C, H, W) tensor stored channels-last."""
    return [c * h * w, 1, w * c, c]


BF16, F32, BOOL, FP8 = 2, 4, 1, 1  # bytes per element
EPS = 1e-5


# ============================================================================
# The original cases (their names are the keys of earlier result files)
# ============================================================================


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


def _matmul_4096():
    g = _graph("matmul_4096")
    a = g.tensor(name="a", dim=[4096, 4096])
    b = g.tensor(name="b", dim=[4096, 4096])
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
ROWS = 16384 * 8192    # its elements

ORIGINAL = [
    Case("gelu 16384x8192 bf16", _pointwise_gelu,
         lambda t, x: t.nn.functional.gelu(x), 8 * ROWS, 2 * MB, True, "pointwise"),
    Case("add+gelu+add 16384x8192 bf16", _bias_gelu_residual,
         lambda t, x, b, r: t.nn.functional.gelu(x + b) + r, 10 * ROWS, 2 * MB + MB + 8192 * 2,
         True, "pointwise"),
    Case("layernorm 16384x8192 bf16", _layernorm,
         lambda t, x, s, b: t.nn.functional.layer_norm(x, (8192,), s[0], b[0]), 7 * ROWS,
         2 * MB + 2 * 8192 * 2, True, "norm"),
    Case("softmax 16384x8192 bf16", _softmax,
         lambda t, x: t.softmax(x, dim=1), 4 * ROWS, 2 * MB, True, "softmax"),
    Case("matmul 2048^3 bf16", _matmul,
         lambda t, a, b: a @ b, 2 * 2048 ** 3, 3 * 2048 * 2048 * 2, False, "matmul"),
    # The Ampere strategy (cp.async, ldmatrix, mma.sync) on whatever GPU runs
    # it, with the tile and stages its heuristics give this problem on sm_90a.
    Case("matmul 4096^3 bf16 tc-sm80", _matmul_4096,
         lambda t, a, b: a @ b, 2 * 4096 ** 3, 3 * 4096 * 4096 * 2, False, "matmul",
         config="*=strategy:tc-sm80,tile:256x128x64,stages:4"),
    Case("conv 3x3 32x64x56x56 NHWC bf16", _conv,
         lambda t, x, w: t.nn.functional.conv2d(x, w, padding=1),
         2 * 32 * 64 * 56 * 56 * 64 * 9, 2 * (2 * 32 * 64 * 56 * 56 + 64 * 64 * 9), False,
         "conv"),
    Case("maxpool 3x3/2 32x64x112x112 NHWC bf16", _maxpool,
         lambda t, x: t.nn.functional.max_pool2d(x, 3, 2, 1),
         9 * 32 * 64 * 56 * 56, 2 * (32 * 64 * 112 * 112 + 32 * 64 * 56 * 56), True,
         "pooling"),
    Case("sdpa causal B4 H16 S1024 D64 bf16", _sdpa,
         lambda t, q, k, v: t.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True),
         2 * 2 * 4 * 16 * 1024 * 1024 * 64 / 2, 4 * 4 * 16 * 1024 * 64 * 2, False, "attention"),
]


# ============================================================================
# Pointwise: one case per op, 4096x8192
# ============================================================================

PW = [4096, 8192]
PWN = _numel(PW)
PW_NAME = "4096x8192"


def _positive(t, *xs):
    """|x| + 1/16: inside the domain of log, sqrt, rsqrt, pow and away from 1/0."""
    for x in xs:
        x.abs_().add_(0.0625)


def _spread(t, *xs):
    """Values over a few units, so floor and ceil see many integers."""
    for x in xs:
        x.mul_(8)


def _integers(t, *xs):
    """Small integers, so == and != are true often enough to matter."""
    for x in xs:
        x.mul_(2).round_()


def _pointwise(op, torch_fn, inputs=("x",), dtype="bf16", out=BF16, flops=1, init=None,
               label=None, group="pointwise", torch_prepare=None, **attrs):
    """A case that applies one pointwise op to PW-shaped inputs of ``dtype``;
    ``out`` is the result's bytes per element."""
    label = label or op
    in_bytes = {"bf16": BF16, "bool": BOOL}[dtype]

    def build():
        g = _graph("".join(c if c.isalnum() else "_" for c in label))
        ts = [g.tensor(name=n, dim=PW, data_type=dtype) for n in inputs]
        getattr(g, op)(*ts, **attrs).set_output(True)
        return g

    return Case(f"{label} {PW_NAME} {dtype}", build, torch_fn, flops * PWN,
                PWN * (len(inputs) * in_bytes + out), True, group, init, torch_prepare)


UNARY = [
    _pointwise("relu", lambda t, x: t.relu(x)),
    _pointwise("gelu", lambda t, x: t.nn.functional.gelu(x, approximate="tanh"),
               label="gelu(tanh)", flops=8, approximate="tanh"),
    _pointwise("silu", lambda t, x: t.nn.functional.silu(x), flops=4),
    # swish with beta 1.702 is QuickGELU (CLIP), which PyTorch writes this way.
    _pointwise("swish", lambda t, x: x * t.sigmoid(1.702 * x), flops=5, beta=1.702),
    _pointwise("sigmoid", lambda t, x: t.sigmoid(x), flops=3),
    _pointwise("tanh", lambda t, x: t.tanh(x)),
    _pointwise("elu", lambda t, x: t.nn.functional.elu(x), flops=3),
    _pointwise("leaky_relu", lambda t, x: t.nn.functional.leaky_relu(x, 0.01), flops=2),
    _pointwise("softplus", lambda t, x: t.nn.functional.softplus(x), flops=4),
    _pointwise("exp", lambda t, x: t.exp(x)),
    _pointwise("log", lambda t, x: t.log(x), init=_positive),
    _pointwise("sqrt", lambda t, x: t.sqrt(x), init=_positive),
    _pointwise("rsqrt", lambda t, x: t.rsqrt(x), init=_positive),
    _pointwise("abs", lambda t, x: t.abs(x)),
    _pointwise("neg", lambda t, x: t.neg(x)),
    _pointwise("square", lambda t, x: t.square(x)),
    _pointwise("reciprocal", lambda t, x: t.reciprocal(x), init=_positive),
    _pointwise("sin", lambda t, x: t.sin(x)),
    _pointwise("cos", lambda t, x: t.cos(x)),
    _pointwise("erf", lambda t, x: t.erf(x)),
    _pointwise("floor", lambda t, x: t.floor(x), init=_spread),
    _pointwise("ceil", lambda t, x: t.ceil(x), init=_spread),
]

BINARY = [
    _pointwise("add", lambda t, a, b: t.add(a, b), ("a", "b")),
    _pointwise("sub", lambda t, a, b: t.sub(a, b), ("a", "b")),
    _pointwise("mul", lambda t, a, b: t.mul(a, b), ("a", "b")),
    _pointwise("div", lambda t, a, b: t.div(a, b), ("a", "b"),
               init=lambda t, a, b: _positive(t, b)),
    _pointwise("max", lambda t, a, b: t.maximum(a, b), ("a", "b")),
    _pointwise("min", lambda t, a, b: t.minimum(a, b), ("a", "b")),
    _pointwise("pow", lambda t, a, b: t.pow(a, b), ("a", "b"), flops=3,
               init=lambda t, a, b: _positive(t, a)),
]

COMPARE = [
    _pointwise("cmp_eq", lambda t, a, b: t.eq(a, b), ("a", "b"), out=BOOL, init=_integers),
    _pointwise("cmp_ne", lambda t, a, b: t.ne(a, b), ("a", "b"), out=BOOL, init=_integers),
    _pointwise("cmp_lt", lambda t, a, b: t.lt(a, b), ("a", "b"), out=BOOL),
    _pointwise("cmp_le", lambda t, a, b: t.le(a, b), ("a", "b"), out=BOOL),
    _pointwise("cmp_gt", lambda t, a, b: t.gt(a, b), ("a", "b"), out=BOOL),
    _pointwise("cmp_ge", lambda t, a, b: t.ge(a, b), ("a", "b"), out=BOOL),
]

LOGICAL = [
    _pointwise("logical_and", lambda t, a, b: t.logical_and(a, b), ("a", "b"), "bool", BOOL),
    _pointwise("logical_or", lambda t, a, b: t.logical_or(a, b), ("a", "b"), "bool", BOOL),
    _pointwise("logical_not", lambda t, x: t.logical_not(x), ("x",), "bool", BOOL),
]


def _select():
    g = _graph("select")
    cond = g.tensor(name="cond", dim=PW, data_type="bool")
    a = g.tensor(name="a", dim=PW)
    b = g.tensor(name="b", dim=PW)
    g.select(cond, a, b).set_output(True)
    return g


def _gen_index():
    # x gives only the shape (it is not read); indices up to 8191 need f32.
    g = _graph("gen_index")
    x = g.tensor(name="x", dim=PW)
    g.gen_index(x, axis=1).set_output(True).set_data_type("f32")
    return g


def _scale():
    g = _graph("scale")
    x = g.tensor(name="x", dim=PW)
    g.mul(x, g.constant(0.125)).set_output(True)
    return g


MASK = [64, 1024, 1024]  # attention scores of 4 x 16 heads, 1024 tokens


def _causal_mask():
    """Scores where key <= query, -inf elsewhere: masks built the cuDNN way,
    from gen_index, a comparison and select."""
    g = _graph("causal_mask")
    x = g.tensor(name="x", dim=MASK)
    keep = g.cmp_ge(g.gen_index(x, axis=1), g.gen_index(x, axis=2))
    g.select(keep, x, g.constant(float("-inf"))).set_output(True)
    return g


def _causal_mask_prepare(t, x):
    # A PyTorch model keeps its mask as a buffer.
    return (t.ones(MASK[1:], dtype=t.bool, device=x.device).triu(1),)


OTHER_POINTWISE = [
    Case(f"select {PW_NAME} bf16", _select, lambda t, c, a, b: t.where(c, a, b), PWN,
         PWN * (BOOL + 3 * BF16), True, "pointwise"),
    Case(f"gen_index {PW_NAME} f32", _gen_index,
         lambda t, x: t.arange(PW[1], device=x.device, dtype=t.float32).expand(PW).contiguous(),
         0, PWN * F32, True, "pointwise"),
    Case(f"mul by constant {PW_NAME} bf16", _scale, lambda t, x: x * 0.125, PWN,
         PWN * 2 * BF16, True, "pointwise"),
    Case("causal mask 64x1024x1024 bf16", _causal_mask,
         lambda t, x, upper: x.masked_fill(upper, float("-inf")),
         _numel(MASK), _numel(MASK) * 2 * BF16, True, "pointwise",
         torch_prepare=_causal_mask_prepare),
]


# ============================================================================
# Activation backward: (dy, x) -> dx, 4096x8192
# ============================================================================


def _saved_output(fn):
    """PyTorch's sigmoid and tanh backward read the saved output, not x."""
    return lambda t, dy, x: (getattr(t, fn)(x),)


ACTIVATION_BACKWARD = [
    _pointwise("relu_backward", lambda t, dy, x: t.ops.aten.threshold_backward(dy, x, 0),
               ("dy", "x"), group="activation-backward"),
    _pointwise("gelu_backward", lambda t, dy, x: t.ops.aten.gelu_backward(dy, x),
               ("dy", "x"), flops=10, group="activation-backward"),
    _pointwise("silu_backward", lambda t, dy, x: t.ops.aten.silu_backward(dy, x),
               ("dy", "x"), flops=6, group="activation-backward"),
    _pointwise("sigmoid_backward", lambda t, dy, x, y: t.ops.aten.sigmoid_backward(dy, y),
               ("dy", "x"), flops=3, group="activation-backward",
               torch_prepare=_saved_output("sigmoid")),
    _pointwise("tanh_backward", lambda t, dy, x, y: t.ops.aten.tanh_backward(dy, y),
               ("dy", "x"), flops=3, group="activation-backward",
               torch_prepare=_saved_output("tanh")),
    _pointwise("elu_backward",
               lambda t, dy, x: t.ops.aten.elu_backward(dy, 1.0, 1.0, 1.0, False, x),
               ("dy", "x"), flops=4, group="activation-backward", alpha=1.0),
    _pointwise("leaky_relu_backward",
               lambda t, dy, x: t.ops.aten.leaky_relu_backward(dy, x, 0.01, False),
               ("dy", "x"), flops=2, group="activation-backward"),
    # beta 1.702: QuickGELU's gradient, which PyTorch's autograd computes in
    # several kernels; here as the one expression it takes eagerly.
    _pointwise("swish_backward",
               lambda t, dy, x: dy * (lambda s: s * (1 + 1.702 * x * (1 - s)))(
                   t.sigmoid(1.702 * x)),
               ("dy", "x"), flops=7, group="activation-backward", beta=1.702),
    _pointwise("softplus_backward",
               lambda t, dy, x: t.ops.aten.softplus_backward(dy, x, 1.0, 20.0),
               ("dy", "x"), flops=5, group="activation-backward"),
]


# ============================================================================
# Tensor ops: casts and data movement
# ============================================================================


def _cast_fp8():
    g = _graph("cast_fp8")
    x = g.tensor(name="x", dim=PW)
    g.cast(x, "f8E4M3FN").set_output(True)
    return g


def _cast_bf16():
    g = _graph("cast_bf16")
    x = g.tensor(name="x", dim=PW, data_type="f32")
    g.cast(x, "bf16").set_output(True)
    return g


HEADS = [32, 1024, 16, 64]  # B, S, H, D: 32 sequences of 1024 tokens, 16 heads of 64
HN = _numel(HEADS)


def _merge_heads():
    """Attention output (B, H, S, D) in memory, read as (B, S, H, D) and
    reshaped to (B, S, H*D): the reshape has to move the data."""
    b, s, h, d = HEADS
    g = _graph("merge_heads")
    x = g.tensor(name="x", dim=HEADS, stride=[h * s * d, d, s * d, 1])
    g.reshape(x, [b, s, h * d]).set_output(True)
    return g


def _split_heads():
    g = _graph("split_heads")
    x = g.tensor(name="x", dim=HEADS)
    g.transpose(x, [0, 2, 1, 3]).set_output(True)
    return g


def _transpose_2d():
    g = _graph("transpose_2d", "f32")
    x = g.tensor(name="x", dim=[8192, 8192])
    g.transpose(x, [1, 0]).set_output(True)
    return g


def _transpose_cast():
    g = _graph("transpose_cast", "f32")
    x = g.tensor(name="x", dim=[8192, 8192])
    g.cast(g.transpose(x, [1, 0]), "bf16").set_output(True)
    return g


NCHW = [128, 64, 56, 56]  # a ResNet stage's activations


def _to_nhwc():
    g = _graph("to_nhwc")
    x = g.tensor(name="x", dim=NCHW)
    g.transpose(x, [0, 2, 3, 1]).set_output(True)
    return g


QKV = [4096, 3 * 4096]


def _slice_k():
    g = _graph("slice_k")
    x = g.tensor(name="x", dim=QKV)
    g.slice(x, [slice(None), slice(4096, 8192)]).set_output(True)
    return g


def _concat():
    g = _graph("concat")
    a = g.tensor(name="a", dim=[4096, 4096])
    b = g.tensor(name="b", dim=[4096, 4096])
    g.concat([a, b], axis=1).set_output(True)
    return g


def _concat4():
    """Four inputs: a chain of three binary concats in the graph."""
    g = _graph("concat4")
    parts = [g.tensor(name=n, dim=[4096, 2048]) for n in "abcd"]
    g.concat(parts, axis=1).set_output(True)
    return g


TENSOR = [
    Case(f"cast bf16->fp8e4m3 {PW_NAME}", _cast_fp8, lambda t, x: x.to(t.float8_e4m3fn),
         0, PWN * (BF16 + FP8), True, "tensor"),
    Case(f"cast f32->bf16 {PW_NAME}", _cast_bf16, lambda t, x: x.to(t.bfloat16),
         0, PWN * (F32 + BF16), True, "tensor"),
    Case("reshape (merge heads) 32x1024x16x64 bf16", _merge_heads,
         lambda t, x: x.reshape(HEADS[0], HEADS[1], HEADS[2] * HEADS[3]),
         0, HN * 2 * BF16, True, "tensor"),
    Case("transpose (split heads) 32x1024x16x64 bf16", _split_heads,
         lambda t, x: x.transpose(1, 2).contiguous(), 0, HN * 2 * BF16, True, "tensor"),
    # Transposes that move the innermost dim (simt-transpose).
    Case("transpose (2-D) 8192x8192 f32", _transpose_2d, lambda t, x: x.t().contiguous(),
         0, 8192 * 8192 * 2 * F32, True, "tensor"),
    # The cast joins the transpose's kernel; PyTorch eager copies and casts
    # in one copy_ too.
    Case("transpose+cast (2-D) 8192x8192 f32->bf16", _transpose_cast,
         lambda t, x: x.t().to(t.bfloat16, memory_format=t.contiguous_format),
         0, 8192 * 8192 * (F32 + BF16), True, "tensor", compiled=True),
    Case("transpose NCHW->NHWC 128x64x56x56 bf16", _to_nhwc,
         lambda t, x: x.permute(0, 2, 3, 1).contiguous(), 0, _numel(NCHW) * 2 * BF16, True,
         "tensor"),
    # Only the sliced third is read.
    Case("slice (k of qkv) 4096x12288 bf16", _slice_k,
         lambda t, x: x[:, 4096:8192].contiguous(), 0, 4096 * 4096 * 2 * BF16, True, "tensor"),
    Case("concat 2x 4096x4096 bf16", _concat, lambda t, a, b: t.cat((a, b), dim=1),
         0, 4 * 4096 * 4096 * BF16, True, "tensor"),
    Case("concat 4x 4096x2048 bf16", _concat4, lambda t, a, b, c, d: t.cat((a, b, c, d), dim=1),
         0, 4 * 4096 * 4096 * BF16, True, "tensor"),
]


# ============================================================================
# Reductions: rows of 4096x8192 (per-token statistics), columns of 16384x4096
# ============================================================================


def _reduction(mode, torch_fn, init=None):
    def build():
        g = _graph(f"reduce_{mode}")
        x = g.tensor(name="x", dim=PW)
        g.reduction(x, mode, axes=[1]).set_output(True)
        return g

    return Case(f"reduce {mode} rows {PW_NAME} bf16", build, torch_fn, PWN,
                (PWN + PW[0]) * BF16, True, "reduction", init)


def _reduce_rows_large():
    g = _graph("reduce_sum_rows_large")
    x = g.tensor(name="x", dim=[16384, 8192])
    g.reduction(x, "sum", axes=[1]).set_output(True)
    return g


def _reduce_columns(rows, columns):
    def build():
        g = _graph("reduce_sum_columns")
        dy = g.tensor(name="dy", dim=[rows, columns])
        g.reduction(dy, "sum", axes=[0]).set_output(True)
        return g

    return build


def _near_one(t, x):
    """1 + x / 100: a product of 8192 of them stays finite."""
    x.mul_(0.01).add_(1)


REDUCTION = [
    _reduction("sum", lambda t, x: x.sum(1, keepdim=True)),
    _reduction("mean", lambda t, x: x.mean(1, keepdim=True)),
    _reduction("max", lambda t, x: x.amax(1, keepdim=True)),
    _reduction("min", lambda t, x: x.amin(1, keepdim=True)),
    _reduction("prod", lambda t, x: x.prod(1, keepdim=True), init=_near_one),
    # amax is the largest |x| (fp8 scaling); PyTorch's one-kernel form is the inf-norm.
    _reduction("amax", lambda t, x: t.linalg.vector_norm(x, float("inf"), dim=1, keepdim=True)),
    _reduction("norm1", lambda t, x: t.linalg.vector_norm(x, 1, dim=1, keepdim=True)),
    _reduction("norm2", lambda t, x: t.linalg.vector_norm(x, 2, dim=1, keepdim=True)),
    # The same row sum at the norms' size (256 MiB read): what the 64 MiB
    # case loses to the launch and the tail.
    Case("reduce sum rows 16384x8192 bf16", _reduce_rows_large,
         lambda t, x: x.sum(1, keepdim=True), 16384 * 8192, (16384 * 8192 + 16384) * BF16, True,
         "reduction"),
    # The bias gradient of a linear layer: sum dy over the tokens.
    Case("reduce sum columns 16384x4096 bf16", _reduce_columns(16384, 4096),
         lambda t, dy: dy.sum(0, keepdim=True), 16384 * 4096, (16384 + 1) * 4096 * BF16, True,
         "reduction"),
    # The same column sum at the issue's size, rows x 8192 (256 MiB read).
    Case("reduce sum columns 16384x8192 bf16", _reduce_columns(16384, 8192),
         lambda t, dy: dy.sum(0, keepdim=True), 16384 * 8192, (16384 + 1) * 8192 * BF16, True,
         "reduction"),
]


# Reductions over middle axes (issue 33): a sum over H of [B, H, S, D]; the
# per-channel statistics of a channels-first batchnorm (NCHW, axes [0, 2, 3]:
# a row program over each (n, c) plane, then a column program over n); a
# mean over the middle axis of [64, 512, 1024]. The target is the copy rate
# of the bytes read (bench/run.py's copy bandwidth against ``bytes``).


def _reduce_middle(name, dims, axes, mode, dt):
    def build():
        g = _graph(name, dt)
        x = g.tensor(name="x", dim=dims)
        g.reduction(x, mode, axes=axes).set_output(True)
        return g

    return build


def _middle_case(name, dims, axes, mode, dt, torch_fn):
    size = {"bf16": BF16, "f32": F32}[dt]
    kept = _numel(dims) // _numel([dims[a] for a in axes])
    return Case(name, _reduce_middle(name.split()[0].replace("-", "_"), dims, axes, mode, dt),
                torch_fn, _numel(dims), (_numel(dims) + kept) * size, True, "reduction")


MIDDLE_REDUCTION = [
    _middle_case("reduce-middle sum over H 8x16x1024x64 bf16", [8, 16, 1024, 64], [1], "sum",
                 "bf16", lambda t, x: x.sum(1, keepdim=True)),
    _middle_case("reduce-middle sum NCHW stats 32x64x56x56 f32", [32, 64, 56, 56], [0, 2, 3],
                 "sum", "f32", lambda t, x: x.sum((0, 2, 3), keepdim=True)),
    _middle_case("reduce-middle sum NCHW stats 128x256x14x14 bf16", [128, 256, 14, 14],
                 [0, 2, 3], "sum", "bf16", lambda t, x: x.sum((0, 2, 3), keepdim=True)),
    _middle_case("reduce-middle mean axis 1 64x512x1024 f32", [64, 512, 1024], [1], "mean",
                 "f32", lambda t, x: x.mean(1, keepdim=True)),
]


# ============================================================================
# Normalizations, forward and backward
# ============================================================================

D = 8192          # hidden size of the layernorm / rmsnorm rows (16384 of them)
BN = [32, 128, 56, 56]  # batchnorm: NHWC activations of a ResNet stage
GN = [8, 320, 64, 64]   # groupnorm: a diffusion UNet block, NCHW
GROUPS_GN = 32
IN = [16, 128, 64, 64]  # instancenorm: style-transfer activations, NCHW


def _row_stats(t, x, mean=None, inv=None, inv_rms=None):
    xf = x.float()
    if mean is not None:
        mean.copy_(xf.mean(1, keepdim=True))
        inv.copy_(t.rsqrt(xf.var(1, unbiased=False, keepdim=True) + EPS))
    if inv_rms is not None:
        inv_rms.copy_(t.rsqrt(xf.square().mean(1, keepdim=True) + EPS))


def _layernorm_training():
    g = _graph("layernorm_training")
    x = g.tensor(name="x", dim=[16384, D])
    s = g.tensor(name="scale", dim=[1, D])
    b = g.tensor(name="bias", dim=[1, D])
    for out in g.layernorm(x, s, b, axis=1, norm_forward_phase="training"):
        out.set_output(True)
    return g


# cudnn-frontend's form of a transformer's norms: x [tokens, hidden, 1, 1],
# normalized over dims 1-3, f32 parameters [1, hidden, 1, 1] (its samples and
# tests shape them so).
FE_ROWS, FE_HIDDEN = 2048, 4096


def _frontend_norm(kind):
    def build():
        g = _graph(f"frontend_{kind}")
        dims, params = [FE_ROWS, FE_HIDDEN, 1, 1], [1, FE_HIDDEN, 1, 1]
        x = g.tensor(name="x", dim=dims)
        s = g.tensor(name="scale", dim=params, data_type="f32")
        if kind == "layernorm":
            b = g.tensor(name="bias", dim=params, data_type="f32")
            outs = g.layernorm(x, s, b, axis=1, norm_forward_phase="training")
        else:
            outs = g.rmsnorm(x, s, axis=1, norm_forward_phase="training")
        for out in outs:
            if out is not None:
                out.set_output(True)
        return g
    return build


def _frontend_norm_torch(kind):
    """PyTorch's layernorm / rmsnorm of the [tokens, hidden] view, with the
    parameters in x's dtype (its kernels take no f32 parameters with bf16 x;
    cast untimed, ``_frontend_norm_prepare``); rmsnorm's y and inv_rms from
    its fused kernel where PyTorch has one."""
    def fn(t, x, s, *rest):
        x2 = x.view(FE_ROWS, FE_HIDDEN)
        if kind == "layernorm":
            return t.ops.aten.native_layer_norm(x2, [FE_HIDDEN], rest[-2], rest[-1], EPS)
        if hasattr(t.ops.aten, "_fused_rms_norm"):  # y and inv_rms in one kernel
            return t.ops.aten._fused_rms_norm(x2, [FE_HIDDEN], rest[-1], EPS)
        inv = t.rsqrt(x2.float().square().mean(1, keepdim=True) + EPS)
        return t.nn.functional.rms_norm(x2, (FE_HIDDEN,), rest[-1], EPS), inv
    return fn


def _frontend_norm_prepare(t, x, *params):
    return tuple(p.view(-1).to(x.dtype) for p in params)


def _layernorm_backward():
    g = _graph("layernorm_backward")
    dy = g.tensor(name="dy", dim=[16384, D])
    x = g.tensor(name="x", dim=[16384, D])
    s = g.tensor(name="scale", dim=[1, D])
    mean = g.tensor(name="mean", dim=[16384, 1], data_type="f32")
    inv = g.tensor(name="inv_variance", dim=[16384, 1], data_type="f32")
    for out in g.layernorm_backward(dy, x, s, mean, inv, axis=1, has_bias=True):
        out.set_output(True)
    return g


def _residual_norm(kind, fp8=False):
    """h = x + r; y = norm(h): a transformer's add & norm, both returned (h is
    the next residual stream); dnn-fuse puts the add into the norm's kernel.
    ``fp8``: y is returned as e4m3, scaled by a scalar q first (the next
    fp8 matmul's input), in the same kernel."""
    def build():
        g = _graph(f"residual_{kind}" + ("_fp8" if fp8 else ""))
        x = g.tensor(name="x", dim=[16384, D])
        r = g.tensor(name="r", dim=[16384, D])
        s = g.tensor(name="scale", dim=[1, D])
        h = g.add(x, r)
        h.set_output(True)
        if kind == "layernorm":
            y = g.layernorm(h, s, g.tensor(name="bias", dim=[1, D]), axis=1)[0]
        else:
            y = g.rmsnorm(h, s, axis=1)[0]
        if fp8:
            y = g.cast(g.mul(y, g.tensor(name="q", dim=[], data_type="f32")), "f8E4M3FN")
        y.set_output(True)
        return g
    return build


def _residual_norm_torch(kind, fp8=False):
    def fn(t, x, r, s, *rest):
        h = x + r
        if kind == "layernorm":
            y = t.nn.functional.layer_norm(h, (D,), s[0], rest[0][0], EPS)
        else:
            y = t.nn.functional.rms_norm(h, (D,), s[0], EPS)
        if fp8:
            y = (y * rest[-1]).to(t.float8_e4m3fn)
        return h, y
    return fn


def _rmsnorm():
    g = _graph("rmsnorm")
    x = g.tensor(name="x", dim=[16384, D])
    s = g.tensor(name="scale", dim=[1, D])
    g.rmsnorm(x, s, axis=1)[0].set_output(True)
    return g


def _rmsnorm_backward():
    g = _graph("rmsnorm_backward")
    dy = g.tensor(name="dy", dim=[16384, D])
    x = g.tensor(name="x", dim=[16384, D])
    s = g.tensor(name="scale", dim=[1, D])
    inv = g.tensor(name="inv_rms", dim=[16384, 1], data_type="f32")
    dx, dscale, _ = g.rmsnorm_backward(dy, x, s, inv, axis=1)
    dx.set_output(True)
    dscale.set_output(True)
    return g


def _rmsnorm_backward_prepare(t, dy, x, s, inv):
    x_ = x.detach().requires_grad_()
    w_ = s[0].detach().requires_grad_()
    return t.nn.functional.rms_norm(x_, (D,), w_, EPS), x_, w_


def _channel_params(g, c, names):
    """Per-channel batchnorm tensors, f32 as cuDNN and PyTorch's mixed
    precision keep them next to bf16 activations."""
    return [g.tensor(name=n, dim=[1, c, 1, 1], data_type="f32") for n in names]


def _batchnorm():
    n, c, h, w = BN
    g = _graph("batchnorm")
    x = g.tensor(name="x", dim=BN, stride=_nhwc(*BN))
    s, b, rm, rv = _channel_params(g, c, ["scale", "bias", "running_mean", "running_var"])
    y, mean, inv, next_rm, next_rv = g.batchnorm(x, s, b, rm, rv, epsilon=EPS, momentum=0.1)
    y.set_output(True).set_stride(_nhwc(*BN))
    for out in (mean, inv, next_rm, next_rv):
        out.set_output(True)
    return g


def _batchnorm_torch(t, x, s, b, rm, rv):
    """y, and the running statistics F.batch_norm updates in place (the batch
    mean and inverse deviation stay inside PyTorch)."""
    y = t.nn.functional.batch_norm(x, rm.view(-1), rv.view(-1), s.view(-1), b.view(-1),
                                   training=True, momentum=0.1, eps=EPS)
    return y, None, None, rm, rv


def _batchnorm_inference():
    n, c, h, w = BN
    g = _graph("batchnorm_inference")
    x = g.tensor(name="x", dim=BN, stride=_nhwc(*BN))
    s, b, mean, var = _channel_params(g, c, ["scale", "bias", "mean", "variance"])
    y = g.batchnorm_inference(x, mean, var, s, b, epsilon=EPS)
    y.set_output(True).set_stride(_nhwc(*BN))
    return g


def _batchnorm_backward():
    n, c, h, w = BN
    g = _graph("batchnorm_backward")
    dy = g.tensor(name="dy", dim=BN, stride=_nhwc(*BN))
    x = g.tensor(name="x", dim=BN, stride=_nhwc(*BN))
    s, mean, inv = _channel_params(g, c, ["scale", "mean", "inv_variance"])
    dx, dscale, dbias = g.batchnorm_backward(dy, x, s, mean, inv)
    dx.set_output(True).set_stride(_nhwc(*BN))
    dscale.set_output(True).set_data_type("f32")
    dbias.set_output(True).set_data_type("f32")
    return g


def _positive_variance(t, *tensors):
    tensors[-1].uniform_(0.5, 1.5)


def _channel_stats(t, dy, x, s, mean, inv):
    xf = x.float()
    mean.copy_(xf.mean((0, 2, 3), keepdim=True))
    inv.copy_(t.rsqrt(xf.var((0, 2, 3), unbiased=False, keepdim=True) + EPS))


def _groupnorm():
    g = _graph("groupnorm")
    x = g.tensor(name="x", dim=GN)
    s = g.tensor(name="scale", dim=[1, GN[1], 1, 1])
    b = g.tensor(name="bias", dim=[1, GN[1], 1, 1])
    g.groupnorm(x, GROUPS_GN, s, b, epsilon=EPS)[0].set_output(True)
    return g


def _groupnorm_backward():
    n, c, h, w = GN
    g = _graph("groupnorm_backward")
    dy = g.tensor(name="dy", dim=GN)
    x = g.tensor(name="x", dim=GN)
    s = g.tensor(name="scale", dim=[1, c, 1, 1])
    mean = g.tensor(name="mean", dim=[n, GROUPS_GN, 1, 1], data_type="f32")
    inv = g.tensor(name="inv_variance", dim=[n, GROUPS_GN, 1, 1], data_type="f32")
    for out in g.groupnorm_backward(dy, x, GROUPS_GN, s, mean, inv, has_bias=True):
        out.set_output(True)
    return g


def _group_stats(t, dy, x, s, mean, inv):
    xf = x.float().reshape(GN[0], GROUPS_GN, -1)
    mean.copy_(xf.mean(2).reshape(mean.shape))
    inv.copy_(t.rsqrt(xf.var(2, unbiased=False) + EPS).reshape(inv.shape))


def _norm_backward_prepare(forward):
    """Leaves for x, scale and a bias, and ``forward(x, scale, bias)`` on them."""

    def prepare(t, dy, x, s, *stats):
        x_ = x.detach().requires_grad_()
        w_ = s.reshape(-1).detach().requires_grad_()
        b_ = t.zeros_like(w_).requires_grad_()
        return forward(t, x_, w_, b_), x_, w_, b_

    return prepare


def _autograd_backward(t, dy, *rest):
    """dx, dscale, dbias of a prepared forward (the last four arguments)."""
    y, *leaves = rest[-4:]
    return t.autograd.grad(y, leaves, dy, retain_graph=True)


def _instancenorm():
    g = _graph("instancenorm")
    x = g.tensor(name="x", dim=IN)
    s = g.tensor(name="scale", dim=[1, IN[1], 1, 1])
    b = g.tensor(name="bias", dim=[1, IN[1], 1, 1])
    g.instancenorm(x, s, b, epsilon=EPS)[0].set_output(True)
    return g


def _instancenorm_backward():
    n, c, h, w = IN
    g = _graph("instancenorm_backward")
    dy = g.tensor(name="dy", dim=IN)
    x = g.tensor(name="x", dim=IN)
    s = g.tensor(name="scale", dim=[1, c, 1, 1])
    mean = g.tensor(name="mean", dim=[n, c, 1, 1], data_type="f32")
    inv = g.tensor(name="inv_variance", dim=[n, c, 1, 1], data_type="f32")
    for out in g.instancenorm_backward(dy, x, s, mean, inv, has_bias=True):
        out.set_output(True)
    return g


def _instance_stats(t, dy, x, s, mean, inv):
    xf = x.float()
    mean.copy_(xf.mean((2, 3), keepdim=True))
    inv.copy_(t.rsqrt(xf.var((2, 3), unbiased=False, keepdim=True) + EPS))


# The same instance and group norms of channels-last (NHWC) x, y, dy and dx,
# as cudnn-frontend's tests and samples give them, with [1, C, 1, 1]
# parameters in NHWC strides: read in place by column programs over (N, H*W,
# C) (dnnc/decompose/norm_channels_last.py). PyTorch's reference gets the
# tensors in the same strides (its channels-last kernels).

def _group_nhwc(kind, dims, backward):
    def build():
        n, c, h, w = dims
        g = _graph(f"{kind}_nhwc" + ("_backward" if backward else ""))
        nhwc, pstride = _nhwc(*dims), _nhwc(1, c, 1, 1)
        groups = GROUPS_GN if kind == "groupnorm" else c
        if backward:
            # dy first: the references and the statistics' init take (dy, x, ...).
            dy = g.tensor(name="dy", dim=dims, stride=nhwc)
            x = g.tensor(name="x", dim=dims, stride=nhwc)
            s = g.tensor(name="scale", dim=[1, c, 1, 1], stride=pstride)
            mean = g.tensor(name="mean", dim=[n, groups, 1, 1], data_type="f32")
            inv = g.tensor(name="inv_variance", dim=[n, groups, 1, 1], data_type="f32")
            if kind == "groupnorm":
                outs = g.groupnorm_backward(dy, x, groups, s, mean, inv, has_bias=True)
            else:
                outs = g.instancenorm_backward(dy, x, s, mean, inv, has_bias=True)
            outs[0].set_stride(nhwc)
            for out in outs:
                out.set_output(True)
            return g
        x = g.tensor(name="x", dim=dims, stride=nhwc)
        s = g.tensor(name="scale", dim=[1, c, 1, 1], stride=pstride)
        b = g.tensor(name="bias", dim=[1, c, 1, 1], stride=pstride)
        if kind == "groupnorm":
            y = g.groupnorm(x, groups, s, b, epsilon=EPS)[0]
        else:
            y = g.instancenorm(x, s, b, epsilon=EPS)[0]
        y.set_output(True).set_stride(nhwc)
        return g
    return build


def _group_stats_nhwc(t, dy, x, s, mean, inv):
    xf = x.float().permute(0, 2, 3, 1).reshape(GN[0], -1, GROUPS_GN, GN[1] // GROUPS_GN)
    mean.copy_(xf.mean((1, 3)).reshape(mean.shape))
    inv.copy_(t.rsqrt(xf.var((1, 3), unbiased=False) + EPS).reshape(inv.shape))


NX = 16384 * D                     # elements of a layernorm / rmsnorm x
BNX, GNX, INX = _numel(BN), _numel(GN), _numel(IN)

NORM = [
    Case("layernorm training (y, mean, inv_var) 16384x8192 bf16", _layernorm_training,
         lambda t, x, s, b: t.ops.aten.native_layer_norm(x, [D], s[0], b[0], EPS),
         7 * NX, 2 * NX * BF16 + 2 * D * BF16 + 2 * 16384 * F32, True, "norm"),
    Case("layernorm training [2048, 4096, 1, 1] bf16, f32 parameters (cudnn-frontend's form)",
         _frontend_norm("layernorm"), _frontend_norm_torch("layernorm"),
         7 * FE_ROWS * FE_HIDDEN,
         2 * FE_ROWS * FE_HIDDEN * BF16 + 2 * FE_HIDDEN * F32 + 2 * FE_ROWS * F32, True, "norm",
         torch_prepare=_frontend_norm_prepare),
    Case("rmsnorm training [2048, 4096, 1, 1] bf16, f32 scale (cudnn-frontend's form)",
         _frontend_norm("rmsnorm"), _frontend_norm_torch("rmsnorm"),
         4 * FE_ROWS * FE_HIDDEN,
         2 * FE_ROWS * FE_HIDDEN * BF16 + FE_HIDDEN * F32 + FE_ROWS * F32, True, "norm",
         torch_prepare=_frontend_norm_prepare),
    Case("layernorm backward 16384x8192 bf16", _layernorm_backward,
         # The bias argument only says that dbias is wanted (its shape and dtype).
         lambda t, dy, x, s, mean, inv: t.ops.aten.native_layer_norm_backward(
             dy, x, [D], mean, inv, s[0], s[0], [True, True, True]),
         11 * NX, 3 * NX * BF16 + 3 * D * BF16 + 2 * 16384 * F32, True, "norm",
         init=lambda t, dy, x, s, mean, inv: _row_stats(t, x, mean, inv)),
    Case("residual+layernorm (h, y) 16384x8192 bf16", _residual_norm("layernorm"),
         _residual_norm_torch("layernorm"), 8 * NX, 4 * NX * BF16 + 2 * D * BF16, True,
         "norm", compiled=True),
    Case("residual+layernorm (h, y*q as e4m3) 16384x8192 bf16", _residual_norm("layernorm", True),
         _residual_norm_torch("layernorm", True), 9 * NX, 3 * NX * BF16 + NX + 2 * D * BF16,
         True, "norm", compiled=True),
    Case("residual+rmsnorm (h, y) 16384x8192 bf16", _residual_norm("rmsnorm"),
         _residual_norm_torch("rmsnorm"), 5 * NX, 4 * NX * BF16 + D * BF16, True, "norm",
         compiled=True),
    Case("rmsnorm 16384x8192 bf16", _rmsnorm,
         lambda t, x, s: t.nn.functional.rms_norm(x, (D,), s[0], EPS),
         4 * NX, 2 * NX * BF16 + D * BF16, True, "norm"),
    Case("rmsnorm backward 16384x8192 bf16", _rmsnorm_backward,
         lambda t, dy, x, s, inv, y, x_, w_: t.autograd.grad(y, (x_, w_), dy,
                                                             retain_graph=True),
         8 * NX, 3 * NX * BF16 + 2 * D * BF16 + 16384 * F32, True, "norm",
         init=lambda t, dy, x, s, inv: _row_stats(t, x, inv_rms=inv),
         torch_prepare=_rmsnorm_backward_prepare),
    Case("batchnorm training 32x128x56x56 NHWC bf16", _batchnorm, _batchnorm_torch,
         7 * BNX, 2 * BNX * BF16 + 8 * BN[1] * F32, True, "norm", init=_positive_variance),
    Case("batchnorm inference 32x128x56x56 NHWC bf16", _batchnorm_inference,
         lambda t, x, s, b, mean, var: t.nn.functional.batch_norm(
             x, mean.view(-1), var.view(-1), s.view(-1), b.view(-1), training=False, eps=EPS),
         2 * BNX, 2 * BNX * BF16 + 4 * BN[1] * F32, True, "norm", init=_positive_variance),
    Case("batchnorm backward 32x128x56x56 NHWC bf16", _batchnorm_backward,
         lambda t, dy, x, s, mean, inv: t.ops.aten.native_batch_norm_backward(
             dy, x, s.view(-1), None, None, mean.view(-1), inv.view(-1), True, EPS,
             [True, True, True]),
         8 * BNX, 3 * BNX * BF16 + 5 * BN[1] * F32, True, "norm", init=_channel_stats),
    Case("groupnorm 32 groups 8x320x64x64 bf16", _groupnorm,
         lambda t, x, s, b: t.nn.functional.group_norm(x, GROUPS_GN, s.view(-1), b.view(-1),
                                                       EPS),
         7 * GNX, 2 * GNX * BF16 + 2 * GN[1] * BF16, True, "norm"),
    Case("groupnorm backward 32 groups 8x320x64x64 bf16", _groupnorm_backward,
         _autograd_backward, 11 * GNX,
         3 * GNX * BF16 + 3 * GN[1] * BF16 + 2 * GN[0] * GROUPS_GN * F32, True, "norm",
         init=_group_stats,
         torch_prepare=_norm_backward_prepare(
             lambda t, x, w, b: t.nn.functional.group_norm(x, GROUPS_GN, w, b, EPS))),
    Case("instancenorm 16x128x64x64 bf16", _instancenorm,
         lambda t, x, s, b: t.nn.functional.instance_norm(x, weight=s.view(-1),
                                                          bias=b.view(-1), eps=EPS),
         7 * INX, 2 * INX * BF16 + 2 * IN[1] * BF16, True, "norm"),
    Case("instancenorm backward 16x128x64x64 bf16", _instancenorm_backward,
         _autograd_backward, 11 * INX,
         3 * INX * BF16 + 3 * IN[1] * BF16 + 2 * IN[0] * IN[1] * F32, True, "norm",
         init=_instance_stats,
         torch_prepare=_norm_backward_prepare(
             lambda t, x, w, b: t.nn.functional.instance_norm(x, weight=w, bias=b, eps=EPS))),
    Case("groupnorm 32 groups 8x320x64x64 NHWC bf16", _group_nhwc("groupnorm", GN, False),
         lambda t, x, s, b: t.nn.functional.group_norm(x, GROUPS_GN, s.view(-1), b.view(-1),
                                                       EPS),
         7 * GNX, 2 * GNX * BF16 + 2 * GN[1] * BF16, True, "norm"),
    Case("groupnorm backward 32 groups 8x320x64x64 NHWC bf16",
         _group_nhwc("groupnorm", GN, True), _autograd_backward, 11 * GNX,
         3 * GNX * BF16 + 3 * GN[1] * BF16 + 2 * GN[0] * GROUPS_GN * F32, True, "norm",
         init=_group_stats_nhwc,
         torch_prepare=_norm_backward_prepare(
             lambda t, x, w, b: t.nn.functional.group_norm(x, GROUPS_GN, w, b, EPS))),
    Case("instancenorm 16x128x64x64 NHWC bf16", _group_nhwc("instancenorm", IN, False),
         lambda t, x, s, b: t.nn.functional.instance_norm(x, weight=s.view(-1),
                                                          bias=b.view(-1), eps=EPS),
         7 * INX, 2 * INX * BF16 + 2 * IN[1] * BF16, True, "norm"),
    Case("instancenorm backward 16x128x64x64 NHWC bf16", _group_nhwc("instancenorm", IN, True),
         _autograd_backward, 11 * INX,
         3 * INX * BF16 + 3 * IN[1] * BF16 + 2 * IN[0] * IN[1] * F32, True, "norm",
         init=_instance_stats,
         torch_prepare=_norm_backward_prepare(
             lambda t, x, w, b: t.nn.functional.instance_norm(x, weight=w, bias=b, eps=EPS))),
]


# ============================================================================
# Softmax and log-softmax, forward and backward, 16384x8192 along the rows
# ============================================================================


def _log_softmax():
    g = _graph("log_softmax")
    x = g.tensor(name="x", dim=[16384, 8192])
    g.log_softmax(x, axis=1).set_output(True)
    return g


def _softmax_backward(op):
    def build():
        g = _graph(op)
        dy = g.tensor(name="dy", dim=[16384, 8192])
        y = g.tensor(name="y", dim=[16384, 8192])
        getattr(g, op)(dy, y, axis=1).set_output(True)
        return g

    return build


def _forward_output(fn):
    """y = the forward's output for a random x."""
    def init(t, dy, y):
        y.copy_(getattr(t, fn)(y.float(), dim=1))

    return init


SOFTMAX = [
    Case("log_softmax 16384x8192 bf16", _log_softmax, lambda t, x: t.log_softmax(x, dim=1),
         4 * ROWS, 2 * MB, True, "softmax"),
    Case("softmax backward 16384x8192 bf16", _softmax_backward("softmax_backward"),
         lambda t, dy, y: t.ops.aten._softmax_backward_data(dy, y, 1, t.bfloat16),
         4 * ROWS, 3 * MB, True, "softmax", init=_forward_output("softmax")),
    Case("log_softmax backward 16384x8192 bf16", _softmax_backward("log_softmax_backward"),
         lambda t, dy, y: t.ops.aten._log_softmax_backward_data(dy, y, 1, t.bfloat16),
         4 * ROWS, 3 * MB, True, "softmax", init=_forward_output("log_softmax")),
]


# ============================================================================
# Row lengths: softmax, layernorm and rmsnorm forward over rows of 128 to
# 262144 at one total size, and tiny problems timed with their launch
# ============================================================================

SWEEP = 16384 * 8192                        # elements of x at every row length
SWEEP_LENGTHS = [1 << k for k in range(7, 19)]   # 128 .. 262144


def _rows(op, rows, n):
    """(build, torch_fn, flops, bytes) of ``op`` (softmax, layernorm or
    rmsnorm, forward, bf16) over ``rows`` rows of ``n``."""
    def build():
        g = _graph(f"{op}_{rows}x{n}")
        x = g.tensor(name="x", dim=[rows, n])
        if op == "softmax":
            y = g.softmax(x, axis=1)
        elif op == "layernorm":
            s = g.tensor(name="scale", dim=[1, n])
            y = g.layernorm(x, s, g.tensor(name="bias", dim=[1, n]), axis=1, epsilon=EPS)[0]
        else:
            y = g.rmsnorm(x, g.tensor(name="scale", dim=[1, n]), axis=1, epsilon=EPS)[0]
        y.set_output(True)
        return g

    torch_fn = {
        "softmax": lambda t, x: t.softmax(x, dim=1),
        "layernorm": lambda t, x, s, b: t.nn.functional.layer_norm(x, (n,), s[0], b[0], EPS),
        "rmsnorm": lambda t, x, s: t.nn.functional.rms_norm(x, (n,), s[0], EPS),
    }[op]
    params = {"softmax": 0, "layernorm": 2, "rmsnorm": 1}[op]
    flops = {"softmax": 4, "layernorm": 7, "rmsnorm": 4}[op] * rows * n
    return build, torch_fn, flops, (2 * rows * n + params * n) * BF16


def _sweep_case(op, n):
    """One point of the row-length sweep: named ``<op> row sweep 2^KK RxN
    bf16`` (tools/plot-rows reads the op, R and N from it; KK sorts it)."""
    rows = SWEEP // n
    build, torch_fn, flops, size = _rows(op, rows, n)
    return Case(f"{op} row sweep 2^{n.bit_length() - 1:02d} {rows}x{n} bf16", build, torch_fn,
                flops, size, True, "softmax" if op == "softmax" else "norm")


# Problems whose kernels take less than their launch: timed by the host's
# clock over back-to-back calls (bench/run.py), so the runtime's launch path
# counts as PyTorch's dispatch does.
TINY_SHAPES = [(1, 7), (8, 128), (64, 512), (256, 1024)]


def _tiny_case(op, rows, n):
    build, torch_fn, flops, size = _rows(op, rows, n)
    return Case(f"{op} tiny {rows}x{n} bf16", build, torch_fn, flops, size, True,
                "softmax" if op == "softmax" else "norm", host_timed=True)


ROW_LENGTHS = ([_sweep_case(op, n) for op in ("softmax", "layernorm", "rmsnorm")
                for n in SWEEP_LENGTHS]
               + [_tiny_case(op, rows, n) for op in ("softmax", "layernorm", "rmsnorm")
                  for rows, n in TINY_SHAPES])


# ============================================================================
# Pooling, NHWC
# ============================================================================

MP_X, MP_Y = [32, 64, 112, 112], [32, 64, 56, 56]   # max 3x3/2 pad 1 (ResNet stem)
AP_X, AP_Y = [32, 128, 56, 56], [32, 128, 28, 28]   # avg 2x2/2 (DenseNet transition)
# The pooling target's own problem: 128x64x112x112, 3x3/2 (205 MB read).
BIG_X, BIG_Y = [128, 64, 112, 112], [128, 64, 56, 56]


def _pool_big(mode):
    def build():
        g = _graph(f"{mode}pool_big")
        x = g.tensor(name="x", dim=BIG_X, stride=_nhwc(*BIG_X))
        y = g.pooling(x, mode, window=3, stride=2, padding=1, count_include_pad=True)
        y.set_output(True).set_stride(_nhwc(*BIG_Y))
        return g

    return build


def _maxpool_relu():
    """The stem's max pool with a relu after it: one kernel (the relu is the
    window program's epilogue)."""
    g = _graph("maxpool_relu")
    x = g.tensor(name="x", dim=MP_X, stride=_nhwc(*MP_X))
    y = g.relu(g.pooling(x, "max", window=3, stride=2, padding=1))
    y.set_output(True).set_stride(_nhwc(*MP_Y))
    return g


def _avgpool():
    g = _graph("avgpool")
    x = g.tensor(name="x", dim=AP_X, stride=_nhwc(*AP_X))
    y = g.pooling(x, "avg", window=2, stride=2)
    y.set_output(True).set_stride(_nhwc(*AP_Y))
    return g


def _pool_backward(mode, xs, ys, **attrs):
    def build():
        g = _graph(f"{mode}pool_backward")
        dy = g.tensor(name="dy", dim=ys, stride=_nhwc(*ys))
        x = g.tensor(name="x", dim=xs, stride=_nhwc(*xs))
        dx = g.pooling_backward(dy, x, mode, **attrs)
        dx.set_output(True).set_stride(_nhwc(*xs))
        return g

    return build


def _maxpool_indices(t, dy, x):
    return (t.nn.functional.max_pool2d(x, 3, 2, 1, return_indices=True)[1],)


POOLING = [
    Case("maxpool 3x3/2 128x64x112x112 NHWC bf16", _pool_big("max"),
         lambda t, x: t.nn.functional.max_pool2d(x, 3, 2, 1),
         9 * _numel(BIG_Y), (_numel(BIG_X) + _numel(BIG_Y)) * BF16, True, "pooling"),
    Case("avgpool 3x3/2 128x64x112x112 NHWC bf16", _pool_big("avg"),
         lambda t, x: t.nn.functional.avg_pool2d(x, 3, 2, 1),
         9 * _numel(BIG_Y), (_numel(BIG_X) + _numel(BIG_Y)) * BF16, True, "pooling"),
    Case("maxpool+relu 3x3/2 32x64x112x112 NHWC bf16", _maxpool_relu,
         lambda t, x: t.relu(t.nn.functional.max_pool2d(x, 3, 2, 1)),
         10 * _numel(MP_Y), (_numel(MP_X) + _numel(MP_Y)) * BF16, True, "pooling",
         compiled=True),
    Case("avgpool 2x2/2 32x128x56x56 NHWC bf16", _avgpool,
         lambda t, x: t.nn.functional.avg_pool2d(x, 2, 2),
         4 * _numel(AP_Y), (_numel(AP_X) + _numel(AP_Y)) * BF16, True, "pooling"),
    Case("maxpool backward 3x3/2 32x64x112x112 NHWC bf16",
         _pool_backward("max", MP_X, MP_Y, window=3, stride=2, padding=1),
         lambda t, dy, x, idx: t.ops.aten.max_pool2d_with_indices_backward(
             dy, x, [3, 3], [2, 2], [1, 1], [1, 1], False, idx),
         9 * _numel(MP_Y), (2 * _numel(MP_X) + _numel(MP_Y)) * BF16, True, "pooling",
         torch_prepare=_maxpool_indices),
    # Average pooling's gradient needs x's shape only: dy read, dx written.
    Case("avgpool backward 2x2/2 32x128x56x56 NHWC bf16",
         _pool_backward("avg", AP_X, AP_Y, window=2, stride=2),
         lambda t, dy, x: t.ops.aten.avg_pool2d_backward(dy, x, [2, 2], [2, 2], [0, 0], False,
                                                         True, None),
         _numel(AP_X), (_numel(AP_X) + _numel(AP_Y)) * BF16, True, "pooling"),
]


# ============================================================================
# Matmul: cuBLAS's job (moderate sizes: dnnc's kernels are naive today)
# ============================================================================

LIN = (4096, 2048, 2048)          # tokens, in features, out features
BMM = (64, 1024, 1024, 64)        # batch, m, n, k: q @ k^T of 4 x 16 heads


def _linear():
    """x @ W^T with W stored (out, in) row-major, as torch.nn.Linear keeps it."""
    m, k, n = LIN
    g = _graph("linear")
    x = g.tensor(name="x", dim=[m, k])
    w = g.tensor(name="w_t", dim=[k, n], stride=[1, k])
    g.matmul(x, w).set_output(True)
    return g


def _bmm():
    b, m, n, k = BMM
    g = _graph("bmm")
    q = g.tensor(name="q", dim=[b, m, k])
    kt = g.tensor(name="k_t", dim=[b, k, n], stride=[n * k, 1, k])
    g.matmul(q, kt).set_output(True)
    return g


def _gemm(m, n, k, dt="bf16", epilogue="", weight=False, transposed_a=False):
    """(build, torch_fn) of an M x N x K matmul, then ``epilogue``: "" (none),
    "bias_gelu" (gelu(a @ b + bias)) or "bias_residual_relu" (relu(a @ b +
    bias + r)) or "scales" ((a * s) @ (b * c): a scale per row of a and per
    column of b, as fp8 dequantization applies them; dnn-fold-operand-scales
    moves both into the epilogue), or a prologue: "relu_a" (relu(a) @ b),
    "cast_a" or "cast_b" (the operand stored f32, cast to ``dt`` for the
    multiply), which the GEMM applies to the operand's tiles as it loads
    them. ``dt`` "tf32" is f32 storage multiplied as tf32 (PyTorch with
    allow_tf32); ``weight``: B stored N x K (a linear layer's weight);
    ``transposed_a``: A stored K x M (the x of a weight gradient x^T @ dy).
    "bias_view_gelu" and "bias_view_residual" are a linear layer as ATen
    traces it: a @ b + bias viewed [8, M / 8, N] (addmm, then view), then
    gelu (tanh), or + r of that shape; dnn-sink-reshapes moves the view
    below them, so they join the GEMM's epilogue as "bias_gelu" does (time
    the two side by side)."""
    io, compute = ("f32", "tf32") if dt == "tf32" else (dt, "f32")

    def build():
        g = _graph(f"gemm_{m}x{n}x{k}_{dt}" + (f"_{epilogue}" if epilogue else "")
                   + ("_weight" if weight else "") + ("_at" if transposed_a else ""), io)
        a = g.tensor(name="a", dim=[m, k], stride=[1, m] if transposed_a else None,
                     data_type="f32" if epilogue == "cast_a" else None)
        b = g.tensor(name="b", dim=[k, n], stride=[1, k] if weight else None,
                     data_type="f32" if epilogue == "cast_b" else None)
        if epilogue == "cast_b":
            b = g.cast(b, dt)
        if epilogue == "relu_a":
            a = g.relu(a).set_data_type(dt)
        elif epilogue == "cast_a":
            a = g.cast(a, dt)
        if epilogue == "scales":
            a = g.cast(g.mul(a, g.tensor(name="s", dim=[m, 1], data_type="f32")), dt)
            b = g.cast(g.mul(b, g.tensor(name="c", dim=[1, n], data_type="f32")), dt)
        y = g.matmul(a, b, compute_data_type=compute)
        if epilogue in ("bias_gelu", "bias_residual_relu"):
            y = g.add(y, g.tensor(name="bias", dim=[1, n]))
        if epilogue.startswith("bias_view"):
            y = g.reshape(g.add(y, g.tensor(name="bias", dim=[n])), [8, m // 8, n])
        if epilogue == "bias_view_gelu":
            y = g.gelu(y, approximate="tanh")
        elif epilogue == "bias_view_residual":
            y = g.add(g.tensor(name="r", dim=[8, m // 8, n]), y)
        if epilogue == "bias_gelu":
            y = g.gelu(y)
        elif epilogue == "bias_residual_relu":
            y = g.relu(g.add(y, g.tensor(name="r", dim=[m, n])))
        y.set_output(True)
        return g

    def torch_fn(t, a, b, *rest):
        if compute == "tf32":
            allowed = t.backends.cuda.matmul.allow_tf32
            t.backends.cuda.matmul.allow_tf32 = True
            y = t.matmul(a, b)
            t.backends.cuda.matmul.allow_tf32 = allowed
        elif epilogue == "scales":
            y = t.matmul((a * rest[0]).to(a.dtype), (b * rest[1]).to(b.dtype))
        elif epilogue == "relu_a":
            y = t.matmul(t.relu(a), b)
        elif epilogue == "cast_a":
            y = t.matmul(a.to(b.dtype), b)
        elif epilogue == "cast_b":
            y = t.matmul(a, b.to(a.dtype))
        else:
            y = t.matmul(a, b)
        if epilogue == "bias_view_gelu":
            return t.nn.functional.gelu((y + rest[0]).view(8, m // 8, n), approximate="tanh")
        if epilogue == "bias_view_residual":
            return rest[1] + (y + rest[0]).view(8, m // 8, n)
        if epilogue == "bias_gelu":
            return t.nn.functional.gelu(y + rest[0])
        if epilogue == "bias_residual_relu":
            return t.relu(y + rest[0] + rest[1])
        return y
    return build, torch_fn


def _gemm_case(m, n, k, dt="bf16", epilogue="", label="", weight=False, transposed_a=False,
               config=None):
    build, torch_fn = _gemm(m, n, k, dt, epilogue, weight, transposed_a)
    size = 2 if dt in ("bf16", "f16") else 4
    extra = {"bias_gelu": n, "bias_residual_relu": n + m * n, "bias_view_gelu": n,
             "bias_view_residual": n + m * n,
             "scales": 2 * (m + n), "cast_a": m * k, "cast_b": k * n}.get(epilogue, 0)
    name = f"matmul {m}x{n}x{k} {dt}" + (f" +{epilogue.replace('_', '+')}" if epilogue else "") \
        + (f" ({label})" if label else "")
    return Case(name, build, torch_fn, 2 * m * n * k, (m * k + k * n + m * n + extra) * size,
                False, "matmul", compiled=bool(epilogue), config=config)


MATMUL = [
    _gemm_case(4096, 4096, 4096),
    _gemm_case(8192, 8192, 8192),
    _gemm_case(16384, 1024, 4096),
    _gemm_case(4096, 4096, 4096, "f16"),
    _gemm_case(4096, 4096, 4096, "tf32"),
    _gemm_case(4096, 4096, 4096, "tf32", label="B stored N x K", weight=True),
    # x^T @ dy, a linear layer's weight gradient: A stored K x M.
    _gemm_case(4096, 4096, 4096, label="A stored K x M", transposed_a=True),
    _gemm_case(4096, 4096, 4096, "tf32", label="A stored K x M", transposed_a=True),
    # tf32 with K split: B stored K x N read in place (the transposed product).
    _gemm_case(64, 4096, 4096, "tf32", label="skinny"),
    _gemm_case(256, 256, 65536, "tf32", label="large K"),
    # An LM head of an odd vocabulary, W stored K x N: rows of 100514 bytes,
    # which TMA cannot step by (W is copied transposed first).
    _gemm_case(4096, 50257, 768, label="N odd"),
    # The same with an aligned vocabulary: W read in place; 412 MB of output
    # for a K of 768, stored by TMA from shared memory.
    _gemm_case(4096, 50256, 768, label="LM head"),
    _gemm_case(64, 4096, 4096, label="skinny"),
    _gemm_case(256, 256, 65536, label="large K"),
    _gemm_case(512, 512, 32768, label="long K, K split in pairs of blocks"),
    _gemm_case(4096, 4096, 4096, epilogue="bias_gelu"),
    _gemm_case(4096, 4096, 4096, epilogue="bias_residual_relu"),
    _gemm_case(4096, 4096, 4096, epilogue="scales"),
    # GPT-2-small's MLP (8 x 1024 tokens) as ATen traces it, the view between
    # the GEMM and its epilogue; beside it the same GEMM's epilogue unviewed.
    _gemm_case(8192, 3072, 768, epilogue="bias_view_gelu", label="GPT-2 MLP"),
    _gemm_case(8192, 3072, 768, epilogue="bias_gelu", label="GPT-2 MLP"),
    _gemm_case(8192, 768, 3072, epilogue="bias_view_residual", label="GPT-2 MLP"),
    # ViT-Base's (8 x 197 tokens: M not a tile multiple).
    _gemm_case(1576, 3072, 768, epilogue="bias_view_gelu", label="ViT MLP"),
    # The same with the tail split (sm90/tail_split.py): 156 tiles of
    # 128x256 (1.18 waves), the last 24 split 2, 3 or 4 ways along K's 12
    # steps; and 4096^3, where it does not apply (116 tail tiles for 16
    # idle blocks: the same kernel, which must not be slower).
    *(_gemm_case(1576, 3072, 768, epilogue="bias_view_gelu", label=f"ViT MLP, tail split {s}",
                 config=f"*=tail_split:{s}") for s in (2, 3, 4)),
    _gemm_case(4096, 4096, 4096, label="tail split 2", config="*=tail_split:2"),
    _gemm_case(4096, 1024, 4096, epilogue="relu_a"),
    _gemm_case(4096, 1024, 4096, epilogue="cast_a"),
    _gemm_case(64, 4096, 4096, epilogue="cast_b", label="skinny, f32 weight"),
    _gemm_case(4096, 4096, 4096, epilogue="relu_a", label="too wide to fuse"),
    Case("matmul x@W^T (linear) 4096x2048x2048 bf16", _linear,
         lambda t, x, w: t.matmul(x, w), 2 * LIN[0] * LIN[1] * LIN[2],
         (LIN[0] * LIN[1] + LIN[1] * LIN[2] + LIN[0] * LIN[2]) * BF16, False, "matmul"),
    Case("bmm q@k^T 64x1024x1024x64 bf16", _bmm,
         lambda t, q, k: t.matmul(q, k), 2 * BMM[0] * BMM[1] * BMM[2] * BMM[3],
         BMM[0] * (BMM[1] * BMM[3] + BMM[3] * BMM[2] + BMM[1] * BMM[2]) * BF16, False, "matmul"),
]


# ----------------------------------------------------------------------------
# fp8 GEMMs (tc-sm90's wgmma fp8 form) against torch._scaled_mm (cuBLASLt)
# ----------------------------------------------------------------------------


def _fp8_gemm(m, n, k, out="bf16"):
    """e4m3 x e4m3 with per-tensor descales, as cuBLASLt's fp8 GEMM takes
    them: B stored N x K (column-major, which _scaled_mm requires), scales
    as f32 scalars, y = (a @ b) * s_a * s_b in ``out``."""
    def build():
        g = _graph(f"fp8_gemm_{m}x{n}x{k}_{out}", "f32")
        a = g.tensor(name="a", dim=[m, k], data_type="f8E4M3FN")
        b = g.tensor(name="b", dim=[k, n], stride=[1, k], data_type="f8E4M3FN")
        sa = g.tensor(name="sa", dim=[])
        sb = g.tensor(name="sb", dim=[])
        g.cast(g.mul(g.mul(g.matmul(a, b), sa), sb), out).set_output(True)
        return g

    def scaled_mm(fast):
        def fn(t, a, b, sa, sb):
            dtype = {"bf16": t.bfloat16, "f16": t.float16, "f32": t.float32}[out]
            return t._scaled_mm(a, b, scale_a=sa, scale_b=sb, out_dtype=dtype,
                                use_fast_accum=fast)
        return fn

    size = {"bf16": 2, "f16": 2, "f32": 4}[out]
    # The reference is _scaled_mm's default (cuBLASLt adds wgmma's partial
    # sums into f32 at intervals); "fast_accum" is its mode that, as dnnc's
    # kernel does, accumulates in the wgmma accumulators throughout.
    return Case(f"matmul {m}x{n}x{k} fp8 e4m3 +scales -> {out} (vs torch._scaled_mm)", build,
                scaled_mm(False), 2 * m * n * k, m * k + k * n + m * n * size + 8, False,
                "matmul", others={"fast_accum": scaled_mm(True)})


def _fp8_block_scaled_gemm(m, n, k, out="bf16", variant=None):
    """e4m3 x e4m3 with DeepSeek-V3's block scales (dnn.matmul_block_scaled):
    A's one per row and 128-wide K block, B's one per 128 x 128 block, B
    stored N x K. The reference is torch._scaled_mm's blockwise form
    (cuBLASLt, sm_90: torch 2.11 takes 1x128 scales of A and 128x128 of B,
    both stored outer-dim-major, which ``torch_prepare`` lays out untimed).
    The scales are powers of two in 2^-8 .. 2^8 (``init``). ``variant``: a
    config override's fields (BLOCK_SCALED_VARIANTS), named in the case's
    name; None: the heuristics' kernel."""
    kb, nb = -(-k // 128), -(-n // 128)

    def build():
        g = _graph(f"fp8_block_scaled_gemm_{m}x{n}x{k}_{out}", "f32")
        a = g.tensor(name="a", dim=[m, k], data_type="f8E4M3FN")
        b = g.tensor(name="b", dim=[k, n], stride=[1, k], data_type="f8E4M3FN")
        sa = g.tensor(name="sa", dim=[m, kb])
        sb = g.tensor(name="sb", dim=[kb, nb])
        g.cast(g.matmul_block_scaled(a, b, sa, sb), out).set_output(True)
        return g

    def init(t, a, b, sa, sb):
        for s in (sa, sb):
            s.copy_(t.exp2(t.randint(-8, 9, s.shape, device=s.device).float()))

    def prepare(t, a, b, sa, sb):
        return sa.t().contiguous().t(), sb.t().contiguous().t()

    def scaled_mm(t, a, b, sa, sb, sa_outer, sb_outer):
        dtype = {"bf16": t.bfloat16, "f16": t.float16, "f32": t.float32}[out]
        return t._scaled_mm(a, b, scale_a=sa_outer, scale_b=sb_outer, out_dtype=dtype)

    size = {"bf16": 2, "f16": 2, "f32": 4}[out]
    return Case(f"matmul {m}x{n}x{k} fp8 e4m3 block-scaled 1x128/128x128 -> {out} "
                "(vs torch._scaled_mm blockwise)" + (f" {variant}" if variant else ""), build,
                scaled_mm, 2 * m * n * k,
                m * k + k * n + m * n * size + 4 * (m * kb + kb * nb), False, "matmul",
                init=init, torch_prepare=prepare,
                config=f"*={variant}" if variant else None)


# The block-scaled kernel's loops (sm90/block_scales.py), to time beside the
# heuristics' (groups of 4 K steps, two temporaries): each step whole (the
# kernel before groups), groups of 2 and 8, and 128 x 256 tiles (each step
# in two halves of 128 columns, whole).
BLOCK_SCALED_VARIANTS = ("promote_overlap:0", "promote_overlap:2", "promote_overlap:8",
                         "tile:128x256x128,stages:4,promote_overlap:0")
FP8_SHAPES = [(4096, 4096, 4096), (8192, 7168, 2048), (8192, 8192, 8192)]

# Per-tensor and block-scaled at 4096^3, DeepSeek-V3's 8192 x 7168 x 2048 (a
# projection's M x N x K) and 8192^3: issue 33 sets block-scaled at 0.9x or
# more of the per-tensor kernel's speed.
MATMUL_FP8 = [_fp8_gemm(*shape) for shape in FP8_SHAPES] + \
    [_fp8_block_scaled_gemm(*shape, variant=v) for shape in FP8_SHAPES
     for v in (None,) + BLOCK_SCALED_VARIANTS]


# ============================================================================
# Matmuls of any alignment (issue 33): odd K, N, M; transposed operands;
# broadcast batches; the issue's slow cases and a fixed-seed random set
# ============================================================================


def _swapped(dims):
    """Strides of ``dims`` stored with its last two dims swapped (A stored
    K x M, B stored N x K)."""
    *lead, r, c = dims
    strides, size = [], r * c
    for d in reversed(lead):
        strides.insert(0, size)
        size *= d
    return strides + [1, r]


def _mm_case(label, dt, a_dims, b_dims, a_swapped=False, b_swapped=False, config=None,
             suffix=""):
    """A matmul of ``a_dims`` by ``b_dims`` (logical dims: [batch...,] M x K
    and K x N, batches broadcast as torch.matmul does), ``dt`` "bf16",
    "f16" or "tf32" (f32 storage multiplied as tf32, PyTorch with
    allow_tf32), A or B stored with its last two dims swapped; ``config``
    an override (a twin timing another plan), named by ``suffix``."""
    io, compute = ("f32", "tf32") if dt == "tf32" else (dt, "f32")
    m, k, n = a_dims[-2], a_dims[-1], b_dims[-1]
    lead = [max(x, y) for x, y in zip([1] * (len(b_dims) - len(a_dims)) + a_dims[:-2],
                                      [1] * (len(a_dims) - len(b_dims)) + b_dims[:-2])]
    batch = _numel(lead)
    tag = "x".join(map(str, a_dims)) + ("T" if a_swapped else "") + "_" + \
        "x".join(map(str, b_dims)) + ("T" if b_swapped else "")

    def build():
        g = _graph(f"mm_{tag}_{dt}", io)
        a = g.tensor(name="a", dim=a_dims, stride=_swapped(a_dims) if a_swapped else None)
        b = g.tensor(name="b", dim=b_dims, stride=_swapped(b_dims) if b_swapped else None)
        g.matmul(a, b, compute_data_type=compute).set_output(True)
        return g

    def torch_fn(t, a, b):
        if compute != "tf32":
            return t.matmul(a, b)
        allowed = t.backends.cuda.matmul.allow_tf32
        t.backends.cuda.matmul.allow_tf32 = True
        y = t.matmul(a, b)
        t.backends.cuda.matmul.allow_tf32 = allowed
        return y

    size = 4 if dt == "tf32" else 2
    name = (f"matmul {'[' + ', '.join(map(str, a_dims)) + ']'}{'^T' if a_swapped else ''} @ "
            f"{'[' + ', '.join(map(str, b_dims)) + ']'}{'^T' if b_swapped else ''} {dt} "
            f"({label})" + suffix)
    return Case(name, build, torch_fn, 2 * batch * m * n * k,
                (_numel(a_dims) + _numel(b_dims) + batch * m * n) * size, False, "matmul",
                config=config)


def _random_matmuls(count=21, seed=33):
    """``count`` matmuls drawn with a fixed seed, as issue 33 drew them:
    M, N, K each odd (any size) or aligned (a multiple of 64) at even odds,
    log-uniform over 1..4096; bf16, f16 or f32 multiplied as tf32 (exact
    f32 is another strategy's); A stored K x M or B stored N x K a quarter
    of the time each; a third batched (2 to 8), then a quarter of those with
    A broadcast over the batch."""
    import random

    rng = random.Random(seed)

    def size():
        x = max(1, round(math.exp(rng.uniform(0, math.log(4096)))))
        if rng.random() < 0.5:
            return max(64, x // 64 * 64)
        return x | 1
    out = []
    for i in range(count):
        m, n, k = size(), size(), size()
        dt = rng.choice(("bf16", "f16", "tf32"))
        a_swapped, b_swapped = rng.random() < 0.25, rng.random() < 0.25
        a_dims, b_dims = [m, k], [k, n]
        if rng.random() < 1 / 3:
            batch = rng.randint(2, 8)
            b_dims = [batch] + b_dims
            a_dims = ([1] if rng.random() < 0.25 else [batch]) + a_dims
            # Keep a batch's work within reach of a quick benchmark.
            while _numel(a_dims[1:]) + _numel(b_dims[1:]) > 1 << 23 and max(m, n, k) > 64:
                m, n, k = max(1, m // 2), max(1, n // 2), max(1, k // 2)
                a_dims[-2:], b_dims[-2:] = [m, k], [k, n]
        out.append(_mm_case(f"random {i + 1} of {count}", dt, a_dims, b_dims, a_swapped,
                            b_swapped))
    return out


MATMUL_ALIGN = [
    # The issue's five slow cases (the f32 ones multiplied as tf32 here:
    # exact f32 is the SIMT GEMM's).
    _mm_case("issue 33", "tf32", [129, 1000], [1000, 1000], a_swapped=True),
    _mm_case("issue 33", "tf32", [2, 1, 129], [2, 129, 127]),
    _mm_case("issue 33", "bf16", [3, 1, 127], [3, 127, 1000], a_swapped=True),
    _mm_case("issue 33", "f16", [1000, 129], [129, 129]),
    # Twins of it on other tc-sm80 grids (48 blocks of 64 x 64 by default):
    # 96 blocks of 32 x 64 (2 warps), 80 of 64 x 32, 160 of 32 x 32 (one
    # warp), 64 x 64 with K split 2 ways (a second launch sums).
    *(_mm_case("issue 33", "f16", [1000, 129], [129, 129],
               config=f"*=strategy:tc-sm80,{c}", suffix=f" tc-sm80 {label}")
      for label, c in (("32x64", "tile:32x64x32,block:64,stages:4"),
                       ("64x32", "tile:64x32x32,block:64,stages:4"),
                       ("32x32", "tile:32x32x32,block:32,stages:4"),
                       ("64x64 split 2", "tile:64x64x32,block:128,stages:4,split:2"))),
    _mm_case("issue 33", "tf32", [1, 127, 4096], [2, 4096, 7], b_swapped=True),
    # Twins of those simt-gemv now takes (M or N <= 8), on the tensor-core
    # plans they had, for an A/B in one run.
    _mm_case("issue 33", "tf32", [2, 1, 129], [2, 129, 127], config="*=strategy:tc-sm90",
             suffix=" tensor cores"),
    _mm_case("issue 33", "bf16", [3, 1, 127], [3, 127, 1000], a_swapped=True,
             config="*=strategy:tc-sm90", suffix=" tensor cores"),
    _mm_case("issue 33", "tf32", [1, 127, 4096], [2, 4096, 7], b_swapped=True,
             config="*=strategy:tc-sm90", suffix=" tensor cores"),
    # Odd K or N of 127, 129, 1000, 4095, 50257 (bf16 / f16).
    _mm_case("odd K", "f16", [4096, 4095], [4095, 4096]),
    _mm_case("odd K", "bf16", [4096, 127], [127, 4096]),
    _mm_case("odd N", "bf16", [4096, 1024], [1024, 129]),
    _mm_case("odd K and N", "f16", [2048, 1000], [1000, 1001]),
    _mm_case("odd K, N = 50257", "bf16", [4096, 767], [767, 50257]),
    *_random_matmuls(),
    # Tiny and skinny problems (issue 33's second bullet): M or N <= 16 (a
    # weight read once: memory-bound) and batches of small matrices.
    _mm_case("M = 1", "bf16", [1, 4096], [4096, 4096]),
    # The GEMV on it (ranked after tc-sm90 for a 32 MiB weight).
    _mm_case("M = 1", "bf16", [1, 4096], [4096, 4096], config="*=strategy:simt-gemv",
             suffix=" simt-gemv"),
    _mm_case("M = 8", "bf16", [8, 4096], [4096, 4096]),
    _mm_case("M = 8", "bf16", [8, 4096], [4096, 4096], config="*=strategy:simt-gemv",
             suffix=" simt-gemv"),
    _mm_case("M = 16", "bf16", [16, 4096], [4096, 4096]),
    _mm_case("M = 16, odd K", "f16", [16, 4095], [4095, 4096]),
    _mm_case("N = 16", "bf16", [4096, 4096], [4096, 16]),
    _mm_case("batched small", "bf16", [512, 32, 32], [512, 32, 32]),
    _mm_case("batched small", "f16", [256, 64, 64], [256, 64, 64]),
]


# ============================================================================
# Exact f32 matmuls (simt-gemm's FFMA kernel) against cuBLAS's SGEMM
# ============================================================================


def _sgemm(name, a_dims, b_dims, a_stride=None, b_stride=None, epilogue=""):
    """(build, torch_fn) of an f32 matmul multiplied exactly in f32 (the
    default compute type of an f32 matmul), operands stored with the given
    strides (a transposed operand read as it lies); ``epilogue`` "" or
    "bias_gelu". PyTorch multiplies exactly too: allow_tf32 off for the
    call (its default), so cuBLAS runs SGEMM."""
    def build():
        g = _graph(name, "f32")
        a = g.tensor(name="a", dim=a_dims, stride=a_stride)
        b = g.tensor(name="b", dim=b_dims, stride=b_stride)
        y = g.matmul(a, b)
        if epilogue == "bias_gelu":
            y = g.gelu(g.add(y, g.tensor(name="bias", dim=[1, b_dims[-1]])))
        y.set_output(True)
        return g

    def torch_fn(t, a, b, *rest):
        allowed = t.backends.cuda.matmul.allow_tf32
        t.backends.cuda.matmul.allow_tf32 = False
        y = t.matmul(a, b)
        t.backends.cuda.matmul.allow_tf32 = allowed
        if epilogue == "bias_gelu":
            return t.nn.functional.gelu(y + rest[0])
        return y
    return build, torch_fn


def _sgemm_case(label, a_dims, b_dims, a_stride=None, b_stride=None, epilogue="",
                config=None, suffix=""):
    symbol = "".join(c if c.isalnum() else "_" for c in label)
    build, torch_fn = _sgemm(f"sgemm_{symbol}", a_dims, b_dims, a_stride, b_stride, epilogue)
    m, k, n = a_dims[-2], a_dims[-1], b_dims[-1]
    batch = max(math.prod(a_dims[:-2]), math.prod(b_dims[:-2]))
    elements = math.prod(a_dims) + math.prod(b_dims) + batch * m * n + \
        (n if epilogue else 0)
    return Case(f"matmul {label} f32 exact" + (f" +{epilogue.replace('_', '+')}" if epilogue
                                                else "") + suffix,
                build, torch_fn, 2 * batch * m * n * k, elements * 4, False, "matmul",
                compiled=bool(epilogue), config=config)


SGEMM = [
    _sgemm_case("4096x4096x4096", [4096, 4096], [4096, 4096]),
    _sgemm_case("4096x4096x4096 B stored N x K", [4096, 4096], [4096, 4096],
                b_stride=[1, 4096]),
    _sgemm_case("4096x4096x4096", [4096, 4096], [4096, 4096], epilogue="bias_gelu"),
    # Issue 33's odd shapes: [129, 1000]^T @ [1000, 1000] (A stored K x M),
    # a batch of single rows, a broadcast A against B stored [2, 7, 4096].
    _sgemm_case("[129,1000]^T@[1000,1000]", [129, 1000], [1000, 1000], a_stride=[1, 129]),
    _sgemm_case("[2,1,129]@[2,129,127]", [2, 1, 129], [2, 129, 127]),
    _sgemm_case("[1,127,4096]@[2,4096,7]^T", [1, 127, 4096], [2, 4096, 7],
                b_stride=[7 * 4096, 1, 4096]),
    _sgemm_case("1000x1000x1000", [1000, 1000], [1000, 1000]),
    # Other grids for 1000³ (256 blocks of 64 x 64 by default): 128 x 128
    # and 128 x 64 tiles with K split 2 ways, summed by the last block to
    # arrive (128 and 256 blocks).
    _sgemm_case("1000x1000x1000", [1000, 1000], [1000, 1000],
                config="*=tile:128x128x8,block:256,split:2", suffix=" 128x128 split 2"),
    _sgemm_case("1000x1000x1000", [1000, 1000], [1000, 1000],
                config="*=tile:128x64x8,block:128,split:2", suffix=" 128x64 split 2"),
    # [129, 1000]ᵀ @ [1000, 1000]: its 3 splits summed by a second launch,
    # as before the last-arrival sum.
    _sgemm_case("[129,1000]^T@[1000,1000]", [129, 1000], [1000, 1000], a_stride=[1, 129],
                config="*=staged:1", suffix=" second launch"),
    # simt-gemv takes M or N <= 8 now: the simt-gemm plans they had, beside.
    _sgemm_case("[2,1,129]@[2,129,127]", [2, 1, 129], [2, 129, 127],
                config="*=strategy:simt-gemm", suffix=" simt-gemm"),
    _sgemm_case("[1,127,4096]@[2,4096,7]^T", [1, 127, 4096], [2, 4096, 7],
                b_stride=[7 * 4096, 1, 4096], config="*=strategy:simt-gemm",
                suffix=" simt-gemm"),
    _sgemm_case("[1,4096]@[4096,4096]", [1, 4096], [4096, 4096]),
    _sgemm_case("[1,4096]@[4096,4096]", [1, 4096], [4096, 4096],
                config="*=strategy:simt-gemm", suffix=" simt-gemm"),
]


# ============================================================================
# Convolution: fprop, dgrad, wgrad (cuDNN's job), NHWC / KRSC
# ============================================================================

C1X, C1W, C1Y = [32, 256, 56, 56], [64, 256, 1, 1], [32, 64, 56, 56]  # 1x1, 256->64
CG = [16, 128, 28, 28]   # 3x3 pad 1, 128->128: x and y
CGW = [128, 128, 3, 3]
CG_FLOPS = 2 * 16 * 128 * 28 * 28 * 128 * 9


def _conv1x1():
    g = _graph("conv1x1")
    x = g.tensor(name="x", dim=C1X, stride=_nhwc(*C1X))
    w = g.tensor(name="w", dim=C1W, stride=_nhwc(*C1W))
    g.conv_fprop(x, w).set_output(True).set_stride(_nhwc(*C1Y))
    return g


def _dgrad():
    g = _graph("conv_dgrad")
    dy = g.tensor(name="dy", dim=CG, stride=_nhwc(*CG))
    w = g.tensor(name="w", dim=CGW, stride=_nhwc(*CGW))
    g.conv_dgrad(dy, w, CG, padding=1).set_output(True).set_stride(_nhwc(*CG))
    return g


def _wgrad():
    g = _graph("conv_wgrad")
    x = g.tensor(name="x", dim=CG, stride=_nhwc(*CG))
    dy = g.tensor(name="dy", dim=CG, stride=_nhwc(*CG))
    g.conv_wgrad(x, dy, CGW, padding=1).set_output(True).set_stride(_nhwc(*CGW))
    return g


CONV = [
    Case("conv 1x1 32x256x56x56 ->64 NHWC bf16", _conv1x1,
         lambda t, x, w: t.nn.functional.conv2d(x, w),
         2 * _numel(C1Y) * 256, (_numel(C1X) + _numel(C1W) + _numel(C1Y)) * BF16, False, "conv"),
    Case("conv dgrad 3x3 16x128x28x28 NHWC bf16", _dgrad,
         lambda t, dy, w: t.nn.grad.conv2d_input(CG, w, dy, padding=1),
         CG_FLOPS, (2 * _numel(CG) + _numel(CGW)) * BF16, False, "conv"),
    Case("conv wgrad 3x3 16x128x28x28 NHWC bf16", _wgrad,
         lambda t, x, dy: t.nn.grad.conv2d_weight(x, CGW, dy, padding=1),
         CG_FLOPS, (2 * _numel(CG) + _numel(CGW)) * BF16, False, "conv"),
]


# ============================================================================
# Attention backward
# ============================================================================

ATT = [4, 16, 1024, 64]  # B, H, S, D, as the forward case
ATTN = _numel(ATT)


def _sdpa_backward():
    b, h, s, d = ATT
    g = _graph("sdpa_backward")
    q, k, v, o, do = (g.tensor(name=n, dim=ATT) for n in ("q", "k", "v", "o", "do"))
    stats = g.tensor(name="stats", dim=[b, h, s, 1], data_type="f32")
    for out in g.sdpa_backward(q, k, v, o, do, stats, use_causal_mask=True):
        out.set_output(True)
    return g


def _sdpa_forward_saved(t, q, k, v, o, do, stats):
    """o and stats (logsumexp of the scaled, masked scores) of q, k, v."""
    s = t.matmul(q.float(), k.float().transpose(-1, -2)) / math.sqrt(ATT[3])
    upper = t.ones(ATT[2], ATT[2], dtype=t.bool, device=q.device).triu(1)
    s.masked_fill_(upper, float("-inf"))
    stats.copy_(t.logsumexp(s, -1, keepdim=True))
    o.copy_(t.matmul(t.softmax(s, -1), v.float()))


def _sdpa_backward_prepare(t, q, k, v, o, do, stats):
    leaves = [x.detach().requires_grad_() for x in (q, k, v)]
    out = t.nn.functional.scaled_dot_product_attention(*leaves, is_causal=True)
    return (out, *leaves)


ATTENTION = [
    # Five matmuls (s recomputed, dv, dp, dq, dk), half of each under the causal mask.
    Case("sdpa backward causal B4 H16 S1024 D64 bf16", _sdpa_backward,
         lambda t, q, k, v, o, do, stats, out, *leaves: t.autograd.grad(out, leaves, do,
                                                                        retain_graph=True),
         5 * 2 * ATT[0] * ATT[1] * ATT[2] * ATT[2] * ATT[3] / 2,
         8 * ATTN * BF16 + ATTN // ATT[3] * F32, False, "attention",
         init=_sdpa_forward_saved, torch_prepare=_sdpa_backward_prepare),
]


# ============================================================================
# Attention forward: the issue's performance table, against cuDNN
# ============================================================================
#
# [B, H, S, D] row-major q, k and v (k and v with fewer heads under GQA),
# bf16 unless named. PyTorch's side is pinned to cuDNN attention, the
# target, with sdpa_kernel (PyTorch's own choice may change between
# releases and shapes); its flash backend is timed beside it ("flash").

def _sdpa_forward(b, h, hk, s, d, causal, dt):
    def build():
        g = _graph(f"sdpa_b{b}_h{h}_kv{hk}_s{s}_d{d}_{dt}" + ("_causal" if causal else ""), dt)
        q = g.tensor(name="q", dim=[b, h, s, d])
        k = g.tensor(name="k", dim=[b, hk, s, d])
        v = g.tensor(name="v", dim=[b, hk, s, d])
        g.sdpa(q, k, v, use_causal_mask=causal)[0].set_output(True)
        return g

    return build


def _sdpa_on(backend, causal, gqa):
    """F.scaled_dot_product_attention restricted to one SDPBackend: it
    raises where that backend refuses the problem."""
    def torch_fn(t, q, k, v):
        # enable_gqa only where needed: older PyTorch lacks the argument.
        gqa_arg = {"enable_gqa": True} if gqa else {}
        with t.nn.attention.sdpa_kernel(getattr(t.nn.attention.SDPBackend, backend)):
            return t.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal,
                                                                **gqa_arg)

    return torch_fn


def _sdpa_case(b, h, s, d, causal=False, hk=None, dt="bf16", strategy=None, config=None,
               suffix=""):
    """The sdpa forward case; ``strategy`` (with its ``config`` override)
    names a strategy forced on whatever GPU runs it, in the name too;
    ``suffix`` names another ``config``."""
    hk = hk or h
    heads = f"GQA H{h} KV{hk}" if hk != h else f"H{h}"
    name = f"sdpa{' causal' if causal else ''} B{b} {heads} S{s} D{d} {dt}" + \
        (f" {strategy}" if strategy else "") + suffix
    # Two matmuls (QK^T, PV) of 2 FLOPs per multiply-add; causal: half.
    flops = 4 * b * h * s * s * d / (2 if causal else 1)
    size = (2 * b * h * s * d + 2 * b * hk * s * d) * BF16  # q, o; k, v (f16: 2 bytes too)
    return Case(name, _sdpa_forward(b, h, hk, s, d, causal, dt),
                _sdpa_on("CUDNN_ATTENTION", causal, hk != h), flops, size, False, "attention",
                others={"flash": _sdpa_on("FLASH_ATTENTION", causal, hk != h)}, config=config)


ATTENTION_FORWARD = [
    _sdpa_case(b, h, s, d, causal, hk, dt)
    for b, h, s, d, hk, dt in [
        (4, 16, 4096, 128, None, "bf16"),
        (4, 16, 4096, 64, None, "bf16"),
        (4, 16, 4096, 256, None, "bf16"),
        # B x S kept at 16384 tokens.
        (16, 16, 1024, 128, None, "bf16"),
        (8, 16, 2048, 128, None, "bf16"),
        (2, 16, 8192, 128, None, "bf16"),
        (1, 16, 16384, 128, None, "bf16"),
        # GQA: 64 query heads share 8 kv heads.
        (1, 64, 8192, 128, 8, "bf16"),
        (1, 64, 16384, 128, 8, "bf16"),
    ]
    for causal in (False, True)
] + [_sdpa_case(4, 16, 4096, 128, dt="f16")] + [
    # The Ampere kernel (mma.sync, cp.async: sm80/flash.py) on whatever GPU
    # runs it, with the tile its heuristics give these problems on sm_80.
    _sdpa_case(4, 16, 4096, d, causal, strategy="tc-sm80",
               config=f"*=strategy:tc-sm80,tile:128x{n},stages:2,block:128")
    for d, causal, n in ((128, False, 32), (128, True, 32), (64, False, 64))
] + [
    # The persistent forward (sm90/flash_scheduler.py: a block an SM taking
    # query tiles, causal pairs of equal work) and a block a tile, each
    # forced by the config override whatever the heuristics choose (they
    # choose persistent up to Skv 1024), beside the case of the same graph,
    # for A/B timing in one run: the short-tile problems it is for (the
    # causal S1024 D64 one beside the original set's case) and longer ones.
    _sdpa_case(b, h, s, d, causal, hk, config=f"*=persistent:{persistent}", suffix=suffix)
    for b, h, s, d, hk, causals in [(4, 16, 1024, 64, None, (True,)),
                                    (16, 16, 1024, 128, None, (False, True)),
                                    (8, 16, 2048, 128, None, (False, True)),
                                    (4, 16, 4096, 128, None, (False, True)),
                                    (1, 64, 8192, 128, 8, (True,))]
    for causal in causals
    for persistent, suffix in ((1, " persistent"), (0, " block-a-tile"))
]


# Attention written the PyTorch way, as GPT-2's block does it (B8 H12 S1024
# D64, causal): q, k and v split from one [B x S, 3 x H x D] projection,
# each viewed [B, S, H, D] and transposed, o transposed back and viewed [B x
# S, H x D]. dnnc reads q, k and v in the projection and writes o in place
# (dnn-slice-views, dnn-transpose-views: one kernel); PyTorch runs the same
# code (its reshape of o a copy).

def _sdpa_qkv(b, h, s, d, causal, dt):
    def build():
        import dnnc

        g = dnnc.Graph(name=f"sdpa_qkv_b{b}_h{h}_s{s}_d{d}_{dt}" + ("_causal" if causal else ""),
                       io_data_type=dt, intermediate_data_type=dt)
        c = h * d
        qkv = g.tensor(name="qkv", dim=[b * s, 3 * c])
        q, k, v = (g.transpose(g.reshape(g.slice(qkv, [slice(None), slice(i * c, (i + 1) * c)]),
                                         [b, s, h, d]), [0, 2, 1, 3]) for i in range(3))
        o = g.sdpa(q, k, v, use_causal_mask=causal)[0]
        g.reshape(g.transpose(o, [0, 2, 1, 3]), [b * s, c]).set_output(True)
        return g

    return build


def _sdpa_qkv_torch(b, h, s, d, causal):
    def torch_fn(t, qkv):
        q, k, v = qkv.split(h * d, dim=1)
        q, k, v = (z.view(b, s, h, d).transpose(1, 2) for z in (q, k, v))
        o = t.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
        return o.transpose(1, 2).reshape(b * s, h * d)

    return torch_fn


ATTENTION_QKV = [
    Case(f"sdpa qkv-split{' causal' if causal else ''} B{b} H{h} S{s} D{d} bf16",
         _sdpa_qkv(b, h, s, d, causal, "bf16"), _sdpa_qkv_torch(b, h, s, d, causal),
         4 * b * h * s * s * d / (2 if causal else 1), 4 * b * s * h * d * BF16, False,
         "attention")
    for b, h, s, d, causal in [(8, 12, 1024, 64, True), (4, 16, 2048, 128, False)]
]


# Decode: one query row a head against a long kv sequence, memory-bound (K
# and V read once is the floor); GQA with 4 query heads a kv head, and plain
# multi-head attention.

def _sdpa_decode(b, h, hk, skv, d):
    def build():
        g = _graph(f"sdpa_decode_b{b}_h{h}_kv{hk}_s{skv}_d{d}")
        q = g.tensor(name="q", dim=[b, h, 1, d])
        k = g.tensor(name="k", dim=[b, hk, skv, d])
        v = g.tensor(name="v", dim=[b, hk, skv, d])
        g.sdpa(q, k, v)[0].set_output(True)
        return g

    return build


def _sdpa_decode_case(b, h, hk, skv, d):
    heads = f"GQA H{h} KV{hk}" if hk != h else f"H{h}"
    flops = 4 * b * h * skv * d
    size = (2 * b * h * d + 2 * b * hk * skv * d) * BF16
    return Case(f"sdpa decode B{b} {heads} Skv{skv} D{d} bf16", _sdpa_decode(b, h, hk, skv, d),
                _sdpa_on("CUDNN_ATTENTION", False, hk != h), flops, size, True, "attention",
                others={"flash": _sdpa_on("FLASH_ATTENTION", False, hk != h)})


ATTENTION_DECODE = [
    _sdpa_decode_case(b, h, hk, skv, 128)
    for b, h, hk, skv in [(8, 32, 8, 8192), (4, 32, 8, 32768), (1, 32, 8, 131072),
                          (16, 16, 16, 8192)]
]


# Paged decode (cuDNN's paged attention): the decode steps above with K and V
# in a paged cache, pages of 64 rows placed by a random permutation (K's and
# V's apart), every sequence whole (seq_len_kv = Skv). PyTorch has no paged
# SDPA: its side gathers the pages into a contiguous cache untimed
# (torch_prepare) and times SDPA (cuDNN; FlashAttention beside) on that, so
# the ratio prices reading K and V through the page tables.

def _sdpa_paged_decode(b, h, hk, skv, d, page):
    slots = -(-skv // page)

    def build():
        g = _graph(f"sdpa_paged_decode_b{b}_h{h}_kv{hk}_s{skv}_d{d}_p{page}")
        q = g.tensor(name="q", dim=[b, h, 1, d])
        k = g.tensor(name="k_cache", dim=[b * slots, hk, page, d])
        v = g.tensor(name="v_cache", dim=[b * slots, hk, page, d])
        lq, lkv = (g.tensor(name=x, dim=[b, 1, 1, 1], data_type="int32")
                   for x in ("seq_len_q", "seq_len_kv"))
        kt, vt = (g.tensor(name=x, dim=[b, 1, slots, 1], data_type="int32")
                  for x in ("k_table", "v_table"))
        g.sdpa(q, k, v, use_padding_mask=True, seq_len_q=lq, seq_len_kv=lkv,
               paged_attention_k_table=kt, paged_attention_v_table=vt,
               paged_attention_max_seq_len_kv=skv)[0].set_output(True)
        return g

    def init(t, q, k, v, lq, lkv, kt, vt):
        lq.fill_(1)
        lkv.fill_(skv)
        for table in (kt, vt):
            table.copy_(t.randperm(b * slots, device=table.device).view(b, 1, slots, 1))

    def gather(t, q, k, v, lq, lkv, kt, vt):
        def contiguous(cache, table):
            pages = cache[table.view(b, slots).long()]  # B, T, Hk, page, D
            return pages.transpose(1, 2).reshape(b, hk, slots * page, d)[:, :, :skv]
        return contiguous(k, kt).contiguous(), contiguous(v, vt).contiguous()

    return build, init, gather


def _sdpa_on_gathered(backend, gqa):
    """SDPA on the contiguous K and V torch_prepare gathered."""
    sdpa = _sdpa_on(backend, False, gqa)

    def torch_fn(t, q, k, v, lq, lkv, kt, vt, k_full, v_full):
        return sdpa(t, q, k_full, v_full)

    return torch_fn


def _sdpa_paged_decode_case(b, h, hk, skv, d, page):
    heads = f"GQA H{h} KV{hk}" if hk != h else f"H{h}"
    flops = 4 * b * h * skv * d
    size = (2 * b * h * d + 2 * b * hk * skv * d) * BF16
    build, init, gather = _sdpa_paged_decode(b, h, hk, skv, d, page)
    return Case(f"sdpa paged decode B{b} {heads} Skv{skv} D{d} page{page} bf16", build,
                _sdpa_on_gathered("CUDNN_ATTENTION", hk != h), flops, size, True, "attention",
                init=init, torch_prepare=gather,
                others={"flash": _sdpa_on_gathered("FLASH_ATTENTION", hk != h)})


ATTENTION_PAGED = [
    _sdpa_paged_decode_case(b, h, hk, skv, 128, page)
    for b, h, hk, skv, page in [(8, 32, 8, 8192, 64), (8, 32, 8, 8192, 16),
                                (4, 32, 8, 32768, 256)]
]

# Ragged (packed, THD) attention: B8 sequences of varying lengths packed
# one after another (cuDNN's ragged offsets, with the padding mask's
# lengths), q, k and v [B, H, S, D] with strides [S H D, D, H D, 1] over
# B x S rows, S the longest length; o padded, the same layout (rows past a
# sequence's length 0, as the padding mask gives them). PyTorch's side is
# FlashAttention's varlen kernel (torch.nn.attention.varlen.varlen_attn,
# cu_seqlens from the offsets) on the packed rows, its result put into a
# zeroed padded buffer with one index_copy (a pass over o, as dnnc's writes
# o's B x S rows): cuDNN's ragged attention is not reachable from PyTorch.
# Beside it: varlen alone ("varlen", no copy) and cuDNN attention on the
# same sequences padded to S ("cudnn_padded": B S^2 work, gathered outside
# the timing), for scale. FLOPs count each sequence's own L^2.

RAGGED_LENGTHS = (512, 1024, 2048, 4096, 256, 3072, 1536, 768)


def _sdpa_ragged(h, d, causal, lengths=RAGGED_LENGTHS):
    b, s = len(lengths), max(lengths)
    thd = [s * h * d, d, h * d, 1]
    starts = [sum(lengths[:i]) for i in range(b + 1)]

    def build():
        g = _graph(f"sdpa_ragged_b{b}_h{h}_s{s}_d{d}" + ("_causal" if causal else ""))
        off = g.tensor(name="offsets", dim=[b + 1, 1, 1, 1], data_type="int32")
        lens = g.tensor(name="seq_len", dim=[b, 1, 1, 1], data_type="int32")
        q, k, v = (g.tensor(name=x, dim=[b, h, s, d], stride=thd, ragged_offset=off)
                   for x in ("q", "k", "v"))
        o, _ = g.sdpa(q, k, v, use_causal_mask=causal, use_padding_mask=True, seq_len_q=lens,
                      seq_len_kv=lens)
        o.set_output(True).set_stride(thd)
        return g

    def init(t, off, lens, q, k, v):
        off.copy_(t.tensor([x * h * d for x in starts], dtype=t.int32).view(b + 1, 1, 1, 1))
        lens.copy_(t.tensor(lengths, dtype=t.int32).view(b, 1, 1, 1))

    def prepare(t, off, lens, q, k, v):
        total = starts[-1]
        rows = [x.permute(0, 2, 1, 3).reshape(b * s, h, d)[:total] for x in (q, k, v)]
        cu = t.tensor(starts, dtype=t.int32, device=q.device)
        at = t.cat([t.arange(n, device=q.device) + i * s for i, n in enumerate(lengths)])
        padded = t.zeros(b * s, h, d, dtype=q.dtype, device=q.device)
        # The sequences padded to S for cuDNN (outside the timing).
        dense = []
        for x in rows:
            full = t.zeros(b * s, h, d, dtype=q.dtype, device=q.device)
            full.index_copy_(0, at, x)
            dense.append(full.view(b, s, h, d).permute(0, 2, 1, 3))
        return (*rows, cu, at, padded, *dense)

    return build, init, prepare


def _varlen(t, q, k, v, cu, longest, causal):
    from torch.nn.attention import varlen

    try:
        return varlen.varlen_attn(q, k, v, cu, cu, longest, longest,
                                  window_size=(-1, 0) if causal else (-1, -1))
    except TypeError:  # releases before window_size took is_causal
        return varlen.varlen_attn(q, k, v, cu, cu, longest, longest, is_causal=causal)


def _sdpa_ragged_case(h, d, causal, lengths=RAGGED_LENGTHS):
    b, s = len(lengths), max(lengths)
    name = f"sdpa ragged{' causal' if causal else ''} B{b} H{h} S{s} D{d} bf16"
    flops = sum(4 * h * n * n * d / (2 if causal else 1) for n in lengths)
    size = 4 * sum(lengths) * h * d * BF16  # q, k, v, o's rows
    build, init, prepare = _sdpa_ragged(h, d, causal, lengths)
    cudnn = _sdpa_on("CUDNN_ATTENTION", causal, False)

    def torch_fn(t, off, lens, q, k, v, qr, kr, vr, cu, at, padded, *dense):
        padded.index_copy_(0, at, _varlen(t, qr, kr, vr, cu, s, causal))
        return padded.view(b, s, h, d).permute(0, 2, 1, 3)

    def varlen_alone(t, off, lens, q, k, v, qr, kr, vr, cu, at, padded, *dense):
        # The kernel alone: its rows are not put into the padded buffer,
        # which goes back as it is (a variant is timed, not compared).
        _varlen(t, qr, kr, vr, cu, s, causal)
        return padded.view(b, s, h, d).permute(0, 2, 1, 3)

    def cudnn_padded(t, off, lens, q, k, v, qr, kr, vr, cu, at, padded, qd, kd, vd):
        return cudnn(t, qd, kd, vd)

    return Case(name, build, torch_fn, flops, size, False, "attention", init=init,
                torch_prepare=prepare,
                others={"varlen": varlen_alone, "cudnn_padded": cudnn_padded})


ATTENTION_RAGGED = [_sdpa_ragged_case(16, 128, causal) for causal in (False, True)]

# Attention backward: the issue's table (D64 and D128, causal and not)
# against cuDNN's backward (the forward it differentiates run through cuDNN
# too, outside the timing). o and stats are the forward's, computed in f32
# by ``init``.

def _sdpa_backward_graph(b, h, hk, s, d, causal):
    def build():
        g = _graph(f"sdpa_backward_b{b}_h{h}_kv{hk}_s{s}_d{d}" + ("_causal" if causal else ""))
        q = g.tensor(name="q", dim=[b, h, s, d])
        k = g.tensor(name="k", dim=[b, hk, s, d])
        v = g.tensor(name="v", dim=[b, hk, s, d])
        o = g.tensor(name="o", dim=[b, h, s, d])
        do = g.tensor(name="do", dim=[b, h, s, d])
        stats = g.tensor(name="stats", dim=[b, h, s, 1], data_type="f32")
        for out in g.sdpa_backward(q, k, v, o, do, stats, use_causal_mask=causal):
            out.set_output(True)
        return g

    return build


def _sdpa_saved(causal):
    """``init``: o and stats (the log-sum-exp of the scaled, masked scores)
    of q, k, v, in f32 (k and v repeated over a group of query heads)."""
    def init(t, q, k, v, o, do, stats):
        group = q.shape[1] // k.shape[1]
        kf = k.float().repeat_interleave(group, 1)
        vf = v.float().repeat_interleave(group, 1)
        scores = t.matmul(q.float(), kf.transpose(-1, -2)) / math.sqrt(q.shape[-1])
        if causal:
            n = q.shape[2]
            scores.masked_fill_(t.ones(n, n, dtype=t.bool, device=q.device).triu(1),
                                float("-inf"))
        stats.copy_(t.logsumexp(scores, -1, keepdim=True))
        o.copy_(t.matmul(t.softmax(scores, -1), vf))

    return init


def _sdpa_grad_on(backend, causal, gqa):
    """The backward through one SDPBackend: ``prepare`` runs the forward
    (outside the timing), the timed function its autograd.grad."""
    def prepare(t, q, k, v, o, do, stats):
        leaves = [x.detach().requires_grad_() for x in (q, k, v)]
        gqa_arg = {"enable_gqa": True} if gqa else {}
        with t.nn.attention.sdpa_kernel(getattr(t.nn.attention.SDPBackend, backend)):
            out = t.nn.functional.scaled_dot_product_attention(*leaves, is_causal=causal,
                                                               **gqa_arg)
        return (out, *leaves)

    def grad(t, q, k, v, o, do, stats, out, *leaves):
        return t.autograd.grad(out, leaves, do, retain_graph=True)

    return prepare, grad


def _sdpa_grad_variant(backend, causal, gqa):
    """The backward through another SDPBackend as a case's ``others``
    entry: the forward through that backend runs once per input set (the
    first call, a warm-up one), the timed calls its autograd.grad."""
    prepare, grad = _sdpa_grad_on(backend, causal, gqa)
    forwards = {}

    def variant(t, q, k, v, o, do, stats, *cudnn_prepared):
        key = q.data_ptr()
        if key not in forwards:
            forwards[key] = prepare(t, q, k, v, o, do, stats)
        return grad(t, q, k, v, o, do, stats, *forwards[key])

    return variant


def _sdpa_backward_case(b, h, s, d, causal=False, hk=None, config=None, suffix="",
                        flash=False):
    """The backward case; ``config`` an override (``suffix`` then names
    it: the two-kernel twins); ``flash``: also time the flash backend's
    backward (FlashAttention-2, mma.sync), beside the tc-sm80 kernels."""
    hk = hk or h
    heads = f"GQA H{h} KV{hk}" if hk != h else f"H{h}"
    name = f"sdpa backward{' causal' if causal else ''} B{b} {heads} S{s} D{d} bf16{suffix}"
    # Five matmuls (S recomputed, dP, dV, dQ, dK); causal: half.
    flops = 5 * 2 * b * h * s * s * d / (2 if causal else 1)
    # q, o, do and dq; k, v, dk and dv; the statistics.
    size = (4 * b * h * s * d + 4 * b * hk * s * d) * BF16 + b * h * s * F32
    prepare, grad = _sdpa_grad_on("CUDNN_ATTENTION", causal, hk != h)
    others = {"flash": _sdpa_grad_variant("FLASH_ATTENTION", causal, hk != h)} if flash else {}
    return Case(name, _sdpa_backward_graph(b, h, hk, s, d, causal), grad, flops, size, False,
                "attention", init=_sdpa_saved(causal), torch_prepare=prepare, config=config,
                others=others)


_BACKWARD_SHAPES = [(4, 16, 4096, 128, None), (4, 16, 4096, 64, None),
                    (16, 16, 1024, 128, None), (1, 64, 8192, 128, 8)]
# The default (the fused kernel for D 64 and 128), then each beside its
# twin on tc-sm90's two kernels (the deterministic backward, forced by the
# config override of tile 128x128), for A/B timing in one run.
ATTENTION_BACKWARD = [
    _sdpa_backward_case(b, h, s, d, causal, hk)
    for b, h, s, d, hk in _BACKWARD_SHAPES for causal in (False, True)
] + [
    _sdpa_backward_case(b, h, s, d, causal, hk, config="*=tile:128x128",
                        suffix=" two-kernel")
    for b, h, s, d, hk in _BACKWARD_SHAPES for causal in (False, True)
]
# The fused kernel's other forms beside its default (persistent blocks over
# work units, sm90/backward_units.py): a block a unit (the form before the
# persistent blocks), and for grouped heads the group's 8 query heads
# walked apart (8 parts, dK and dV summed by a small launch after) where the
# heuristics keep them in one unit.
ATTENTION_BACKWARD += [
    _sdpa_backward_case(b, h, s, d, causal, hk, config="*=persistent:0",
                        suffix=" block-a-unit")
    for b, h, s, d, hk in _BACKWARD_SHAPES for causal in (False, True)
] + [
    _sdpa_backward_case(b, h, s, d, causal, hk, config=f"*=split:{h // hk}",
                        suffix=f" {h // hk}-parts")
    for b, h, s, d, hk in _BACKWARD_SHAPES if hk for causal in (False, True)
]
# D 64's fused kernel with its two consumers' parts of a step's dQ summed in
# shared memory before one reduce-add (staged:1), beside the default (each
# reduce-adds its own 64 x 64 part), persistent and a block a unit.
ATTENTION_BACKWARD += [
    _sdpa_backward_case(b, h, s, d, causal, hk, config=f"*={extra}staged:1",
                        suffix=f"{name} dq-summed")
    for b, h, s, d, hk in _BACKWARD_SHAPES if d == 64 for causal in (False, True)
    for extra, name in (("", ""), ("persistent:0,", " block-a-unit"))
]
# The Ampere backward (mma.sync, cp.async) on whatever GPU runs it, in the
# tile its heuristics give these problems on sm_80: its two kernels
# (sm80/flash_backward.py, a dQ kernel and a dK dV kernel; fused:0) beside
# its fused kernel (sm80/flash_backward_fused.py, dQ by f32 reductions;
# fused:1), for A/B timing in one run.
ATTENTION_BACKWARD += [
    _sdpa_backward_case(4, 16, 4096, d, causal, config=f"*=strategy:tc-sm80,fused:{fused}",
                        suffix=" tc-sm80" + (" fused" if fused else ""), flash=not fused)
    for d in (128, 64) for causal in (False, True) for fused in (0, 1)
]
# The two kernels in other tiles (D 128): three and four ring stages (the
# sm_80 tile keeps two within sm_80's shared memory; the H200 has more), 32
# kv rows a dQ step, and blocks of 4 warps (64 rows).
ATTENTION_BACKWARD += [
    _sdpa_backward_case(4, 16, 4096, 128, False,
                        config=f"*=strategy:tc-sm80,fused:0,{extra}",
                        suffix=f" tc-sm80 {extra.replace(':', ' ').replace(',', ' ')}")
    for extra in ("stages:3", "stages:4", "tile:32x32", "tile:64x32,block:128")
]
# The fused kernel in blocks of 4 warps (64 kv rows: twice the blocks and
# the dQ reductions, two blocks an SM by registers), 3 stages.
ATTENTION_BACKWARD += [
    _sdpa_backward_case(4, 16, 4096, d, causal,
                        config=f"*=strategy:tc-sm80,fused:1,tile:64x{m},block:128,stages:3",
                        suffix=" tc-sm80 fused 4-warps")
    for d, m in ((128, 32), (64, 64)) for causal in (False, True)
]


# Attention backward of head dims over 128 (tc-sm90's two kernels,
# sm90/flash_backward_wide.py): D256 and DeepSeek's D192 / Dv128, causal and
# not, against cuDNN's backward as above.

def _sdpa_backward_wide_graph(b, h, s, d, dv, causal):
    def build():
        g = _graph(f"sdpa_backward_b{b}_h{h}_s{s}_d{d}_dv{dv}" + ("_causal" if causal else ""))
        q = g.tensor(name="q", dim=[b, h, s, d])
        k = g.tensor(name="k", dim=[b, h, s, d])
        v = g.tensor(name="v", dim=[b, h, s, dv])
        o = g.tensor(name="o", dim=[b, h, s, dv])
        do = g.tensor(name="do", dim=[b, h, s, dv])
        stats = g.tensor(name="stats", dim=[b, h, s, 1], data_type="f32")
        for out in g.sdpa_backward(q, k, v, o, do, stats, use_causal_mask=causal):
            out.set_output(True)
        return g

    return build


def _sdpa_backward_wide_case(b, h, s, d, dv, causal):
    dims = f"D{d}" if d == dv else f"D{d} Dv{dv}"
    name = f"sdpa backward{' causal' if causal else ''} B{b} H{h} S{s} {dims} bf16"
    # S and dQ, dK over D; dP and dV over Dv (S recomputed once); causal: half.
    flops = 2 * b * h * s * s * (3 * d + 2 * dv) / (2 if causal else 1)
    # q, dq, k, dk; v, dv, o, do; the statistics.
    size = (4 * b * h * s * d + 4 * b * h * s * dv) * BF16 + b * h * s * F32
    prepare, grad = _sdpa_grad_on("CUDNN_ATTENTION", causal, False)
    return Case(name, _sdpa_backward_wide_graph(b, h, s, d, dv, causal), grad, flops, size,
                False, "attention", init=_sdpa_saved(causal), torch_prepare=prepare)


ATTENTION_BACKWARD_WIDE = [
    _sdpa_backward_wide_case(4, 16, 4096, d, dv, causal)
    for d, dv in ((256, 256), (192, 128)) for causal in (False, True)
]


from conv_cases import cases as _conv_cases  # noqa: E402  (bench/ is on sys.path)

RESNET = _conv_cases(Case)

# ============================================================================
# Broadcast inputs: a graph input declared with a stride of 0 (one element
# stored along that dim, docs/python-api.md), against PyTorch's expanded
# tensor, which its own kernels read in place. (dnnc copies such an input to
# a dense buffer first: dnn-io-strides' load kernel; a channel broadcast of
# an NHWC image gets simt-generic copies, which the strategy audit refuses
# in a benchmark case, so it is a GPU test case only: gpu_cases/layouts.py.)
# ============================================================================


def _add_broadcast_row():
    g = _graph("add_broadcast_row")
    x = g.tensor(name="x", dim=PW)
    b = g.tensor(name="b", dim=PW, stride=[0, 1])  # one row, read for every row
    g.add(x, b).set_output(True)
    return g


BROADCAST = [
    Case(f"add broadcast row (stride 0) {PW_NAME} bf16", _add_broadcast_row,
         lambda t, x, b: t.add(x, b), _numel(PW), (2 * _numel(PW) + PW[1]) * BF16, True,
         "pointwise"),
]


CASES = (ORIGINAL + UNARY + BINARY + COMPARE + LOGICAL + OTHER_POINTWISE + ACTIVATION_BACKWARD
         + TENSOR + REDUCTION + MIDDLE_REDUCTION + NORM + SOFTMAX + ROW_LENGTHS + POOLING + MATMUL
         + MATMUL_ALIGN + SGEMM + MATMUL_FP8 + CONV + RESNET
         + ATTENTION + ATTENTION_FORWARD + ATTENTION_QKV + ATTENTION_DECODE + ATTENTION_PAGED
         + ATTENTION_RAGGED + ATTENTION_BACKWARD + ATTENTION_BACKWARD_WIDE
         + BROADCAST)
