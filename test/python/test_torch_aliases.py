"""dnnc/torch/aliases.py: a region's outputs that are views of one storage
come back as one region output and views of it, on the CPU back end against
eager PyTorch; and the training step's plans without the copies."""

import pytest

torch = pytest.importorskip(
    "torch", reason="PyTorch not installed: the torch.compile backend is not tested")
from torch.fx.experimental.proxy_tensor import make_fx  # noqa: E402

import dnnc.torch  # noqa: E402
from dnnc.torch import aliases, partition  # noqa: E402
from test_torch_compile import Block, check, randn  # noqa: E402

pytestmark = pytest.mark.torch

BF16 = dict(rtol=3e-2, atol=3e-2)


def _region(fn, *inputs):
    """(graph module, region nodes, their outputs) of ``fn`` traced to ATen."""
    gm = make_fx(fn, tracing_mode="fake")(*inputs)
    regions, refused = partition.propose(gm, "cpu")
    assert len(regions) == 1 and not refused, refused
    return gm, regions[0], partition.outputs_of(regions[0])


def _qkv(x, w):
    """A projection split in three, each viewed as heads and transposed, and
    the weight's transpose: five views, two storages."""
    wt = w.t()
    qkv = torch.mm(x, wt)
    q, k, v = (z.view(4, 2, 4).transpose(0, 1) for z in qkv.split(8, dim=1))
    return q, k, v, wt


def test_views_of_a_projection_are_one_output():
    gm, nodes, outputs = _region(_qkv, randn(4, 6), randn(24, 6))
    plan = aliases.plan(nodes, outputs)
    mm = next(n for n in nodes if n.target is torch.ops.aten.mm.default)
    assert plan.outputs == [mm]
    roots = {node.name: root.name for node, root, _ in plan.views}
    names = [n.name for n in outputs]
    assert sorted(roots) == sorted(names), (roots, names)
    w = next(n for n in gm.graph.nodes if n.op == "placeholder" and n.name.startswith("w"))
    transposes = [n for n in outputs if n.target is torch.ops.aten.transpose.int]
    assert len(transposes) == 3 and all(roots[t.name] == mm.name for t in transposes)
    t = next(n for n in outputs if n.target is torch.ops.aten.t.default)
    assert roots[t.name] == w.name   # replayed on the weight: no output at all
    for _, _, steps in plan.views:
        assert steps, "each view is replayed from its root"


def test_views_of_a_projection_run_as_views():
    report = check(_qkv, randn(4, 6), randn(24, 6, seed=1), ops=["aten.mm"], grad=True)
    [graph] = [g for g in report if g.kind == "forward"]
    assert graph.residual.endswith("views)"), graph.residual


def _transposed_result(x):
    """A pointwise result laid out as its transposed input (so not dense in
    dnnc's layout) and its transpose (dense): the first is rebuilt from the
    second by as_strided."""
    m = x.t() * 2
    return m, m.t()


def test_a_view_not_made_from_its_root_is_as_strided():
    _, nodes, outputs = _region(_transposed_result, randn(4, 6))
    plan = aliases.plan(nodes, outputs)
    assert [n.target for n in plan.outputs] == [torch.ops.aten.t.default]
    [(node, root, steps)] = plan.views
    assert node.target is torch.ops.aten.mul.Tensor and root is plan.outputs[0]
    assert steps is None
    check(_transposed_result, randn(4, 6), ops=["aten.mul"], grad=True)


def test_an_overlapping_view_stays_a_copy():
    """A broadcast (expand) of a region value overlaps itself: no region
    output holds it densely, so it stays an output of its own."""
    def fn(x):
        y = x * 3
        return y, y.expand(2, 4, 6)
    _, nodes, outputs = _region(fn, randn(4, 6))
    plan = aliases.plan(nodes, outputs)
    mul = next(n for n in nodes if n.target is torch.ops.aten.mul.Tensor)
    assert mul in plan.outputs
    check(fn, randn(4, 6), ops=["aten.mul"])


def test_training_step_returns_views_not_copies():
    """A transformer block's training step in bf16: the forward returns q,
    k, v (slices of the qkv projection), o, the layernorms' outputs and the
    weights' transposes as views, so that its sm_90a plan has no copy kernel
    (no slice, transpose or reshape copies, no loads of the weights); the
    backward reads q, k and v where the forward left them (no load copy)
    and writes dq, dk and dv into their concat (no concat kernel).
    Outputs and gradients against eager on the CPU back end."""
    torch.manual_seed(0)
    ours = Block().to(torch.bfloat16)
    theirs = Block().to(torch.bfloat16)
    theirs.load_state_dict(ours.state_dict())
    x = randn(2, 8, 32, dtype=torch.bfloat16)
    torch._dynamo.reset()
    report = []
    compiled = torch.compile(ours, backend="dnnc", dynamic=False,
                             options={"fallback": "eager", "report": report})
    got, want = compiled(x), theirs(x)
    torch.testing.assert_close(got, want, **BF16)
    weight = randn(*want.shape, seed=9, dtype=torch.bfloat16)
    (got.float() * weight.float()).sum().backward()
    (want.float() * weight.float()).sum().backward()
    for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        torch.testing.assert_close(p.grad, q.grad, **BF16, msg=lambda m: f"grad of {name}: {m}")
    forward, backward = report
    assert forward.kind == "forward" and forward.residual.endswith("views)"), forward.residual
    plans = {g.kind: [name for r in g.regions for name, _, _ in r.region.kernels()]
             for g in report}
    copies = [n for n in plans["forward"] if n.endswith("_tensor") or "_load_" in n]
    assert not copies, plans["forward"]
    assert any(n.endswith("_sdpa") for n in plans["forward"])
    # q, k, v (and o) are the backward region's inputs of rank 4: none is
    # loaded into a row-major buffer. (The CPU's attention returns its
    # log-sum-exp [B, H, S] laid out [B, S, H]: that one is copied.)
    region = backward.regions[0].region
    qkv = [f"_load_in{i}" for i, spec in enumerate(region.inputs) if len(spec.shape) == 4]
    assert len(qkv) == 4
    loads = [n for n in plans["backward"] if any(n.endswith(q) for q in qkv)]
    assert not loads, plans["backward"]
    # dq, dk and dv written into their concat, the qkv weight's gradient
    # (dnn-concat-views): no concat kernel.
    assert not any(n.endswith("_concat") for n in plans["backward"]), plans["backward"]
    strided = [spec.strides for spec in region.inputs if len(spec.shape) == 4]
    assert strided.count((768, 8, 96, 1)) == 3, strided   # inside the [16, 96] projection
    torch._dynamo.reset()
