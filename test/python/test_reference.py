"""The NumPy reference (dnnc.reference) against independent closed forms.

No PyTorch here (see test_reference_torch.py): each op is checked against a
property or a formula computed another way: naive loops, adjointness, finite
differences of the forward op, identities between ops. Shapes are small and
deliberately odd (3, 5, 7); inputs are often non-contiguous views.
"""

import itertools
import math
import warnings

import numpy as np
import pytest

import dnnc.dialect as D
from dnnc import reference as ref
from dnnc.dialect.opdef import TensorInfo
from dnnc.dialect.types import data_type
from refutil import rng, run

# Ops with at least one test in this file, filled by @covers. The last test
# checks that it is every op of the dialect.
COVERED = set()


def covers(*names):
    COVERED.update(names)
    return lambda fn: fn








def numeric_grad(f, x, h=1e-5):
    """Central finite differences of the scalar function f at x."""
    x = np.array(x, dtype=np.float64)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += h
        down[i] -= h
        g[i] = (f(up) - f(down)) / (2 * h)
    return g


def noncontiguous(a):
    """The same values as a, as a transposed (non-contiguous) view."""
    return np.ascontiguousarray(np.swapaxes(a, 0, -1)).swapaxes(0, -1)


FD = dict(rtol=1e-6, atol=1e-8)  # tolerance of finite-difference checks


# ----------------------------------------------------------------------------
# Pointwise
# ----------------------------------------------------------------------------

def _softplus(v, beta, threshold):
    return v if beta * v > threshold else math.log(1 + math.exp(beta * v)) / beta


# name -> (attrs, scalar formula, domain: "any" or "positive" or "nonzero")
UNARY_FORMS = {
    "relu": ({}, lambda v: max(v, 0.0), "any"),
    "gelu": ({}, lambda v: 0.5 * v * (1 + math.erf(v / math.sqrt(2))), "any"),
    "silu": ({}, lambda v: v / (1 + math.exp(-v)), "any"),
    "swish": ({"beta": 1.7}, lambda v: v / (1 + math.exp(-1.7 * v)), "any"),
    "sigmoid": ({}, lambda v: 1 / (1 + math.exp(-v)), "any"),
    "tanh": ({}, math.tanh, "any"),
    "elu": ({"alpha": 0.7}, lambda v: v if v > 0 else 0.7 * (math.exp(v) - 1), "any"),
    "leaky_relu": ({"negative_slope": 0.2}, lambda v: v if v >= 0 else 0.2 * v, "any"),
    "softplus": ({"beta": 2.0, "threshold": 3.0}, lambda v: _softplus(v, 2.0, 3.0), "any"),
    "exp": ({}, math.exp, "any"),
    "log": ({}, math.log, "positive"),
    "sqrt": ({}, math.sqrt, "positive"),
    "rsqrt": ({}, lambda v: 1 / math.sqrt(v), "positive"),
    "abs": ({}, abs, "any"),
    "neg": ({}, lambda v: -v, "any"),
    "square": ({}, lambda v: v * v, "any"),
    "reciprocal": ({}, lambda v: 1 / v, "nonzero"),
    "sin": ({}, math.sin, "any"),
    "cos": ({}, math.cos, "any"),
    "erf": ({}, math.erf, "any"),
    "floor": ({}, math.floor, "any"),
    "ceil": ({}, math.ceil, "any"),
}


def _unary_input(domain):
    x = rng().uniform(-4, 4, (5, 3)).T  # (3, 5), non-contiguous
    if domain == "positive":
        return np.abs(x) + 0.1
    if domain == "nonzero":
        return np.where(np.abs(x) < 0.1, 0.5, x)
    return x


@covers(*UNARY_FORMS)
@pytest.mark.parametrize("name", sorted(UNARY_FORMS))
def test_unary_matches_scalar_formula(name):
    attrs, form, domain = UNARY_FORMS[name]
    x = _unary_input(domain)
    y = run(name, {"x": x}, **attrs)["y"]
    expected = np.array([[form(float(v)) for v in row] for row in x])
    assert y.shape == x.shape and y.dtype == np.float64
    np.testing.assert_allclose(y, expected, rtol=1e-13, atol=1e-15)


@covers("gelu")
def test_gelu_tanh_approximation():
    x = rng().uniform(-4, 4, (7,))
    y = run("gelu", {"x": x}, approximate="tanh")["y"]
    c = math.sqrt(2 / math.pi)
    expected = [0.5 * v * (1 + math.tanh(c * (v + 0.044715 * v ** 3))) for v in x]
    np.testing.assert_allclose(y, expected, rtol=1e-13, atol=1e-15)
    # The approximation is close to, but not, the erf form.
    exact = run("gelu", {"x": x})["y"]
    assert 0 < np.max(np.abs(y - exact)) < 1e-3


@covers("softplus", "leaky_relu", "elu")
def test_activation_edge_values():
    x = np.array([-1e3, -0.0, 0.0, 1e3])
    np.testing.assert_array_equal(run("leaky_relu", {"x": x})["y"], [-10.0, 0.0, 0.0, 1e3])
    np.testing.assert_allclose(run("elu", {"x": x})["y"], [-1.0, 0.0, 0.0, 1e3])
    # softplus does not overflow; above the threshold it is the identity.
    np.testing.assert_allclose(run("softplus", {"x": x})["y"], [0.0, math.log(2), math.log(2), 1e3])


BINARY_FORMS = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
    "max": lambda a, b: np.where(a > b, a, b), "min": lambda a, b: np.where(a < b, a, b),
    "pow": lambda a, b: np.exp(b * np.log(a)),
}


@covers(*BINARY_FORMS)
@pytest.mark.parametrize("name", sorted(BINARY_FORMS))
def test_binary_broadcasts(name):
    g = rng()
    a = g.uniform(0.5, 2.0, (5, 1, 3)).swapaxes(0, 2)  # (3, 1, 5), non-contiguous
    b = g.uniform(0.5, 2.0, (7, 5))
    y = run(name, {"a": a, "b": b})["y"]
    assert y.shape == (3, 7, 5)
    expected = BINARY_FORMS[name](np.broadcast_to(a, y.shape), np.broadcast_to(b, y.shape))
    np.testing.assert_allclose(y, expected, rtol=1e-13)


@covers("max", "min")
def test_max_min_propagate_nan():
    a = np.array([np.nan, 1.0, 2.0])
    b = np.array([0.0, np.nan, 3.0])
    np.testing.assert_array_equal(run("max", {"a": a, "b": b})["y"], [np.nan, np.nan, 3.0])
    np.testing.assert_array_equal(run("min", {"a": a, "b": b})["y"], [np.nan, np.nan, 2.0])


