"""tc-sm90's bias gradient beside a filter gradient: db[k] = the sum of dy
over N·(D)·P·Q, taken from the dy tiles the GEMM already has in shared
memory (tensorcore/conv_bias_grad.py says what joins).

A filter gradient's A is dy, ``[N·P·Q, K]`` read MN-major: a stage holds,
for each consumer warpgroup, one box of BK pixels (rows of 128 bytes) by
the consumer's 64 channels (K, the GEMM's M), in TMA's 128-byte swizzle.
Every column of output tiles reads all of dy once; the blocks working on
the first column (``tile_n == 0``, and tap 0 where the taps are the GEMM's
batch) also sum it:

1. **Each K step** (``step``), after the consumer has issued its wgmmas
   on the stage and before it releases it: warp w of the warpgroup sums
   channels 16 w .. 16 w + 15 of the consumer's 64 (16-byte chunks 2 w and
   2 w + 1 of each row), lane l the chunk 2 w + l % 2 of rows l / 2 + 16 j
   (BK / 16 rows): one 16-byte shared load a row, 8 conversions and adds
   into the thread's 8 f32 sums. A warp's load of 16 rows by 2 chunks
   meets each of the 8 swizzled chunk positions 4 times: 4 wavefronts for
   512 bytes, no conflict beyond that. Pixels past N·P·Q and channels past
   K are TMA's zero fill.
2. **After the unit's last step** (``finish``): the 16 lanes of a chunk
   add their sums by xor shuffles (2, 4, 8, 16), always in the same order.
   Unsplit, lanes 0 and 1 write their 8 channels of db (in db's type).
   Split K: they write the split's f32 partial into a ``[splits, K]``
   workspace, and whoever runs the epilogue of that tile's rows sums the
   splits in split order (``sum_splits``: the warp that arrives last, the
   owner of a cluster's slice, or the second launch, ``reduce``), as the
   weight partials are summed: the result does not depend on timing.
   Warp w of a consumer holds the accumulator rows 16 w .. 16 w + 15 of
   its 64, the same channels its bias sums cover, so the warp that sums
   a slice's weight partials sums its bias partials too.

A warp sums 32 bytes a row of a 128-byte box for each of BK / 16 rows a
step: 4 16-byte loads and 32 adds a thread for BK = 64, while its
wgmmas run. Since the warps read the stage with loads of their own after
issuing the wgmmas, a wgmma's completion no longer says that the stage
is free: each warp releases it (the ring counts one arrival per warp,
after a bar.warp.sync that orders its lanes' loads before lane 0's
arrival), where a kernel without a bias gradient has one arrival per
warpgroup.
"""

from mlir import ir
from mlir.dialects import arith, gpu, llvm, memref, nvvm, scf, vector

from dnnc.codegen.gpu.tensorcore.emit import (
    cmp as _cmp, idx as _idx, if_ as _if, shared_ptr as _shared_ptr, to_i64 as _to_i64,
)
from dnnc.codegen.gpu.tensorcore.sm90.support import NotSupported
from dnnc.codegen.gpu.tensorcore.sm90.tma import SWIZZLE, element_bytes, swizzled_offset

LANES = 8          # a thread's channels: one 16-byte chunk of 16-bit elements


