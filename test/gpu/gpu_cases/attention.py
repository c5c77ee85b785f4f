"""Attention cases: sdpa forward (with its statistics) and backward, grouped
heads, with and without a causal mask and a bias, in f32 and bf16.

``sdpa_qkv_*``: attention written the PyTorch way, q, k and v split from one
``[B x S, 3 x H x D]`` projection, each viewed ``[B, S, H, D]`` and
transposed to ``[B, H, S, D]``, o transposed back and viewed ``[B x S, H x
D]`` (so are the backward's do, dq, dk and dv). On sm_90a the slices and
transposes are views (dnn-slice-views, dnn-transpose-views): the attention
kernels read q, k and v inside the projection and write o (and dq, dk, dv)
through the transposed strides (``_joined``: dq, dk and dv into their concat,
dnn-concat-views); ``_unaligned`` slices start 8 bytes in,
where TMA cannot, and keep their copies; ``_sm80_`` the forward on tc-sm80's
kernel (the same views: cp.async loads, vector stores).
"""

import dnnc

from .case import BF16, F32, Case, outputs


def attention(dtype, causal, bias):
    def build():
        g = dnnc.Graph(io_data_type=dtype)
        q = g.tensor(name="q", dim=[2, 4, 7, 16])
        k = g.tensor(name="k", dim=[2, 2, 13, 16])
        v = g.tensor(name="v", dim=[2, 2, 13, 8])
        b = g.tensor(name="bias", dim=[1, 4, 7, 13]) if bias else None
        o, stats = g.sdpa(q, k, v, bias=b, use_causal_mask=causal, generate_stats=True)
        do = g.tensor(name="do", dim=[2, 4, 7, 8])
        o_in = g.tensor(name="o_in", dim=[2, 4, 7, 8], data_type=F32)
        stats_in = g.tensor(name="stats_in", dim=[2, 4, 7, 1], data_type=F32)
        outputs(o, stats, *g.sdpa_backward(q, k, v, o_in, do, stats_in, bias=b,
                                           use_causal_mask=causal))
        return g
    return build


def qkv_attention(dtype, b, s, h, d, causal=False, backward=False, start=0, joined=False):
    """One sdpa (and with ``backward`` its backward) on q, k and v sliced
    from an input ``qkv`` of ``[b * s, 3 * h * d + 2 * start]`` at columns
    ``start``, ``start + h * d`` and ``start + 2 * h * d``; the outputs laid
    out ``[b * s, h * d]``: o (and dq, dk, dv of an input ``do`` laid out
    so; with ``joined`` one output ``dqkv`` of ``[b * s, 3 * h * d]``, their
    concat, the qkv projection's gradient as PyTorch's backward makes it).
    Intermediates in the io type, as PyTorch keeps them."""
    c = h * d

    def rows(g, x):
        """[B, H, S, D] of ``x`` laid out [B x S, H x D]."""
        return g.transpose(g.reshape(x, [b, s, h, d]), [0, 2, 1, 3])

    def flat(g, x):
        return g.reshape(g.transpose(x, [0, 2, 1, 3]), [b * s, c])

    def build():
        g = dnnc.Graph(io_data_type=dtype, intermediate_data_type=dtype,
                       compute_data_type=F32)
        qkv = g.tensor(name="qkv", dim=[b * s, 3 * c + 2 * start])
        q, k, v = (rows(g, g.slice(qkv, [slice(None), slice(start + i * c,
                                                            start + (i + 1) * c)]))
                   for i in range(3))
        o, stats = g.sdpa(q, k, v, use_causal_mask=causal, generate_stats=backward)
        flat(g, o).set_name("o").set_output(True)
        if backward:
            do = g.tensor(name="do", dim=[b * s, c])
            grads = g.sdpa_backward(q, k, v, o, rows(g, do), stats, use_causal_mask=causal)
            if joined:
                joined_ = g.concat([g.reshape(g.transpose(x, [0, 2, 1, 3]), [b, s, c])
                                    for x in grads], axis=2)
                g.reshape(joined_, [b * s, 3 * c]).set_name("dqkv").set_output(True)
            else:
                for name, grad in zip(("dq", "dk", "dv"), grads):
                    flat(g, grad).set_name(name).set_output(True)
        return g
    return build


