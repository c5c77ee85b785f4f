"""Rules for simt-gemm: an f32 matmul multiplied exactly in f32 (its compute
type f32, the default of an f32 matmul), which the tensor cores do not take
(they round f32 to tf32), runs as a register-blocked FFMA GEMM
(dnnc/codegen/gpu/simt_gemm/).

The tile is the widest of TILES whose blocks (tiles x batch) fill the SMs
once, else the narrowest: a wider tile reads fewer operand bytes per FFMA
(128 x 128 over 256 threads: 8 x 8 accumulators a thread, 16 shared-memory
floats per 64 FFMAs), but a grid of fewer blocks than SMs leaves SMs idle.
A thread waits for each K step's global loads (one step is in flight under
the FFMAs of the one before), so a grid of few warps is bound by that
latency, not by the FFMAs: where the grid has fewer than WARPS_PER_SM warps
an SM, K is split over as many blocks as bring it there (each split at
least MIN_SPLIT_STEPS K steps, at most MAX_SPLIT splits), their partials
summed in a fixed order: up to LAST_ARRIVAL_SPLITS by the last block of a
tile to arrive, in the GEMM's launch (a second launch costs 2-3 us, as
much as issue 33's small problems take), more by a second launch, which
spreads the sum over every SM. The others follow, for
autotuning, and then simt-generic. These rules are reasoned, not yet
measured: bench/cases.py's "f32 exact" cases time them against cuBLAS.
"""

from dnnc.codegen.gpu.simt_gemm.support import LAST_ARRIVAL_SPLITS
from dnnc.heuristics.config import Config

# (BM, BN, threads), widest first: 8 x 8 accumulators a thread for the two
# wide tiles, 8 x 4 and 4 x 4 for the narrow ones.
TILES = ((128, 128, 256), (128, 64, 128), (64, 64, 128), (32, 32, 64))
BK = 8
# A split runs at least this many K steps of BK (a shorter one is mostly
# its prologue and its partial's round trip), at most MAX_SPLIT splits.
MIN_SPLIT_STEPS, MAX_SPLIT = 16, 16
# Warps an SM should have from the grid for the K steps' load latency to
# hide under other warps' FFMAs.
WARPS_PER_SM = 8


def _ceil(a, b):
    return -(-a // b)


def split_of(blocks, threads, steps, sms):
    """Blocks to share each tile's K steps: 1 when ``blocks`` of ``threads``
    give the SMs WARPS_PER_SM warps each, else as many as bring the grid
    there, each running at least MIN_SPLIT_STEPS steps, as equal runs of
    steps make them."""
    warps = blocks * threads // 32
    target = WARPS_PER_SM * sms
    if warps >= target:
        return 1
    split = max(1, min(target // max(1, warps), steps // MIN_SPLIT_STEPS, MAX_SPLIT))
    return _ceil(steps, _ceil(steps, split))


def simt_gemm(problem, m, n, k, batch, facts):
    """simt-gemm Configs, best first, for an f32 matmul with f32 compute of
    M x N x K (x ``batch``) on ``problem.sms`` SMs."""
    steps = _ceil(k, BK)
    sms = problem.sms
    shapes = [(bm, bn, threads) for bm, bn, threads in TILES
              if bm <= 32 or m > bm // 2 or bm == TILES[-1][0]]
    blocks = {s: _ceil(m, s[0]) * _ceil(n, s[1]) * batch for s in shapes}
    filling = [s for s in shapes if blocks[s] >= sms]
    best = filling[0] if filling else shapes[-1]
    order = [best] + [s for s in shapes if s != best]
    configs = []
    for bm, bn, threads in order:
        split = split_of(blocks[(bm, bn, threads)], threads, steps, sms)
        why = f"{bm}x{bn} tiles, {blocks[(bm, bn, threads)]} of them for {sms} SMs"
        if (bm, bn, threads) == best:
            why += (" (the widest that fills the SMs)" if filling else
                    " (too few tiles at any width: the narrowest)")
        if split > 1:
            summed = ("by the last block of a tile to arrive, in this launch"
                      if split <= LAST_ARRIVAL_SPLITS else "by a second launch")
            why += (f", K split {split} ways ({blocks[(bm, bn, threads)] * split} blocks, "
                    f"the partials summed in order {summed})")
        configs.append(Config("simt-gemm", (threads, 1, 1), tile=(bm, bn, BK), split=split,
                              reason=f"{facts}; FFMA (f32 multiplied exactly); {why}"))
    return configs
