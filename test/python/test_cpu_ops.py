"""Every primitive dnn op compiled for the CPU (convert-dnn-to-linalg, the CPU
pipeline, MLIR's ExecutionEngine) against the NumPy reference.

Tolerances, on |got - ref| <= RTOL * |ref| + ATOL, per result type:
f32 1e-5 relative (1e-6 absolute), f16 1e-3, bf16 1e-2; fp8 results may
differ by one ulp (adjacent codes); booleans and data movement are exact.
Contractions (matmul, convolution) scale the absolute part by max |ref|
(f32 accumulation against float64). Outputs start as NaN (booleans as 0xFF
bytes), so an element the compiled code does not write fails.

JIT compilation costs time per graph: each test builds one graph with many
outputs.
"""

import ml_dtypes
import numpy as np
import pytest

import dnnc
import dnnc.targets.cpu
import dnnc.graph_mlir
from dnnc.dialect.types import data_type as dt
from dnnc.errors import UnsupportedError
from dnnc.targets.cpu_arguments import ArgumentError

F32, F16, BF16 = dt.FLOAT, dt.HALF, dt.BFLOAT16
E4M3, E5M2, BOOL = dt.FP8_E4M3, dt.FP8_E5M2, dt.BOOLEAN

RTOL = {F32: 1e-5, F16: 1e-3, BF16: 1e-2}
ATOL = {F32: 1e-6, F16: 1e-4, BF16: 1e-3}


# ----------------------------------------------------------------------------
# Helpers


def rand(rng, shape, dtype=F32, scale=1.0, positive=False):
    """Random values already representable in ``dtype`` (so the compiled code
    and the reference see the same inputs)."""
    x = rng.standard_normal(shape) * scale
    if positive:
        x = np.abs(x) + 0.1
    return x.astype(np.float32).astype(dtype.numpy)


def run(g, inputs):
    exe = dnnc.targets.cpu.compile_module(dnnc.graph_mlir.to_module(g))
    got = exe(**inputs)
    ref = g.execute_reference(inputs)
    return got, ref


def fp8_order(codes):
    """fp8 codes mapped to integers that increase with the value (sign-magnitude
    to two's complement), so adjacent values differ by 1."""
    c = codes.astype(np.int32)
    return np.where(c & 0x80, -(c & 0x7F), c & 0x7F)


def assert_close(got, ref, dtype, name="", contraction=False):
    assert got.dtype == np.dtype(dtype.numpy), (name, got.dtype)
    assert got.shape == ref.shape, (name, got.shape, ref.shape)
    if dtype is BOOL:
        raw = got.view(np.uint8)
        assert np.all(raw <= 1), f"{name}: booleans must be stored as 0 or 1"
        np.testing.assert_array_equal(got, ref.astype(bool), err_msg=name)
        return
    g = got.astype(np.float64)
    nan = np.isnan(ref)
    np.testing.assert_array_equal(np.isnan(g), nan, err_msg=f"{name}: NaN positions")
    if dtype in (E4M3, E5M2):
        gc = got.view(np.uint8)[~nan]
        rc = ref[~nan].astype(dtype.numpy).view(np.uint8)
        diff = np.abs(fp8_order(gc) - fp8_order(rc))
        assert diff.max(initial=0) <= 1, (
            f"{name}: fp8 codes differ by {diff.max()} ulps; got {g[~nan][diff > 1][:5]}, "
            f"expected {ref[~nan][diff > 1][:5]}")
        return
    inf = np.isinf(ref)
    np.testing.assert_array_equal(g[inf], ref[inf], err_msg=f"{name}: infinities")
    finite = ~(nan | inf)
    atol = ATOL[dtype]
    if contraction:
        atol = RTOL[dtype] * max(1.0, float(np.abs(ref[finite]).max(initial=0.0)))
    np.testing.assert_allclose(g[finite], ref[finite], rtol=RTOL[dtype], atol=atol,
                               err_msg=name)


def check(g, got, ref, contraction=False):
    assert set(got) == {t.name for t in g.outputs}
    for t in g.outputs:
        assert_close(got[t.name], ref[t.name], t.get_data_type(), t.name, contraction)


def outputs(*tensors):
    for t in tensors:
        t.set_output(True)


# ----------------------------------------------------------------------------
# Pointwise


