"""tc-sm80's attention backward: two kernels in the FlashAttention-2 manner
on mma.sync (m16n8k16: bf16 or f16 products, f32 accumulators), fed by
cp.async, with no atomics: every gradient element is summed by one thread
in a fixed order, so two runs write the same bits.

With P = exp(scale S + bias - stats) recomputed from the forward's
log-sum-exp (a row at -inf has P = 0) and delta = rowsum(dO ∘ O)::

    dV = Pᵀ dO      dP = dO Vᵀ      dS = P ∘ (dP - delta)
    dQ = scale dS K                 dK = scale dSᵀ Q

1. ``DqKernel``: a block per ``16 warps`` query rows of one (batch, head),
   each warp 16 of them (one m16 fragment). Q and dO stay in shared
   memory; K and V tiles of ``dq_n`` kv rows come through a cp.async ring::

       prologue  cp.async Q, dO and step 0's K, V (one group), then a group
                 a step up to stages - 2; meanwhile each thread computes
                 delta of its two rows from o and do in global memory and
                 writes it to a workspace (the dK dV kernel reads it)
       steps     per kv tile the rows see: S = Q Kᵀ and dP = dO Vᵀ
                 (ldmatrix, mma.sync), P and dS in registers, dQ += dS K
                 (dS passes from the accumulators to A fragments in pairs,
                 K by ldmatrix.trans); wait for the next stage, barrier
       epilogue  scale dQ, rounded to dq's type, rows past Sq dropped

2. ``DkvKernel``: a block per ``16 warps`` kv rows of one (batch, kv head),
   K and V in shared memory, the Q and dO tiles of ``dkv_m`` query rows of
   every query head of the group through the ring (the group's heads in
   turn, each over its query tiles: one fixed order). Per step Sᵀ = K Qᵀ
   and dPᵀ = V dOᵀ, Pᵀ and dSᵀ (each column's log-sum-exp and delta read
   from global memory), dV += Pᵀ dO and dK += dSᵀ Q (dO and Q by
   ldmatrix.trans).

Both use the forward's shared layout (flash.py: rows of the head dim
rounded to 16 elements and 16 bytes of padding, zero-filled past S and
past D) and its fragment algebra: an accumulator of S (m16 x n8 tiles) is,
rounded in pairs, the A fragment of the next product over those columns.

Masks (attention_tiles.py): the dQ kernel steps over the kv tiles its rows
see (``query_block``) and masks as the forward does; the dK dV kernel over
the query tiles that see its kv rows, masking the transposed scores (query
column past Sq, before the kv row's diagonal when causal, past its window,
kv rows that are padding). Padding lengths, GQA, an additive bias (bf16,
f16 or f32, any broadcast) and its gradient (dbias: the dQ kernel's dS,
written as tensorcore/attention_dbias.py says), causal at either diagonal
and sliding windows are implemented; ragged (packed) rows and paged K, V
are not.

The parts: this file the tiles, ``check`` and the host side;
flash_backward_block.py the block both kernels are made of (warps,
ldmatrix offsets, the two products, the ring); flash_backward_kernels.py
the two kernels. flash_backward_fused.py is the other form: the dK dV
kernel also sums dQ, by f32 reductions in no fixed order (the config's
``fused = 1``).

Registers: a dK dV thread holds dK and dV of its 16 kv rows (D / 2 + Dv /
2 f32) beside Sᵀ, dPᵀ and its columns' statistics: head dims up to
MAX_HEAD_DIM.
"""

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import memref

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.tensorcore.attention_dbias import BiasGradient
from dnnc.codegen.gpu.tensorcore.attention_dbias import refusal as dbias_refusal
from dnnc.codegen.gpu.tensorcore.emit import erase_replaced, launch
from dnnc.codegen.gpu.tensorcore.sm80.flash import pitch, unimplemented
from dnnc.codegen.gpu.tensorcore.sm80.flash_backward_block import position
from dnnc.codegen.gpu.tensorcore.sm80.flash_backward_kernels import DkvKernel, DqKernel
from dnnc.codegen.gpu.tensorcore.sm80.support import MAX_SHARED, WARP, NotSupported

MAX_HEAD_DIM = 128
MAX_REGISTERS = 255
# What a thread keeps beside the accumulators and a step's scores:
# addresses, the fragments in flight, the softmax's temporaries.
SPARE_REGISTERS = 48
# The features of an AttentionBackward these kernels implement.
IMPLEMENTED = ("q", "k", "v", "o", "stats", "bias", "batch", "heads", "kv_heads", "sq", "skv",
               "d", "dv", "scale", "causal", "element", "diagonal", "window", "seq_len_q",
               "seq_len_kv", "do", "dq", "dk", "dv_grad", "dbias")


@dataclass(frozen=True)
class BackwardTile:
    """Both kernels' blocks: ``warps`` warps of 16 rows (query rows in the
    dQ kernel, kv rows in the dK dV kernel); ``dq_n`` kv rows a step of the
    dQ kernel, ``dkv_m`` query rows a step of the dK dV kernel; ``stages``
    ring stages."""

    warps: int = 8
    dq_n: int = 64
    dkv_m: int = 32
    stages: int = 2

    @property
    def rows(self):
        return 16 * self.warps

    @property
    def threads(self):
        return WARP * self.warps


def smem_bytes(tile, d, dv):
    """(dQ kernel's, dK dV kernel's) dynamic shared memory: two resident
    tiles of ``rows`` rows, then the ring."""
    resident = tile.rows * (pitch(d) + pitch(dv))
    return (resident + tile.stages * tile.dq_n * (pitch(d) + pitch(dv)),
            resident + tile.stages * tile.dkv_m * (pitch(d) + pitch(dv)))