COMPARE_FORMS = {
    "cmp_eq": lambda u, v: u == v, "cmp_ne": lambda u, v: u != v,
    "cmp_lt": lambda u, v: u < v, "cmp_le": lambda u, v: u <= v,
    "cmp_gt": lambda u, v: u > v, "cmp_ge": lambda u, v: u >= v,
}


@covers(*COMPARE_FORMS)
@pytest.mark.parametrize("name", sorted(COMPARE_FORMS))
def test_comparisons_give_bool(name):
    g = rng()
    a = g.integers(0, 3, (3, 5)).astype(np.float64)  # small integers: many ties
    b = g.integers(0, 3, (5,)).astype(np.float64)
    y = run(name, {"a": a, "b": b})["y"]
    assert y.dtype == np.bool_ and y.shape == (3, 5)
    expected = [[COMPARE_FORMS[name](float(u), float(v)) for u, v in zip(row, b)] for row in a]
    np.testing.assert_array_equal(y, expected)


@covers("logical_and", "logical_or", "logical_not", "select")
def test_logic_and_select():
    a = np.array([[True], [False]])
    b = np.array([True, False, True])
    np.testing.assert_array_equal(run("logical_and", {"a": a, "b": b})["y"],
                                  [[True, False, True], [False, False, False]])
    np.testing.assert_array_equal(run("logical_or", {"a": a, "b": b})["y"],
                                  [[True, True, True], [True, False, True]])
    np.testing.assert_array_equal(run("logical_not", {"x": b})["y"], [False, True, False])
    x = np.array([1.0, 2.0, 3.0])
    y = run("select", {"cond": a, "a": x, "b": np.array(-1.0)})["y"]
    np.testing.assert_array_equal(y, [[1.0, 2.0, 3.0], [-1.0, -1.0, -1.0]])


@covers("gen_index")
def test_gen_index_positions():
    x = rng().normal(size=(3, 5, 2)) > 0  # any element type: only the shape is read
    y = run("gen_index", {"x": x}, axis=1)["y"]
    assert y.dtype == np.float64 and y.shape == (3, 5, 2)
    for i, j, k in np.ndindex(y.shape):
        assert y[i, j, k] == j
    # A causal mask from two index tensors: row >= column.
    s = np.zeros((4, 4))
    rows, cols = run("gen_index", {"x": s}, axis=0)["y"], run("gen_index", {"x": s}, axis=1)["y"]
    np.testing.assert_array_equal(run("cmp_ge", {"a": rows, "b": cols})["y"],
                                  np.tril(np.ones((4, 4), dtype=bool)))


# backward op -> (forward op, attrs)
ACTIVATION_BACKWARD = {
    "relu_backward": ("relu", {}),
    "gelu_backward": ("gelu", {}),
    "silu_backward": ("silu", {}),
    "sigmoid_backward": ("sigmoid", {}),
    "tanh_backward": ("tanh", {}),
    "swish_backward": ("swish", {"beta": 1.7}),
    "elu_backward": ("elu", {"alpha": 0.6}),
    "leaky_relu_backward": ("leaky_relu", {"negative_slope": 0.2}),
    # x in [-3, 3]: beta x crosses the threshold, the linear region is checked too.
    "softplus_backward": ("softplus", {"beta": 2.0, "threshold": 3.0}),
}


@covers(*ACTIVATION_BACKWARD)
@pytest.mark.parametrize("name,approximate", [(n, None) for n in sorted(ACTIVATION_BACKWARD)]
                         + [("gelu_backward", "tanh")])
def test_activation_backward_is_derivative(name, approximate):
    forward, attrs = ACTIVATION_BACKWARD[name]
    if approximate:
        attrs = {"approximate": approximate}
    g = rng()
    x = g.uniform(-3, 3, (3, 5))
    x = np.where(np.abs(x) < 0.05, 0.5, x)  # relu: away from the kink
    if name == "softplus_backward":  # away from the switch at beta x = threshold
        x = np.where(np.abs(x - 1.5) < 0.05, 1.0, x)
    dy = g.normal(size=(5,))  # broadcasts against x
    dx = run(name, {"dy": dy, "x": x}, **attrs)["dx"]
    h = 1e-6  # elementwise op: the whole array can be perturbed at once
    slope = (run(forward, {"x": x + h}, **attrs)["y"]
             - run(forward, {"x": x - h}, **attrs)["y"]) / (2 * h)
    np.testing.assert_allclose(dx, dy * slope, rtol=1e-7, atol=1e-9)


@covers("elu_backward", "leaky_relu_backward")
def test_elu_and_leaky_relu_backward_at_zero_take_the_negative_side():
    # PyTorch's convention: the slope at x = 0 is the negative side's.
    x, dy = np.array([0.0, -1.0, 2.0]), np.array([3.0, 3.0, 3.0])
    elu = run("elu_backward", {"dy": dy, "x": x}, alpha=0.5)["dx"]
    np.testing.assert_allclose(elu, [1.5, 1.5 * np.exp(-1.0), 3.0])
    leaky = run("leaky_relu_backward", {"dy": dy, "x": x}, negative_slope=0.1)["dx"]
    np.testing.assert_allclose(leaky, [0.3, 0.3, 3.0])


@covers("relu_backward")
def test_relu_backward_inf_gradient_is_masked():
    dx = run("relu_backward", {"dy": np.array([np.inf, np.inf]), "x": np.array([-1.0, 1.0])})["dx"]
    np.testing.assert_array_equal(dx, [0.0, np.inf])


# ----------------------------------------------------------------------------
# Tensor ops and rounding
# ----------------------------------------------------------------------------

@covers("cast", "constant")
def test_cast_and_constant():
    x = np.array([[0.0, -2.5], [1e-30, 3.0]])
    y = ref.evaluate("cast", {"x": x}, {}, {"y": TensorInfo((2, 2), data_type.HALF)})["y"]
    np.testing.assert_array_equal(y, x)  # identity: the caller rounds
    b = ref.evaluate("cast", {"x": x}, {}, {"y": TensorInfo((2, 2), data_type.BOOLEAN)})["y"]
    np.testing.assert_array_equal(b, [[False, True], [True, True]])
    back = ref.evaluate("cast", {"x": b}, {}, {"y": TensorInfo((2, 2), data_type.FLOAT)})["y"]
    assert back.dtype == np.float64
    np.testing.assert_array_equal(back, [[0.0, 1.0], [1.0, 1.0]])
    c = run("constant", {}, value=-1.25)["y"]
    assert c.shape == () and c == -1.25


