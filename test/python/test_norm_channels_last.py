"""Norms in the layouts cudnn-frontend's tests and samples use, without a GPU.

Every form (layernorm and rmsnorm over [rows, hidden, 1, 1], instance and
group norms, batchnorm; forward in training and inference, backward) with
x stored NCHW or channels-last (NHWC) and its [1, C, 1, 1] parameters in
either stride order:

* the CPU back end runs the graph and matches the NumPy reference (f32, and
  bf16 for the channels-last group and instance norms);
* the plan for sm_90a (dnnc.plan.strategies at the gpu stage) has no
  ``simt-generic`` kernel and no copy kernel: a channels-last x is read in
  place, as (N, S, C) by column programs (dnnc/decompose/norm_channels_last.py),
  and its parameters where they lie.
"""

import numpy as np
import pytest

import dnnc
from dnnc import plan
from dnnc.dialect.types import data_type as dt
from refutil import typed

F32, BF16 = dt.FLOAT, dt.BFLOAT16
TOL = {F32: dict(rtol=2e-4, atol=2e-5), BF16: dict(rtol=1.6e-2, atol=1.6e-2)}
DIMS = [2, 16, 5, 6]        # N, C, H, W; 4 groups of 4 channels
ROWS = [6, 48, 1, 1]        # cudnn-frontend's layernorm: [rows, hidden, 1, 1]
GROUPS = 4


def channels_last(dims):
    """Strides of logical (N, C, *spatial) dims stored (N, *spatial, C)."""
    strides, step = [0] * len(dims), dims[1]
    strides[1] = 1
    for d in reversed(range(2, len(dims))):
        strides[d] = step
        step *= dims[d]
    strides[0] = step
    return strides


def _stride(dims, layout):
    return channels_last(dims) if layout == "nhwc" else None


def _param(g, name, c, layout, dtype=F32):
    """A [1, C, 1, 1] parameter in NCHW or NHWC strides (the unit dims'
    strides move nothing; cudnn-frontend's samples give either)."""
    return g.tensor(name=name, dim=[1, c, 1, 1], stride=_stride([1, c, 1, 1], layout),
                    data_type=dtype)


def _out(t, stride=None):
    if t is None:
        return
    if stride is not None:
        t.set_stride(stride)
    t.set_output(True)


def group_graph(op, layout, params, phase, dtype=F32, dims=DIMS):
    """instancenorm or groupnorm forward (``phase``) and, in training, its
    backward from the forward's statistics, x and dy in ``layout``."""
    g = dnnc.Graph(io_data_type=dtype, compute_data_type=F32)
    stride = _stride(dims, layout)
    x = g.tensor(name="x", dim=dims, stride=stride)
    c = dims[1]
    scale, bias = _param(g, "scale", c, params), _param(g, "bias", c, params)
    if op == "groupnorm":
        y, mean, inv = g.groupnorm(x, GROUPS, scale, bias, epsilon=1e-3,
                                   norm_forward_phase=phase)
    else:
        y, mean, inv = g.instancenorm(x, scale, bias, epsilon=1e-3, norm_forward_phase=phase)
    _out(y, stride)
    if phase == "training":
        _out(mean)
        _out(inv)
        dy = g.tensor(name="dy", dim=dims, stride=stride)
        if op == "groupnorm":
            dx, dscale, dbias = g.groupnorm_backward(dy, x, GROUPS, scale, mean, inv)
        else:
            dx, dscale, dbias = g.instancenorm_backward(dy, x, scale, mean, inv)
        _out(dx, stride)
        _out(dscale)
        _out(dbias)
    return g


def feature_graph(op, layout, params):
    """layernorm or rmsnorm over x [rows, hidden, 1, 1] (dims 1-3), training,
    and its backward; x, y, dy and dx in ``layout``."""
    g = dnnc.Graph(io_data_type=F32)
    stride = _stride(ROWS, layout)
    x = g.tensor(name="x", dim=ROWS, stride=stride)
    scale, bias = _param(g, "scale", ROWS[1], params), _param(g, "bias", ROWS[1], params)
    dy = g.tensor(name="dy", dim=ROWS, stride=stride)
    if op == "layernorm":
        y, mean, inv = g.layernorm(x, scale, bias, norm_forward_phase="training")
        grads = g.layernorm_backward(dy, x, scale, mean, inv)
        stats = (mean, inv)
    else:
        y, inv = g.rmsnorm(x, scale, bias, norm_forward_phase="training")
        grads = g.rmsnorm_backward(dy, x, scale, inv, has_bias=True)
        stats = (inv,)
    _out(y, stride)
    for t in stats:
        _out(t)
    _out(grads[0], stride)
    for t in grads[1:]:
        _out(t)
    _out(g.layernorm(x, norm_forward_phase="inference")[0], stride)
    return g