UNARY_CALLS = [
    ("relu", {}), ("gelu", {}), ("gelu", {"approximate": "tanh"}), ("silu", {}),
    ("swish", {"beta": 1.5}), ("sigmoid", {}), ("tanh", {}), ("elu", {"alpha": 0.7}),
    ("leaky_relu", {"negative_slope": 0.2}), ("softplus", {}),
    ("softplus", {"beta": 2.0, "threshold": 3.0}), ("exp", {}), ("abs", {}), ("neg", {}),
    ("square", {}), ("reciprocal", {}), ("sin", {}), ("cos", {}), ("erf", {}),
    ("floor", {}), ("ceil", {}),
]
POSITIVE_UNARY = ["log", "sqrt", "rsqrt"]


@pytest.mark.parametrize("dtype", [F32, F16, BF16])
def test_unary(dtype):
    rng = np.random.default_rng(1)
    g = dnnc.Graph(io_data_type=dtype)
    x = g.tensor(name="x", dim=[3, 7, 5])
    xp = g.tensor(name="xp", dim=[13])
    for i, (op, attrs) in enumerate(UNARY_CALLS):
        outputs(getattr(g, op)(x, name=f"{op}{i}", **attrs))
    for op in POSITIVE_UNARY:
        outputs(getattr(g, op)(xp, name=op))
    xs = rand(rng, [3, 7, 5], dtype, scale=2.0)
    xs.flat[:3] = [0.0, -0.0, 1.0]
    got, ref = run(g, {"x": xs, "xp": rand(rng, [13], dtype, positive=True)})
    check(g, got, ref)


@pytest.mark.parametrize("dtype", [F32, BF16])
def test_binary_broadcast(dtype):
    rng = np.random.default_rng(2)
    g = dnnc.Graph(io_data_type=dtype)
    a = g.tensor(name="a", dim=[3, 1, 5])
    b = g.tensor(name="b", dim=[7, 1])
    c = g.tensor(name="c", dim=[1])
    for op in ("add", "sub", "mul", "div", "max", "min"):
        outputs(getattr(g, op)(a, b, name=op))
    outputs(g.pow(g.abs(a), b, name="pow"), g.add(c, a, name="add_rank1"))
    av = rand(rng, [3, 1, 5], dtype)
    bv = rand(rng, [7, 1], dtype)
    av[1, 0, 2] = np.nan  # max / min propagate NaN
    bv[3, 0] = np.nan
    got, ref = run(g, {"a": av, "b": bv, "c": rand(rng, [1], dtype)})
    check(g, got, ref)


def test_compare_logical_select():
    rng = np.random.default_rng(3)
    g = dnnc.Graph(io_data_type=F32)
    a = g.tensor(name="a", dim=[5, 3])
    b = g.tensor(name="b", dim=[3])
    m = g.tensor(name="m", dim=[5, 1], data_type=BOOL)
    cmps = [getattr(g, op)(a, b, name=op)
            for op in ("cmp_eq", "cmp_ne", "cmp_lt", "cmp_le", "cmp_gt", "cmp_ge")]
    outputs(*cmps)
    both = g.logical_and(cmps[2], m, name="and")
    either = g.logical_or(cmps[0], m, name="or")
    outputs(both, either, g.logical_not(either, name="not"))
    outputs(g.select(cmps[4], a, b, name="select"), g.select(m, b, a, name="select_input"))
    outputs(g.cast(m, F32, name="bool_to_f32"), g.cast(a, BOOL, name="f32_to_bool"))
    av = rand(rng, [5, 3])
    bv = rand(rng, [3])
    av[0, :] = bv  # equal elements
    av[1, 1] = np.nan
    av[2, 0] = 0.0
    got, ref = run(g, {"a": av, "b": bv, "m": rng.random((5, 1)) < 0.5})
    check(g, got, ref)