def held_registers(tile, d, dv, biased):
    """(dQ kernel's, dK dV kernel's) f32 registers a thread holds through a
    step: the accumulators, the step's two products, the pairs of P and
    dS, and the bias values; the dK dV kernel also its columns' log-sum-exp
    and delta."""
    def step(n):
        return n // 2 + n // 2 + n // 4 + (n // 2 if biased else 0)
    return (d // 2 + step(tile.dq_n),
            d // 2 + dv // 2 + step(tile.dkv_m) + tile.dkv_m // 2)


def fits(tile, d, dv, biased, shared=MAX_SHARED):
    """Why ``tile`` does not fit head dims ``d``, ``dv`` (``biased``: with
    a bias) within ``shared`` bytes and a thread's registers, or None."""
    if tile.warps not in (4, 8) or tile.dq_n not in (32, 64, 128) \
            or tile.dkv_m not in (32, 64, 128) or not 2 <= tile.stages <= 4:
        return (f"backward tile of {tile.warps} warps, {tile.dq_n} kv rows and {tile.dkv_m} "
                f"query rows a step in {tile.stages} stages: expected 4 or 8 warps, 32, 64 or "
                "128 rows a step and 2 to 4 stages")
    budget = MAX_REGISTERS - SPARE_REGISTERS
    for kernel, held in zip(("dQ", "dK dV"), held_registers(tile, d, dv, biased)):
        if held > budget:
            return (f"D {d}, Dv {dv}: the {kernel} kernel holds {held} registers a thread, "
                    f"expected at most {budget}")
    for kernel, size in zip(("dQ", "dK dV"), smem_bytes(tile, d, dv)):
        if size > shared:
            return (f"the {kernel} kernel needs {size} bytes of shared memory, more than "
                    f"{shared}")
    return None


def tile_for(d, dv, biased, shared=MAX_SHARED):
    """The BackwardTile of head dims ``d``, ``dv``: 8 warps (128 rows a
    block in both kernels), 64 kv rows a dQ step, 64 query rows a dK dV
    step for head dims up to 64 (no bias), else 32 (dK, dV and the step's
    scores in a thread's registers); the first that ``fits``, or None."""
    wide = max(d, dv) > 64 or biased
    for dkv_m in ((32,) if wide else (64, 32)):
        for dq_n in (64, 32):
            for warps in (8, 4):
                tile = BackwardTile(warps, dq_n, dkv_m)
                if fits(tile, d, dv, biased, shared) is None:
                    return tile
    return None


def check(att, tile):
    """Raise NotSupported unless these kernels with ``tile`` compute the
    backward ``att`` (tensorcore/attention.AttentionBackward)."""
    feature = unimplemented(att, IMPLEMENTED)
    if feature is not None:
        raise NotSupported(f"the attention's {feature.replace('_', ' ')}: not implemented in "
                           "tc-sm80's attention backward")
    if att.element not in ("bf16", "f16"):
        raise NotSupported(f"{att.element} q, k, v (tc-sm80's attention backward takes bf16 "
                           "and f16)")
    for name, d in (("D", att.d), ("Dv", att.dv)):
        if d % 8 or not 8 <= d <= MAX_HEAD_DIM:
            raise NotSupported(f"head dim {name} = {d}: tc-sm80's attention backward takes "
                               f"multiples of 8 up to {MAX_HEAD_DIM} (dK and dV of a kv row "
                               "are held in a thread's registers)")
    if att.bias is not None:
        kind = str(ir.MemRefType(att.bias.type).element_type)
        if kind not in (att.element, "f32"):
            raise NotSupported(f"a {kind} bias with {att.element} q, k, v: expected "
                               f"{att.element} or f32")
    if not att.scale > 0:
        raise NotSupported(f"scale {att.scale}: expected a positive scale")
    why = dbias_refusal(att) if att.dbias is not None else None
    if why:
        raise NotSupported(why)
    why = fits(tile, att.d, att.dv, att.bias is not None)
    if why:
        raise NotSupported(why)


def build_attention_backward(fn, att, tile):
    """Replace kernel function ``fn``'s body by the two backward kernels of
    ``att`` in ``tile`` (a delta workspace between them). Returns what the
    plan should say of it."""
    check(att, tile)
    body = irutil.body(fn)
    old = [op.operation for op in body.operations]
    ret = old[-1]
    with ir.InsertionPoint(ret), ret.location:
        delta = memref.alloc(ir.MemRefType.get([att.batch, att.heads, att.sq],
                                               ir.F32Type.get()), [], [])
        gradient = BiasGradient(att, tile.rows, tile.dq_n, position) \
            if att.dbias is not None else None
        for kernel in (DqKernel(att, tile, delta, gradient), DkvKernel(att, tile, delta)):
            launch(kernel.grid, tile.threads, kernel.shared, kernel.kernel)
        if gradient is not None:
            gradient.sum()
    erase_replaced(old[:-1])
    group = ", the group of query heads in turn" if att.group > 1 else ""
    return [f"attention backward on mma.sync: a dQ kernel ({tile.rows} query rows a block "
            f"over {tile.warps} warps, {tile.dq_n} kv rows a step; delta = rowsum(dO o O) "
            f"into a workspace) and a dK dV kernel ({tile.rows} kv rows a block, "
            f"{tile.dkv_m} query rows a step{group}), "
            f"K, V and Q, dO through cp.async rings of {tile.stages} stages, no atomics "
            "(deterministic)" + (f"; {gradient.note}" if gradient else "")]
