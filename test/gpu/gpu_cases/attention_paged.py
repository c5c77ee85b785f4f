"""Paged KV caches (cuDNN's paged attention, forward): sdpa forwards whose K
and V are caches of pages ``[P, Hk, page, D]`` read through int32 page
tables ``[B, 1, T, 1]``, with a padding mask.

Each configuration places its sequences' pages at a random permutation of
the cache's pages (K's and V's tables drawn apart), with spare pages no
table names; table entries of pages that start at or past a sequence's
length hold out-of-range numbers (-1, P + t), which must never be read.
The configurations cover the page sizes of tc-sm90's two ways of reading
pages (a page of one kv tile or more: 64, 128, 256; a tile of several
pages: 8, 16, 32), a page size it refuses (48: the decomposition on
simt-generic), grouped heads (MHA, GQA, MQA), decode-sized Sq (1 to 4
rows, split-KV over long caches) and prefill-sized Sq, causal
bottom-right masks and a window, lengths of 0, short, not multiples of
the page, whole and past the end (clamped). Four sdpas to a graph, the
caches and tables inputs of their own; the tables are fixed inputs.

The reference (Graph.execute_reference) gathers the pages; it is checked
against the same values laid out contiguously in
test/python/test_attention_paged.py. Tolerances are case.comparison's
default, as in attention_padding.
"""

import math
from dataclasses import dataclass

import numpy as np

import dnnc

from .case import BF16, F16, RTOL, Case, graph_of, outputs

SEED = 20261127
INT32 = dnnc.data_type.INT32
SPARE = 3  # cache pages no table names


@dataclass(frozen=True)
class PagedConfig:
    """q ``[batch, heads, sq, d]`` over caches of ``page``-row pages,
    ``max_seq_len_kv`` = ``skv``; ``mask`` none, causal (bottom-right) or
    window (``window`` its length); ``lengths_q`` and ``lengths_kv`` one a
    batch entry."""

    batch: int
    heads: int
    kv_heads: int
    sq: int
    skv: int
    d: int
    page: int
    mask: str
    window: int
    lengths_q: tuple
    lengths_kv: tuple

    @property
    def slots(self):
        """Table entries a sequence (T)."""
        return math.ceil(self.skv / self.page)

    @property
    def pages(self):
        return self.batch * self.slots + SPARE

    def masks(self):
        return dict(use_causal_mask_bottom_right=self.mask in ("causal", "window"),
                    sliding_window_length=self.window or None)

    def table(self, rng):
        """A random placement of each sequence's pages among the cache's,
        out-of-range entries where the page starts at or past its length."""
        order = rng.permutation(self.pages)
        table = np.empty((self.batch, 1, self.slots, 1), np.int64)
        for n in range(self.batch):
            for t in range(self.slots):
                stale = t * self.page >= min(self.lengths_kv[n], self.skv)
                table[n, 0, t, 0] = (-1 if t % 2 else self.pages + t) if stale \
                    else order[n * self.slots + t]
        return table


def add_sdpa(g, i, att):
    """sdpa o<i>, stats<i> of ``att`` over caches k<i>, v<i>, tables
    kt<i>, vt<i> and lengths lq<i>, lkv<i>."""
    q = g.tensor(name=f"q{i}", dim=[att.batch, att.heads, att.sq, att.d])
    k, v = (g.tensor(name=f"{x}{i}", dim=[att.pages, att.kv_heads, att.page, att.d])
            for x in "kv")
    kt, vt = (g.tensor(name=f"{x}t{i}", dim=[att.batch, 1, att.slots, 1], data_type=INT32)
              for x in "kv")
    lq, lkv = (g.tensor(name=f"{x}{i}", dim=[att.batch, 1, 1, 1], data_type=INT32)
               for x in ("lq", "lkv"))
    o, stats = g.sdpa(q, k, v, generate_stats=True, use_padding_mask=True, seq_len_q=lq,
                      seq_len_kv=lkv, paged_attention_k_table=kt, paged_attention_v_table=vt,
                      paged_attention_max_seq_len_kv=att.skv, **att.masks())
    o.set_name(f"o{i}")
    stats.set_name(f"stats{i}")
    outputs(o, stats)


def paged_attention(dtype, configs):
    return graph_of(add_sdpa, dtype, configs)


def _fixed(configs, seed):
    rng = np.random.default_rng(seed)
    out = {}
    for i, att in enumerate(configs):
        out[f"kt{i}"], out[f"vt{i}"] = att.table(rng), att.table(rng)
        out[f"lq{i}"], out[f"lkv{i}"] = att.lengths_q, att.lengths_kv
    return out


def _draw_one(rng, page):
    """A prefill-sized configuration with pages of ``page`` rows."""
    batch, kv_heads = int(rng.integers(1, 4)), int(rng.integers(1, 3))
    group = int(rng.choice((1, 2, 4)))
    sq = int(rng.choice((5, 64, 77, 130)))
    skv = int(rng.choice((77, 200, 333, 520)))
    d = int(rng.choice((64, 128)))
    mask = ("none", "causal", "window")[int(rng.integers(3))]
    window = int(rng.integers(8, 100)) if mask == "window" else 0

    def length(limit):
        u = rng.random()
        return 0 if u < 0.1 else limit + 7 if u < 0.2 else int(rng.integers(1, limit + 1))
    return PagedConfig(batch, kv_heads * group, kv_heads, sq, skv, d, page, mask, window,
                       tuple(length(sq) for _ in range(batch)),
                       tuple(length(skv) for _ in range(batch)))


# Decode steps (split-KV over long caches) and the edges, by hand.
DECODE = [
    # One query row, 4 query heads a kv head, pages of 64: 2 pages a tile.
    PagedConfig(2, 8, 2, 1, 2100, 128, 64, "none", 0, (1, 1), (2100, 1333)),
    # MQA, pages of 16 (8 a tile), a length of 0 and one past the end.
    PagedConfig(3, 4, 1, 1, 1500, 64, 16, "causal", 0, (1, 1, 1), (0, 1600, 700)),
    # Four query rows, a window, pages of 256 (two tiles a page).
    PagedConfig(2, 4, 2, 4, 3000, 128, 256, "window", 500, (4, 3), (2999, 257)),
    # Pages of 8 rows.
    PagedConfig(1, 8, 8, 2, 900, 64, 8, "causal", 0, (2,), (899,)),
]
PAGES = (8, 16, 32, 64, 128, 256, 48)  # 48: tc-sm90 refuses it


def draw(seed=SEED):
    rng = np.random.default_rng(seed)
    return [_draw_one(rng, page) for page in PAGES for _ in range(2)] + [
        _draw_one(rng, int(rng.choice(PAGES))) for _ in range(2)]


CONFIGS = draw() + DECODE
GRAPHS = [CONFIGS[j:j + 4] for j in range(0, len(CONFIGS), 4)]

CASES = [
    Case(f"attention_paged_{j:02d}_{dtype.mlir}", paged_attention(dtype, configs),
         seed=SEED + j, rtol=RTOL[dtype.mlir], fixed=_fixed(configs, SEED + j))
    for j, (configs, dtype) in enumerate(zip(GRAPHS, [BF16, F16] * len(GRAPHS)))
]
