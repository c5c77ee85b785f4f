"""tc-sm90's persistent attention forward (sm90/flash_scheduler.py): sdpa
forwards whose query tiles run on a few persistent blocks each, so that
every block carries its K and V ring, its barriers' phases and its Q tile
from tile to tile, forced by the config override ``persistent:N`` (at most
N blocks; N from ``BLOCKS``, or 3, fewer than the units of every sdpa;
some unit counts no multiple of N; and 1, a block an SM).

The configurations are chosen, not drawn: each feature the forward takes
with the unit counts and tile edges the scheduler must get right, on
problems small enough for a few MiB of packages (a few blocks give each
many tiles):

* causal grids (tile pairs, the middle tile of an odd count alone), with S
  a multiple of the tile and not, top-left and bottom-right (whose first
  tiles see no column with Sq > Skv: tiles with no step), windows;
* non-causal grids of units that are no multiple of the blocks;
* a block an SM (``persistent:1``) with a few more units than SMs, and
  with fewer (a block a unit, the others none), also on plain_00's graph
  and data (one_round), to tell the kernel from what carries across tiles;
* GQA and MQA, a bias (f32, q's type), heads stored (B, S, H, D), D 40,
  64, 80, 96, 128 and 256 (64 kv rows a step, O staged in the Q tile),
  192-row tiles (three consumer warpgroups), Dv other than D (O from
  registers where its boxes do not fit Q's), no statistics;
* padding masks (lengths of 0, short, whole and past S), ragged (packed)
  q, k, v and o, and paged K and V caches, from the families of those
  features (attention_padding's, attention_ragged's and attention_paged's
  configurations and inputs), forwards only.

Every graph holds only sdpa forwards (on tc-sm90, so that the override's
``*`` names their kernels alone). Tolerances as in those families.
"""

from . import attention_paged, attention_padding, attention_ragged
from .attention_padding import PaddedConfig
from .attention_paged import PagedConfig
from .attention_random import AttentionConfig, random_attention
from .attention_ragged import RaggedConfig
from .case import BF16, F16, RTOL, Case, graph_of, outputs

SEED = 20261130
# Persistent blocks of each graph's kernels, in turn: fewer than any of
# its sdpas' units (4 or more), so that each block takes several tiles.
BLOCKS = (3, 2)

# The plain forwards: (B, H, Hkv, Sq, Skv, D, Dv) and the masks.
PLAIN = [
    # Causal, 4 tiles of 128 (S a multiple): 2 pairs a head.
    AttentionConfig(1, 2, 1, 512, 512, 64, 64, causal=True),
    # Causal, S = 500: 4 tiles, the last short; MQA.
    AttentionConfig(1, 2, 1, 500, 500, 128, 128, causal=True),
    # Causal, 3 tiles: the middle tile alone; an f32 bias.
    AttentionConfig(1, 3, 1, 260, 260, 80, 80, causal=True, bias=(1, 1, 260, 260),
                    bias_type="f32"),
    # Not causal: 3 tiles x 4 heads, units no multiple of the blocks.
    AttentionConfig(2, 2, 2, 300, 400, 96, 96),
    # Bottom-right, Sq > Skv: the first tiles see nothing (no step).
    AttentionConfig(1, 2, 1, 700, 333, 64, 64, causal=True, bottom_right=True),
    # A window at the top-left diagonal, a bias of q's type over columns.
    AttentionConfig(1, 2, 2, 600, 600, 128, 128, causal=True, window=150,
                    bias=(1, 1, 1, 600)),
    # Heads interleaved (B, S, H, D) in q and o; no statistics.
    AttentionConfig(1, 2, 2, 400, 400, 128, 128, stats=False, interleaved=("q", "o")),
    # D 64, Dv 128: O from registers (its two boxes do not fit Q's one).
    AttentionConfig(1, 2, 1, 520, 520, 64, 128, causal=True),
    # D 40 (one box, zero-filled past 40); a sharper softmax.
    AttentionConfig(2, 2, 1, 260, 300, 40, 40, causal=True, scale=0.3),
]

# Other tile forms, forced onto 3 blocks: D 256 (64 kv rows a step, O
# staged in the Q tile, which the next Q waits for), D 64 over Sq >= 2048
# (192 query rows a block: three consumer warpgroups in turn), GQA 4:2 with
# the bottom-right diagonal and Sq < Skv (every tile sees the whole start).
# The heuristics keep the first two forms a block a tile (persistent, ptxas
# spills 16 to 124 bytes of their consumers); here for their correctness.
WIDE = [
    # Causal, 3 tiles: a pair and the middle tile alone, twice.
    AttentionConfig(1, 2, 1, 300, 300, 256, 256, causal=True),
    AttentionConfig(1, 2, 2, 260, 400, 256, 256),
    # 11 tiles of 192 rows: 6 pairs, the middle tile alone.
    AttentionConfig(1, 1, 1, 2100, 2100, 64, 64, causal=True),
    AttentionConfig(1, 4, 2, 384, 640, 128, 128, causal=True, bottom_right=True),
]

# A block an SM (persistent:1, 132 blocks): 134 units, so that two blocks
# run a second tile and the others' last round has none; 68 causal units
# (a pair each: the short last tile of 72 rows, then the first), a block
# a unit and 64 blocks with none. Head dim 16 keeps the package small.
WAVE = [
    AttentionConfig(1, 67, 67, 256, 256, 16, 16),
    AttentionConfig(1, 68, 4, 200, 256, 16, 16, causal=True),
]