@pytest.mark.parametrize("dtype", [F32, F16])
def test_activation_backward(dtype):
    rng = np.random.default_rng(4)
    g = dnnc.Graph(io_data_type=dtype)
    dy = g.tensor(name="dy", dim=[3, 13])
    x = g.tensor(name="x", dim=[13])
    outputs(g.relu_backward(dy, x, name="relu_bwd"),
            g.gelu_backward(dy, x, name="gelu_bwd"),
            g.gelu_backward(dy, x, approximate="tanh", name="gelu_tanh_bwd"),
            g.silu_backward(dy, x, name="silu_bwd"),
            g.sigmoid_backward(dy, x, name="sigmoid_bwd"),
            g.tanh_backward(dy, x, name="tanh_bwd"),
            g.swish_backward(dy, x, beta=1.5, name="swish_bwd"),
            g.elu_backward(dy, x, alpha=0.7, name="elu_bwd"),
            g.leaky_relu_backward(dy, x, negative_slope=0.2, name="leaky_relu_bwd"),
            g.softplus_backward(dy, x, beta=2.0, threshold=2.5, name="softplus_bwd"))
    xv = rand(rng, [13], dtype, scale=2.0)
    xv[0] = 0.0
    got, ref = run(g, {"dy": rand(rng, [3, 13], dtype), "x": xv})
    check(g, got, ref)


def test_constant_and_gen_index():
    rng = np.random.default_rng(5)
    g = dnnc.Graph(io_data_type=F32)
    x = g.tensor(name="x", dim=[3, 5])
    outputs(g.mul(x, g.constant(0.3), name="scaled"))
    outputs(g.constant(2.5, name="c_f32"))
    for name, dtype, value in (("c_f16", F16, 0.1), ("c_bf16", BF16, -3.3),
                               ("c_e4m3", E4M3, 1000.0), ("c_e5m2", E5M2, 0.3)):
        outputs(g.cast(g.constant(value, data_type=dtype), dtype, name=name))
    outputs(g.gen_index(x, axis=1, name="index1"), g.gen_index(x, axis=0, name="index0"))
    inputs = {"x": rand(rng, [3, 5])}
    try:
        ref = g.execute_reference(inputs)
    except UnsupportedError:
        pytest.skip("the reference has no gen_index yet")
    exe = dnnc.targets.cpu.compile_module(dnnc.graph_mlir.to_module(g))
    check(g, exe(**inputs), ref)


# ----------------------------------------------------------------------------
# Casts and fp8


@pytest.mark.parametrize("fmt", [E4M3, E5M2])
def test_fp8_decode_all_codes(fmt):
    g = dnnc.Graph()
    x = g.tensor(name="x", dim=[256], data_type=fmt)
    y = g.cast(x, F32)
    outputs(y)
    codes = np.arange(256, dtype=np.uint8).view(fmt.numpy)
    got = dnnc.targets.cpu.compile_module(dnnc.graph_mlir.to_module(g))(x=codes)[y.name]
    want = codes.astype(np.float32)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_array_equal(got[ok].view(np.uint32), want[ok].view(np.uint32))


def fp8_encode_inputs(fmt):
    """f32 values around every fp8 value: the values, the midpoints (ties)
    and the f32 neighbours of both, subnormals, overflow, inf and NaN."""
    finfo = ml_dtypes.finfo(fmt.numpy)
    codes = np.arange(256, dtype=np.uint8).view(fmt.numpy).astype(np.float64)
    values = np.unique(codes[np.isfinite(codes)])
    mids = (values[1:] + values[:-1]) / 2
    base = np.concatenate([values, mids]).astype(np.float32)
    near = np.concatenate([base, np.nextafter(base, np.float32(np.inf)),
                           np.nextafter(base, np.float32(-np.inf))])
    big = float(finfo.max)
    extra = np.array([big * 1.03, big * 1.2, 1e30, -1e30, 3.4e38, np.inf, -np.inf, np.nan,
                      1e-30, -1e-30, 1e-45, float(finfo.smallest_subnormal) / 2,
                      float(finfo.smallest_subnormal) * 0.75, 0.0, -0.0], dtype=np.float32)
    rng = np.random.default_rng(6)
    randoms = (rng.standard_normal(3000) * np.exp2(rng.integers(-20, 18, 3000))).astype(
        np.float32)
    return np.concatenate([near, extra, randoms])


def fp8_expected(x, fmt):
    """Round to nearest even, saturate finite overflow, keep NaN; inf saturates
    in E4M3FN (no inf) and stays inf in E5M2."""
    big = np.float32(ml_dtypes.finfo(fmt.numpy).max)
    clipped = np.where(np.isfinite(x), np.clip(x, -big, big), x)
    if fmt is E4M3:
        clipped = np.where(np.isinf(x), np.sign(x) * big, clipped)
    return clipped.astype(np.float32).astype(fmt.numpy)


