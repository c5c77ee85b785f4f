"""Scalar bodies of the pointwise ops, in f32 (booleans in i1).

``SCALAR[op](args, attrs)`` receives the op's operands in OpDef order, already
converted (floats to f32, booleans to i1), and the op's attributes; it returns
the f32 (or i1) result. The formulas follow the op docstrings in
``dnnc/dialect/ops_pointwise.py``; the reference (``dnnc/reference.py``) is
the oracle they are tested against.
"""

import math as pymath

from mlir.dialects import arith, math

from dnnc.codegen.linalg.emit import cf, const, i1

_SQRT_2_OVER_PI = pymath.sqrt(2.0 / pymath.pi)
_GELU_CUBIC = 0.044715
_P = arith.CmpFPredicate


def _gt(a, b):
    return arith.cmpf(_P.OGT, a, b)


def sigmoid(x):
    return arith.divf(cf(1.0), arith.addf(cf(1.0), math.exp(arith.negf(x))))


def _gelu_tanh_inner(x):
    """tanh(sqrt(2/pi) (x + 0.044715 x^3))."""
    x3 = arith.mulf(arith.mulf(x, x), x)
    u = arith.mulf(cf(_SQRT_2_OVER_PI), arith.addf(x, arith.mulf(cf(_GELU_CUBIC), x3)))
    return math.tanh(u)


def gelu(x, a):
    if a["approximate"] == "tanh":
        t = _gelu_tanh_inner(x)
    else:
        t = math.erf(arith.mulf(x, cf(1.0 / pymath.sqrt(2.0))))
    return arith.mulf(arith.mulf(cf(0.5), x), arith.addf(cf(1.0), t))


def softplus(x, a):
    # log(1 + exp(bx)) / beta as max(bx, 0) + log1p(exp(-|bx|)), which does not
    # overflow; x itself where bx > threshold (PyTorch's linear region).
    beta = a["beta"]
    bx = arith.mulf(cf(beta), x)
    stable = arith.addf(arith.maximumf(bx, cf(0.0)),
                        math.log1p(math.exp(arith.negf(math.absf(bx)))))
    return arith.select(_gt(bx, cf(a["threshold"])), x, arith.divf(stable, cf(beta)))


UNARY = {
    "relu": lambda x, a: arith.maximumf(x, cf(0.0)),
    "gelu": gelu,
    "silu": lambda x, a: arith.mulf(x, sigmoid(x)),
    "swish": lambda x, a: arith.mulf(x, sigmoid(arith.mulf(cf(a["beta"]), x))),
    "sigmoid": lambda x, a: sigmoid(x),
    "tanh": lambda x, a: math.tanh(x),
    "elu": lambda x, a: arith.select(_gt(x, cf(0.0)), x,
                                     arith.mulf(cf(a["alpha"]), math.expm1(x))),
    "leaky_relu": lambda x, a: arith.select(arith.cmpf(_P.OGE, x, cf(0.0)), x,
                                            arith.mulf(cf(a["negative_slope"]), x)),
    "softplus": softplus,
    "exp": lambda x, a: math.exp(x),
    "log": lambda x, a: math.log(x),
    "sqrt": lambda x, a: math.sqrt(x),
    "rsqrt": lambda x, a: arith.divf(cf(1.0), math.sqrt(x)),
    "abs": lambda x, a: math.absf(x),
    "neg": lambda x, a: arith.negf(x),
    "square": lambda x, a: arith.mulf(x, x),
    "reciprocal": lambda x, a: arith.divf(cf(1.0), x),
    "sin": lambda x, a: math.sin(x),
    "cos": lambda x, a: math.cos(x),
    "erf": lambda x, a: math.erf(x),
    "floor": lambda x, a: math.floor(x),
    "ceil": lambda x, a: math.ceil(x),
}

BINARY = {
    "add": arith.addf,
    "sub": arith.subf,
    "mul": arith.mulf,
    "div": arith.divf,
    "max": arith.maximumf,  # propagates NaN
    "min": arith.minimumf,  # propagates NaN
    "pow": math.powf,
}

# Ordered predicates (false on NaN) except !=, which is true on NaN as in NumPy.
COMPARE = {
    "cmp_eq": _P.OEQ, "cmp_ne": _P.UNE, "cmp_lt": _P.OLT,
    "cmp_le": _P.OLE, "cmp_gt": _P.OGT, "cmp_ge": _P.OGE,
}

LOGICAL = {"logical_and": arith.andi, "logical_or": arith.ori}


