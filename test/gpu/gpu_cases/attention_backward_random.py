"""Random attention backward: 320 sdpa_backward configurations drawn from a
fixed seed, eight to a graph (each with inputs of its own, each its own
kernel), half of the graphs bf16 and half f16: what tc-sm90's attention
backward takes (dnnc/codegen/gpu/tensorcore/sm90/flash_backward_fused.py,
one kernel, for D 64 and 128 without a bias; flash_backward.py, a dQ kernel
then a dK dV kernel, for the rest), and a few that fall back from it.

Most are what the kernels take (no bias): B 1-8; query heads over kv heads
1, 2 or 8 (grouped-query attention: dK and dV summed over the group); Sq
and Skv drawn from ``SIZES`` (1 and 7: less than a step; 64 and 128: whole
tiles; 77, 1000 and 4097: ragged last tiles), the larger less often; head
dims D from ``HEAD_DIMS`` and, in a quarter of the draws, other multiples
of 8 up to 128 (``OTHER_DIMS``); Dv = D but in ``OTHER_DV`` of the draws;
causal or not (top-left: with Sq < Skv the last kv rows get no gradient
from any query); the default scale 1 / sqrt(D) in most, else one from
1 / (2 sqrt(D)) to 3 / sqrt(D); in a share of the draws some of q, k, v,
o, do, dq, dk and dv stored (B, S, H, D) (``heads_interleaved``; TMA
reads such q, k, v and do where they lie, the kernels o too, and they
write such gradients where they lie), and some of o, dq, dk and dv f32
(``WIDE``: read or written from registers).

o and the statistics must be the forward's of the same q, k and v, or the
gradients mean nothing. Most configurations take them as graph inputs that
``derive_forward`` computes with the reference's forward (float64, o
rounded to its type) from the drawn q, k and v (``Case.derived``); in
``FORWARD`` of the draws an sdpa forward in the same graph computes them
on the GPU (tc-sm90's forward kernel) and hands them to the backward as an
intermediate (o in the graph's type or f32, never stored (B, S, H, D)).

The rest (``BIAS`` of the draws, kept tiny) add a bias of the graph's
type, broadcast or whole, which both kernels read at their recomputed
scores (an sdpa forward in the graph takes it too).

Then, from a generator of their own (so that the draws above stay as they
are), ``MASKED`` of the draws without a bias (``MASKED_LONG`` of those
with a length of 1000 or more, whose masks skip whole tiles) get other
masks, as attention_random's: causal aligned to the bottom-right corner
(with Sq > Skv the first query rows see no key: their statistics are
-inf, P = 0), a sliding window of 1 to max(Sq, Skv) keys
(log-uniform), or both.

Each configuration's data, about as the packages' .npz files hold it
compressed (``AttentionBackwardConfig.stored_bytes``), is at most
``BUDGET`` bytes, its batch or its kv heads, then its group cut down until
it fits; a graph's at most ``GRAPH_BUDGET``. ``LONG`` of the draws take
one length of 1000 or 4097 with a budget of ``LONG_BUDGET``, B = 1 and a
kv head or two, their head dims drawn again until they fit (1000 fits
every head dim; 4097, its gradients stored beside q, k and v, only those
up to 32). The family's packages take some 23 MiB.

Tolerances: case.comparison's default, the output type's rtol (the input
type's for an f32 gradient: ``Case.rtol``) times the largest output.
dQ = scale dS K and dK = scale dSᵀ Q sum Skv and Sq x group products, dV =
Pᵀ dO sums Sq x group. The kernels round P and dS = P (dP - delta) to the
input type before those products (f32 accumulators, P recomputed in f32
from the statistics), so each output is off by about one rounding of
that type times the root sum of squares of its products, which is the size
of the output itself: the rounding errors do not grow with the length
summed over, as those of a contraction of unbounded operands
(``contracted``) do. Where the products cancel (one visible key: P = 1,
dP = delta, dS = 0) the error is that of delta, f32 sums of Dv products
that o rounded to its type enters, below the floor rtol x 1 of the
default. Emulated in NumPy on these draws (P and dS rounded as the
kernels round them, o and the statistics from the emulated forward for
the ``FORWARD`` ones, masked keys at P = 0, float64 sums), every
gradient stays within 0.3 of its tolerance (the median 0.1; masked draws
0.07), while a delta 3% off breaks it (the median 2.2).
"""

