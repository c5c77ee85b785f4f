"""Random attention: 320 sdpa forward configurations drawn from a fixed
seed, eight to a graph (each with inputs of its own, each its own kernel),
half of the graphs bf16 and half f16: what tc-sm90's attention kernel
(dnnc/codegen/gpu/tensorcore/sm90/flash.py) takes, and a few that fall
back from it.

Most are what the kernel takes (no bias): B 1-8; query heads over kv heads
1, 2 or 8 (grouped-query attention); Sq and Skv drawn from ``SIZES``
(1 and 7: less than a tile; 64 and 128: whole tiles; 77, 1000 and 4097:
ragged last tiles), the larger less often; head dims D from ``HEAD_DIMS``
(whole boxes of 64 and the common ragged ones, 80 and 96) and, in a
quarter of the draws, other multiples of 8 from 8 to 248 (``OTHER_DIMS``);
Dv = D but in ``OTHER_DV`` of the draws (192 with 128, as in multi-head
latent attention, or any other multiple of 8 up to 256); causal or not;
the statistics in most; the default scale 1 / sqrt(D) in most, else one
from 1 / (2 sqrt(D)) to 3 / sqrt(D) (a flatter or a sharper softmax);
and in a share of the draws some of q, k, v and o stored (B, S, H, D)
and read as (B, H, S, D) (``heads_interleaved``): rows of one head H x D
elements apart. (TMA reads such q, k and v where they lie and writes
such an o where it lies.)

The rest (``BIAS`` of the draws, kept tiny) add a bias, broadcast or
whole, of the other 16-bit type than q's (an f16 bias in a bf16 graph,
a bf16 one in an f16 graph), which the kernel does not take: their
expansion runs on simt-generic, the reason in the plan.

Then, from a generator of their own (so that the draws above stay as they
are), ``MASKED`` of the draws without a bias (``MASKED_LONG`` of those
with a length of 1000 or more, whose masks skip whole tiles) get other
masks: causal aligned to the bottom-right corner (row i sees the keys up
to i + Skv - Sq; with Sq > Skv the first rows see none: o = 0, stats =
-inf), a sliding window of 1 to max(Sq, Skv) keys (log-uniform) ending at
the top-left or bottom-right diagonal, or both; and ``TC_BIAS`` of them
an additive bias the kernel takes: q's type or f32, of the shapes
[1, H, Sq, Skv], [B, 1, Sq, Skv] and [B, 1, 1, Skv] the first (in a
random order) within ``TC_BIAS_BUDGET`` and its graph's budget.

Each sdpa's data, about as the packages' .npz files hold it compressed
(``AttentionConfig.stored_bytes``: inputs 2 bytes an element, o 3 and the
statistics 4, rounded values stored as float64), is at most ``BUDGET``
bytes, its batch or its kv heads, then its group cut down until it fits;
a graph's at most ``GRAPH_BUDGET``: the larger lengths come with small
B x H x D. ``LONG`` of the draws take one length of 1000 or 4097 (Skv
more often) with a budget of ``LONG_BUDGET``, B = 1 and a kv head or
two, their head dims drawn again until they fit, so that long sequences
also meet the common head dims. A bias on tc-sm90 adds at most
``TC_BIAS_BUDGET`` bytes. The family's packages take some 24 MiB.

o is a weighted average of v's rows (weights summing to 1), not a sum
that grows with Skv: its tolerance is the output type's, scaled by the
largest output (case.comparison's default), not ``contracted``'s. The
kernel rounds the weights to the input type before P V, which adds at
most a rounding of that type times max |v|: emulated in NumPy on these
inputs (f32 scores, the bias added, masked keys at P = 0, P rounded, l
from the unrounded P), o stays within a quarter of its tolerance, masked
and biased draws as the others.
"""

import math
from dataclasses import dataclass, replace

import numpy as np

import dnnc

from .case import BF16, F16, F32, Case, outputs
from .strides import heads_interleaved

