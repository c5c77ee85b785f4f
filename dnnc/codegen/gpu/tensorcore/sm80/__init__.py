"""The tc-sm80 strategy: a GEMM on Ampere tensor cores (mma.sync), fed by
cp.async through a multi-stage shared-memory ring, with the epilogue fused
in registers. It runs on sm_80 and later (sm_90a takes it where tc-sm90
does not: strides TMA cannot describe, such as rows of A or B that are not
a multiple of 16 bytes).

One block per ``BM x BN`` output tile (over every batch), numbered in
grouped order. The parts, one file each (what each must provide: the
package docstring of dnnc/codegen/gpu/tensorcore/):

* ``support``: ``Tile``, ``NotSupported`` and the shared constants;
* ``loader``: the operand loader (``AsyncOperand``: cp.async copies into a
  padded stage, ldmatrix or scalar fragment reads);
* ``im2col``: a convolution's loaders (implicit GEMM: the activation
  gathered pixel by pixel, the filter a tile per tap), in ``build_conv``;
* ``kernel``: ``check`` and the kernel (prologue, software-pipelined
  mainloop of ldmatrix and mma.sync);
* ``epilogue``: the fused epilogue, stored 16 bytes a thread where it can;
* ``scheduler``: one block per tile (and K split), in grouped order;
* ``splitk``: split-K, the partials summed in split order by a second
  launch;
* ``flash``: the attention forward (FlashAttention-2's scheme on mma.sync),
  a kernel of its own beside the GEMM's parts (``build_attention``);
* ``flash_backward``: the attention backward (a dQ kernel and a dK dV
  kernel, deterministic), ``build_attention_backward``; its block in
  ``flash_backward_block``, its kernels in ``flash_backward_kernels``;
* ``flash_backward_fused``: the attention backward as one kernel, dQ
  summed by f32 reductions (not deterministic),
  ``build_attention_backward_fused``.
"""

from dataclasses import replace

from dnnc.codegen.gpu.tensorcore import phase_kernels, phases, wgrad_taps
from dnnc.codegen.gpu.tensorcore.sm80 import im2col
from dnnc.codegen.gpu.tensorcore.sm80.flash import FlashTile, build_attention
from dnnc.codegen.gpu.tensorcore.sm80.flash_backward import (
    BackwardTile, build_attention_backward,
)
from dnnc.codegen.gpu.tensorcore.sm80.flash_backward_fused import build_attention_backward_fused
from dnnc.codegen.gpu.tensorcore.sm80.kernel import Kernel, check, operand_loaders, smem_bytes
from dnnc.codegen.gpu.tensorcore.sm80.support import PAD, NotSupported, Tile

__all__ = ["PAD", "BackwardTile", "FlashTile", "NotSupported", "Tile", "build",
           "build_attention", "build_attention_backward", "build_attention_backward_fused",
           "build_conv", "check",
           "fit_element_wise", "fit_gemm", "loader_note", "smem_bytes"]


def build(fn, gemm, tile):
    """Replace kernel function ``fn``'s body by the tc-sm80 kernel of
    ``gemm``; returns what the plan should say of it beyond the config (the
    split, and how its operands are read where cp.async cannot copy 16
    bytes: ``loader_note``)."""
    loaders = operand_loaders(gemm, tile)
    check(gemm, tile, loaders)
    kernel = Kernel(fn, gemm, tile, loaders)
    kernel.build()
    notes = [kernel.splitk.note()[2:]] if kernel.splitk.split else []
    note = loader_note(gemm, loaders)
    return notes + ([note] if note else [])


def build_conv(fn, conv, tile):
    """Replace kernel function ``fn``'s body by the tc-sm80 implicit-GEMM
    kernel of convolution ``conv`` (tensorcore/conv.py, matched for K steps
    of ``tile.k``): the matmul kernel with the convolution's loaders
    (im2col.py). Returns what the plan should say of it; raises
    NotSupported, the IR unchanged but for ``conv``'s views."""
    read = {"fprop": "x", "dgrad": "dy", "wgrad": "x"}[conv.direction]
    if conv.phased:
        # A strided data gradient: a stride-1 one per stride phase.
        def check_part(part):
            check(part.gemm, tile, im2col.loaders(part, tile))

        built = []

        def build_gemm(part):
            loaders = im2col.loaders(part, tile)
            kernel = Kernel(fn, part.gemm, tile, loaders)
            built.append((loaders, kernel.splitk.note()))
            kernel.build(erase=False)
            return []

        split, _ = phase_kernels.build(fn, conv, check_part, build_gemm)
        return [f"implicit GEMM (dgrad): dy gathered by cp.async, {phases.note(conv, split)}"
                f"{_unaligned(built[0][0]) + built[0][1] if built else ''}"]
    loaders = im2col.loaders(conv, tile)
    check(conv.gemm, tile, loaders)
    kernel = Kernel(fn, conv.gemm, tile, loaders)
    kernel.build()
    return [f"implicit GEMM ({conv.direction}): {read} gathered by cp.async, {conv.taps} "
            f"filter taps x {conv.channels} channels{wgrad_taps.note(conv, tile.n)}"
            f"{_unaligned(loaders)}{kernel.splitk.note()}"]