import math
from dataclasses import dataclass, replace

import numpy as np

import dnnc

from .attention_random import MASKS, with_masks
from .case import BF16, F16, F32, RTOL, Case
from .strides import heads_interleaved

SEED = 20261128
GRAPHS = 40
PER_GRAPH = 8
SIZES = (1, 7, 64, 77, 128, 1000, 4097)
# The larger lengths less often: their data is what fills the budget.
SIZE_WEIGHTS = (3, 3, 3, 3, 3, 2, 1)
HEAD_DIMS = (64, 80, 96, 128)
OTHER_DIMS = (8, 16, 24, 32, 40, 48, 56, 72, 88, 104, 112, 120)
GROUPS = (1, 2, 8)
OPERANDS = ("q", "k", "v", "o", "do", "dq", "dk", "dv")
GRADIENTS = ("dq", "dk", "dv")
# What may be f32 in a graph of 16-bit q, k, v and do.
WIDENED = ("o", "dq", "dk", "dv")
# Shares of the draws.
OTHER_D, OTHER_DV, CAUSAL, OTHER_SCALE, INTERLEAVED, WIDE, FORWARD, BIAS, LONG = \
    0.25, 0.15, 0.5, 0.2, 0.25, 0.15, 0.2, 0.03, 0.05
# Shares of the draws without a bias given other masks (MASKED; MASKED_LONG
# of those with a length of 1000 or more): ``decorate``.
MASKED, MASKED_LONG = 0.12, 0.5
# Bytes of a configuration's data in the packages (see the module docstring).
BUDGET = 96 * 1024
LONG_BUDGET = 1400 * 1024
GRAPH_BUDGET = 1600 * 1024


@dataclass(frozen=True)
class AttentionBackwardConfig:
    """One sdpa_backward: q ``[batch, heads, sq, d]``, k ``[batch, kv_heads,
    skv, d]``, v ``[batch, kv_heads, skv, dv]``, o and do ``[batch, heads,
    sq, dv]``; ``scale`` None for 1 / sqrt(d); ``interleaved`` the tensors
    (of OPERANDS) stored (B, S, H, D); ``wide`` those (of WIDENED) in f32;
    ``forward``: o and the statistics from an sdpa forward in the graph,
    not inputs; ``bias`` the bias's dims (broadcasting to [batch, heads,
    sq, skv]) or None; the masks: ``causal`` (a diagonal and the columns
    past it masked), aligned ``bottom_right`` or top-left, and a sliding
    ``window`` (0 for none; implies causal); ``deterministic``: the
    backward asks for gradients summed in a fixed order (tc-sm90's two
    kernels; else its fused kernel where it takes the problem); ``dbias``:
    it returns the bias's gradient too (``dbias<i>``, the bias's type);
    ``bias_type`` the bias's type (None: the graph's)."""

    batch: int
    heads: int
    kv_heads: int
    sq: int
    skv: int
    d: int
    dv: int
    causal: bool = False
    scale: float = None
    interleaved: tuple = ()
    wide: tuple = ()
    forward: bool = False
    bias: tuple = None
    bottom_right: bool = False
    window: int = 0
    deterministic: bool = False
    dbias: bool = False
    bias_type: object = None

    def dims(self, tensor):
        """The logical (B, H, S, D) dims of ``tensor`` (one of OPERANDS)."""
        q = [self.batch, self.heads, self.sq, self.d]
        k = [self.batch, self.kv_heads, self.skv, self.d]
        v = [self.batch, self.kv_heads, self.skv, self.dv]
        o = [self.batch, self.heads, self.sq, self.dv]
        return {"q": q, "k": k, "v": v, "o": o, "do": o, "dq": q, "dk": k, "dv": v}[tensor]

    def strides(self, tensor):
        """``tensor``'s strides: (B, S, H, D) where it is interleaved, else
        None (row-major)."""
        return heads_interleaved(self.dims(tensor)) if tensor in self.interleaved else None

    def stored_bytes(self):
        """About what the package's data file holds of it (compressed):
        q, k, v, do and the bias 2 bytes an element, o 2 (4 in f32) and
        the statistics 4 where they are inputs, the gradients 3 (a 16-bit
        value as float64; 5 an f32 one)."""
        size = {x: math.prod(self.dims(x)) for x in OPERANDS}
        total = 2 * (size["q"] + size["k"] + size["v"] + size["do"]
                     + math.prod(self.bias or [0]))
        if not self.forward:
            total += (4 if "o" in self.wide else 2) * size["o"] \
                + 4 * self.batch * self.heads * self.sq
        total += 3 * math.prod(self.bias) if self.dbias else 0
        return total + sum((5 if x in self.wide else 3) * size[x] for x in GRADIENTS)

    def masks(self):
        """Graph.sdpa's (and sdpa_backward's) mask arguments."""
        return dict(use_causal_mask=self.causal and not self.bottom_right,
                    use_causal_mask_bottom_right=self.bottom_right,
                    sliding_window_length=self.window or None)

    def tensor_core_eligible(self):
        """What tc-sm90's attention backward takes: every draw (q, k, v and
        do are 16-bit, D and Dv multiples of 8 up to 128 and every stride a
        multiple of 16 bytes by construction; every mask; a bias of the
        graph's type)."""
        return True


