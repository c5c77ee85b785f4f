"""Rules for contractions: matmul, convolution (implicit GEMM), attention.

The faster strategies are the tensor-core ones (DESIGN.md): tc-sm90 (TMA
loads into a multi-stage shared-memory ring, wgmma, warp-specialized) on
sm_90a, tc-sm80 (cp.async, ldmatrix, mma.sync) on sm_80 and as sm_90a's
fallback. Which one would apply depends on the arch and the operand type
(``tensor_core``).

tc-sm90 runs matmuls of bf16, f16 and fp8 (e4m3 / e5m2, K steps of 128:
``tc90_k_step``) (``tc_sm90``): a block of 384 threads
(a producer warpgroup, two consumer warpgroups of 64 rows each) per 128 x BN
output tile, with BN the widest of 256, 128, 64 that still gives the SMs
enough tiles (a wider tile reads each A row once per 256 columns instead of
per 128: half the operand traffic per FLOP), and as many ring stages as
shared memory holds beside one set of the epilogue's slots (16 KiB for a
128-row tile: its output tiles go out through shared memory). Convolutions
(bf16, f16) run as implicit GEMM on either (``_implicit_gemm``), with the
same tiles as a matmul of their M x N; a filter gradient's tiles lie in one
filter tap, or its taps are the GEMM's batch (``_wgrad``,
dnnc/codegen/gpu/tensorcore/wgrad_taps.py). The attention forward (sdpa, bf16
and f16) runs on tc-sm90's flash kernel (``tc_sm90_attention``) on sm_90a,
on tc-sm80's (``tc_sm80_attention``, mma.sync) on sm_80, and so does the
backward (``tc_sm80_attention_backward``); other types wait for theirs:
simt-generic gives each output
element one thread that loops over the reduction (K); the output count sets
the parallelism, and few outputs get 128-thread blocks. An operand with a prologue (``Problem.prologues``)
is loaded as stored and converted in shared memory: its stored width sets
the ring's stage size, and its converted tiles take shared memory from the
ring. A GEMM the tc-sm90 kernel cannot take after all (a row stride TMA
cannot describe) goes to tc-sm80, else simt-generic, in
dnn-map-tensor-cores, which says why in the reason.
"""

import math

from dnnc.codegen.gpu.tensorcore import pixel_rows, wgrad_taps
from dnnc.compute_types import NOTE as TF32_NOTE
from dnnc.heuristics import pointwise
from dnnc.heuristics.config import Config
from dnnc.heuristics.depthwise import rank as rank_depthwise
from dnnc.heuristics.generic import simt_generic
from dnnc.heuristics.problem import DTYPE_BYTES
from dnnc.heuristics.simt_gemm import simt_gemm
from dnnc.heuristics.simt_gemv import simt_gemv

# tc-sm90 geometry: the tile's M (two consumer warpgroups of 64 rows), K step
# (128 bytes of bf16/f16), threads, and the shared memory a block may use.
TC90_M, TC90_K, TC90_THREADS = 128, 64, 384
TC90_SMEM = 227 * 1024
TC90_MAX_STAGES = 8
# Converted tiles of a prologue operand (sm90.CONVERTED_A / _B), and the
# ring a tile with a prologue should keep.
TC90_CONVERTED_A, TC90_CONVERTED_B = 2, 3
# The staged epilogue's slots (sm90.SLOT_BYTES = 2 KiB for each 16 rows of
# the tile): the ring leaves room for one set (one output, one column slice
# at a time), so that the output tiles go through shared memory.
TC90_SLOTS_PER_ROW = 2048 // 16
MIN_PROLOGUE_STAGES = 3
# Split-K: at least this many K steps (of 64) per split, at most this many splits.
MIN_SPLIT_STEPS, MAX_SPLIT = 4, 64
# A split K takes a tile wider than the narrowest when each split still runs
# at least this many K steps (a short split spends its time filling and
# draining the ring).
MIN_WIDE_SPLIT_STEPS = 32
# Split-K: splits summed in pairs first, thread-block clusters of 2, when
# each runs at least this many K steps (see split_cluster).
TC90_CLUSTER = 2
MIN_CLUSTER_SPLIT_STEPS = 16

# Operand types each tensor-core strategy would take (f32 as tf32).
TC_TYPES = {
    "tc-sm90": ("f16", "bf16", "f8E4M3FN", "f8E5M2", "f32"),
    "tc-sm80": ("f16", "bf16", "f32"),
}
TC_OF_ARCH = {"sm_90a": "tc-sm90", "sm_80": "tc-sm80"}


# The convolutions tc-sm90 and tc-sm80 run as implicit GEMM (sm90/im2col.py,
# sm80/im2col.py).
IMPLICIT_GEMM = ("conv_fprop", "conv_dgrad", "conv_wgrad")


def tensor_core(problem):
    """The tensor-core strategy that would take this problem, described, or
    None (an operand type no tensor-core path takes on this arch)."""
    strategy = TC_OF_ARCH.get(problem.arch)
    dtype = problem.dtype
    if strategy is None or dtype not in TC_TYPES[strategy]:
        return None
    if dtype == "f32" and str(problem.attr("compute_type", "f32")) != "tf32":
        return None  # an f32 multiply: the tensor cores round to tf32
    return strategy


def gemm_shape(problem):
    """(M, N, K, batch) of the anchor as a GEMM; convolutions as implicit GEMM
    (M = output pixels, N = output channels, K = reduced elements)."""
    op, ins = problem.anchor, problem.anchor_inputs
    out = problem.anchor_outputs[0] if problem.anchor_outputs else None
    if out is None or len(ins) < 2:
        return problem.output_elements, 1, 1, 1
    if op in ("matmul", "matmul_block_scaled"):
        a = ins[0].shape
        batch = out.elements // max(1, out.shape[-1] * out.shape[-2])
        return out.shape[-2], out.shape[-1], a[-1], batch
    if op == "conv_fprop":  # y[N,K,P,Q] = sum over C/g*R*S of x * w[K,C/g,R,S]
        w = ins[1].shape
        return out.elements // w[0], w[0], ins[1].elements // w[0], 1
    if op == "conv_dgrad":  # dx[N,C,H,W] = sum over K*R*S (per group) of dy * w
        w = ins[1].shape
        channels = out.shape[1]
        return out.elements // channels, channels, ins[1].elements // max(1, w[1]), 1
    if op == "conv_wgrad":  # dw[K,C/g,R,S] = sum over N*P*Q of dy * x
        dy = ins[0].shape
        return out.shape[0], out.elements // out.shape[0], ins[0].elements // dy[1], 1
    # Attention: q[B,H,S,D] against k[B,H,Skv,D]; report S x Skv x D per B*H.
    q, k = ins[0].shape, ins[1].shape
    if len(q) >= 2 and len(k) >= 2:
        return q[-2], _attention_skv(problem), q[-1], math.prod(q[:-2])
    return problem.output_elements, 1, 1, 1


