"""Decomposition of composite dnn ops (dnnc/decompose, pass dnn-decompose).

Each case builds a small graph around one composite op, runs the reference
interpreter on it before and after expansion, and compares: the expansion must
keep the graph's meaning, leave no composite op, and keep every result type.
"""

import numpy as np
import pytest

import dnnc
from dnnc import decompose, graph_mlir, interpreter
from dnnc.decompose import COMPOSITE_OPS
from dnnc.dialect.walk import entry_function
from dnnc.errors import PipelineError, UnsupportedError
from dnnc.passes import registry, run_pipeline

# Load every pass file before importing single ones: registry() loads them
# only while no pass is registered yet.
registry()

from dnnc.passes.dnn_decompose import DEFAULT_OPS  # noqa: E402
from dnnc.passes.dnn_verify import dnn_ops, verify_module  # noqa: E402

RTOL = ATOL = 1e-5


def _rng(seed=0):
    return np.random.default_rng(seed)


class Case:
    """A graph plus inputs for it, with random values unless given."""

    dtype = "float"

    def __init__(self):
        self.g = dnnc.Graph(io_data_type=self.dtype)
        self.arrays = []
        self.rng = _rng()

    def input(self, name, dim, value=None, positive=False, stride=None):
        t = self.g.tensor(name=name, dim=dim, stride=stride)
        if value is None:
            value = self.rng.standard_normal(dim)
            if positive:
                value = np.abs(value) + 0.5
        self.arrays.append(np.asarray(value, dtype=np.float32))
        return t

    def outputs(self, *tensors):
        for t in tensors:
            if t is not None:
                t.set_output(True)
        return self


# ---------------------------------------------------------------------- case builders

def softmax_case(op, shape, axis):
    c = Case()
    x = c.input("x", shape)
    if op.endswith("backward"):
        y = c.input("y", shape)
        return c.outputs(getattr(c.g, op)(x, y, axis=axis))
    return c.outputs(getattr(c.g, op)(x, axis=axis))


def feature_norm_case(op, shape, axis, scale, bias, training):
    c = Case()
    x = c.input("x", shape)
    pshape = [1] * axis + list(shape[axis:])
    s = c.input("scale", pshape) if scale else None
    b = c.input("bias", pshape) if bias else None
    phase = "training" if training else "inference"
    return c.outputs(*getattr(c.g, op)(x, s, b, axis=axis, norm_forward_phase=phase))


def feature_norm_backward_case(op, shape, axis, scale, has_bias):
    c = Case()
    dy, x = c.input("dy", shape), c.input("x", shape)
    pshape = [1] * axis + list(shape[axis:])
    sshape = list(shape[:axis]) + [1] * (len(shape) - axis)
    s = c.input("scale", pshape) if scale else None
    if op == "layernorm_backward":
        mean, inv = c.input("mean", sshape), c.input("inv", sshape, positive=True)
        outs = c.g.layernorm_backward(dy, x, s, mean, inv, axis=axis, has_bias=has_bias)
    else:
        inv = c.input("inv", sshape, positive=True)
        outs = c.g.rmsnorm_backward(dy, x, s, inv, axis=axis, has_bias=has_bias)
    return c.outputs(*outs)


def _cshape(shape):
    return [1, shape[1]] + [1] * (len(shape) - 2)


def _channels_last(shape):
    """Strides of a logical (N, C, spatial...) tensor stored channels-last."""
    order = [0] + list(range(2, len(shape))) + [1]
    strides, step = [0] * len(shape), 1
    for d in reversed(order):
        strides[d], step = step, step * shape[d]
    return strides


def batchnorm_case(shape, running, stride=None):
    c = Case()
    x = c.input("x", shape, stride=stride)
    s, b = c.input("scale", _cshape(shape)), c.input("bias", _cshape(shape))
    rm = c.input("rm", _cshape(shape)) if running else None
    rv = c.input("rv", _cshape(shape), positive=True) if running else None
    return c.outputs(*c.g.batchnorm(x, s, b, rm, rv, epsilon=1e-3, momentum=0.2))


def batchnorm_inference_case(shape, stride=None):
    c = Case()
    x = c.input("x", shape, stride=stride)
    mean, var = c.input("mean", _cshape(shape)), c.input("var", _cshape(shape), positive=True)
    s, b = c.input("scale", _cshape(shape)), c.input("bias", _cshape(shape))
    return c.outputs(c.g.batchnorm_inference(x, mean, var, s, b))


