"""The tc-sm90 strategy: a persistent GEMM on Hopper tensor cores (wgmma),
fed by TMA through a shared-memory ring, with the epilogue fused in registers.

The grid is min(units, PERSISTENT_CTAS = 132) blocks. Block b computes the
``BM x BN`` tiles of ``C = A @ B`` (over every batch) numbered b, b + grid,
b + 2 grid, ... in grouped order (scheduler.py), with 1 + ``consumers``
warpgroups of 128 threads (warp specialization)::

    warpgroup 0  producer   one thread issues the TMA loads of each K step
                            (A: BM x BK, B: BN x BK or BK x BN) into stage
                            s = step % stages, after waiting for the stage
                            to be empty; the loads complete on full[s]
    warpgroups 1, 2  consumers  each owns BM/2 = 64 rows of the tile: wait
                            for full[s], issue BK/16 wgmma m64nBNk16 on
                            the stage, release the previous step's stage to
                            the producer (its empty barrier) once its wgmmas
                            are done (wgmma.wait_group 1 keeps one step in
                            flight); after a tile's last step, wait for all,
                            release that stage, then run the epilogue

The producer's and the consumers' K-step counter runs on across tiles, so
the ring is not drained between tiles: the consumers release a tile's last
stage before its epilogue, and the producer, which only waits for empty
stages, fills the ring with the next tile's K steps while the epilogue runs.

The parts, one file each (what each must provide: the package docstring of
dnnc/codegen/gpu/tensorcore/):

* ``support``: ``Tile``, ``check`` and the shared memory a tile needs; how
  each operand reaches wgmma (in place, through registers, from a transposed
  copy, or as the A of Cᵀ = Bᵀ Aᵀ);
* ``tma``: the operand loader (TMA tile loads, 128-byte swizzle);
* ``pipeline``: the ring of stages and its mbarrier pairs;
* ``mainloop``: the producer and consumer roles, the wgmmas (A from shared
  memory or from registers); ``prologue``: operand prologues converted by
  the consumers;
* ``epilogue``: the fused epilogue, stored from registers or staged in
  shared memory and stored by TMA; ``amax``: an amax of an epilogue value
  taken as it is computed;
* ``splitk``: K split over several units, summed in a fixed order (in the
  launch, in clusters, or by a second launch);
* ``scheduler``: the persistent tile scheduler; ``flash_scheduler``: the
  attention forward's (query tiles; causal tiles in pairs of equal work);
* ``kernel``: the composition (host side: descriptors, workspace, launches;
  device side: the roles).

The TMA descriptors are made on the host side (``nvgpu.tma.create.descriptor``
on the kernel function's buffers), passed to the kernel as ``!llvm.ptr``;
the runtime encodes them (``cuTensorMapEncodeTiled``, again only when a
tensor's address changes) and passes the 128 bytes by value
(dnn-tma-grid-constant marks the parameters).
"""

from dataclasses import replace

from mlir import ir

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.tensorcore import fold, phase_kernels, phases, pixel_rows, wgrad_taps
from dnnc.codegen.gpu.tensorcore.sm90.epilogue import SLOT_BYTES
from dnnc.codegen.gpu.tensorcore.sm90.im2col import (
    FilterOperand, GroupRows, Im2colOperand, PixelRows, check_conv,
)
from dnnc.codegen.gpu.tensorcore.sm90 import tf32_conv
from dnnc.codegen.gpu.tensorcore.sm90.kernel import Kernel
from dnnc.codegen.gpu.tensorcore.sm90.scheduler import PERSISTENT_CTAS
from dnnc.codegen.gpu.tensorcore.sm90.tma import TmaOperand
from dnnc.codegen.gpu.tensorcore.sm90.splitk import LAST_ARRIVAL_SPLITS
from dnnc.codegen.gpu.tensorcore.sm90.tf32_conv import tf32_gradient
from dnnc.codegen.gpu.tensorcore.sm90.support import (
    CONVERTED_A, CONVERTED_B, NotSupported, Tile, check, computes_transposed, multiplied,
    smem_bytes, transposed_gemm, transposed_operands, transposed_tile,
)

__all__ = [
    "CONVERTED_A", "CONVERTED_B", "LAST_ARRIVAL_SPLITS", "NotSupported", "PERSISTENT_CTAS",
    "SLOT_BYTES", "Tile", "build", "build_conv", "check", "smem_bytes", "transposed_operands",
]


