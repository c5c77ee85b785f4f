"""The attention backward's bias gradient (``compute_dbias``: cuDNN's dBias)
on tc-sm90's two kernels (dnnc/codegen/gpu/tensorcore/attention_dbias.py:
the dQ kernel writes dS; a second launch sums f32 partials over the dims
the bias broadcasts on), on chosen problems; and on tc-sm80's (``SM80``,
forced by the config override ``*=strategy:tc-sm80``, as
attention_backward_sm80 forces them: built for sm_90a an H100 or H200 runs
them in place of tc-sm90's).

The problems are what the parts answer for: a bias one a head (cuDNN's
``[1, H, Sq, Skv]``, summed over the batch), one a batch entry (``[B, 1,
Sq, Skv]``, summed over the heads), one for all (``[1, 1, Sq, Skv]``) and
one row a batch entry (``[B, 1, 1, Skv]``, summed over heads and query
rows); a whole bias ``[B, H, Sq, Skv]`` of whole dQ blocks and steps
(written by the dQ kernel where it lies) and of other sizes (through the
workspace, converted); grouped-query heads; causal at either diagonal and
not, a sliding window (the dQ kernel writes zeros over the kv tiles its
rows skip; with Sq > Skv bottom-right the first rows see nothing: dS = 0
there); Sq and Skv that are no multiple of a tile, and 1; head dims 64 to
256 (flash_backward_wide's narrower dQ steps) and 192 / 128; an f32 bias
of a bf16 graph (an f32 dbias); o and the statistics from an sdpa forward
in the graph; gradients stored (B, S, H, D) and in f32; padding masks
(per-batch lengths, some 0). The dbias is
deterministic (one thread sums each element in a fixed order): the
runner's second call of each package checks that it writes the same bytes.

o and the statistics are the reference forward's of the drawn q, k, v and
bias (attention_backward_random's ``derive_forward``). Tolerances as that
family's (the output type's rtol times the largest output): dbias is dS,
which the kernel forms in f32 from P (f32, from the statistics) and dP (f32
sums of products of the inputs), summed in f32 and rounded once to the
bias's type, so each element is off by about one rounding of that type of
the largest dS.
"""

import dnnc

from .attention_backward_random import (
    AttentionBackwardConfig, derive_forward, random_attention_backward,
)
from .attention_padding import PaddedConfig as P
from .attention_padding import _fixed, _lengths_of
from .case import BF16, F16, F32, RTOL, Case, graph_of, outputs

SEED = 20261210


def A(*args, **kw):
    """An AttentionBackwardConfig that returns dbias."""
    return AttentionBackwardConfig(*args, dbias=True, **kw)


# (name, problems): one graph each.
PROBLEMS = (
    ("heads", [A(2, 4, 2, 300, 333, 64, 64, bias=(1, 4, 300, 333)),
               A(3, 2, 2, 129, 77, 128, 128, causal=True, bias=(1, 2, 129, 77)),
               A(3, 2, 1, 1, 77, 64, 64, bias=(1, 2, 1, 77))]),
    ("batch", [A(2, 8, 2, 100, 257, 64, 64, causal=True, bias=(2, 1, 100, 257)),
               A(4, 2, 2, 77, 64, 96, 96, bias=(4, 1, 77, 64)),
               A(2, 4, 1, 150, 170, 80, 80, causal=True, bias=(1, 1, 150, 170)),
               A(2, 2, 2, 64, 300, 64, 64, bias=(2, 1, 1, 300))]),
    ("whole", [A(2, 2, 1, 256, 192, 64, 64, causal=True, bias=(2, 2, 256, 192)),
               A(1, 4, 4, 200, 150, 128, 128, bias=(1, 4, 200, 150)),
               A(2, 2, 2, 7, 7, 64, 64, causal=True, bias=(2, 2, 7, 7))]),
    ("masks", [A(1, 2, 2, 300, 200, 64, 64, causal=True, bottom_right=True,
                 bias=(1, 2, 300, 200)),
               A(2, 2, 1, 257, 300, 128, 128, causal=True, window=70, bias=(1, 2, 257, 300))]),
    ("wide", [A(2, 2, 1, 150, 170, 256, 256, causal=True, bias=(1, 2, 150, 170)),
              A(1, 2, 2, 128, 128, 192, 128, bias=(1, 2, 128, 128))]),
    ("layouts", [A(2, 4, 2, 130, 150, 64, 64, forward=True, bias=(1, 4, 130, 150)),
                 A(1, 4, 2, 130, 150, 128, 128, interleaved=("q", "k", "do", "dq"),
                   wide=("o", "dk"), bias=(1, 4, 130, 150)),
                 A(2, 2, 2, 128, 256, 64, 64, causal=True, bias=(1, 2, 128, 256),
                   bias_type=F32),
                 A(1, 2, 1, 128, 128, 128, 128, bias=(1, 2, 128, 128), bias_type=F32)]),
    ("long", [A(1, 2, 1, 1000, 700, 64, 64, causal=True, bias=(1, 2, 1000, 700))]),
)

