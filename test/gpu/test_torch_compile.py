"""``torch.compile(model, backend="dnnc")`` on a GPU against eager PyTorch:
a GPT-2-small block, a ViT-Base block and ResNet-50 (bench/torch_models.py),
bf16 (ResNet-50 channels-last), forward and a training step.

bf16 results are compared through an f32 copy of the model: dnnc's error
against the f32 result may be at most twice eager bf16's plus a little
(both round each op's result to bf16; they differ in the order of their
sums and in fused epilogues). The gradients of every parameter are
compared the same way, as relative L2 errors. The compiled graphs' reports
must show the model's main ops in dnnc. Needs PyTorch with CUDA and the
dnnc compiler (MLIR): the regions are compiled by the JIT on first call.

    pytest test/gpu/test_torch_compile.py -v
"""

import copy
import os
import sys

import pytest

torch = pytest.importorskip("torch", reason="PyTorch not installed")
if not torch.cuda.is_available():
    pytest.skip("PyTorch sees no CUDA device", allow_module_level=True)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
import torch_models  # noqa: E402

import dnnc.torch  # noqa: E402

# model -> (batch, build keywords, ATen ops that must run in dnnc)
CASES = {
    "gpt2_block": (2, dict(seq=256), ["aten.native_layer_norm", "aten.addmm", "aten.gelu",
                                      "aten.native_layer_norm_backward", "aten.mm"]),
    "vit_block": (2, dict(), ["aten.native_layer_norm", "aten.addmm", "aten.gelu"]),
    "resnet50": (4, dict(image=128), ["aten.convolution", "aten.convolution_backward",
                                      "aten._native_batch_norm_legit_functional",
                                      "aten.native_batch_norm_backward"]),
}


def rel(a, b):
    a, b = a.float(), b.float()
    return ((a - b).norm() / b.norm().clamp_min(1e-30)).item()


def _step(model, x, weight):
    out = model(x)
    (out.float() * weight).sum().backward()
    # a compiled module names its parameters through the module it wraps
    return out.detach(), {n.removeprefix("_orig_mod."): p.grad.detach().clone()
                          for n, p in model.named_parameters()}


@pytest.mark.parametrize("name", list(CASES))
def test_training_step_bf16(name):
    batch, kw, ops = CASES[name]
    torch._dynamo.reset()
    model, (x,) = torch_models.build(name, batch, device="cuda", dtype=torch.bfloat16, **kw)
    model.train()
    eager = copy.deepcopy(model)
    ref = copy.deepcopy(model).float()
    report = []
    compiled = torch.compile(model, backend="dnnc", dynamic=False,
                             options={"report": report})
    weight = torch.randn(eager(x).shape, device="cuda", generator=torch.Generator(
        device="cuda").manual_seed(3))
    for m in (eager, ref):
        m.zero_grad(set_to_none=True)
    out, grads = _step(compiled, x, weight)
    out_e, grads_e = _step(eager, x, weight)
    out_r, grads_r = _step(ref, x.float(), weight)

    err, err_e = rel(out, out_r), rel(out_e, out_r)
    assert err <= 2 * err_e + 1e-2, f"{name} forward: dnnc {err:.3g}, eager bf16 {err_e:.3g}"
    worst = []
    for n in grads_r:
        e, e_e = rel(grads[n], grads_r[n]), rel(grads_e[n], grads_r[n])
        if e > 2 * e_e + 2e-2:
            worst.append(f"{n}: dnnc {e:.3g}, eager bf16 {e_e:.3g}")
    assert not worst, f"{name} gradients: " + "; ".join(worst)

    taken = {op for g in report for r in g.regions for _, op in r.ops}
    assert [g.kind for g in report] == ["forward", "backward"]
    missing = [op for op in ops if op not in taken]
    left = sorted({f"{op}: {why}" for g in report for _, op, why in g.fallbacks})
    assert not missing, f"{name}: {missing} not in dnnc; left to torch: {left}"