def backward_on_strided_inputs(dtype, b, s, h, d, causal=False):
    """The backward alone, as the torch backend's backward graph gets it: q,
    k and v inputs [B, H, S, D] whose strides are those of slices of one
    [B x S, 3 x H x D] projection (rows 3 C apart: not dense), o laid out
    [B, S, H, D]; the tc-sm90 kernel reads them where they lie
    (dnn-io-strides), no load copies."""
    c = h * d
    sliced = [s * 3 * c, d, 3 * c, 1]

    def build():
        g = dnnc.Graph(io_data_type=dtype, intermediate_data_type=dtype,
                       compute_data_type=F32)
        q, k, v = (g.tensor(name=n, dim=[b, h, s, d], stride=sliced) for n in "qkv")
        o = g.tensor(name="o", dim=[b, h, s, d], stride=[s * c, d, c, 1])
        do = g.tensor(name="do", dim=[b, h, s, d])
        stats = g.tensor(name="stats", dim=[b, h, s, 1], data_type=F32)
        outputs(*g.sdpa_backward(q, k, v, o, do, stats, use_causal_mask=causal))
        return g
    return build


# q, k, v from one projection: D 64 and 128, causal or not, an odd S, the
# backward; slices at an unaligned start (copies kept).
QKV = {
    "sdpa_qkv_d64_causal_bf16": qkv_attention(BF16, 2, 257, 4, 64, causal=True),
    "sdpa_qkv_d128_bf16": qkv_attention(BF16, 2, 130, 2, 128),
    "sdpa_qkv_backward_d64_causal_bf16": qkv_attention(BF16, 2, 257, 4, 64, causal=True,
                                                        backward=True),
    "sdpa_qkv_backward_d128_bf16": qkv_attention(BF16, 1, 129, 2, 128, backward=True),
    "sdpa_qkv_unaligned_bf16": qkv_attention(BF16, 1, 130, 2, 64, causal=True, start=4),
    # dq, dk and dv joined by a concat into dqkv: written in place
    # (dnn-concat-views), no concat kernel.
    "sdpa_qkv_backward_joined_d64_causal_bf16": qkv_attention(
        BF16, 2, 257, 4, 64, causal=True, backward=True, joined=True),
    "sdpa_qkv_backward_joined_d128_bf16": qkv_attention(BF16, 1, 129, 2, 128, backward=True,
                                                         joined=True),
    # q, k and v inputs at the strides of slices of one projection.
    "sdpa_backward_strided_qkv_d64_causal_bf16": backward_on_strided_inputs(
        BF16, 2, 257, 4, 64, causal=True),
}

CASES = [
    Case("sdpa_f32", attention(F32, causal=False, bias=False)),
    Case("sdpa_causal_bias_f32", attention(F32, causal=True, bias=True)),
    Case("sdpa_causal_bf16", attention(BF16, causal=True, bias=False)),
] + [Case(name, build) for name, build in QKV.items()] + [
    # tc-sm80's forward on the same views (forced on whatever GPU runs it,
    # with the tiles its heuristics give these head dims on sm_80).
    Case("sdpa_qkv_sm80_d64_causal_bf16", QKV["sdpa_qkv_d64_causal_bf16"],
         config="main_k6_sdpa=strategy:tc-sm80,tile:128x64,stages:2,block:128"),
    Case("sdpa_qkv_sm80_d128_bf16", QKV["sdpa_qkv_d128_bf16"],
         config="main_k6_sdpa=strategy:tc-sm80,tile:128x32,stages:2,block:128"),
    # And the backward's kernels: q, k, v read in the projection, dq, dk,
    # dv written through the transposed strides by vector stores.
    Case("sdpa_qkv_sm80_backward_d64_causal_bf16", QKV["sdpa_qkv_backward_d64_causal_bf16"],
         config="main_k6_sdpa=strategy:tc-sm80;main_k10_sdpa_backward=strategy:tc-sm80"),
]
