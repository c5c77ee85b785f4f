"""``dnnc::sdpa`` and ``dnnc::sdpa_backward``: scaled dot-product attention
on (B, H, S, D) tensors, with a causal mask (top-left aligned, as PyTorch's
``is_causal``), an additive float bias broadcast to (B, H, Sq, Skv), any
scale, and grouped heads (k and v with H_kv dividing H, as ``enable_gqa``).
The forward also returns the softmax statistics (B, H, Sq, 1, f32) that the
backward (dnnc's ``sdpa_backward``) reads; dK and dV of grouped heads are
summed over the query heads sharing a kv head. The bias gets no gradient.

q, k, v may be strided views (a (B, S, H, D) tensor transposed to
(B, H, S, D), as attention layers make) as long as the head dim is
unit-stride; otherwise they are copied.
"""

from typing import List, Optional, Tuple

import torch
from torch import Tensor

from dnnc.torch._library import call, check, dense, empty, output, qualified, stats


def _unit(t):
    return t if t is None or t.stride(-1) == 1 else t.contiguous()


def _check(q, k, v, bias):
    for name, t in (("q", q), ("k", k), ("v", v)):
        check(t.dim() == 4, "sdpa", f"input '{name}': expected rank 4 (B, H, S, D), got "
              f"rank {t.dim()}")
    check(q.shape[1] % k.shape[1] == 0, "sdpa", f"input 'k' dim 1: expected a divisor of "
          f"{q.shape[1]} (heads of 'q'), got {k.shape[1]}")
    check(list(v.shape[:3]) == list(k.shape[:3]), "sdpa", f"input 'v': expected dims 0-2 "
          f"{list(k.shape[:3])} (of 'k'), got {list(v.shape[:3])}")
    if bias is not None:
        check(bias.dim() == 4, "sdpa", f"input 'bias': expected rank 4, got rank {bias.dim()}")


@torch.library.custom_op(qualified("sdpa"), mutates_args=())
def sdpa(q: Tensor, k: Tensor, v: Tensor, bias: Optional[Tensor], causal: bool,
         scale: float) -> Tuple[Tensor, Tensor]:
    """(O, softmax statistics)."""
    _check(q, k, v, bias)
    q, k, v, bias = _unit(q), _unit(k), _unit(v), dense(bias)

    def build(g, i):
        o, st = g.sdpa(i["q"], i["k"], i["v"], attn_scale=scale, bias=i.get("bias"),
                       use_causal_mask=causal, generate_stats=True)
        return [output(o, q.dtype), stats(st)]

    out = call("sdpa", (causal, float(scale)),
               [("q", q), ("k", k), ("v", v), ("bias", bias)], build, [q.dtype, torch.float32])
    return out[0], out[1]


@sdpa.register_fake
def _(q, k, v, bias, causal, scale):
    _check(q, k, v, bias)
    b, h, s, _ = q.shape
    return (empty([b, h, s, v.shape[3]], q.dtype, q.device),
            empty([b, h, s, 1], torch.float32, q.device))


@torch.library.custom_op(qualified("sdpa_backward"), mutates_args=())
def sdpa_backward(do: Tensor, q: Tensor, k: Tensor, v: Tensor, o: Tensor, stats: Tensor,
                  bias: Optional[Tensor], causal: bool, scale: float) -> List[Tensor]:
    """[dQ, dK, dV]."""
    q, k, v, o, bias = _unit(q), _unit(k), _unit(v), _unit(o), dense(bias)
    do, stats = _unit(do), stats.contiguous()

    def build(g, i):
        dq, dk, dv = g.sdpa_backward(i["q"], i["k"], i["v"], i["o"], i["do"], i["stats"],
                                     attn_scale=scale, bias=i.get("bias"),
                                     use_causal_mask=causal)
        return [output(dq, q.dtype), output(dk, k.dtype), output(dv, v.dtype)]

    return call("sdpa_backward", (causal, float(scale)),
                [("q", q), ("k", k), ("v", v), ("o", o), ("do", do), ("stats", stats),
                 ("bias", bias)], build, [q.dtype, k.dtype, v.dtype])


@sdpa_backward.register_fake
def _(do, q, k, v, o, stats, bias, causal, scale):
    return [empty(t.shape, t.dtype, t.device) for t in (q, k, v)]


def _setup(ctx, inputs, output):
    q, k, v, bias, causal, scale = inputs
    o, st = output
    ctx.save_for_backward(q, k, v, o, st, bias)
    ctx.attrs = (causal, scale)
    ctx.mark_non_differentiable(st)


def _backward(ctx, do, dstats):
    q, k, v, o, st, bias = ctx.saved_tensors
    if not any(ctx.needs_input_grad[:3]):
        return None, None, None, None, None, None
    dq, dk, dv = sdpa_backward(do, q, k, v, o, st, bias, *ctx.attrs)
    pick = ctx.needs_input_grad
    return (dq if pick[0] else None, dk if pick[1] else None, dv if pick[2] else None,
            None, None, None)


sdpa.register_autograd(_backward, setup_context=_setup)
