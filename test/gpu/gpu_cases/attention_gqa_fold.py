"""GQA decode with the group folded (tc-sm90's attention forward holding a
kv head's G query heads in one block's rows, Config.fold; see
dnnc/codegen/gpu/tensorcore/sm90/flash.py): sdpa forwards of G = 2, 4
and 8 query heads a kv head and Sq = 1, 2 and 4 query rows, D 64 and 128,
q and o stored (B, H, S, D) and (B, S, H, D) (the two row maps of the
folded tile), no mask and bottom-right causal, padding masks with lengths
of 0, short and whole, contiguous and paged K and V (pages of 64 and 16
rows), kv lengths that do and do not split the kv tiles over blocks
(split-KV), bf16 and f16. Each sdpa writes o and the statistics; four
sdpas to a graph, each with inputs of its own.

A folded block reads the group's rows in one box, and rows past G x Sq
in its tile are not loaded: a wrong row map, a store past the group or a
row reading another head's query shows as another head's or query's
values in o.
"""

import math
from dataclasses import dataclass

import numpy as np

import dnnc

from .case import BF16, F16, RTOL, Case, graph_of, outputs

SEED = 20261201
INT32 = dnnc.data_type.INT32


@dataclass(frozen=True)
class FoldConfig:
    """q ``[batch, heads, sq, d]`` over k, v ``[batch, kv_heads, skv, d]``
    (with ``page`` > 0: caches of ``page``-row pages, ``max_seq_len_kv`` =
    ``skv``); ``interleaved``: q and o stored (B, S, H, D); ``causal``:
    bottom-right aligned; ``lengths``: (seq_len_q, seq_len_kv) one a batch
    entry, or None (no padding mask; a paged cache always has one)."""

    batch: int
    heads: int
    kv_heads: int
    sq: int
    skv: int
    d: int
    interleaved: bool = False
    causal: bool = False
    lengths: tuple = None
    page: int = 0

    @property
    def slots(self):
        return math.ceil(self.skv / self.page)

    def table(self, rng):
        """Each sequence's pages at a random permutation of the cache's;
        -1 where a page starts at or past its length (never read)."""
        order = rng.permutation(self.batch * self.slots)
        table = np.empty((self.batch, 1, self.slots, 1), np.int64)
        for n in range(self.batch):
            for t in range(self.slots):
                stale = t * self.page >= min(self.lengths[1][n], self.skv)
                table[n, 0, t, 0] = -1 if stale else order[n * self.slots + t]
        return table


def _bshd(dims):
    """Strides of logical (B, H, S, D) dims stored (B, S, H, D)."""
    b, h, s, d = dims
    return [s * h * d, d, h * d, 1]


def add_sdpa(g, i, att):
    """sdpa o<i>, stats<i> of ``att`` over q<i>, k<i>, v<i> (and lengths
    lq<i>, lkv<i>, tables kt<i>, vt<i>)."""
    q_dims = [att.batch, att.heads, att.sq, att.d]
    q = g.tensor(name=f"q{i}", dim=q_dims, stride=_bshd(q_dims) if att.interleaved else None)
    kv_dims = [att.batch * att.slots, att.kv_heads, att.page, att.d] if att.page \
        else [att.batch, att.kv_heads, att.skv, att.d]
    k, v = (g.tensor(name=f"{x}{i}", dim=kv_dims) for x in "kv")
    extra = {}
    if att.lengths:
        lq, lkv = (g.tensor(name=f"{x}{i}", dim=[att.batch, 1, 1, 1], data_type=INT32)
                   for x in ("lq", "lkv"))
        extra = dict(use_padding_mask=True, seq_len_q=lq, seq_len_kv=lkv)
    if att.page:
        kt, vt = (g.tensor(name=f"{x}t{i}", dim=[att.batch, 1, att.slots, 1],
                           data_type=INT32) for x in "kv")
        extra.update(paged_attention_k_table=kt, paged_attention_v_table=vt,
                     paged_attention_max_seq_len_kv=att.skv)
    o, stats = g.sdpa(q, k, v, generate_stats=True,
                      use_causal_mask_bottom_right=att.causal, **extra)
    o.set_name(f"o{i}")
    stats.set_name(f"stats{i}")
    if att.interleaved:
        o.set_stride(_bshd(q_dims))
    outputs(o, stats)


def fold_graph(dtype, configs):
    return graph_of(add_sdpa, dtype, configs)


def _fixed(configs, seed):
    rng = np.random.default_rng(seed)
    out = {}
    for i, att in enumerate(configs):
        if att.page:
            out[f"kt{i}"], out[f"vt{i}"] = att.table(rng), att.table(rng)
        if att.lengths:
            out[f"lq{i}"], out[f"lkv{i}"] = att.lengths
    return out


# By hand: every G, Sq, D, layout, mask, length kind and K/V kind at least
# once, with split-KV (a few blocks over a long kv sequence) and without
# (short kv sequences, or B x Hkv blocks enough for the SMs). Skv is a
# multiple of nothing.
CONFIGS = [
    # G 2, one row, no mask, split (B2 x Hkv2 blocks over 40 kv tiles).
    FoldConfig(2, 4, 2, 1, 5000, 128),
    # G 4, two rows, (B, S, H, D), bottom-right causal, split.
    FoldConfig(1, 8, 2, 2, 3001, 64, interleaved=True, causal=True),
    # G 8, four rows (32 rows a block), padding: 0, short, whole; split.
    FoldConfig(3, 16, 2, 4, 4100, 128, causal=True,
               lengths=((4, 2, 0), (4100, 17, 0))),
    # G 8, four rows, (B, S, H, D), no split (7 kv tiles).
    FoldConfig(2, 8, 1, 4, 900, 64, interleaved=True),
    # G 4, one row, 72 blocks: no split (enough of them for the SMs).
    FoldConfig(9, 32, 8, 1, 1100, 64),
    # G 2, four rows, padding (short query rows), no split.
    FoldConfig(2, 4, 2, 4, 700, 128, causal=True, lengths=((3, 1), (650, 5))),
    # Paged, pages of 64: G 4, one row, split.
    FoldConfig(2, 8, 2, 1, 4000, 128, lengths=((1, 1), (4000, 1333)), page=64),
    # Paged, pages of 16: G 8, two rows, (B, S, H, D), causal, a length of 0.
    FoldConfig(3, 8, 1, 2, 2100, 64, interleaved=True, causal=True,
               lengths=((2, 2, 1), (0, 2100, 700)), page=16),
    # Paged, G 2, two rows, a whole and a short length, no split.
    FoldConfig(2, 4, 2, 2, 500, 64, causal=True, lengths=((2, 2), (499, 3)), page=64),
    # G 8 with 16 rows: 128 rows, two consumer warpgroups; split.
    FoldConfig(1, 16, 2, 16, 3000, 64, causal=True),
    # G 4, one row, (B, S, H, D), split (16 blocks).
    FoldConfig(4, 16, 4, 1, 4000, 128, interleaved=True),
    # G 2, Sq 3 (not a power of two), padding of whole lengths.
    FoldConfig(2, 4, 2, 3, 2049, 64, lengths=((3, 3), (2049, 2048))),
]
GRAPHS = [CONFIGS[j:j + 4] for j in range(0, len(CONFIGS), 4)]

CASES = [
    Case(f"attention_gqa_fold_{j:02d}_{dtype.mlir}", fold_graph(dtype, configs),
         seed=SEED + j, rtol=RTOL[dtype.mlir], fixed=_fixed(configs, SEED + j))
    for j, configs in enumerate(GRAPHS) for dtype in (BF16, F16)
]