@pytest.mark.parametrize("name", ["gpt2_block", "resnet50"])
def test_later_steps_take_the_steady_path(name, monkeypatch):
    """Later training steps on new data: every region call goes through the
    runtime's fast path (CompiledRegion._run_steady, no call of _run_cuda;
    a graph of its launches where its addresses repeat: replay.py), and
    the output and gradients match eager's as the first step's do."""
    from dnnc.torch import compiled as regions

    batch, kw, _ = CASES[name]
    torch._dynamo.reset()
    model, (x,) = torch_models.build(name, batch, device="cuda", dtype=torch.bfloat16, **kw)
    model.train()
    eager, ref = copy.deepcopy(model), copy.deepcopy(model).float()
    compiled = torch.compile(model, backend="dnnc", dynamic=False)
    weight = torch.randn(eager(x).shape, device="cuda")
    _step(compiled, x, weight)
    x2 = torch.randn_like(x, dtype=torch.float32).to(x.dtype).contiguous(
        memory_format=torch.channels_last if x.dim() == 4 else torch.contiguous_format)
    slow = []
    real = regions.CompiledRegion._run_cuda
    monkeypatch.setattr(regions.CompiledRegion, "_run_cuda",
                        lambda self, args: slow.append(self.name) or real(self, args))
    for _ in range(3):        # the later ones on the memory of the ones before
        for m in (compiled, eager, ref):
            m.zero_grad(set_to_none=True)
        out, grads = _step(compiled, x2, weight)
    out_e, grads_e = _step(eager, x2, weight)
    out_r, grads_r = _step(ref, x2.float(), weight)
    assert not slow, f"{name}: regions called off the fast path: {slow}"
    err, err_e = rel(out, out_r), rel(out_e, out_r)
    assert err <= 2 * err_e + 1e-2, f"{name} forward: dnnc {err:.3g}, eager bf16 {err_e:.3g}"
    worst = [n for n in grads_r
             if rel(grads[n], grads_r[n]) > 2 * rel(grads_e[n], grads_r[n]) + 2e-2]
    assert not worst, f"{name} gradients: {worst}"


def _record_region_calls(monkeypatch):
    """([(region, its input tensors)] of every CompiledRegion.run from now
    on, the unpatched run)."""
    from dnnc.torch import compiled as regions

    calls = []
    real = regions.CompiledRegion.run
    monkeypatch.setattr(regions.CompiledRegion, "run",
                        lambda self, tensors, **kw: calls.append((self, list(tensors)))
                        or real(self, tensors, **kw))
    return calls, real


def test_replayed_region_computes_what_its_launches_do(monkeypatch):
    """A region of tensor-core kernels (the GPT-2 block's inference plan:
    TMA GEMMs, the attention) with graph replay on: the call that repeats
    a recent call's addresses is captured, the next is one graph launch,
    and each gives what launching the kernels one by one gives, also after
    an input's contents change at the same address."""
    torch._dynamo.reset()
    calls, _ = _record_region_calls(monkeypatch)
    model, (x,) = torch_models.build("gpt2_block", 2, device="cuda", seq=256)
    model.eval()
    compiled = torch.compile(model, backend="dnnc", dynamic=False)
    with torch.no_grad():
        compiled(x)
    (region, tensors), = calls
    exe = region.exe
    args = region.steady_inputs(tensors)
    outs = [torch.empty_strided(s.shape, s.strides, dtype=s.dtype, device="cuda")
            for s in region.outputs if not s.filler]

    def call():
        for o in outs:
            o.fill_(float("nan"))
        assert exe.run_steady(args + outs)
        torch.cuda.synchronize()
        return [o.clone() for o in outs]

    want = call()
    exe.graph_replay = True
    call()
    call()                                   # captured after these launches
    assert len(exe._relaunch.replays.graphs) == 1
    for got, ref in zip(call(), want):       # the graph
        torch.testing.assert_close(got, ref, rtol=1e-2, atol=1e-2, equal_nan=False)
    moved = max((a for a in args if 0 not in a.stride()), key=lambda a: a.numel())
    moved.mul_(0.5)                          # new contents, same address
    replayed = call()
    exe.graph_replay = False
    for got, ref in zip(replayed, call()):
        torch.testing.assert_close(got, ref, rtol=1e-2, atol=1e-2, equal_nan=False)