def batchnorm_backward_case(shape, stride=None):
    c = Case()
    dy, x = c.input("dy", shape, stride=stride), c.input("x", shape, stride=stride)
    s, mean = c.input("scale", _cshape(shape)), c.input("mean", _cshape(shape))
    inv = c.input("inv", _cshape(shape), positive=True)
    return c.outputs(*c.g.batchnorm_backward(dy, x, s, mean, inv))


def group_norm_case(shape, groups, affine, training, stride=None, param_stride=None):
    c = Case()
    x = c.input("x", shape, stride=stride)
    s = c.input("scale", _cshape(shape), stride=param_stride) if affine else None
    b = c.input("bias", _cshape(shape), stride=param_stride) if affine else None
    phase = "training" if training else "inference"
    if groups is None:
        return c.outputs(*c.g.instancenorm(x, s, b, norm_forward_phase=phase))
    return c.outputs(*c.g.groupnorm(x, groups, s, b, norm_forward_phase=phase))


def group_norm_backward_case(shape, groups, scale, has_bias, stride=None, param_stride=None):
    c = Case()
    dy, x = c.input("dy", shape, stride=stride), c.input("x", shape, stride=stride)
    s = c.input("scale", _cshape(shape), stride=param_stride) if scale else None
    g = shape[1] if groups is None else groups
    sshape = [shape[0], g] + [1] * (len(shape) - 2)
    mean, inv = c.input("mean", sshape), c.input("inv", sshape, positive=True)
    if groups is None:
        outs = c.g.instancenorm_backward(dy, x, s, mean, inv, has_bias=has_bias)
    else:
        outs = c.g.groupnorm_backward(dy, x, groups, s, mean, inv, has_bias=has_bias)
    return c.outputs(*outs)


def _attention_inputs(c, b, h, hk, sq, skv, d, dv):
    q = c.input("q", [b, h, sq, d])
    k = c.input("k", [b, hk, skv, d])
    v = c.input("v", [b, hk, skv, dv])
    return q, k, v


def _attention_bias(c, bias, b, h, sq, skv):
    """None, a bias of shape ``bias`` (a list), or "masked": a full bias with
    -inf on every entry of some rows (fully masked rows)."""
    if bias is None:
        return None
    if bias == "masked":
        value = c.rng.standard_normal((b, h, sq, skv))
        value[:, :, 1] = -np.inf
        value[0, 0, 2] = -np.inf
        return c.input("bias", [b, h, sq, skv], value)
    return c.input("bias", bias)


def sdpa_case(b=2, h=3, hk=3, sq=5, skv=7, d=4, dv=3, causal=False, bias=None, stats=True):
    c = Case()
    q, k, v = _attention_inputs(c, b, h, hk, sq, skv, d, dv)
    bias_t = _attention_bias(c, bias, b, h, sq, skv)
    o, st = c.g.sdpa(q, k, v, bias=bias_t, use_causal_mask=causal, generate_stats=stats)
    return c.outputs(o, st)


def _forward_o_stats(shape_args, causal, bias, arrays):
    """o and stats of the forward op on ``arrays`` (q, k, v and the bias)."""
    fwd = sdpa_case(*shape_args, causal=causal, bias=bias)
    return interpreter.run_module(graph_mlir.to_module(fwd.g), arrays)


def sdpa_backward_case(b=2, h=3, hk=3, sq=5, skv=7, d=4, dv=3, causal=False, bias=None):
    c = Case()
    q, k, v = _attention_inputs(c, b, h, hk, sq, skv, d, dv)
    bias_t = _attention_bias(c, bias, b, h, sq, skv)
    o_val, stats_val = _forward_o_stats((b, h, hk, sq, skv, d, dv), causal, bias, c.arrays)
    o = c.input("o", [b, h, sq, dv], o_val)
    do = c.input("do", [b, h, sq, dv])
    stats = c.input("stats", [b, h, sq, 1], stats_val)
    return c.outputs(*c.g.sdpa_backward(q, k, v, o, do, stats, bias=bias_t,
                                        use_causal_mask=causal))


# ---------------------------------------------------------------------- the cases

CASES = {}


def _add(name, case):
    assert name not in CASES, name
    CASES[name] = case


