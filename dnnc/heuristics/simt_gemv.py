"""Rules for simt-gemv: a matmul whose M or N is at most MAX_ROWS (a GEMV,
or a batch of them) runs on the CUDA cores in one launch
(dnnc/codegen/gpu/simt_gemv/), f32 sums of f32 products (FFMA; f32
operands as tf32 where the compute type says, bf16 and f16 widened).

Such a problem is a few microseconds long, and what sets its time is the
chain of dependent latencies each thread waits through, not arithmetic:
the launch, the rounds of global loads of its share of K, the sum of the
threads that share an output. So the block's threads split each output's
K until a thread walks at most MAX_ITERATIONS loads (unrolled: all in
flight together where registers allow), in one launch, where simt-gemm
runs a 32-row tile for one row and sums a K split in a second launch, and
the tensor cores pad M to 64 (tc-sm90) or 16 (tc-sm80) rows.

The layout of the long operand W decides the thread mapping (see the
kernel): K-major, ``split`` lanes of a warp per output (a power of 2 up to
32) reading 16 bytes of K each; MN-major, a warp's lanes across L (``vector``
columns each) and ``split`` groups of them down K. Blocks are made
narrower (fewer columns) until the grid has a block an SM, where L allows.

Where it is chosen first (``confident``): f32 multiplied exactly (simt-gemm
is the other choice: FFMA too, on tiles 32 rows high); and any operand type
whose long operand is at most SMALL_BYTES (a latency-bound problem, where
the tensor cores' padded tiles and K steps only add to the chain). A
larger 16-bit or tf32 GEMV stays on the tensor cores (tc-sm90 streams B at
about copy bandwidth: bf16 1 x 4096 x 4096 ran at 90.6% of cuBLAS), with
simt-gemv ranked after them for autotuning and overrides. These rules are
reasoned, not yet measured on a GPU: bench/cases.py's "(simt-gemv)" twins
time them beside the plans they replace.
"""

from dnnc.codegen.gpu.simt_gemv.support import MAX_ROWS, WARP
from dnnc.heuristics.config import Config

STRATEGY = "simt-gemv"
# Loads a thread walks down its share of K (each round of unroll of them
# one global-memory latency).
MAX_ITERATIONS = 8
MAX_UNROLL = 8
# Registers for the values of a chunk's loads in flight: an MN-major W's
# blocks are up to 1024 threads (64 registers a thread at most); a K-major
# W's are up to 256, which may hold more.
LOAD_REGISTERS = 64
LOAD_REGISTERS_K_MAJOR = 128
# A long operand up to this many bytes: a latency-bound GEMV.
SMALL_BYTES = 2 << 20
MAX_SHARED = 48 * 1024


def _ceil(a, b):
    return -(-a // b)


def _pow2_at_least(x):
    p = 1
    while p < x:
        p *= 2
    return p


def skinny(rows, length, k, batch, w_k_major, widest, element_bytes, sms):
    """(threads, split, vector, unroll, why) for a GEMV of ``rows`` x
    ``length`` outputs over ``k`` (x ``batch``), its long operand W
    K-major or not, loads up to ``widest`` elements of W's contiguous dim,
    on ``sms`` SMs."""
    if w_k_major:
        vector = widest
        split = next((s for s in (1, 2, 4, 8, 16, 32)
                      if _ceil(k, s * vector) <= MAX_ITERATIONS), WARP)
        # Columns a block: T / split; the widest block that still gives
        # the SMs a block each, else the narrowest (64 threads).
        threads = 64
        for t in (256, 128, 64):
            if t >= split and _ceil(length, t // split) * batch >= sms:
                threads = t
                break
        iterations = _ceil(k, split * vector)
        unroll = max(1, min(iterations, MAX_UNROLL,
                            LOAD_REGISTERS_K_MAJOR // (vector * (rows + 1))))
        why = (f"W K-major: {split} lanes a column reading {vector} of K each, "
               f"{threads // split} columns a block")
    else:
        vector = max(1, min(widest, MAX_ROWS * 4 // max(1, rows)))
        lanes = WARP
        while _ceil(length, lanes * vector) * batch < sms and vector > 1:
            vector //= 2
        while _ceil(length, lanes * vector) * batch < sms and lanes > 8:
            lanes //= 2
        # Groups down K: enough for MAX_ITERATIONS loads a thread, in whole
        # warps (a multiple of WARP / lanes), within 1024 threads and the
        # shared memory of their partials.
        step = WARP // lanes
        most = min(1024 // lanes, MAX_SHARED // (rows * lanes * vector * 4))
        split = _ceil(max(1, _ceil(k, MAX_ITERATIONS)), step) * step
        if split > most:
            split = max(step, most // step * step)
        threads = lanes * split
        iterations = _ceil(k, split)
        unroll = max(1, min(iterations, MAX_UNROLL, LOAD_REGISTERS // (vector + rows)))
        why = (f"W MN-major: {lanes} lanes across it reading {vector} "
               f"column{'s' if vector > 1 else ''} each, "
               f"{split} groups down K summed through shared memory")
    blocks = _ceil(length, threads // split * (1 if w_k_major else vector)) * batch
    loads = _ceil(k, split * (vector if w_k_major else 1))
    why += (f"; {blocks} blocks of {threads} threads, {loads} loads of K a thread, "
            f"{unroll} in flight")
    return threads, split, vector, unroll, why


def widest_of(dtype_bytes, contiguous):
    """The widest load (elements, up to 16 bytes) a row-major dim of
    ``contiguous`` elements allows."""
    width = 16 // dtype_bytes
    while width > 1 and contiguous % width:
        width //= 2
    return width


def simt_gemv(problem, m, n, k, batch, facts, compute="f32"):
    """([simt-gemv Config], confident) for a matmul of M x N x K (x
    ``batch``) whose smaller side is at most MAX_ROWS; ([], False) for any
    other. Layouts are read as the graph gives them (A M x K, B K x N,
    row-major); dnn-map-simt-gemv chooses again for the operands as stored
    where they differ."""
    if min(m, n) > MAX_ROWS or not min(m, n, k, batch) or problem.prologues or \
            problem.dtype not in ("f32", "f16", "bf16") or len(problem.anchor_inputs) < 2 or \
            not problem.anchor_outputs:
        return [], False
    if sum(1 for d in problem.anchor_outputs[0].shape[:-2] if d > 1) > 1:
        return [], False  # batch dims broadcast against each other: one batch dim only
    nbytes = problem.anchor_inputs[0].element_bytes
    swapped = n < m
    rows, length = (n, m) if swapped else (m, n)
    # Row-major: A is K-major, B MN-major; W is B (M small) or A (N small).
    w_k_major = swapped
    widest = widest_of(nbytes, k if w_k_major else length)
    threads, split, vector, unroll, why = skinny(rows, length, k, batch, w_k_major, widest,
                                                 nbytes, problem.sms)
    w_bytes = length * k * batch * nbytes
    exact = problem.dtype == "f32" and compute == "f32"
    confident = exact or w_bytes <= SMALL_BYTES
    side = "N" if swapped else "M"
    mult = "FFMA, f32 multiplied exactly" if exact else (
        "FFMA of tf32-rounded f32" if compute == "tf32" else f"FFMA of {problem.dtype} as f32")
    reason = (f"{facts}; {side} = {rows}: a GEMV on the CUDA cores ({mult}), one launch; {why}"
              + ("" if confident else
                 f" (W is {w_bytes >> 20} MiB: bandwidth-bound, after the tensor cores)"))
    return [Config(STRATEGY, (threads, 1, 1), split=split, vector=vector, unroll=unroll,
                   reason=reason)], confident
