"""A tc-sm90 kernel, composed: operand loaders (tma.py), the ring
(pipeline.py), the warp-specialized mainloop (mainloop.py, prologue.py), the
epilogue (epilogue.py), split-K (splitk.py), the tail split (tail_split.py)
and the tile scheduler (scheduler.py), over one geometry (``Kernel``).

Host side (``Kernel.build``, at the kernel function's return): the copies of
operands that wgmma or TMA cannot read in place, the TMA descriptors, the
zeroing of amax outputs (amax.py), the split-K and tail split workspaces, the ``gpu.launch`` (in clusters for a cluster sum) and a
second launch that sums split-K partials where this one does not. Device
side (``Kernel.kernel``): align the dynamic shared memory, initialize the
ring's barriers, and branch on the warpgroup: 0 runs the producer, the
others the consumers.

The block's dynamic shared memory, from its 1024-byte aligned base::

    ring         stages x (A's tile, then B's)            Kernel.ring_bytes
    converted    prologue operands' converted tiles       Kernel.converted
    slots        the staged epilogue's output slots       Epilogue.staging_bytes
    barriers     full[stages], empty[stages]              pipeline.Ring
"""

from mlir import ir
from mlir.dialects import arith, gpu

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.elementwise.pad_rows import padded_copy, pitch_of
from dnnc.codegen.gpu.elementwise.transpose import transposed_copy
from dnnc.codegen.gpu.tensorcore.emit import (
    cmp as _cmp, erase_replaced, i as _i, idx as _idx, if_ as _if, shared_base,
)
from dnnc.codegen.gpu.tensorcore.sm90.bias_grad import BiasGradSum
from dnnc.codegen.gpu.tensorcore.sm90.block_scales import BlockScaling
from dnnc.codegen.gpu.tensorcore.sm90.epilogue import Epilogue
from dnnc.codegen.gpu.tensorcore.sm90.mainloop import Consumer, Producer
from dnnc.codegen.gpu.tensorcore.sm90.pipeline import Ring
from dnnc.codegen.gpu.tensorcore.sm90.prologue import Prologues
from dnnc.codegen.gpu.tensorcore.sm90.scheduler import TileScheduler
from dnnc.codegen.gpu.tensorcore.sm90.splitk import SplitK
from dnnc.codegen.gpu.tensorcore.sm90.tail_split import TailSplit
from dnnc.codegen.gpu.tensorcore.sm90.support import (
    ALIGN, WARPGROUP, converted_bytes, multiplied, padded_operands, prologue_sources,
    registers_a, smem_bytes, transposed_operands, wgmma_types,
)
from dnnc.codegen.gpu.tensorcore.sm90.tma import TmaOperand, element_bytes


