"""The cases of dnnc.torch's op tests, shared by the CPU tests
(test_torch_ops.py, float32 on CPU tensors) and the GPU script
(test/gpu/test_torch_ops.py, bf16 / f16 / f32 on CUDA tensors).

A case is a dnnc.torch call, the torch call it stands for, and how to make
its inputs (``make(dtype, device)``: the tensors, those that need gradients
marked). ``compare`` runs both on copies of the inputs, forward and
backward (one random output gradient), and checks every output and
gradient against torch's computed in float32 from the same values.
"""

from dataclasses import dataclass

import torch
import torch.nn.functional as F

import dnnc.torch as dt


@dataclass
class Case:
    name: str
    ours: object       # (*inputs) -> tensor
    theirs: object     # (*inputs) -> tensor
    make: object       # (dtype, device) -> [tensor]

    def __repr__(self):
        return self.name


def _t(*shape, dtype, device, grad=True, channels_last=False, scale=1.0, positive=False):
    t = torch.randn(*shape, dtype=torch.float32) * scale
    if positive:
        t = t.abs() + 0.5
    t = t.to(device=device, dtype=dtype)
    if channels_last:
        t = t.to(memory_format=torch.channels_last if len(shape) == 4 else
                 torch.channels_last_3d)
    return t.requires_grad_(grad)


def _bool_mask(sq, skv, device):
    mask = torch.rand(sq, skv) > 0.4
    mask[:, 0] = True  # no row fully masked: torch and dnnc would disagree on NaN there
    return mask.to(device)


def _case(name, ours, theirs, shapes):
    """A case whose inputs are ``shapes``: a shape tuple, or (shape, options)."""
    def make(dtype, device):
        out = []
        for s in shapes:
            if callable(s):
                out.append(s(dtype, device))
            elif isinstance(s, tuple) and s and isinstance(s[-1], dict):
                out.append(_t(*s[:-1], dtype=dtype, device=device, **s[-1]))
            else:
                out.append(_t(*s, dtype=dtype, device=device))
        return out

    return Case(name, ours, theirs, make)


CL = {"channels_last": True}
NOGRAD = {"grad": False}

