"""Random attention on ragged (packed, "THD") tensors, cuDNN's ragged
offsets with padding masks: 64 sdpa forwards and 64 sdpa backwards drawn
from a fixed seed, four of each to a graph, half of the graphs bf16 and half
f16.

Each configuration draws B 1-8, query heads over kv heads 1, 2 or 8, the
padded lengths Sq and Skv from ``SIZES`` (some from ``LONG_SIZES``, several
tiles), D = Dv from ``HEAD_DIMS`` (up to 128, what the backward kernels
take), one of ``MASKS`` and each batch entry's lengths (int32, fixed
inputs): mostly uniform in [1, S], some 0 and some S. Its tensors are
buffers of B x S packed rows of (H, D), the logical (B, H, S, D) with
strides (S H D, D, H D, 1): q, o, dO and dQ hold the entries' query rows,
k, v, dK and dV their kv rows, each entry from the packed row its offset
names (offset = row x H x D, in elements). The entries lie in a random
order, a gap of a row or more between some, so that a kernel writing past
an entry's length (a TMA box of its last tile) writes into a gap or the
next entry's rows.

The rows of an output no entry owns are left as they were (NaN: the
outputs come poisoned) and expected so (``Case.unspecified``). The rows of
an input no entry owns hold drawn values (finite, as ragged inputs must
be where a tile may read them). The backward reads its own q, k, v (not the
forward's: a tensor read by two kernels is copied to another layout, and
a copy is not a buffer of packed rows), o and the statistics the
reference's forward of them (``derive_forward``), dO drawn.

Each configuration's data is at most ``BUDGET`` bytes (B, then the kv
heads, then the group cut down until it fits). Tolerances are
case.comparison's default (the output type's rtol times the largest
output), as in attention_padding.
"""

import math
from dataclasses import dataclass

import numpy as np

import dnnc

from .case import BF16, F16, F32, RTOL, Case, graph_of, outputs

SEED = 20261127
GRAPHS = 16
PER_GRAPH = 4
SIZES = (1, 7, 64, 77, 128)
LONG_SIZES = (300, 700)
LONG = 0.2
HEAD_DIMS = (64, 80, 96, 128)
GROUPS = (1, 2, 8)
MASKS = ("none", "causal", "bottom_right")
BUDGET = 640 * 1024
INT32 = dnnc.data_type.INT32
# Which lengths count a tensor's rows.
QUERY_ROWS = ("q", "o", "do", "dq")


@dataclass(frozen=True)
class RaggedConfig:
    """q ``[batch, heads, sq, d]``, k and v ``[batch, kv_heads, skv, d]``,
    all packed; ``lengths_q``, ``lengths_kv`` one a batch entry; ``starts_q``,
    ``starts_kv`` the packed row where each entry starts."""

    batch: int
    heads: int
    kv_heads: int
    sq: int
    skv: int
    d: int
    mask: str
    lengths_q: tuple
    lengths_kv: tuple
    starts_q: tuple
    starts_kv: tuple

    def heads_of(self, x):
        return self.heads if x in QUERY_ROWS else self.kv_heads

    def seq_of(self, x):
        return self.sq if x in QUERY_ROWS else self.skv

    def dims(self, x):
        if x == "stats":
            return [self.batch, self.heads, self.sq, 1]
        return [self.batch, self.heads_of(x), self.seq_of(x), self.d]

    def strides(self, x):
        h, s, d = self.heads_of(x), self.seq_of(x), self.d
        return [s * h * d, d, h * d, 1]

    def offsets(self, x):
        """cuDNN's ragged offsets of tensor ``x``: each entry's first
        element, then the end of the last."""
        starts, lengths = self.rows_of(x)
        end = max(s + n for s, n in zip(starts, lengths))
        return [s * self.heads_of(x) * self.d for s in list(starts) + [end]]

    def rows_of(self, x):
        if x in QUERY_ROWS:
            return self.starts_q, self.lengths_q
        return self.starts_kv, self.lengths_kv

    def owned(self, x):
        """A bool mask of ``x``'s logical dims: the elements some entry
        owns."""
        b, h, s, d = self.dims(x)
        rows = np.zeros(b * s, bool)
        for start, n in zip(*self.rows_of(x)):
            rows[start:start + n] = True
        return np.broadcast_to(rows.reshape(b, 1, s, 1), (b, h, s, d))

    def stored_bytes(self):
        q = math.prod(self.dims("q"))
        kv = math.prod(self.dims("k"))
        # q, o_in, do (inputs) and o, dq (outputs as float64-ish), k, v
        # twice (the forward's and the backward's), dk, dv.
        return 2 * (4 * q + 4 * kv) + 3 * (2 * q + 2 * kv)

    def masks(self):
        return dict(use_causal_mask=self.mask == "causal",
                    use_causal_mask_bottom_right=self.mask == "bottom_right",
                    use_padding_mask=True)


