"""The models of the torch.compile comparisons (bench/torch_compile.py and
test/gpu/test_torch_compile.py): a GPT-2-small block, a ViT-Base block and
ResNet-50 (torchvision's where it is installed, else the same network
written out here: bottleneck blocks of 3, 4, 6, 3 with a stride-2 3x3,
torchvision's "v1.5" layout).

    model, inputs = build("gpt2_block", batch=8, device="cuda", dtype=torch.bfloat16)
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class TransformerBlock(nn.Module):
    """Pre-norm transformer block: LayerNorm, attention (causal for GPT-2),
    residual, LayerNorm, MLP with GELU, residual."""

    def __init__(self, dim, heads, causal, mlp_ratio=4):
        super().__init__()
        self.heads, self.causal = heads, causal
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.fc, self.out = nn.Linear(dim, mlp_ratio * dim), nn.Linear(mlp_ratio * dim, dim)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh" if self.causal
                                   else "none"))


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes, planes, stride=1):
        super().__init__()
        width = planes
        self.conv1 = nn.Conv2d(inplanes, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, planes * 4, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * 4)
        self.downsample = None
        if stride != 1 or inplanes != planes * 4:
            self.downsample = nn.Sequential(
                nn.Conv2d(inplanes, planes * 4, 1, stride=stride, bias=False),
                nn.BatchNorm2d(planes * 4))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        y = F.relu(self.bn1(self.conv1(x)))
        y = F.relu(self.bn2(self.conv2(y)))
        return F.relu(self.bn3(self.conv3(y)) + identity)


class ResNet50(nn.Module):
    """ResNet-50 as torchvision builds it (used where torchvision is missing)."""

    def __init__(self, num_classes=1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        layers, inplanes = [], 64
        for planes, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
            stage = []
            for i in range(blocks):
                stage.append(Bottleneck(inplanes, planes, stride if i == 0 else 1))
                inplanes = planes * 4
            layers.append(nn.Sequential(*stage))
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(2048, num_classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 3, stride=2, padding=1)
        x = self.layers(x)
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def resnet50():
    """torchvision's ResNet-50 (random weights) where installed, else ResNet50()."""
    try:
        import torchvision
    except ImportError:
        return ResNet50()
    return torchvision.models.resnet50()


MODELS = ("gpt2_block", "vit_block", "resnet50")


def build(name, batch, device="cuda", dtype=torch.bfloat16, seq=None, image=224, seed=0):
    """(model, [input]) of model ``name`` (one of MODELS) on ``device`` in
    ``dtype``: GPT-2-small's block (768 wide, 12 heads, causal) over ``seq``
    tokens (1024 by default), ViT-Base's block (768, 12 heads) over 197
    tokens, ResNet-50 over ``image`` x ``image`` images, channels-last."""
    torch.manual_seed(seed)
    gen = torch.Generator(device="cpu").manual_seed(seed + 1)
    if name == "gpt2_block":
        model = TransformerBlock(768, 12, causal=True)
        x = torch.randn(batch, seq or 1024, 768, generator=gen)
    elif name == "vit_block":
        model = TransformerBlock(768, 12, causal=False)
        x = torch.randn(batch, seq or 197, 768, generator=gen)
    elif name == "resnet50":
        model = resnet50()
        x = torch.randn(batch, 3, image, image, generator=gen)
    else:
        raise ValueError(f"model {name!r}: expected one of {', '.join(MODELS)}")
    model = model.to(device=device, dtype=dtype)
    x = x.to(device=device, dtype=dtype)
    if name == "resnet50":
        model = model.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    return model, [x]