# tc-sm80's dQ kernel (128 query rows a block, 64 kv rows a step): head
# dims up to 128; a bias one a head, one a batch entry, whole of whole
# blocks and steps (written by the dQ kernel) and of other sizes; masks.
SM80 = (
    ("sm80", [A(2, 4, 2, 300, 333, 64, 64, bias=(1, 4, 300, 333)),
              A(2, 4, 2, 129, 200, 128, 128, causal=True, bias=(2, 1, 129, 200)),
              A(2, 2, 1, 256, 192, 64, 64, causal=True, bias=(2, 2, 256, 192)),
              A(1, 2, 2, 100, 77, 80, 80, causal=True, bottom_right=True, bias=(1, 2, 100, 77)),
              A(1, 2, 1, 200, 300, 96, 96, causal=True, window=50, bias=(1, 2, 200, 300))]),
)
SM80_CONFIG = "*=strategy:tc-sm80"

# Padding masks (per-batch lengths, attention_padding's configurations)
# with a bias: (config, the bias's dims). Entries of Lq = 0 (blocks of no
# step: all zeros), Lkv past a tile, a whole bias of whole blocks (the dQ
# kernel writes it), one a head, one a batch entry.
PADDED = (
    (P(3, 4, 2, 200, 150, 64, 64, "none", 0, (200, 77, 0), (150, 1, 90)), (1, 4, 200, 150)),
    (P(2, 2, 1, 128, 128, 128, 128, "causal", 0, (128, 5), (100, 128)), (2, 2, 128, 128)),
    (P(2, 2, 2, 130, 300, 64, 64, "bottom_right", 0, (130, 64), (300, 129)), (2, 1, 130, 300)),
)


def _add_padded(g, i, config):
    """sdpa_backward with a bias and dbias (dq<i>, dk<i>, dv<i>, dbias<i>)
    of a padded problem, from inputs q<i>, k<i>, v<i>, o_in<i>,
    stats_in<i>, do<i>, bias<i> and the lengths lq<i>, lkv<i>."""
    att, dims = config
    q, k, v = (g.tensor(name=f"{x}{i}", dim=att.dims(x)) for x in "qkv")
    bias = g.tensor(name=f"bias{i}", dim=list(dims))
    o_in = g.tensor(name=f"o_in{i}", dim=att.dims("o"))
    stats_in = g.tensor(name=f"stats_in{i}", dim=att.dims("stats"), data_type=F32)
    do = g.tensor(name=f"do{i}", dim=att.dims("o"))
    grads = g.sdpa_backward(q, k, v, o_in, do, stats_in, bias=bias, compute_dbias=True,
                            **att.masks(), **_lengths_of(g, i, att))
    for name, t in zip(("dq", "dk", "dv", "dbias"), grads):
        t.set_name(f"{name}{i}")
    outputs(*grads)


def _derive_padded(dtype, configs):
    """Case.derived: each o_in and stats_in the reference forward's of the
    drawn q, k, v, bias and the lengths."""
    def derived(values):
        out = {}
        for i, (att, dims) in enumerate(configs):
            g = dnnc.Graph(io_data_type=dtype)
            q, k, v = (g.tensor(name=x, dim=att.dims(x)) for x in "qkv")
            bias = g.tensor(name="bias", dim=list(dims))
            o, stats = g.sdpa(q, k, v, bias=bias, generate_stats=True, **att.masks(),
                              **_lengths_of(g, "", att))
            o.set_name("o").set_output(True)
            stats.set_name("stats").set_output(True)
            ref = g.execute_reference({x: values[f"{x}{i}"]
                                       for x in ("q", "k", "v", "bias", "lq", "lkv")})
            out[f"o_in{i}"], out[f"stats_in{i}"] = ref["o"], ref["stats"]
        return out
    return derived

# bf16 for every graph, f16 for the first three; tc-sm80's in both.
GRAPHS = [(p, BF16) for p in PROBLEMS] + [(p, F16) for p in PROBLEMS[:3]]
SM80_GRAPHS = [(p, dtype) for p in SM80 for dtype in (BF16, F16)]

CASES = [
    Case(f"attention_backward_dbias_{name}_{dtype.mlir}",
         random_attention_backward(dtype, problems), seed=SEED + j, rtol=RTOL[dtype.mlir],
         derived=derive_forward(dtype, problems))
    for j, ((name, problems), dtype) in enumerate(GRAPHS)
] + [
    Case(f"attention_backward_dbias_{name}_{dtype.mlir}",
         random_attention_backward(dtype, problems), seed=SEED + 100 + j,
         rtol=RTOL[dtype.mlir], derived=derive_forward(dtype, problems), config=SM80_CONFIG)
    for j, ((name, problems), dtype) in enumerate(SM80_GRAPHS)
] + [
    Case(f"attention_backward_dbias_padding_{dtype.mlir}", graph_of(_add_padded, dtype, PADDED),
         seed=SEED + 200 + j, rtol=RTOL[dtype.mlir],
         fixed=_fixed([att for att, _ in PADDED]), derived=_derive_padded(dtype, PADDED))
    for j, dtype in enumerate((BF16, F16))
]