@pytest.mark.parametrize("fmt", [E4M3, E5M2])
def test_fp8_encode(fmt):
    x = fp8_encode_inputs(fmt)
    g = dnnc.Graph()
    xt = g.tensor(name="x", dim=[x.size], data_type=F32)
    y = g.cast(xt, fmt)
    outputs(y)
    got = dnnc.targets.cpu.compile_module(dnnc.graph_mlir.to_module(g))(x=x)[y.name]
    want = fp8_expected(x, fmt)
    gf, wf = got.astype(np.float32), want.astype(np.float32)
    np.testing.assert_array_equal(np.isnan(gf), np.isnan(wf))
    ok = ~np.isnan(wf)
    bad = np.flatnonzero(got.view(np.uint8)[ok] != want.view(np.uint8)[ok])
    assert bad.size == 0, (x[ok][bad][:8], gf[ok][bad][:8], wf[ok][bad][:8])


def test_casts_between_types():
    rng = np.random.default_rng(7)
    g = dnnc.Graph()
    x = g.tensor(name="x", dim=[5, 13], data_type=F32)
    h = g.tensor(name="h", dim=[5, 13], data_type=F16)
    e = g.tensor(name="e", dim=[5, 13], data_type=E5M2)
    for target in (F16, BF16, E4M3, E5M2, BOOL):
        outputs(g.cast(x, target, name=f"x_to_{target}"))
    outputs(g.cast(h, BF16, name="h_to_bf16"), g.cast(h, E4M3, name="h_to_e4m3"),
            g.cast(e, F16, name="e_to_f16"), g.cast(e, E4M3, name="e_to_e4m3"))
    xv = rand(rng, [5, 13], scale=30.0)
    got, ref = run(g, {"x": xv, "h": rand(rng, [5, 13], F16, 8.0),
                       "e": rand(rng, [5, 13], E5M2, 100.0)})
    check(g, got, ref)


@pytest.mark.parametrize("fmt", [E4M3, E5M2])
def test_fp8_pointwise(fmt):
    rng = np.random.default_rng(8)
    g = dnnc.Graph(io_data_type=fmt)
    a = g.tensor(name="a", dim=[7, 5])
    b = g.tensor(name="b", dim=[5])
    outputs(g.add(a, b, name="add"), g.mul(a, b, name="mul"), g.relu(a, name="relu"),
            g.gelu(a, name="gelu"), g.max(a, b, name="max"))
    got, ref = run(g, {"a": rand(rng, [7, 5], fmt, 4.0), "b": rand(rng, [5], fmt, 4.0)})
    check(g, got, ref)


# ----------------------------------------------------------------------------
# Reductions


@pytest.mark.parametrize("dtype", [F32, BF16])
def test_reductions(dtype):
    rng = np.random.default_rng(9)
    g = dnnc.Graph(io_data_type=dtype)
    x = g.tensor(name="x", dim=[3, 5, 7])
    for mode in ("sum", "mean", "max", "min", "prod", "amax", "norm1", "norm2"):
        outputs(g.reduction(x, mode, [1], name=f"{mode}_1"),
                g.reduction(x, mode, [0, 2], keepdims=False, name=f"{mode}_02"))
    outputs(g.reduction(x, "sum", [0, 1, 2], keepdims=False, name="sum_all"),
            g.reduction(x, "max", [0, 1, 2], name="max_all"))
    xv = rand(rng, [3, 5, 7], dtype)
    xv[2, 4, 6] = np.nan  # one NaN row: every mode propagates it
    got, ref = run(g, {"x": xv})
    check(g, got, ref, contraction=True)


# ----------------------------------------------------------------------------
# Matmul


@pytest.mark.parametrize("dtype,compute", [(F32, None), (F32, "tf32"), (F16, None),
                                           (BF16, None), (E4M3, None)])
