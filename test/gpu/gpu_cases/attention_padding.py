"""Random attention with padding masks (cuDNN's variable sequence lengths):
96 sdpa forwards and 96 sdpa backwards drawn from a fixed seed, each
forward and backward a pair of one configuration in a graph of eight
pairs, half of the graphs bf16 and half f16.

Each configuration draws B 1-6, query heads over kv heads 1, 2 or 8, Sq
and Skv from ``SIZES`` (``LONG`` of the draws one of them from
``LONG_SIZES``, several kv tiles), D = Dv from ``HEAD_DIMS``
(up to 128, what the backward kernels take; a share with Dv from
``HEAD_DIMS`` too), one of ``MASKS`` (none, causal top-left or bottom-right,
a window ending at the bottom-right diagonal) and each batch entry's
lengths ``seq_len_q`` and ``seq_len_kv`` (int32, fixed inputs): mostly
uniform in [1, S], some 0 (every row padding, or no key seen), some S and
some past S (clamped to S). With a bottom-right diagonal each entry's is
its own (Lkv - Lq), so entries with Lq > Lkv have rows that see nothing:
o = 0 and stats = -inf there, as in the padded rows.

The backward's o and statistics are inputs, the reference's forward of the
same q, k, v and lengths (``derive_forward``); its do is drawn. Padded rows
and columns get zero gradients (checked exactly by the comparison: the
reference's zeros and a tolerance scaled by the largest output).

Each configuration's data is at most ``BUDGET`` bytes (``LONG`` of them
``LONG_BUDGET``; B, then the kv heads, then the group cut down until it
fits); the family's packages take some 14 MiB. Tolerances are
case.comparison's default (the output type's rtol times the largest
output), as in attention_random and attention_backward_random.
"""

import math
from dataclasses import dataclass

import numpy as np

import dnnc

from .case import BF16, F16, F32, RTOL, Case, graph_of, outputs

SEED = 20261129
GRAPHS = 12
PER_GRAPH = 8
SIZES = (1, 7, 64, 77, 128)
SIZE_WEIGHTS = (2, 3, 3, 3, 3)
LONG_SIZES = (300, 700, 1000)
HEAD_DIMS = (64, 80, 96, 128)
GROUPS = (1, 2, 8)
MASKS = ("none", "causal", "bottom_right", "window")
OTHER_DV = 0.15
BUDGET = 192 * 1024
LONG, LONG_BUDGET = 0.15, 1200 * 1024
INT32 = dnnc.data_type.INT32


@dataclass(frozen=True)
class PaddedConfig:
    """q ``[batch, heads, sq, d]``, k ``[batch, kv_heads, skv, d]``, v
    ``[batch, kv_heads, skv, dv]``; ``mask`` one of MASKS (``window`` its
    length); ``lengths_q`` and ``lengths_kv`` one length a batch entry."""

    batch: int
    heads: int
    kv_heads: int
    sq: int
    skv: int
    d: int
    dv: int
    mask: str
    window: int
    lengths_q: tuple
    lengths_kv: tuple

    def dims(self, x):
        return {"q": [self.batch, self.heads, self.sq, self.d],
                "k": [self.batch, self.kv_heads, self.skv, self.d],
                "v": [self.batch, self.kv_heads, self.skv, self.dv],
                "o": [self.batch, self.heads, self.sq, self.dv],
                "stats": [self.batch, self.heads, self.sq, 1]}[x]

    def stored_bytes(self):
        """About what the packages' .npz files hold of it compressed: q, k,
        v, do and o_in at 2 bytes an element, o and the gradients (16-bit
        values as float64) at 3."""
        e = {x: math.prod(self.dims(x)) for x in ("q", "k", "v", "o")}
        return 2 * (e["q"] + e["k"] + e["v"] + 2 * e["o"]) + 3 * (
            2 * e["o"] + e["q"] + e["k"] + e["v"])

    def masks(self):
        """Graph.sdpa's mask arguments, the padding's but its tensors."""
        return dict(use_causal_mask=self.mask == "causal",
                    use_causal_mask_bottom_right=self.mask in ("bottom_right", "window"),
                    sliding_window_length=self.window or None, use_padding_mask=True)


def _lengths(rng, batch, size):
    """One length a batch entry: uniform in [1, size] mostly; 0, size or
    past it (clamped) in some."""
    out = []
    for _ in range(batch):
        u = rng.random()
        if u < 0.1:
            out.append(0)
        elif u < 0.25:
            out.append(size)
        elif u < 0.32:
            out.append(size + int(rng.integers(1, 50)))
        else:
            out.append(int(rng.integers(1, size + 1)))
    return tuple(out)


