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

o and the statistics are the reference forward's of the drawn q, k and v
(attention_backward_random's ``derive_forward``); tolerances as that
family's (the output type's rtol times the largest output): the kernels
round P and dS to the input type as the narrower head dims' do. Emulated in
NumPy (bf16 inputs, o rounded, P from the f32 statistics, P and dS rounded,
float64 sums) on D 256 and 192 / 128 problems of these sizes, causal and
not, every gradient stays within 0.2 of its tolerance, as at D 128.
"""

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

CASES = [
    Case(f"attention_backward_wide_{name}_{dtype.mlir}",
         random_attention_backward(dtype, problems), seed=SEED + j, rtol=RTOL[dtype.mlir],
         derived=derive_forward(dtype, problems))
    for j, ((name, problems), dtype) in enumerate(GRAPHS)
]
