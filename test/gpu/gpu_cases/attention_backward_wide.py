"""The attention backward for head dims over 128 (tc-sm90's two kernels:
flash_backward.DqKernel with narrower steps, then
flash_backward_wide.WideDkvKernel, dK in one consumer warpgroup and dV in
the other) on chosen problems.

The problems are what the wide kernels answer for: D 160, 192 and 256 and
DeepSeek's 192 / 128 (d_v below d_qk), and Dv above D; causal (top-left
and bottom-right) and not, a sliding window; grouped-query heads (a kv
block steps over its group's query heads, dK and dV summed over them); an
additive bias, broadcast or whole; Sq and Skv that are no multiple of the
kernels' tiles (64 kv rows a dK dV block, 128 query rows a dQ block, and
steps of 16 to 64 rows); B 1 to 4; tensors stored (B, S, H, D) and
gradients in f32; one graph of longer sequences (several blocks a head,
many steps a block). The backward of these head dims is the deterministic
one either way (no fused kernel takes them), so no problem is repeated with
``use_deterministic_algorithm``: the runner's second call of each package
checks that it writes the same bytes again.

One more graph holds ragged (packed, THD) problems of these head dims,
built as attention_ragged's (each entry's rows from its offset, gaps
between entries, rows no entry owns left NaN), with their forwards.

o and the statistics are the reference forward's of the drawn q, k and v
(attention_backward_random's ``derive_forward``); tolerances as that
family's (the output type's rtol times the largest output): the kernels
round P and dS to the input type as the narrower head dims' do. Emulated in
NumPy (bf16 inputs, o rounded, P from the f32 statistics, P and dS rounded,
float64 sums) on D 256 and 192 / 128 problems of these sizes, causal and
not, every gradient stays within 0.2 of its tolerance, as at D 128.
"""

import numpy as np

from . import attention_ragged as ragged
from .attention_backward_random import (
    AttentionBackwardConfig as A, derive_forward, random_attention_backward,
)
from .case import BF16, F16, RTOL, Case

SEED = 20261201

# (name, problems).
PROBLEMS = (
    ("d256", [A(1, 4, 2, 300, 333, 256, 256),
              A(1, 2, 1, 200, 130, 256, 256, causal=True)]),
    ("d192_dv128", [A(1, 4, 4, 257, 300, 192, 128, causal=True),
                    A(4, 2, 1, 100, 77, 192, 128)]),
    ("d192", [A(3, 2, 2, 133, 200, 192, 192),
              A(1, 8, 2, 130, 260, 192, 192, causal=True, bottom_right=True)]),
    ("d160", [A(2, 4, 1, 129, 190, 160, 160, causal=True),
              A(1, 2, 2, 65, 300, 160, 160)]),
    ("dv_wider", [A(1, 2, 1, 150, 100, 64, 256),
                  A(2, 2, 2, 77, 140, 136, 200, causal=True)]),
    ("bias", [A(1, 4, 2, 150, 170, 256, 256, bias=(1, 4, 150, 170)),
              A(2, 2, 2, 100, 120, 192, 128, bias=(2, 1, 1, 120), causal=True),
              A(1, 2, 1, 90, 64, 160, 160, bias=(1, 1, 90, 64))]),
    ("masks", [A(1, 2, 2, 300, 200, 256, 256, causal=True, window=70),
               A(1, 2, 1, 100, 333, 192, 128, causal=True, bottom_right=True, window=40)]),
    ("layouts", [A(1, 4, 2, 130, 150, 256, 256, interleaved=("q", "k", "do", "dq", "dv"),
                   wide=("o", "dk")),
                 A(1, 2, 1, 64, 128, 192, 128, scale=0.3, wide=("dq", "dv"))]),
    ("long", [A(1, 1, 1, 1000, 1000, 256, 256, causal=True),
              A(1, 1, 1, 700, 900, 192, 128)]),
)


# bf16 for every graph, f16 for the first three (the kernels differ by the
# type's name only).
GRAPHS = [(p, BF16) for p in PROBLEMS] + [(p, F16) for p in PROBLEMS[:3]]

# (batch, heads, kv heads, Sq, Skv, D, mask) of the ragged graph.
RAGGED = ((2, 4, 2, 200, 300, 256, "causal"), (3, 2, 1, 77, 130, 192, "bottom_right"),
          (1, 2, 2, 150, 64, 160, "none"))


def _ragged_configs(seed):
    """RAGGED as attention_ragged's configurations: each entry's lengths and
    packed rows drawn as that family draws them."""
    rng = np.random.default_rng(seed)
    out = []
    for batch, heads, kv_heads, sq, skv, d, mask in RAGGED:
        lq, lkv = ragged._lengths(rng, batch, sq), ragged._lengths(rng, batch, skv)
        out.append(ragged.RaggedConfig(batch, heads, kv_heads, sq, skv, d, mask, lq, lkv,
                                       ragged._starts(rng, lq, sq),
                                       ragged._starts(rng, lkv, skv)))
    return out


RAGGED_CONFIGS = _ragged_configs(SEED)

CASES = [
    Case(f"attention_backward_wide_{name}_{dtype.mlir}",
         random_attention_backward(dtype, problems), seed=SEED + j, rtol=RTOL[dtype.mlir],
         derived=derive_forward(dtype, problems))
    for j, ((name, problems), dtype) in enumerate(GRAPHS)
] + [
    Case("attention_backward_wide_ragged_bf16", ragged.ragged_attention(BF16, RAGGED_CONFIGS),
         seed=SEED + 100, rtol=RTOL["bf16"], fixed=ragged._fixed(RAGGED_CONFIGS),
         derived=ragged.derive_forward(BF16, RAGGED_CONFIGS),
         unspecified=ragged._unspecified(RAGGED_CONFIGS)),
]
