"""cudnn-frontend's pointwise ops on a ``pygraph``, lowered to dnnc's.

Names, argument names and defaults are cudnn-frontend's
(``python/pygraph/pointwise.cpp``): ``add(a, b)``, ``bias(input, bias)``,
``scale(input, scale)``, ``max(input0, input1)``, ``cmp_gt(input,
comparison)``, ``relu(input, negative_slope, lower_clip, upper_clip)``,
``swish(input, swish_beta)``, the ``*_backward(loss, input)`` forms... Each
returns its output tensor. A pass-by-value operand (a scalar given at
``execute``) becomes a dnnc runtime scalar (``Graph.scalar``), passed to the
kernels by value; one whose value is fixed (``tensor_scalar``) a constant.
The slopes, clips and betas of the activations are compiled in (dnnc's
ops take them as attributes).

Where cuDNN has a pointwise mode dnnc has no op for, it is composed from
dnnc ops with the same math (identity: x * 1, or a cast when its output is
given a type, cuDNN's cast; tan: sin / cos; add_square: a + b * b; a clipped
relu: max/min against constants). Modes dnnc cannot
express (``mod``) raise ``cudnnGraphNotSupportedError`` naming them.

Pointwise math in dnnc is fp32; ``compute_data_type`` may be NOT_SET or
FLOAT (anything else is refused, not ignored). cuDNN lets arithmetic take a
boolean or integer operand (a ReLU mask times a gradient, int8 data) and a
select or logical op take a nonzero number as true; dnnc's ops are typed, so
such operands are converted first (``as_float``: a cast; ``as_bool``: != 0).
"""

from dnnc.dialect.types import data_type as dnnc_type
from dnnc.frontend.enums import data_type, library_type, to_dnnc
from dnnc.frontend.lowering import unsupported

_FP32_COMPUTE = (data_type.NOT_SET, data_type.FLOAT, data_type.FAST_FLOAT_FOR_FP8)


def check_pointwise_compute(op, compute_data_type):
    dt = library_type(compute_data_type)
    if dt not in _FP32_COMPUTE:
        raise unsupported(op, f"compute_data_type: dnnc computes pointwise math in FLOAT, "
                          f"got {dt.name}")


def as_float(g, x):
    """``x`` as a float tensor: booleans and integers are cast."""
    if x.get_data_type() is dnnc_type.BOOLEAN or x.get_data_type().is_integer:
        return g.cast(x, dnnc_type.FLOAT)
    return x


def as_bool(g, x):
    """``x`` as a boolean tensor: a number is true where nonzero."""
    if x.get_data_type() is dnnc_type.BOOLEAN:
        return x
    return g.cmp_ne(as_float(g, x), g.constant(0.0))


def _unary(op, make):
    """A one-input op; ``make(graph, x)`` builds it in dnnc."""
    def method(self, input, compute_data_type=data_type.NOT_SET, name=""):
        check_pointwise_compute(op, compute_data_type)

        def lower(ctx, node):
            x = ctx.tensor(node.inputs["input"], f"{op} input")
            return [make(ctx.graph, as_bool(ctx.graph, x) if op == "logical_not" else
                         as_float(ctx.graph, x))]

        return self._add(op, name, {"input": input}, lower)[0]

    method.__name__ = op
    method.__doc__ = f"cudnn-frontend's {op}(input): one output."
    return method


def _binary(op, first, second, make):
    """A two-input op with cudnn-frontend's argument names ``first``, ``second``;
    the logical ops take booleans, the others floats."""
    convert = as_bool if op.startswith("logical_") else as_float
    def method(self, *args, compute_data_type=data_type.NOT_SET, name="", **kwargs):
        a, b = _two(op, first, second, args, kwargs)
        check_pointwise_compute(op, compute_data_type)

        def lower(ctx, node):
            x = convert(ctx.graph, ctx.tensor(node.inputs[first], f"{op} {first}"))
            y = convert(ctx.graph, ctx.tensor(node.inputs[second], f"{op} {second}"))
            return [make(ctx.graph, x, y)]

        return self._add(op, name, {first: a, second: b}, lower)[0]

    method.__name__ = op
    method.__doc__ = f"cudnn-frontend's {op}({first}, {second}): one output."
    return method


