"""tf32 convolution gradients on tc-sm90: how their operands reach wgmma.

wgmma reads tf32 from shared memory only K-major (support.py). A forward
convolution's operands are both K-major (x by im2col, pixels by channels;
the filter ``[K, taps, C]``), but each gradient has an operand that is not:

* **Data gradient** (dx = im2col(dy) x filter): A, dy by im2col, is
  K-major; B, the filter read as ``[K, taps, C]`` with C (the GEMM's N)
  contiguous, is not. ``filter_k_major`` copies it ahead of the GEMM into
  ``[G·C/G, taps, K/G]`` (K contiguous, rows padded to 16 bytes) by the tiled
  transposing copy (elementwise/transpose.py), and the GEMM reads the copy
  as a forward convolution reads its filter (sm90/im2col.FilterOperand,
  K-major). Chosen over the other two answers: the filter is the small
  operand (a 3x3 512 -> 512 filter is 9 MiB of f32 against 13 MiB for dy
  of the same layer at batch 32, read once and written once), the mainloop
  stays the tf32 forward's (A and B from shared memory), and the stride
  phases' sub-filter copy (phase_kernels.py) reads the copy as it reads a
  filter. The transposed product (dxᵀ = filterᵀ im2col(dy)ᵀ, the filter
  through registers) would need no copy, but would move every A fragment
  through registers at each K step for the whole GEMM.
* **Filter gradient** (dw = dyᵀ x im2col(x), the reduction over N·P·Q):
  both operands have the pixels (K) outermost: dy ``[N·P·Q, K]`` and x by
  im2col. The im2col operand cannot be copied (it is never stored), so it
  must be A of the transposed product ``dwᵀ = im2col(x)ᵀ dy``, read from
  the stage into registers (support.registers_a, the matmul's answer for a
  tf32 A stored K x M); its B, dy, is copied ahead of the GEMM into
  ``[K, N·P·Q]`` (``dy_k_major``, pixels contiguous, rows padded to 16
  bytes): a read and a write of dy, where the GEMM reads it once per
  column of tiles. The epilogue stores dw as C (PairEpilogue swaps the
  indices back), so split-K and fusion are the matmul's; groups are its
  batch, as a bf16 filter gradient's.

``build_wgrad`` builds the filter gradient; the data gradient goes through
``sm90.build_conv`` (and ``build_phases`` where strided) with the filter
copied by ``filter_k_major``. Lit test:
test/lit/passes/dnn_map_tensor_cores_tf32_conv.mlir.
"""

from dataclasses import replace

from mlir import ir
from mlir.dialects import memref

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.elementwise.transpose import Axis, Copy, emit
from dnnc.codegen.gpu.tensorcore.gemm import Operand
from dnnc.codegen.gpu.tensorcore.sm90.support import (
    NotSupported, multiplied, transposed_gemm, transposed_tile,
)

# TMA steps rows by multiples of 16 bytes.
ROW_BYTES = 16


def tf32_gradient(conv):
    """Whether ``conv`` is a data or filter gradient multiplied as tf32."""
    return conv.direction != "fprop" and multiplied(conv.gemm) == "tf32"