def _size(rng):
    return int(rng.choice(SIZES, p=np.array(SIZE_WEIGHTS) / sum(SIZE_WEIGHTS)))


def _head_dims(rng):
    d = int(rng.choice(OTHER_DIMS if rng.random() < OTHER_D else HEAD_DIMS))
    dv = d
    if rng.random() < OTHER_DV:
        dv = int(rng.choice(HEAD_DIMS + OTHER_DIMS))
    return d, dv


def _scale(rng, d):
    if rng.random() >= OTHER_SCALE:
        return None
    return float(rng.uniform(0.5, 3.0)) / math.sqrt(d)


def _some(rng, share, names):
    """With probability ``share``, a non-empty random subset of ``names``;
    else none."""
    if rng.random() >= share:
        return ()
    chosen = tuple(x for x in names if rng.random() < 0.5)
    return chosen or (str(rng.choice(names)),)


def _with_bias(rng):
    """A tiny sdpa_backward with a bias of one of the shapes that broadcast."""
    batch, kv_heads, group = (int(rng.integers(1, 3)), int(rng.integers(1, 3)),
                              int(rng.choice(GROUPS[:2])))
    heads = kv_heads * group
    sq, skv = (int(rng.choice(SIZES[:4])) for _ in range(2))
    d = int(rng.choice((8, 16, 64)))
    bias = ((batch, heads, sq, skv), (1, heads, sq, skv), (batch, 1, 1, skv),
            (1, 1, sq, skv))[int(rng.integers(4))]
    return AttentionBackwardConfig(batch, heads, kv_heads, sq, skv, d, d,
                                   causal=bool(rng.random() < CAUSAL),
                                   forward=bool(rng.random() < FORWARD), bias=bias)


def _without_bias(rng, batch, kv_heads, group, sq, skv, budget):
    """An sdpa_backward of these sizes, its batch or kv heads (either, at
    random), then its group cut down to fit ``budget``; None where even
    one head does not."""
    d, dv = _head_dims(rng)
    forward = bool(rng.random() < FORWARD)
    interleaved = _some(rng, INTERLEAVED, OPERANDS)
    if forward:
        # The forward's o is an intermediate: the backward reads it row-major.
        interleaved = tuple(x for x in interleaved if x != "o")
    att = AttentionBackwardConfig(batch, kv_heads * group, kv_heads, sq, skv, d, dv,
                                  causal=bool(rng.random() < CAUSAL), scale=_scale(rng, d),
                                  interleaved=interleaved, wide=_some(rng, WIDE, WIDENED),
                                  forward=forward)
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
    """An AttentionBackwardConfig within its budget: with a bias (BIAS of
    the draws), long (LONG: one length 1000 or 4097, B = 1, the head dims
    drawn again until it fits) or neither."""
    kind = rng.random()
    if kind < BIAS:
        return _with_bias(rng)
    if kind < BIAS + LONG:
        # The dQ kernel loops over Skv, the dK dV kernel over Sq: either
        # may be the long one.
        lengths = [_size(rng), int(rng.choice(SIZES[-2:]))]
        if rng.random() < 0.5:
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


def decorate(groups, seed):
    """The draws ``groups`` with masks (attention_random.with_masks:
    MASKED of those without a bias, MASKED_LONG of those with a length of
    1000 or more), drawn from ``seed``."""
    rng = np.random.default_rng(seed)
    out = []
    for group in groups:
        group = list(group)
        for i, att in enumerate(group):
            if att.bias is not None:
                continue
            share = MASKED_LONG if max(att.sq, att.skv) >= 1000 else MASKED
            if rng.random() < share:
                group[i] = with_masks(rng, att, MASKS)
        out.append(group)
    return out


