"""Split-KV attention (tc-sm90's forward with the kv tiles of each query
tile split over several blocks and a kernel merging their partial results,
dnnc/codegen/gpu/tensorcore/sm90/flash_combine.py): problems with too few
query tiles to fill the GPU, decoding steps (one query row or a few)
against long kv sequences, with grouped heads, masks, padding masks
(lengths of 0, short and whole), Dv != D and the statistics. Each sdpa is
a graph of its own.
"""

import dnnc

from .case import BF16, F16, Case, outputs

INT32 = dnnc.data_type.INT32


def decode(dtype, b, h, hk, sq, skv, d, dv=None, stats=True, lengths=None, **masks):
    """One sdpa of q [b, h, sq, d] over k, v [b, hk, skv, d / dv];
    ``lengths`` (seq_len_q, seq_len_kv) a padding mask's, else none."""
    dv = dv or d

    def build():
        g = dnnc.Graph(io_data_type=dtype)
        q = g.tensor(name="q", dim=[b, h, sq, d])
        k = g.tensor(name="k", dim=[b, hk, skv, d])
        v = g.tensor(name="v", dim=[b, hk, skv, dv])
        pad = {}
        if lengths:
            pad = dict(use_padding_mask=True,
                       seq_len_q=g.tensor(name="lq", dim=[b, 1, 1, 1], data_type=INT32),
                       seq_len_kv=g.tensor(name="lkv", dim=[b, 1, 1, 1], data_type=INT32))
        o, s = g.sdpa(q, k, v, generate_stats=stats, **masks, **pad)
        outputs(o, s)
        return g
    return build


def _fixed(lengths):
    return {"lq": lengths[0], "lkv": lengths[1]} if lengths else {}


CONFIGS = {
    # One query row, 4 query heads a kv head.
    "attention_decode_gqa_bf16": (BF16, 1, 8, 2, 1, 5000, 128, None, True, None, {}),
    # Three query rows under a bottom-right causal mask with a window.
    "attention_decode_window_f16": (F16, 2, 4, 4, 3, 3000, 64, None, True, None,
                                    dict(use_causal_mask_bottom_right=True,
                                         sliding_window_length=1000)),
    # Padding: a whole, a short and an empty kv sequence.
    "attention_decode_padding_bf16": (BF16, 3, 4, 1, 1, 4100, 96, None, True,
                                      ((1, 1, 1), (4100, 17, 0)),
                                      dict(use_causal_mask_bottom_right=True)),
    # Two query tiles, top-left causal: most splits see no column.
    "attention_decode_causal_bf16": (BF16, 1, 2, 2, 200, 6000, 128, 64, True, None,
                                     dict(use_causal_mask=True)),
    # Without statistics, Dv != D.
    "attention_decode_dv_f16": (F16, 2, 4, 2, 1, 4097, 64, 128, False, None, {}),
}

CASES = [
    Case(name, decode(dtype, b, h, hk, sq, skv, d, dv, stats, lengths, **masks),
         seed=20261130 + i, fixed=_fixed(lengths))
    for i, (name, (dtype, b, h, hk, sq, skv, d, dv, stats, lengths, masks))
    in enumerate(CONFIGS.items())
]