# Accumulators plus element-wise elements a thread may hold (loader.py's
# element-wise chunks: their loads are in registers until the stage's
# stores, on top of the plan and the fragments). Measured with ptxas for
# C = 63 -> 65 bf16: 64x64x32 (4 warps: 32 + 32), 128x64x32 and 64x128x32
# (4 warps: 64 + 48), 128x128x32 (8 warps: 64 + 32) and 64x64x64 (4 warps:
# 32 + 64) assemble without spills; 128x128x32 (4 warps: 128 + 64) and
# 256x128x64 (8 warps: 128 + 96) spill.
ELEMENT_WISE_BUDGET = 128
# Registers the plan of a chunk narrower than 16 bytes (cp.async of 8 or 4
# bytes: rows of C 8 or 4 bytes apart) holds for the whole mainloop, its
# 64-bit address. Measured with ptxas for a 7x7 stem of C = 3 tf32 (4-byte
# chunks): 128x128x16 (4 warps: 64 + 2 x 32 chunks) assembles in 192
# registers without spills; 256x128x32 (8 warps: 128 + 2 x 48) spills 144
# bytes.
NARROW_CHUNK_REGISTERS = 2
# The narrowest K step _fit takes: 64 bytes of a row (32 bf16 / f16, 16 tf32).
MIN_FIT_K_BYTES = 64


def fit_element_wise(conv, tile):
    """``tile``, or for a convolution whose loaders load element by element
    or in chunks narrower than 16 bytes (rows of channels not a multiple of
    16 bytes: im2col.py) one within ``ELEMENT_WISE_BUDGET``: K halved down
    to 64 bytes, then the longer of M and N halved down to 64."""
    def keeps(smaller):
        # A filter gradient's tile lies in one filter tap (wgrad_taps.py).
        return not (conv.tiles_in_tap and conv.channels % smaller.n)
    return _fit(tile, lambda t: im2col.loaders(conv, t), keeps, narrow_chunks=True)


def fit_gemm(gemm, tile):
    """``tile``, or for a matmul whose operand rows start 2 bytes apart (an
    odd K, or an odd M or N of an operand stored MN-major: read element by
    element, kernel.operand_loaders) one within ``ELEMENT_WISE_BUDGET``, as
    ``fit_element_wise`` narrows a convolution's."""
    return _fit(tile, lambda t: operand_loaders(gemm, t), lambda smaller: True)


def _fit(tile, loaders_of, keeps, narrow_chunks=False):
    """``tile`` narrowed (K halved down to MIN_FIT_K_BYTES, then the longer
    of M and N halved down to 64, while ``keeps`` the smaller one) until the
    accumulators and the element-wise loads of ``loaders_of(tile)`` (with
    ``narrow_chunks``, also the plans of its chunks narrower than 16 bytes,
    NARROW_CHUNK_REGISTERS each: a convolution's) fit ``ELEMENT_WISE_BUDGET``
    registers a thread."""
    def load(t):
        loaders = loaders_of(t)
        held = sum(op.rows * t.k for op in loaders if op.element_wise) // t.threads
        narrow = [op for op in loaders if narrow_chunks and not op.element_wise
                  and op.width < 16]
        held += sum(NARROW_CHUNK_REGISTERS * -(-op.chunks // t.threads) for op in narrow)
        narrow = narrow or any(op.element_wise for op in loaders)
        return t.warp_m * t.warp_n // 32 + held, narrow, loaders[0].eb

    held, narrow, eb = load(tile)
    while narrow and held > ELEMENT_WISE_BUDGET:
        if tile.k * eb > MIN_FIT_K_BYTES:
            smaller = replace(tile, k=tile.k // 2)
        elif max(tile.m, tile.n) > 64:
            smaller = replace(tile, m=tile.m // 2) if tile.m >= tile.n else \
                replace(tile, n=tile.n // 2)
        else:
            break
        if not keeps(smaller):
            break
        tile = smaller
        held, _, _ = load(tile)
    return tile


def loader_note(gemm, loaders):
    """What the plan says of a matmul's operands that cp.async cannot copy
    16 bytes at a time (rows that are not 16 bytes apart), or ""."""
    pieces = []
    for op in loaders:
        inner = "K" if op.k_major else {"A": "M", "B": "N"}[op.name]
        extent = gemm.k if op.k_major else op.extent["mn"]
        if op.element_wise:
            pieces.append(f"{op.name} element by element through registers (its rows start "
                          f"2 bytes apart: {inner} = {extent} {op.operand.stored})")
        elif op.width < 16:
            pieces.append(f"{op.name} in {op.width}-byte cp.async copies (its rows are "
                          f"{op.width}-byte aligned: {inner} = {extent} {op.operand.stored})")
    if not pieces:
        return ""
    return (f"tc-sm80's unaligned loader: {', '.join(pieces)}, zero past M, N and K in the "
            "loader (no padded copy)")


def _unaligned(loaders):
    """What the plan says of operands read in pieces narrower than 16 bytes
    (channels not a multiple of 8: im2col.py), or ""."""
    pieces = [f"{op.name} element by element through registers" if op.element_wise else
              f"{op.name} in {op.width}-byte copies"
              for op in loaders if op.element_wise or op.width < 16]
    if not pieces:
        return ""
    return (f"; {', '.join(pieces)}, zero past the channels in the loader (no padded copy: "
            "TMA cannot step such pixels)")
