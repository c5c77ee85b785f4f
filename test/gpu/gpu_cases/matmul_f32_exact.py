"""f32 matmuls multiplied exactly in f32 (the default compute type of an
f32 matmul), on simt-gemm's FFMA kernel (dnnc/codegen/gpu/simt_gemm/): 48
random problems drawn from a fixed seed, eight to a graph, and a few
chosen ones with each tile and a K split forced.

M, N and K are drawn from sizes that are multiples of nothing (1, 7, 127,
129, 1000...) and a few that are (64, 256, 512); a third of the draws are
batched (2-4, one operand broadcast now and then), A is stored K x M and
B N x K each a third of the time (graph inputs declared with transposed
strides: the kernel reads them as they lie), and half carry an epilogue
(bias, bias + relu, bias + gelu, a residual). The outputs are compared
against the float64 reference with f32's tolerance of a K-term sum
(case.comparison), NaN-poisoned first by the runner.
"""

import math

import numpy as np

import dnnc

from .case import F32, Case, contracted, outputs

SEED = 20261127
GRAPHS = 6
PER_GRAPH = 8
SIZES = (1, 7, 31, 64, 127, 129, 200, 256, 333, 512, 1000)
K_SIZES = (1, 7, 8, 100, 127, 129, 512, 1000, 2048, 4099)
EPILOGUES = (None, None, None, "bias", "bias_relu", "bias_gelu", "residual")
BUDGET = 1_500_000      # elements of A, B and the output of one draw


def _draw(rng):
    """(batch, broadcast side, M, N, K, A stored K x M, B stored N x K,
    epilogue) within BUDGET."""
    while True:
        m, n = int(rng.choice(SIZES)), int(rng.choice(SIZES))
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
    strides = [rows * cols] * len(lead) + [1, rows]
    return dims, strides


def _add(g, i, draw):
    batch, broadcast, m, n, k, a_t, b_t, epilogue = draw
    a_dims, a_strides = _dims(batch, m, k, a_t, broadcast == "a")
    b_dims, b_strides = _dims(batch, k, n, b_t, broadcast == "b")
    a = g.tensor(name=f"a{i}", dim=a_dims, **({"stride": a_strides} if a_strides else {}))
    b = g.tensor(name=f"b{i}", dim=b_dims, **({"stride": b_strides} if b_strides else {}))
    y = g.matmul(a, b)
    if epilogue == "residual":
        res = g.tensor(name=f"r{i}", dim=([batch] if batch > 1 else []) + [m, n])
        y = g.add(y, res)
    elif epilogue:
        bias = g.tensor(name=f"bias{i}", dim=[1, n])
        y = g.add(y, bias)
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


def random_graph(index):
    def build():
        g = dnnc.Graph(io_data_type=F32)
        chosen = draws()[index * PER_GRAPH:(index + 1) * PER_GRAPH]
        outputs(*(_add(g, i, d) for i, d in enumerate(chosen)))
        return g
    return build


# Chosen problems for the forced configs: odd M, N and K, a transposed
# operand, a batch with a broadcast B, an epilogue.
CHOSEN = ((1, None, 129, 1000, 1000, True, False, "bias_relu"),
          (2, "b", 127, 7, 4096, False, True, None),
          (3, None, 200, 129, 127, True, True, "residual"),
          (1, None, 1, 333, 2048, False, False, "bias"))


def chosen_graph():
    g = dnnc.Graph(io_data_type=F32)
    outputs(*(_add(g, i, d) for i, d in enumerate(CHOSEN)))
    return g


# The tiles the heuristics rank (heuristics/simt_gemm.py), each forced on
# every kernel, and a K split of each width.
FORCED = {
    "128x128": "*=tile:128x128x8,block:256",
    "128x64": "*=tile:128x64x8,block:128",
    "64x64": "*=tile:64x64x8,block:128",
    "64x64_64_threads": "*=tile:64x64x8,block:64",
    "32x32": "*=tile:32x32x8,block:64",
    "128x128_split5": "*=tile:128x128x8,block:256,split:5",
    "32x32_split16": "*=tile:32x32x8,block:64,split:16",
}

CASES = [
    *(Case(f"matmul_f32_exact_random_{i}", random_graph(i), seed=SEED + i)
      for i in range(GRAPHS)),
    *(Case(f"matmul_f32_exact_{name}", chosen_graph, config=config)
      for name, config in FORCED.items()),
]

assert math.prod((GRAPHS, PER_GRAPH)) == len(draws())
