"""ATen's fused attention ops onto ``dnnc.Graph``'s ``sdpa`` and ``sdpa_backward``:
the functions aten_map.TABLE holds for them (aten_map.py says how they are
called). ATen has one per kernel (flash, efficient, cuDNN, and the CPU's
flash), which differ in where their arguments are and in what they save
beside the output and logsumexp (the random state of dropout, sequence
lengths); the tables below say where each one's are.
"""

import torch

from dnnc.errors import UnsupportedError
from dnnc.torch.lowering import Filler, arg, example, used

aten = torch.ops.aten


# -- attention ---------------------------------------------------------------------------
# ATen's fused attention ops differ in their arguments and in what they save:
# each entry below says where its (dropout_p, is_causal, mask, scale) are and
# how its logsumexp is shaped. dnnc's statistics are (B, H, Sq, 1) f32, the
# same numbers.

# overload name -> (index of dropout_p, of is_causal, of the mask (None: no
# mask argument), its keyword name)
_SDPA = {
    "_scaled_dot_product_flash_attention_for_cpu": (3, 4, None, "attn_mask"),
    "_scaled_dot_product_flash_attention": (3, 4, None, None),
    "_scaled_dot_product_efficient_attention": (5, 6, 3, "attn_bias"),
    "_scaled_dot_product_cudnn_attention": (5, 6, 3, "attn_bias"),
}
_SDPA_BACKWARD = {
    # name -> (dropout_p, is_causal, mask index, mask keyword, out index, lse index)
    "_scaled_dot_product_flash_attention_for_cpu_backward": (6, 7, None, "attn_mask", 4, 5),
    "_scaled_dot_product_flash_attention_backward": (10, 11, None, None, 4, 5),
    "_scaled_dot_product_efficient_attention_backward": (9, 11, 4, "attn_bias", 5, 6),
    "_scaled_dot_product_cudnn_attention_backward": (13, 14, 8, "attn_bias", 4, 5),
}


def _attention_args(low, node, dropout_at, causal_at, mask_at, mask_key):
    dropout = arg(node, dropout_at, "dropout_p", 0.0)
    if dropout:
        raise UnsupportedError(f"{node.target}: dropout_p: expected 0 (dnnc's attention has no "
                               f"dropout), got {dropout}")
    mask = node.kwargs.get(mask_key) if mask_key else None
    if mask is None and mask_at is not None and mask_at < len(node.args):
        mask = node.args[mask_at]
    bias = None
    if mask is not None:
        if example(mask).dtype == torch.bool:
            raise UnsupportedError(f"{node.target}: a boolean attention mask: expected an "
                                   "additive float mask (dnnc's bias)")
        bias = low.value(mask)
    scale = node.kwargs.get("scale")
    return bias, bool(arg(node, causal_at, "is_causal", False)), scale


def _sdpa(low, node):
    name = node.target._schema.name.split("::")[-1]
    q, k, v = (low.value(a) for a in node.args[:3])
    bias, causal, scale = _attention_args(low, node, *_SDPA[name])
    read = used(node)
    o, stats = low.graph.sdpa(q, k, v, attn_scale=scale, bias=bias, use_causal_mask=causal,
                              generate_stats=1 in read)
    results = [o, None]
    if 1 in read:
        results[1] = _logsumexp(low, node, stats)
    for i, val in enumerate(example(node)[2:], start=2):
        # The random state of dropout (off) and sequence bookkeeping: tensors
        # made as zeros, numbers (the maximal lengths) and Nones as they are.
        if not isinstance(val, torch.Tensor):
            results.append(val)
        else:
            results.append(Filler() if i in read else None)
    return tuple(results)


def _logsumexp(low, node, stats):
    """dnnc's statistics (B, H, Sq, 1) in the form of ``node``'s logsumexp:
    (B, H, Sq) or (B, H, Sq, 1); the efficient kernel's rows padded to a
    multiple of 32 are zeros past Sq (no backward reads them)."""
    lse = [int(d) for d in example(node)[1].shape]
    b, h, sq, _ = stats.dim
    if lse[:2] != [b, h] or len(lse) not in (3, 4) or lse[2] < sq or lse[3:] not in ([], [1]):
        raise UnsupportedError(f"{node.target}: logsumexp of dims {lse}: expected "
                               f"[{b}, {h}, {sq}] (one per query row) or padded rows")
    rows = low.graph.reshape(stats, [b, h, sq])
    if lse[2] > sq:
        rows = low.graph.concat([rows, low.zeros([b, h, lse[2] - sq])], axis=2)
    return low.graph.reshape(rows, lse) if len(lse) == 4 else rows


def _sdpa_backward(low, node):
    name = node.target._schema.name.split("::")[-1]
    dropout_at, causal_at, mask_at, mask_key, out_at, lse_at = _SDPA_BACKWARD[name]
    do, q, k, v = (low.value(a) for a in node.args[:4])
    bias, causal, scale = _attention_args(low, node, dropout_at, causal_at, mask_at, mask_key)
    o = low.value(node.args[out_at])
    lse = low.value(node.args[lse_at])
    b, h, sq = q.dim[0], q.dim[1], q.dim[2]
    if list(lse.dim[:3]) != [b, h, sq] and len(lse.dim) == 3 and lse.dim[2] >= sq:
        lse = low.graph.slice(lse, [slice(None), slice(None), slice(0, sq)])  # padded rows
    stats = low.graph.reshape(lse, [b, h, sq, 1])
    dq, dk, dv = low.graph.sdpa_backward(q, k, v, o, do, stats, attn_scale=scale, bias=bias,
                                         use_causal_mask=causal)
    results = [dq, dk, dv]
    if len(example(node)) > 3:
        if 3 in used(node):
            raise UnsupportedError(f"{node.target}: the mask's gradient is read: dnnc's "
                                   "attention backward makes none")
        results.append(None)
    return tuple(results)


def _table():
    t = {}
    # attention
    for name in _SDPA:
        t[getattr(aten, name).default] = _sdpa
    for name in _SDPA_BACKWARD:
        t[getattr(aten, name).default] = _sdpa_backward
    return t


TABLE = _table()