class Kernel:
    """The tc-sm90 kernel of ``gemm`` in ``tile``s, replacing kernel function
    ``fn``'s body, run by up to ``ctas`` persistent blocks. ``c_transposed``:
    ``gemm`` is Cᵀ = Bᵀ Aᵀ's (support.computes_transposed), so the
    accumulator's rows are C's columns. The parts read the geometry here and
    each other through this object."""

    def __init__(self, fn, gemm, tile, ctas, c_transposed=False, loaders=None, keep=(),
                 bias=None):
        self.fn = fn
        # Ops made ahead of the kernel that its build keeps (a fold's launches).
        self.keep = list(keep)
        self.gemm = gemm
        self.tile = tile
        self.c_transposed = c_transposed
        self.element = multiplied(gemm)
        # wgmma's names of A's and B's types (fp8: e4m3 or e5m2 each).
        self.types = wgmma_types(gemm)
        self.eb = element_bytes(self.element)
        # An operand with a prologue is loaded as stored, unswizzled, and
        # converted by the consumers (prologue.py).
        self.sources = prologue_sources(gemm)
        a_source, b_source = self.sources
        # An operand wgmma or TMA cannot read where it lies (transposed_operands)
        # is first copied transposed (M x K, N x K) by a launch of its own
        # (transposed_copy, at build); its TmaOperand is the copy's.
        self.transposed = transposed_operands(gemm)
        # A K-major operand TMA cannot read (rows of an odd K) is first
        # copied into rows of a 16-byte multiple where that pays
        # (padded_operands; pad_rows.padded_copy, at build).
        self.padded = padded_operands(gemm)
        # An implicit GEMM brings its own loaders (im2col.py), which read
        # the operands where they lie.
        self.implicit_gemm = loaders is not None
        if loaders is not None:
            self.transposed, self.padded = {}, {}
        copied = {**self.transposed, **self.padded}
        self.a = loaders[0] if loaders is not None else None if "A" in copied else \
            TmaOperand(gemm.a.value, gemm.a.dims, tile.m, not gemm.a.k_major,
                       a_source or self.element, swizzled=a_source is None, k=tile.k)
        self.b = loaders[1] if loaders is not None else None if "B" in copied else \
            TmaOperand(gemm.b.value, gemm.b.dims, tile.n, not gemm.b.k_major,
                       b_source or self.element, swizzled=b_source is None, k=tile.k)
        # A's fragments go from the stage to registers (registers_a).
        self.registers_a = self.a is not None and registers_a(gemm)
        self.scheduler = TileScheduler(gemm, tile, ctas)
        # A filter gradient's bias gradient, summed from dy's tiles
        # (bias_grad.py; ``bias`` a conv_bias_grad.BiasGrad).
        self.bias = BiasGradSum(self, bias) if bias is not None else None
        # A's tile first in a stage, then B's: rows x BK elements as stored
        # (what the TmaOperand of a transposed copy will load too).
        self.a_bytes = tile.m * tile.k * element_bytes(a_source or self.element)
        self.stage_bytes = self.a_bytes + \
            tile.n * tile.k * element_bytes(b_source or self.element)
        self.ring_bytes = tile.stages * self.stage_bytes
        self.splitk = SplitK(self)
        self.converted = converted_bytes(tile, [x is not None for x in self.sources])
        self.acc_type = ir.Type.parse(
            "!llvm.struct<(" + ", ".join(["f32"] * (tile.n // 2)) + ")>")
        self.arguments = list(irutil.body(fn).arguments)
        self.epilogue = Epilogue(self)
        # A bias gradient's warps read their stage with loads of their own
        # (after its wgmmas are issued): each warp releases it (bias_grad.py).
        self.ring = Ring(tile.stages, self.stage_bytes,
                         self.epilogue.staging_offset + self.epilogue.staging_bytes,
                         tile.consumers, WARPGROUP // 32 if self.bias is not None else 1)
        self.prologues = Prologues(self)
        # Block scales applied per K step (block_scales.py); None: a plain GEMM.
        self.block_scaling = BlockScaling(self) if gemm.scales is not None else None
        # The last wave's tiles split along K (tail_split.py; raises
        # NotSupported where it cannot run).
        self.tail = TailSplit(self)
        self.base = None    # device side: the block's aligned shared-memory base (i64)
        self.tid = None     # device side: the thread's index in the block

    def notes(self):
        """What the plan says of this kernel: how each operand that wgmma
        cannot read from where it lies gets there, how the epilogue stores."""
        stored = {"A": "A stored K x M", "B": "B stored K x N"}
        out = [f"{stored[name]} copied transposed first ({why})"
               for name, why in self.transposed.items()]
        out += [f"{name} copied into rows of {pitch_of(self.gemm.k, self.eb)} elements first "
                f"({why})" for name, why in self.padded.items()]
        if self.c_transposed:
            out.append(f"computes C^T = B^T A^T in {self.tile.m}x{self.tile.n} tiles: B stored "
                       "K x N is its A, read into registers (wgmma reads tf32 from shared "
                       "memory only K-major)")
        elif self.registers_a:
            out.append("A stored K x M is read into registers (wgmma reads tf32 from shared "
                       "memory only K-major)")
        if self.block_scaling is not None:
            out.append(self.block_scaling.note())
        if self.epilogue.note:
            out.append(self.epilogue.note)
        if self.bias is not None:
            out.append(self.bias.note())
        if self.tail.note():
            out.append(self.tail.note())
        return out

    # -- host side ----------------------------------------------------------

    def build(self, erase=True):
        """Replace the kernel function's body: the launches, then erase the
        linalg ops the kernel computes (``erase`` False: the caller does,
        after more kernels of the same body: a data gradient's stride
        phases)."""
        body = irutil.body(self.fn)
        old = [op.operation for op in body.operations]
        ret = old[-1]
        tile, scheduler = self.tile, self.scheduler
        with ir.InsertionPoint(ret):
            if "A" in self.transposed:
                self.a = self.transposed_copy(self.gemm.a, self.gemm.m, tile.m, self.sources[0])
            if "B" in self.transposed:
                self.b = self.transposed_copy(self.gemm.b, self.gemm.n, tile.n, self.sources[1])
            if "A" in self.padded:
                self.a = self.padded_copy(self.gemm.a, self.gemm.m, tile.m)
            if "B" in self.padded:
                self.b = self.padded_copy(self.gemm.b, self.gemm.n, tile.n)
            self.a.make_descriptor(tile.k)
            self.b.make_descriptor(tile.k)
            self.epilogue.make_descriptors()
            self.epilogue.amax.zero()
            self.splitk.allocate()
            self.tail.allocate()
            if self.bias is not None:
                self.bias.allocate()
            shared = smem_bytes(tile, self.element, self.sources) + self.epilogue.staging_bytes
            if self.splitk.cluster > 1:
                _, block = irutil.cluster_launch(scheduler.ctas, tile.threads,
                                                 self.splitk.cluster, shared=shared)
            else:
                launch = gpu.LaunchOp((_idx(scheduler.ctas), _idx(1), _idx(1)),
                                      (_idx(tile.threads), _idx(1), _idx(1)),
                                      dynamic_shared_memory_size=_i(shared))
                block = launch.regions[0].blocks[0]
            with ir.InsertionPoint(block):
                self.kernel()
                gpu.TerminatorOp()
            if self.splitk.second_launch:
                self.splitk.reduce_splits()
        # The linalg ops and their buffers go; views the launch reads (an
        # implicit GEMM's operands) and a fold's launches stay.
        if erase:
            erase_replaced(old[:-1], self.keep)

    def transposed_copy(self, operand, extent, rows, source):
        """A stored K x M or B stored K x N (``operand``, ``extent`` its M or
        N, ``rows`` its tile's, ``source`` its stored type where a prologue
        converts its tiles): copy it into a row-major [batch,] M x K or N x K
        buffer by a launch of its own (transpose.transposed_copy), and return
        the TmaOperand of the copy (K-major). It costs a read and a write of
        the operand ahead of the GEMM."""
        batched = operand.dims["batch"] is not None
        # Rows of an odd K padded to 16 bytes (transposed_operands).
        pitch = pitch_of(self.gemm.k, element_bytes(source or self.element))
        copy = transposed_copy(operand.value, operand.dims, extent, self.gemm.k,
                               self.gemm.batch, pitch)
        rank = 3 if batched else 2
        return TmaOperand(copy, {"batch": 0 if batched else None, "mn": rank - 2,
                                 "k": rank - 1}, rows, False, source or self.element,
                          swizzled=source is None, k=self.tile.k)

    def padded_copy(self, operand, extent, rows):
        """A K-major ``operand`` whose rows TMA cannot step by (``extent``
        its M or N, ``rows`` its tile's): copy it into rows of a 16-byte
        multiple by a launch of its own (pad_rows.padded_copy), and return
        the TmaOperand of the copy's first K columns (TMA zero-fills past
        them). It costs a read and a write of the operand ahead of the
        GEMM."""
        batched = operand.dims["batch"] is not None
        view = padded_copy(operand.value, operand.dims, extent, self.gemm.k, self.gemm.batch)
        rank = 3 if batched else 2
        return TmaOperand(view, {"batch": 0 if batched else None, "mn": rank - 2,
                                 "k": rank - 1}, rows, False, self.element, k=self.tile.k)

    # -- device side --------------------------------------------------------

    def kernel(self):
        """The body of a block: shared memory, barriers, the warpgroups' roles."""
        tid = gpu.thread_id(gpu.Dimension.x)
        self.tid = tid
        warpgroup = arith.divui(tid, _idx(WARPGROUP))
        self.base = shared_base(ALIGN)
        self.ring.base = self.base
        _if(_cmp("eq", tid, _idx(0)), self.ring.init_barriers)
        gpu.barrier()
        _if(_cmp("eq", warpgroup, _idx(0)), Producer(self).run, Consumer(self).run)