CASES = [
    _case("conv2d", lambda x, w, b: dt.conv2d(x, w, b, stride=2, padding=1),
          lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1),
          [(2, 4, 9, 9), (6, 4, 3, 3, {"scale": 0.3}), (6,)]),
    _case("conv2d_channels_last_groups_dilation",
          lambda x, w: dt.conv2d(x, w, None, padding=(1, 2), dilation=(1, 2), groups=2),
          lambda x, w: F.conv2d(x, w, None, padding=(1, 2), dilation=(1, 2), groups=2),
          [(2, 4, 8, 7, CL), (6, 2, 3, 3, {"scale": 0.3})]),
    _case("conv2d_same_even_kernel", lambda x, w: dt.conv2d(x, w, padding="same"),
          lambda x, w: F.conv2d(x, w, padding="same"),
          [(1, 3, 6, 6), (4, 3, 4, 2, {"scale": 0.3})]),
    _case("conv3d", lambda x, w, b: dt.conv3d(x, w, b, stride=(1, 2, 2), padding=1),
          lambda x, w, b: F.conv3d(x, w, b, stride=(1, 2, 2), padding=1),
          [(1, 2, 4, 5, 5), (3, 2, 3, 3, 3, {"scale": 0.3}), (3,)]),
    _case("linear", dt.linear, F.linear, [(2, 3, 8), (5, 8, {"scale": 0.3}), (5,)]),
    _case("linear_no_bias", dt.linear, F.linear, [(4, 8), (5, 8, {"scale": 0.3})]),
    _case("matmul_broadcast", dt.matmul, torch.matmul, [(2, 1, 4, 6), (3, 6, 5)]),
    _case("matmul_vector", dt.matmul, torch.matmul, [(4, 6), (6,)]),
    _case("sdpa", dt.scaled_dot_product_attention, F.scaled_dot_product_attention,
          [(2, 4, 8, 16), (2, 4, 8, 16), (2, 4, 8, 16)]),
    _case("sdpa_causal_gqa",
          lambda q, k, v: dt.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                          enable_gqa=True),
          lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                         enable_gqa=True),
          [(1, 4, 6, 16), (1, 2, 9, 16), (1, 2, 9, 16)]),
    _case("sdpa_bool_mask_scale",
          lambda q, k, v, m: dt.scaled_dot_product_attention(q, k, v, attn_mask=m, scale=0.2),
          lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m, scale=0.2),
          [(2, 2, 6, 8), (2, 2, 9, 8), (2, 2, 9, 8),
           lambda dtype, device: _bool_mask(6, 9, device)]),
    _case("sdpa_float_bias",
          lambda q, k, v, m: dt.scaled_dot_product_attention(q, k, v, attn_mask=m),
          lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
          [(2, 2, 6, 8), (2, 2, 9, 8), (2, 2, 9, 8), (1, 2, 6, 9, NOGRAD)]),
    _case("layer_norm", lambda x, w, b: dt.layer_norm(x, (8,), w, b),
          lambda x, w, b: F.layer_norm(x, (8,), w, b), [(3, 5, 8), (8,), (8,)]),
    _case("layer_norm_2d_no_affine", lambda x: dt.layer_norm(x, (5, 8)),
          lambda x: F.layer_norm(x, (5, 8)), [(3, 5, 8)]),
    _case("rms_norm", lambda x, w: dt.rms_norm(x, (8,), w),
          lambda x, w: F.rms_norm(x, (8,), w), [(3, 5, 8), (8,)]),
    _case("batch_norm_train",
          lambda x, w, b: dt.batch_norm(x, None, None, w, b, training=True),
          lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
          [(4, 3, 5, 5, CL), (3,), (3,)]),
    _case("batch_norm_eval",
          lambda x, w, b, m, v: dt.batch_norm(x, m, v, w, b, training=False),
          lambda x, w, b, m, v: F.batch_norm(x, m, v, w, b, training=False),
          [(4, 3, 5, 5), (3,), (3,), (3, NOGRAD), (3, {"grad": False, "positive": True})]),
    _case("group_norm", lambda x, w, b: dt.group_norm(x, 3, w, b),
          lambda x, w, b: F.group_norm(x, 3, w, b), [(2, 6, 4, 4), (6,), (6,)]),
    _case("softmax", lambda x: dt.softmax(x, 1), lambda x: F.softmax(x, 1), [(3, 7, 5)]),
    _case("log_softmax", lambda x: dt.log_softmax(x, -1), lambda x: F.log_softmax(x, -1),
          [(3, 5, 7)]),
    _case("max_pool2d", lambda x: dt.max_pool2d(x, 3, 2, 1), lambda x: F.max_pool2d(x, 3, 2, 1),
          [(2, 3, 7, 7, CL)]),
    _case("avg_pool2d", lambda x: dt.avg_pool2d(x, 2, padding=1),
          lambda x: F.avg_pool2d(x, 2, padding=1), [(2, 3, 7, 6)]),
    _case("avg_pool2d_exclude_pad", lambda x: dt.avg_pool2d(x, 3, 2, 1, count_include_pad=False),
          lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False), [(2, 3, 7, 6)]),
    _case("max_pool3d", lambda x: dt.max_pool3d(x, 2), lambda x: F.max_pool3d(x, 2),
          [(1, 2, 4, 4, 6)]),
    _case("avg_pool3d", lambda x: dt.avg_pool3d(x, (2, 2, 3), 1),
          lambda x: F.avg_pool3d(x, (2, 2, 3), 1), [(1, 2, 4, 4, 6)]),
    _case("relu", dt.relu, F.relu, [(3, 4, 5, 5, CL)]),
    _case("gelu", dt.gelu, F.gelu, [(4, 9)]),
    _case("gelu_tanh", lambda x: dt.gelu(x, approximate="tanh"),
          lambda x: F.gelu(x, approximate="tanh"), [(4, 9)]),
    _case("silu", dt.silu, F.silu, [(4, 9)]),
    _case("sigmoid", dt.sigmoid, torch.sigmoid, [(4, 9)]),
    _case("tanh", dt.tanh, torch.tanh, [(4, 9)]),
    _case("leaky_relu", lambda x: dt.leaky_relu(x, 0.2), lambda x: F.leaky_relu(x, 0.2),
          [(4, 9)]),
    _case("elu", lambda x: dt.elu(x, 0.7), lambda x: F.elu(x, 0.7), [(4, 9)]),
    _case("softplus", lambda x: dt.softplus(x, 2.0, 1.5), lambda x: F.softplus(x, 2.0, 1.5),
          [(4, 9)]),
]

# Largest error allowed, relative to the reference's largest magnitude (at
# least 1): what the dtype's rounding of inputs, outputs and sums explains.
TOLERANCE = {torch.float32: 1e-4, torch.float16: 1e-2, torch.bfloat16: 4e-2}


def _err(got, want):
    scale = max(1.0, float(want.abs().max())) if want.numel() else 1.0
    return float((got.detach().float() - want).abs().max()) / scale if want.numel() else 0.0


def compare(case, dtype, device, tolerance=None, seed=0):
    """Run ``case`` on dnnc.torch (``dtype``, ``device``) and on torch (float32,
    same device, same values); assert outputs and gradients agree. Returns
    {what: relative error}."""
    tol = tolerance if tolerance is not None else TOLERANCE[dtype]
    torch.manual_seed(seed)
    inputs = case.make(dtype, device)
    ref_inputs = [t.detach().float().requires_grad_(t.requires_grad)
                  if t.is_floating_point() else t for t in inputs]
    ours = case.ours(*inputs)
    theirs = case.theirs(*ref_inputs)
    assert ours.shape == theirs.shape, f"{case.name}: shape {ours.shape} vs {theirs.shape}"
    assert ours.dtype == dtype, f"{case.name}: dtype {ours.dtype}, expected {dtype}"
    errors = {"forward": _err(ours, theirs.detach())}
    wanted = [i for i, t in enumerate(inputs) if t.requires_grad]
    if wanted:
        dy = torch.randn(theirs.shape, device=device)
        got = torch.autograd.grad(ours, [inputs[i] for i in wanted], dy.to(dtype))
        want = torch.autograd.grad(theirs, [ref_inputs[i] for i in wanted], dy)
        for i, g, w in zip(wanted, got, want):
            assert g.shape == w.shape, f"{case.name}: grad {i} shape {g.shape} vs {w.shape}"
            errors[f"grad{i}"] = _err(g, w)
    bad = {k: v for k, v in errors.items() if not v <= tol}  # NaN fails too
    assert not bad, f"{case.name} ({dtype}, {device}): relative errors {bad} above {tol}"
    return errors