def _ceil(a, b):
    return -(-a // b)


def split_k(tiles, steps, sms):
    """Blocks to share each tile's K steps: 1 when the tiles keep at least
    half of the SMs busy (the partials' round trip through memory and the
    second launch cost more than the idle SMs); else enough splits to fill
    the SMs, each of at least MIN_SPLIT_STEPS K steps, at most MAX_SPLIT, as
    many as equal runs of K steps make."""
    if tiles >= sms // 2:
        return 1
    splits = max(1, min(sms // tiles, steps // MIN_SPLIT_STEPS, MAX_SPLIT))
    # As the kernel runs them: equal runs of steps, none empty (33 splits of
    # 1024 steps run as 32 of 32).
    return _ceil(steps, _ceil(steps, splits))


def split_cluster(split, steps, units, bm, bn, ring_bytes, sms):
    """Blocks of a cluster that sum ``split`` K splits (of ``steps`` K steps
    each) of a ``bm`` x ``bn`` tile through distributed shared memory before
    leaving partials (1: none): TC90_CLUSTER when it divides the splits,
    each split runs MIN_CLUSTER_SPLIT_STEPS steps or more, every one of the
    ``units`` blocks is resident at once (one an SM) and the ring
    (``ring_bytes``, which the sum borrows) holds the tile's f32
    accumulators. Pairs halve the partials stored and read again (two
    splits leave none: the pair runs the epilogue).
    Measured on an H200 (do_bench medians, without -> with pairs):
    256x1024x32768 and 512x512x32768 (128x256 tiles split 16) 0.0475 ->
    0.0427 and 0.0411 -> 0.0385 ms; 256x256x65536 (128x128 split 32)
    0.0352-0.0353 -> 0.0347-0.0354 (within the runs' spread);
    128x2048x4096 (128x64 split 4, 16 steps a split) 0.0169-0.0170 ->
    0.0152-0.0156; 64x4096x4096 (64x64 split 2) 0.0186-0.0189 ->
    0.0175-0.0181; with 8 steps a split slower: 64x1024x4096 (split 8)
    0.0109 -> 0.0121, 128x256x16384 (split 32) 0.0132 -> 0.0139.
    Clusters of 4 or 8 (256x256x65536: 0.047 and 0.049 ms) leave blocks
    waiting: an H200 holds 120 blocks at once in clusters of that size, not
    128."""
    if split % TC90_CLUSTER or steps < MIN_CLUSTER_SPLIT_STEPS or units > sms \
            or ring_bytes < bm * bn * 4:
        return 1
    return TC90_CLUSTER


def tc90_k_step(dtype):
    """tc-sm90's K step for operands of ``dtype``: 128 bytes of each row,
    64 bf16/f16, 32 tf32 (f32), 128 fp8 (wgmma's fp8 form multiplies 32 of
    K an instruction, four a step)."""
    return TC90_K * 2 // DTYPE_BYTES.get(dtype, 2) if dtype != "tf32" else TC90_K // 2


def tc_sm90(problem, m, n, k, batch, facts):
    """tc-sm90 Configs, best first, for a bf16/f16 matmul: the widest tile
    that still gives every other SM a tile. When no width does (few rows or
    columns, a long K), K is split over enough blocks to fill the SMs when
    the tiles leave most of them idle (split_k), with the widest tile whose
    splits still run MIN_WIDE_SPLIT_STEPS K steps each, else the narrowest
    (a wider tile reads fewer operand bytes per FLOP and keeps the tensor
    cores busier per shared-memory byte, but a short split is mostly ring
    fill and drain).
    Measured on an H200 (do_bench medians, L2 cleared): 64x4096x4096 in
    0.0187 ms with 64x64 tiles split 2 ways (128 blocks, summed in the same
    launch), 0.0225 unsplit (64 tiles), 0.0235-0.0255 split 3-4 ways, 0.0207-
    0.0217 with 64x128 split 2-4 ways; 256x256x65536 in 0.0371 ms with
    128x128 tiles split 32 ways, 0.0365 with 128x256 split 32 (64 blocks) or
    64x256 split 32, 0.0380 with 128x256 split 64, 0.0390-0.0401 with 128x64
    split 16 (0.046 summed in the GEMM instead of a second launch). With
    inputs in L2, 4096^3 ran at 591 TFLOP/s with 128x256 tiles, 492 with
    128x128."""
    # At most 64 rows: one consumer warpgroup and 64-row tiles, half of a
    # 128-row tile's wgmma work would be padding.
    bm = 64 if m <= 64 else TC90_M
    threads = TC90_THREADS if bm == TC90_M else TC90_THREADS - 128
    bk = tc90_k_step(problem.dtype)
    steps = _ceil(k, bk)
    widths = [bn for bn, floor in ((256, 128), (128, 64), (64, 0)) if n > floor]
    tiles = {bn: _ceil(m, bm) * _ceil(n, bn) * batch for bn in widths}
    splits = {bn: split_k(tiles[bn], steps, problem.sms) for bn in widths}
    why = {bn: f"{bm}x{bn} tiles, {tiles[bn]} of them for {problem.sms} SMs" for bn in widths}
    enough = [bn for bn in widths if tiles[bn] >= problem.sms // 2]
    if enough:
        best = enough[0]
        why[best] += " (the widest with a tile for every other SM)"
    else:
        for bn in widths:
            if splits[bn] > 1:
                why[bn] += f", K split {splits[bn]} ways ({tiles[bn] * splits[bn]} blocks)"
        wide = [bn for bn in widths[:-1]
                if splits[bn] > 1 and _ceil(steps, splits[bn]) >= MIN_WIDE_SPLIT_STEPS]
        if wide:
            best = wide[0]
            why[best] += (" (too few tiles at any width: the widest whose K splits run "
                          f"{MIN_WIDE_SPLIT_STEPS} steps or more)")
        else:
            best = widths[-1]
            why[best] += " (too few tiles at any width: the narrowest)"
    order = [(best, why[best])] + [(bn, why[bn]) for bn in widths if bn != best]
    # An operand with a prologue is loaded as stored and converted into
    # 128-byte rows of K that wgmma reads: CONVERTED_A of them per 64 rows of
    # A, CONVERTED_B of B (dnnc/codegen/gpu/tensorcore/sm90/).
    stored = dict(problem.prologues)
    source = [DTYPE_BYTES.get(stored[i], 2) if i in stored else 2 for i in (0, 1)]
    prologue = "".join(f"; a prologue on {'AB'[i]} ({stored[i]} tiles converted in shared "
                       "memory)" for i in sorted(stored))
    configs = []
    for bn, why in order:
        stage = (bm * source[0] + bn * source[1]) * 64
        converted = (TC90_CONVERTED_A * bm * 128 if 0 in stored else 0) + \
            (TC90_CONVERTED_B * bn * 128 if 1 in stored else 0)
        # (A prologue's converted tiles take that room: its epilogue stores
        # from registers.)
        slots = 0 if stored else TC90_SLOTS_PER_ROW * bm
        stages = _tc90_ring_stages(stage, converted + slots)
        if stages < 2:
            continue
        split = 1 if enough else splits[bn]
        cluster = split_cluster(split, _ceil(steps, split), tiles[bn] * split, bm, bn,
                                stages * stage, problem.sms)
        parts = split // cluster
        summed = "" if cluster == 1 else \
            f"; the splits summed in clusters of {cluster} ({parts} partials)" if parts > 1 else \
            f"; the splits summed in a cluster of {cluster}, which runs the epilogue"
        configs.append(Config("tc-sm90", (threads, 1, 1), tile=(bm, bn, bk),
                              stages=stages, split=split, cluster=cluster,
                              reason=f"{facts}; {why}{prologue}; {stages} stages of "
                                     f"{stage // 1024} KiB fill shared memory{summed}"))
    # A prologue's converted tiles take shared memory from the ring: a width
    # left with fewer than MIN_PROLOGUE_STAGES goes after the others.
    if stored:
        configs.sort(key=lambda c: c.stages < MIN_PROLOGUE_STAGES)
    return configs


# tc-sm80 geometry: (BM, BN, warps down M, warps across N) of the tiles
# (warp tiles of 64 x 64, 32 x 64 or 32 x 32: the squarest grid, as
# sm80.Tile lays it out). A stage of a K-major operand takes BM (or BN)
# rows of a K step's bytes + 16 (sm80.PAD). The 8-warp tiles run one
# block an SM (230-255 registers x 256 threads): a K step of 128 bytes (64
# bf16 / f16, 32 tf32: half the barriers per K element) and stages that fill
# the arch's shared memory (TC80_SHARED). Two 4-warp blocks share an SM: K
# steps of 64 bytes (32 bf16 / f16, 16 tf32), stages within TC80_SMEM each.
TC80_WIDE = ((256, 128, 4, 2), (128, 256, 2, 4))
TC80_TILES = TC80_WIDE + ((128, 128, 2, 2), (64, 128, 2, 2), (64, 64, 2, 2))
TC80_K_BYTES, TC80_WIDE_K_BYTES, TC80_PAD = 64, 128, 16
TC80_MAX_STAGES = 4
TC80_SMEM = 96 * 1024   # two blocks an A100 SM (164 KiB) and more on sm_90
# Dynamic shared memory one block may use (the opt-in limit).
TC80_SHARED = {"sm_80": 163 * 1024, "sm_90a": 227 * 1024}


def tc80_k_bytes(warps):
    """Bytes of K a tc-sm80 step reads of each row, for a block of ``warps``."""
    return TC80_WIDE_K_BYTES if warps == 8 else TC80_K_BYTES


def tc80_stages(bm, bn, warps, arch):
    """Ring stages of a tc-sm80 tile: up to TC80_MAX_STAGES, within the
    arch's shared memory for a block alone on its SM (8 warps), within
    TC80_SMEM for one of two (fewer warps)."""
    stage = (bm + bn) * (tc80_k_bytes(warps) + TC80_PAD)
    budget = TC80_SHARED.get(arch, TC80_SHARED["sm_80"]) if warps == 8 else TC80_SMEM
    return max(2, min(TC80_MAX_STAGES, budget // stage))


def tc_sm80(problem, m, n, k, batch, facts):
    """tc-sm80 Configs, best first, for a bf16 / f16 / tf32 matmul: the
    8-warp tile, 256 x 128 (128 x 256 when N passes M), when it gives every
    SM a block, else the narrowest tile (the most blocks); then the others.
    A tile of BM rows only when M passes BM / 2 (or BM is 64), of 256
    columns only when N passes 128. On sm_90a they are tc-sm90's fallback.
    Measured on an H200 (bf16 4096^3; cuBLAS 0.175 ms): 256x128x64 with 3
    stages 0.327 ms, 128x256x32 with 4 0.329, 128x256x64 with 3 0.329;
    128x128x64 (4 warps) with 3 0.390, 128x128x32 with 4 0.408. One block
    an SM either way (the 4-warp tiles also hold 255 registers a thread),
    so the wider tile, which reads each operand element a third less often
    per FLOP, eases the L2 to SM traffic that bounds these kernels. K is
    split where the tiles leave SMs idle (tc80_split_config)."""
    return [tc80_split_config(c, m, n, batch, k, problem.sms)
            for c in tc_sm80_configs(m, n, batch, problem.dtype, problem.sms, facts,
                                     fallback=problem.arch == "sm_90a")]


def empty_k(problem, facts):
    """Configs for a matmul of K = 0, best first: C is 0 and the kernel
    is a fill and the epilogue on it (linalg drops the empty contraction),
    pointwise work that simt-pointwise runs in 16-byte vectors where the
    output's rows allow them (pointwise.usable_width), else simt-generic
    one thread an element."""
    facts = f"{facts}, K = 0: the epilogue of a zero product, pointwise"
    width = pointwise.usable_width(problem)
    work = problem.output_elements
    if width == 1:
        n = problem.anchor_outputs[0].shape[-1]
        return simt_generic(work, problem.sms, None, facts, head=(
            f"{facts}: simt-pointwise needs a vector dim that is a multiple of 2 elements "
            f"at least, got {n}"))
    return pointwise.vector_configs(problem, facts, width) + \
        simt_generic(work, problem.sms, None, facts)


def tc_sm80_configs(m, n, batch, dtype, sms, facts, fallback=False):
    """``tc_sm80`` from the GEMM's size, operand type (bf16, f16, or f32
    multiplied as tf32) and the SM count: what dnn-map-tensor-cores also
    uses for a kernel tc-sm90 does not take. ``fallback``: for sm_90a (and
    its shared memory), else for sm_80."""
    arch = "sm_90a" if fallback else "sm_80"
    eb = 4 if dtype == "f32" else 2
    wide = TC80_WIDE if m >= n else TC80_WIDE[::-1]
    shapes = [t for t in wide + TC80_TILES[len(TC80_WIDE):]
              if (m > t[0] // 2 or t[0] == 64) and (n > t[1] // 2 or t[1] <= 128)]
    tiles = {t: _ceil(m, t[0]) * _ceil(n, t[1]) * batch for t in shapes}
    enough = [t for t in shapes if tiles[t] >= sms]
    best = enough[0] if enough else shapes[-1]
    role = "fallback for when tc-sm90 does not apply: " if fallback else ""
    configs = []
    for shape in [best] + [t for t in shapes if t != best]:
        bm, bn, warps_m, warps_n = shape
        warps = warps_m * warps_n
        k_bytes = tc80_k_bytes(warps)
        stage = (bm + bn) * (k_bytes + TC80_PAD)
        stages = tc80_stages(bm, bn, warps, arch)
        why = f"{bm}x{bn} tiles, {tiles[shape]} of them for {sms} SMs"
        if shape == best:
            why += " (the widest with a block for every SM)" if enough else \
                " (too few tiles at any width: the narrowest)"
        configs.append(Config("tc-sm80", (32 * warps, 1, 1), tile=(bm, bn, k_bytes // eb),
                              stages=stages,
                              reason=f"{role}{facts}; {why}, {warps} warps of "
                                     f"{bm // warps_m}x{bn // warps_n}; {stages} stages of "
                                     f"{stage // 1024} KiB"))
    return configs


def tc_sm80_conv(m, n, dtype, sms, facts, channels=None, fallback=False, batch=1, k=None):
    """tc-sm80 Configs, best first, for an implicit-GEMM convolution of M x N
    (``tc_sm80_configs``' tiles), ``batch`` of them; a filter gradient's
    whose tiles lie in one filter tap (``channels``: its C) only those whose
    N divides C. Given the reduction ``k``, each with its K split where the
    tiles leave SMs idle (tc80_split_config)."""
    configs = tc_sm80_configs(m, n, batch, dtype, sms, facts, fallback)
    if channels is not None:
        configs = [c for c in configs if channels % c.tile[1] == 0]
    if k is not None:
        configs = [tc80_split_config(c, m, n, batch, k, sms) for c in configs]
    return configs


# tc-sm80 split-K (sm80/splitk.py): at least this many K steps a split (a
# shorter one spends its time filling and draining the ring of up to
# TC80_MAX_STAGES stages), at most MAX_SPLIT splits; only a tile of this
# many K steps or more is split (a shorter one runs for about as long as
# the second launch takes to start: a few microseconds).
TC80_MIN_SPLIT_STEPS = 8
TC80_SPLIT_FROM_STEPS = 64


def tc80_split(tiles, steps, warps, sms):
    """Blocks to share each of ``tiles`` tc-sm80 tiles' ``steps`` K steps
    (sm80/splitk.py): 1 where the tiles give every SM a block, or run
    fewer than TC80_SPLIT_FROM_STEPS steps; else enough
    splits to fill the blocks the SMs hold at once (two of 4 warps an SM,
    whose stages keep within TC80_SMEM; one of 8), each of at least
    TC80_MIN_SPLIT_STEPS steps, at most MAX_SPLIT, as many as equal runs of
    steps make. The f32 partials cost splits x M x N x 8 bytes written and
    read again, little beside the operands a long K reads. A filter
    gradient of K = 65 (3x3, C = 64, 32x56x56) has 18 tiles of 64 x 64
    for 132 SMs, each reducing 3136 K steps of 32 pixels: split 14 ways,
    252 blocks of 224 steps."""
    if tiles >= sms or steps < TC80_SPLIT_FROM_STEPS:
        return 1
    resident = 1 if warps == 8 else 2
    splits = max(1, min(resident * sms // tiles, steps // TC80_MIN_SPLIT_STEPS, MAX_SPLIT))
    return _ceil(steps, _ceil(steps, splits))


def tc80_split_config(config, m, n, batch, k, sms):
    """A tc-sm80 ``config`` of an ``m`` x ``n`` x ``k`` GEMM (``batch`` of
    them) with its K split where tc80_split says (its reason saying so),
    else as it is; other strategies' and split ones as they are."""
    if config.strategy != "tc-sm80" or config.split != 1:
        return config
    bm, bn, bk = config.tile
    tiles = _ceil(m, bm) * _ceil(n, bn) * batch
    steps = _ceil(k, bk)
    split = tc80_split(tiles, steps, config.threads // 32, sms)
    if split == 1:
        return config
    return config.replace(split=split, reason=(
        f"{config.reason}; K split {split} ways ({tiles} tiles leave SMs idle: "
        f"{tiles * split} blocks, {_ceil(steps, split)} K steps of {bk} a split, the "
        "partials summed in split order by a second launch)"))


def _fewest_columns(configs, channels, taps, batched):
    """A filter gradient's tensor-core ``configs`` whose tiles' N need not
    divide C (``channels``; wgrad_taps.py), those that compute the fewest
    columns a tap first (C = 144: tiles of 64 compute 192 columns a tap,
    of 128 or 256 all 256), in their order otherwise; each reason says how
    its columns cover C."""
    def covered(c):
        return wgrad_taps.covered(channels, c.tile[1])
    out = []
    for c in sorted(configs, key=covered):
        if channels % c.tile[1] == 0:
            out.append(c)
            continue
        how = f"the {taps} taps the GEMM's batch, " if batched else ""
        out.append(c.replace(reason=f"{c.reason}; {how}C = {channels} in tiles of "
                                    f"{c.tile[1]}: {covered(c)} columns a tap, "
                                    f"{channels / covered(c):.0%} of them C"))
    return out


def _spanning(configs, channels, taps):
    """tc-sm80's ``configs`` of a filter gradient whose tiles span filter
    taps (wgrad_taps.py: rows of C not a multiple of 16 bytes), in their
    order (no tile's N divides such a C), each reason saying so."""
    return [c.replace(reason=f"{c.reason}; C = {channels} over {taps} taps: a tile's "
                             f"{c.tile[1]} columns span filter taps (each chunk's tap and "
                             "channel computed before the mainloop)")
            for c in configs]


def _wgrad(problem, faster, m, n, k, facts):
    """The tensor-core Configs of a filter gradient (M = K, N = taps x C),
    best first, in the GEMM layout wgrad_taps.py picks for its C and taps:
    tiles whose N divides C (one tap each), any tile (one tap, or the taps
    as the GEMM's batch, the fewest columns computed first), tc-sm80's
    tiles spanning taps (rows of C not a multiple of 16 bytes, which only
    tc-sm80 reads: the taps as the batch take the rest, on either
    strategy), or none. tf32 on sm_90a: tc-sm90's transposed product
    (``_tf32_wgrad``: C a multiple of its tile's 64 or 128 rows), then
    tc-sm80's, which reads the tf32 fragments of dy and x from the stages as
    they lie (sm80/loader.py) and so takes any C, as for 16-bit types."""
    groups = conv_groups(problem)
    # The anchor's inputs are dy, x. A group is a batch of M = K / groups.
    channels = problem.anchor_inputs[1].shape[1] // groups
    taps = n // max(1, channels)
    eb = DTYPE_BYTES.get(problem.dtype, 2)
    tf32 = problem.dtype == "f32"
    sm90 = []
    if faster == "tc-sm90" and tf32:
        configs = [c for c in tc_sm90(problem, m // groups, n, k, groups, facts)
                   if channels % c.tile[1] == 0]
        sm90 = _split_wider(_tf32_wgrad(configs), problem.sms, m // groups, n, groups, k)
        if not sm90:
            facts += (f"; tc-sm90 does not take this tf32 filter gradient: it takes C (a "
                      f"group's, {channels}) a multiple of 64 (a tile of its transposed "
                      "product, 64 or 128 rows, lies in one filter tap)")
    if wgrad_taps.problem(groups, channels, taps):
        return sm90
    fallback = faster == "tc-sm90"
    if wgrad_taps.spans_taps(channels, taps, eb):
        # tc-sm90's TMA cannot step such pixels (conv.Unaligned), but where
        # the filter's columns fold into them (tensorcore/fold.py); else
        # tc-sm80's tiles over all taps x C columns, on sm_90a as its
        # fallback.
        if faster == "tc-sm90" and not tf32:
            sm90 = _folded_wgrad(problem, m, k, channels, groups, facts)
        return sm90 + _spanning(tc_sm80_conv(m, n, problem.dtype, problem.sms, facts,
                                             fallback=fallback, k=k), channels, taps)
    batched = wgrad_taps.tap_batched(groups, channels, taps, eb)
    whole = channels if wgrad_taps.tiles_in_tap(channels, taps) else None
    columns, batch = (channels, taps) if batched else (n, groups)
    fast = tc_sm80_conv(m, columns, problem.dtype, problem.sms, facts, whole,
                        fallback=fallback, batch=batch, k=k)
    if faster == "tc-sm90" and not tf32:
        sm90 = tc_sm90(problem, m // groups, columns, k, batch, facts)
        if whole is not None:
            sm90 = _split_wider([c for c in sm90 if whole % c.tile[1] == 0], problem.sms,
                                m // groups, n, groups, k)
    if whole is None:
        # (_split_wider's wider tile would compute more columns past C.)
        if not tf32:
            sm90 = _fewest_columns(sm90, channels, taps, batched)
        fast = _fewest_columns(fast, channels, taps, batched)
    return sm90 + fast


def _folded_wgrad(problem, m, k, channels, groups, facts):
    """tc-sm90's configs of a filter gradient of few channels whose
    filter's columns fold into them (tensorcore/fold.py): a GEMM of the
    last filter dim's S x C columns, the outer taps its batch; or none."""
    from dnnc.codegen.gpu.tensorcore import fold
    window = problem.anchor_outputs[0].shape[2:]
    if not fold.folds("wgrad", channels, window, DTYPE_BYTES.get(problem.dtype, 2),
                      groups=groups):
        return []
    columns, batch = window[-1] * channels, fold.outer_taps(window)
    outer = f", the {batch} outer taps the GEMM's batch" if batch > 1 else ""
    return [c.replace(reason=f"{c.reason}; the filter's {window[-1]} columns folded into its "
                             f"C = {channels} channels ({columns} columns a tap of x'{outer})")
            for c in tc_sm90(problem, m, columns, k, batch, facts)]


def _implicit_gemm(problem, faster, m, n, k, facts):
    """The tensor-core Configs of a convolution, best first: tc-sm90's on
    sm_90a, then tc-sm80's (its fallback), or tc-sm80's on sm_80. Each tap's
    channels are read in whole K steps (the loaders zero-fill past C): a
    forward or data gradient's K is taps x C rounded up to the tile's K."""
    groups = conv_groups(problem)
    if problem.anchor == "conv_wgrad":
        return _wgrad(problem, faster, m, n, k, facts)
    w = problem.anchor_inputs[1].shape
    reduced = w[0] // groups if problem.anchor == "conv_dgrad" else w[1]
    taps = math.prod(w[2:])
    # A K step is 128 bytes of a row: 64 bf16 / f16, 32 tf32.
    bk90 = TC90_K if problem.dtype in ("bf16", "f16") else TC90_K // 2
    fast = []
    # (tc-sm80 takes one group: its match says so where it gets more.)
    for c in tc_sm80_conv(m, n, problem.dtype, problem.sms, facts,
                          fallback=faster == "tc-sm90"):
        bk = c.tile[2]
        reduction = taps * _ceil(reduced, bk) * bk
        c = c.replace(reason=f"{c.reason}; K {reduction} ({taps} taps x {reduced} channels in "
                             f"steps of {bk})")
        fast.append(tc80_split_config(c, m, n, 1, reduction, problem.sms))
    if faster == "tc-sm90":
        # A group is a batch of N = its output channels.
        reduction = taps * _ceil(reduced, bk90) * bk90
        configs = tc_sm90(problem, m, n // groups, reduction, groups, facts)
        configs = _whole_waves(configs, problem.sms, m, n // groups, groups,
                               forward=problem.anchor == "conv_fprop")
        configs = _split_wider(configs, problem.sms, m, n // groups, groups, reduction)
        fast = _tiled_rows(problem, configs, w[2:], groups) + fast
    return fast


def _tiled_rows(problem, configs, window, groups):
    """tc-sm90's ``configs`` of a forward convolution or data gradient
    with ``tiled`` set where its activation is a plain matrix
    (tensorcore/pixel_rows.py: 1x1, unit stride, no padding): A's tiles
    are then loaded by tiled TMA boxes, as a matmul's, instead of in
    im2col mode. Not yet timed against im2col mode on a GPU (the bench's
    ``tiled:0`` cases time both in one run: bench/conv_cases.py)."""
    ndim = len(window)
    stride, pre, post = (list(problem.attr(name, ()) or (default,) * ndim)
                         for name, default in (("stride", 1), ("pre_padding", 0),
                                               ("post_padding", 0)))
    direction = problem.anchor.split("_")[1]
    if pixel_rows.problem(direction, window, stride, pre, post, groups,
                          bool(problem.prologues)) is not None:
        return configs
    return [c.replace(tiled=1, reason=f"{c.reason}; tiled: the activation read as a matrix of "
                                      "pixels by channels (1x1, unit stride, no padding)")
            if c.strategy == "tc-sm90" else c for c in configs]


def _tf32_wgrad(configs):
    """tc-sm90's configs of a tf32 filter gradient: it runs as the
    transposed product dwᵀ = im2col(x)ᵀ dy (sm90/tf32_conv.py), whose tile
    is the config's with M and N swapped, so N 64 or 128 (M of the
    transposed tile)."""
    return [c.replace(reason=f"{c.reason}; run as dw^T = im2col(x)^T dy in {c.tile[1]}x"
                             f"{c.tile[0]} tiles (x through registers, dy copied K-major: "
                             "wgmma reads tf32 from shared memory only K-major)")
            for c in configs if c.tile[1] in (64, 128)]


# A convolution's tile count leaves a last wave this full at least, or a
# narrower tile is taken whose last wave is WAVE_GAIN fuller.
FULL_WAVE, WAVE_GAIN = 0.8, 0.15


def _wave_share(tiles, sms):
    """How full the waves of ``tiles`` blocks over ``sms`` SMs are, on average."""
    return tiles / (_ceil(tiles, sms) * sms)


def _tc90_ring_stages(stage, other):
    """The ring stages of ``stage`` bytes each (and an mbarrier pair's 16)
    that fit tc-sm90's shared memory beside ``other`` bytes (converted
    prologue tiles, the epilogue's slots), at most TC90_MAX_STAGES."""
    return min(TC90_MAX_STAGES, (TC90_SMEM - 1024 - other) // (stage + 16))


def _whole_waves(configs, sms, m, n, batch, forward=True):
    """tc-sm90's configs of a convolution with, first, the next narrower
    tile where the first (unsplit) leaves its last wave mostly empty and the
    narrower fills its waves: the 3x3 128x256x14x14 forward has 196 tiles of
    128x256 (1.48 waves of 132: 74% full) and 392 of 128x128 (2.97: 99%).
    Measured on an H200 (do_bench medians, 2026-11-27): 0.0436 ms with
    128x128 tiles against 0.0536 with 128x256 (cuDNN 0.0452-0.0457). A tile
    up to HALF_ROWS_MAX_N wide halves its rows instead (HALF_ROWS_MAX_N; a
    data gradient's, up to 128)."""
    if not configs or configs[0].strategy != "tc-sm90" or configs[0].split != 1:
        return configs
    first = configs[0]
    bm, bn = first.tile[:2]
    narrow = next((c for c in configs if c.tile[:2] == (bm, bn // 2) and c.split == 1), None)
    if narrow is None:
        return configs
    if bm > 64 and bn <= (HALF_ROWS_MAX_N if forward else 128):
        # Half the rows: a producer and one consumer warpgroup a 64-row tile
        # (see HALF_ROWS_MAX_N), in the narrower tile's stages where their
        # bytes are the same (BN up to 128), else as many as fit.
        stages = narrow.stages if bn <= 128 else _half_row_stages(first, bm // 2, bn)
        if stages:
            narrow = narrow.replace(tile=(bm // 2, bn, *narrow.tile[2:]), stages=stages,
                                    block=(128 * (1 + bm // 2 // 64), 1, 1))
    nm, nn = narrow.tile[:2]
    wide, half = _ceil(m, bm) * _ceil(n, bn) * batch, _ceil(m, nm) * _ceil(n, nn) * batch
    if _wave_share(wide, sms) >= FULL_WAVE or \
            _wave_share(half, sms) < _wave_share(wide, sms) + WAVE_GAIN:
        return configs
    reason = (f"{narrow.reason}; {nm}x{nn} tiles, not {bm}x{bn}: {half} tiles fill "
              f"{_wave_share(half, sms):.0%} of their waves, {wide} only "
              f"{_wave_share(wide, sms):.0%}")
    return [narrow.replace(reason=reason)] + [c for c in configs if c is not narrow]


# HALF_ROWS_MAX_N: a convolution whose waves a narrower tile fills, its
# tile at most this wide, takes half the rows (64 x BN, one consumer
# warpgroup of wgmma N = BN) rather than half the columns (BM x BN/2, two
# of N = BN/2). On an H200, the 3x3 32x128x28x28 forward (392 tiles either
# way): tf32 64x128x32 0.0296-0.0302 ms, 128x64x32 0.0364-0.0367 (cuDNN
# 0.0323-0.0334); bf16 64x128x64 0.0167-0.0169, 128x64x64 0.0197-0.0204
# (cuDNN 0.0206-0.0220). The 3x3 128x256x14x14 forward (392 tiles): bf16
# 64x256x64 in 5 stages 0.0438-0.0441 ms, 128x128x64 in 6 0.0490-0.0499
# (cuDNN 0.0448-0.0457). A data gradient's 256-wide tile keeps its rows:
# the 1x1 32x1024x14x14 one took 0.0122-0.0124 ms in 64x256 tiles against
# 0.0113 in 128x128.
HALF_ROWS_MAX_N = 256


def _half_row_stages(first, rows, cols):
    """The ring stages a rows x cols tile of ``first``'s K step fits, as
    tc_sm90 counts them for an operand without a prologue; 0 where
    ``first`` has one (its converted tiles take room this does not
    count) or fewer than 2 fit."""
    if "prologue" in first.reason:
        return 0
    stages = _tc90_ring_stages((rows + cols) * 128,   # 128-byte rows of K
                               TC90_SLOTS_PER_ROW * rows)
    return stages if stages >= 2 else 0


def _split_wider(configs, sms, m, n, batch, k):
    """tc-sm90's configs of a convolution (an ``m`` x ``n`` x ``k`` GEMM,
    ``batch`` of them) with, first, the 128-wide tile split 2 ways where the
    first is 64 wide, unsplit, with fewer tiles than SMs, and K has two
    steps at least (a single step cannot be split; tc-sm90 refuses it): as
    many blocks (half the tiles, each K split in two), each tile reading its
    A rows once per 128 columns instead of per 64. Measured on an H200
    (do_bench medians, 2026-11-27): the 3x3 32x512x7x7 forward in 0.0256 ms
    against 0.0279 with 128x64 tiles (104 of them); the 3x3 32x256x14x14
    filter gradient in 0.0331 against 0.0361 (72 tiles). Not taken where
    the first config is wider (1x1 32x1024x14x14 with 98 tiles of 128x128:
    0.0250 split 2 against 0.0144). The two splits of a tile run as a
    cluster of 2 that sums them through distributed shared memory and runs
    the epilogue (no partials in memory, no second launch), with 4 ring
    stages: the same day, the forward took 0.0206-0.0213 ms so (cuDNN
    0.0205-0.0209) against 0.0260-0.0263 with a cluster of 1 and 6 stages,
    0.0238 with the cluster and 6 stages, 0.0241 with 4 stages alone; the
    filter gradient 0.0234 against 0.0327-0.0331 (0.0263 with 4 stages
    alone, 0.0232 split 3 ways with 4)."""
    if not configs or configs[0].strategy != "tc-sm90":
        return configs
    first = configs[0]
    wide = next((c for c in configs if c.tile[:2] == (first.tile[0], 128)), None)
    if first.tile[1] != 64 or first.split != 1 or wide is None or wide.split != 1:
        return configs
    if _ceil(m, first.tile[0]) * _ceil(n, 64) * batch >= sms or _ceil(k, wide.tile[2]) < 2:
        return configs
    stages = min(wide.stages, SPLIT_WIDER_STAGES)
    split = wide.replace(split=2, cluster=2, stages=stages,
                         reason=f"{wide.reason}; K split 2 ways: as many blocks as "
                                f"{first.tile[0]}x64 tiles, twice as wide (fewer tiles "
                                f"than SMs), the pair of splits a cluster that runs the "
                                f"epilogue, {stages} stages")
    return [split] + configs


# What the reason of a kernel whose sums are in no fixed order says (the fused
# attention backward's dQ): tools/build-gpu-tests reads it so that such a
# package's two calls are not required to write the same bits.
NOT_DETERMINISTIC = "not deterministic"


# The ring of _split_wider's tiles: measured faster than a full one (6 stages).
SPLIT_WIDER_STAGES = 4


# The attention forward kernel (sm90/flash.py): query rows a block (64 per
# consumer warpgroup), the most ring stages worth having, and the registers
# a consumer thread keeps beside O (Dv / 2), S (BN / 2) and P (BN / 4)
# (flash.SPARE_REGISTERS).
TC90_ATTENTION_M, TC90_ATTENTION_STAGES, TC90_ATTENTION_SPARE = 128, 3, 32
# Registers a biased attention step keeps beyond its bias values.
TC90_ATTENTION_BIAS_SPARE = 16
# The widest head dims (D and Dv) of the persistent attention forward, and
# the longest kv sequence it is chosen for (8 steps of 128 kv rows).
TC90_ATTENTION_PERSISTENT_D, TC90_ATTENTION_PERSISTENT_SKV = 128, 1024
# Query rows from which head dims up to 64 take 192-row blocks.
TC90_ATTENTION_TALL_SQ = 2048
# Split-KV (flash_combine.py): kv tiles a split block keeps at least, and
# the most blocks a query tile's kv tiles are split over.
TC90_ATTENTION_SPLIT_TILES = 8
TC90_ATTENTION_SPLITS = 16
# The largest head dim of the attention backward (flash_backward.MAX_HEAD_DIM),
# and the largest whose dK dV kernel holds both gradients in each warpgroup
# (flash_backward.NARROW_HEAD_DIM; wider: flash_backward_wide.py).
TC90_ATTENTION_BACKWARD_D = 256
TC90_ATTENTION_BACKWARD_NARROW_D = 128
# The tile of the two-kernel backward's config (dnn_map_tensor_cores'
# TWO_KERNEL_BACKWARD): 128 rows a block in both kernels.
TC90_ATTENTION_TWO_KERNELS = (128, 128)


def _tc_sm90_attention_backward(problem, facts, d, dv):
    """tc-sm90 Configs for an sdpa_backward: the fused kernel first
    (sm90/flash_backward_fused.py: tile [query rows a step, kv rows a
    block], dQ summed by f32 reduce-adds, in no fixed order) where it takes
    the head dims, there is no bias and the op does not ask to be
    ``deterministic``, then the two kernels
    (sm90/flash_backward.py: tile [128, 128], each gradient summed in a
    fixed order, the deterministic mode), which size their tiles from the
    head dims."""
    from dnnc.codegen.gpu.tensorcore.sm90 import flash_backward_fused as fused

    if max(d, dv) > TC90_ATTENTION_BACKWARD_D:
        return []
    two = Config("tc-sm90", (384, 1, 1), tile=TC90_ATTENTION_TWO_KERNELS, reason=(
        f"attention backward ({facts}): a dQ kernel and a dK dV kernel, 128 rows a "
        "block, no atomics (deterministic)"))
    if max(d, dv) > TC90_ATTENTION_BACKWARD_NARROW_D:
        two = _tc_sm90_wide_backward(two, facts)
    if problem.attr("deterministic", False):
        return [two.replace(reason=f"{two.reason}; the graph asks for a deterministic "
                                   "backward")]
    biased = any(spec.dtype != "i32" for spec in problem.anchor_inputs[6:])
    why = fused.refusal(d, dv, biased)
    if why:
        return [two.replace(reason=f"{two.reason}; not the fused kernel: {why}")]
    tile = fused.tile_for(d, dv)
    parts = _tc_sm90_backward_parts(problem, tile.n)
    split = (f", the group's query heads in {parts} parts (fewer than "
             f"{TC90_BACKWARD_UNITS_PER_SM} units an SM without), dK and dV summed after"
             if parts > 1 else "")
    return [Config("tc-sm90", (tile.threads, 1, 1), tile=(tile.m, tile.n), stages=tile.stages,
                   persistent=1, split=parts,
                   reason=f"attention backward ({facts}): one fused kernel, persistent blocks "
                          f"over units of {tile.n} kv rows{split}, {tile.m} query rows a step, "
                          f"{tile.stages} stages, dQ summed in f32 by TMA reduce-adds "
                          f"({NOT_DETERMINISTIC}; tile "
                          f"{TC90_ATTENTION_TWO_KERNELS[0]}x{TC90_ATTENTION_TWO_KERNELS[1]} "
                          "names the deterministic two kernels; persistent:0 a block a unit)"),
            two]


# Units of the fused backward (a kv tile of a (batch, kv head)) an SM should
# have at least before a grouped-query group's heads are split into parts:
# with two or more, the persistent blocks' alternating order evens out
# uneven (causal) units (sm90/backward_units.py).
TC90_BACKWARD_UNITS_PER_SM = 2


def _tc_sm90_backward_parts(problem, kv_rows):
    """The parts (a divisor of the group's query heads) the fused backward's
    units take a grouped-query group in: 1, or the fewest that give the
    SMs TC90_BACKWARD_UNITS_PER_SM units each (each part then sums its own
    dK and dV in f32, a small launch adds the parts)."""
    q, k = problem.anchor_inputs[0].shape, problem.anchor_inputs[1].shape
    group = q[1] // k[1] if k[1] and q[1] % k[1] == 0 else 1
    units = _ceil(k[2], kv_rows) * k[0] * k[1]
    want = TC90_BACKWARD_UNITS_PER_SM * problem.sms
    if group == 1 or units >= want:
        return 1
    return next(p for p in range(1, group + 1)
                if group % p == 0 and (units * p >= want or p == group))


def _tc_sm90_wide_backward(two, facts):
    """The two-kernel Config ``two`` for head dims over 128
    (sm90/flash_backward_wide.py), the only tc-sm90 backward that takes
    them (the fused kernel's refusal says why not it)."""
    return two.replace(reason=(
        f"attention backward ({facts}): a dQ kernel (128 query rows a block) and a dK dV "
        "kernel (64 kv rows a block, dK and dV in separate consumer warpgroups), no atomics "
        "(deterministic)"))


def _attention_skv(problem):
    """Skv of an attention anchor: k's dim 2, or a paged cache's
    max_seq_len_kv (k's dim 2 is then its page size)."""
    return problem.attr("max_seq_len_kv", 0) or problem.anchor_inputs[1].shape[-2]


def _attention_page_fits(problem, bn):
    """Whether tc-sm90's kernel reads a paged cache in tiles of ``bn`` kv
    rows (sm90/paged.py: the page a multiple of bn, or a divisor of it that
    is a multiple of 8); True unpaged."""
    if not problem.attr("max_seq_len_kv", 0):
        return True
    page = problem.anchor_inputs[1].shape[-2]
    return page % bn == 0 if page >= bn else bn % page == 0 and page % 8 == 0


def _attention_biased(ins):
    """Whether an sdpa kernel's inputs hold a bias: a float operand after
    q, k and v (a padding mask's lengths are int32)."""
    return any(spec.dtype != "i32" for spec in ins[3:])


def _attention_smem(bm, bn, d, dv, stages):
    """flash.smem_bytes: Q, the ring of K and V tiles (head dims in 64-wide
    boxes), barriers, alignment slack."""
    def padded(x):
        return _ceil(x, 64) * 64
    return 1024 + bm * padded(d) * 2 + stages * bn * (padded(d) + padded(dv)) * 2 \
        + 8 * (1 + 4 * stages)


def tc_sm90_attention(problem, facts):
    """tc-sm90 Configs for an sdpa forward of 16-bit q, k, v (sm90/flash.py):
    query rows a block of 64 per consumer warpgroup, 128 kv rows a step
    where O, S and P fit a consumer thread's registers, else 64, and as many
    ring stages (up to 3) as shared memory holds beside the Q tile. Head
    dims up to 64 over 2048 query rows or more take three consumer
    warpgroups (192 query rows): their products are short beside the
    softmax, which two others then hide; the rest take two (128 rows), or
    one for 64 query rows or fewer. Measured on an H200 (bf16, B4 H16,
    do_bench medians): D64 S4096 in 0.562 ms with 192 rows, 0.607 with 128
    (causal 0.342, 0.360); S1024 causal in 0.0455 ms with 192, 0.0421 with
    128 (fewer, longer blocks balance worse along the diagonal)."""
    ins = problem.anchor_inputs
    if len(ins) < 3 or problem.anchor not in ("sdpa", "sdpa_backward"):
        return []
    sq, d, dv = ins[0].shape[-2], ins[0].shape[-1], ins[2].shape[-1]
    if problem.anchor == "sdpa_backward":
        return _tc_sm90_attention_backward(problem, facts, d, dv)
    if max(d, dv) > 256:
        return []
    fold = _attention_fold(problem)
    if fold > 1:
        # The group's fold x Sq rows in one block: 64 rows (one consumer
        # warpgroup) where they fit, else 128.
        heights = (64,) if fold * sq <= 64 else (TC90_ATTENTION_M,)
    elif sq <= 64:
        heights = (64,)
    elif max(d, dv) <= 64 and sq >= TC90_ATTENTION_TALL_SQ:
        heights = (192, TC90_ATTENTION_M)
    else:
        heights = (TC90_ATTENTION_M,)
    configs = []
    for bm in heights:
        consumers = bm // 64
        # flash.registers: what setmaxnreg gives each consumer thread.
        budget = min(240, (512 - 24) // consumers // 8 * 8) - TC90_ATTENTION_SPARE
        biased = _attention_biased(ins)
        # O, S, P, and a step's bias values; with a bias, ptxas needs
        # TC90_ATTENTION_BIAS_SPARE more beside them (it spilled 4-140 bytes
        # at the edge of the budget): the widest step that fits so, else the
        # narrowest that fits the plain budget (a small spill beats
        # simt-generic).
        def held(bn, spare=0):
            return dv // 2 + bn // 2 + bn // 4 + (bn // 2 + spare if biased else 0)
        widths = [bn for bn in (128, 64) if held(bn, TC90_ATTENTION_BIAS_SPARE) <= budget] \
            or [bn for bn in (64,) if held(bn) <= budget]
        for bn in (128, 64):
            if bn not in widths or not _attention_page_fits(problem, bn):
                continue
            stages = max((s for s in range(2, TC90_ATTENTION_STAGES + 1)
                          if _attention_smem(bm, bn, d, dv, s) <= TC90_SMEM), default=0)
            if not stages:
                continue
            split = _attention_split(problem, bm, bn, fold)
            persistent = _attention_persistent(problem, bm, bn, split, fold)
            folded = (f", the {fold} query heads of each kv head folded into one block "
                      f"({fold} x {sq} rows: each K and V tile read once for the group)"
                      if fold > 1 else "")
            configs.append(Config(
                "tc-sm90", (128 * (1 + consumers), 1, 1), tile=(bm, bn), stages=stages,
                split=split, fold=fold, persistent=persistent,
                reason=f"attention forward ({facts}): {bm} query rows a block, {bn} kv rows "
                       f"a step, {stages} stages (the most shared memory holds, up to "
                       f"{TC90_ATTENTION_STAGES})" + folded
                       + (f", the kv tiles split over {split} blocks (too few query tiles "
                          "for the SMs)" if split > 1 else "")
                       + (", persistent (more query tiles than SMs, each of at most "
                          f"{TC90_ATTENTION_PERSISTENT_SKV // 128} kv steps: a block an SM "
                          "runs tile after tile)" if persistent else "")))
    return configs


# tc-sm80's attention forward (sm80/flash.py): (query rows a block, kv rows
# a step, warps), best first, by the wider head dim; stages of the K and V
# ring; the shared memory of an sm_80 block.
TC80_ATTENTION_SHAPES = (
    (64, ((128, 64, 4), (128, 64, 8), (64, 64, 4))),
    (128, ((128, 32, 4), (128, 64, 8), (64, 64, 4))),
    (256, ((128, 32, 8), (64, 32, 4))),
)
# Query rows up to which a block takes 64 of them (one m16 fragment a warp).
TC80_ATTENTION_SHORT = 64
# Shapes any head dims up to 256 fit one of.
TC80_ATTENTION_LAST = ((128, 64, 8), (128, 32, 8), (64, 64, 4), (64, 32, 4))
TC80_ATTENTION_STAGES = 2


def tc_sm80_attention_tiles(sq, d, dv, biased, shared=TC80_SHARED["sm_80"]):
    """tc-sm80 attention forward tiles (sm80.FlashTile), best first, for
    ``sq`` query rows of head dims ``d`` and ``dv`` (``biased``: with an
    additive bias), each one ``sm80.flash.fits`` takes within ``shared``
    bytes. 128 query rows a block over 4 warps of 32 where O, S and P fit a
    thread's registers (FlashAttention-2's blocks on an A100): each K and V
    fragment a warp reads serves two m16 fragments, 0.375 ldmatrix an
    mma.sync for head dims of 128 with 32 kv rows a step and Q read again
    each step, against 0.5 for warps of 16 rows, whose shared-memory reads
    would bound the tensor cores; two such blocks share an SM (up to 255
    registers x 128 threads each). With a bias (its values take
    registers), or head dims above 128, 8 warps of 16 (32 kv rows a step
    above 128: the ring within an sm_80 block's shared memory); 64 rows
    over 4 warps for 64 query rows or fewer. Two stages: the loads of step
    j + 1 run under step j."""
    from dnnc.codegen.gpu.tensorcore.sm80 import flash

    width = max(d, dv)
    shapes = next((s for limit, s in TC80_ATTENTION_SHAPES if width <= limit), ())
    if biased:
        # A step's bias values and their loads: ptxas spilled 8-40 bytes
        # with warps of 32 rows where O, S, P and the bias fit the count
        # (D 72 to 104 with 32 kv rows a step).
        shapes = tuple(s for s in shapes if s[0] // s[2] == 16)
    if sq <= TC80_ATTENTION_SHORT:
        shapes = tuple(s for s in shapes if s[0] == 64) + shapes
    out = []
    for m, n, warps in shapes + TC80_ATTENTION_LAST:
        tile = flash.FlashTile(m, n, TC80_ATTENTION_STAGES, warps)
        if tile not in out and flash.fits(tile, d, dv, biased, shared) is None:
            out.append(tile)
    return out


def tc_sm80_attention(problem, facts):
    """tc-sm80 Configs for an sdpa forward of 16-bit q, k, v on sm_80
    (sm80/flash.py), best first (``tc_sm80_attention_tiles``); none for
    the backward (``tc_sm80_attention_backward``) or head dims over 256."""
    ins = problem.anchor_inputs
    if len(ins) < 3 or problem.anchor != "sdpa":
        return []
    sq, d, dv = ins[0].shape[-2], ins[0].shape[-1], ins[2].shape[-1]
    if max(d, dv) > 256:
        return []
    configs = []
    for tile in tc_sm80_attention_tiles(sq, d, dv, _attention_biased(ins)):
        configs.append(Config(
            "tc-sm80", (tile.threads, 1, 1), tile=(tile.m, tile.n), stages=tile.stages,
            reason=f"attention forward ({facts}): {tile.m} query rows a block ({tile.warps} "
                   f"warps of {tile.rows}), {tile.n} kv rows a step, {tile.stages} stages"))
    return configs


# The largest head dim of tc-sm80's attention backward
# (sm80/flash_backward.MAX_HEAD_DIM: dK and dV of a kv row in a thread's
# registers).
TC80_ATTENTION_BACKWARD_D = 128


def tc_sm80_attention_backward_tile(d, dv, biased, shared=TC80_SHARED["sm_80"]):
    """The tc-sm80 attention backward tile (sm80.BackwardTile) of head dims
    ``d``, ``dv`` within ``shared`` bytes, or None (flash_backward.tile_for:
    128 rows a block in both kernels, over 8 warps of 16; 64 kv rows a dQ
    step; 64 query rows a dK dV step where dK, dV and the step's scores
    fit a thread's registers, else 32)."""
    from dnnc.codegen.gpu.tensorcore.sm80 import flash_backward

    if max(d, dv) > TC80_ATTENTION_BACKWARD_D:
        return None
    return flash_backward.tile_for(d, dv, biased, shared)


def tc_sm80_attention_backward(problem, facts):
    """tc-sm80 Configs for an sdpa_backward of 16-bit q, k, v on sm_80:
    a dQ kernel and a dK dV kernel (sm80/flash_backward.py), each gradient
    summed by one thread in a fixed order (deterministic, no atomics), then
    the fused kernel where ``_tc_sm80_not_fused`` finds nothing against it
    (sm80/flash_backward_fused.py, ``fused = 1``: dQ summed by f32
    reductions, in no fixed order; slower, TC80_FUSED_SLOWER); none above
    TC80_ATTENTION_BACKWARD_D. Its inputs are q, k, v, o, dO,
    stats, then a bias (a float) or padding lengths (int32)."""
    ins = problem.anchor_inputs
    if len(ins) < 6:
        return []
    d, dv = ins[0].shape[-1], ins[2].shape[-1]
    biased = any(s.dtype != "i32" for s in ins[6:])
    tile = tc_sm80_attention_backward_tile(d, dv, biased)
    if tile is None:
        return []
    two = Config(
        "tc-sm80", (tile.threads, 1, 1), tile=(tile.dq_n, tile.dkv_m), stages=tile.stages,
        reason=f"attention backward ({facts}): a dQ kernel ({tile.rows} query rows a block, "
               f"{tile.dq_n} kv rows a step) and a dK dV kernel ({tile.rows} kv rows a block, "
               f"{tile.dkv_m} query rows a step) on mma.sync, {tile.stages} stages, no "
               "atomics (deterministic)")
    why = _tc_sm80_not_fused(problem, tile, d, dv, biased)
    if why:
        return [two.replace(reason=f"{two.reason}; not the fused kernel: {why}")]
    fused = two.replace(fused=1, reason=(
        f"attention backward ({facts}): one fused kernel on mma.sync ({tile.rows} kv rows a "
        f"block, {tile.dkv_m} query rows a step, {tile.stages} stages, five products a step), "
        f"dQ summed in f32 by red.global.add ({NOT_DETERMINISTIC})"))
    return [two.replace(reason=f"{two.reason}; before the fused kernel (fused:1), which "
                               f"{TC80_FUSED_SLOWER}"), fused]


# Head dims (D = Dv) at which tc-sm80's fused attention backward is ranked
# (second, after the two kernels); it takes others (any D its warps split
# evenly) when a config asks.
TC80_FUSED_BACKWARD_D = (64, 128)
# Why the two kernels rank before the fused one: measured on an H200
# (bench/cases.py's tc-sm80 backwards, B4 H16 S4096 bf16), the fused kernel
# took 6-13% longer at D 64 and 128, causal or not.
TC80_FUSED_SLOWER = "took 6-13% longer on an H200 at D 64 and 128"


def _tc_sm80_not_fused(problem, tile, d, dv, biased):
    """Why tc-sm80's fused attention backward (sm80/flash_backward_fused.py)
    is not ranked (after the two kernels) for ``problem`` in ``tile``, or None: the graph
    asks for a deterministic backward, a bias (the two kernels' dbias, and
    a step's bias values beside the accumulators), head dims other than
    TC80_FUSED_BACKWARD_D, or the kernel's own refusal."""
    from dnnc.codegen.gpu.tensorcore.sm80 import flash_backward_fused

    if problem.attr("deterministic", False):
        return "the graph asks for a deterministic backward"
    if biased:
        return "a bias (kept on the two kernels until the GPU times both)"
    if d != dv or d not in TC80_FUSED_BACKWARD_D:
        return (f"D {d}, Dv {dv} (ranked first for D = Dv in "
                f"{', '.join(map(str, TC80_FUSED_BACKWARD_D))}; fused:1 asks for it)")
    return flash_backward_fused.refusal(tile, d, dv)


def _attention_fold(problem):
    """Query heads of a kv head's group that tc-sm90's attention forward
    folds into one block's rows (sm90/flash.py), or 1: the whole group G
    = H / Hkv where G > 1 and its G x Sq rows fit one block of 128 (a
    decoding step: one query row or a few), without a bias (its rows would
    be read per head). Each K and V tile is then read once for the group,
    not G times: decoding reads little else (B8 H32 KV8 Skv 8192 D128
    bf16 took 0.139 ms unfolded on an H200, 0.077 folded, against cuDNN's
    0.080, which folds too). Every mask maps onto the
    folded rows (each row keeps its query's diagonal, window and length)."""
    ins = problem.anchor_inputs
    heads, kv_heads, sq = ins[0].shape[1], ins[1].shape[1], ins[0].shape[-2]
    if kv_heads < 1 or heads % kv_heads or _attention_biased(ins):
        return 1
    group = heads // kv_heads
    if group < 2 or group * sq > TC90_ATTENTION_M:
        return 1
    return group


def _attention_split(problem, bm, bn, fold=1):
    """Blocks a query tile's kv tiles are split over (flash_combine.py):
    enough for the grid of query tiles x B x H (B x Hkv where ``fold``
    query heads share a block) to fill the SMs, each block keeping at
    least TC90_ATTENTION_SPLIT_TILES kv tiles, at most
    TC90_ATTENTION_SPLITS; 1 where the grid fills them already."""
    q = problem.anchor_inputs[0].shape
    blocks = _ceil(q[-2], bm) * q[0] * q[1]
    if fold > 1:
        blocks = q[0] * (q[1] // fold)
    if 2 * blocks > problem.sms:
        return 1
    tiles = _ceil(_attention_skv(problem), bn)
    return max(1, min(problem.sms // blocks, tiles // TC90_ATTENTION_SPLIT_TILES,
                      TC90_ATTENTION_SPLITS))


def _attention_persistent(problem, bm, bn, split, fold):
    """1 where tc-sm90's attention forward runs persistent blocks
    (sm90/flash_scheduler.py): more query tiles x B x H than SMs (a block
    a tile would take more than one wave), neither split nor folded (a
    decode's blocks), head dims up to 128 and tiles of 128 x 128 (two
    consumer warpgroups; O staged in the last V stage, so the next tile's
    Q loads under the epilogue), and a kv sequence of at most
    TC90_ATTENTION_PERSISTENT_SKV (8 steps a tile at most); else 0.

    The short tiles are the ones it is for: there a block's start (its
    barriers, its first Q and K loads) and its epilogue weigh most against
    its few steps, and those are the problems a block a tile left short of
    cuDNN (H200, f65125d: causal B4 H16 S1024 D64 at 91%, B16 H16 S1024
    D128 at 97%, causal 98%); from S2048 a block a tile measured 99-110%
    of cuDNN, and keeps its grid until the bench's persistent twins say
    otherwise. The others keep a block a tile too: with 64 kv rows a step
    (head dims over 128), three consumer warpgroups (192 rows) or D 192,
    the persistent kernel's consumers spilled (ptxas 13.5, sm_90a: 20 to
    192 bytes), where a block a tile spills nothing."""
    if split > 1 or fold > 1 or (bm, bn) != (TC90_ATTENTION_M, 128):
        return 0
    ins = problem.anchor_inputs
    if max(ins[0].shape[-1], ins[2].shape[-1]) > TC90_ATTENTION_PERSISTENT_D:
        return 0
    if _attention_skv(problem) > TC90_ATTENTION_PERSISTENT_SKV:
        return 0
    q = ins[0].shape
    return int(_ceil(q[-2], bm) * q[0] * q[1] > problem.sms)


def _no_implicit_gemm(problem, n):
    """Why ``_implicit_gemm`` gave no config for a convolution of GEMM
    columns ``n``."""
    groups = conv_groups(problem)
    channels = problem.anchor_inputs[1].shape[1] // groups
    why = None
    if problem.anchor == "conv_wgrad":
        why = wgrad_taps.problem(groups, channels, n // max(1, channels))
    return why or "no tile fits its shared memory"


def conv_groups(problem):
    """The groups of a convolution anchor: its channels over the filter's
    (fprop: x's C over w's; dgrad: dx's; wgrad: x's over dw's)."""
    ins, out = problem.anchor_inputs, problem.anchor_outputs[0]
    if problem.anchor == "conv_fprop":
        return max(1, ins[0].shape[1] // ins[1].shape[1])
    if problem.anchor == "conv_dgrad":
        return max(1, out.shape[1] // ins[1].shape[1])
    return max(1, ins[1].shape[1] // out.shape[1])


# K steps a group of a block-scaled GEMM's overlapped loop runs
# (Config.promote_overlap): 3 of 4 promotions overlap the consumer's next
# wgmmas. At 128 columns, where the sum and two temporaries take 192 of the
# consumer's 232 registers, ptxas spills 8 to 80 bytes of groups of 4 when
# the unit's first count % 4 steps need a loop of their own (a step count no
# multiple of 4, or a split K whose units' counts vary) but none of groups
# of 2 (1 of 2 promotions overlap). Where the steps divide into groups of 8
# (7 of 8 overlap), those ran 5-6% faster than groups of 4 at 8192x7168x2048
# and 8192^3 on an H200 (2026-11-27, 3907e41; the same at 4096^3).
BLOCK_SCALED_LONG_GROUP = 8
BLOCK_SCALED_GROUP = 4
BLOCK_SCALED_RAGGED_GROUP = 2


def _block_scaled_group(k, tile_n, split):
    """K steps a group of the overlapped loop for a tile ``tile_n`` wide
    whose K of ``k`` is split ``split`` ways (BLOCK_SCALED_RAGGED_GROUP)."""
    steps = -(-k // 128)
    if split == 1 and steps % BLOCK_SCALED_LONG_GROUP == 0:
        return BLOCK_SCALED_LONG_GROUP
    if tile_n <= 64 or (split == 1 and steps % BLOCK_SCALED_GROUP == 0):
        return BLOCK_SCALED_GROUP
    return BLOCK_SCALED_RAGGED_GROUP


def _rank_block_scaled(problem, m, n, k):
    """tc-sm90 on sm_90a (simt-generic only as its fallback); elsewhere
    simt-generic, whose reason says no tensor-core path applies the scales."""
    facts = f"{problem.anchor}: {m}x{n}x{k} (M x N x K) {problem.dtype}"
    work = m * n
    if problem.arch == "sm_90a" and m * n and k:
        return tc_sm90_block_scaled(problem, m, n, k, facts) + \
            simt_generic(work, problem.sms, None, facts, fallback_of="tc-sm90")
    return simt_generic(work, problem.sms, None, facts, head=(
        f"tc-sm90 does not apply on {problem.arch} ({facts}): its wgmma fp8 mainloop, which "
        "applies the block scales, needs sm_90a, and tc-sm80 takes no fp8 operands"))


def tc_sm90_block_scaled(problem, m, n, k, facts):
    """tc-sm90 Configs for a block-scaled fp8 matmul (dnn.matmul_block_scaled):
    the K step is the scales' 128-wide block, so each step's products sum
    into a temporary accumulator that is scaled and added to the tile's
    (sm90/block_scales.py). Tiles 128 or 64 wide, in groups of K steps
    whose promotions overlap the next step's wgmmas (two temporaries beside
    the sum: 3 x 64 f32 a thread at 128 columns; _block_scaled_group). Not
    256 wide: its steps run as two halves into one temporary without
    overlap, and ptxas spills 8 of its registers (promote_overlap 0, tile
    128x256x128 by override). Otherwise the matmul's tiles, split and
    stages (tc_sm90)."""
    facts = f"{facts}, block-scaled (1x128 A, 128x128 B scales applied in the mainloop)"
    grouped, wide = [], []
    for c in tc_sm90(problem, m, n, k, 1, facts):
        if c.tile[1] > 128:
            wide.append(c.replace(promote_overlap=0, reason=(
                f"{c.reason}; each K step in two halves of 128 columns, whole (ptxas spills "
                "some of its registers: ranked for autotuning)")))
            continue
        grouped.append(c)
    if not grouped:
        return wide

    def loop(c, group, why):
        how = f"K steps in groups of {group}" if group else "each K step whole"
        return c.replace(promote_overlap=group, reason=f"{c.reason}; {how}{why}")

    out = [loop(c, _block_scaled_group(k, c.tile[1], c.split), ", each step's promotion "
                "overlapping the next step's wgmmas") for c in grouped]
    # Autotuning's top few: the first tile's other loops (whole steps, the
    # other group size) and a 256-wide tile, before the next tiles.
    group = out[0].promote_overlap
    other = BLOCK_SCALED_RAGGED_GROUP if group == BLOCK_SCALED_GROUP else BLOCK_SCALED_GROUP
    loops = [loop(grouped[0], g, " (ranked for autotuning)") for g in (0, other)]
    return out[:1] + loops + wide[:1] + out[1:] + wide[1:]


def rank(problem):
    m, n, k, batch = gemm_shape(problem)
    if problem.anchor == "matmul_block_scaled":
        return _rank_block_scaled(problem, m, n, k)
    what = "S x Skv x D" if problem.family == "attention" else "M x N x K"
    facts = (f"{problem.anchor}: {m}x{n}x{k} ({what})"
             + (f" x{batch} batch" if batch > 1 else "") + f" {problem.dtype}")
    if problem.anchor in IMPLICIT_GEMM and problem.dtype == "f32" and \
            str(problem.attr("compute_type", "f32")) == "tf32":
        facts += f", {TF32_NOTE}"
    depthwise = rank_depthwise(problem, facts)
    if depthwise:  # memory-bound: nothing for the tensor cores
        return depthwise
    faster = tensor_core(problem)
    if faster is None and problem.dtype == "f32" and problem.arch in TC_OF_ARCH:
        # A bf16 graph's intermediates are f32 unless the graph says otherwise:
        # name both ways onto the tensor cores.
        facts += (", an f32 multiply (the tensor cores take f32 as tf32: compute_data_type "
                  "tf32; an operand computed in the graph is bf16/f16 with "
                  "intermediate_data_type)")
    elif faster is None:
        facts += f", a type no tensor-core path takes on {problem.arch}"
    work = problem.anchor_outputs[0].elements if problem.anchor_outputs else \
        problem.output_elements
    if faster in ("tc-sm90", "tc-sm80") and problem.anchor == "matmul" and m * n * batch \
            and not k:
        return empty_k(problem, facts)
    if faster in ("tc-sm90", "tc-sm80") and problem.anchor == "matmul" and m * n * batch \
            and k:
        # On sm_90a tc-sm80's configs follow tc-sm90's: what dnn-map-tensor-
        # cores and autotuning try where tc-sm90 does not apply.
        fast = tc_sm80(problem, m, n, k, batch, facts)
        if faster == "tc-sm90":
            fast = tc_sm90(problem, m, n, k, batch, facts) + fast
        # M or N at most 8: a GEMV on the CUDA cores, first where the
        # problem is latency-bound (heuristics/simt_gemv.py).
        gemv, confident = simt_gemv(problem, m, n, k, batch, facts,
                                    str(problem.attr("compute_type", "f32")))
        fast = gemv + fast if confident else fast + gemv
        return fast + simt_generic(work, problem.sms, None, facts, fallback_of=faster)
    if faster is None and problem.anchor == "matmul" and problem.dtype == "f32" and m * n * batch \
            and k and not problem.prologues and str(problem.attr("compute_type", "f32")) != "tf32":
        # An exact f32 multiply of f32 operands as stored: FFMA on the CUDA
        # cores (heuristics/simt_gemm.py).
        gemv, _ = simt_gemv(problem, m, n, k, batch, facts)
        return gemv + simt_gemm(problem, m, n, k, batch, facts) + \
            simt_generic(work, problem.sms, None, facts, fallback_of="simt-gemm")
    if faster is None and problem.anchor == "matmul" and problem.prologues:
        stored = "; ".join(f"a prologue on {'AB'[i]} stored as {t}" for i, t in problem.prologues)
        return simt_generic(work, problem.sms, None, facts, head=(
            f"simt-gemm does not take it ({facts}): {stored} (it applies none)"))
    if faster in ("tc-sm90", "tc-sm80") and problem.anchor in IMPLICIT_GEMM and m * n and k:
        fast = _implicit_gemm(problem, faster, m, n, k, facts)
        if not fast:
            return simt_generic(work, problem.sms, None, facts, head=(
                f"{faster} does not apply ({facts}): {_no_implicit_gemm(problem, n)}"))
        return fast + simt_generic(work, problem.sms, None, facts, fallback_of=faster)
    if faster == "tc-sm90" and problem.family == "attention" and \
            problem.dtype in ("bf16", "f16"):
        fast = tc_sm90_attention(problem, facts)
        if fast:
            return fast + simt_generic(work, problem.sms, None, facts, fallback_of=faster)
        limit = TC90_ATTENTION_BACKWARD_D if problem.anchor == "sdpa_backward" else 256
        why = f"head dims up to {limit}"
        if not any(_attention_page_fits(problem, bn) for bn in (128, 64)):
            why = (f"a paged K and V of page size {problem.anchor_inputs[1].shape[-2]}: "
                   "expected a multiple of 64, or 8, 16 or 32")
        return simt_generic(work, problem.sms, None, facts, head=(
            f"tc-sm90's attention kernels do not take it ({facts}): {why}"))
    if faster == "tc-sm80" and problem.anchor == "sdpa_backward" and \
            problem.dtype in ("bf16", "f16"):
        fast = tc_sm80_attention_backward(problem, facts)
        if fast:
            return fast + simt_generic(work, problem.sms, None, facts, fallback_of=faster)
        return simt_generic(work, problem.sms, None, facts, head=(
            f"tc-sm80's attention backward does not take it ({facts}): head dims up to "
            f"{TC80_ATTENTION_BACKWARD_D}"))
    if faster == "tc-sm80" and problem.anchor == "sdpa" and problem.dtype in ("bf16", "f16"):
        fast = tc_sm80_attention(problem, facts)
        if fast:
            return fast + simt_generic(work, problem.sms, None, facts, fallback_of=faster)
        return simt_generic(work, problem.sms, None, facts, head=(
            f"tc-sm80's attention kernel does not take it ({facts}): head dims up to 256"))
    return simt_generic(work, problem.sms, faster, facts)
