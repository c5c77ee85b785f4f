"""tc-sm80's fused attention backward
(dnnc/codegen/gpu/tensorcore/sm80/flash_backward_fused.py: the preprocess,
one kernel that adds dQ into an f32 workspace by red.global.add.f32, the
conversion) on attention_backward_sm80's problems, every kernel forced onto
it by a config override (``*=strategy:tc-sm80,fused:1``): built with
``--arch sm_80`` they run as an A100 runs them, built for sm_90a an H100
or H200 runs them in place of tc-sm90's.

Where the fused kernel does not take a problem's head dims (D 80 over 32
query rows a step: 20 columns a warp) the kernel function falls back to
the two kernels, saying so in its reason; those cases test the two kernels
again. The deterministic graph is summed in no fixed order here (the
override wins over the flag), within the same tolerances. Tolerances as
attention_backward_sm80's.
"""

from .attention_backward_random import derive_forward, random_attention_backward
from .attention_backward_sm80 import PADDED, PROBLEMS, SEED, add_padded_backward
from .attention_padding import _fixed
from .attention_padding import derive_forward as derive_padded
from .case import BF16, F16, RTOL, Case, graph_of

CONFIG = "*=strategy:tc-sm80,fused:1"

# bf16 for every graph, f16 for the head dims.
GRAPHS = [(p, BF16) for p in PROBLEMS] + [(p, F16) for p in PROBLEMS[:3]]

CASES = [
    Case(f"attention_backward_sm80_fused_{name}_{dtype.mlir}",
         random_attention_backward(dtype, problems), seed=SEED + 200 + j,
         rtol=RTOL[dtype.mlir], derived=derive_forward(dtype, problems), config=CONFIG)
    for j, ((name, problems), dtype) in enumerate(GRAPHS)
] + [
    Case(f"attention_backward_sm80_fused_{name}_{dtype.mlir}",
         graph_of(add_padded_backward, dtype, configs),
         seed=SEED + 300 + j, rtol=RTOL[dtype.mlir], fixed=_fixed(configs),
         derived=derive_padded(dtype, configs), config=CONFIG)
    for j, ((name, configs), dtype) in enumerate(zip(PADDED, [BF16, F16]))
]

__all__ = ["CASES"]
