"""tc-sm80's attention forward (dnnc/codegen/gpu/tensorcore/sm80/flash.py):
40 sdpa configurations drawn from a fixed seed, five to a graph (each with
inputs of its own, each its own kernel), the graphs bf16 and f16 in turn.

Every kernel of these graphs is forced onto tc-sm80 by a config override
(``*=strategy:tc-sm80``, the tile the heuristics rank for sm_80): built
with ``--arch sm_80`` they run as an A100 runs them, built for sm_90a an
H100 runs the same kernel (mma.sync, cp.async) in place of tc-sm90's.

The draws cover, by construction: head dims D from ``HEAD_DIMS`` in turn
(Dv = D, or in ``OTHER_DV`` of the draws another of them, 192 with 128 as
in multi-head latent attention); Sq and Skv from ``SIZES`` (1 and 7: less
than a tile; 64 and 128: whole tiles of 64; 77 and 1000: ragged last
tiles); query heads over kv heads from ``GROUPS`` in turn; the masks of
``MASKS`` in turn (none, causal aligned top-left, bottom-right, a sliding
window of 1 to max(Sq, Skv) keys at either diagonal); in ``BIAS`` of the
draws an additive bias of q's type or f32, [1, H, Sq, Skv], [B, 1, Sq,
Skv] or [B, 1, 1, Skv]; q, k and v stored (B, S, H, D) in ``INTERLEAVED``
of them (read where they lie); the statistics in most. Each sdpa's data
is at most ``BUDGET`` bytes (attention_random.AttentionConfig.stored_bytes),
its batch, then its kv heads, its group, then its longer length cut down
until it fits.
"""

from dataclasses import replace

import numpy as np

from .attention_random import AttentionConfig, random_attention
from .case import BF16, F16, Case

SEED = 20261205
GRAPHS = 8
PER_GRAPH = 5
HEAD_DIMS = (64, 80, 96, 128, 192, 256)
SIZES = (1, 7, 64, 77, 128, 1000)
GROUPS = (1, 2, 8)
MASKS = ((), ("causal",), ("bottom_right",), ("window",), ("bottom_right", "window"))
OTHER_DV, BIAS, INTERLEAVED, STATS = 0.2, 0.25, 0.2, 0.8
BUDGET = 1200 * 1024
CONFIG = "*=strategy:tc-sm80"


def _bias_shape(att, form):
    """The bias of ``form`` (0: [1, H, Sq, Skv], 1: [B, 1, Sq, Skv], 2:
    [B, 1, 1, Skv]) for ``att``'s sizes."""
    b, h, sq, skv = att.batch, att.heads, att.sq, att.skv
    return [(1, h, sq, skv), (b, 1, sq, skv), (b, 1, 1, skv)][form]


def _fit(att, form):
    """``att`` (with a bias of ``form``, or None) with its batch, its kv
    heads, its group, then its longer length cut down until its data fits
    BUDGET."""
    while True:
        if form is not None:
            att = replace(att, bias=_bias_shape(att, form))
        if att.stored_bytes() <= BUDGET:
            return att
        if att.batch > 1:
            att = replace(att, batch=att.batch // 2)
        elif att.kv_heads > 1:
            att = replace(att, heads=att.heads // att.kv_heads, kv_heads=1)
        elif att.heads > 1:
            att = replace(att, heads=GROUPS[GROUPS.index(att.heads) - 1])
        elif att.sq >= att.skv:
            att = replace(att, sq=SIZES[SIZES.index(att.sq) - 1])
        else:
            att = replace(att, skv=SIZES[SIZES.index(att.skv) - 1])


def _draw(rng, i):
    """Configuration ``i``: D, the group and the mask in turn, the rest drawn."""
    d = HEAD_DIMS[i % len(HEAD_DIMS)]
    dv = d
    if rng.random() < OTHER_DV:
        dv = 128 if d == 192 else int(rng.choice(HEAD_DIMS))
    group = GROUPS[i % len(GROUPS)]
    kv_heads = int(rng.integers(1, 3))
    sq, skv = (int(rng.choice(SIZES)) for _ in range(2))
    mask = MASKS[(i // len(GROUPS)) % len(MASKS)]
    form = int(rng.integers(3)) if rng.random() < BIAS else None
    att = AttentionConfig(int(rng.integers(1, 3)), kv_heads * group, kv_heads, sq, skv, d, dv,
                          causal=bool(mask), stats=bool(rng.random() < STATS),
                          interleaved=("q", "k", "v") if rng.random() < INTERLEAVED else (),
                          bias_type="f32" if form is not None and rng.random() < 0.5 else None,
                          bottom_right="bottom_right" in mask)
    att = _fit(att, form)
    if "window" in mask:
        # Log-uniform from 1 to max(Sq, Skv).
        longest = max(att.sq, att.skv) + 1
        att = replace(att, window=int(np.exp(rng.uniform(0, np.log(longest)))))
    return att


def draw(seed=SEED, graphs=GRAPHS, per_graph=PER_GRAPH):
    """``graphs`` lists of ``per_graph`` AttentionConfigs drawn from ``seed``."""
    rng = np.random.default_rng(seed)
    configs = [_draw(rng, i) for i in range(graphs * per_graph)]
    return [configs[j * per_graph:(j + 1) * per_graph] for j in range(graphs)]


CONFIGS = draw()


CASES = [
    Case(f"attention_sm80_{j:02d}_{dtype.mlir}", random_attention(dtype, configs),
         seed=SEED + j, config=CONFIG)
    for j, (configs, dtype) in enumerate(zip(CONFIGS, [BF16, F16] * GRAPHS))
]

__all__ = ["CASES", "CONFIGS"]