for _op in ("softmax", "log_softmax", "softmax_backward", "log_softmax_backward"):
    for _axis in (0, 1, 2):
        _add(f"{_op}-3d-axis{_axis}", lambda op=_op, a=_axis: softmax_case(op, [3, 5, 7], a))
    _add(f"{_op}-2d", lambda op=_op: softmax_case(op, [5, 7], 1))

for _op in ("layernorm", "rmsnorm"):
    for _axis, _shape in ((1, [3, 5, 7]), (2, [3, 5, 7]), (0, [5, 7]), (1, [2, 3, 5, 7])):
        for _scale, _bias in ((True, True), (False, False), (True, False), (False, True)):
            for _training in (False, True):
                _add(f"{_op}-r{len(_shape)}-axis{_axis}-s{int(_scale)}b{int(_bias)}"
                     f"-t{int(_training)}",
                     lambda op=_op, sh=_shape, a=_axis, s=_scale, b=_bias, t=_training:
                     feature_norm_case(op, sh, a, s, b, t))
    for _axis, _shape in ((1, [3, 5, 7]), (2, [3, 5, 7]), (0, [5, 7])):
        for _scale in (True, False):
            for _has_bias in (True, False):
                _add(f"{_op}_backward-r{len(_shape)}-axis{_axis}-s{int(_scale)}"
                     f"b{int(_has_bias)}",
                     lambda op=_op, sh=_shape, a=_axis, s=_scale, b=_has_bias:
                     feature_norm_backward_case(f"{op}_backward", sh, a, s, b))

for _shape in ([3, 5], [3, 5, 7], [2, 3, 5, 7], [2, 3, 3, 5, 2]):
    _r = len(_shape)
    _add(f"batchnorm-r{_r}", lambda sh=_shape: batchnorm_case(sh, False))
    _add(f"batchnorm-r{_r}-running", lambda sh=_shape: batchnorm_case(sh, True))
    _add(f"batchnorm_inference-r{_r}", lambda sh=_shape: batchnorm_inference_case(sh))
    _add(f"batchnorm_backward-r{_r}", lambda sh=_shape: batchnorm_backward_case(sh))
    if _r > 2:  # x stored channels-last: the rules work on its memory order
        _cl = _channels_last(_shape)
        _add(f"batchnorm-r{_r}-running-nhwc",
             lambda sh=_shape, st=_cl: batchnorm_case(sh, True, st))
        _add(f"batchnorm_inference-r{_r}-nhwc",
             lambda sh=_shape, st=_cl: batchnorm_inference_case(sh, st))
        _add(f"batchnorm_backward-r{_r}-nhwc",
             lambda sh=_shape, st=_cl: batchnorm_backward_case(sh, st))

for _shape, _groups in (([3, 6, 7], 2), ([2, 6, 5, 3], 3), ([2, 6, 5, 3], 1), ([3, 6], 3),
                        ([2, 6, 3, 5], 6), ([3, 5, 7], None), ([2, 3, 5, 7], None)):
    _op = "instancenorm" if _groups is None else "groupnorm"
    _tag = f"r{len(_shape)}-g{_groups}"
    for _affine in (True, False):
        for _training in (False, True):
            _add(f"{_op}-{_tag}-a{int(_affine)}-t{int(_training)}",
                 lambda sh=_shape, g=_groups, a=_affine, t=_training:
                 group_norm_case(sh, g, a, t))
    for _scale, _has_bias in ((True, True), (False, False), (True, False)):
        _add(f"{_op}_backward-{_tag}-s{int(_scale)}b{int(_has_bias)}",
             lambda sh=_shape, g=_groups, s=_scale, b=_has_bias:
             group_norm_backward_case(sh, g, s, b))
    if len(_shape) > 2:  # x stored channels-last: viewed as (N, S, C), norm_channels_last
        _cl, _pcl = _channels_last(_shape), _channels_last(_cshape(_shape))
        for _affine in (True, False):
            _add(f"{_op}-{_tag}-a{int(_affine)}-t1-nhwc",
                 lambda sh=_shape, g=_groups, a=_affine, st=_cl, ps=_pcl:
                 group_norm_case(sh, g, a, True, st, ps))
        _add(f"{_op}_backward-{_tag}-s1b1-nhwc",
             lambda sh=_shape, g=_groups, st=_cl, ps=_pcl:
             group_norm_backward_case(sh, g, True, True, st, ps))
        _add(f"{_op}_backward-{_tag}-s0b0-nhwc",
             lambda sh=_shape, g=_groups, st=_cl: group_norm_backward_case(sh, g, False, False, st))