def _two(op, first, second, args, kwargs):
    values = dict(zip((first, second), args))
    for key, value in kwargs.items():
        if key not in (first, second) or key in values:
            raise TypeError(f"{op}() got an unexpected or repeated argument '{key}'")
        values[key] = value
    if first not in values or second not in values:
        raise TypeError(f"{op}() expects arguments '{first}' and '{second}'")
    return values[first], values[second]


def _identity(g, x):
    return g.mul(x, g.constant(1.0))


def _tan(g, x):
    return g.div(g.sin(x), g.cos(x))


def _add_square(g, a, b):
    return g.add(a, g.square(b))


def _relu(g, x, negative_slope, lower_clip, upper_clip):
    """cuDNN's RELU_FWD: x between the clips, upper_clip above, and below
    lower_clip (default 0) lower_clip + negative_slope * (x - lower_clip)."""
    lo = 0.0 if lower_clip is None else float(lower_clip)
    slope = 0.0 if negative_slope is None else float(negative_slope)
    if lo == 0.0 and upper_clip is None:
        return g.relu(x) if slope == 0.0 else g.leaky_relu(x, negative_slope=slope)
    if slope == 0.0:
        y = g.max(x, g.constant(lo))
    else:
        below = g.add(g.mul(g.sub(x, g.constant(lo)), g.constant(slope)), g.constant(lo))
        y = g.select(g.cmp_gt(x, g.constant(lo)), x, below)
    if upper_clip is not None:
        y = g.min(y, g.constant(float(upper_clip)))
    return y


