"""The fused attention backward (tc-sm90's one kernel,
dnnc/codegen/gpu/tensorcore/sm90/flash_backward_fused.py) on chosen
problems, each beside its deterministic twin (the same sizes with
``use_deterministic_algorithm``: tc-sm90's two kernels) in one graph, so
that a package checks both against the same reference.

The problems are what the fused kernel's parts answer for: D 128 (each
consumer warpgroup half of dQ's columns, the two meeting on dS) and D 64
(each its own kv rows' part of dQ, both added); several kv blocks adding
into one dQ row, and several query tiles a block steps over; Sq and Skv
that are no multiple of a tile (kv rows past Skv masked: their dS is
multiplied into dQ); grouped heads (a kv block steps over the group's
query heads); causal either alignment (bottom-right with Sq > Skv: rows
that see nothing, dq = 0 there), a sliding window; Dv != D; tensors
stored (B, S, H, D) and gradients in f32. o and the statistics are the
reference forward's of the drawn q, k and v (attention_backward_random's
``derive_forward``); tolerances as that family's.

``PERSISTENT``: the work units of the persistent blocks
(sm90/backward_units.py) on graphs of their own, each as the heuristics
configure it and with the config overrides that give the other forms
(``persistent:0``: a block a unit; ``split:1``: a grouped-query group's
heads walked by one unit): fewer units than SMs (7 kv tiles x 3 heads),
grouped heads 8:1 in parts with S no multiple of 128, and several rounds
with a short last one (300 causal units, longest first; 216 units head by
head; 288 units of a group in 2 parts).

``SUMMED``: D 64 with the config override ``staged:1`` (the two consumer
warpgroups sum their parts of a step's dQ in shared memory, each
reduce-adds one box of 32 columns), persistent and a block a unit:
non-causal and causal, Sq and Skv no multiple of a tile, grouped heads
(one unit and in parts), Dv 40 and 128, a window and bottom-right
alignment, many steps a unit, several rounds of units.
"""

from dataclasses import replace

from .attention_backward_random import (
    AttentionBackwardConfig as A, derive_forward, random_attention_backward,
)
from .case import BF16, F16, RTOL, Case

SEED = 20261130

# (name, problems): each graph holds its problems and their deterministic
# twins.
PROBLEMS = (
    ("d128", [A(1, 4, 2, 300, 333, 128, 128),
              A(1, 1, 1, 200, 400, 128, 128, causal=True)]),
    ("d64", [A(1, 4, 2, 333, 300, 64, 64, causal=True),
             A(1, 8, 1, 77, 129, 64, 40)]),
    ("masks", [A(1, 2, 2, 300, 200, 128, 64, bottom_right=True, causal=True),
               A(1, 2, 1, 257, 300, 64, 64, causal=True, window=70),
               A(1, 1, 1, 100, 500, 128, 128, causal=True, bottom_right=True, window=33)]),
    ("long", [A(1, 1, 1, 1, 1000, 128, 128),
              A(1, 1, 1, 1000, 65, 64, 64, causal=True, bottom_right=True)]),
    ("layouts", [A(1, 4, 2, 130, 150, 128, 128, interleaved=("q", "k", "do", "dq", "dv"),
                   wide=("o", "dk")),
                 A(1, 8, 1, 64, 128, 64, 64, scale=0.3, wide=("dq",))]),
)


def _with_twins(problems):
    return problems + [replace(p, deterministic=True) for p in problems]


# bf16 for every graph, f16 for the two head dims (the kernels differ by
# the type's name only).
GRAPHS = [(p, BF16) for p in PROBLEMS] + [(p, F16) for p in PROBLEMS[:2]]

CASES = [
    Case(f"attention_backward_fused_{name}_{dtype.mlir}",
         random_attention_backward(dtype, _with_twins(problems)), seed=SEED + j,
         rtol=RTOL[dtype.mlir], derived=derive_forward(dtype, _with_twins(problems)))
    for j, ((name, problems), dtype) in enumerate(GRAPHS)
]


# (name, problems, overrides besides the heuristics' config).
PERSISTENT = (
    ("uneven", [A(1, 3, 3, 500, 833, 64, 64),
                A(1, 3, 3, 833, 833, 128, 128, causal=True)], ("persistent:0",)),
    ("gqa", [A(1, 8, 1, 1000, 1000, 128, 128, causal=True),
             A(2, 16, 2, 700, 900, 64, 64, causal=True, bottom_right=True)],
     ("persistent:0", "split:1", "split:2")),
    ("rounds", [A(3, 10, 10, 1280, 1280, 64, 64, causal=True),
                A(2, 12, 12, 700, 1100, 128, 128),
                A(2, 32, 8, 1100, 1100, 64, 64, causal=True)], ("persistent:0",)),
)

CASES += [
    Case(f"attention_backward_fused_persistent_{name}"
         f"{'_' + override.replace(':', '') if override else ''}_bf16",
         random_attention_backward(BF16, _with_twins(problems)), seed=SEED + 100 + j,
         rtol=RTOL[BF16.mlir], derived=derive_forward(BF16, _with_twins(problems)),
         config=f"*={override}" if override else None)
    for j, (name, problems, overrides) in enumerate(PERSISTENT)
    for override in (None,) + overrides
]

# (name, problems): D 64 graphs run with the consumers' dQ parts summed in
# shared memory (staged:1), persistent and a block a unit.
SUMMED = (
    ("plain", [A(2, 4, 4, 300, 333, 64, 64),
               A(1, 4, 2, 333, 300, 64, 64, causal=True),
               A(1, 8, 1, 77, 129, 64, 40)]),
    ("masks", [A(1, 2, 2, 300, 200, 64, 128, bottom_right=True, causal=True),
               A(1, 2, 1, 257, 300, 64, 64, causal=True, window=70),
               A(1, 1, 1, 1000, 65, 64, 64, causal=True, bottom_right=True),
               A(1, 1, 1, 1, 1000, 64, 64)]),
    ("rounds", [A(3, 10, 10, 1280, 1280, 64, 64, causal=True),
                A(2, 32, 8, 1100, 1100, 64, 64, causal=True),
                A(2, 16, 2, 700, 900, 64, 64, causal=True, bottom_right=True)]),
)

CASES += [
    Case(f"attention_backward_fused_summed_{name}{'_' + extra.replace(':', '') if extra else ''}"
         "_bf16",
         random_attention_backward(BF16, _with_twins(problems)), seed=SEED + 200 + j,
         rtol=RTOL[BF16.mlir], derived=derive_forward(BF16, _with_twins(problems)),
         config="*=staged:1" + (f",{extra}" if extra else ""))
    for j, (name, problems) in enumerate(SUMMED)
    for extra in (None, "persistent:0")
]