ATTENTION = {
    "plain": {},
    "no-stats": {"stats": False},
    "causal": {"causal": True},
    "causal-square": {"causal": True, "sq": 7, "skv": 7},
    "causal-long-q": {"causal": True, "sq": 7, "skv": 5},
    "bias-full": {"bias": [2, 3, 5, 7]},
    "bias-broadcast": {"bias": [1, 1, 5, 7]},
    "bias-per-batch": {"bias": [2, 1, 1, 7], "causal": True},
    "masked-rows": {"bias": "masked"},
    "masked-rows-causal": {"bias": "masked", "causal": True},
    "gqa": {"h": 6, "hk": 2},
    "gqa-mqa-causal": {"h": 4, "hk": 1, "causal": True},
    "gqa-bias-heads": {"h": 6, "hk": 3, "bias": [1, 6, 5, 7]},
    "gqa-bias-broadcast": {"h": 6, "hk": 2, "bias": [2, 1, 5, 1]},
    "gqa-masked": {"h": 6, "hk": 3, "bias": "masked"},
}
for _name, _kw in ATTENTION.items():
    _add(f"sdpa-{_name}", lambda kw=_kw: sdpa_case(**kw))
    _kw = {k: v for k, v in _kw.items() if k != "stats"}
    _add(f"sdpa_backward-{_name}", lambda kw=_kw: sdpa_backward_case(**kw))


# ---------------------------------------------------------------------- helpers

def _composites(module):
    return sorted({op.name[4:] for op in dnn_ops(module) if op.name[4:] in COMPOSITE_OPS})


def _run(module, arrays):
    return interpreter.run_module(module, arrays)


def _assert_same(before, after, rtol=RTOL, atol=ATOL):
    assert len(before) == len(after)
    for i, (a, b) in enumerate(zip(before, after)):
        assert not np.isnan(b).any() or np.isnan(a).any(), f"output {i}: NaN after expansion"
        np.testing.assert_allclose(b, a, rtol=rtol, atol=atol, err_msg=f"output {i}")


# ---------------------------------------------------------------------- tests

def test_every_composite_op_has_cases():
    assert {name.split("-")[0] for name in CASES} == set(COMPOSITE_OPS)


@pytest.mark.parametrize("name", sorted(CASES))
def test_expand_all_keeps_meaning(name):
    case = CASES[name]()
    module = graph_mlir.to_module(case.g)
    assert _composites(module)
    before = _run(module, case.arrays)
    signature = str(entry_function(module).type)
    decompose.expand_all(module)
    assert _composites(module) == []
    assert module.operation.verify()
    verify_module(module)
    assert str(entry_function(module).type) == signature
    _assert_same(before, _run(module, case.arrays))


@pytest.mark.parametrize("name", sorted(CASES))
def test_default_pass_expands_documented_ops(name):
    case = CASES[name]()
    module = graph_mlir.to_module(case.g)
    present = set(_composites(module))
    before = _run(module, case.arrays)
    run_pipeline(module, "builtin.module(dnn-decompose)")
    expected = present - DEFAULT_OPS
    if "instancenorm" in present:
        expected.add("groupnorm")
    if "instancenorm_backward" in present:
        expected.add("groupnorm_backward")
    assert set(_composites(module)) == expected
    _assert_same(before, _run(module, case.arrays))


def test_default_set_is_the_documented_one():
    assert DEFAULT_OPS == {"batchnorm_inference", "instancenorm", "instancenorm_backward",
                           "softmax_backward", "log_softmax_backward"}


def test_front_pipeline_expands_the_norms_that_become_row_and_column_programs():
    """The decomposed stage also expands the norm backwards and the group
    norms, which dnn-fuse splits into row and column programs."""
    from dnnc import pipelines

    stage = next(s for s in pipelines.FRONT if s.name == "decomposed")
    expanded = set(DEFAULT_OPS)
    for p in stage.passes:
        if p.startswith("dnn-decompose{ops="):
            expanded |= set(p[len("dnn-decompose{ops="):-1].split(","))
    assert set(ROWS_AND_COLUMNS) <= expanded
    assert not {"layernorm", "rmsnorm", "softmax", "sdpa"} & expanded