def test_matmul(dtype, compute):
    rng = np.random.default_rng(10)
    g = dnnc.Graph(io_data_type=dtype)
    a = g.tensor(name="a", dim=[2, 1, 3, 13])
    b = g.tensor(name="b", dim=[5, 13, 7])
    m = g.tensor(name="m", dim=[3, 13])
    n = g.tensor(name="n", dim=[13, 1])
    kw = {"compute_data_type": compute} if compute else {}
    outputs(g.matmul(a, b, name="batched", **kw), g.matmul(m, n, name="plain", **kw),
            g.matmul(a, n, name="broadcast_b", **kw))
    got, ref = run(g, {"a": rand(rng, [2, 1, 3, 13], dtype), "b": rand(rng, [5, 13, 7], dtype),
                       "m": rand(rng, [3, 13], dtype), "n": rand(rng, [13, 1], dtype)})
    check(g, got, ref, contraction=True)


# ----------------------------------------------------------------------------
# Convolution


CONV2D = [
    # x dim, w dim, attrs
    ([2, 3, 7, 5], [5, 3, 3, 2], dict(pre_padding=[1, 0], post_padding=[2, 1], stride=[2, 1],
                                      dilation=[1, 2])),
    ([1, 6, 7, 7], [4, 3, 3, 3], dict(padding=[1, 1], stride=[1, 3], dilation=[2, 1])),  # G=2
    ([2, 4, 5, 13], [4, 1, 2, 3], dict(pre_padding=[0, 2], post_padding=[1, 0],
                                       stride=[3, 2], conv_mode="convolution")),  # depthwise
]
CONV3D = ([1, 2, 5, 3, 7], [3, 2, 2, 3, 3], dict(pre_padding=[1, 0, 1], post_padding=[0, 2, 1],
                                                stride=[2, 1, 2], dilation=[1, 1, 2]))