def build_conv(fn, conv, tile, ctas=PERSISTENT_CTAS):
    """Replace kernel function ``fn``'s body by the tc-sm90 implicit-GEMM
    kernel of convolution ``conv`` (tensorcore/conv.py): the matmul kernel
    with the convolution's operand loaders (im2col.py). Returns what the
    plan should say of it."""
    if conv.phased:
        return build_phases(fn, conv, tile, ctas)
    if conv.direction == "wgrad" and tf32_gradient(conv):
        if conv.bias is not None:
            raise NotSupported("a bias gradient beside a tf32 filter gradient (its dy is read "
                               "from a transposed copy, as B)")
        return tf32_conv.build_wgrad(fn, conv, tile, ctas)
    keep = []
    ret = list(irutil.body(fn).operations)[-1]
    if conv.gemm.a.prologue is not None and conv.channels % 8:
        raise NotSupported(f"C = {conv.channels} with a prologue on x: its conversion takes "
                           "whole 16-byte pieces of channels (C a multiple of 8)")
    if fold.applies(conv, tile.k):
        with ir.InsertionPoint(ret), ret.location:
            conv, keep = fold.fold(conv)
    try:
        kernel, conv, details = _conv_kernel(fn, conv, tile, ctas, keep, ret)
    except NotSupported:
        # The fold's launches (and a tf32 gradient's filter copy) go again,
        # last made first, so that the kernel function is as it was for the
        # strategy it goes to next.
        for op in reversed(keep):
            op.erase()
        raise
    kernel.build()
    read = {"fprop": "x", "dgrad": "dy", "wgrad": "x"}[conv.direction]
    grouped = f", {conv.groups} groups (a GEMM each, the batch)" if conv.groups > 1 else ""
    how = "by TMA in im2col mode"
    if isinstance(kernel.a, PixelRows):
        how = "as a matrix of pixels by channels with tiled TMA loads (1x1, unit stride, " \
            "no padding)"
    elif tile.tiled and conv.direction != "wgrad":
        how += f" (tiled asked, but {_plain_rows_problem(conv)})"
    return [f"implicit GEMM ({conv.direction}): {read} read {how}, "
            f"{conv.taps} filter taps x {conv.channels} channels{grouped}{details}"
            f"{wgrad_taps.note(conv, tile.n)}"] + kernel.notes()


def _conv_kernel(fn, conv, tile, ctas, keep, ret):
    """(the Kernel of ``conv``, checked but not built: raises NotSupported;
    the convolution it runs, a tf32 gradient's on the filter's copy; what
    the plan says of the fold, the copy and a prologue). The launches it
    makes before ``ret`` are added to ``keep``."""
    check_conv(conv, tile)
    check(conv.gemm, tile)
    folded = ", the filter's columns folded into its channels first (tensorcore/fold.py)" \
        if keep else ""
    copied = ""
    if tf32_gradient(conv):
        # The filter copied K-major first (tf32_conv.py); checked above as
        # the copy transposed_operands names for a tf32 B.
        with ir.InsertionPoint(ret), ret.location:
            conv, launch = tf32_conv.filter_k_major(conv)
        keep.append(launch)
        copied = (", the filter copied K-major first (wgmma reads tf32 from shared memory only "
                  "K-major)")
    element = conv.gemm.element
    if conv.direction == "wgrad":
        # A: dy's pixels by K, K contiguous: a matmul operand stored K x M.
        dy = conv.gemm.a
        a = TmaOperand(dy.value, dy.dims, tile.m, True, element, k=tile.k)
        loaders = (GroupRows(a, conv.gemm.m) if conv.groups > 1 else a,
                   Im2colOperand(conv, tile.n, element, tile.k, mn_major=True))
    else:
        loaders = _conv_loaders(conv, tile)
    try:
        kernel = Kernel(fn, conv.gemm, tile, ctas, loaders=loaders, keep=keep, bias=conv.bias)
    except NotSupported:
        # Split-K's checks (the kernel constructs no IR): a cluster sum the
        # heuristics chose may not divide the splits this K allows. tf32
        # has no tc-sm80 to fall back to: its splits are summed without.
        if tile.cluster == 1 or multiplied(conv.gemm) != "tf32":
            raise
        kernel = Kernel(fn, conv.gemm, replace(tile, cluster=1), ctas, loaders=loaders,
                        keep=keep, bias=conv.bias)
    # (Read before the build erases the prologue's generic.)
    prologue = conv.gemm.a.prologue
    applied = "" if prologue is None else \
        (f"; a prologue on x ({', '.join(_op_names(prologue.ops))}; "
         f"{len(prologue.channels)} per-channel operands) run on each tile of x in shared "
         "memory, the taps in the padding zeroed after it")
    return kernel, conv, f"{folded}{copied}{applied}"


