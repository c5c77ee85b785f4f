"""Attention cases: sdpa forward (with its statistics) and backward, grouped
heads, with and without a causal mask and a bias, in f32 and bf16.
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


CASES = [
    Case("sdpa_f32", attention(F32, causal=False, bias=False)),
    Case("sdpa_causal_bias_f32", attention(F32, causal=True, bias=True)),
    Case("sdpa_causal_bf16", attention(BF16, causal=True, bias=False)),
]