def draw(seed=SEED, graphs=GRAPHS, per_graph=PER_GRAPH):
    """``graphs`` lists of ``per_graph`` AttentionBackwardConfigs drawn from
    ``seed``, each list within GRAPH_BUDGET; then ``decorate``d (from seed
    + 1)."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < graphs:
        group = [_draw_one(rng) for _ in range(per_graph)]
        if sum(a.stored_bytes() for a in group) <= GRAPH_BUDGET:
            out.append(group)
    return decorate(out, seed + 1)


CONFIGS = draw()


def _forward(g, att, q, k, v, bias, dtype):
    """o and the statistics of ``att``'s sdpa forward in graph ``g``."""
    o, stats = g.sdpa(q, k, v, attn_scale=att.scale, bias=bias, generate_stats=True,
                      **att.masks())
    o.set_data_type(F32 if "o" in att.wide else dtype)
    return o, stats


def add_backward(g, i, att, dtype):
    """Add ``att`` to graph ``g`` (of io type ``dtype``) as inputs ``q<i>``,
    ``k<i>``, ``v<i>``, ``do<i>`` (``o<i>`` and ``stats<i>`` unless an sdpa
    forward of the graph computes them; ``bias<i>``) and outputs ``dq<i>``,
    ``dk<i>`` and ``dv<i>`` (and ``dbias<i>``)."""
    def tensor(x, **kw):
        return g.tensor(name=f"{x}{i}", dim=att.dims(x), stride=att.strides(x), **kw)
    q, k, v, do = (tensor(x) for x in ("q", "k", "v", "do"))
    bias = g.tensor(name=f"bias{i}", dim=list(att.bias), data_type=att.bias_type) \
        if att.bias else None
    if att.forward:
        o, stats = _forward(g, att, q, k, v, bias, dtype)
    else:
        o = tensor("o", data_type=F32 if "o" in att.wide else None)
        stats = g.tensor(name=f"stats{i}", dim=[att.batch, att.heads, att.sq, 1],
                         data_type=F32)
    grads = g.sdpa_backward(q, k, v, o, do, stats, attn_scale=att.scale, bias=bias,
                            use_deterministic_algorithm=att.deterministic,
                            compute_dbias=att.dbias, **att.masks())
    if att.dbias:
        grads[3].set_name(f"dbias{i}").set_output(True)
    for x, t in zip(GRADIENTS, grads):
        t.set_name(f"{x}{i}")
        if x in att.wide:
            t.set_data_type(F32)
        if x in att.interleaved:
            t.set_stride(att.strides(x))
        t.set_output(True)
    return grads


def random_attention_backward(dtype, configs):
    def build():
        g = dnnc.Graph(io_data_type=dtype)
        for i, att in enumerate(configs):
            add_backward(g, i, att, dtype)
        return g
    return build


def derive_forward(dtype, configs):
    """Case.derived of a graph of ``configs``: each input o and statistics
    the reference's forward of the drawn q, k and v (and bias)."""
    def derived(values):
        out = {}
        for i, att in enumerate(configs):
            if att.forward:
                continue
            g = dnnc.Graph(io_data_type=dtype)
            q, k, v = (g.tensor(name=x, dim=att.dims(x)) for x in "qkv")
            bias = g.tensor(name="bias", dim=list(att.bias), data_type=att.bias_type) \
                if att.bias else None
            o, stats = _forward(g, att, q, k, v, bias, dtype)
            o.set_name("o").set_output(True)
            stats.set_name("stats").set_output(True)
            names = ["q", "k", "v"] + (["bias"] if att.bias else [])
            ref = g.execute_reference({x: values[f"{x}{i}"] for x in names})
            out[f"o{i}"], out[f"stats{i}"] = ref["o"], ref["stats"]
        return out
    return derived


CASES = [
    Case(f"attention_backward_random_{j:02d}_{dtype.mlir}",
         random_attention_backward(dtype, configs), seed=SEED + j, rtol=RTOL[dtype.mlir],
         derived=derive_forward(dtype, configs))
    for j, (configs, dtype) in enumerate(zip(CONFIGS, [BF16, F16] * GRAPHS))
]