@covers("reshape", "transpose", "slice", "concat")
def test_shape_ops_match_numpy():
    x = np.arange(3 * 5 * 7, dtype=np.float64).reshape(7, 5, 3).T  # (3, 5, 7) non-contiguous
    y = run("reshape", {"x": x}, declared={"y": (5, 21)})["y"]
    np.testing.assert_array_equal(y.ravel(), [x[i] for i in np.ndindex(x.shape)])  # row-major
    t = run("transpose", {"x": x}, permutation=(2, 0, 1))["y"]
    assert t.shape == (7, 3, 5) and t[6, 2, 4] == x[2, 4, 6]
    s = run("slice", {"x": x}, start=(1, 0, 2), limit=(3, 5, 7), step=(1, 2, 3))["y"]
    np.testing.assert_array_equal(s, [[[x[i, j, k] for k in (2, 5)] for j in (0, 2, 4)]
                                      for i in (1, 2)])
    head = run("concat", {"a": x[:, :1], "b": x[:, 1:4]}, axis=1)["y"]
    np.testing.assert_array_equal(run("concat", {"a": head, "b": x[:, 4:]}, axis=1)["y"], x)
    mask = x > 50
    assert run("reshape", {"x": mask}, declared={"y": (105,)})["y"].dtype == np.bool_


def test_round_to_storage_types():
    v = np.array([1 + 2 ** -8, 1 + 3 * 2 ** -8, 1 + 2 ** -9, 70000.0, np.nan])
    # bf16 keeps 7 mantissa bits: the first two are ties, which go to even.
    np.testing.assert_array_equal(ref.round_to(v, data_type.BFLOAT16),
                                  [1.0, 1 + 2 ** -6, 1.0, 70144.0, np.nan])
    np.testing.assert_array_equal(ref.round_to(v, data_type.HALF),
                                  [1 + 2 ** -8, 1 + 3 * 2 ** -8, 1 + 2 ** -9, np.inf, np.nan])
    np.testing.assert_array_equal(ref.round_to(v, data_type.FLOAT), v)
    # One correct rounding from float64 (no double rounding through float32).
    assert ref.round_to(np.array([1 + 2 ** -8 + 2 ** -30]), "bf16")[0] == 1 + 2 ** -7
    b = ref.round_to(np.array([0.0, 2.0]), data_type.BOOLEAN)
    assert b.dtype == np.bool_ and list(b) == [False, True]
    flags = np.array([True, False])
    np.testing.assert_array_equal(ref.round_to(flags, data_type.FLOAT), flags)
    assert ref.round_to(flags, data_type.FLOAT).dtype == np.bool_


def test_round_to_fp8_saturates():
    v = np.array([1e6, -1e6, np.inf, 449.0, 300.0, np.nan])
    np.testing.assert_array_equal(ref.round_to(v, data_type.FP8_E4M3),
                                  [448, -448, 448, 448, 288, np.nan])
    v = np.array([1e9, -60000.0, 57344.0, 3.0])
    np.testing.assert_array_equal(ref.round_to(v, data_type.FP8_E5M2),
                                  [57344, -57344, 57344, 3.0])


def test_tf32_rounding_drops_low_bits():
    x = rng().normal(size=(5, 7)) * 1e3
    t = ref.round_tf32(x)
    bits = t.astype(np.float32).view(np.uint32)
    assert np.all(bits & 0x1FFF == 0)  # 13 low mantissa bits cleared
    np.testing.assert_allclose(t, x, rtol=2 ** -11)  # within half a tf32 ulp
    # Ties to even: 1 + 2^-11 is halfway between 1 and 1 + 2^-10.
    tie = np.array([1 + 2 ** -11, 1 + 3 * 2 ** -11, 1 + 2 ** -11 + 2 ** -20, -np.inf, np.nan])
    np.testing.assert_array_equal(ref.round_tf32(tie),
                                  [1.0, 1 + 2 ** -9, 1 + 2 ** -10, -np.inf, np.nan])


# ----------------------------------------------------------------------------
# Matmul
# ----------------------------------------------------------------------------

@covers("matmul")
def test_matmul_broadcast_batch_vs_loops():
    g = rng()
    a = g.normal(size=(2, 1, 3, 5))
    b = noncontiguous(g.normal(size=(4, 5, 7)))
    c = run("matmul", {"a": a, "b": b})["c"]
    assert c.shape == (2, 4, 3, 7)
    for i, j, m, n in np.ndindex(c.shape):
        assert c[i, j, m, n] == pytest.approx(sum(a[i, 0, m, k] * b[j, k, n] for k in range(5)),
                                              rel=1e-12)


@covers("matmul")
def test_matmul_tf32_rounds_operands():
    a = np.array([[1 + 2 ** -12, 1.0]])
    b = np.array([[1.0], [1 + 2 ** -13]])
    assert run("matmul", {"a": a, "b": b})["c"][0, 0] == 2 + 2 ** -12 + 2 ** -13
    assert run("matmul", {"a": a, "b": b}, compute_type="tf32")["c"][0, 0] == 2.0
    g = rng()
    a, b = g.normal(size=(3, 5)), g.normal(size=(5, 7))
    np.testing.assert_allclose(run("matmul", {"a": a, "b": b}, compute_type="tf32")["c"],
                               ref.round_tf32(a) @ ref.round_tf32(b), rtol=1e-14)