class PointwiseOps:
    """The pointwise methods of ``pygraph``."""

    add = _binary("add", "a", "b", lambda g, a, b: g.add(a, b))
    bias = _binary("bias", "input", "bias", lambda g, a, b: g.add(a, b))
    sub = _binary("sub", "a", "b", lambda g, a, b: g.sub(a, b))
    mul = _binary("mul", "a", "b", lambda g, a, b: g.mul(a, b))
    scale = _binary("scale", "input", "scale", lambda g, a, b: g.mul(a, b))
    div = _binary("div", "a", "b", lambda g, a, b: g.div(a, b))
    add_square = _binary("add_square", "a", "b", _add_square)
    max = _binary("max", "input0", "input1", lambda g, a, b: g.max(a, b))
    min = _binary("min", "input0", "input1", lambda g, a, b: g.min(a, b))
    pow = _binary("pow", "input0", "input1", lambda g, a, b: g.pow(a, b))
    cmp_eq = _binary("cmp_eq", "input", "comparison", lambda g, a, b: g.cmp_eq(a, b))
    cmp_neq = _binary("cmp_neq", "input", "comparison", lambda g, a, b: g.cmp_ne(a, b))
    cmp_gt = _binary("cmp_gt", "input", "comparison", lambda g, a, b: g.cmp_gt(a, b))
    cmp_ge = _binary("cmp_ge", "input", "comparison", lambda g, a, b: g.cmp_ge(a, b))
    cmp_lt = _binary("cmp_lt", "input", "comparison", lambda g, a, b: g.cmp_lt(a, b))
    cmp_le = _binary("cmp_le", "input", "comparison", lambda g, a, b: g.cmp_le(a, b))
    logical_and = _binary("logical_and", "a", "b", lambda g, a, b: g.logical_and(a, b))
    logical_or = _binary("logical_or", "a", "b", lambda g, a, b: g.logical_or(a, b))

    sqrt = _unary("sqrt", lambda g, x: g.sqrt(x))
    rsqrt = _unary("rsqrt", lambda g, x: g.rsqrt(x))
    exp = _unary("exp", lambda g, x: g.exp(x))
    log = _unary("log", lambda g, x: g.log(x))
    neg = _unary("neg", lambda g, x: g.neg(x))
    abs = _unary("abs", lambda g, x: g.abs(x))
    ceil = _unary("ceil", lambda g, x: g.ceil(x))
    floor = _unary("floor", lambda g, x: g.floor(x))
    reciprocal = _unary("reciprocal", lambda g, x: g.reciprocal(x))
    sin = _unary("sin", lambda g, x: g.sin(x))
    cos = _unary("cos", lambda g, x: g.cos(x))
    tan = _unary("tan", _tan)
    erf = _unary("erf", lambda g, x: g.erf(x))
    logical_not = _unary("logical_not", lambda g, x: g.logical_not(x))
    tanh = _unary("tanh", lambda g, x: g.tanh(x))
    sigmoid = _unary("sigmoid", lambda g, x: g.sigmoid(x))
    elu = _unary("elu", lambda g, x: g.elu(x))
    gelu = _unary("gelu", lambda g, x: g.gelu(x))
    gelu_approx_tanh = _unary("gelu_approx_tanh", lambda g, x: g.gelu(x, approximate="tanh"))
    softplus = _unary("softplus", lambda g, x: g.softplus(x))

    tanh_backward = _binary("tanh_backward", "loss", "input",
                            lambda g, dy, x: g.tanh_backward(dy, x))
    sigmoid_backward = _binary("sigmoid_backward", "loss", "input",
                               lambda g, dy, x: g.sigmoid_backward(dy, x))
    elu_backward = _binary("elu_backward", "loss", "input",
                           lambda g, dy, x: g.elu_backward(dy, x))
    gelu_backward = _binary("gelu_backward", "loss", "input",
                            lambda g, dy, x: g.gelu_backward(dy, x))
    gelu_approx_tanh_backward = _binary(
        "gelu_approx_tanh_backward", "loss", "input",
        lambda g, dy, x: g.gelu_backward(dy, x, approximate="tanh"))
    softplus_backward = _binary("softplus_backward", "loss", "input",
                                lambda g, dy, x: g.softplus_backward(dy, x))

    def identity(self, input, compute_data_type=data_type.NOT_SET, name=""):
        """cuDNN's IDENTITY: with a type set on its output (``set_data_type``),
        cuDNN's cast, lowered to dnnc's (exact between integer types, int8
        rounded and saturated); else x * 1 in the graph's types."""
        check_pointwise_compute("identity", compute_data_type)

        def lower(ctx, node):
            x = ctx.tensor(node.inputs["input"], "identity input")
            target = library_type(node.outputs[0]._data_type)
            if target is not data_type.NOT_SET:
                return [ctx.graph.cast(x, to_dnnc(target, "identity output"))]
            return [_identity(ctx.graph, as_float(ctx.graph, x))]

        return self._add("identity", name, {"input": input}, lower)[0]

    def mod(self, input0, input1, compute_data_type=data_type.NOT_SET, name=""):
        """cuDNN's MOD: dnnc has no remainder op."""
        raise unsupported("mod", "the MOD pointwise mode is not supported by dnnc")

    def relu(self, input, negative_slope=None, lower_clip=None, upper_clip=None,
             compute_data_type=data_type.NOT_SET, name=""):
        """ReLU with cuDNN's clip options (see ``_relu``); one output."""
        check_pointwise_compute("relu", compute_data_type)

        def lower(ctx, node):
            x = ctx.tensor(node.inputs["input"], "relu input")
            return [_relu(ctx.graph, x, ctx.scalar(negative_slope, "relu negative_slope"),
                          ctx.scalar(lower_clip, "relu lower_clip"),
                          ctx.scalar(upper_clip, "relu upper_clip"))]

        return self._add("relu", name, {"input": input}, lower)[0]

    def leaky_relu(self, input, negative_slope, compute_data_type=data_type.NOT_SET, name=""):
        check_pointwise_compute("leaky_relu", compute_data_type)

        def lower(ctx, node):
            x = ctx.tensor(node.inputs["input"], "leaky_relu input")
            return [ctx.graph.leaky_relu(
                x, negative_slope=ctx.scalar(negative_slope, "leaky_relu negative_slope"))]

        return self._add("leaky_relu", name, {"input": input}, lower)[0]

    def swish(self, input, swish_beta=None, compute_data_type=data_type.NOT_SET, name=""):
        """x * sigmoid(beta * x); beta 1 (SiLU) by default."""
        check_pointwise_compute("swish", compute_data_type)

        def lower(ctx, node):
            x = ctx.tensor(node.inputs["input"], "swish input")
            beta = ctx.scalar(swish_beta, "swish swish_beta")
            return [ctx.graph.silu(x) if beta is None or beta == 1.0 else
                    ctx.graph.swish(x, beta=beta)]

        return self._add("swish", name, {"input": input}, lower)[0]

    def relu_backward(self, loss, input, negative_slope=None, lower_clip=None, upper_clip=None,
                      compute_data_type=data_type.NOT_SET, name=""):
        """dX of ``relu``; clips other than lower_clip 0 are refused."""
        check_pointwise_compute("relu_backward", compute_data_type)

        def lower(ctx, node):
            dy = ctx.tensor(node.inputs["loss"], "relu_backward loss")
            x = ctx.tensor(node.inputs["input"], "relu_backward input")
            lo = ctx.scalar(lower_clip, "relu_backward lower_clip")
            if (lo or 0.0) != 0.0 or upper_clip is not None:
                raise unsupported("relu_backward", "lower_clip other than 0 and upper_clip are "
                                  "not supported by dnnc")
            slope = ctx.scalar(negative_slope, "relu_backward negative_slope")
            if slope:
                return [ctx.graph.leaky_relu_backward(dy, x, negative_slope=slope)]
            return [ctx.graph.relu_backward(dy, x)]

        return self._add("relu_backward", name, {"loss": loss, "input": input}, lower)[0]

    def leaky_relu_backward(self, loss, input, negative_slope,
                            compute_data_type=data_type.NOT_SET, name=""):
        check_pointwise_compute("leaky_relu_backward", compute_data_type)

        def lower(ctx, node):
            dy = ctx.tensor(node.inputs["loss"], "leaky_relu_backward loss")
            x = ctx.tensor(node.inputs["input"], "leaky_relu_backward input")
            return [ctx.graph.leaky_relu_backward(
                dy, x, negative_slope=ctx.scalar(negative_slope, "leaky_relu_backward "
                                                                  "negative_slope"))]

        return self._add("leaky_relu_backward", name, {"loss": loss, "input": input}, lower)[0]

    def swish_backward(self, loss, input, compute_data_type=data_type.NOT_SET, swish_beta=None,
                       name=""):
        check_pointwise_compute("swish_backward", compute_data_type)

        def lower(ctx, node):
            dy = ctx.tensor(node.inputs["loss"], "swish_backward loss")
            x = ctx.tensor(node.inputs["input"], "swish_backward input")
            beta = ctx.scalar(swish_beta, "swish_backward swish_beta")
            if beta is None or beta == 1.0:
                return [ctx.graph.silu_backward(dy, x)]
            return [ctx.graph.swish_backward(dy, x, beta=beta)]

        return self._add("swish_backward", name, {"loss": loss, "input": input}, lower)[0]

    def binary_select(self, input0, input1, mask, compute_data_type=data_type.NOT_SET, name=""):
        """cuDNN's BINARY_SELECT: input0 where mask, else input1."""
        check_pointwise_compute("binary_select", compute_data_type)

        def lower(ctx, node):
            g, i = ctx.graph, node.inputs
            return [g.select(as_bool(g, ctx.tensor(i["mask"], "binary_select mask")),
                             as_float(g, ctx.tensor(i["input0"], "binary_select input0")),
                             as_float(g, ctx.tensor(i["input1"], "binary_select input1")))]

        return self._add("binary_select", name,
                         {"input0": input0, "input1": input1, "mask": mask}, lower)[0]

    def gen_index(self, input, axis, compute_data_type=data_type.NOT_SET, name=""):
        """Each element's index along ``axis``."""
        def lower(ctx, node):
            return [ctx.graph.gen_index(ctx.tensor(node.inputs["input"], "gen_index input"),
                                        axis)]

        return self._add("gen_index", name, {"input": input}, lower)[0]