def batchnorm_graph(layout, params):
    """batchnorm training forward, backward and inference."""
    g = dnnc.Graph(io_data_type=F32)
    stride = _stride(DIMS, layout)
    c = DIMS[1]
    x = g.tensor(name="x", dim=DIMS, stride=stride)
    scale, bias = _param(g, "scale", c, params), _param(g, "bias", c, params)
    rm, rv = _param(g, "rm", c, params), _param(g, "rv", c, params)
    y, mean, inv, nrm, nrv = g.batchnorm(x, scale, bias, rm, rv, momentum=0.1)
    _out(y, stride)
    for t in (mean, inv, nrm, nrv):
        _out(t)
    dy = g.tensor(name="dy", dim=DIMS, stride=stride)
    dx, dscale, dbias = g.batchnorm_backward(dy, x, scale, mean, inv)
    _out(dx, stride)
    _out(dscale)
    _out(dbias)
    _out(g.batchnorm_inference(x, rm, rv, scale, bias).set_name("infer"), stride)
    return g


def _inputs(g, seed=0):
    rng = np.random.default_rng(seed)
    out = {}
    for t in g.inputs:
        values = rng.standard_normal(t.dim)
        if t.name in ("rv",):
            values = np.abs(values) + 0.5
        if t.name == "x":
            values = values * 2 + 0.5  # a mean away from zero
        out[t.name] = typed(values, t.get_data_type())
    return out


def check_cpu(g):
    """The CPU back end against the reference, every output."""
    inputs = _inputs(g)
    expected = g.execute_reference(inputs)
    got = g.compile(target="cpu")(**inputs)
    for t in g.outputs:
        e, v = expected[t.name], np.asarray(got[t.name]).astype(np.float64)
        assert v.shape == e.shape, t.name
        assert not np.isnan(v).any(), t.name
        np.testing.assert_allclose(v, e, err_msg=t.name, **TOL[t.get_data_type()])


def strategies(g):
    module = g.compile(target="cuda", arch="sm_90a", tuning_db="off", stop_after="gpu")
    return plan.strategies(module)


def assert_no_generic_or_copy(g):
    kernels = strategies(g)
    bad = [(k.anchor, k.strategy, k.reason) for k in kernels
           if k.strategy == "simt-generic" or k.anchor in ("copy", "tensor")]
    assert not bad, bad
    return kernels


FORMS = [(op, layout, params) for op in ("instancenorm", "groupnorm")
         for layout in ("nchw", "nhwc") for params in ("nchw", "nhwc")]


@pytest.mark.parametrize("op,layout,params", FORMS)
@pytest.mark.parametrize("phase", ["training", "inference"])
def test_group_norms_on_the_cpu(op, layout, params, phase):
    check_cpu(group_graph(op, layout, params, phase))


@pytest.mark.parametrize("op", ["instancenorm", "groupnorm"])
@pytest.mark.parametrize("dims", [[1, 16, 5, 6], [3, 16, 1, 6]])
def test_channels_last_group_norms_of_unit_dims(op, dims):
    """One sample, or a spatial dim of 1 (which channels-last strides list
    anywhere): still the (N, S, C) view, no copy, the same values."""
    g = group_graph(op, "nhwc", "nhwc", "training", dims=dims)
    check_cpu(g)
    assert_no_generic_or_copy(g)


@pytest.mark.parametrize("op", ["instancenorm", "groupnorm"])
def test_channels_last_group_norms_bf16_on_the_cpu(op):
    check_cpu(group_graph(op, "nhwc", "nhwc", "training", BF16))


R, COLUMNS, P = "simt-reduce", "simt-reduce-columns", "simt-pointwise"
# The forward's kernels. NCHW: one row program per (sample, group). NHWC:
# per-channel sums over H*W, a column program per sample (twice: the
# variance reads the mean), a group norm's sums of those per group (small
# row programs), y in one pointwise pass.
FORWARD = {("instancenorm", "nchw"): [R], ("groupnorm", "nchw"): [R],
           ("instancenorm", "nhwc"): [COLUMNS, COLUMNS, P],
           ("groupnorm", "nhwc"): [COLUMNS, R, COLUMNS, R, P]}
# What the backward adds beside the forward (its per-channel sums of dy and
# dy * x join the forward's first kernel): NCHW groupnorm, the per-group
# sums (a row program); dx in one pointwise pass; dscale and dbias, a
# column program over the samples.
BACKWARD = {("instancenorm", "nchw"): [P, COLUMNS], ("groupnorm", "nchw"): [R, R, P, COLUMNS],
            ("instancenorm", "nhwc"): [P, COLUMNS], ("groupnorm", "nhwc"): [P, COLUMNS]}


@pytest.mark.parametrize("op,layout,params", FORMS)
@pytest.mark.parametrize("phase", ["training", "inference"])
def test_group_norms_plan_no_generic_kernel_nor_copy(op, layout, params, phase):
    kernels = assert_no_generic_or_copy(group_graph(op, layout, params, phase, BF16))
    expected = FORWARD[op, layout] + (BACKWARD[op, layout] if phase == "training" else [])
    assert [k.strategy for k in kernels] == expected


