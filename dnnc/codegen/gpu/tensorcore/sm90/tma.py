"""tc-sm90's operand loader: how a GEMM operand's tile goes from global
memory to a stage of the shared-memory ring by TMA, and the layout it lands
in (TMA's 128-byte swizzle, which wgmma reads).

``TmaOperand`` is the loader the mainloop drives (see
dnnc/codegen/gpu/tensorcore/__init__.py for what any operand loader
provides): on the host side it makes the TMA descriptor of its buffer
(``make_descriptor``, a kernel argument); on the device side the producer
thread calls ``load`` once per K step, which issues the bulk tensor copies
of one tile and completes them on the stage's full barrier. A convolution's
implicit GEMM is meant to plug in here with a loader of the same shape that
issues im2col-mode copies.

The descriptor, its box and the load coordinates are in memory order
(``physical_order``), so that a buffer with permuted strides reads as a
row-major tensor (``tma_descriptor`` goes through a
``memref.reinterpret_cast`` to its physical view).

Im2col mode (``im2col_descriptor``, for the activation of an implicit-GEMM
convolution): the descriptor is made as a tiled one is, of the activation as
it lies in memory (``[N, H, W, C]`` or ``[N, D, H, W, C]``, C contiguous),
with a 2-D box ``[pixels, channels]`` (one GEMM row per output pixel, BK
channels of it), and carries ``dnn.im2col = {lower, upper,
element_strides}``: the pixel box's corners per spatial dim (outermost
first; for padding ``p``, filter size ``r`` and dilation ``d``: ``lower =
-p``, ``upper = p - d * (r - 1)``) and one traversal stride per dim (the
convolution's strides on the spatial dims, 1 on N and C). The host plan
turns the attribute into the manifest's ``im2col`` field and the runtime
encodes the descriptor with cuTensorMapEncodeIm2col (host_plan.py). Its
loader issues ``nvvm.CpAsyncBulkTensorGlobalToSharedClusterOp`` with
``mode = im2col``: coordinates innermost first (C, W, H[, D], N: the
column's first pixel) and one i16 offset per spatial dim, innermost first
(the filter tap).
"""

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, llvm, memref, nvgpu, nvvm

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.elementwise.vectorize import identity_layout
from dnnc.codegen.gpu.host_plan import IM2COL_ATTR
from dnnc.codegen.gpu.tensorcore.emit import i as _i, idx as _idx, ptr as _ptr
from dnnc.codegen.gpu.tensorcore.emit import shared_ptr as _shared_ptr
from dnnc.errors import LoweringError

SWIZZLE = 128          # bytes: a TMA box row; BK = SWIZZLE / element bytes


def element_bytes(element):
    """Bytes of an element of wgmma operand type ``element`` (tf32 as f32;
    fp8 one)."""
    if element in ("f8E4M3FN", "f8E5M2"):
        return 1
    return 4 if element in ("f32", "tf32") else 2


def swizzled_offset(row, chunk, byte):
    """The offset of byte ``byte`` of 16-byte chunk ``chunk`` of 128-byte row
    ``row`` of a tile in TMA's 128-byte swizzle (the layout wgmma reads and
    TMA loads and stores): row * 128 + (chunk ^ row % 8) * 16 + byte, as an
    index (each argument an index value or an int)."""
    row, chunk, byte = (_idx(x) if isinstance(x, int) else x for x in (row, chunk, byte))
    swizzled = arith.xori(chunk, arith.andi(row, _idx(7)))
    return arith.addi(arith.muli(row, _idx(SWIZZLE)),
                      arith.addi(arith.muli(swizzled, _idx(16)), byte))


def physical_order(type_):
    """The dims of memref type ``type_`` from outermost to innermost in
    memory. A row-major buffer keeps its order; a strided one (a graph input
    with transposed strides) is sorted by decreasing stride, its size-1
    dims (which never advance) first."""
    rank = ir.MemRefType(type_).rank
    if identity_layout(type_) or rank == 0:
        return list(range(rank))
    return irutil.memory_order(type_)


