"""tc-sm80's attention backward
(dnnc/codegen/gpu/tensorcore/sm80/flash_backward.py: a dQ kernel, then a
dK dV kernel, on mma.sync) on chosen problems, every kernel forced onto
tc-sm80's two kernels by a config override (``*=strategy:tc-sm80,fused:0``,
which the sm_80 heuristics rank first too; the fused kernel's family is
attention_backward_sm80_fused): built with ``--arch
sm_80`` they run as an A100 runs them, built for sm_90a an H100 or H200
runs the same kernels in place of tc-sm90's.

The problems are what the kernels' parts answer for: head dims 64, 80 and
128 (and Dv != D, 40 and 72 included: n8 tiles that do not pair, head
dims padded to 16); Sq and Skv that are no multiple of a tile and several
tiles each way; grouped heads (the dK dV kernel steps over the group's
query heads in turn); causal at either diagonal (bottom-right with Sq >
Skv: rows that see nothing, dq = 0 there), a sliding window; a bias of the
graph's type; tensors stored (B, S, H, D) and o and gradients in f32; the
deterministic flag (the kernels are deterministic either way). o and the
statistics are the reference forward's of the drawn q, k and v
(attention_backward_random's ``derive_forward``); tolerances as that
family's.

The padding graphs (per-batch lengths, attention_padding's configurations)
hold the backward alone (tc-sm80's forward takes no padding), o and the
statistics the reference forward's of the same lengths
(attention_padding's ``derive_forward``).
"""

from .attention_backward_random import (
    AttentionBackwardConfig as A, derive_forward, random_attention_backward,
)
from .attention_padding import PaddedConfig as P
from .attention_padding import _fixed, _lengths_of
from .attention_padding import derive_forward as derive_padded
from .case import BF16, F16, F32, RTOL, Case, graph_of, outputs

SEED = 20261206
CONFIG = "*=strategy:tc-sm80,fused:0"

# (name, problems): one graph each.
PROBLEMS = (
    ("d64", [A(2, 4, 2, 300, 333, 64, 64),
             A(1, 4, 1, 333, 300, 64, 64, causal=True),
             A(1, 8, 1, 77, 129, 64, 40)]),
    ("d80", [A(1, 4, 2, 200, 257, 80, 80, causal=True),
             A(1, 2, 2, 129, 64, 80, 72)]),
    ("d128", [A(1, 4, 2, 300, 333, 128, 128),
              A(1, 2, 1, 200, 400, 128, 128, causal=True)]),
    ("masks", [A(1, 2, 2, 300, 200, 128, 64, causal=True, bottom_right=True),
               A(1, 2, 1, 257, 300, 64, 64, causal=True, window=70),
               A(1, 1, 1, 100, 500, 128, 128, causal=True, bottom_right=True, window=33)]),
    ("bias", [A(1, 4, 2, 130, 150, 64, 64, bias=(1, 4, 130, 150)),
              A(2, 2, 1, 77, 100, 128, 128, causal=True, bias=(2, 1, 1, 100))]),
    ("layouts", [A(1, 4, 2, 130, 150, 128, 128, interleaved=("q", "k", "do", "dq", "dv"),
                   wide=("o", "dk")),
                 A(1, 8, 1, 64, 128, 64, 64, scale=0.3, wide=("dq",), deterministic=True),
                 A(1, 1, 1, 1, 1000, 128, 128),
                 A(1, 1, 1, 1000, 65, 64, 64, causal=True, bottom_right=True)]),
)

PADDED = (
    ("padding_d64", [P(3, 4, 2, 200, 150, 64, 64, "none", 0, (200, 77, 0), (150, 1, 90)),
                     P(2, 2, 1, 130, 300, 64, 64, "causal", 0, (130, 64), (300, 129))]),
    ("padding_d128", [P(2, 4, 2, 150, 200, 128, 128, "bottom_right", 0, (100, 150),
                        (200, 33)),
                      P(2, 2, 2, 300, 300, 80, 80, "window", 50, (257, 300), (300, 100))]),
)

def add_padded_backward(g, i, att):
    """sdpa_backward (dq<i>, dk<i>, dv<i>) of ``att`` from inputs q<i>,
    k<i>, v<i>, o_in<i>, stats_in<i>, do<i> and the lengths lq<i>, lkv<i>
    (the names attention_padding's ``derive_forward`` fills)."""
    q, k, v = (g.tensor(name=f"{x}{i}", dim=att.dims(x)) for x in "qkv")
    o_in = g.tensor(name=f"o_in{i}", dim=att.dims("o"))
    stats_in = g.tensor(name=f"stats_in{i}", dim=att.dims("stats"), data_type=F32)
    do = g.tensor(name=f"do{i}", dim=att.dims("o"))
    grads = g.sdpa_backward(q, k, v, o_in, do, stats_in, **att.masks(),
                            **_lengths_of(g, i, att))
    for name, t in zip(("dq", "dk", "dv"), grads):
        t.set_name(f"{name}{i}")
    outputs(*grads)


# bf16 for every graph, f16 for the head dims and one padding graph.
GRAPHS = [(p, BF16) for p in PROBLEMS] + [(p, F16) for p in PROBLEMS[:3]]

CASES = [
    Case(f"attention_backward_sm80_{name}_{dtype.mlir}",
         random_attention_backward(dtype, problems), seed=SEED + j, rtol=RTOL[dtype.mlir],
         derived=derive_forward(dtype, problems), config=CONFIG)
    for j, ((name, problems), dtype) in enumerate(GRAPHS)
] + [
    Case(f"attention_backward_sm80_{name}_{dtype.mlir}",
         graph_of(add_padded_backward, dtype, configs),
         seed=SEED + 100 + j, rtol=RTOL[dtype.mlir], fixed=_fixed(configs),
         derived=derive_padded(dtype, configs), config=CONFIG)
    for j, ((name, configs), dtype) in enumerate(zip(PADDED, [BF16, F16]))
]

__all__ = ["CASES", "PROBLEMS", "PADDED"]