def _gelu_derivative(x, a):
    if a["approximate"] == "tanh":
        # d/dx 0.5 x (1 + t), t = tanh(u), u = c (x + k x^3):
        # 0.5 (1 + t) + 0.5 x (1 - t^2) c (1 + 3 k x^2).
        t = _gelu_tanh_inner(x)
        du = arith.mulf(cf(_SQRT_2_OVER_PI),
                        arith.addf(cf(1.0), arith.mulf(cf(3.0 * _GELU_CUBIC), arith.mulf(x, x))))
        left = arith.mulf(cf(0.5), arith.addf(cf(1.0), t))
        right = arith.mulf(arith.mulf(arith.mulf(cf(0.5), x),
                                      arith.subf(cf(1.0), arith.mulf(t, t))), du)
        return arith.addf(left, right)
    # d/dx x Phi(x) = Phi(x) + x phi(x).
    cdf = arith.mulf(cf(0.5), arith.addf(cf(1.0), math.erf(
        arith.mulf(x, cf(1.0 / pymath.sqrt(2.0))))))
    pdf = arith.mulf(math.exp(arith.mulf(cf(-0.5), arith.mulf(x, x))),
                     cf(1.0 / pymath.sqrt(2.0 * pymath.pi)))
    return arith.addf(cdf, arith.mulf(x, pdf))


def _silu_derivative(x, a):
    s = sigmoid(x)  # s (1 + x (1 - s))
    return arith.mulf(s, arith.addf(cf(1.0), arith.mulf(x, arith.subf(cf(1.0), s))))


def _sigmoid_derivative(x, a):
    s = sigmoid(x)
    return arith.mulf(s, arith.subf(cf(1.0), s))


def _tanh_derivative(x, a):
    t = math.tanh(x)
    return arith.subf(cf(1.0), arith.mulf(t, t))


def _swish_derivative(x, a):
    bx = arith.mulf(cf(a["beta"]), x)
    s = sigmoid(bx)  # s (1 + beta x (1 - s))
    return arith.mulf(s, arith.addf(cf(1.0), arith.mulf(bx, arith.subf(cf(1.0), s))))


def _softplus_derivative(x, a):
    # sigmoid(beta x); 1 in the linear region above the threshold.
    bx = arith.mulf(cf(a["beta"]), x)
    return arith.select(_gt(bx, cf(a["threshold"])), cf(1.0), sigmoid(bx))


DERIVATIVES = {
    "gelu_backward": _gelu_derivative,
    "silu_backward": _silu_derivative,
    "sigmoid_backward": _sigmoid_derivative,
    "tanh_backward": _tanh_derivative,
    "swish_backward": _swish_derivative,
    "softplus_backward": _softplus_derivative,
}


def _relu_backward(args, a):
    dy, x = args
    # A select, not dy * (x > 0): an inf dy where x <= 0 gives 0, not NaN.
    return arith.select(_gt(x, cf(0.0)), dy, cf(0.0))


def _elu_backward(args, a):
    dy, x = args
    # exp of min(x, 0): the selected-away side stays finite.
    slope = arith.mulf(cf(a["alpha"]), math.exp(arith.minimumf(x, cf(0.0))))
    return arith.select(_gt(x, cf(0.0)), dy, arith.mulf(dy, slope))


def _leaky_relu_backward(args, a):
    dy, x = args
    return arith.select(_gt(x, cf(0.0)), dy, arith.mulf(dy, cf(a["negative_slope"])))


def _build_table():
    table = {}
    for name, fn in UNARY.items():
        table[name] = (lambda f: lambda args, a: f(args[0], a))(fn)
    for name, fn in BINARY.items():
        table[name] = (lambda f: lambda args, a: f(args[0], args[1]))(fn)
    for name, pred in COMPARE.items():
        table[name] = (lambda p: lambda args, a: arith.cmpf(p, args[0], args[1]))(pred)
    for name, fn in LOGICAL.items():
        table[name] = (lambda f: lambda args, a: f(args[0], args[1]))(fn)
    for name, fn in DERIVATIVES.items():
        table[name] = (lambda f: lambda args, a: arith.mulf(args[0], f(args[1], a)))(fn)
    table["relu_backward"] = _relu_backward
    table["elu_backward"] = _elu_backward
    table["leaky_relu_backward"] = _leaky_relu_backward
    table["logical_not"] = lambda args, a: arith.xori(args[0], const(i1(), 1))
    table["select"] = lambda args, a: arith.select(args[0], args[1], args[2])
    table["cast"] = lambda args, a: args[0]
    return table


# op name -> fn(args, attrs) -> f32 or i1 scalar
SCALAR = _build_table()