@pytest.mark.parametrize("op", ["layernorm", "rmsnorm"])
@pytest.mark.parametrize("layout,params", [("nchw", "nchw"), ("nhwc", "nhwc"),
                                           ("nchw", "nhwc"), ("nhwc", "nchw")])
def test_feature_norms_over_trailing_unit_dims(op, layout, params):
    """[rows, hidden, 1, 1]: its NHWC strides are its NCHW strides where
    they move anything; a row program forward, a row program with column
    sums backward, in either stride order."""
    g = feature_graph(op, layout, params)
    check_cpu(g)
    kernels = assert_no_generic_or_copy(g)
    assert [k.strategy for k in kernels][:2] == ["simt-reduce", "simt-reduce-rows-columns"]


@pytest.mark.parametrize("layout,params", [("nchw", "nchw"), ("nhwc", "nhwc"), ("nhwc", "nchw")])
def test_batchnorm_both_layouts(layout, params):
    g = batchnorm_graph(layout, params)
    check_cpu(g)
    assert_no_generic_or_copy(g)


def test_row_major_y_of_a_channels_last_x():
    """y stored NCHW from an NHWC x: y leaves the (N, S, C) view through one
    transposing kernel (simt-transpose, no simt-generic), and is right."""
    g = dnnc.Graph(io_data_type=F32)
    x = g.tensor(name="x", dim=DIMS, stride=channels_last(DIMS))
    y, _, _ = g.instancenorm(x, norm_forward_phase="inference")
    _out(y)
    check_cpu(g)
    kernels = [k.strategy for k in strategies(g)]
    assert kernels == [COLUMNS, COLUMNS, P, "simt-transpose"], kernels


# ---------------------------------------------------------------------- dnnc.frontend

def _frontend_graph(form):
    """cudnn-frontend's norm graphs as its tests write them (x, dy and the
    [1, C, 1, 1] parameters channels_last, bf16 activations, f32
    parameters and statistics), lowered to a dnnc.Graph."""
    import dnnc.frontend as cudnn

    f32 = cudnn.data_type.FLOAT
    g = cudnn.pygraph(io_data_type=cudnn.data_type.BFLOAT16, intermediate_data_type=f32,
                      compute_data_type=f32)
    dims = ROWS if form.endswith("rows") else DIMS
    c = dims[1]
    x = g.tensor(name="x", dim=dims, stride=channels_last(dims))
    dy = g.tensor(name="dy", dim=dims, stride=channels_last(dims))
    p = {k: g.tensor(name=k, dim=[1, c, 1, 1], stride=channels_last([1, c, 1, 1]),
                     data_type=f32) for k in ("scale", "bias", "mean", "var")}
    training = cudnn.norm_forward_phase.TRAINING
    if form == "instancenorm":
        y, mean, inv = g.instancenorm(norm_forward_phase=training, input=x, scale=p["scale"],
                                      bias=p["bias"], epsilon=1e-5)
        outs = [y, mean, inv, *g.instancenorm_backward(grad=dy, input=x, scale=p["scale"],
                                                       mean=mean, inv_variance=inv)]
    elif form == "batchnorm":
        y, mean, inv, _, _ = g.batchnorm(input=x, scale=p["scale"], bias=p["bias"],
                                         in_running_mean=p["mean"], in_running_var=p["var"],
                                         epsilon=1e-5, momentum=0.1)
        outs = [y, mean, inv, *g.batchnorm_backward(grad=dy, input=x, scale=p["scale"],
                                                    mean=mean, inv_variance=inv)]
    elif form == "batchnorm_inference":
        outs = [g.batchnorm_inference(input=x, mean=p["mean"], inv_variance=p["var"],
                                      scale=p["scale"], bias=p["bias"])]
    else:  # layernorm over [rows, hidden, 1, 1]
        y, mean, inv = g.layernorm(norm_forward_phase=training, input=x, scale=p["scale"],
                                   bias=p["bias"], epsilon=1e-5)
        outs = [y, mean, inv, *g.layernorm_backward(grad=dy, input=x, scale=p["scale"],
                                                    mean=mean, inv_variance=inv)]
    for t in outs:
        t.set_output(True)
    for t in outs[1:3] if len(outs) > 1 else []:
        t.set_data_type(f32)
    return g.to_dnnc()


FRONTEND = {
    # forward: two column programs and y; backward: the sums of dy and
    # dy * x join the first, dx one pointwise pass, dscale and dbias a
    # column program over the samples.
    "instancenorm": [COLUMNS, COLUMNS, P, P, COLUMNS],
    "batchnorm": [COLUMNS, COLUMNS, P, COLUMNS, P],
    # cuDNN's form (inverse deviation) composed of pointwise ops over x's
    # memory order: one pass, no layout copy.
    "batchnorm_inference": [P],
    "layernorm_rows": [R, "simt-reduce-rows-columns"],
}


@pytest.mark.parametrize("form", sorted(FRONTEND))
def test_frontend_channels_last_norms_plan(form):
    kernels = assert_no_generic_or_copy(_frontend_graph(form))
    assert [k.strategy for k in kernels] == FRONTEND[form]
