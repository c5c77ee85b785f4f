"""ResNet-50 inference as one dnnc graph (bf16, NHWC, batchnorm folded into
the convolutions), checked against the same network in PyTorch on the same
weights, and timed against PyTorch eager (channels_last, bf16) and
torch.compile.

    python examples/resnet50.py build --batch 32 --out build/   # compile (needs MLIR)
    python examples/resnet50.py run build/resnet50_b32.dnnpkg   # check and time (GPU)
    python examples/resnet50.py                                 # both (GPU and MLIR)

The PyTorch side is torchvision's ``resnet50`` where torchvision is
installed, else the same network written out below in ``torch.nn``
(``TorchResNet50``: bottleneck blocks of 1x1, 3x3 (the stride), 1x1
convolutions, each followed by batchnorm, torchvision's layer layout and
parameter names). Its weights and batchnorm statistics are drawn from a
fixed seed; the dnnc graph gets each convolution's weight scaled by its
batchnorm's gamma / sqrt(var + eps) and a bias of beta - mean * that, so a
convolution, its batchnorm, the residual add and the relu are one kernel.
The graph's intermediates are bf16 (``intermediate_data_type``), as the
PyTorch network's activations are.

``run`` prints the largest difference of the logits from PyTorch's bf16
eager result, relative to their largest magnitude, and from a float32
evaluation of the same weights; then the median times (CUDA events via
``triton.testing.do_bench`` when Triton is there).
"""

import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "runtime"))

# (blocks, width) of the four stages; the output channels are 4 x width.
STAGES = [(3, 64), (4, 128), (6, 256), (3, 512)]
EXPANSION = 4
CLASSES = 1000
EPS = 1e-5
SEED = 0


def convolutions():
    """Every convolution of the network in order: (name, in channels, out
    channels, window, stride, padding), torchvision's parameter names."""
    out = [("conv1", 3, 64, 7, 2, 3)]
    channels = 64
    for s, (blocks, width) in enumerate(STAGES, 1):
        for b in range(blocks):
            stride = 2 if s > 1 and b == 0 else 1
            p = f"layer{s}.{b}"
            out += [(f"{p}.conv1", channels, width, 1, 1, 0),
                    (f"{p}.conv2", width, width, 3, stride, 1),
                    (f"{p}.conv3", width, width * EXPANSION, 1, 1, 0)]
            if b == 0:
                out.append((f"{p}.downsample.0", channels, width * EXPANSION, 1, stride, 0))
            channels = width * EXPANSION
    return out


def _nhwc(dims):
    n, c, *spatial = dims
    strides, step = [0] * len(dims), 1
    for d in [1] + list(range(len(dims) - 1, 1, -1)) + [0]:
        strides[d] = step
        step *= dims[d]
    return strides


def build_graph(batch):
    """The dnnc graph: inputs ``x`` (channels-last), then per convolution
    ``<name>.w`` (KRSC) and ``<name>.b``, then ``fc.w`` ([2048, 1000]) and
    ``fc.b``; output ``logits``."""
    import dnnc

    g = dnnc.Graph(name=f"resnet50_b{batch}", io_data_type="bf16",
                   intermediate_data_type="bf16")
    x = g.tensor(name="x", dim=[batch, 3, 224, 224], stride=_nhwc([batch, 3, 224, 224]))
    params = {}
    for name, cin, cout, r, _, _ in convolutions():
        dims = [cout, cin, r, r]
        params[name] = (g.tensor(name=f"{name}.w", dim=dims, stride=_nhwc(dims)),
                        g.tensor(name=f"{name}.b", dim=[1, cout, 1, 1]))

    def conv(name, h, stride, padding, relu=True, residual=None):
        w, b = params[name]
        y = g.add(g.conv_fprop(h, w, stride=stride, padding=padding), b)
        if residual is not None:
            y = g.add(y, residual)
        return g.relu(y) if relu else y

    h = conv("conv1", x, 2, 3)
    h = g.pooling(h, "max", window=3, stride=2, padding=1)
    for s, (blocks, _) in enumerate(STAGES, 1):
        for b in range(blocks):
            stride = 2 if s > 1 and b == 0 else 1
            p = f"layer{s}.{b}"
            shortcut = conv(f"{p}.downsample.0", h, stride, 0, relu=False) if b == 0 else h
            y = conv(f"{p}.conv1", h, 1, 0)
            y = conv(f"{p}.conv2", y, stride, 1)
            h = conv(f"{p}.conv3", y, 1, 0, residual=shortcut)
    h = g.pooling(h, "avg", window=7, stride=1)
    h = g.reshape(h, [batch, 512 * EXPANSION])
    fc_w = g.tensor(name="fc.w", dim=[512 * EXPANSION, CLASSES])
    fc_b = g.tensor(name="fc.b", dim=[1, CLASSES])
    g.add(g.matmul(h, fc_w), fc_b).set_name("logits").set_output(True)
    return g