def conv_out_shape(x, w, attrs):
    nd = len(x) - 2
    pad = attrs.get("padding", [0] * nd)
    pre, post = attrs.get("pre_padding", pad), attrs.get("post_padding", pad)
    stride, dil = attrs.get("stride", [1] * nd), attrs.get("dilation", [1] * nd)
    return [x[0], w[0]] + [(x[2 + i] + pre[i] + post[i] - dil[i] * (w[2 + i] - 1) - 1)
                           // stride[i] + 1 for i in range(nd)]


@pytest.mark.parametrize("dtype,compute", [(F32, None), (F16, None), (F32, "tf32"),
                                           (E5M2, None)])
def test_conv_fprop(dtype, compute):
    rng = np.random.default_rng(11)
    g = dnnc.Graph(io_data_type=dtype)
    inputs = {}
    for i, (xd, wd, attrs) in enumerate(CONV2D + [CONV3D]):
        x, w = g.tensor(name=f"x{i}", dim=xd), g.tensor(name=f"w{i}", dim=wd)
        kw = dict(attrs, compute_data_type=compute) if compute else attrs
        outputs(g.conv_fprop(x, w, name=f"y{i}", **kw))
        inputs[f"x{i}"], inputs[f"w{i}"] = rand(rng, xd, dtype), rand(rng, wd, dtype)
    got, ref = run(g, inputs)
    check(g, got, ref, contraction=True)


DGRAD_EXTRA = [
    # Rows of x that no window reaches (zero gradient).
    ([1, 2, 8, 6], [2, 2, 2, 2], dict(stride=[3, 4])),
    # Padding wider than the dilated window: the first dy rows only touch padding.
    ([1, 2, 5, 4], [3, 2, 2, 1], dict(pre_padding=[2, 1], post_padding=[2, 1], stride=[2, 1])),
    # Post padding wider than the dilated window: the last dy rows only touch padding.
    ([1, 1, 5, 5], [1, 1, 2, 2], dict(pre_padding=[0, 1], post_padding=[3, 2], stride=[2, 2])),
]


@pytest.mark.parametrize("dtype,compute", [(F32, None), (BF16, None), (F32, "tf32")])
def test_conv_dgrad_wgrad(dtype, compute):
    rng = np.random.default_rng(12)
    g = dnnc.Graph(io_data_type=dtype)
    inputs = {}
    for i, (xd, wd, attrs) in enumerate(CONV2D + [CONV3D] + DGRAD_EXTRA):
        yd = conv_out_shape(xd, wd, attrs)
        dy, w, x = (g.tensor(name=f"dy{i}", dim=yd), g.tensor(name=f"w{i}", dim=wd),
                    g.tensor(name=f"x{i}", dim=xd))
        kw = dict(attrs, compute_data_type=compute) if compute else attrs
        outputs(g.conv_dgrad(dy, w, xd, name=f"dx{i}", **kw),
                g.conv_wgrad(x, dy, wd, name=f"dw{i}", **kw))
        inputs.update({f"dy{i}": rand(rng, yd, dtype), f"w{i}": rand(rng, wd, dtype),
                       f"x{i}": rand(rng, xd, dtype)})
    got, ref = run(g, inputs)
    check(g, got, ref, contraction=True)


# ----------------------------------------------------------------------------
# Pooling


POOLS = [
    ([2, 3, 7, 5], dict(window=[3, 2], stride=[2, 1], pre_padding=[1, 0], post_padding=[2, 1])),
    ([1, 2, 5, 13], dict(window=[2, 3], stride=[1, 3], padding=[1, 2])),
    ([1, 2, 5, 3, 7], dict(window=[2, 2, 3], stride=[2, 1, 2], pre_padding=[1, 0, 2],
                           post_padding=[0, 1, 1])),
]


@pytest.mark.parametrize("dtype", [F32, BF16])
def test_pooling(dtype):
    rng = np.random.default_rng(13)
    g = dnnc.Graph(io_data_type=dtype)
    inputs = {}
    for i, (xd, attrs) in enumerate(POOLS):
        x = g.tensor(name=f"x{i}", dim=xd)
        outputs(g.pooling(x, "max", name=f"max{i}", **attrs),
                g.pooling(x, "avg", name=f"avg{i}", **attrs),
                g.pooling(x, "avg", count_include_pad=True, name=f"avg_pad{i}", **attrs))
        inputs[f"x{i}"] = rand(rng, xd, dtype)
    inputs["x0"][0, 0, :] = -np.inf  # all -inf windows: padding must not win
    inputs["x1"][0, 1, 2, 4] = np.nan  # NaN propagates
    got, ref = run(g, inputs)
    check(g, got, ref)


@pytest.mark.parametrize("dtype", [F32, F16])
def test_pooling_backward(dtype):
    rng = np.random.default_rng(14)
    g = dnnc.Graph(io_data_type=dtype)
    inputs = {}
    for i, (xd, attrs) in enumerate(POOLS):
        x = g.tensor(name=f"x{i}", dim=xd)
        yd = [int(s) for s in g.pooling(x, "max", **attrs).dim]
        dy = g.tensor(name=f"dy{i}", dim=yd)
        outputs(g.pooling_backward(dy, x, "max", name=f"max{i}", **attrs),
                g.pooling_backward(dy, x, "avg", name=f"avg{i}", **attrs),
                g.pooling_backward(dy, x, "avg", count_include_pad=True, name=f"avg_pad{i}",
                                   **attrs))
        # Small integers: many ties, so the first maximum must win.
        inputs[f"x{i}"] = rng.integers(-2, 3, xd).astype(dtype.numpy)
        inputs[f"dy{i}"] = rand(rng, yd, dtype)
    inputs["x0"][0, 1, :] = -np.inf
    inputs["x1"][0, 0, 1, 1] = np.nan
    got, ref = run(g, inputs)
    check(g, got, ref)


# ----------------------------------------------------------------------------
# Tensor ops


@pytest.mark.parametrize("dtype", [F32, BF16])
def test_tensor_ops(dtype):
    rng = np.random.default_rng(15)
    g = dnnc.Graph(io_data_type=dtype)
    x = g.tensor(name="x", dim=[3, 5, 7])
    y = g.tensor(name="y", dim=[3, 2, 7])
    s = g.tensor(name="s", dim=[])
    outputs(g.reshape(x, [7, 15], name="reshape"), g.reshape(x, [105], name="flatten"),
            g.reshape(g.slice(x, start=[1, 2, 3], limit=[2, 3, 4], step=[1, 1, 1]), [],
                      name="to_scalar"),
            g.reshape(s, [1, 1], name="from_scalar"),
            g.transpose(x, [2, 0, 1], name="transpose"),
            g.slice(x, [slice(1, 3), slice(0, 5, 2), slice(1, 7, 3)], name="slice"),
            g.slice(x, start=[2, 4, 6], limit=[3, 5, 7], step=[1, 1, 1], name="corner"),
            g.slice(x, [slice(0, 2), slice(None), slice(0, 4)], name="head"),
            g.concat([x, y, x], axis=1, name="concat"),
            g.concat([x, x], axis=0, name="concat0"),
            g.cast(g.concat([g.cmp_gt(x, s), g.cmp_lt(y, s)], axis=1), F32,
                   name="concat_bool"))
    mask = g.cmp_gt(x, s)  # booleans move as bytes
    outputs(g.reshape(mask, [5, 21], name="reshape_bool"),
            g.transpose(mask, [1, 2, 0], name="transpose_bool"),
            g.slice(mask, start=[0, 1, 0], limit=[3, 5, 7], step=[2, 3, 2], name="slice_bool"),
            g.reshape(g.slice(mask, start=[1, 1, 1], limit=[2, 2, 2], step=[1, 1, 1]), [],
                      name="scalar_bool"))
    got, ref = run(g, {"x": rand(rng, [3, 5, 7], dtype), "y": rand(rng, [3, 2, 7], dtype),
                       "s": rand(rng, [], dtype)})
    check(g, got, ref)


def test_outputs_that_alias():
    # After canonicalize and cse these return one buffer twice, or the input
    # itself (or a view of it): each output must still get its own copy.
    rng = np.random.default_rng(19)
    g = dnnc.Graph(io_data_type=F32)
    x = g.tensor(name="x", dim=[2, 1, 3])
    outputs(g.reduction(x, "sum", [1], keepdims=False, name="sum"),
            g.reduction(x, "mean", [1], keepdims=False, name="mean"),
            g.relu(x, name="relu_a"), g.relu(x, name="relu_b"),
            g.transpose(x, [0, 1, 2], name="same"), g.reshape(x, [6], name="flat"))
    got, ref = run(g, {"x": rand(rng, [2, 1, 3])})
    check(g, got, ref)


def test_rank0_and_empty_tensors():
    rng = np.random.default_rng(16)
    g = dnnc.Graph(io_data_type=F32)
    a = g.tensor(name="a", dim=[])
    b = g.tensor(name="b", dim=[])
    z = g.tensor(name="z", dim=[3, 0])
    w = g.tensor(name="w", dim=[0, 5])
    total = g.add(a, b)
    p = g.tensor(name="p", dim=[0, 2, 5, 4])
    outputs(total, g.cmp_lt(a, b, name="less"),
            g.relu(z, name="relu_empty"), g.matmul(z, w, name="matmul_empty"),
            g.reduction(z, "sum", [1], name="sum_empty"),
            g.concat([z, g.transpose(w, [1, 0])], axis=0, name="concat_empty"),
            g.slice(z, start=[1, 0], limit=[2, 0], step=[1, 1], name="slice_empty"),
            g.pooling(p, "avg", window=[2, 2], padding=[1, 1], name="pool_empty"))
    got, ref = run(g, {"a": rand(rng, []), "b": rand(rng, []), "z": np.zeros((3, 0), np.float32),
                       "w": np.zeros((0, 5), np.float32),
                       "p": np.zeros((0, 2, 5, 4), np.float32)})
    check(g, got, ref)
    assert got[total.name].shape == ()


# ----------------------------------------------------------------------------
# The executable and the pass


def test_executable_inputs():
    g = dnnc.Graph(io_data_type=BF16)
    x = g.tensor(name="x", dim=[2, 3])
    y = g.tensor(name="y", dim=[3])
    out = g.add(x, y)
    outputs(out)
    exe = dnnc.targets.cpu.compile_module(dnnc.graph_mlir.to_module(g))
    assert exe.input_names == ["x", "y"] and exe.output_names == [out.name]
    # bf16 arrays, x not contiguous: taken in its logical layout.
    xv = np.arange(6, dtype=np.float64).reshape(3, 2).T.astype(ml_dtypes.bfloat16)
    assert not xv.flags.c_contiguous
    yv = np.array([1.0, 2.0, 3.0], ml_dtypes.bfloat16)
    got = exe(xv, y=yv)[out.name]
    assert got.dtype == ml_dtypes.bfloat16
    expected = xv.astype(np.float64) + [1.0, 2.0, 3.0]
    np.testing.assert_array_equal(got.astype(np.float64), expected)
    # Repeated calls reuse the compiled code and fresh output buffers.
    again = exe.run({"x": xv, "y": np.ones(3, ml_dtypes.bfloat16)})[0]
    np.testing.assert_array_equal(again.astype(np.float64), xv.astype(np.float64) + 1.0)
    ones = np.ones(3, ml_dtypes.bfloat16)
    with pytest.raises(ArgumentError, match=r"input 'x': expected shape \[2, 3\], got \[3, 2\]"):
        exe(np.zeros((3, 2), ml_dtypes.bfloat16), ones)
    with pytest.raises(ArgumentError, match="missing input.s. y"):
        exe(x=xv)
    with pytest.raises(ArgumentError, match="unknown input 'q'"):
        exe(xv, ones, q=1)
    with pytest.raises(ArgumentError, match=r"expected 2 input.s. \(x, y\), got 3"):
        exe(xv, ones, ones)
    with pytest.raises(ArgumentError, match=r"input 'y': expected dtype bf16 \(numpy bfloat16\), "
                                            r"got numpy <U1"):
        exe(xv, np.array(["a", "b", "c"]))
    with pytest.raises(ArgumentError, match="input 'y': expected a NumPy array or a CPU torch "
                                            "tensor, got list"):
        exe(xv, [1.0, 2.0, 3.0])


def test_composite_op_without_decomposition_is_unsupported(monkeypatch):
    from dnnc.passes import convert_dnn_to_linalg

    monkeypatch.setattr(convert_dnn_to_linalg, "expand_all", None)
    g = dnnc.Graph(io_data_type=F32)
    outputs(g.softmax(g.tensor(name="x", dim=[3, 5]), axis=1, name="softmax"))
    with pytest.raises(UnsupportedError, match=r"'dnn.softmax' is not a primitive op; run "
                                               r"dnn-decompose\{all=true\} first"):
        dnnc.targets.cpu.compile_module(dnnc.graph_mlir.to_module(g))


def test_composite_ops_are_expanded_or_rejected():
    rng = np.random.default_rng(17)
    g = dnnc.Graph(io_data_type=F32)
    x = g.tensor(name="x", dim=[3, 5])
    outputs(g.softmax(x, axis=1, name="softmax"))
    module = dnnc.graph_mlir.to_module(g)
    try:
        exe = dnnc.targets.cpu.compile_module(module)
    except UnsupportedError as err:
        assert "'dnn.softmax' is not a primitive op" in str(err)
        return
    inputs = {"x": rand(rng, [3, 5])}
    check(g, exe(**inputs), g.execute_reference(inputs))


def test_compile_module_keeps_its_input_and_dumps_stages(tmp_path):
    g = dnnc.Graph(io_data_type=F32)
    outputs(g.relu(g.tensor(name="x", dim=[3]), name="y"))
    module = dnnc.graph_mlir.to_module(g)
    before = str(module)
    dnnc.targets.cpu.compile_module(module, dump_ir=str(tmp_path), basename="g")
    assert str(module) == before
    assert "linalg.generic" in (tmp_path / "g.linalg.mlir").read_text()
    assert "llvm.func @main" in (tmp_path / "g.llvm.mlir").read_text()


def test_graph_compile_cpu():
    pytest.importorskip("dnnc.compiler")
    rng = np.random.default_rng(18)
    g = dnnc.Graph(io_data_type=F32)
    x = g.tensor(name="x", dim=[5, 7])
    w = g.tensor(name="w", dim=[7, 3])
    m = g.matmul(x, w)
    positive = g.cmp_gt(m, g.constant(0.0))  # an i1 kernel result crossing a call
    outputs(positive, g.softmax(g.select(positive, g.gelu(m), g.tanh(m)), axis=1))
    exe = g.compile(target="cpu")
    inputs = {"x": rand(rng, [5, 7]), "w": rand(rng, [7, 3])}
    out = exe(**inputs)
    if not isinstance(out, dict):
        out = {t.name: v for t, v in zip(g.outputs, out)}
    check(g, out, g.execute_reference(inputs), contraction=True)


def test_every_primitive_op_is_lowered_and_tested():
    from dnnc.codegen.linalg import COMPOSITE_FAMILIES, LOWERINGS
    from dnnc.dialect import all_ops
    from dnnc.dialect.ops_pointwise import UNARY

    missing = [d.name for d in all_ops()
               if d.family not in COMPOSITE_FAMILIES and d.name not in LOWERINGS]
    assert not missing, f"primitive ops without a CPU lowering: {missing}"
    assert {op for op, _ in UNARY_CALLS} | set(POSITIVE_UNARY) == set(UNARY)