PADDED = [
    PaddedConfig(3, 1, 1, 400, 400, 64, 64, "causal", 0, (400, 0, 333), (400, 120, 500)),
    PaddedConfig(2, 1, 1, 300, 600, 128, 128, "bottom_right", 0, (299, 37), (600, 500)),
    PaddedConfig(2, 2, 1, 390, 390, 96, 96, "window", 77, (390, 260), (1, 390)),
    PaddedConfig(4, 1, 1, 300, 300, 128, 128, "none", 0, (300, 1, 129, 0), (17, 300, 299, 5)),
]

RAGGED = [
    RaggedConfig(3, 2, 1, 400, 400, 64, "causal", (400, 250, 0), (400, 250, 0),
                 (0, 400, 650), (0, 401, 651)),
    RaggedConfig(2, 1, 1, 300, 400, 128, "bottom_right", (129, 300), (400, 37),
                 (300, 0), (0, 500)),
    RaggedConfig(4, 1, 1, 300, 300, 80, "none", (300, 1, 150, 64), (300, 300, 10, 64),
                 (0, 300, 301, 451), (600, 0, 300, 310)),
]

PAGED = [
    PagedConfig(2, 2, 1, 600, 600, 128, 64, "causal", 0, (600, 333), (600, 333)),
    PagedConfig(3, 2, 1, 300, 520, 64, 16, "none", 0, (300, 0, 17), (520, 1, 529)),
    PagedConfig(1, 4, 2, 400, 700, 128, 256, "window", 90, (400,), (700,)),
]


def add_padded(g, i, att):
    """attention_padding's forward half of ``att``: o<i>, stats<i>."""
    q, k, v = (g.tensor(name=f"{x}{i}", dim=att.dims(x)) for x in "qkv")
    o, stats = g.sdpa(q, k, v, generate_stats=True, **att.masks(),
                      **attention_padding._lengths_of(g, i, att))
    o.set_name(f"o{i}")
    stats.set_name(f"stats{i}")
    outputs(o, stats)


def add_ragged(g, i, att):
    """attention_ragged's forward half of ``att``: packed o<i>, stats<i>."""
    t, off_q, _ = attention_ragged._ragged_inputs(g, i, att, "qkv")
    o, stats = g.sdpa(t["q"], t["k"], t["v"], generate_stats=True, **att.masks(),
                      **attention_ragged._lengths_of(g, i, att))
    o.set_name(f"o{i}")
    stats.set_name(f"stats{i}")
    outputs(o, stats)
    attention_ragged._packed_output(o, att, "o", off_q)


def _ragged_fixed(configs):
    out = {}
    for i, att in enumerate(configs):
        out[f"lq{i}"], out[f"lkv{i}"] = att.lengths_q, att.lengths_kv
        out[f"off_q{i}"], out[f"off_kv{i}"] = att.offsets("q"), att.offsets("k")
    return out


def _ragged_unspecified(configs):
    def unspecified(values):
        del values
        return {f"o{i}": ~att.owned("o") for i, att in enumerate(configs)}
    return unspecified


def _override(j):
    return f"*=persistent:{BLOCKS[j % len(BLOCKS)]}"


def _halves(configs):
    return [configs[:len(configs) // 2 + 1], configs[len(configs) // 2 + 1:]]


CASES = [
    Case(f"attention_persistent_plain_{j:02d}_{dtype.mlir}", random_attention(dtype, configs),
         seed=SEED + j, config=_override(j))
    for j, (configs, dtype) in enumerate(zip(_halves(PLAIN), (BF16, F16)))
] + [
    # split:1: the 192-row problem's few tiles would split its kv tiles.
    Case("attention_persistent_wide_bf16", random_attention(BF16, WIDE), seed=SEED + 5,
         config="*=persistent:3,split:1"),
    Case("attention_persistent_wave_f16", random_attention(F16, WAVE), seed=SEED + 6,
         config="*=persistent:1"),
    # plain_00's graph and data with a block an SM: fewer units than SMs,
    # so every block runs one unit (one round, nothing carried from tile to
    # tile but a causal pair's). Beside plain_00 it splits a fault between
    # the persistent kernel itself and what carries across its tiles.
    Case("attention_persistent_one_round_bf16", random_attention(BF16, _halves(PLAIN)[0]),
         seed=SEED, config="*=persistent:1"),
] + [
    Case(f"attention_persistent_padding_{dtype.mlir}",
         graph_of(add_padded, dtype, PADDED), seed=SEED + 10, rtol=RTOL[dtype.mlir],
         fixed=attention_padding._fixed(PADDED), config=_override(1))
    for dtype in (BF16,)
] + [
    Case(f"attention_persistent_ragged_{dtype.mlir}",
         graph_of(add_ragged, dtype, RAGGED), seed=SEED + 20, rtol=RTOL[dtype.mlir],
         fixed=_ragged_fixed(RAGGED), unspecified=_ragged_unspecified(RAGGED),
         config=_override(2))
    for dtype in (F16,)
] + [
    Case(f"attention_persistent_paged_{dtype.mlir}",
         attention_paged.paged_attention(dtype, PAGED), seed=SEED + 30,
         rtol=RTOL[dtype.mlir], fixed=attention_paged._fixed(PAGED, SEED + 30),
         config=_override(3))
    for dtype in (BF16,)
]