def torch_model(torch):
    """ResNet-50 in eval mode with weights and batchnorm statistics drawn
    from SEED: torchvision's where installed, else TorchResNet50."""
    torch.manual_seed(SEED)
    try:
        import torchvision

        model = torchvision.models.resnet50()
    except ImportError:
        model = TorchResNet50(torch)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.BatchNorm2d):
                module.weight.uniform_(0.5, 1.5)
                module.bias.uniform_(-0.2, 0.2)
                module.running_mean.uniform_(-0.2, 0.2)
                module.running_var.uniform_(0.5, 1.5)
            elif isinstance(module, torch.nn.Conv2d):
                torch.nn.init.kaiming_normal_(module.weight, nonlinearity="relu")
    return model.eval()


def TorchResNet50(torch):
    """ResNet-50 (v1.5: the stride on the 3x3 convolution) in torch.nn, with
    torchvision's module names."""
    nn = torch.nn

    class Bottleneck(nn.Module):
        def __init__(self, cin, width, stride, downsample):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(width)
            self.conv2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(width)
            self.conv3 = nn.Conv2d(width, width * EXPANSION, 1, bias=False)
            self.bn3 = nn.BatchNorm2d(width * EXPANSION)
            self.relu = nn.ReLU()
            self.downsample = nn.Sequential(
                nn.Conv2d(cin, width * EXPANSION, 1, stride, bias=False),
                nn.BatchNorm2d(width * EXPANSION)) if downsample else None

        def forward(self, x):
            y = self.relu(self.bn1(self.conv1(x)))
            y = self.relu(self.bn2(self.conv2(y)))
            y = self.bn3(self.conv3(y))
            return self.relu(y + (self.downsample(x) if self.downsample is not None else x))

    class ResNet50(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            self.relu = nn.ReLU()
            self.maxpool = nn.MaxPool2d(3, 2, 1)
            cin = 64
            for s, (blocks, width) in enumerate(STAGES, 1):
                layers = []
                for b in range(blocks):
                    layers.append(Bottleneck(cin, width, 2 if s > 1 and b == 0 else 1, b == 0))
                    cin = width * EXPANSION
                setattr(self, f"layer{s}", nn.Sequential(*layers))
            self.avgpool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(cin, CLASSES)

        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            for s in range(1, 5):
                x = getattr(self, f"layer{s}")(x)
            return self.fc(torch.flatten(self.avgpool(x), 1))

    return ResNet50()


def folded_inputs(torch, model, x):
    """The dnnc graph's inputs (by name) from ``model``: each convolution's
    weight scaled by its batchnorm and the bias that batchnorm leaves."""
    modules = dict(model.named_modules())
    out = {"x": x}
    for name, _, cout, _, _, _ in convolutions():
        conv = modules[name]
        bn = modules[name.replace("conv", "bn") if "downsample" not in name
                     else name[:-1] + "1"]
        scale = bn.weight / torch.sqrt(bn.running_var + bn.eps)
        w = conv.weight * scale[:, None, None, None]
        out[f"{name}.w"] = w.to(torch.bfloat16).contiguous(memory_format=torch.channels_last)
        out[f"{name}.b"] = (bn.bias - bn.running_mean * scale).reshape(1, cout, 1, 1).to(
            torch.bfloat16)
    out["fc.w"] = model.fc.weight.t().contiguous().to(torch.bfloat16)
    out["fc.b"] = model.fc.bias.reshape(1, CLASSES).to(torch.bfloat16)
    return out


def build(args):
    from dnnc import compiler

    os.makedirs(args.out, exist_ok=True)
    g = build_graph(args.batch)
    artifact = compiler.compile_module(g.to_module(), compiler.Options(target="cuda",
                                                                       arch=args.arch),
                                       basename=g.name)
    path = os.path.join(args.out, f"{g.name}.dnnpkg")
    artifact.save(path)
    kernels = artifact.manifest["kernels"]
    strategies = {}
    for k in kernels:
        strategies[k["config"]["strategy"]] = strategies.get(k["config"]["strategy"], 0) + 1
    print(f"wrote {path}: {len(kernels)} kernel launches "
          + ", ".join(f"{n} {s}" for s, n in sorted(strategies.items())))
    return path


def _time(torch, fn):
    try:
        from triton.testing import do_bench

        return do_bench(fn, warmup=50, rep=300)
    except ImportError:
        start, end = torch.cuda.Event(True), torch.cuda.Event(True)
        for _ in range(10):
            fn()
        start.record()
        for _ in range(50):
            fn()
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end) / 50