SEED = 20261127
GRAPHS = 40
PER_GRAPH = 8
SIZES = (1, 7, 64, 77, 128, 1000, 4097)
# The larger lengths less often: their data is what fills the budget.
SIZE_WEIGHTS = (3, 3, 3, 3, 3, 2, 1)
HEAD_DIMS = (64, 80, 96, 128, 192, 256)
OTHER_DIMS = (8, 16, 24, 32, 40, 48, 56, 72, 88, 104, 112, 120, 136, 144, 160, 176, 200,
              208, 224, 232, 240, 248)
GROUPS = (1, 2, 8)
OPERANDS = ("q", "k", "v", "o")
# Shares of the draws.
OTHER_D, OTHER_DV, CAUSAL, STATS, OTHER_SCALE, INTERLEAVED, BIAS, LONG = \
    0.25, 0.15, 0.5, 0.85, 0.2, 0.25, 0.03, 0.05
# Shares of the draws without a bias given other masks (MASKED; MASKED_LONG
# of those with a length of 1000 or more, where masks skip whole tiles) and
# a bias the kernel takes (TC_BIAS): ``decorate``. The masks: bottom-right,
# a window, both.
MASKED, MASKED_LONG, TC_BIAS = 0.12, 0.5, 0.10
MASKS = (("bottom_right",), ("window",), ("bottom_right", "window"))
# A bias of the other 16-bit type than q's (the tiny draws with a bias).
OTHER = "other"
# Bytes of an sdpa's data in the packages (see the module docstring).
BUDGET = 96 * 1024
LONG_BUDGET = 1200 * 1024
GRAPH_BUDGET = 1600 * 1024
TC_BIAS_BUDGET = 64 * 1024


@dataclass(frozen=True)
class AttentionConfig:
    """One sdpa forward: q ``[batch, heads, sq, d]``, k ``[batch, kv_heads,
    skv, d]``, v ``[batch, kv_heads, skv, dv]``; ``scale`` None for 1 /
    sqrt(d); ``interleaved`` the operands (of OPERANDS) stored (B, S, H,
    D); ``bias`` the bias's dims (broadcasting to [batch, heads, sq, skv])
    or None, ``bias_type`` its type: None for q's, "f32" or OTHER (the
    other 16-bit type); the masks: ``causal`` (a diagonal and columns past
    it masked), aligned ``bottom_right`` or top-left, and a sliding
    ``window`` (0 for none; implies causal)."""

    batch: int
    heads: int
    kv_heads: int
    sq: int
    skv: int
    d: int
    dv: int
    causal: bool = False
    stats: bool = True
    scale: float = None
    interleaved: tuple = ()
    bias: tuple = None
    bias_type: str = None
    bottom_right: bool = False
    window: int = 0

    def dims(self, operand):
        """The logical (B, H, S, D) dims of ``operand`` (one of OPERANDS)."""
        return {"q": [self.batch, self.heads, self.sq, self.d],
                "k": [self.batch, self.kv_heads, self.skv, self.d],
                "v": [self.batch, self.kv_heads, self.skv, self.dv],
                "o": [self.batch, self.heads, self.sq, self.dv]}[operand]

    def strides(self, operand):
        """``operand``'s strides: (B, S, H, D) where it is interleaved, else
        None (row-major)."""
        return heads_interleaved(self.dims(operand)) if operand in self.interleaved else None

    def stored_bytes(self):
        """About what the package's data file holds of it (compressed):
        inputs 2 bytes an element (an f32 bias 4), o 3 (a 16-bit value as
        float64), the statistics 4 (an f32 value as float64)."""
        inputs = sum(math.prod(self.dims(x)) for x in "qkv")
        bias = (4 if self.bias_type == "f32" else 2) * math.prod(self.bias or [0])
        stats = self.batch * self.heads * self.sq if self.stats else 0
        return 2 * inputs + bias + 3 * math.prod(self.dims("o")) + 4 * stats

    def masks(self):
        """Graph.sdpa's mask arguments."""
        return dict(use_causal_mask=self.causal and not self.bottom_right,
                    use_causal_mask_bottom_right=self.bottom_right,
                    sliding_window_length=self.window or None)

    def tensor_core_eligible(self):
        """What tc-sm90's attention kernel takes: no bias or one of q's type
        or f32 (q, k, v and o are 16-bit, D and Dv multiples of 8 up to 256
        and every stride a multiple of 16 bytes by construction; every
        mask)."""
        return self.bias_type != OTHER