def test_pass_all_option():
    case = CASES["sdpa_backward-gqa-masked"]()
    module = graph_mlir.to_module(case.g)
    before = _run(module, case.arrays)
    run_pipeline(module, "builtin.module(dnn-decompose{all=true})")
    assert _composites(module) == []
    _assert_same(before, _run(module, case.arrays))


def test_pass_ops_option_expands_exactly_those():
    c = Case()
    x = c.input("x", [3, 5, 7])
    s = c.input("scale", [1, 5, 7])
    y1 = c.g.softmax(x, axis=2)
    y2 = c.g.log_softmax(x, axis=1)
    y3 = c.g.layernorm(x, s, axis=1)[0]
    c.outputs(y1, y2, y3)
    module = graph_mlir.to_module(c.g)
    before = _run(module, c.arrays)
    run_pipeline(module, "builtin.module(dnn-decompose{ops=softmax,layernorm})")
    assert _composites(module) == ["log_softmax"]
    _assert_same(before, _run(module, c.arrays))


def test_expand_follows_chosen_chain():
    """instancenorm becomes groupnorm, which is expanded only when chosen too."""
    module = graph_mlir.to_module(CASES["instancenorm-r4-gNone-a1-t1"]().g)
    decompose.expand(module, ["instancenorm"])
    assert _composites(module) == ["groupnorm"]
    module = graph_mlir.to_module(CASES["instancenorm-r4-gNone-a1-t1"]().g)
    decompose.expand(module, ["instancenorm", "groupnorm"])
    assert _composites(module) == []


def test_pass_rejects_bad_options():
    with pytest.raises(PipelineError, match="got 'matmul'"):
        run_pipeline(graph_mlir.to_module(CASES["softmax-2d"]().g),
                     "builtin.module(dnn-decompose{ops=matmul})")
    with pytest.raises(PipelineError, match="both"):
        run_pipeline(graph_mlir.to_module(CASES["softmax-2d"]().g),
                     "builtin.module(dnn-decompose{all=true ops=softmax})")
    with pytest.raises(UnsupportedError, match="conv_fprop"):
        decompose.expand(graph_mlir.to_module(CASES["softmax-2d"]().g), ["conv_fprop"])


def test_expand_op_ignores_primitive_ops():
    module = graph_mlir.to_module(CASES["softmax-2d"]().g)
    decompose.expand_all(module)
    assert not any(decompose.expand_op(op) for op in dnn_ops(module))


def test_fully_masked_rows_give_zero_and_neg_inf():
    case = CASES["sdpa-masked-rows-causal"]()
    module = graph_mlir.to_module(case.g)
    decompose.expand_all(module)
    o, stats = _run(module, case.arrays)
    assert np.all(o[:, :, 1] == 0) and np.all(np.isneginf(stats[:, :, 1]))
    assert not np.isnan(o).any()


def test_causal_mask_uses_gen_index():
    module = graph_mlir.to_module(CASES["sdpa-causal"]().g)
    decompose.expand_all(module)
    names = [op.name for op in dnn_ops(module)]
    assert names.count("dnn.gen_index") == 2 and "dnn.cmp_gt" in names


# The expansions the front pipeline makes of these ops are fused into row
# programs and column programs: every reduction runs along the innermost dim
# alone or along every dim but the innermost (groupnorm's forward: along the
# trailing dims of its rows of channels x positions).
ROWS_AND_COLUMNS = ("layernorm_backward", "rmsnorm_backward", "groupnorm",
                    "groupnorm_backward", "instancenorm", "instancenorm_backward",
                    "batchnorm", "batchnorm_backward")
GROUP_NORMS = ("groupnorm", "groupnorm_backward", "instancenorm", "instancenorm_backward")


@pytest.mark.parametrize("name", sorted(n for n in CASES
                                        if n.split("-")[0] in ROWS_AND_COLUMNS))