def _padded(n, element):
    unit = ROW_BYTES // irutil.element_bytes(element)
    return -(-n // unit) * unit


def _view(buffer, shape, strides):
    element = ir.MemRefType(buffer.type).element_type
    t = ir.MemRefType.get(shape, element, layout=ir.StridedLayoutAttr.get(0, strides))
    return memref.reinterpret_cast(t, buffer, [], [], [], [0], shape, strides)


def filter_k_major(conv):
    """Emit, at the current insertion point (host side), the launch that
    copies data gradient ``conv``'s filter (``[K, taps, C/G]``, C
    contiguous) into ``[G·C/G, taps, K/G]`` with K contiguous:
    ``copy[g C/G + c, t, k] = w[g K/G + k, t, c]``, each group's rows of C
    after the previous group's (the loader offsets a group's rows by the
    GEMM's N, as a forward convolution's). Returns (the Conv reading the
    copy K-major, the launch op, which the kernel's build keeps)."""
    w = conv.w
    element = ir.MemRefType(w.type).element_type
    (k_all, taps, cg), strides, offset = irutil.memref_geometry(w.type)
    groups = conv.groups
    kg = k_all // groups
    pitch = _padded(kg, element)
    dest = memref.alloc(ir.MemRefType.get([groups * cg, taps, pitch], element), [], [])
    row = taps * pitch
    # r: the source's contiguous axis (C), k: the copy's (K); the groups
    # and the taps are the batch.
    copy = Copy(Axis(cg, strides[2], row), Axis(kg, strides[0], 1),
                (Axis(groups, kg * strides[0], cg * row), Axis(taps, strides[1], pitch)),
                offset, 0)
    launch = emit(copy, w, dest)
    view = _view(dest, [groups * cg, taps, kg], [row, pitch, 1])
    b = Operand(view, {"batch": None, "mn": 0, "k": 2}, conv.gemm.b.element)
    return replace(conv, w=view, gemm=replace(conv.gemm, b=b)), launch


def dy_k_major(gemm):
    """Emit, at the current insertion point (host side), the launch that
    copies a filter gradient's dy (the GEMM's A, ``[N·P·Q, K]`` with K
    contiguous, every group's channels) into ``[K, N·P·Q]`` with the pixels
    contiguous. Returns (its Operand as the B of the transposed product,
    K-major, group g's rows g·K/G onward; the launch)."""
    a = gemm.a
    element = ir.MemRefType(a.value.type).element_type
    (pixels, channels), strides, offset = irutil.memref_geometry(a.value.type)
    pitch = _padded(pixels, element)
    dest = memref.alloc(ir.MemRefType.get([channels, pitch], element), [], [])
    copy = Copy(Axis(channels, strides[1], pitch), Axis(pixels, strides[0], 1), (), offset, 0)
    launch = emit(copy, a.value, dest)
    view = _view(dest, [channels, pixels], [pitch, 1])
    return Operand(view, {"batch": None, "mn": 0, "k": 1}, a.element), launch


def check_wgrad(conv, tile):
    """Raise NotSupported unless the transposed product of tf32 filter
    gradient ``conv`` runs in ``tile`` (its transposed tile)."""
    if transposed_tile(tile) is None:
        raise NotSupported(f"a tf32 filter gradient in tiles of {tile.n} columns: its "
                           "transposed product (x through registers) takes tiles of N 64 or "
                           "128")


def build_wgrad(fn, conv, tile, ctas):
    """Replace kernel function ``fn``'s body by tf32 filter gradient
    ``conv`` as ``dwᵀ = im2col(x)ᵀ dy`` (the module docstring): x by TMA's
    im2col mode into registers, dy copied K-major first. Raises
    NotSupported (the copy's IR erased again) where ``tile`` does not take
    it. Returns the plan's notes."""
    from dnnc.codegen.gpu.tensorcore.sm90.im2col import GroupRows, Im2colOperand, check_conv
    from dnnc.codegen.gpu.tensorcore.sm90.kernel import Kernel
    from dnnc.codegen.gpu.tensorcore.sm90.support import check, registers_a

    check_wgrad(conv, tile)
    check_conv(conv, tile)
    body = irutil.body(fn)
    before = len(list(body.operations))
    ret = list(body.operations)[-1]
    with ir.InsertionPoint(ret), ret.location:
        b, launch = dy_k_major(conv.gemm)
    gemm = replace(transposed_gemm(conv.gemm), b=b)

    def kernel_of(used):
        check(gemm, used)
        if not registers_a(gemm):
            raise NotSupported("x cannot be read into registers where it lies")
        # Groups are the GEMM's batch: group g's x channels (the im2col
        # loader offsets them) and dy rows of the copy (GroupRows).
        dy = _tma(b, used)
        loaders = (Im2colOperand(conv, used.m, gemm.element, used.k, mn_major=True),
                   GroupRows(dy, gemm.n) if conv.groups > 1 else dy)
        return Kernel(fn, gemm, used, ctas, c_transposed=True, loaders=loaders, keep=[launch])

    flipped = transposed_tile(tile)
    try:
        try:
            kernel = kernel_of(flipped)
        except NotSupported:
            # Split-K's checks (the kernel constructs no IR): a cluster sum
            # the heuristics chose may not divide the splits this K allows;
            # the splits are then summed without one.
            if flipped.cluster == 1:
                raise
            flipped = replace(flipped, cluster=1)
            kernel = kernel_of(flipped)
    except NotSupported:
        # The copy's ops lie between the old body and its return.
        made = [op.operation for op in body.operations][before - 1:-1]
        for op in reversed(made):
            op.erase()
        raise
    kernel.build()
    grouped = f", {conv.groups} groups (a GEMM each, the batch)" if conv.groups > 1 else ""
    return [f"implicit GEMM (wgrad, tf32): x read by TMA in im2col mode, {conv.taps} filter "
            f"taps x {conv.channels} channels{grouped}; computes dw^T = im2col(x)^T dy in "
            f"{flipped.m}x{flipped.n} tiles: x is its A, read into registers, dy copied "
            "K-major first (wgmma reads tf32 from shared memory only K-major)"] + \
        [n for n in kernel.notes() if not n.startswith("computes C^T")]


def _tma(operand, tile):
    from dnnc.codegen.gpu.tensorcore.sm90.tma import TmaOperand

    return TmaOperand(operand.value, operand.dims, tile.n, False, operand.element, k=tile.k)