def _size(rng):
    return int(rng.choice(SIZES, p=np.array(SIZE_WEIGHTS) / sum(SIZE_WEIGHTS)))


def _head_dims(rng):
    d = int(rng.choice(OTHER_DIMS if rng.random() < OTHER_D else HEAD_DIMS))
    dv = d
    if rng.random() < OTHER_DV:
        dv = 128 if d == 192 else int(rng.choice(HEAD_DIMS + OTHER_DIMS))
    return d, dv


def _scale(rng, d):
    if rng.random() >= OTHER_SCALE:
        return None
    return float(rng.uniform(0.5, 3.0)) / math.sqrt(d)


def _interleaved(rng):
    if rng.random() >= INTERLEAVED:
        return ()
    chosen = tuple(x for x in OPERANDS if rng.random() < 0.5)
    return chosen or (str(rng.choice(OPERANDS)),)


def _with_bias(rng):
    """A tiny sdpa with a bias of one of the shapes that broadcast."""
    batch, kv_heads, group = (int(rng.integers(1, 3)), int(rng.integers(1, 3)),
                              int(rng.choice(GROUPS[:2])))
    heads = kv_heads * group
    sq, skv = (int(rng.choice(SIZES[:4])) for _ in range(2))
    d = int(rng.choice((8, 16, 64)))
    bias = ((batch, heads, sq, skv), (1, heads, sq, skv), (batch, 1, 1, skv),
            (1, 1, sq, skv))[int(rng.integers(4))]
    return AttentionConfig(batch, heads, kv_heads, sq, skv, d, d,
                           causal=bool(rng.random() < CAUSAL),
                           stats=bool(rng.random() < STATS), bias=bias, bias_type=OTHER)