def _op_names(ops):
    """The prologue's arithmetic for the plan: its ops but the conversions
    between f32 and the stored type, in order, once each."""
    names = [o.name.split(".")[-1] for o in ops if o.name not in ("arith.extf", "arith.truncf")]
    return list(dict.fromkeys(names)) or ["a cast"]


def _conv_loaders(conv, tile):
    """The A and B loaders of a forward convolution or data gradient (its
    filter read as the GEMM's B lies: C-contiguous, or K-major where a tf32
    gradient copied it)."""
    element = conv.gemm.element
    filter_ = FilterOperand(conv, tile.n, element, tile.k, mn_major=not conv.gemm.b.k_major)
    if tile.tiled and _plain_rows_problem(conv) is None:
        # (The config asks; pixel_rows.py says when it applies.)
        return PixelRows(conv, tile.m, element, tile.k), filter_
    # x with a prologue is loaded as it lies, for the consumers to convert.
    return (Im2colOperand(conv, tile.m, element, tile.k,
                          swizzled=conv.gemm.a.prologue is None), filter_)


def _plain_rows_problem(conv):
    """Why ``conv``'s x (dy) is not read as a plain matrix
    (im2col.PixelRows), or None. A strided data gradient (split by phase)
    keeps the forward stride; a stride-1 one has its padding turned into
    the gradient's (none where the forward had none)."""
    why = pixel_rows.problem(conv.direction, conv.filter, conv.stride, conv.pre, conv.post,
                             conv.groups, conv.gemm.a.prologue is not None)
    if why is None and conv.phased:
        why = "a strided data gradient (split by phase)"
    if why is None and PixelRows.matrix_pitch(conv) is None:
        why = "its pixels do not form one matrix (strides between rows or images)"
    return why


def build_phases(fn, conv, tile, ctas=PERSISTENT_CTAS):
    """Replace kernel function ``fn``'s body by the kernels of strided data
    gradient ``conv`` (``phased``) split by stride phase
    (tensorcore/phases.py), a stride-1 implicit GEMM of this kernel per
    phase with taps. Raises NotSupported, before any IR is made, where a
    phase's loaders or ``tile`` do not take it. Returns what the plan
    should say."""
    tiles = {}

    def check_part(part):
        check_conv(part, tile)
        check(part.gemm, tile)
        # The kernel's own checks (split-K's), on the phase's K: a K split
        # the heuristics summed in clusters for the whole gradient's K may
        # not divide into them for a phase's, which then sums its splits
        # without (the kernel constructs no IR).
        key = (tuple(part.filter), tuple(part.out))
        try:
            Kernel(fn, part.gemm, tile, ctas, loaders=_conv_loaders(part, tile))
            tiles[key] = tile
        except NotSupported:
            if tile.cluster == 1:
                raise
            tiles[key] = replace(tile, cluster=1)
            Kernel(fn, part.gemm, tiles[key], ctas, loaders=_conv_loaders(part, tiles[key]))

    def build_gemm(part):
        used = tiles[(tuple(part.filter), tuple(part.out))]
        kernel = Kernel(fn, part.gemm, used, ctas, loaders=_conv_loaders(part, used))
        kernel.build(erase=False)
        return kernel.notes()

    # tf32: the filter copied K-major first (tf32_conv.py), then the
    # phases' sub-filters from the copy.
    prepare = (lambda whole: tf32_conv.filter_k_major(whole)[0]) \
        if tf32_gradient(conv) else None
    split, notes = phase_kernels.build(fn, conv, check_part, build_gemm, prepare)
    grouped = f", {conv.groups} groups (a GEMM each, the batch)" if conv.groups > 1 else ""
    copied = (", the filter copied K-major first (wgmma reads tf32 from shared memory only "
              "K-major)") if prepare else ""
    return [f"implicit GEMM (dgrad): dy read by TMA in im2col mode, "
            f"{phases.note(conv, split)}{grouped}{copied}"] + notes


def build(fn, gemm, tile, ctas=PERSISTENT_CTAS):
    """Replace kernel function ``fn``'s body by the tc-sm90 kernel of ``gemm``,
    run by up to ``ctas`` persistent blocks. Returns what the plan should say
    of it (Kernel.notes)."""
    transposed = computes_transposed(gemm, tile)
    if transposed:
        gemm = transposed_gemm(gemm)
        tile = transposed_tile(tile) or tile
    check(gemm, tile)
    kernel = Kernel(fn, gemm, tile, ctas, transposed)
    kernel.build()
    return kernel.notes()