@covers("matmul_block_scaled")
def test_matmul_block_scaled_vs_loops():
    """Each product scaled by its row's scale of A at its K block and its
    block's scale of B (K = 200: a last block of 72; N = 130: of 2)."""
    g = rng()
    m, k, n = 3, 200, 130
    a, b = g.normal(size=(m, k)), g.normal(size=(k, n))
    sa, sb = 2.0 ** g.integers(-8, 9, size=(m, 2)), 2.0 ** g.integers(-8, 9, size=(2, 2))
    c = run("matmul_block_scaled", {"a": a, "b": b, "a_scale": sa, "b_scale": sb})["c"]
    assert c.shape == (m, n)
    for i, j in ((0, 0), (2, 129), (1, 127), (1, 128)):
        want = sum(a[i, q] * b[q, j] * sa[i, q // 128] * sb[q // 128, j // 128]
                   for q in range(k))
        assert c[i, j] == pytest.approx(want, rel=1e-12)
    # One scale changed moves only the outputs of its rows and column block.
    sb2 = sb.copy()
    sb2[1, 0] *= 2
    c2 = run("matmul_block_scaled", {"a": a, "b": b, "a_scale": sa, "b_scale": sb2})["c"]
    assert np.array_equal(c2[:, 128:], c[:, 128:]) and not np.allclose(c2[:, :128], c[:, :128])


# ----------------------------------------------------------------------------
# Convolution
# ----------------------------------------------------------------------------

def conv_attrs(nd, pre=0, post=0, stride=1, dilation=1, mode="cross_correlation"):
    def per_dim(v):
        return tuple(v) if isinstance(v, tuple) else (v,) * nd
    return dict(pre_padding=per_dim(pre), post_padding=per_dim(post), stride=per_dim(stride),
                dilation=per_dim(dilation), mode=mode)


def naive_conv(x, w, a):
    """Direct definition: y[n,k,o] = sum_{c in group, t} x[n,c,o*s + t*d - pre] w[k,c,t]."""
    nd = x.ndim - 2
    cg, k = w.shape[1], w.shape[0]
    kg = k // (x.shape[1] // cg)
    out = [(x.shape[2 + i] + a["pre_padding"][i] + a["post_padding"][i]
            - a["dilation"][i] * (w.shape[2 + i] - 1) - 1) // a["stride"][i] + 1 for i in range(nd)]
    y = np.zeros((x.shape[0], k, *out))
    for kk in range(k):
        group = kk // kg
        for o in itertools.product(*map(range, out)):
            for t in itertools.product(*map(range, w.shape[2:])):
                pos = [o[i] * a["stride"][i] + t[i] * a["dilation"][i] - a["pre_padding"][i]
                       for i in range(nd)]
                if all(0 <= p < x.shape[2 + i] for i, p in enumerate(pos)):
                    xs = x[(slice(None), slice(group * cg, (group + 1) * cg), *pos)]
                    y[(slice(None), kk, *o)] += xs @ w[(kk, slice(None), *t)]
    return y


CONV_CASES = {
    "2d_plain": ((2, 3, 7, 5), (4, 3, 3, 2), conv_attrs(2)),
    "2d_pad_stride_dilation": ((2, 3, 7, 6), (5, 3, 3, 2),
                               conv_attrs(2, pre=(2, 0), post=(1, 1), stride=(2, 3),
                                          dilation=(1, 2))),
    "2d_groups": ((1, 6, 5, 7), (9, 2, 2, 3), conv_attrs(2, pre=1, post=(0, 2), stride=(1, 2))),
    "2d_depthwise_convolution_mode": ((2, 3, 5, 5), (3, 1, 3, 3),
                                      conv_attrs(2, pre=1, post=1, mode="convolution")),
    "3d_groups_stride": ((1, 4, 5, 4, 3), (6, 2, 2, 3, 2),
                         conv_attrs(3, pre=(1, 0, 1), post=(0, 1, 0), stride=(2, 1, 1),
                                    dilation=(1, 1, 2))),
}


def _case(name):
    xs, ws, a = CONV_CASES[name]
    g = rng()
    return noncontiguous(g.normal(size=xs)), g.normal(size=ws), a


@covers("conv_fprop")
@pytest.mark.parametrize("case", sorted(CONV_CASES))
def test_conv_fprop_vs_naive_loops(case):
    x, w, a = _case(case)
    if a["mode"] == "convolution":
        expected = naive_conv(x, np.flip(w, axis=tuple(range(2, w.ndim))), a)
    else:
        expected = naive_conv(x, w, a)
    np.testing.assert_allclose(run("conv_fprop", {"x": x, "w": w}, **a)["y"], expected,
                               rtol=1e-12, atol=1e-12)


@covers("conv_fprop")
def test_conv_delta_filter_shifts_input():
    x = rng().normal(size=(2, 3, 7, 5))
    w = np.zeros((3, 3, 3, 2))
    for c in range(3):
        w[c, c, 2, 1] = 1.0  # identity across channels at tap (2, 1)
    y = run("conv_fprop", {"x": x, "w": w}, **conv_attrs(2))["y"]
    np.testing.assert_array_equal(y, x[:, :, 2:, 1:])
    # With dilation 2 and stride (1, 2), tap (2, 1) reads from row 4, column 2,
    # every other column.
    y = run("conv_fprop", {"x": x, "w": w}, **conv_attrs(2, dilation=2, stride=(1, 2)))["y"]
    np.testing.assert_array_equal(y, x[:, :, 4:, 2::2])


@covers("conv_fprop")
def test_1x1_conv_is_matmul():
    g = rng()
    x, w = g.normal(size=(2, 5, 3, 7)), g.normal(size=(4, 5, 1, 1))
    y = run("conv_fprop", {"x": x, "w": w}, **conv_attrs(2))["y"]
    expected = np.matmul(w[:, :, 0, 0], x.reshape(2, 5, 21)).reshape(2, 4, 3, 7)
    np.testing.assert_allclose(y, expected, rtol=1e-13, atol=1e-13)


@covers("conv_fprop")
def test_convolution_mode_is_flipped_cross_correlation():
    x, w, a = _case("3d_groups_stride")
    conv = run("conv_fprop", {"x": x, "w": w}, **dict(a, mode="convolution"))["y"]
    flipped = np.flip(w, axis=(2, 3, 4))
    xcorr = run("conv_fprop", {"x": x, "w": flipped}, **a)["y"]
    np.testing.assert_allclose(conv, xcorr, rtol=1e-13, atol=1e-13)


@covers("conv_fprop", "conv_dgrad", "conv_wgrad")
@pytest.mark.parametrize("case", sorted(CONV_CASES))
def test_conv_gradients_are_adjoints(case):
    """<conv(x, w), dy> == <x, dgrad(dy, w)> == <w, wgrad(dy, x)>."""
    x, w, a = _case(case)
    y = run("conv_fprop", {"x": x, "w": w}, **a)["y"]
    dy = noncontiguous(rng().normal(size=y.shape))
    dx = run("conv_dgrad", {"dy": dy, "w": w}, declared={"dx": x.shape}, **a)["dx"]
    dw = run("conv_wgrad", {"dy": dy, "x": x}, declared={"dw": w.shape}, **a)["dw"]
    inner = np.sum(y * dy)
    tol = 1e-12 * np.sum(np.abs(y * dy))  # relative to the terms, not their sum
    np.testing.assert_allclose(np.sum(x * dx), inner, rtol=0, atol=tol)
    np.testing.assert_allclose(np.sum(w * dw), inner, rtol=0, atol=tol)


@covers("conv_dgrad", "conv_wgrad")
def test_conv_gradients_of_unreached_input_are_zero():
    # H = 8, window 3, stride 2: outputs read rows 0..6; row 7 gets no gradient.
    g = rng()
    x, w = g.normal(size=(1, 2, 8, 5)), g.normal(size=(3, 2, 3, 1))
    a = conv_attrs(2, stride=(2, 1))
    dy = g.normal(size=(1, 3, 3, 5))
    dx = run("conv_dgrad", {"dy": dy, "w": w}, declared={"dx": x.shape}, **a)["dx"]
    np.testing.assert_array_equal(dx[:, :, 7], 0.0)
    # Each dx equals the finite-difference gradient of <conv(x, w), dy> (linear in x).
    loss = lambda xx: np.sum(run("conv_fprop", {"x": xx, "w": w}, **a)["y"] * dy)  # noqa: E731
    np.testing.assert_allclose(dx, numeric_grad(loss, x), **FD)
    loss_w = lambda ww: np.sum(run("conv_fprop", {"x": x, "w": ww}, **a)["y"] * dy)  # noqa: E731
    dw = run("conv_wgrad", {"dy": dy, "x": x}, declared={"dw": w.shape}, **a)["dw"]
    np.testing.assert_allclose(dw, numeric_grad(loss_w, w), **FD)


# ----------------------------------------------------------------------------
# Attention
# ----------------------------------------------------------------------------

def naive_sdpa(q, k, v, scale, bias=None, causal=False):
    b, h, sq, _ = q.shape
    rep = h // k.shape[1]
    o = np.zeros((b, h, sq, v.shape[3]))
    lse = np.zeros((b, h, sq, 1))
    for bi, hi, i in np.ndindex(b, h, sq):
        kv = hi // rep
        scores = []
        for j in range(k.shape[2]):
            s = scale * float(q[bi, hi, i] @ k[bi, kv, j])
            if bias is not None:
                s += bias[tuple(min(idx, n - 1) for idx, n in zip((bi, hi, i, j), bias.shape))]
            scores.append(-math.inf if causal and j > i else s)
        m = max(scores)
        weights = [math.exp(s - m) for s in scores]
        total = sum(weights)
        o[bi, hi, i] = sum(wj * v[bi, kv, j] for j, wj in enumerate(weights)) / total
        lse[bi, hi, i, 0] = m + math.log(total)
    return o, lse


def _qkv(b=2, h=4, hk=2, sq=3, skv=5, d=3, dv=2):
    g = rng()
    return (noncontiguous(g.normal(size=(b, h, sq, d))), g.normal(size=(b, hk, skv, d)),
            g.normal(size=(b, hk, skv, dv)))


@covers("sdpa")
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("with_bias", [False, True])
def test_sdpa_vs_naive(causal, with_bias):
    q, k, v = _qkv()
    bias = rng().normal(size=(1, 4, 3, 5)) if with_bias else None
    out = run("sdpa", {"q": q, "k": k, "v": v, "bias": bias}, scale=0.6, causal=causal,
              generate_stats=True)
    o, lse = naive_sdpa(q, k, v, 0.6, bias, causal)
    np.testing.assert_allclose(out["o"], o, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(out["stats"], lse, rtol=1e-12)


@covers("sdpa")
def test_sdpa_single_key_returns_v():
    q, k, v = _qkv(skv=1)
    out = run("sdpa", {"q": q, "k": k, "v": v}, scale=0.5, generate_stats=True)
    np.testing.assert_allclose(out["o"], np.repeat(np.broadcast_to(v, (2, 2, 3, 2)), 2, axis=1),
                               rtol=1e-14)
    scores = 0.5 * np.einsum("bhid,bhd->bhi", q, np.repeat(k[:, :, 0], 2, axis=1))
    np.testing.assert_allclose(out["stats"][..., 0], scores, rtol=1e-13)


@covers("sdpa")
def test_sdpa_causal_first_row_is_first_value():
    q, k, v = _qkv()
    o = run("sdpa", {"q": q, "k": k, "v": v}, scale=1.0, causal=True)["o"]
    np.testing.assert_allclose(o[:, :, 0], np.repeat(v[:, :, 0], 2, axis=1), rtol=1e-14)
    assert "stats" not in run("sdpa", {"q": q, "k": k, "v": v}, scale=1.0)


@covers("sdpa", "sdpa_backward")
def test_gqa_equals_repeated_heads():
    q, k, v = _qkv()
    attrs = dict(scale=0.4, causal=True)
    grouped = run("sdpa", {"q": q, "k": k, "v": v}, generate_stats=True, **attrs)
    kr, vr = np.repeat(k, 2, axis=1), np.repeat(v, 2, axis=1)
    full = run("sdpa", {"q": q, "k": kr, "v": vr}, generate_stats=True, **attrs)
    np.testing.assert_allclose(grouped["o"], full["o"], rtol=1e-14)
    do = rng().normal(size=grouped["o"].shape)
    common = {"q": q, "o": grouped["o"], "do": do, "stats": grouped["stats"]}
    bg = run("sdpa_backward", dict(common, k=k, v=v), **attrs)
    bf = run("sdpa_backward", dict(common, k=kr, v=vr), **attrs)
    np.testing.assert_allclose(bg["dq"], bf["dq"], rtol=1e-12)
    # The kv gradient sums over the query heads that share the kv head.
    np.testing.assert_allclose(bg["dk"], bf["dk"].reshape(2, 2, 2, 5, 3).sum(2), rtol=1e-12)
    np.testing.assert_allclose(bg["dv"], bf["dv"].reshape(2, 2, 2, 5, 2).sum(2), rtol=1e-12)


@covers("sdpa", "sdpa_backward")
def test_sdpa_fully_masked_row_gives_zeros():
    q, k, v = _qkv()
    bias = np.zeros((2, 1, 3, 5))
    bias[0, 0, 1, :] = -np.inf  # every key of batch 0, query 1 is masked
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = run("sdpa", {"q": q, "k": k, "v": v, "bias": bias}, scale=0.5, generate_stats=True)
        grads = run("sdpa_backward", {"q": q, "k": k, "v": v, "o": out["o"], "do": np.ones_like(
            out["o"]), "stats": out["stats"], "bias": bias}, scale=0.5)
    np.testing.assert_array_equal(out["o"][0, :, 1], 0.0)
    np.testing.assert_array_equal(out["stats"][0, :, 1], -np.inf)
    assert np.all(np.isfinite(out["o"]))
    np.testing.assert_array_equal(grads["dq"][0, :, 1], 0.0)
    assert all(np.all(np.isfinite(g)) for g in grads.values())


@covers("sdpa_backward")
@pytest.mark.parametrize("causal", [False, True])
def test_sdpa_backward_vs_finite_differences(causal):
    q, k, v = _qkv(b=1)
    bias = rng().normal(size=(1, 1, 3, 5))
    attrs = dict(scale=0.7, causal=causal)
    fwd = run("sdpa", {"q": q, "k": k, "v": v, "bias": bias}, generate_stats=True, **attrs)
    do = rng().normal(size=fwd["o"].shape)
    grads = run("sdpa_backward", {"q": q, "k": k, "v": v, "o": fwd["o"], "do": do,
                                  "stats": fwd["stats"], "bias": bias}, **attrs)

    def loss(**change):
        ops = dict({"q": q, "k": k, "v": v, "bias": bias}, **change)
        return np.sum(run("sdpa", ops, **attrs)["o"] * do)

    np.testing.assert_allclose(grads["dq"], numeric_grad(lambda t: loss(q=t), q), **FD)
    np.testing.assert_allclose(grads["dk"], numeric_grad(lambda t: loss(k=t), k), **FD)
    np.testing.assert_allclose(grads["dv"], numeric_grad(lambda t: loss(v=t), v), **FD)


# ----------------------------------------------------------------------------
# Normalization
# ----------------------------------------------------------------------------

@covers("layernorm")
def test_layernorm_standardizes():
    x = noncontiguous(rng().normal(2.0, 3.0, size=(3, 5, 7)))
    out = run("layernorm", {"x": x}, axis=1, epsilon=0.0, training=True)
    y = out["y"]
    np.testing.assert_allclose(y.mean(axis=(1, 2)), 0.0, atol=1e-14)
    np.testing.assert_allclose(y.var(axis=(1, 2)), 1.0, rtol=1e-13)
    assert out["mean"].shape == (3, 1, 1)
    np.testing.assert_allclose(out["mean"][:, 0, 0], x.reshape(3, -1).mean(1), rtol=1e-13)
    np.testing.assert_allclose(out["inv_variance"][:, 0, 0], 1 / x.reshape(3, -1).std(1),
                               rtol=1e-13)
    g = rng()
    scale, bias = g.normal(size=(1, 5, 7)), g.normal(size=(1, 5, 7))
    z = run("layernorm", {"x": x, "scale": scale, "bias": bias}, axis=1, epsilon=0.0)
    np.testing.assert_allclose(z["y"], y * scale + bias, rtol=1e-12, atol=1e-13)
    assert set(z) == {"y"}


@covers("rmsnorm")
def test_rmsnorm_unit_rms():
    x = rng().normal(1.0, 2.0, size=(3, 5, 7))
    out = run("rmsnorm", {"x": x}, axis=2, epsilon=0.0, training=True)
    np.testing.assert_allclose(np.mean(out["y"] ** 2, axis=2), 1.0, rtol=1e-13)
    np.testing.assert_allclose(out["inv_rms"][..., 0], 1 / np.sqrt(np.mean(x ** 2, axis=2)),
                               rtol=1e-13)
    eps = run("rmsnorm", {"x": x, "bias": np.ones((1, 1, 7))}, axis=2, epsilon=0.5)["y"]
    np.testing.assert_allclose(eps, x / np.sqrt(np.mean(x ** 2, 2, keepdims=True) + 0.5) + 1,
                               rtol=1e-13)


def check_norm_backward(forward, backward, x, stat_names, params, **attrs):
    """The backward op's dx, dscale and dbias against finite differences of
    <forward(x, scale, bias).y, dy>."""
    g = rng()
    if forward != "batchnorm":  # batchnorm is training-only and has no such attribute
        attrs = dict(attrs, training=True)
    fwd = run(forward, dict({"x": x}, **params), **attrs)
    dy = g.normal(size=x.shape)
    stats = {name: fwd[name] for name in stat_names}
    battrs = {k: v for k, v in attrs.items() if k not in ("epsilon", "training")}
    if forward != "batchnorm":
        battrs["has_bias"] = "bias" in params
    ops = dict({"dy": dy, "x": x}, scale=params.get("scale"), **stats)
    grads = run(backward, ops, **battrs)

    def loss(**change):
        ops = dict({"x": x}, **params)
        ops.update(change)
        return np.sum(run(forward, ops, **attrs)["y"] * dy)

    np.testing.assert_allclose(grads["dx"], numeric_grad(lambda t: loss(x=t), x), **FD)
    for p in ("scale", "bias"):
        if p in params:
            num = numeric_grad(lambda t: loss(**{p: t}), params[p])
            np.testing.assert_allclose(grads["d" + p], num, **FD)
        else:
            assert "d" + p not in grads


@covers("layernorm_backward")
@pytest.mark.parametrize("affine", [True, False])
def test_layernorm_backward(affine):
    g = rng()
    x = g.normal(size=(3, 2, 5))
    params = {"scale": g.normal(size=(1, 2, 5)), "bias": g.normal(size=(1, 2, 5))} if affine else {}
    check_norm_backward("layernorm", "layernorm_backward", x, ("mean", "inv_variance"), params,
                        axis=1, epsilon=0.1)


@covers("rmsnorm_backward")
@pytest.mark.parametrize("affine", [True, False])
def test_rmsnorm_backward(affine):
    g = rng()
    x = g.normal(size=(2, 3, 5))
    params = {"scale": g.normal(size=(1, 1, 5)), "bias": g.normal(size=(1, 1, 5))} if affine else {}
    check_norm_backward("rmsnorm", "rmsnorm_backward", x, ("inv_rms",), params, axis=2,
                        epsilon=0.1)


@covers("batchnorm")
def test_batchnorm_training_statistics():
    g = rng()
    x = noncontiguous(g.normal(1.0, 2.0, size=(3, 5, 2, 3)))
    ones, zeros = np.ones((1, 5, 1, 1)), np.zeros((1, 5, 1, 1))
    rm, rv = g.normal(size=(1, 5, 1, 1)), g.uniform(1, 2, size=(1, 5, 1, 1))
    out = run("batchnorm", {"x": x, "scale": ones, "bias": zeros, "running_mean": rm,
                            "running_var": rv}, epsilon=0.0, momentum=0.25)
    np.testing.assert_allclose(out["y"].mean(axis=(0, 2, 3)), 0.0, atol=1e-14)
    np.testing.assert_allclose(out["y"].var(axis=(0, 2, 3)), 1.0, rtol=1e-13)
    per_channel = np.moveaxis(x, 1, 0).reshape(5, -1)
    np.testing.assert_allclose(out["mean"].ravel(), per_channel.mean(1), rtol=1e-13)
    np.testing.assert_allclose(out["inv_variance"].ravel(), 1 / per_channel.std(1), rtol=1e-13)
    np.testing.assert_allclose(out["next_running_mean"].ravel(),
                               0.75 * rm.ravel() + 0.25 * per_channel.mean(1), rtol=1e-13)
    np.testing.assert_allclose(out["next_running_var"].ravel(),
                               0.75 * rv.ravel() + 0.25 * per_channel.var(1, ddof=1), rtol=1e-13)
    assert "next_running_mean" not in run("batchnorm", {"x": x, "scale": ones, "bias": zeros})


@covers("batchnorm_inference")
def test_batchnorm_inference_formula():
    g = rng()
    x = g.normal(size=(2, 3, 5))
    scale, bias, mean = (g.normal(size=(1, 3, 1)) for _ in range(3))
    var = g.uniform(0.5, 2, size=(1, 3, 1))
    y = run("batchnorm_inference", {"x": x, "scale": scale, "bias": bias, "mean": mean,
                                    "variance": var}, epsilon=0.01)["y"]
    for c in range(3):
        expected = (x[:, c] - mean[0, c, 0]) / math.sqrt(var[0, c, 0] + 0.01) * scale[0, c, 0]
        np.testing.assert_allclose(y[:, c], expected + bias[0, c, 0], rtol=1e-13)


@covers("batchnorm_backward")
def test_batchnorm_backward():
    g = rng()
    x = g.normal(size=(3, 2, 5))
    params = {"scale": g.normal(size=(1, 2, 1)), "bias": g.normal(size=(1, 2, 1))}
    check_norm_backward("batchnorm", "batchnorm_backward", x, ("mean", "inv_variance"), params,
                        epsilon=0.1)


@covers("groupnorm", "instancenorm")
def test_groupnorm_extremes():
    x = rng().normal(size=(2, 6, 5, 3))
    one = run("groupnorm", {"x": x}, groups=1, epsilon=1e-3, training=True)
    ln = run("layernorm", {"x": x}, axis=1, epsilon=1e-3, training=True)
    np.testing.assert_allclose(one["y"], ln["y"], rtol=1e-13)
    np.testing.assert_allclose(one["mean"], ln["mean"], rtol=1e-13)
    per_channel = run("groupnorm", {"x": x}, groups=6, epsilon=1e-3, training=True)
    inst = run("instancenorm", {"x": x}, epsilon=1e-3, training=True)
    for key in ("y", "mean", "inv_variance"):
        np.testing.assert_allclose(per_channel[key], inst[key], rtol=1e-13)
    assert inst["mean"].shape == (2, 6, 1, 1)
    np.testing.assert_allclose(inst["mean"][..., 0, 0], x.mean(axis=(2, 3)), rtol=1e-13)
    np.testing.assert_allclose(inst["inv_variance"][..., 0, 0],
                               1 / np.sqrt(x.var(axis=(2, 3)) + 1e-3), rtol=1e-13)


@covers("groupnorm")
def test_groupnorm_groups_of_three():
    g = rng()
    x = g.normal(size=(2, 6, 7))
    scale, bias = g.normal(size=(1, 6, 1)), g.normal(size=(1, 6, 1))
    out = run("groupnorm", {"x": x, "scale": scale, "bias": bias}, groups=2, epsilon=0.0,
              training=True)
    assert out["mean"].shape == (2, 2, 1)
    for n, grp in np.ndindex(2, 2):
        block = x[n, 3 * grp:3 * grp + 3]
        xhat = (block - block.mean()) / block.std()
        expected = xhat * scale[0, 3 * grp:3 * grp + 3] + bias[0, 3 * grp:3 * grp + 3]
        np.testing.assert_allclose(out["y"][n, 3 * grp:3 * grp + 3], expected, rtol=1e-12)


@covers("groupnorm_backward")
@pytest.mark.parametrize("affine", [True, False])
def test_groupnorm_backward(affine):
    g = rng()
    x = g.normal(size=(2, 6, 3))
    params = {"scale": g.normal(size=(1, 6, 1)), "bias": g.normal(size=(1, 6, 1))} if affine else {}
    check_norm_backward("groupnorm", "groupnorm_backward", x, ("mean", "inv_variance"), params,
                        groups=3, epsilon=0.1)


@covers("instancenorm_backward")
def test_instancenorm_backward():
    g = rng()
    x = g.normal(size=(2, 3, 2, 3))
    params = {"scale": g.normal(size=(1, 3, 1, 1)), "bias": g.normal(size=(1, 3, 1, 1))}
    check_norm_backward("instancenorm", "instancenorm_backward", x, ("mean", "inv_variance"),
                        params, epsilon=0.1)


# ----------------------------------------------------------------------------
# Softmax
# ----------------------------------------------------------------------------

@covers("softmax", "log_softmax")
def test_softmax_and_log_softmax():
    x = noncontiguous(rng().normal(size=(3, 5, 7))) * 3 + 800  # stable for large inputs
    y = run("softmax", {"x": x}, axis=1)["y"]
    assert np.all(y > 0)
    np.testing.assert_allclose(y.sum(axis=1), 1.0, rtol=1e-14)
    e = np.exp(x - 800)
    np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), rtol=1e-13)
    log_y = run("log_softmax", {"x": x}, axis=1)["y"]
    np.testing.assert_allclose(log_y, np.log(y), rtol=1e-13, atol=1e-13)


@covers("softmax_backward", "log_softmax_backward")
@pytest.mark.parametrize("forward", ["softmax", "log_softmax"])
def test_softmax_backward_vs_finite_differences(forward):
    g = rng()
    x, dy = g.normal(size=(3, 5, 2)), g.normal(size=(3, 5, 2))
    y = run(forward, {"x": x}, axis=1)["y"]
    dx = run(forward + "_backward", {"dy": dy, "y": y}, axis=1)["dx"]
    loss = lambda t: np.sum(run(forward, {"x": t}, axis=1)["y"] * dy)  # noqa: E731
    np.testing.assert_allclose(dx, numeric_grad(loss, x), **FD)


# ----------------------------------------------------------------------------
# Reductions
# ----------------------------------------------------------------------------

REDUCTION_FORMS = {
    "sum": lambda x, ax: np.add.reduce(x, axis=ax),
    "mean": lambda x, ax: np.add.reduce(x, axis=ax) / np.prod([x.shape[a] for a in ax]),
    "max": lambda x, ax: np.maximum.reduce(x, axis=ax),
    "min": lambda x, ax: np.minimum.reduce(x, axis=ax),
    "prod": lambda x, ax: np.multiply.reduce(x, axis=ax),
    "amax": lambda x, ax: np.maximum.reduce(np.abs(x), axis=ax),
    "norm1": lambda x, ax: np.add.reduce(np.abs(x), axis=ax),
    "norm2": lambda x, ax: np.sqrt(np.add.reduce(x * x, axis=ax)),
}


@covers("reduction")
@pytest.mark.parametrize("mode", sorted(REDUCTION_FORMS))
@pytest.mark.parametrize("keepdims", [True, False])
def test_reduction_modes(mode, keepdims):
    x = noncontiguous(rng().normal(size=(3, 5, 7)))
    y = run("reduction", {"x": x}, mode=mode, axes=(0, 2), keepdims=keepdims)["y"]
    expected = REDUCTION_FORMS[mode](x, (0, 2))
    assert y.shape == ((1, 5, 1) if keepdims else (5,))
    np.testing.assert_allclose(y.reshape(expected.shape), expected, rtol=1e-13)


@covers("reduction")
def test_amax_is_largest_magnitude():
    x = np.array([[1.0, -9.0, 3.0]])
    assert run("reduction", {"x": x}, mode="amax", axes=(1,), keepdims=False)["y"][0] == 9.0
    assert run("reduction", {"x": x}, mode="max", axes=(1,), keepdims=False)["y"][0] == 3.0


# ----------------------------------------------------------------------------
# Pooling
# ----------------------------------------------------------------------------

def pool_attrs(nd, mode, window, stride=1, pre=0, post=0, count_include_pad=False):
    def per_dim(v):
        return tuple(v) if isinstance(v, tuple) else (v,) * nd
    return dict(mode=mode, window=per_dim(window), stride=per_dim(stride),
                pre_padding=per_dim(pre), post_padding=per_dim(post),
                count_include_pad=count_include_pad)


def naive_pool(x, a):
    nd = x.ndim - 2
    out = [(x.shape[2 + i] + a["pre_padding"][i] + a["post_padding"][i] - a["window"][i])
           // a["stride"][i] + 1 for i in range(nd)]
    y = np.zeros(x.shape[:2] + tuple(out))
    for o in itertools.product(*map(range, out)):
        lo = [o[i] * a["stride"][i] - a["pre_padding"][i] for i in range(nd)]
        hi = [lo[i] + a["window"][i] for i in range(nd)]
        region = x[(slice(None), slice(None)) + tuple(
            slice(max(lo[i], 0), min(hi[i], x.shape[2 + i])) for i in range(nd))]
        if a["mode"] == "max":
            y[(slice(None), slice(None)) + o] = region.max(axis=tuple(range(2, x.ndim)))
        else:
            count = math.prod(a["window"]) if a["count_include_pad"] else region[0, 0].size
            y[(slice(None), slice(None)) + o] = region.sum(axis=tuple(range(2, x.ndim))) / count
    return y


POOL_CASES = {
    "max2d": ((2, 3, 7, 5), pool_attrs(2, "max", (3, 2), (2, 1), (1, 0), (1, 1))),
    "avg2d_exclude_pad": ((2, 3, 7, 5), pool_attrs(2, "avg", 3, 2, 1, (2, 1))),
    "avg2d_include_pad": ((2, 3, 7, 5), pool_attrs(2, "avg", 3, 2, 1, (2, 1), True)),
    "max3d": ((1, 2, 5, 4, 3), pool_attrs(3, "max", 2, (1, 2, 1), (1, 0, 1), 0)),
    "avg3d": ((1, 2, 5, 4, 3), pool_attrs(3, "avg", (3, 2, 2), 2, 1, (0, 1, 1))),
}


@covers("pooling")
@pytest.mark.parametrize("case", sorted(POOL_CASES))
def test_pooling_vs_naive(case):
    shape, a = POOL_CASES[case]
    x = noncontiguous(rng().normal(size=shape))
    np.testing.assert_allclose(run("pooling", {"x": x}, **a)["y"], naive_pool(x, a), rtol=1e-13)


@covers("pooling", "pooling_backward")
@pytest.mark.parametrize("mode", ["max", "avg"])
def test_pooling_window_one_is_identity(mode):
    x = rng().normal(size=(2, 3, 5, 7))
    a = pool_attrs(2, mode, 1)
    np.testing.assert_array_equal(run("pooling", {"x": x}, **a)["y"], x)
    np.testing.assert_array_equal(run("pooling_backward", {"dy": x, "x": x}, **a)["dx"], x)


@covers("pooling_backward")
@pytest.mark.parametrize("case", sorted(POOL_CASES))
def test_pooling_backward_vs_finite_differences(case):
    shape, a = POOL_CASES[case]
    g = rng()
    x = g.permutation(np.prod(shape)).reshape(shape) * 0.1  # distinct: no ties
    y = run("pooling", {"x": x}, **a)["y"]
    dy = g.normal(size=y.shape)
    dx = run("pooling_backward", {"dy": dy, "x": x}, **a)["dx"]
    loss = lambda t: np.sum(run("pooling", {"x": t}, **a)["y"] * dy)  # noqa: E731
    np.testing.assert_allclose(dx, numeric_grad(loss, x, h=1e-3), **FD)


@covers("pooling_backward")
def test_max_pooling_backward_ties_go_to_first():
    x = np.zeros((1, 1, 3, 4))
    x[0, 0, 2, 3] = -1.0
    a = pool_attrs(2, "max", (2, 3), 1, 0, 0)
    dy = np.arange(1.0, 5.0).reshape(1, 1, 2, 2)
    dx = run("pooling_backward", {"dy": dy, "x": x}, **a)["dx"]
    # Every window is all zeros (or zeros and -1): its first element wins.
    expected = np.zeros((3, 4))
    expected[0, 0], expected[0, 1], expected[1, 0], expected[1, 1] = 1, 2, 3, 4
    np.testing.assert_array_equal(dx[0, 0], expected)
    # Padding never wins, even over -inf.
    x = np.full((1, 1, 2, 2), -np.inf)
    a = pool_attrs(2, "max", 2, 1, 1, 0)
    dx = run("pooling_backward", {"dy": np.ones((1, 1, 2, 2)), "x": x}, **a)["dx"]
    assert dx.sum() == 4.0


# ----------------------------------------------------------------------------
# Coverage
# ----------------------------------------------------------------------------

def test_every_op_is_covered():
    names = {d.name for d in D.all_ops()}
    assert COVERED == names, (sorted(names - COVERED), sorted(COVERED - names))
    assert ref.supported_ops() == names


def test_softmax_of_an_all_minus_inf_row_is_zero_not_nan():
    x = np.array([[-np.inf, -np.inf, -np.inf], [0.0, 1.0, -np.inf]])
    info = {"y": TensorInfo((2, 3), data_type.FLOAT)}
    y = ref.evaluate("softmax", {"x": x}, {"axis": 1}, info)["y"]
    np.testing.assert_array_equal(y[0], 0.0)
    np.testing.assert_allclose(y[1], np.exp([0.0, 1.0, -np.inf]) / np.exp([0.0, 1.0]).sum())
    ly = ref.evaluate("log_softmax", {"x": x}, {"axis": 1}, info)["y"]
    assert np.all(ly[0] == -np.inf)
    with np.errstate(divide="ignore"):
        np.testing.assert_allclose(ly[1], np.log(y[1]))