def run(args):
    import torch

    import dnnc_runtime

    exe = dnnc_runtime.load(args.package)
    batch = exe.inputs[0].dims[0]
    model = torch_model(torch).cuda()
    torch.manual_seed(SEED + 1)
    x32 = torch.randn(batch, 3, 224, 224, device="cuda").contiguous(
        memory_format=torch.channels_last)
    with torch.no_grad():
        inputs = folded_inputs(torch, model, x32.to(torch.bfloat16))
        want32 = model(x32)
        model_bf16 = model.to(torch.bfloat16).to(memory_format=torch.channels_last)
        x = inputs["x"]
        want = model_bf16(x)
    ordered = [inputs[spec.name] for spec in exe.inputs]
    logits = torch.full((batch, CLASSES), float("nan"), dtype=torch.bfloat16, device="cuda")
    exe(*ordered, outputs=[logits])
    torch.cuda.synchronize()
    scale = want32.abs().max().item()
    err = (logits.float() - want.float()).abs().max().item() / scale
    err32 = (logits.float() - want32).abs().max().item() / scale
    eager_err = (want.float() - want32).abs().max().item() / scale
    agree = (logits.float().argmax(1) == want32.argmax(1)).float().mean().item()
    print(f"logits vs PyTorch bf16: {err:.2e}; vs float32: {err32:.2e} (PyTorch bf16 vs "
          f"float32: {eager_err:.2e}); top-1 agreement with float32 {agree:.3f}")
    ok = torch.isfinite(logits).all().item() and err32 <= max(4 * eager_err, 0.05)
    if not ok:
        print("FAILED: the logits differ from PyTorch's more than bf16 rounding explains")
    with torch.no_grad():
        ours = _time(torch, lambda: exe(*ordered, outputs=[logits]))
        eager = _time(torch, lambda: model_bf16(x))
        compiled_model = torch.compile(model_bf16)
        compiled_model(x)
        compiled = _time(torch, lambda: compiled_model(x))
    print(f"batch {batch}: dnnc {ours:.3f} ms, PyTorch eager {eager:.3f} ms, torch.compile "
          f"{compiled:.3f} ms ({torch.cuda.get_device_name()})")
    return 0 if ok else 1


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd")
    b = sub.add_parser("build")
    b.add_argument("--batch", type=int, default=32)
    b.add_argument("--arch", default="sm_90a")
    b.add_argument("--out", default="build")
    r = sub.add_parser("run")
    r.add_argument("package")
    args = p.parse_args(argv)
    if args.cmd == "build":
        build(args)
        return 0
    if args.cmd == "run":
        return run(args)
    args.batch, args.arch, args.out = 32, "sm_90a", "build"
    args.package = build(args)
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