def _lengths(rng, batch, size):
    out = []
    for _ in range(batch):
        u = rng.random()
        if u < 0.12:
            out.append(0)
        elif u < 0.3:
            out.append(size)
        else:
            out.append(int(rng.integers(1, size + 1)))
    return tuple(out)


def _starts(rng, lengths, size):
    """Each entry's first packed row: a random order, gaps of 1-3 rows
    after some entries while the buffer's B x S rows have room."""
    room = len(lengths) * size - sum(lengths)
    starts, at = [0] * len(lengths), 0
    for n in rng.permutation(len(lengths)):
        starts[n] = at
        gap = min(room, int(rng.integers(1, 4))) if rng.random() < 0.6 else 0
        room -= gap
        at += lengths[n] + gap
    return tuple(starts)


def _draw_one(rng):
    while True:
        long = rng.random() < LONG
        sq, skv = (int(rng.choice(LONG_SIZES if long and rng.random() < 0.6 else SIZES))
                   for _ in range(2))
        d = int(rng.choice(HEAD_DIMS))
        group = int(rng.choice(GROUPS))
        kv_heads, batch = int(rng.integers(1, 3)), int(rng.integers(1, 9))
        mask = MASKS[int(rng.integers(len(MASKS)))]
        while True:
            lq, lkv = _lengths(rng, batch, sq), _lengths(rng, batch, skv)
            att = RaggedConfig(batch, kv_heads * group, kv_heads, sq, skv, d, mask, lq, lkv,
                               _starts(rng, lq, sq), _starts(rng, lkv, skv))
            if att.stored_bytes() <= BUDGET:
                return att
            if batch > 1:
                batch -= 1
            elif kv_heads > 1:
                kv_heads -= 1
            elif group > 1:
                group = 1
            else:
                break


def draw(seed=SEED, graphs=GRAPHS, per_graph=PER_GRAPH):
    rng = np.random.default_rng(seed)
    return [[_draw_one(rng) for _ in range(per_graph)] for _ in range(graphs)]


CONFIGS = draw()


def _ragged_inputs(g, i, att, names, suffix=""):
    """Packed graph inputs ``names`` of ``att`` (and their offsets, one
    tensor for the query rows' and one for the kv rows')."""
    off_q = g.tensor(name=f"off_q{suffix}{i}", dim=[att.batch + 1, 1, 1, 1], data_type=INT32)
    off_kv = g.tensor(name=f"off_kv{suffix}{i}", dim=[att.batch + 1, 1, 1, 1],
                      data_type=INT32)
    out = {}
    for x in names:
        off = off_q if x in QUERY_ROWS else off_kv
        out[x] = g.tensor(name=f"{x}{suffix}{i}", dim=att.dims(x), stride=att.strides(x),
                          ragged_offset=off)
    return out, off_q, off_kv


def _lengths_of(g, i, att, suffix=""):
    lq = g.tensor(name=f"lq{suffix}{i}", dim=[att.batch, 1, 1, 1], data_type=INT32)
    lkv = g.tensor(name=f"lkv{suffix}{i}", dim=[att.batch, 1, 1, 1], data_type=INT32)
    return dict(seq_len_q=lq, seq_len_kv=lkv)