def _draw_one(rng):
    """One configuration within BUDGET (LONG of them within LONG_BUDGET):
    B, then the kv heads, then the group cut down until it fits, the sizes
    drawn again where even one head of one entry does not."""
    weights = np.array(SIZE_WEIGHTS, float) / sum(SIZE_WEIGHTS)
    long = rng.random() < LONG
    budget = LONG_BUDGET if long else BUDGET
    while True:
        sq, skv = (int(rng.choice(SIZES, p=weights)) for _ in range(2))
        if long:  # one length of several kv tiles, Skv more often
            which = int(rng.random() < 0.7)
            sizes = [sq, skv]
            sizes[which] = int(rng.choice(LONG_SIZES))
            sq, skv = sizes
        d = int(rng.choice(HEAD_DIMS))
        dv = int(rng.choice(HEAD_DIMS)) if rng.random() < OTHER_DV else d
        group = int(rng.choice(GROUPS))
        kv_heads, batch = int(rng.integers(1, 3)), int(rng.integers(1, 7))
        mask = MASKS[int(rng.integers(len(MASKS)))]
        window = int(rng.integers(1, max(sq, skv) + 1)) if mask == "window" else 0
        while True:
            att = PaddedConfig(batch, kv_heads * group, kv_heads, sq, skv, d, dv, mask,
                               window, _lengths(rng, batch, sq), _lengths(rng, batch, skv))
            if att.stored_bytes() <= budget:
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


def _lengths_of(g, i, att):
    lq = g.tensor(name=f"lq{i}", dim=[att.batch, 1, 1, 1], data_type=INT32)
    lkv = g.tensor(name=f"lkv{i}", dim=[att.batch, 1, 1, 1], data_type=INT32)
    return dict(seq_len_q=lq, seq_len_kv=lkv)


def add_pair(g, i, att):
    """sdpa (o<i>, stats<i>) and sdpa_backward (dq<i>, dk<i>, dv<i>, from
    inputs o_in<i>, stats_in<i>, do<i>) of ``att``, sharing q, k, v and the
    lengths."""
    q, k, v = (g.tensor(name=f"{x}{i}", dim=att.dims(x)) for x in "qkv")
    lengths = _lengths_of(g, i, att)
    o, stats = g.sdpa(q, k, v, generate_stats=True, **att.masks(), **lengths)
    o.set_name(f"o{i}")
    stats.set_name(f"stats{i}")
    o_in = g.tensor(name=f"o_in{i}", dim=att.dims("o"))
    stats_in = g.tensor(name=f"stats_in{i}", dim=att.dims("stats"), data_type=F32)
    do = g.tensor(name=f"do{i}", dim=att.dims("o"))
    grads = g.sdpa_backward(q, k, v, o_in, do, stats_in, **att.masks(), **lengths)
    for name, t in zip(("dq", "dk", "dv"), grads):
        t.set_name(f"{name}{i}")
    outputs(o, stats, *grads)


def padded_attention(dtype, configs):
    return graph_of(add_pair, dtype, configs)


def derive_forward(dtype, configs):
    """Case.derived: each o_in and stats_in the reference's forward of the
    drawn q, k, v and the lengths."""
    def derived(values):
        out = {}
        for i, att in enumerate(configs):
            g = dnnc.Graph(io_data_type=dtype)
            q, k, v = (g.tensor(name=x, dim=att.dims(x)) for x in "qkv")
            o, stats = g.sdpa(q, k, v, generate_stats=True, **att.masks(),
                              **_lengths_of(g, "", att))
            o.set_name("o").set_output(True)
            stats.set_name("stats").set_output(True)
            ref = g.execute_reference({"q": values[f"q{i}"], "k": values[f"k{i}"],
                                       "v": values[f"v{i}"], "lq": values[f"lq{i}"],
                                       "lkv": values[f"lkv{i}"]})
            out[f"o_in{i}"], out[f"stats_in{i}"] = ref["o"], ref["stats"]
        return out
    return derived


def _fixed(configs):
    out = {}
    for i, att in enumerate(configs):
        out[f"lq{i}"], out[f"lkv{i}"] = att.lengths_q, att.lengths_kv
    return out


# f32 attention runs on simt-generic (the expansion, the lengths cast to f32
# in the kernel that masks).
F32_CONFIGS = [
    PaddedConfig(3, 4, 2, 9, 20, 16, 8, "bottom_right", 0, (9, 4, 0), (3, 20, 25)),
    PaddedConfig(2, 2, 1, 33, 17, 8, 8, "window", 5, (30, 33), (17, 1)),
]

CASES = [
    Case(f"attention_padding_{j:02d}_{dtype.mlir}", padded_attention(dtype, configs),
         seed=SEED + j, rtol=RTOL[dtype.mlir], fixed=_fixed(configs),
         derived=derive_forward(dtype, configs))
    for j, (configs, dtype) in enumerate(zip(CONFIGS, [BF16, F16] * GRAPHS))
] + [Case("attention_padding_f32", padded_attention(F32, F32_CONFIGS), seed=SEED - 1,
          fixed=_fixed(F32_CONFIGS), derived=derive_forward(F32, F32_CONFIGS))]