def _without_bias(rng, batch, kv_heads, group, sq, skv, budget):
    """An sdpa of these sizes, its batch or kv heads (either, at random),
    then its group cut down to fit ``budget``; None where even one head
    does not."""
    d, dv = _head_dims(rng)
    att = AttentionConfig(batch, kv_heads * group, kv_heads, sq, skv, d, dv,
                          causal=bool(rng.random() < CAUSAL),
                          stats=bool(rng.random() < STATS), scale=_scale(rng, d),
                          interleaved=_interleaved(rng))
    while att.stored_bytes() > budget:
        if att.batch > 1 and (att.kv_heads == 1 or rng.random() < 0.5):
            att = replace(att, batch=att.batch // 2)
        elif att.kv_heads > 1:
            att = replace(att, heads=att.heads // att.kv_heads, kv_heads=1)
        elif att.heads > 1:
            att = replace(att, heads=GROUPS[GROUPS.index(att.heads) - 1])
        else:
            return None
    return att


def _draw_one(rng):
    """An AttentionConfig within its budget: with a bias (BIAS of the
    draws), long (LONG: one length 1000 or 4097, B = 1, the head dims drawn
    again until it fits) or neither."""
    kind = rng.random()
    if kind < BIAS:
        return _with_bias(rng)
    if kind < BIAS + LONG:
        # The long one Skv more often: the kv loop is the kernel's.
        lengths = [_size(rng), int(rng.choice(SIZES[-2:]))]
        if rng.random() < 0.4:
            lengths.reverse()
        att = None
        while att is None:
            att = _without_bias(rng, 1, int(rng.integers(1, 3)), int(rng.choice(GROUPS)),
                                *lengths, LONG_BUDGET)
        return att
    while True:
        group = int(rng.choice(GROUPS))
        att = _without_bias(rng, int(rng.integers(1, 9)),
                            int(rng.integers(1, 3 if group == 8 else 5)), group,
                            _size(rng), _size(rng), BUDGET)
        if att is not None:
            return att


def with_masks(rng, att, masks=MASKS):
    """``att`` (a configuration of this family or of
    attention_backward_random) with the masks of one of ``masks``:
    bottom-right aligned, a window of 1 to max(Sq, Skv) keys
    (log-uniform), or both (causal either way)."""
    mask = masks[int(rng.integers(len(masks)))]
    # exp of a uniform draw in [0, log(max + 1)): 1 to max, short ones as
    # often as long ones.
    longest = max(att.sq, att.skv) + 1
    window = int(np.exp(rng.uniform(0, np.log(longest)))) if "window" in mask else 0
    return replace(att, causal=True, bottom_right="bottom_right" in mask, window=window)


def _biased(rng, att, room):
    """``att`` with a bias the kernel takes, q's type or f32, of the first
    of its shapes (in a random order) whose bytes fit ``room``; ``att``
    where none does."""
    b, h, sq, skv = att.batch, att.heads, att.sq, att.skv
    shapes = [(1, h, sq, skv), (b, 1, sq, skv), (b, 1, 1, skv)]
    bias_type = "f32" if rng.random() < 0.5 else None
    for i in rng.permutation(len(shapes)):
        biased = replace(att, bias=shapes[i], bias_type=bias_type)
        if biased.stored_bytes() - att.stored_bytes() <= room:
            return biased
    return att


def decorate(groups, seed):
    """The draws ``groups`` with masks (MASKED of those without a bias,
    MASKED_LONG of those with a length of 1000 or more) and a bias the
    kernel takes (TC_BIAS of them, within TC_BIAS_BUDGET and the graph's
    budget), drawn from ``seed``."""
    rng = np.random.default_rng(seed)
    out = []
    for group in groups:
        group = list(group)
        for i, att in enumerate(group):
            if att.bias is not None:
                continue
            share = MASKED_LONG if max(att.sq, att.skv) >= 1000 else MASKED
            masked, biased = rng.random() < share, rng.random() < TC_BIAS
            if masked:
                att = with_masks(rng, att)
            if biased:
                room = GRAPH_BUDGET - sum(a.stored_bytes() for a in group)
                att = _biased(rng, att, min(TC_BIAS_BUDGET, room))
            group[i] = att
        out.append(group)
    return out


def draw(seed=SEED, graphs=GRAPHS, per_graph=PER_GRAPH):
    """``graphs`` lists of ``per_graph`` AttentionConfigs drawn from
    ``seed``, each list within GRAPH_BUDGET; then ``decorate``d (from
    seed + 1)."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < graphs:
        group = [_draw_one(rng) for _ in range(per_graph)]
        if sum(a.stored_bytes() for a in group) <= GRAPH_BUDGET:
            out.append(group)
    return decorate(out, seed + 1)


CONFIGS = draw()


def bias_type(att, dtype):
    """The type of ``att``'s bias in a graph of ``dtype`` (None: ``dtype``)."""
    return {None: None, "f32": F32, OTHER: F16 if dtype is BF16 else BF16}[att.bias_type]


def add_sdpa(g, i, att, dtype):
    """Add ``att`` to graph ``g`` (of io type ``dtype``) as inputs ``q<i>``,
    ``k<i>``, ``v<i>`` (and ``bias<i>``) and outputs ``o<i>`` (and
    ``stats<i>``)."""
    q, k, v = (g.tensor(name=f"{x}{i}", dim=att.dims(x), stride=att.strides(x)) for x in "qkv")
    bias = g.tensor(name=f"bias{i}", dim=list(att.bias),
                    data_type=bias_type(att, dtype)) if att.bias else None
    o, stats = g.sdpa(q, k, v, attn_scale=att.scale, bias=bias, generate_stats=att.stats,
                      **att.masks())
    o.set_name(f"o{i}")
    if "o" in att.interleaved:
        o.set_stride(att.strides("o"))
    if stats is not None:
        stats.set_name(f"stats{i}")
    outputs(o, stats)
    return o


def random_attention(dtype, configs):
    def build():
        g = dnnc.Graph(io_data_type=dtype)
        for i, att in enumerate(configs):
            add_sdpa(g, i, att, dtype)
        return g
    return build


CASES = [
    Case(f"attention_random_{j:02d}_{dtype.mlir}", random_attention(dtype, configs),
         seed=SEED + j)
    for j, (configs, dtype) in enumerate(zip(CONFIGS, [BF16, F16] * GRAPHS))
]