def _packed_output(t, att, x, off):
    t.set_stride(att.strides(x)).set_ragged_offset(off)


def add_pair(g, i, att):
    """sdpa (o<i>, stats<i>) of packed q<i>, k<i>, v<i>, and sdpa_backward
    (dq<i>, dk<i>, dv<i>) of packed q_b<i>, k_b<i>, v_b<i>, o_in<i>, do<i>
    and stats_in<i>."""
    t, off_q, off_kv = _ragged_inputs(g, i, att, "qkv")
    o, stats = g.sdpa(t["q"], t["k"], t["v"], generate_stats=True, **att.masks(),
                      **_lengths_of(g, i, att))
    o.set_name(f"o{i}")
    stats.set_name(f"stats{i}")
    outputs(o, stats)
    _packed_output(o, att, "o", off_q)
    b, off_q, off_kv = _ragged_inputs(g, i, att, ("q", "k", "v", "o", "do"), "_b")
    stats_in = g.tensor(name=f"stats_in{i}", dim=att.dims("stats"), data_type=F32)
    grads = g.sdpa_backward(b["q"], b["k"], b["v"], b["o"], b["do"], stats_in, **att.masks(),
                            **_lengths_of(g, i, att, "_b"))
    for name, grad in zip(("dq", "dk", "dv"), grads):
        grad.set_name(f"{name}{i}")
        outputs(grad)
        _packed_output(grad, att, name, off_q if name == "dq" else off_kv)


def ragged_attention(dtype, configs):
    return graph_of(add_pair, dtype, configs)


def derive_forward(dtype, configs):
    """Case.derived: each o_b<i> and stats_in<i> the reference's forward of
    the backward's drawn q, k and v (packed, as the backward reads them)."""
    def derived(values):
        out = {}
        for i, att in enumerate(configs):
            g = dnnc.Graph(io_data_type=dtype)
            t, off_q, _ = _ragged_inputs(g, "", att, "qkv")
            o, stats = g.sdpa(t["q"], t["k"], t["v"], generate_stats=True, **att.masks(),
                              **_lengths_of(g, "", att))
            o.set_name("o").set_output(True)
            _packed_output(o, att, "o", off_q)
            stats.set_name("stats").set_output(True)
            feeds = {x: values[f"{x}_b{i}"] for x in "qkv"}
            feeds.update({name: values[f"{name}_b{i}"]
                          for name in ("off_q", "off_kv", "lq", "lkv")})
            ref = g.execute_reference(feeds)
            out[f"o_b{i}"], out[f"stats_in{i}"] = ref["o"], ref["stats"]
        return out
    return derived


def _fixed(configs):
    out = {}
    for i, att in enumerate(configs):
        for suffix in ("", "_b"):
            out[f"lq{suffix}{i}"], out[f"lkv{suffix}{i}"] = att.lengths_q, att.lengths_kv
            out[f"off_q{suffix}{i}"] = att.offsets("q")
            out[f"off_kv{suffix}{i}"] = att.offsets("k")
    return out


def _unspecified(configs):
    """Case.unspecified: the rows of each packed output no entry owns."""
    def unspecified(values):
        del values
        out = {}
        for i, att in enumerate(configs):
            for x in ("o", "dq", "dk", "dv"):
                out[f"{x}{i}"] = ~att.owned(x)
        return out
    return unspecified


CASES = [
    Case(f"attention_ragged_{j:02d}_{dtype.mlir}", ragged_attention(dtype, configs),
         seed=SEED + j, rtol=RTOL[dtype.mlir], fixed=_fixed(configs),
         derived=derive_forward(dtype, configs), unspecified=_unspecified(configs))
    for j, (configs, dtype) in enumerate(zip(CONFIGS, [BF16, F16] * GRAPHS))
]