def physical_view(type_):
    """(shape, strides, offset) of ``type_`` with its dims in memory order
    (``physical_order``); a size-1 dim's stride becomes the buffer's span,
    a valid TMA stride that is never stepped."""
    shape, strides, offset = irutil.memref_geometry(type_)
    order = physical_order(type_)
    if order == list(range(len(shape))):
        return shape, strides, offset
    span = max([s * n for s, n in zip(strides, shape) if n != 1] + [1])
    return ([shape[d] for d in order],
            [strides[d] if shape[d] != 1 else span for d in order], offset)


@dataclass
class TmaOperand:
    """How one operand goes from global memory to a stage of the ring.

    ``dims`` maps "batch" / "mn" / "k" to the buffer's dims (gemm.Operand);
    ``mn_major`` is True for an operand stored with M or N contiguous (A
    stored K x M, B stored K x N): the box's rows are then 64 elements of M
    or N (128 bytes), a tile of BM or BN takes BM / 64 or BN / 64 boxes, and
    wgmma reads it transposed (16-bit types only).

    ``swizzled`` False loads the tile as it lies (rows of ``k`` elements, or
    of ``rows`` elements of M or N for an MN-major operand), without swizzle, in one
    box: the source tile of an operand with a prologue, which the consumers
    read, convert and write in the swizzled layout wgmma reads
    (the mainloop's prologue conversion, prologue.py).

    The descriptor, its box and the load coordinates are in memory order
    (``physical_order``): for a buffer whose strides are a permutation of
    row-major (a weight ``W[N, K]`` read as ``B[K, N]`` with strides
    ``[1, K]``) the descriptor describes a ``memref.reinterpret_cast`` of it
    to the dims as they lie in memory, so TMA sees a row-major tensor.
    """

    value: object
    dims: dict
    rows: int               # tile rows (or, MN-major, columns) of M or N
    mn_major: bool
    element: str
    descriptor: object = None   # host-side !llvm.ptr
    swizzled: bool = True
    k: int = 0                  # the tile's K (elements): the rows of an unswizzled box

    def __post_init__(self):
        t = ir.MemRefType(self.value.type)
        self.order = physical_order(t)
        # Buffer dims -> dims of the physical view.
        self.dims = {key: (None if d is None else self.order.index(d))
                     for key, d in self.dims.items()}

    @property
    def eb(self):
        return element_bytes(self.element)

    @property
    def tile_bytes(self):
        """rows x BK elements as stored (swizzled: 128-byte rows of K, or BK
        rows of 128 bytes)."""
        return self.rows * self.k * self.eb

    @property
    def pieces(self):
        """TMA boxes per tile: an MN-major swizzled tile takes one per 128 bytes of M or N."""
        return self.rows // (SWIZZLE // self.eb) if self.mn_major and self.swizzled else 1

    def box(self, bk):
        """The TMA box in memory order (outermost first)."""
        rank = ir.MemRefType(self.value.type).rank
        box = [1] * rank
        box[self.dims["k"]] = bk
        box[self.dims["mn"]] = self.rows // self.pieces
        return box

    def make_descriptor(self, bk):
        """Host side: the TMA descriptor of the buffer, as an !llvm.ptr."""
        self.descriptor = tma_descriptor(self.value, self.box(bk), self.swizzled)
        return self.descriptor

    def load(self, dest_i64, barrier, batch, mn0, k0):
        """Issue the TMA load(s) of one stage; coordinates are i32 values."""
        rank = ir.MemRefType(self.value.type).rank
        pieces = self.pieces
        for piece in range(pieces):
            coords = [_i(0)] * rank
            if self.dims["batch"] is not None:
                coords[self.dims["batch"]] = batch
            coords[self.dims["k"]] = k0
            mn = mn0
            if piece:
                mn = arith.addi(mn0, _i(piece * (SWIZZLE // self.eb)))
            coords[self.dims["mn"]] = mn
            dest = dest_i64
            if piece:
                dest = arith.addi(dest_i64, _i(piece * self.tile_bytes // pieces, 64))
            dst = llvm.addrspacecast(_ptr(7), _shared_ptr(dest))
            nvvm.CpAsyncBulkTensorGlobalToSharedClusterOp(
                dst, self.descriptor, list(reversed(coords)), barrier, [])


def tma_descriptor(value, box, swizzled=True):
    """Host side: a TMA descriptor of buffer ``value`` with ``box`` (in memory
    order, outermost first; 128-byte swizzle or none), as the !llvm.ptr the
    kernel takes. A buffer whose dims do not lie in order is described
    through a ``memref.reinterpret_cast`` to its physical view."""
    t = ir.MemRefType(value.type)
    source = value
    if physical_order(t) != list(range(t.rank)):
        shape, strides, offset = physical_view(t)
        view = ir.MemRefType.get(shape, t.element_type,
                                 layout=ir.StridedLayoutAttr.get(offset, strides))
        source = memref.reinterpret_cast(view, source, [], [], [], [offset], shape, strides)
    return _descriptor_pointer(_create_descriptor(source, box, swizzled))


def im2col_descriptor(value, pixels, channels, lower, upper, element_strides, swizzled=True):
    """Host side: an im2col-mode TMA descriptor of activation ``value`` (a
    ranked memref already in memory order, ``[N, H, W, C]`` or ``[N, D, H,
    W, C]`` with C contiguous; a ``memref.reinterpret_cast`` the caller
    made), whose box is ``pixels`` pixels of ``channels`` channels each, as
    the !llvm.ptr the kernel takes. ``lower`` and ``upper`` are the pixel
    box's corners per spatial dim and ``element_strides`` the traversal
    stride per dim, all outermost first (see the module docstring); they go
    on the descriptor op as ``dnn.im2col``, which the host plan reads."""
    rank = ir.MemRefType(value.type).rank
    lower, upper, element_strides = list(lower), list(upper), list(element_strides)
    if not 3 <= rank <= 5:
        raise LoweringError(f"im2col descriptor of {value.type}: expected a rank 3 to 5 "
                            f"activation (N, [D, H,] W, C), got rank {rank}")
    for name, got, want in (("lower", lower, rank - 2), ("upper", upper, rank - 2),
                            ("element_strides", element_strides, rank)):
        if len(got) != want:
            raise LoweringError(f"im2col descriptor of {value.type}: {name}: expected {want} "
                                f"entries, got {got}")
    op = _create_descriptor(value, [pixels, channels], swizzled)
    i64s = ir.DenseI64ArrayAttr.get
    op.attributes[IM2COL_ATTR] = ir.DictAttr.get({
        "lower": i64s(lower), "upper": i64s(upper), "element_strides": i64s(element_strides)})
    return _descriptor_pointer(op)


def _create_descriptor(source, box, swizzled):
    """The nvgpu.tma.create.descriptor op of ranked memref ``source`` (cast
    to unranked, as the op takes it) with ``box``."""
    element = ir.MemRefType(source.type).element_type
    cast = memref.cast(ir.UnrankedMemRefType.get(element, None), source)
    desc_type = ir.Type.parse(
        f"!nvgpu.tensormap.descriptor<tensor = memref<{'x'.join(map(str, box))}x{element}, 3>, "
        f"swizzle = {'swizzle_128b' if swizzled else 'none'}, l2promo = l2promo_256b, "
        "oob = zero, interleave = none>")
    return nvgpu.TmaCreateDescriptorOp(desc_type, cast, [_idx(b) for b in box]).operation


def _descriptor_pointer(op):
    """The descriptor made by ``op`` as the !llvm.ptr a kernel argument is."""
    return ir.Operation.create("builtin.unrealized_conversion_cast", results=[_ptr()],
                               operands=[op.results[0]]).results[0]
