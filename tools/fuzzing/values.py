"""Input values of a configuration (the run side: torch and NumPy only).

Values are drawn with NumPy from (seed, family, index), so that a
configuration gets the same inputs on every machine, and rounded to the
tensor's type: what the GPU reads is what the reference reads. The huge
set draws on the GPU with torch's generator instead (NumPy would take
minutes and tens of GB for 2**31 values).

``extremal`` inputs are normal draws with a share of their elements
replaced: +inf, -inf, NaN, large values (f16: the upper half of its
range, near 65504; f32 and bf16: 1e15 to 2e15, so that f32 sums and
squares of them stay finite), and, for f16, subnormals. f32 and bf16 subnormals are
not drawn: they are f32 subnormals, which the GPU's f32 math may flush
to zero (a documented difference, not a bug to report).
"""

import numpy as np
import torch

from .program import FAMILIES
from .shapes import storage_elements

TORCH = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
SHARE = 0.03  # of the elements, for each kind of extremal value


def _rng(config, salt):
    return np.random.default_rng([config["seed"], FAMILIES.index(config["family"]),
                                  config["index"], salt])


def _extremal(rng, x, dtype, big=True):
    # f16: its largest values, which f32 arithmetic holds, squares and sums
    # included. f32 and bf16: 1e15 and up to twice that, not their largest
    # (3.4e38): the kernels sum and square in f32, where two of those
    # overflow, while the reference sums in float64.
    top = float(torch.finfo(torch.float16).max) if dtype == "f16" else 2e15
    kinds = [np.inf, -np.inf, np.nan] + (["big"] if big else []) \
        + (["subnormal"] if dtype == "f16" else [])
    pick = rng.random(x.shape)
    for j, kind in enumerate(kinds):
        where = (pick >= j * SHARE) & (pick < (j + 1) * SHARE)
        if kind == "big":
            value = np.sign(rng.standard_normal(x.shape)) * rng.uniform(0.5, 1.0, x.shape) * top
        elif kind == "subnormal":
            value = np.sign(rng.standard_normal(x.shape)) * rng.integers(1, 1024, x.shape) \
                * 2.0 ** -24
        else:
            value = kind
        x = np.where(where, value, x)
    return x


def draw_one(rng, spec):
    """The float64 values of a tensor of ``spec`` (program.py)."""
    dims, kind, scale = spec["dims"], spec["draw"], spec.get("scale", 1.0)
    if kind == "positive":
        return rng.uniform(0.5, 2.0, dims)
    if kind == "near_one":
        return rng.uniform(0.9, 1.1, dims)
    if kind == "extremal_near_one":  # a product's inputs (families.reduction)
        return _extremal(rng, rng.uniform(0.9, 1.1, dims), spec["dtype"], big=False)
    x = rng.standard_normal(dims) * scale
    if kind == "extremal":
        x = _extremal(rng, x, spec["dtype"])
    return x


def inputs(config, device="cpu"):
    """{tensor name: logical (row-major) torch tensor of its type on
    ``device``} for every drawn input of ``config``; the attention
    backward's o and statistics (``forward_o``, ``forward_stats``) are
    left to the caller (torch_ops.derive)."""
    out = {}
    if config.get("huge"):
        gen = torch.Generator(device=device)
        gen.manual_seed(config["seed"] * 1000003 + config["index"])
        for name, spec in config["tensors"].items():
            out[name] = torch.randn(spec["dims"], generator=gen, device=device,
                                    dtype=TORCH[spec["dtype"]])
        return out
    rng = _rng(config, 0)
    for name, spec in config["tensors"].items():
        if spec["draw"].startswith("forward_"):
            continue
        x = torch.from_numpy(draw_one(rng, spec))
        out[name] = x.to(TORCH[spec["dtype"]]).to(device)
    return out


# Bytes of NaN before and after every input (``laid_out``).
GUARD = 256


def laid_out(value, dims, strides):
    """``value`` copied into a tensor of ``dims`` with ``strides``, inside a
    buffer of NaN: its padding (what the strides skip) and ``GUARD`` bytes
    either side of it. A kernel that reads past an input, or its padding,
    and multiplies what it read by zero (a masked element) then writes NaN
    whatever the allocator put beside it, in a package run alone as in a
    whole folder (conv #244 of seed 1 read past dy into a neighbour's
    poisoned output: its NaN showed only beside that neighbour)."""
    guard = GUARD // value.element_size()
    span = storage_elements(dims, strides)
    buffer = torch.full((span + 2 * guard,), float("nan"), dtype=value.dtype,
                        device=value.device)
    out = buffer.as_strided(dims, strides, guard)
    out.copy_(value.reshape(dims))
    return out
