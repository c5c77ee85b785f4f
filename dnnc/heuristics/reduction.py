"""Rules for kernels that reduce: softmax, norms, reductions, pooling.

The faster strategy is simt-reduce (DESIGN.md): one warp or block per row or
window, 16-byte vector loads, warp shuffles, one pass where the math allows
(online softmax, Welford). simt-generic instead gives each *row* one thread
that loops over the row's ``extent`` elements, so the row count sets the
parallelism: few rows get 128-thread blocks (more blocks over the SMs).
Big blocks are never ranked first here: a looping thread makes long blocks.

``rows_and_extent`` reads the anchor's shapes and attributes per op.
"""

import math

from dnnc.dialect.ops_reduce import trailing_axes
from dnnc.heuristics import pointwise
from dnnc.heuristics.config import Config
from dnnc.heuristics.generic import simt_generic

FASTER = "simt-reduce"


def rows_and_extent(problem):
    """(independent rows, elements reduced per row) of the anchor op."""
    op = problem.anchor
    x = problem.anchor_inputs[0] if problem.anchor_inputs else None
    y = problem.anchor_outputs[0] if problem.anchor_outputs else None
    if x is None or y is None:
        return problem.output_elements, 1
    shape, total = x.shape, x.elements
    if op in ("softmax", "log_softmax", "softmax_backward", "log_softmax_backward"):
        axis = problem.attr("axis", len(shape) - 1)
        extent = shape[axis] if shape else 1
    elif op in ("layernorm", "rmsnorm", "layernorm_backward", "rmsnorm_backward"):
        extent = math.prod(shape[problem.attr("axis", len(shape) - 1):])
    elif op in ("batchnorm", "batchnorm_backward"):
        extent = total // max(1, shape[1]) if len(shape) > 1 else total
    elif op in ("groupnorm", "groupnorm_backward"):
        extent = total // max(1, shape[0] * problem.attr("groups", 1))
    elif op in ("instancenorm", "instancenorm_backward"):
        extent = math.prod(shape[2:])
    elif op in ("pooling", "pooling_backward"):
        window = problem.attr("window", ())
        return (y.elements, math.prod(window)) if window else (y.elements, 1)
    elif op == "reduction":
        return y.elements, total // max(1, y.elements)
    else:  # batchnorm_inference: pointwise, given the statistics
        return total, 1
    extent = max(1, extent)
    return max(1, total // extent), extent


# Anchors whose kernels are row programs when they reduce trailing axes (a
# reduction: the innermost alone or with the ones before it, groupnorm's
# channels x positions; the others: their innermost; dnn-reduce-rows checks
# the kernel itself and falls back otherwise).
ROW_OPS = ("softmax", "log_softmax", "softmax_backward", "log_softmax_backward",
           "layernorm", "rmsnorm", "reduction")
# Norms over the dims from ``axis`` on: a row of several dims when ``axis`` is
# not the last (the forward's reductions run over all of them).
FEATURE_NORMS = ("layernorm", "rmsnorm")
# Vectors of a row per thread a block aims at; rows of at most WARP_ROW
# vectors get a warp each, WARP_ROWS rows to a block. Layernorm and rmsnorm
# differ in two ways:
# * a row along one dim (cudnn-frontend's [rows, hidden, 1, 1] too) of at
#   most SHORT_ROW vectors aims at SHORT_ROW_VECTORS a thread: twice the
#   threads;
# * short rows that fit in one wave of warps (SM_WARPS an SM) go
#   ONE_WAVE_WARP_ROWS to a block.
# Measured on an H200 (2026-11-28): cudnn-frontend's norms over
# [2048, H, 1, 1] bf16, forward, against cuDNN 9.19 in the same process, and
# the bench's row programs against the choice before:
# * H = 2048, 256 vectors: rmsnorm 6.7 us in blocks of 64 x 4 vectors, 5.9
#   in 128 x 2 (cuDNN 6.7); layernorm 7.1 either way;
# * H = 4096, 512 vectors: rmsnorm 11.1-11.3 us in 128 x 4, 10.5 in 256 x 2
#   (cuDNN 10.0); layernorm 11.7 and 11.4 (cuDNN 12.2). ptxas gives 128 x 4
#   48 registers (10 blocks an SM: the 2048 rows take 1.55 waves), 256 x 2
#   32 (8 blocks, every thread slot used). The norms' row sweeps at 65536 x
#   2048 and 32768 x 4096 moved by -1.5% to +0.1%;
# * H = 8192, 1024 vectors: 512 x 2 is slower than 256 x 4 (rmsnorm 19.1
#   against 18.8 us, layernorm 20.7 against 19.7), so longer rows keep 4;
# * H = 768 and 1024, a warp a row: 8 rows to a 256-thread block took
#   3.3-4.2 us against 3.4-4.5 for 4 to a 128-thread block (rmsnorm 768:
#   3.26 against 3.37, cuDNN 3.25), 2 to a block 3.7-4.8. The sweeps'
#   262144 rows of 512 took 2-3% longer in blocks of 8: past one wave, 4;
# * other row programs keep both choices of before: an instance norm's
#   statistics over 2048 rows of 4096 bf16 took 3-5% longer in 256 x 2 (two
#   runs), softmax's sweeps moved by -1% to +1%; a row of several dims is
#   not measured apart and keeps 4.
VECTORS_PER_THREAD = 4
SHORT_ROW = 512
SHORT_ROW_VECTORS = 2
WARP_ROW = 128
WARP_ROWS = 4
ONE_WAVE_WARP_ROWS = 8
SM_WARPS = 64


def row_axes(problem):
    """How many trailing axes of its operand the anchor reduces, the rest being
    rows (a row program's, at least one row axis); 0 for any other reduction."""
    x = problem.anchor_inputs[0] if problem.anchor_inputs else None
    if x is None or not x.shape:
        return 0
    last = len(x.shape) - 1
    if problem.anchor == "reduction":
        return trailing_axes(problem.attr("axes", ()), len(x.shape))
    axis = problem.attr("axis", last)
    if problem.anchor in FEATURE_NORMS and 1 <= axis < last:
        return len(x.shape) - axis
    return 1 if axis in (last, -1) else 0


def vector_extent(problem):
    """The extent of the dim a row's vectors run along: its last dim of more
    than one element (rowwise.Shape.vector_dim), the operand's last if none."""
    shape = problem.anchor_inputs[0].shape
    return next((n for n in reversed(shape) if n > 1), shape[-1])


# A norm backward's rows of at most this many elements take 16-byte vectors
# of bf16 beside f32 statistics all the same: a warp per row then holds the
# row (WARP_ROW vectors), several rows to a block, where 8-byte vectors
# would give each row a block of 64 threads working alone.
SHORT_COLUMN_ROW = 1024


def row_vector_width(problem, rows):
    """Elements per 16-byte access of the widest element along the rows: a
    forward's per-row f32 statistics (``[rows, 1]``: a layernorm's mean and
    inv_var) are stored once a row, not as vectors, and do not narrow the
    row's bf16 vectors to 8 bytes. Measured on an H200 (layernorm training
    over [2048, 768, 1, 1] bf16): 4.5 us at 8-byte vectors, against 3.6 us
    for the same row without the statistics (16-byte vectors). A norm
    backward's row-and-column program keeps them counted (pointwise.widest_bytes
    says why)."""
    along = [t for t in problem.inputs + problem.outputs
             if t.shape and math.prod(t.shape) > rows]
    if not along:
        return 1
    return max(1, pointwise.VECTOR_BYTES // max(t.element_bytes for t in along))


def simt_reduce(problem, rows, extent):
    """The simt-reduce config of a row problem, or None."""
    axes = row_axes(problem)
    if problem.anchor not in ROW_OPS or not axes or extent < 2:
        return None
    # A vector lies inside the innermost axis (a row of several axes reads its
    # parameters once per vector).
    width = pointwise.vector_width(problem)
    if not problem.column_sums or extent <= SHORT_COLUMN_ROW:
        width = max(width, row_vector_width(problem, rows))
    inner = vector_extent(problem)
    while width > 1 and inner % width:
        width //= 2
    vectors = extent // width
    facts = f"{problem.anchor}: {rows} rows of {extent}"
    norm = problem.anchor in FEATURE_NORMS
    if vectors <= WARP_ROW:
        chunks = -(-vectors // 32)
        per = ONE_WAVE_WARP_ROWS if norm and rows <= SM_WARPS * problem.sms else WARP_ROWS
        return Config("simt-reduce", (32 * per, 1, 1), tile=(per,), vector=width,
                      reason=f"{facts}: a warp per row, {per} rows per block, vectors "
                             f"of {width}, {chunks} per thread")
    along_one = sum(1 for n in problem.anchor_inputs[0].shape[-axes:] if n > 1) == 1
    short = norm and along_one and vectors <= SHORT_ROW
    aim = SHORT_ROW_VECTORS if short else VECTORS_PER_THREAD
    threads = 64
    while threads < 1024 and threads * aim < vectors:
        threads *= 2
    chunks = -(-vectors // threads)
    if vectors * width >= MIN_STAGED_ROW and axes == 1:
        staged = simt_reduce_staged(problem, facts, width, vectors * width)
        if staged is not None:
            return staged
    if chunks * width > HELD_ELEMENTS and vectors * width > MIN_SPLIT_ROW and axes == 1:
        split = simt_reduce_split(problem, facts, width, vectors)
        if split is not None:
            return split
    return Config("simt-reduce", (threads, 1, 1), vector=width,
                  reason=f"{facts}: a block of {threads} per row, vectors of {width}, "
                         f"{chunks} per thread")


# Split rows (simt-reduce with split = C, dnnc/codegen/gpu/reduce/rowsplit.py): a
# row that one block of 1024 threads cannot hold in registers, more than
# HELD_ELEMENTS a thread (rowwise.REGISTER_ELEMENTS: rows over 32768 bf16 or
# f32), is dealt to a thread-block cluster of C blocks (sm_90; at most
# MAX_ROW_SPLIT, the portable cluster size), each holding its part in
# registers, which exchange their partial reductions through distributed
# shared memory: the row is read once where one looping block reads it once
# per pass (softmax 3 times: 49-50% of a copy at 131072 and 262144 bf16 on
# an H200, 73-76% at 65536). A thread holds HELD_ELEMENTS of the row's
# full-row inputs together (softmax 32 of x; its backward 16 of dy and 16 of
# y). Blocks of SPLIT_THREADS, two to an SM at up to 64 registers a thread,
# so that one block's loads overlap the other's exchange and stores (a held
# row of 32768 on one 1024-thread block per SM reaches 77-79%, of 16384 on
# 512-thread blocks 95-98%); 1024 threads (one block per SM) only where 8
# blocks of 512 are too few, and only for one input (64 registers a thread).
# Measured on an H200 (bf16, rows x N = 128 Mi elements, share of a copy):
# split, softmax / layernorm / rmsnorm, 65536: 68 / 62 / 72% (looping: 76 /
# 73 / 74%); 131072: 61 / 59 / 70% (50 / 49 / 65%); 262144: 52 / 52 / 66%
# (49 / 48 / 63%). Each block holds one row part and waits at two cluster
# barriers with nothing else to load, so the split pays from 131072 on only.
# (Those figures are before rowsplit met softmax's and layernorm's two
# reductions in one exchange, rowmerge.py. A persistent cluster, tile =
# [rows per cluster], loads its next row during the barrier; it is an
# override only, ``KERNEL=tile:R``, until measured.) A row of several dims
# (groupnorm's) is never split.
MIN_SPLIT_ROW = 65536
HELD_ELEMENTS = 32
SPLIT_ARCHS = ("sm_90a",)
SPLIT_THREADS = 512
MAX_ROW_SPLIT = 8


def _streamed(problem):
    """The inputs a row reads along its own elements: those of the anchor's
    first input's shape (x; a softmax backward's dy and y)."""
    x = problem.anchor_inputs[0]
    return [t for t in problem.inputs if t.shape == x.shape]


def simt_reduce_split(problem, facts, width, vectors):
    """The split-row simt-reduce config of a row of ``vectors`` vectors of
    ``width``, or None (not sm_90, or too long for a cluster to hold)."""
    if problem.arch not in SPLIT_ARCHS:
        return None
    streamed = max(1, len(_streamed(problem)))
    held = max(1, HELD_ELEMENTS // streamed // width)  # vectors of each input a thread holds
    for threads in (SPLIT_THREADS, 1024):
        if threads > SPLIT_THREADS and streamed > 1:
            break
        split = 2
        while split < MAX_ROW_SPLIT and threads * split * held < vectors:
            split *= 2
        if threads * split * held >= vectors:
            chunks = -(-vectors // (threads * split))
            return Config("simt-reduce", (threads, 1, 1), vector=width, split=split,
                          reason=f"{facts}: a cluster of {split} blocks of {threads} per "
                                 f"row, vectors of {width}, {chunks} per thread held in "
                                 "registers, partials exchanged through distributed shared "
                                 "memory")
    return None


# Staged split rows (simt-reduce with split = C and staged = 1,
# rowsplit.py): a row of MIN_STAGED_ROW elements or more (even one that a
# block of 1024 could hold in registers) is dealt to a cluster of C blocks
# of STAGE_THREADS, each copying its contiguous part of
# the row's streamed inputs (at most STAGE_BYTES) into shared memory with
# bulk copies and looping over it there: the part waits in shared memory,
# not registers, while the blocks exchange partials, so three blocks fit an
# SM and one's copies overlap the others' exchanges and stores. Measured on
# an H200 (bf16, rows x N = 128 Mi elements, share of a copy, as a CUDA
# model of the same kernel; layernorm / softmax / rmsnorm): 65536 in 2
# parts 81 / 83 / 89% (held in registers, looping: 72 / 76 / 73%); 131072 in
# 4 parts 78 / 78 / 87% (split in registers 60 / 61 / 71%); 262144 in 8
# parts 75 / 75 / 83% (51 / 52 / 66%). Parts of 32 KB with blocks of 128 or
# 256 threads, or 64 KB with 512, were within 3% of these. As built
# (dnnc, the same GPU), 32768 in 2 parts of 32 KB: 92 / 84 / 93%, against
# 77 / 79 / 94% held by one block of 1024 threads (4 parts: 81 / 69 / 79%,
# blocks of 512: 74 / 70 / 81%). Rows that C = 8 parts of STAGE_BYTES
# cannot hold (f32 past 131072, two streamed inputs past 131072 bf16) or
# whose length is not a multiple of C x STAGE_THREADS vectors are split in
# registers or looped as before.
#
# A staged pass loops over the part, ``unroll`` vectors an iteration (config
# ``unroll``): the output pass's loads of a scale or bias (from L2) for the
# iteration's vectors are in flight together before its stores. Parts of
# STAGE_BYTES, whose shared memory holds an SM to three blocks whatever
# their registers, take up to STAGE_UNROLL vectors and up to STAGE_LOADS
# such loads a thread. Measured on an H200 (bf16, share of a copy at 65536 /
# 131072 / 262144, one process): softmax 92 / 83 / 78% at 4 vectors, 94 /
# 85 / 80% at 8, 94 / 88 / 82% at 16; layernorm (scale and bias) 79 / 76 /
# 72% at 4, 83 / 79 / 76% at 8, 57 / 52 / 49% at 16 (162 registers a
# thread: one block an SM); rmsnorm (scale) 88 / 86 / 83% at 4, 88 / 87 /
# 85% at 8, 90 / 86 / 85% at 16. Smaller parts (32768 in two of 32 KB) fit
# more blocks an SM than three, as many as their registers allow: they take
# SMALL_PART_UNROLL (at 8, layernorm's 74 registers a thread measured 70%
# of a copy against 84% at 4, rmsnorm's 48 88% against 93%). A layernorm
# with a scale alone takes AFFINE_LAYERNORM_UNROLL, not 16: its output pass
# holds more than an rmsnorm's, 89 registers a thread at 16 (two blocks an
# SM: 76 / 73% of a copy at 131072 / 262144 on the same GPU) against 54 at
# 8 (86 / 82%); without scale or bias it takes 16 (32 registers).
MIN_STAGED_ROW = 32768
STAGE_BYTES = 64 * 1024
STAGE_THREADS = 256
STAGE_UNROLL = 16
STAGE_LOADS = 16
SMALL_PART_UNROLL = 4
AFFINE_LAYERNORM_UNROLL = 8


def simt_reduce_staged(problem, facts, width, n):
    """The staged split-row config of rows of ``n`` elements in vectors of
    ``width``, or None (not sm_90, too long, or not a multiple of the
    parts' vectors)."""
    if problem.arch not in SPLIT_ARCHS:
        return None
    streamed = _streamed(problem)
    row_bytes = sum(n * t.element_bytes for t in streamed)
    # Inputs read along the row from global memory in the output pass: a
    # norm's scale and bias.
    x = problem.anchor_inputs[0]
    along = sum(1 for t in problem.inputs if t.shape != x.shape and t.shape and t.shape[-1] == n)
    split = 2
    while split <= MAX_ROW_SPLIT:
        if row_bytes <= split * STAGE_BYTES:
            if n % (split * STAGE_THREADS * width):
                return None
            vectors = n // (split * STAGE_THREADS * width)  # a thread's, in its part
            if row_bytes // split < STAGE_BYTES:
                unroll = min(SMALL_PART_UNROLL, vectors)
            else:
                unroll = min(STAGE_UNROLL, STAGE_LOADS // max(1, along), vectors)
                if problem.anchor == "layernorm" and along:
                    unroll = min(unroll, AFFINE_LAYERNORM_UNROLL)
            while vectors % unroll:
                unroll -= 1
            return Config("simt-reduce", (STAGE_THREADS, 1, 1), vector=width, split=split,
                          staged=1, unroll=unroll,
                          reason=f"{facts}: a cluster of {split} blocks of "
                          f"{STAGE_THREADS} per row, each copying its {row_bytes // split} "
                          f"bytes of the row into shared memory and looping over them in "
                          f"vectors of {width}, {unroll} an iteration, partials exchanged "
                          "through distributed shared memory")
        split *= 2
    return None


# Reductions over every dim but the innermost (simt-reduce-columns,
# dnnc/codegen/gpu/reduce/colwise.py): a linear layer's bias gradient, a norm's
# dgamma and dbeta. A block is Tx threads across the columns (a warp reads
# 32 consecutive 16-byte vectors of a row) by Ty down the rows, 256 in all;
# each thread has COLUMN_UNROLL 16-byte loads in flight, shared by the
# inputs it reads whole (dgamma reads dy and x: 4 rows of each), which keeps
# its registers (twice that, the loop being pipelined) under 128. The rows
# are split over G blocks so that the grid is COLUMN_BLOCKS_PER_SM blocks
# per SM: resident at once, every block folds the same number of rows, so
# they finish together; more splits would only add partials to write and
# sum (G x N x 4 bytes each way). The last block of a column of blocks sums
# its partials in the same launch. Measured on an H200, 16384 x 4096 bf16:
# the rows take 36-39 us whether G is 16 or 128, unroll 4 or 16, blocks
# 32x8 or 512x2; with the partials' sum the whole is 44.0 us at G = 16,
# 44.6-45.4 at 32, 45.2-45.9 at 64, 46.7 at 8 (a second launch for the
# sum: 44.5 at 16). A column of blocks that reads at most COLUMN_ONE_SPLIT
# bytes is not split: one block reads that in about the time a second
# launch would take to start (measured when the sum was one).
# A program that folds several reductions of one input (sum, max and mean
# of x) holds 8 f32 accumulators per reduction beside its loads: with more
# than COLUMN_ACCUMULATORS a thread, it keeps half as many rows in flight.
# bf16 4096 x 2048 with sum, mean and max: 64 registers and 20 bytes of
# spill stores at 8 rows (ptxas holds a block of 256 threads to 64
# registers there), 48 registers and none at 4; sum and max alike.
COLUMN_OPS = ("reduction",)
COLUMN_THREADS = 256
COLUMN_UNROLL = 8
COLUMN_ACCUMULATORS = 8
COLUMN_BLOCKS_PER_SM = 2
COLUMN_ONE_SPLIT = 64 * 1024
# The row lanes' f32 sums meet in static shared memory (Ty x Tx x V per
# reduction, colwise.SHARED_BYTES at most): a kernel of many reductions
# (every mode of one input) gets fewer row lanes.
COLUMN_SHARED = 48 * 1024


# Reductions over a run of middle axes, ``[O, R, N]`` once adjacent dims are
# merged (a sum over H of [B, H, S, D]: O = B, R = H, N = S x D), are the
# same column program with the outer index as grid z: each of the O column
# problems is split and finished as one of leading axes would be, the grid
# counting O x ceil(N / V / Tx) block columns. A warp still reads 512
# consecutive bytes of a row of N, and no transposing copy is made.
# (Reductions of separated axes whose last run is the innermost, such as
# NCHW's [0, 2, 3], are split before fusion by dnn-split-reductions into a
# row program and a column program of this kind.)


def column_split(problem):
    """(O, R, N) extents of a reduction over one run of axes that leaves the
    innermost axis kept (O = 1: the leading axes), else None."""
    x = problem.anchor_inputs[0] if problem.anchor_inputs else None
    if problem.anchor not in COLUMN_OPS or x is None or len(x.shape) < 2:
        return None
    axes = tuple(sorted(problem.attr("axes", ())))
    if not axes or axes != tuple(range(axes[0], axes[-1] + 1)) or axes[-1] >= len(x.shape) - 1:
        return None
    return (math.prod(x.shape[:axes[0]]), math.prod(x.shape[axes[0]:axes[-1] + 1]),
            math.prod(x.shape[axes[-1] + 1:]))


def simt_reduce_columns(problem, rows, extent):
    """The simt-reduce-columns config of a problem that reduces ``extent``
    rows to ``rows`` columns (O x N, O column problems of N), or None."""
    split = column_split(problem)
    if split is None or extent < 1:
        return None
    outers, _, n = split
    x = problem.anchor_inputs[0]
    # The vector is 16 bytes of the narrowest input the rows launch reads.
    read = [t.element_bytes for t in problem.inputs if t.shape == x.shape] or [x.element_bytes]
    whole = max(1, len(read))
    width = max(1, pointwise.VECTOR_BYTES // min(read))
    while width > 1 and x.shape[-1] % width:
        width //= 2
    vectors = n // width
    tx = 1
    while tx < 32 and tx < vectors:
        tx *= 2
    ty = 1
    while ty < COLUMN_THREADS // tx and ty < extent:
        ty *= 2
    while ty > 1 and (1 + problem.column_sums) * tx * ty * width * 4 > COLUMN_SHARED:
        ty //= 2
    unroll = COLUMN_UNROLL // whole
    if whole == 1 and (1 + problem.column_sums) * width > COLUMN_ACCUMULATORS:
        unroll //= 2
    unroll = max(1, min(unroll, -(-extent // ty)))
    across = -(-vectors // tx) * outers
    wanted = -(-COLUMN_BLOCKS_PER_SM * problem.sms // across)
    if outers * extent * n * min(read) <= COLUMN_ONE_SPLIT * across:
        wanted = 1
    while True:
        step = ty * unroll
        tile = -(-extent // wanted)
        tile = -(-tile // step) * step  # whole steps of Ty x unroll rows
        splits = -(-extent // tile)
        # Whole steps can leave fewer blocks than SMs (few columns of many
        # rows, 2 x 8192 x 64 bf16: 64 blocks at 8 rows in flight): fewer
        # rows in flight, more blocks.
        if splits >= wanted or across * splits >= problem.sms or unroll == 1:
            break
        unroll //= 2
    then = "; the last block of a column sums its partials" if splits > 1 else ""
    what = f"{outers} x {n} columns" if outers > 1 else f"{rows} columns"
    return Config("simt-reduce-columns", (tx, ty, 1), tile=(tile,), vector=width, unroll=unroll,
                  reason=f"{problem.anchor}: {what} of {extent}: {across}x{splits} "
                         f"blocks of {tx}x{ty}, vectors of {width}, {unroll} rows in flight "
                         f"per thread, {tile} rows per block{then}")


# Row programs with column sums (simt-reduce-rows-columns,
# dnnc/codegen/gpu/reduce/rowcolumns.py): a norm backward's dx beside its dscale and
# dbias (dnn-fuse joins them). Rows too long for a warp get a block of the
# fewest threads that hold the row in registers, ROW_COLUMN_ELEMENTS a
# thread: one block holds as much of dy and x in flight as two of the row
# program's, and it stays under 128 registers a thread (8192 bf16 or f32
# on 256 threads: 104, no spills), so two 256-thread blocks fit an SM where
# four vectors a thread (512 threads, 73 registers) fit one. The rows are
# split over G blocks of consecutive rows, each with W x k rows of N f32
# sums in shared memory (W rows at a time, k column sums), so that every
# block is resident at once, ROW_COLUMN_BLOCKS_PER_SM to an SM (fewer where
# threads, registers or shared memory do not fit them), and each folds as
# many rows: G x N x 4 bytes of partials per sum, written and read once.
# Three blocks an SM where registers allow (blocks of 128 threads or fewer)
# and at least 4 rows a block: on an H100, 2048 rows of 2048 and 4096 bf16
# (cudnn-frontend's [2048, H, 1, 1] norm backwards) took 19.4 / 29.1 us
# (layernorm) and 15.9 / 23.4 us (rmsnorm), against 21.2 / 30.7 and
# 19.8 / 28.1 at two blocks and 8 rows; rows of 8192 (256 threads, two
# blocks by registers) did not move.
ROW_COLUMN_ELEMENTS = 32
ROW_COLUMN_BLOCKS_PER_SM = 3
ROW_COLUMN_REGISTERS = 128
# Rows a block folds at least: fewer would write more partials than rows.
ROW_COLUMN_MIN_ROWS = 4
SM_THREADS, SM_REGISTERS = 2048, 65536
SM_SHARED = {"sm_80": 163 * 1024, "sm_90a": 227 * 1024}


def simt_reduce_rows_columns(problem, rows, extent, row):
    """The simt-reduce-rows-columns config of a row problem whose kernel also
    sums columns (``problem.column_sums``), from its row program's config
    ``row``; None when there is none."""
    if not problem.column_sums or row is None:
        return None
    width, at_once = row.vector, row.tile[0] if row.tile else 1
    threads = row.threads
    if at_once == 1:
        threads = 64
        while threads < 1024 and threads * ROW_COLUMN_ELEMENTS < extent:
            threads *= 2
    chunks = -(-extent // (width * (threads // at_once)))
    k = problem.column_sums
    sums = at_once * k * extent * 4
    shared = SM_SHARED.get(problem.arch, SM_SHARED["sm_90a"])
    resident = min(ROW_COLUMN_BLOCKS_PER_SM, SM_THREADS // threads,
                   SM_REGISTERS // (threads * ROW_COLUMN_REGISTERS), shared // (sums + 1024))
    if resident < 1:
        return None
    blocks = min(-(-rows // max(at_once, ROW_COLUMN_MIN_ROWS)), resident * problem.sms)
    tile = -(-rows // blocks)
    tile = -(-tile // at_once) * at_once  # whole rounds of W rows
    blocks = -(-rows // tile)
    who = "a warp per row, %d rows per block" % at_once if at_once > 1 else \
        f"a block of {threads} per row"
    columns, finish_blocks = finish_columns(extent, problem.sms)
    return Config("simt-reduce-rows-columns", (threads, 1, 1),
                  tile=(at_once, tile, columns), vector=width,
                  reason=f"{problem.anchor}: {rows} rows of {extent} and {k} column sums: "
                         f"{who}, vectors of {width}, {chunks} per thread; {blocks} blocks "
                         f"of {tile} rows, {sums} B of sums each; the partials summed in a "
                         f"second launch of {finish_blocks} blocks, {columns} threads "
                         f"along the columns")


# The finish of the partials (colwise_finish.Finish): a thread per 16-byte
# vector of f32 partials and row lanes below it. 32 threads along the
# columns leave SMs idle where the columns are few: 8192 columns are 64
# blocks on 132 SMs. Fewer threads along the columns, down to
# FINISH_MIN_COLUMNS (four 16-byte vectors: two 32-byte sectors a row of
# partials), until there are FINISH_BLOCKS_PER_SM blocks an SM. Measured
# with Nsight Compute on an H200 (layernorm backward over [2048, H, 1, 1]
# bf16, 256 partials a column): H = 8192 11.4 -> 8.0 us, 4096 10.3 -> 6.5,
# 768 9.8 -> 5.8 (cuDNN's own finish kernel, in a trace: 6.9, 6.2, 2.3).
FINISH_BLOCKS_PER_SM = 2
FINISH_MIN_COLUMNS = 4


def finish_columns(extent, sms):
    """(threads of a finish block along the columns, blocks) for rows of
    ``extent`` column sums."""
    width = 4
    while extent % width:
        width //= 2
    vectors, columns = extent // width, 32
    while columns > FINISH_MIN_COLUMNS and -(-vectors // columns) < FINISH_BLOCKS_PER_SM * sms:
        columns //= 2
    return columns, -(-vectors // columns)


def rank(problem):
    rows, extent = rows_and_extent(problem)
    fast = simt_reduce(problem, rows, extent)
    both = simt_reduce_rows_columns(problem, rows, extent, fast)
    if both is not None:
        return [both] + simt_generic(rows, problem.sms, None,
                                     f"{problem.anchor}: {rows} rows of {extent} and "
                                     f"{problem.column_sums} column sums",
                                     fallback_of="simt-reduce-rows-columns")
    if fast is not None:
        return [fast] + simt_generic(rows, problem.sms, None,
                                     f"{problem.anchor}: {rows} rows of {extent}")
    columns = simt_reduce_columns(problem, rows, extent)
    if columns is not None:
        return [columns] + simt_generic(rows, problem.sms, None,
                                        f"{problem.anchor}: {rows} columns of {extent}",
                                        fallback_of="simt-reduce-columns")
    if extent == 1:  # nothing to reduce: a pointwise problem
        return pointwise.rank(problem)
    what = "windows" if problem.family == "pooling" else "rows"
    facts = f"{problem.anchor}: {rows} {what} of {extent}"
    return simt_generic(rows, problem.sms, FASTER, facts)