def test_norm_reductions_run_along_rows_or_columns(name):
    module = graph_mlir.to_module(CASES[name]().g)
    decompose.expand_all(module)
    for op in dnn_ops(module):
        if op.name != "dnn.reduction":
            continue
        rank = len(op.operands[0].type.shape)
        axes = sorted(op.attributes["axes"])
        trailing = name.startswith("groupnorm-") and axes == list(range(2, rank))
        # Channels-last x, viewed (N, S, C): a column program per sample.
        middle = name.endswith("-nhwc") and name.split("-")[0] in GROUP_NORMS and \
            rank == 3 and axes == [1]
        assert axes in ([rank - 1], list(range(rank - 1))) or trailing or middle, f"{op}"


def test_groupnorm_is_one_row_per_group():
    """x (2, 6, 5, 3) in 3 groups: rows of 2 channels x 15 positions, reduced
    over both; the scale and bias are read per channel along the row, so
    that y needs no per-(sample, channel) coefficients computed apart."""
    module = graph_mlir.to_module(CASES["groupnorm-r4-g3-a1-t1"]().g)
    decompose.expand_all(module)
    text = str(module)
    assert "(tensor<2x6x5x3xf32>) -> tensor<2x3x2x15xf32>" in text
    assert "(tensor<1x6x1x1xf32>) -> tensor<1x3x2x1xf32>" in text
    reductions = [op for op in dnn_ops(module) if op.name == "dnn.reduction"]
    assert [list(op.attributes["axes"]) for op in reductions] == [[2, 3], [2, 3]]
    y = [op for op in dnn_ops(module) if op.name in ("dnn.mul", "dnn.add")
         and "tensor<1x3x2x1xf32>" in str(op.operands[1].type)]
    assert [op.name for op in y] == ["dnn.mul", "dnn.add"]


def test_channels_last_groupnorm_sums_the_middle_axis_of_its_memory_order():
    """x (2, 6, 5, 3) stored channels-last in 3 groups is read as (2, 15, 6):
    per-channel sums over the 15 positions (a column program per sample),
    per-group sums of those over 2 channels, and y back through the inverse
    transpose; the parameters are read as (1, 1, 6), no transposing copy."""
    module = graph_mlir.to_module(CASES["groupnorm-r4-g3-a1-t1-nhwc"]().g)
    decompose.expand_all(module)
    text = str(module)
    assert "permutation = array<i64: 0, 2, 3, 1>" in text
    assert "(tensor<2x5x3x6xf32>) -> tensor<2x15x6xf32>" in text
    assert "(tensor<1x6x1x1xf32>) -> tensor<1x1x6xf32>" in text
    assert "permutation = array<i64: 0, 3, 1, 2>" in text
    reductions = [(str(op.operands[0].type), list(op.attributes["axes"]))
                  for op in dnn_ops(module) if op.name == "dnn.reduction"]
    assert reductions == [("tensor<2x15x6xf32>", [1]), ("tensor<2x3x2xf32>", [2])] * 2


def test_channels_last_instancenorm_backward_sums_dy_and_dy_x_per_channel():
    """dy and x (2, 3, 5, 7) channels-last as (2, 35, 3): ds and db are sums
    over the middle axis, the coefficients of dx computed on (2, 1, 3), and
    dscale and dbias sums over the samples."""
    module = graph_mlir.to_module(CASES["instancenorm_backward-r4-gNone-s1b1-nhwc"]().g)
    decompose.expand_all(module)
    reductions = [(str(op.operands[0].type), list(op.attributes["axes"]))
                  for op in dnn_ops(module) if op.name == "dnn.reduction"]
    assert reductions == [("tensor<2x35x3xf32>", [1])] * 2 + [("tensor<2x3xf32>", [0])] * 2
    assert "(tensor<1x3x1x1xf32>) -> tensor<1x1x3xf32>" in str(module)


@pytest.mark.parametrize("shape,stride", [
    ([2, 6, 5, 3], [18, 1, 36, 6]),       # C innermost, N not outermost: (H, N, W, C)
    ([2, 6, 5, 3], [90, 15, 3, 1]),       # row-major
    ([2, 6, 1, 1], [6, 1, 6, 6]),         # no spatial positions
])
def test_groupnorm_of_other_layouts_keeps_rows(shape, stride):
    """Only an x whose memory order is (N, spatial, C) is viewed channels-last;
    any other keeps the row form (rows of channels x positions), and means the same."""
    case = group_norm_case(shape, 3, True, True, stride)
    module = graph_mlir.to_module(case.g)
    before = _run(module, case.arrays)
    decompose.expand_all(module)
    assert "dnn.transpose" not in str(module)
    _assert_same(before, _run(module, case.arrays))


