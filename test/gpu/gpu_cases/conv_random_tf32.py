"""Random tf32 convolutions: 520 forward convolutions, 520 data gradients
and 520 filter gradients of f32 tensors, drawn by conv_random's drawing
(``draw``, the same geometry, channels, layouts, groups and epilogues) from
seeds of their own, ten to a graph, each with inputs of its own.

The graphs name no compute type: f32 convolutions multiply as tf32 by
default (dnnc/compute_types.py), so each case checks that rule end to end
too (the NumPy reference reads the same ``compute_type = tf32`` from the
IR and rounds both operands to tf32, to nearest). What tc-sm90 takes runs
there (the forward as the bf16 one; the data gradient with its filter
copied K-major, strided ones by stride phase; the filter gradient as dwᵀ =
im2col(x)ᵀ dy, x through registers, dy copied K-major:
sm90/tf32_conv.py); the rest falls back to simt-generic, which rounds as
the reference does.

Tolerance: each output is ``contracted`` over the products it sums, so
its absolute term scales with √(products) (C / groups x R x S for the
forward, K / groups x R x S for the data gradient, N x P x Q for the filter
gradient) and the operands' sizes (case.comparison), with ``RTOL``, tf32's
precision as tc-sm90 meets it: wgmma reads the top 19 bits of each
operand (toward zero) where the reference rounds to nearest, so each
operand may differ from the reference's by one tf32 ulp, 2^-10 relative,
and a product by two (about 2e-3).

The draws are within ``BUDGET`` elements a convolution (f32 and its
float64 reference take four and eight bytes an element), a quarter of
conv_random's, so that every package's data stays small.
"""

from .case import F32, Case
from .conv_random import GRAPHS, PER_GRAPH, SEED, draw, random_convs

# tf32's precision against a reference that rounds to nearest (above).
RTOL = 2e-3
BUDGET = 10000
DIRECTIONS = ("fprop", "dgrad", "wgrad")
CONFIGS = {d: draw(SEED + 7000 + i, direction=d, budget=BUDGET)
           for i, d in enumerate(DIRECTIONS)}

CASES = [
    Case(f"conv_random_tf32_{direction}_{j:02d}",
         random_convs(F32, CONFIGS[direction][j * PER_GRAPH:(j + 1) * PER_GRAPH], direction),
         positive=tuple(f"s{i}" for i in range(PER_GRAPH)) if direction == "fprop" else (),
         seed=SEED + 7000 + 100 * i + j, rtol=RTOL)
    for i, direction in enumerate(DIRECTIONS)
    for j in range(GRAPHS)
]
