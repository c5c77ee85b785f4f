"""Pointwise ops: unary math and activations, binary ops with NumPy
broadcasting, comparisons and logic (to/from i1), select, activation backward.

Every pointwise op computes in f32 (or wider in the reference) and rounds once
to its result type.
"""

from dnnc.dialect.opdef import Attr, Operand, TensorInfo, broadcast_shapes, op
from dnnc.dialect.types import data_type

# name -> (attributes, one-line meaning). The meaning is the op's documentation
# and what the reference implements.
UNARY = {
    "relu": ((), "max(x, 0)"),
    "gelu": ((Attr("approximate", "str", "none", ("none", "tanh")),),
             "x * Phi(x); 'tanh' uses the tanh approximation"),
    "silu": ((), "x * sigmoid(x)"),
    "swish": ((Attr("beta", "float", 1.0),), "x * sigmoid(beta * x)"),
    "sigmoid": ((), "1 / (1 + exp(-x))"),
    "tanh": ((), "tanh(x)"),
    "elu": ((Attr("alpha", "float", 1.0),), "x if x > 0 else alpha * (exp(x) - 1)"),
    "leaky_relu": ((Attr("negative_slope", "float", 0.01),), "x if x >= 0 else slope * x"),
    "softplus": ((Attr("beta", "float", 1.0), Attr("threshold", "float", 20.0)),
                 "log(1 + exp(beta x)) / beta; x where beta x > threshold"),
    "exp": ((), "e^x"),
    "log": ((), "natural logarithm"),
    "sqrt": ((), "square root"),
    "rsqrt": ((), "1 / sqrt(x)"),
    "abs": ((), "|x|"),
    "neg": ((), "-x"),
    "square": ((), "x * x"),
    "reciprocal": ((), "1 / x"),
    "sin": ((), "sine"),
    "cos": ((), "cosine"),
    "erf": ((), "error function"),
    "floor": ((), "round toward -inf"),
    "ceil": ((), "round toward +inf"),
}

BINARY = {
    "add": "a + b",
    "sub": "a - b",
    "mul": "a * b",
    "div": "a / b",
    "max": "maximum of a and b (NaN propagates)",
    "min": "minimum of a and b (NaN propagates)",
    "pow": "a ** b",
}

COMPARE = {
    "cmp_eq": "a == b",
    "cmp_ne": "a != b",
    "cmp_lt": "a < b",
    "cmp_le": "a <= b",
    "cmp_gt": "a > b",
    "cmp_ge": "a >= b",
}

LOGICAL = {"logical_and": "a and b", "logical_or": "a or b"}

# Backward of an activation: dx = dy * f'(x). All take (dy, x), as cuDNN does.
ACTIVATION_BACKWARD = {
    "relu_backward": ((), "dy where x > 0, else 0"),
    "gelu_backward": ((Attr("approximate", "str", "none", ("none", "tanh")),), "dy * gelu'(x)"),
    "silu_backward": ((), "dy * silu'(x)"),
    "sigmoid_backward": ((), "dy * s(x) * (1 - s(x))"),
    "tanh_backward": ((), "dy * (1 - tanh(x)^2)"),
    "swish_backward": ((Attr("beta", "float", 1.0),),
                       "dy * s (1 + beta x (1 - s)), s = sigmoid(beta x)"),
    "elu_backward": ((Attr("alpha", "float", 1.0),), "dy where x > 0, else dy * alpha * exp(x)"),
    "leaky_relu_backward": ((Attr("negative_slope", "float", 0.01),),
                            "dy where x > 0, else dy * slope"),
    "softplus_backward": ((Attr("beta", "float", 1.0), Attr("threshold", "float", 20.0)),
                          "dy where beta x > threshold, else dy * sigmoid(beta x)"),
}


def _same_shape(ctx):
    return {"y": TensorInfo(ctx["x"].shape)}


for _name, (_attrs, _doc) in UNARY.items():
    op(_name, family="pointwise", operands=["x"], results=["y"], attrs=_attrs,
       doc=f"Elementwise {_doc}.")(_same_shape)


def _broadcast(ctx):
    return {"y": TensorInfo(broadcast_shapes(ctx, ["a", "b"]))}


def _broadcast_bool(ctx):
    return {"y": TensorInfo(broadcast_shapes(ctx, ["a", "b"]), data_type.BOOLEAN)}


for _name, _doc in BINARY.items():
    op(_name, family="pointwise", operands=["a", "b"], results=["y"],
       doc=f"Elementwise {_doc}, with NumPy broadcasting.")(_broadcast)

for _name, _doc in COMPARE.items():
    op(_name, family="pointwise", operands=["a", "b"], results=["y"],
       doc=f"Elementwise {_doc}, giving i1, with NumPy broadcasting.")(_broadcast_bool)

for _name, _doc in LOGICAL.items():
    op(_name, family="pointwise",
       operands=[Operand("a", dtype="bool"), Operand("b", dtype="bool")], results=["y"],
       doc=f"Elementwise {_doc} on i1 tensors, with NumPy broadcasting.")(_broadcast_bool)


@op("logical_not", family="pointwise", operands=[Operand("x", dtype="bool")], results=["y"])
def _logical_not(ctx):
    """Elementwise not of an i1 tensor."""
    return {"y": TensorInfo(ctx["x"].shape, data_type.BOOLEAN)}


@op("select", family="pointwise",
    operands=[Operand("cond", dtype="bool"), "a", "b"], results=["y"])
def _select(ctx):
    """a where cond is true, else b; the three operands broadcast together."""
    return {"y": TensorInfo(broadcast_shapes(ctx, ["cond", "a", "b"]))}


@op("gen_index", family="pointwise", operands=[Operand("x", dtype="any")], results=["y"],
    attrs=[Attr("axis", "int")])
def _gen_index(ctx):
    """y = the position of each element along ``axis``, as a float (exact below
    2^24); x supplies only the shape, as cuDNN's GEN_INDEX. Masks (causal,
    banded) are built from it with comparisons and select."""
    x = ctx["x"]
    ctx.axis("axis", x.rank)
    return {"y": TensorInfo(x.shape)}


def _backward(ctx):
    return {"dx": TensorInfo(broadcast_shapes(ctx, ["dy", "x"]))}


for _name, (_attrs, _doc) in ACTIVATION_BACKWARD.items():
    op(_name, family="pointwise", operands=["dy", "x"], results=["dx"], attrs=_attrs,
       doc=f"Activation gradient: {_doc}.")(_backward)

POINTWISE_OPS = (set(UNARY) | set(BINARY) | set(COMPARE) | set(LOGICAL)
                 | {"logical_not", "select", "gen_index"} | set(ACTIVATION_BACKWARD))