# ---------------------------------------------------------------------- element types

LOW_PRECISION = ["softmax-3d-axis1", "log_softmax_backward-2d", "layernorm-r3-axis1-s1b1-t1",
                 "rmsnorm_backward-r3-axis2-s1b1", "batchnorm-r4-running",
                 "batchnorm_inference-r4", "instancenorm-r4-gNone-a1-t1",
                 "groupnorm_backward-r4-g3-s1b1", "groupnorm-r4-g3-a1-t1-nhwc",
                 "instancenorm_backward-r4-gNone-s1b1-nhwc", "sdpa-gqa-masked", "sdpa_backward-gqa"]


@pytest.mark.parametrize("name", LOW_PRECISION)
def test_bf16_graphs_keep_result_types(name, monkeypatch):
    """A bf16 graph: results keep their types, statistics stay f32, every
    intermediate computed by an arithmetic op is f32."""
    monkeypatch.setattr(Case, "dtype", "bf16")
    case = CASES[name]()
    module = graph_mlir.to_module(case.g)
    assert "bf16" in str(module)
    signature = str(entry_function(module).type)
    arrays = case.arrays
    before = _run(module, arrays)
    decompose.expand_all(module)
    assert _composites(module) == []
    verify_module(module)
    assert str(entry_function(module).type) == signature
    for op in dnn_ops(module):
        for r in op.results:
            if "bf16" in str(r.type) and op.name not in ("dnn.reshape", "dnn.transpose"):
                assert _only_returned(r), f"{op.name} gives {r.type} to an intermediate"
    _assert_same(before, _run(module, arrays), rtol=2e-2, atol=2e-2)


def _only_returned(value):
    """Whether ``value`` reaches only func.return, through reshapes and transposes."""
    for use in value.uses:
        owner = use.owner
        if owner.name == "func.return":
            continue
        if owner.name not in ("dnn.reshape", "dnn.transpose"):
            return False
        if not all(_only_returned(r) for r in owner.results):
            return False
    return True


def test_softmax_expansion_keeps_all_minus_inf_rows_finite():
    import dnnc
    from dnnc import graph_mlir, interpreter
    from dnnc.decompose import expand_all

    g = dnnc.Graph(io_data_type="f32")
    x = g.tensor(name="x", dim=[2, 3])
    g.softmax(x, axis=1).set_output(True)
    g.log_softmax(x, axis=1).set_output(True)
    module = graph_mlir.to_module(g)
    with module.context:
        expand_all(module)
    data = np.array([[-np.inf] * 3, [0.5, -np.inf, 2.0]])
    expected = g.execute_reference({"x": data})
    got = interpreter.run_module(module, [data])
    for e, v in zip(expected.values(), got):
        np.testing.assert_allclose(v, e, rtol=1e-6)
    assert not np.isnan(got[0]).any() and not np.isnan(got[1]).any()


def test_channels_last_batchnorm_sums_columns_of_its_memory_order():
    """x (2, 3, 5, 7) stored channels-last is read as (70, 3): the per-channel
    sums are column sums, and y goes back through the inverse transpose."""
    module = graph_mlir.to_module(CASES["batchnorm-r4-running-nhwc"]().g)
    decompose.expand_all(module)
    text = str(module)
    assert "permutation = array<i64: 0, 2, 3, 1>" in text
    assert "(tensor<2x5x7x3xf32>) -> tensor<70x3xf32>" in text
    assert "permutation = array<i64: 0, 3, 1, 2>" in text
    axes = [list(op.attributes["axes"]) for op in dnn_ops(module) if op.name == "dnn.reduction"]
    assert axes == [[0], [0]]


def test_row_major_batchnorm_sums_planes_then_samples():
    """x (2, 3, 5, 7) row-major: a row sum over the 35 positions of each
    (sample, channel), then a column sum over the 2 samples."""
    module = graph_mlir.to_module(CASES["batchnorm_backward-r4"]().g)
    decompose.expand_all(module)
    shapes = [(str(op.operands[0].type), list(op.attributes["axes"]))
              for op in dnn_ops(module) if op.name == "dnn.reduction"]
    assert shapes == [("tensor<2x3x35xf32>", [2]), ("tensor<2x3xf32>", [0])] * 2
    assert "dnn.transpose" not in str(module)