class BiasGradSum:
    """The bias gradient ``bias`` (conv_bias_grad.BiasGrad) summed by
    ``kernel`` (kernel.Kernel), whose A is dy read MN-major. Raises
    NotSupported where the kernel reads dy otherwise."""

    def __init__(self, kernel, bias):
        self.k = kernel
        self.bias = bias
        tile = kernel.tile
        if kernel.a is None or not kernel.a.mn_major or kernel.registers_a:
            raise NotSupported("a bias gradient beside a filter gradient whose dy is not read "
                               "MN-major from shared memory")
        if kernel.element not in ("bf16", "f16") or tile.k * element_bytes(kernel.element) \
                != SWIZZLE:
            raise NotSupported(f"a bias gradient of {kernel.element} dy: summed from 16-bit "
                               "tiles")
        if kernel.gemm.m % LANES:
            raise NotSupported(f"a bias gradient of K = {kernel.gemm.m}: expected a multiple "
                               f"of {LANES}")
        self.vector = ir.VectorType.get([LANES], ir.F32Type.get())
        self.loaded = ir.VectorType.get([LANES], ir.Type.parse(kernel.element))
        self.partials = None     # split K: the f32 [splits, K] workspace
        shape = list(ir.MemRefType(bias.out.type).shape)
        # db's dim of K (a [1, K, 1, 1] or [K] tensor); the others are 1.
        self.channel_dim = next((d for d, n in enumerate(shape) if n != 1), 0)
        self.rank = len(shape)

    def note(self):
        """What the plan says of the bias gradient."""
        splits = self.k.scheduler.splits
        summed = "" if splits == 1 else \
            f", {splits} split partials summed in split order"
        return ("the bias gradient (sum of dy) taken from dy's tiles in shared memory by the "
                f"first column of tiles{summed}")

    # -- host side ------------------------------------------------------------

    def allocate(self):
        """Split K: the partials' workspace (every element written before
        it is read: no zeroing)."""
        splits = self.k.scheduler.splits
        if splits > 1:
            self.partials = memref.alloc(ir.MemRefType.get(
                [splits, self.k.gemm.m], ir.F32Type.get()), [], [])

    # -- device side ------------------------------------------------------------

    def zero(self):
        """A thread's sums before a unit."""
        return arith.constant(self.vector, ir.DenseElementsAttr.get_splat(
            self.vector, ir.FloatAttr.get(ir.F32Type.get(), 0.0)))

    def active(self, batch, tile_n):
        """Whether the unit's blocks sum dy: the first column of tiles (and
        the first tap where the taps are the batch)."""
        first = _cmp("eq", tile_n, _idx(0))
        if self.k.gemm.batch > 1:
            first = arith.andi(first, _cmp("eq", batch, _idx(0)))
        return first

    def step(self, a_tile, local, sums, active):
        """Step 1 of the module docstring: add this K step's rows of the
        consumer's box at ``a_tile`` (an i64 shared address) to ``sums``
        where ``active``; returns the new sums."""
        op = scf.IfOp(active, [self.vector], has_else=True)
        with ir.InsertionPoint(op.then_block):
            warp = arith.divui(local, _idx(32))
            lane = arith.remui(local, _idx(32))
            chunk = arith.addi(arith.muli(warp, _idx(2)), arith.remui(lane, _idx(2)))
            first = arith.divui(lane, _idx(2))
            total = sums
            for j in range(self.k.tile.k // 16):
                row = arith.addi(first, _idx(16 * j)) if j else first
                offset = _to_i64(swizzled_offset(row, chunk, 0))
                piece = llvm.load(self.loaded, _shared_ptr(arith.addi(a_tile, offset)),
                                  alignment=16)
                total = arith.addf(total, arith.extf(self.vector, piece))
            scf.YieldOp([total])
        with ir.InsertionPoint(op.else_block):
            scf.YieldOp([sums])
        return op.results[0]

    def _channel(self, consumer, local, tile_m):
        """The first of this thread's 8 channels (its chunk's), as the
        tile's rows: tile_m BM + 64 consumer + 8 chunk."""
        warp = arith.divui(local, _idx(32))
        lane = arith.remui(local, _idx(32))
        chunk = arith.addi(arith.muli(warp, _idx(2)), arith.remui(lane, _idx(2)))
        return arith.addi(arith.muli(tile_m, _idx(self.k.tile.m)),
                          arith.addi(arith.muli(consumer, _idx(64)),
                                     arith.muli(chunk, _idx(LANES))))

    def _store(self, value, channel):
        """db[channel] = ``value`` (f32) in db's type."""
        element = self.bias.element
        if element != ir.F32Type.get():
            value = arith.truncf(element, value)
        index = [_idx(0)] * self.rank
        index[self.channel_dim] = channel
        memref.store(value, self.bias.out, index)

    def finish(self, sums, consumer, local, batch, tile_m, tile_n, split):
        """Step 2 of the module docstring, after a unit's last K step:
        the chunk's sums over its 16 lanes, then db's channels (unsplit) or
        the split's partial (``split`` an index; None unsplit)."""
        def body():
            i32 = ir.IntegerType.get_signless(32)
            width = arith.constant(i32, 32)
            values = [vector.extract(sums, [], [e]) for e in range(LANES)]
            for offset in (2, 4, 8, 16):
                values = [arith.addf(v, gpu.ShuffleOp(v, arith.constant(i32, offset), width,
                                                      gpu.ShuffleMode.XOR).results[0])
                          for v in values]
            channel = self._channel(consumer, local, tile_m)
            writer = _cmp("ult", arith.remui(local, _idx(32)), _idx(2))
            inside = _cmp("ult", channel, _idx(self.k.gemm.m))

            def write():
                for e, v in enumerate(values):
                    c = arith.addi(channel, _idx(e)) if e else channel
                    if split is None:
                        self._store(v, c)
                    else:
                        memref.store(v, self.partials, [split, c])
            _if(arith.andi(writer, inside), write)
        _if(self.active(batch, tile_n), body)

    def sum_splits(self, consumer, local, batch, tile_m, tile_n):
        """Split K, by the warp that runs the epilogue of its slice's rows
        (the last to arrive, or a cluster's owner): db at the warp's 16
        channels, the splits' partials added in split order."""
        def body():
            warp = arith.divui(local, _idx(32))
            lane = arith.remui(local, _idx(32))
            channel = arith.addi(arith.muli(tile_m, _idx(self.k.tile.m)),
                                 arith.addi(arith.muli(consumer, _idx(64)),
                                            arith.addi(arith.muli(warp, _idx(16)), lane)))
            ok = arith.andi(_cmp("ult", lane, _idx(16)),
                            _cmp("ult", channel, _idx(self.k.gemm.m)))
            _if(ok, lambda: self._store(self._in_order(channel), channel))
        _if(self.active(batch, tile_n), body)

    def _in_order(self, channel):
        """The sum of the splits' partials at ``channel``, in split order."""
        total = memref.load(self.partials, [_idx(0), channel])
        for s in range(1, self.k.scheduler.splits):
            total = arith.addf(total, memref.load(self.partials, [_idx(s), channel]))
        return total

    def publish(self):
        """Split K in clusters: order this thread's partial stores before
        the cluster barrier that hands the slices to their owners (which
        read them after its wait)."""
        nvvm.MembarOp(nvvm.MemScopeKind.GPU)

    def reduce(self, item):
        """The second launch, thread ``item``: db[item] from the splits'
        partials in split order (items below K)."""
        _if(_cmp("ult", item, _idx(self.k.gemm.m)),
            lambda: self._store(self._in_order(item), item))
