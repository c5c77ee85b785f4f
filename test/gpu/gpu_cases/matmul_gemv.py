"""Matmuls whose M or N is at most 8 (GEMVs and batches of them), on
simt-gemv (dnnc/codegen/gpu/simt_gemv/): 64 random problems drawn from a
fixed seed, eight to a graph, in each type simt-gemv takes (f32 exact,
f32 as tf32, f16, bf16); issue 33's shapes; and chosen problems with the
kernel's other parameters forced (the threads sharing a column's K, the
load width, the loads in flight).

The small side is drawn from 1..8 and is M or N; the long side and K from
sizes that are multiples of nothing (1, 7, 127, 129, 1000, 4099) and some
that are (64, 512, 4096); a third of the draws are batched (2-4, one
operand broadcast now and then); A is stored K x M and B N x K each a
third of the time (the long operand then K-major or MN-major: both of the
kernel's mappings); half carry an epilogue (bias, bias + relu, bias +
gelu, a residual). Outputs are compared with the output type's tolerance
of a K-term sum (case.comparison), NaN-poisoned first by the runner; tf32
with the looser tolerance the other tf32 cases take.
"""

import numpy as np

import dnnc

from .case import BF16, F16, F32, Case, contracted, outputs

SEED = 20261128
GRAPHS = 8
PER_GRAPH = 8
SMALL = (1, 2, 3, 4, 5, 7, 8)
LONG = (1, 7, 64, 127, 129, 512, 1000, 4096)
K_SIZES = (1, 7, 8, 64, 127, 129, 1000, 4099)
EPILOGUES = (None, None, None, "bias", "bias_relu", "bias_gelu", "residual")
BUDGET = 1_500_000      # elements of A, B and the output of one draw
# (name, io type, compute type) of each graph, in turn.
TYPES = (("f32", F32, None), ("tf32", F32, "tf32"), ("f16", F16, None), ("bf16", BF16, None))
TF32_RTOL = 2e-3


def _draw(rng):
    """(batch, broadcast side, M, N, K, A stored K x M, B stored N x K,
    epilogue) within BUDGET, M or N drawn from SMALL."""
    while True:
        small, long = int(rng.choice(SMALL)), int(rng.choice(LONG))
        m, n = (small, long) if rng.random() < 0.5 else (long, small)
        k = int(rng.choice(K_SIZES))
        batch = int(rng.integers(2, 5)) if rng.random() < 1 / 3 else 1
        broadcast = str(rng.choice(("a", "b"))) if batch > 1 and rng.random() < 0.3 else None
        if batch * (m * k + k * n + m * n) > BUDGET:
            continue
        return (batch, broadcast, m, n, k, bool(rng.random() < 1 / 3),
                bool(rng.random() < 1 / 3), EPILOGUES[int(rng.integers(len(EPILOGUES)))])


def _dims(batch, rows, cols, transposed, broadcast):
    """(dims, strides or None) of an operand read as [batch,] rows x cols,
    stored cols x rows when ``transposed``; one batch when ``broadcast``."""
    lead = [] if batch == 1 else [1 if broadcast else batch]
    dims = lead + [rows, cols]
    if not transposed:
        return dims, None
    return dims, [rows * cols] * len(lead) + [1, rows]


def _add(g, i, draw, compute):
    batch, broadcast, m, n, k, a_t, b_t, epilogue = draw
    a_dims, a_strides = _dims(batch, m, k, a_t, broadcast == "a")
    b_dims, b_strides = _dims(batch, k, n, b_t, broadcast == "b")
    a = g.tensor(name=f"a{i}", dim=a_dims, **({"stride": a_strides} if a_strides else {}))
    b = g.tensor(name=f"b{i}", dim=b_dims, **({"stride": b_strides} if b_strides else {}))
    y = g.matmul(a, b, **({"compute_data_type": compute} if compute else {}))
    if epilogue == "residual":
        y = g.add(y, g.tensor(name=f"r{i}", dim=([batch] if batch > 1 else []) + [m, n]))
    elif epilogue:
        y = g.add(y, g.tensor(name=f"bias{i}", dim=[1, n]))
        if epilogue == "bias_relu":
            y = g.relu(y)
        elif epilogue == "bias_gelu":
            y = g.gelu(y)
    name = f"mm{i}_{'x'.join(map(str, (batch, m, n, k)))}" + \
        ("_at" if a_t else "") + ("_bt" if b_t else "") + (f"_{epilogue}" if epilogue else "")
    return contracted(y.set_name(name), a, b, k)


def draws():
    """Every random problem, in graph order."""
    rng = np.random.default_rng(SEED)
    return [_draw(rng) for _ in range(GRAPHS * PER_GRAPH)]


def _graph(problems, dtype, compute):
    def build():
        g = dnnc.Graph(io_data_type=dtype, compute_data_type="f32")
        outputs(*(_add(g, i, d, compute) for i, d in enumerate(problems)))
        return g
    return build


def random_cases():
    out = []
    everything = draws()
    for index in range(GRAPHS):
        name, dtype, compute = TYPES[index % len(TYPES)]
        chosen = everything[index * PER_GRAPH:(index + 1) * PER_GRAPH]
        out.append(Case(f"matmul_gemv_random_{index}_{name}", _graph(chosen, dtype, compute),
                        seed=SEED + index, rtol=TF32_RTOL if compute == "tf32" else None))
    return out


# Issue 33's shapes ([2, 1, 129] @ [2, 129, 127]; [3, 1, 127]ᵀ @ [3, 127,
# 1000], A stored K x M; [1, 127, 4096] @ [2, 4096, 7]ᵀ, B stored N x K)
# and an M = 1 layer ([1, 1000] @ [1000, 1024]).
ISSUE = ((2, None, 1, 127, 129, False, False, None),
         (3, None, 1, 1000, 127, True, False, "bias"),
         (2, "a", 127, 7, 4096, False, True, None),
         (1, None, 1, 1024, 1000, False, False, "bias_relu"))

# Chosen problems for the forced parameters: K-major and MN-major long
# operands, odd K, odd L, a batch, an epilogue.
CHOSEN = ((1, None, 3, 1000, 129, False, False, "bias_relu"),
          (2, "b", 127, 5, 1000, False, True, None),
          (1, None, 1, 129, 4099, False, False, "residual"),
          (2, None, 200, 8, 64, True, False, "bias"))

# Each mapping's parameters forced on every kernel (checked against the
# layout by dnn-map-simt-gemv, which chooses again where one does not fit).
FORCED = {
    "split1": "*=strategy:simt-gemv,block:128,split:1,unroll:8",
    "split4_unroll1": "*=strategy:simt-gemv,block:128,split:4,unroll:1",
    "split32_block1024": "*=strategy:simt-gemv,block:1024,split:32,unroll:4",
    "split16_vector2": "*=strategy:simt-gemv,block:256,split:16,vector:2,unroll:3",
}

CASES = [
    *random_cases(),
    *(Case(f"matmul_gemv_issue33_{name}", _graph(ISSUE, dtype, compute), seed=SEED + 100,
           rtol=TF32_RTOL if compute == "tf32" else None)
      for name, dtype, compute in TYPES),
    *(Case(f"matmul_gemv_{name}", _graph(CHOSEN, F32, None), seed=SEED + 200, config=config)
      for name, config in FORCED.items()),
]