def test_region_call_off_its_layout(monkeypatch):
    """A region called with an input away from a 16-byte boundary (a view at
    an odd offset, which the kernels' vector loads do not take) leaves the
    fast path for the general one, which copies it, and returns what the
    aligned call returns."""
    from dnnc.torch import compiled as regions

    torch._dynamo.reset()
    calls, real = _record_region_calls(monkeypatch)
    layer = torch.nn.Sequential(torch.nn.Linear(64, 96), torch.nn.GELU()).cuda()
    compiled = torch.compile(layer, backend="dnnc", dynamic=False)
    with torch.no_grad():
        compiled(torch.randn(32, 64, device="cuda"))
    (region, tensors), = calls
    first = [t.clone() for t in real(region, tensors)]
    again = [t.clone() for t in real(region, tensors)]     # the fast path's call
    moved = []
    for t in tensors:       # each input copied to one element past a 16-byte boundary
        storage = torch.empty(t.numel() + 1, dtype=t.dtype, device=t.device)
        shifted = storage[1:].view(t.shape)
        shifted.copy_(t)
        assert shifted.data_ptr() % 16 != 0
        moved.append(shifted)
    slow = []
    real_cuda = regions.CompiledRegion._run_cuda
    monkeypatch.setattr(regions.CompiledRegion, "_run_cuda",
                        lambda self, args: slow.append(1) or real_cuda(self, args))
    off = real(region, moved)
    assert slow, "a misaligned input went through the fast path"
    for a, b, c in zip(first, again, off):
        torch.testing.assert_close(b, a, rtol=0, atol=0)
        torch.testing.assert_close(c, a, rtol=0, atol=0)


@pytest.mark.parametrize("name", list(CASES))
def test_inference_bf16(name):
    batch, kw, ops = CASES[name]
    torch._dynamo.reset()
    model, (x,) = torch_models.build(name, batch, device="cuda", dtype=torch.bfloat16, **kw)
    model.eval()
    ref = copy.deepcopy(model).float()
    compiled = torch.compile(model, backend="dnnc", dynamic=False)
    with torch.no_grad():
        out, out_e, out_r = compiled(x), model(x), ref(x.float())
    err, err_e = rel(out, out_r), rel(out_e, out_r)
    assert err <= 2 * err_e + 1e-2, f"{name} inference: dnnc {err:.3g}, eager {err_e:.3g}"


def test_attention_runs_in_dnnc():
    """The GPT-2 block's attention, whichever fused op torch picks on this
    GPU, runs in dnnc forward and backward."""
    torch._dynamo.reset()
    model, (x,) = torch_models.build("gpt2_block", 2, device="cuda", seq=128)
    report = dnnc.torch.explain(model, x, backward=True)
    attention = [op for _, _, _, op in report.dnnc_ops if "scaled_dot_product" in op]
    assert len(attention) == 2, str(report)


@pytest.mark.parametrize("name", ["gpt2_block", "vit_block"])
def test_training_plans_without_copies(name):
    """A bf16 block's training step compiled on this GPU: the forward
    returns q, k, v, o and the layernorms' outputs as views (no copy or
    load kernel in its plan), the backward writes dq, dk and dv into their
    concat (no concat kernel) and casts no parameter gradient on its own
    (no pointwise kernel): bench/torch_plan.py's counts, here with the
    attention op torch picks on this GPU."""
    torch._dynamo.reset()
    batch, kw, _ = CASES[name]
    model, (x,) = torch_models.build(name, batch, device="cuda", **kw)
    report = dnnc.torch.explain(model, x, backward=True)
    plans = {g.kind: [k for r in g.regions for k, _, _ in r.kernels] for g in report.graphs}
    extra = [k for k in plans["forward"] if k.endswith("_tensor") or "_load_" in k
             or k.endswith("_pointwise")]
    assert not extra, (name, plans["forward"])
    extra = [k for k in plans["backward"] if k.endswith("_concat") or "_load_" in k
             or k.endswith("_pointwise")]
    assert not extra, (name, plans["backward"])


def test_f32_block_matches_eager():
    """f32 with tf32 off: dnnc and eager agree closely."""
    torch._dynamo.reset()
    old = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        model, (x,) = torch_models.build("vit_block", 2, device="cuda", dtype=torch.float32)
        eager = copy.deepcopy(model)
        compiled = torch.compile(model, backend="dnnc", dynamic=False)
        weight = torch.randn(x.shape, device="cuda")
        out, grads = _step(compiled, x, weight)
        out_e, grads_e = _step(eager, x, weight)
        torch.testing.assert_close(out, out_e, rtol=1e-4, atol=1e-4)
        for n in grads_e:
            assert rel(grads[n], grads_e[n]) < 1e-4, n
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = old
