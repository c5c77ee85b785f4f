"""Runs a tensor-core kernel's ``gpu.launch`` on the CPU, for tests without
a GPU: the IR dnn-map-tensor-cores leaves (arith, scf, memref, vector,
llvm, gpu and the nvvm ops of tc-sm80: cp.async, ldmatrix, mma.sync, the
inline ``red.global.add.f32`` of its fused attention backward; and
simt-gemm's FFMA kernels)
interpreted with NumPy, every thread of every block in lockstep.

Each SSA value is an array over all threads of the grid (``lanes``: block
after block, a block's threads in order, so that a warp is 32 consecutive
lanes); an ``scf.if`` runs both branches under lane masks and selects;
an ``scf.for`` with bounds that differ between lanes runs until the last
lane is done, each lane only its own iterations. Memory is bytes: the
kernel function's memref arguments in one global array, each block's
dynamic shared memory in another. The warp-wide ops take their operands
from the warp's 32 lanes as the PTX ISA lays them out (ldmatrix's rows
addressed by lanes 8 i .. 8 i + 7; mma.m16n8k16's fragments by g = lane /
4, t = lane % 4; m16n8k8's tf32 ones likewise, read truncated to their 19
high bits as the tensor cores read them). A cp.async writes shared memory
only when a ``cp.async.wait_group`` waits for its group, the latest the
hardware may, so a read of a tile before its wait sees what was there
before.

A kernel function of several launches (a stride-phased data gradient's:
copies into buffers of its own, then GEMMs) runs them in order; its host
side's views (memref.reinterpret_cast) and buffers (memref.alloc) are
addresses in the same global array.

Lockstep execution cannot show a race between warps (a missing barrier);
it checks the layouts, the indexing and the arithmetic.
"""

import numpy as np
from mlir import ir

from dnnc.codegen.gpu import irutil

GLOBAL_ALIGN = 1 << 12


class Ptr:
    """A pointer value: its address space (1 global, 3 shared) and the
    address of each lane."""

    def __init__(self, space, address):
        self.space, self.address = space, address


def _bf16_bits(x):
    """f32 values rounded to bf16 (to nearest even), as uint16 bits."""
    bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return rounded.astype(np.uint16)


def _bf16_values(bits):
    return (np.asarray(bits, np.uint32) << 16).astype(np.uint32).view(np.float32)


def _element(type_):
    """(NumPy storage dtype, bytes) of a scalar MLIR type."""
    s = str(type_)
    return {"bf16": (np.uint16, 2), "f16": (np.float16, 2), "f32": (np.float32, 4),
            "i32": (np.int64, 4), "i64": (np.int64, 8), "i8": (np.int64, 1),
            "index": (np.int64, 8), "i1": (np.bool_, 1)}[s]


class Interpreter:
    """One launch of kernel function ``fn`` (its body a gpu.launch) on
    ``arrays`` (NumPy arrays, one per function argument in order: outputs
    are written into theirs)."""

    def __init__(self, fn, arrays, poison=False):
        self.fn = fn
        # Host-side buffers filled with 0xFF bytes (NaN as f32) instead of
        # zeros: a workspace element read before any launch wrote it shows.
        self.poison = poison
        self.args = list(irutil.body(fn).arguments)
        self.gmem = bytearray()
        self.bases = []
        for value, array in zip(self.args, arrays):
            start = -(-len(self.gmem) // GLOBAL_ALIGN) * GLOBAL_ALIGN + GLOBAL_ALIGN
            data = self._to_bytes(value.type, array)
            self.gmem += self._gap(start - len(self.gmem)) + data
            self.bases.append(start)
        self.gmem = np.frombuffer(bytes(self.gmem) + self._gap(64), np.uint8).copy()
        self.arrays = arrays
        # The host side's views and buffers: {memref value: base address}.
        self.memrefs = {}

    def _gap(self, n):
        """``n`` bytes between the arguments: 0xFF (NaN) when poisoned, so
        that a read past an operand's end shows, as it may on a GPU whose
        neighbouring allocation is a NaN-poisoned output."""
        return bytes([0xFF]) * n if self.poison else bytes(n)

    # -- memory ---------------------------------------------------------------

    @staticmethod
    def _to_bytes(type_, array):
        t = ir.MemRefType(type_)
        dtype, _ = _element(t.element_type)
        a = np.asarray(array)
        if str(t.element_type) == "bf16":
            a = _bf16_bits(a.astype(np.float32))
        if str(t.element_type) == "i32":
            # Held as int64 in registers, stored in 4 bytes as the kernel
            # addresses them (and _load reads them).
            dtype = np.int32
        shape, strides, offset = irutil.memref_geometry(type_)
        size = 1 + offset + sum((n - 1) * s for n, s in zip(shape, strides))
        flat = np.zeros(size, dtype)
        index = offset + sum(np.indices(shape)[d] * strides[d] for d in range(len(shape)))
        flat[index] = a.astype(flat.dtype)
        return flat.tobytes()

    def read_back(self):
        """The function's arguments as arrays (f32 for bf16) after the run."""
        out = []
        for value, base in zip(self.args, self.bases):
            t = ir.MemRefType(value.type)
            shape, strides, offset = irutil.memref_geometry(value.type)
            dtype, eb = _element(t.element_type)
            index = offset + sum(np.indices(shape)[d] * strides[d] for d in range(len(shape)))
            addresses = np.asarray(base + index * eb)   # rank 0: a scalar's one element
            out.append(self._load(self.gmem, addresses.reshape(-1), str(t.element_type))
                       .reshape(shape))
        return out

    @staticmethod
    def _load(mem, address, kind):
        """Elements of ``kind`` at byte addresses ``address`` of ``mem``."""
        n = {"bf16": 2, "f16": 2, "f32": 4, "i32": 4}[kind]
        raw = mem[np.asarray(address)[..., None] + np.arange(n)]
        if kind == "bf16":
            return _bf16_values(raw.copy().view(np.uint16)[..., 0])
        view = {"f16": np.float16, "f32": np.float32, "i32": np.uint32}[kind]
        return raw.copy().view(view)[..., 0]

    @staticmethod
    def _store(mem, address, bits_bytes, mask):
        """Write ``bits_bytes`` ([lanes, n] uint8) at ``address`` where ``mask``."""
        address = np.asarray(address)[mask]
        data = bits_bytes[mask]
        if len(address):
            mem[address[:, None] + np.arange(data.shape[1])] = data

    def _mem(self, space):
        return self.smem if space == 3 else self.gmem

    def _arg_index(self, value):
        return next(i for i, a in enumerate(self.args) if a == value)

    def _base(self, memref_value):
        """The base address of a function argument or a host-side view or
        buffer (a view's offset is in its type)."""
        if memref_value in self.memrefs:
            return self.memrefs[memref_value]
        return self.bases[self._arg_index(memref_value)]

    def _memref_address(self, memref_value, indices):
        t = ir.MemRefType(memref_value.type)
        shape, strides, offset = irutil.memref_geometry(memref_value.type)
        _, eb = _element(t.element_type)
        base = self._base(memref_value)
        element = offset + sum(np.asarray(i) * s for i, s in zip(indices, strides))
        return base + element * eb

    # -- the run --------------------------------------------------------------

    def run(self):
        """Every launch of the kernel function, in order."""
        body = irutil.body(self.fn)
        self.env = {arg: None for arg in self.args}   # memrefs: read through self.bases
        launches = 0
        for op in body.operations:
            op = op.operation
            if op.name == "gpu.launch":
                self._launch(op)
                launches += 1
            elif op.name in ("memref.reinterpret_cast", "memref.expand_shape",
                             "memref.collapse_shape", "memref.subview", "memref.cast"):
                # A view: its type's offset counts from the source's base.
                self.memrefs[op.results[0]] = self._base(op.operands[0])
                self.env[op.results[0]] = None
            elif op.name == "memref.alloc":
                self._allocate(op.results[0])
                self.env[op.results[0]] = None
            elif op.name == "memref.load":
                # A runtime scalar, loaded on the host (dnn-scalar-args) and
                # passed to the launch by value: one f32 for every lane.
                kind = str(ir.MemRefType(op.operands[0].type).element_type)
                address = np.asarray([self._memref_address(op.operands[0], [])])
                self.env[op.results[0]] = np.float32(self._load(self.gmem, address, kind)[0])
            else:
                self._scalar_op(op)
        assert launches

    def _allocate(self, value):
        """A host-side buffer: zeroed bytes after the global array's end."""
        shape, strides, offset = irutil.memref_geometry(value.type)
        _, eb = _element(ir.MemRefType(value.type).element_type)
        size = (1 + offset + sum((n - 1) * s for n, s in zip(shape, strides))) * eb
        start = -(-len(self.gmem) // GLOBAL_ALIGN) * GLOBAL_ALIGN + GLOBAL_ALIGN
        fill = np.zeros(start + size + 64 - len(self.gmem), np.uint8)
        if self.poison:
            fill[start - len(self.gmem):] = 0xFF
        self.gmem = np.concatenate([self.gmem, fill])
        self.memrefs[value] = start

    def _launch(self, launch):
        sizes = [int(self._const(v)) for v in list(launch.operands)[:6]]
        grid, block = sizes[:3], sizes[3:]
        assert block[1:] == [1, 1] and grid[2] == 1
        shared = int(self._const(list(launch.operands)[-1]))
        threads = block[0]
        blocks = grid[0] * grid[1]
        self.lanes = blocks * threads
        lane = np.arange(self.lanes)
        self.block_index = lane // threads
        self.smem_stride = -(-max(shared, 1) // 1024) * 1024
        # Poisoned: shared memory starts as 0xFF bytes (NaN in every float
        # type), as a GPU's may hold what an earlier block left there, so
        # that a kernel reading shared memory it never wrote shows.
        self.smem = np.full(blocks * self.smem_stride + 64, 0xFF if self.poison else 0,
                            np.uint8)
        region = launch.regions[0].blocks[0]
        a = self.launch_args = list(region.arguments)
        block_x = self.block_index % grid[0]
        block_y = self.block_index // grid[0]
        tid = lane % threads
        for value, x in zip(a, [block_x, block_y, 0 * lane, tid, 0 * lane, 0 * lane]
                            + [np.full(self.lanes, s) for s in sizes]):
            self.env[value] = x
        for value in a[12:]:
            self._attribute_workgroup(value, blocks)
        self.pending = []
        self.committed = np.zeros(self.lanes, np.int64)
        self._block(region, np.ones(self.lanes, bool))

    def _attribute_workgroup(self, value, blocks):
        """A launch's workgroup attribution (static shared memory): a
        buffer per block after the global array's end, its base per lane
        that of the lane's block."""
        shape, _, _ = irutil.memref_geometry(value.type)
        _, eb = _element(ir.MemRefType(value.type).element_type)
        size = -(-int(np.prod(shape)) * eb // 64) * 64
        start = -(-len(self.gmem) // GLOBAL_ALIGN) * GLOBAL_ALIGN + GLOBAL_ALIGN
        self.gmem = np.concatenate([self.gmem, np.zeros(start + blocks * size + 64
                                                        - len(self.gmem), np.uint8)])
        self.memrefs[value] = start + self.block_index * size
        self.env[value] = None

    def _const(self, value):
        return self.env[value] if value in self.env else None

    def _scalar_op(self, op):
        if op.name == "arith.constant":
            self.env[op.results[0]] = self._constant(op)

    @staticmethod
    def _constant(op):
        attr = op.attributes["value"]
        t = op.results[0].type
        if isinstance(t, ir.VectorType):
            # A splat vector: [1, n], broadcast against [lanes, n].
            kind = str(ir.VectorType(t).element_type)
            value = ir.FloatAttr(ir.DenseElementsAttr(attr).get_splat_value()).value
            n = ir.VectorType(t).shape[0]
            if kind == "bf16":
                return np.full((1, n), _bf16_bits(np.float32(value)), np.uint16)
            return np.full((1, n), value, {"f16": np.float16, "f32": np.float32}[kind])
        if isinstance(t, ir.F32Type):
            return np.float32(ir.FloatAttr(attr).value)
        if isinstance(t, ir.VectorType):   # a splat: [1, n], as lanes broadcast
            value = ir.FloatAttr(ir.DenseElementsAttr(attr).get_splat_value()).value
            element = ir.VectorType(t).element_type
            one = _bf16_bits(np.float32(value)) if isinstance(element, ir.BF16Type) else \
                np.asarray(value, np.float16 if isinstance(element, ir.F16Type) else np.float32)
            return np.full((1, ir.VectorType(t).shape[0]), one)
        if isinstance(t, ir.BF16Type):    # held as its bits, as loads leave it
            return _bf16_bits(np.float32(ir.FloatAttr(attr).value))[()]
        if isinstance(t, ir.F16Type):
            return np.float16(ir.FloatAttr(attr).value)
        if isinstance(t, ir.IntegerType) and ir.IntegerType(t).width == 1:
            return np.bool_(ir.IntegerAttr(attr).value)
        return np.int64(ir.IntegerAttr(attr).value)

    def _block(self, block, mask):
        """Run the ops of ``block`` on the lanes of ``mask``; returns the
        operands of its terminator (scf.yield)."""
        for op in block.operations:
            op = op.operation
            if op.name in ("scf.yield", "gpu.terminator"):
                return [self.env[v] for v in op.operands]
            self._op(op, mask)
        return []

    def _op(self, op, mask):
        name = op.name
        ins = [self.env[v] for v in op.operands]
        handler = getattr(self, "_" + name.replace(".", "_"), None)
        if handler is None:
            raise NotImplementedError(f"kernel interpreter: {name}")
        out = handler(op, ins, mask)
        if out is not None:
            out = out if isinstance(out, list) else [out]
            for r, v in zip(op.results, out):
                self.env[r] = v

    # -- arith, math ----------------------------------------------------------

    def _arith_constant(self, op, ins, mask):
        return self._constant(op)

    def _arith_addi(self, op, ins, mask):
        return self._wrap(op, np.add(*ins))

    def _arith_subi(self, op, ins, mask):
        return self._wrap(op, np.subtract(*ins))

    def _arith_muli(self, op, ins, mask):
        return self._wrap(op, np.multiply(*ins))

    def _arith_divui(self, op, ins, mask):
        return np.floor_divide(ins[0], np.where(np.asarray(ins[1]) == 0, 1, ins[1]))

    def _arith_remui(self, op, ins, mask):
        return np.remainder(ins[0], np.where(np.asarray(ins[1]) == 0, 1, ins[1]))

    def _arith_minui(self, op, ins, mask):
        return np.minimum(*ins)

    def _arith_minsi(self, op, ins, mask):
        return np.minimum(*ins)

    def _arith_maxsi(self, op, ins, mask):
        return np.maximum(*ins)

    def _arith_extui(self, op, ins, mask):
        width = ir.IntegerType(op.operands[0].type).width
        return np.bitwise_and(np.asarray(ins[0], np.int64), (1 << width) - 1)

    def _arith_shli(self, op, ins, mask):
        return self._wrap(op, np.left_shift(np.asarray(ins[0], np.int64), ins[1]))

    def _arith_andi(self, op, ins, mask):
        return np.bitwise_and(*ins)

    def _arith_ori(self, op, ins, mask):
        return np.bitwise_or(*ins)

    def _arith_xori(self, op, ins, mask):
        return np.bitwise_xor(*ins)

    def _arith_shrui(self, op, ins, mask):
        return np.right_shift(np.asarray(ins[0], np.int64), np.asarray(ins[1], np.int64))

    @staticmethod
    def _wrap(op, x):
        t = op.results[0].type
        if isinstance(t, ir.IntegerType) and ir.IntegerType(t).width == 32:
            x = ((np.asarray(x, np.int64) + (1 << 31)) % (1 << 32)) - (1 << 31)
        return x

    def _arith_cmpi(self, op, ins, mask):
        names = ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"]
        p = names[int(ir.IntegerAttr(op.attributes["predicate"]).value)]
        a, b = (np.asarray(x, np.int64) for x in ins)
        if p.startswith("u"):
            # Unsigned: a negative value is past any other.
            a, b = a.astype(np.uint64), b.astype(np.uint64)
        return {"eq": a == b, "ne": a != b, "slt": a < b, "sle": a <= b, "sgt": a > b,
                "sge": a >= b, "ult": a < b, "ule": a <= b, "ugt": a > b, "uge": a >= b}[p]

    def _arith_cmpf(self, op, ins, mask):
        p = int(ir.IntegerAttr(op.attributes["predicate"]).value)
        assert p == 1, "only oeq"
        return np.asarray(ins[0]) == np.asarray(ins[1])

    def _arith_select(self, op, ins, mask):
        c, a, b = ins
        if isinstance(a, Ptr):
            return Ptr(a.space, np.where(c, a.address, b.address))
        c = np.asarray(c)
        a, b = np.asarray(a), np.asarray(b)
        if a.ndim > c.ndim or b.ndim > c.ndim:
            c = c.reshape(c.shape + (1,) * (max(a.ndim, b.ndim) - c.ndim))
        return np.where(c, a, b)

    def _arith_bitcast(self, op, ins, mask):
        """f32 <-> i32 (tf32 rounding); an i32 is held as a signed int64."""
        if str(op.results[0].type) == "i32":
            return np.asarray(ins[0], np.float32).view(np.int32).astype(np.int64)
        return np.asarray(ins[0], np.int64).astype(np.int32).view(np.float32)

    def _arith_index_cast(self, op, ins, mask):
        return self._wrap(op, np.asarray(ins[0], np.int64))

    def _arith_addf(self, op, ins, mask):
        return np.add(*ins, dtype=np.float32)

    def _arith_subf(self, op, ins, mask):
        return np.subtract(*ins, dtype=np.float32)

    def _arith_mulf(self, op, ins, mask):
        return np.multiply(*ins, dtype=np.float32)

    def _arith_divf(self, op, ins, mask):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.divide(*ins, dtype=np.float32)

    def _arith_negf(self, op, ins, mask):
        return np.negative(ins[0], dtype=np.float32)

    def _arith_maxnumf(self, op, ins, mask):
        return np.fmax(*ins).astype(np.float32)

    def _arith_maximumf(self, op, ins, mask):
        return np.maximum(*ins).astype(np.float32)

    def _arith_extf(self, op, ins, mask):
        t = op.operands[0].type
        src = str(ir.VectorType(t).element_type if isinstance(t, ir.VectorType) else t)
        if src == "bf16":
            return _bf16_values(ins[0])
        return np.asarray(ins[0]).astype(np.float32)

    def _arith_truncf(self, op, ins, mask):
        t = op.results[0].type
        element = ir.VectorType(t).element_type if isinstance(t, ir.VectorType) else t
        if str(element) == "bf16":
            return _bf16_bits(ins[0])
        return np.asarray(ins[0]).astype(np.float16)

    def _math_log2(self, op, ins, mask):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log2(np.asarray(ins[0], np.float64)).astype(np.float32)

    def _llvm_call_intrinsic(self, op, ins, mask):
        callee = ir.StringAttr(op.attributes["intrin"]).value
        if callee == "llvm.fma.f32":
            return (np.asarray(ins[0], np.float64) * ins[1] + ins[2]).astype(np.float32)
        if callee == "llvm.nvvm.ex2.approx.ftz.f":
            with np.errstate(over="ignore"):
                return np.exp2(np.asarray(ins[0], np.float64)).astype(np.float32)
        raise NotImplementedError(callee)

    # -- scf --------------------------------------------------------------------

    def _scf_if(self, op, ins, mask):
        cond = np.broadcast_to(np.asarray(ins[0], bool), (self.lanes,))
        then_mask, else_mask = mask & cond, mask & ~cond
        outs = None
        if then_mask.any():
            outs = self._block(op.regions[0].blocks[0], then_mask)
        if len(op.regions[1].blocks) and else_mask.any():
            other = self._block(op.regions[1].blocks[0], else_mask)
            outs = other if outs is None else [
                np.where(cond.reshape(cond.shape + (1,) * (np.ndim(a) - 1)), a, b)
                for a, b in zip(outs, other)]
        if op.results and outs is None:
            outs = [np.zeros(self.lanes, np.float32) for _ in op.results]
        return outs or None

    def _scf_for(self, op, ins, mask):
        lower, upper, step = (np.broadcast_to(np.asarray(x, np.int64), (self.lanes,))
                              for x in ins[:3])
        values = [np.broadcast_to(np.asarray(v), (self.lanes,) + np.shape(v)[1:]).copy()
                  if np.ndim(v) else np.full(self.lanes, v) for v in ins[3:]]
        body = op.regions[0].blocks[0]
        iv_arg, *iter_args = list(body.arguments)
        iv = lower.copy()
        while True:
            active = mask & (iv < upper)
            if not active.any():
                break
            self.env[iv_arg] = iv
            for a, v in zip(iter_args, values):
                self.env[a] = v
            new = self._block(body, active)
            values = [np.where(active.reshape((-1,) + (1,) * (np.ndim(n) - 1)),
                               np.broadcast_to(n, np.shape(v)), v)
                      for n, v in zip(new, values)]
            iv = iv + step
        return values

    # -- gpu ----------------------------------------------------------------------

    def _gpu_thread_id(self, op, ins, mask):
        assert "x" in str(op.attributes["dimension"])
        return self.env[self.launch_args[3]]

    def _gpu_block_id(self, op, ins, mask):
        dim = str(op.attributes["dimension"])
        return self.env[self.launch_args[0 if dim.endswith("x>") else 1]]

    def _gpu_barrier(self, op, ins, mask):
        return None

    def _gpu_dynamic_shared_memory(self, op, ins, mask):
        return Ptr(3, self.block_index * self.smem_stride)

    def _gpu_shuffle(self, op, ins, mask):
        value, offset, _ = ins
        assert "xor" in str(op.attributes["mode"]), op.attributes["mode"]
        lanes = np.arange(self.lanes)
        partner = lanes ^ np.asarray(offset, np.int64)
        v = np.broadcast_to(np.asarray(value), (self.lanes,))
        return [v[partner], np.ones(self.lanes, bool)]

    # -- memref, vector, llvm --------------------------------------------------------

    def _memref_extract_aligned_pointer_as_index(self, op, ins, mask):
        if isinstance(ins[0], Ptr):
            return ins[0].address
        return np.int64(self._base(op.operands[0]))

    def _memref_reinterpret_cast(self, op, ins, mask):
        """A view made inside a launch (its offset is in its type), as on
        the host side."""
        self.memrefs[op.results[0]] = self._base(op.operands[0])
        self.env[op.results[0]] = None

    def _memref_load(self, op, ins, mask):
        address = self._memref_address(op.operands[0], ins[1:])
        kind = str(ir.MemRefType(op.operands[0].type).element_type)
        address = np.broadcast_to(address, (self.lanes,))
        got = self._load(self.gmem, np.where(mask, address, 0), kind)
        return _bf16_bits(got) if kind == "bf16" else got

    def _memref_store(self, op, ins, mask):
        address = np.broadcast_to(self._memref_address(op.operands[1], ins[2:]), (self.lanes,))
        kind = str(ir.MemRefType(op.operands[1].type).element_type)
        # A bf16 value is its bits (as memref.load and arith.truncf leave it).
        dtype = {"bf16": np.uint16, "f16": np.float16, "i32": np.int32}.get(kind, np.float32)
        value = np.ascontiguousarray(np.broadcast_to(np.asarray(ins[0]).astype(dtype),
                                                     (self.lanes,)))
        self._store(self.gmem, address, value.view(np.uint8).reshape(self.lanes, -1), mask)

    def _memref_atomic_rmw(self, op, ins, mask):
        """An i32 atomic add, lane after lane (every block runs at once here:
        the highest lane arrives last)."""
        value = np.broadcast_to(np.asarray(ins[0], np.int64), (self.lanes,))
        address = np.broadcast_to(self._memref_address(op.operands[1], ins[2:]), (self.lanes,))
        out = np.zeros(self.lanes, np.int64)
        for lane in np.nonzero(mask)[0]:
            at = int(address[lane])
            old = int(self.gmem[at:at + 4].copy().view(np.int32)[0])
            self.gmem[at:at + 4] = np.asarray([old + int(value[lane])], np.int32).view(np.uint8)
            out[lane] = old
        return out

    def _vector_from_elements(self, op, ins, mask):
        return np.stack([np.broadcast_to(x, (self.lanes,)) for x in ins], axis=1)

    def _bytes_of(self, type_, value):
        """[lanes, n] uint8 of ``value`` of ``type_``."""
        s = str(type_)
        v = np.asarray(value)
        if s in ("i32",):
            return np.broadcast_to(v, (self.lanes,)).astype(np.uint64).astype(np.uint32) \
                .view(np.uint8).reshape(self.lanes, 4)
        element = ir.VectorType(type_).element_type if isinstance(type_, ir.VectorType) \
            else type_
        if str(element) == "i32":   # an element-wise chunk's packed pairs
            return self._vector_bytes(type_, value)
        dtype = {"bf16": np.uint16, "f16": np.float16, "f32": np.float32}[str(element)]
        v = np.ascontiguousarray(np.broadcast_to(v, (self.lanes,) + v.shape[1:]).astype(dtype))
        return v.view(np.uint8).reshape(self.lanes, -1)

    # Vectors of 16- and 32-bit elements as the other ops hold them: bf16 as
    # its bits (uint16), f16, f32, i32 as int64.
    _VECTOR_STORAGE = {"bf16": np.uint16, "f16": np.float16, "f32": np.float32, "i32": np.uint32}

    def _vector_bytes(self, type_, value):
        """[lanes, bytes] uint8 of vector ``value`` of ``type_``."""
        kind = str(ir.VectorType(type_).element_type)
        v = np.broadcast_to(np.asarray(value), (self.lanes, ir.VectorType(type_).shape[0]))
        if kind == "i32":
            v = v.astype(np.int64) & 0xFFFFFFFF
        return np.ascontiguousarray(v.astype(self._VECTOR_STORAGE[kind])).view(np.uint8) \
            .reshape(self.lanes, -1)

    def _vector_of_bytes(self, type_, raw):
        """The vector of ``type_`` whose bytes are ``raw`` ([lanes, bytes])."""
        kind = str(ir.VectorType(type_).element_type)
        v = np.ascontiguousarray(raw).view(self._VECTOR_STORAGE[kind])
        if kind == "i32":
            return self._wrap_i32(v.astype(np.int64))
        return v

    @staticmethod
    def _wrap_i32(x):
        return ((np.asarray(x, np.int64) + (1 << 31)) % (1 << 32)) - (1 << 31)

    def _vector_broadcast(self, op, ins, mask):
        n = ir.VectorType(op.results[0].type).shape[0]
        x = np.broadcast_to(np.asarray(ins[0]), (self.lanes,))
        return np.repeat(x[:, None], n, axis=1)

    def _vector_bitcast(self, op, ins, mask):
        return self._vector_of_bytes(op.results[0].type,
                                     self._vector_bytes(op.operands[0].type, ins[0]))

    def _vector_extract(self, op, ins, mask):
        (position,) = list(ir.DenseI64ArrayAttr(op.attributes["static_position"]))
        return np.broadcast_to(np.asarray(ins[0]), (self.lanes,) + np.shape(ins[0])[1:])[
            :, position]

    def _vector_reduction(self, op, ins, mask):
        """An f32 vector's elements added (the only kind the kernels use),
        left to right in f32."""
        kind = str(op.attributes["kind"])
        if "add" not in kind or str(op.results[0].type) != "f32":
            raise NotImplementedError(f"kernel interpreter: vector.reduction {kind} "
                                      f"to {op.results[0].type}")
        v = np.broadcast_to(np.asarray(ins[0], np.float32),
                            (self.lanes, ir.VectorType(op.operands[0].type).shape[0]))
        total = v[:, 0].copy()
        for j in range(1, v.shape[1]):
            total = (total + v[:, j]).astype(np.float32)
        return total

    def _vector_load(self, op, ins, mask):
        t = ir.VectorType(op.results[0].type)
        _, eb = _element(t.element_type)
        address = np.broadcast_to(self._memref_address(op.operands[0], ins[1:]), (self.lanes,))
        address = np.where(mask, address, 0)
        raw = self.gmem[address[:, None] + np.arange(t.shape[0] * eb)]
        return self._vector_of_bytes(t, raw)

    def _llvm_mlir_zero(self, op, ins, mask):
        fields = str(op.results[0].type).count("f32")
        return np.zeros((self.lanes, fields), np.float32)

    def _vector_store(self, op, ins, mask):
        address = np.broadcast_to(self._memref_address(op.operands[1], ins[2:]), (self.lanes,))
        self._store(self.gmem, address, self._bytes_of(op.operands[0].type, ins[0]), mask)

    def _llvm_inttoptr(self, op, ins, mask):
        space = 3 if "ptr<3>" in str(op.results[0].type) else 1
        return Ptr(space, np.broadcast_to(np.asarray(ins[0], np.int64), (self.lanes,)))

    def _llvm_store(self, op, ins, mask):
        ptr = ins[1]
        self._store(self._mem(ptr.space), ptr.address,
                    self._bytes_of(op.operands[0].type, ins[0]), mask)

    def _llvm_load(self, op, ins, mask):
        ptr = ins[0]
        t = op.results[0].type
        if str(t) == "i16":     # an element-wise chunk's element (tc-sm80's loader)
            address = np.where(mask, ptr.address, 0)
            raw = self._mem(ptr.space)[address[:, None] + np.arange(2)]
            return raw.copy().view(np.uint16)[:, 0].astype(np.int64)
        if str(t) == "i32":     # a tf32 fragment register (tc-sm80), an arrival count (simt-gemm)
            address = np.where(mask, ptr.address, 0)
            raw = self._mem(ptr.space)[address[:, None] + np.arange(4)]
            return raw.copy().view(np.uint32)[:, 0].astype(np.int64)
        if str(t) == "f32":     # one float (simt-gemv's partials in shared memory)
            address = np.where(mask, ptr.address, 0)
            raw = self._mem(ptr.space)[address[:, None] + np.arange(4)]
            return raw.copy().view(np.float32)[:, 0]
        n = ir.VectorType(t).shape[0]
        kind = str(ir.VectorType(t).element_type)
        address = np.where(mask, ptr.address, 0)
        if kind == "i32":       # a tf32 chunk read back to be rounded (tc-sm80)
            raw = self._mem(ptr.space)[address[:, None] + np.arange(4 * n)]
            return self._vector_of_bytes(t, raw.copy())
        if kind == "f32":       # simt-gemm's float4 reads of a shared stage
            raw = self._mem(ptr.space)[address[:, None] + np.arange(4 * n)]
            return raw.copy().view(np.float32)
        raw = self._mem(ptr.space)[address[:, None] + np.arange(2 * n)]
        return raw.copy().view(np.uint16 if kind == "bf16" else np.float16)

    def _llvm_inline_asm(self, op, ins, mask):
        """``red.global.add.f32 [address], value`` (tc-sm80's fused attention
        backward): each active lane's value added to the f32 at its address,
        lanes in order (a GPU's order varies; the sum is the same up to
        rounding)."""
        text = ir.StringAttr(op.attributes["asm_string"]).value
        if not text.startswith("red.global.add.f32 "):
            raise NotImplementedError(f"kernel interpreter: inline asm '{text}'")
        address = np.broadcast_to(np.asarray(ins[0], np.int64), (self.lanes,))[mask]
        value = np.broadcast_to(np.asarray(ins[1], np.float32), (self.lanes,))[mask]
        assert not (address % 4).any()
        words = self.gmem[:len(self.gmem) // 4 * 4].view(np.float32)
        np.add.at(words, address // 4, value)
        return None

    def _llvm_bitcast(self, op, ins, mask):
        dst = op.results[0].type
        v = np.asarray(ins[0])
        if str(dst) == "i32":   # vector<2x16-bit> -> i32
            bits = v.view(np.uint16) if v.dtype == np.float16 else v.astype(np.uint16)
            return bits[:, 0].astype(np.int64) | (bits[:, 1].astype(np.int64) << 16)
        # i32 -> vector<2x16-bit>
        bits = np.broadcast_to(v, (self.lanes,)).astype(np.int64) & 0xFFFFFFFF
        pair = np.stack([bits & 0xFFFF, bits >> 16], axis=1).astype(np.uint16)
        return pair.view(np.float16) if "f16" in str(dst) and "bf16" not in str(dst) else pair

    def _llvm_extractvalue(self, op, ins, mask):
        position = list(ir.DenseI64ArrayAttr(op.attributes["position"]))[0]
        return np.asarray(ins[0])[:, position]

    # -- nvvm ---------------------------------------------------------------------------

    def _nvvm_bar_warp_sync(self, op, ins, mask):
        return None

    def _nvvm_memory_barrier(self, op, ins, mask):
        return None

    def _nvvm_cp_async_shared_global(self, op, ins, mask):
        dst, src = ins[0], ins[1]
        width = int(ir.IntegerAttr(op.attributes["size"]).value)
        size = np.broadcast_to(np.asarray(ins[2] if len(ins) > 2 else width, np.int64),
                               (self.lanes,))
        self.pending.append((dst.address.copy(), src.address.copy(), size.copy(), mask.copy(),
                             self.committed.copy(), width))

    def _nvvm_cp_async_commit_group(self, op, ins, mask):
        self.committed = self.committed + mask

    def _nvvm_cp_async_wait_group(self, op, ins, mask):
        n = int(ir.IntegerAttr(op.attributes["n"]).value)
        keep = []
        for dst, src, size, lanes, group, width in self.pending:
            done = lanes & mask & (group < self.committed - n)
            lanes_done = np.nonzero(done)[0]
            if len(lanes_done):
                step = np.arange(width)
                inside = step < size[lanes_done, None]
                at = np.where(inside, src[lanes_done, None] + step, 0)
                self.smem[dst[lanes_done, None] + step] = np.where(inside, self.gmem[at], 0)
            rest = lanes & ~done
            if rest.any():
                keep.append((dst, src, size, rest, group, width))
        self.pending = keep

    def _nvvm_ldmatrix(self, op, ins, mask):
        transpose = "col" in str(op.attributes["layout"])
        address = ins[0].address
        warps = self.lanes // 32
        rows = address.reshape(warps, 4, 8)      # matrix i, row r: lane 8 i + r
        lane = np.arange(32)
        g, t = lane // 4, lane % 4
        out = np.zeros((warps, 32, 4), np.int64)
        mem = self.smem
        for i in range(4):
            if not transpose:
                at = rows[:, i, g] + 4 * t       # [warps, 32]
                word = self._load(mem, at, "i32")
                out[:, :, i] = word.astype(np.int64)
            else:
                lo = self._load(mem, rows[:, i, 2 * t] + 2 * g, "f16").view(np.uint16)
                hi = self._load(mem, rows[:, i, 2 * t + 1] + 2 * g, "f16").view(np.uint16)
                out[:, :, i] = lo.astype(np.int64) | (hi.astype(np.int64) << 16)
        return out.reshape(self.lanes, 4)

    def _halves(self, regs, kind):
        """Each 32-bit register ([...] int64 or [..., 2] f16 / bf16 bits)
        as two f32 values [..., 2]."""
        r = np.asarray(regs)
        if r.dtype == np.float16:
            return r.astype(np.float32)
        if r.ndim and r.shape[-1] == 2 and r.dtype == np.uint16:
            bits = r
        else:
            bits = np.stack([r & 0xFFFF, (r >> 16) & 0xFFFF], axis=-1).astype(np.uint16)
        if kind == "bf16":
            return _bf16_values(bits)
        return bits.view(np.float16).astype(np.float32)

    def _mma_tf32(self, ins):
        """mma.m16n8k8 of tf32: a register an element (f32 bits, of which
        the tensor cores read the 19 high: the low 13 cleared), A 16 x 8:
        a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4); B 8 x 8: b0 (t,
        g), b1 (t+4, g); C as m16n8k16's."""
        def tf32(x):
            bits = np.broadcast_to(np.asarray(x, np.int64), (self.lanes,)) & 0xFFFFE000
            return bits.astype(np.uint32).view(np.float32).astype(np.float64)
        a = [tf32(x) for x in ins[0:4]]
        b = [tf32(x) for x in ins[4:6]]
        warps = self.lanes // 32
        lane = np.arange(32)
        g, t = lane // 4, lane % 4

        def w(x):
            return np.asarray(x).reshape((warps, 32))
        A, B = np.zeros((warps, 16, 8)), np.zeros((warps, 8, 8))
        A[:, g, t], A[:, g + 8, t], A[:, g, t + 4], A[:, g + 8, t + 4] = (w(x) for x in a)
        B[:, t, g], B[:, t + 4, g] = w(b[0]), w(b[1])
        return self._mma_accumulate(A, B, ins[6:10])

    def _mma_accumulate(self, A, B, c):
        """D = A B + C of an m16n8 mma.sync, C and D in the accumulator
        fragments (c0, c1 at row g, columns 2t, 2t + 1; c2, c3 at row g + 8):
        ``A`` and ``B`` [warps, 16, k] and [warps, k, 8], ``c`` the four C
        registers; returns D's four registers a lane."""
        warps = self.lanes // 32
        lane = np.arange(32)
        g, t = lane // 4, lane % 4
        c = [np.broadcast_to(np.asarray(x, np.float32), (self.lanes,)).reshape(warps, 32)
             for x in c]
        C = np.zeros((warps, 16, 8))
        for j in range(2):
            C[:, g, 2 * t + j] = c[j]
            C[:, g + 8, 2 * t + j] = c[2 + j]
        D = (A @ B + C).astype(np.float32)
        out = np.zeros((warps, 32, 4), np.float32)
        for j in range(2):
            out[:, :, j] = D[:, g, 2 * t + j]
            out[:, :, 2 + j] = D[:, g + 8, 2 * t + j]
        return out.reshape(self.lanes, 4)

    def _nvvm_mma_sync(self, op, ins, mask):
        kind = str(op.attributes["multiplicandAPtxType"]).split("<")[1].rstrip(">")
        if kind == "tf32":
            return self._mma_tf32(ins)
        a = [self._halves(x, kind) for x in ins[0:4]]       # [lanes, 2] each
        b = [self._halves(x, kind) for x in ins[4:6]]
        warps = self.lanes // 32
        lane = np.arange(32)
        g, t = lane // 4, lane % 4
        A = np.zeros((warps, 16, 16))
        B = np.zeros((warps, 16, 8))

        def w(x):
            return np.asarray(x).reshape((warps, 32) + np.shape(x)[1:])
        for j in range(2):
            A[:, g, 2 * t + j] = w(a[0])[:, :, j]
            A[:, g + 8, 2 * t + j] = w(a[1])[:, :, j]
            A[:, g, 8 + 2 * t + j] = w(a[2])[:, :, j]
            A[:, g + 8, 8 + 2 * t + j] = w(a[3])[:, :, j]
            B[:, 2 * t + j, g] = w(b[0])[:, :, j]
            B[:, 8 + 2 * t + j, g] = w(b[1])[:, :, j]
        return self._mma_accumulate(A, B, ins[6:10])


def run_kernel(fn, arrays, poison=False):
    """Run kernel function ``fn`` on ``arrays`` (one per argument, in order);
    returns every argument's array after the run (outputs written).
    ``poison``: host-side buffers start as NaN, not zeros."""
    interpreter = Interpreter(fn, arrays, poison)
    interpreter.run()
    return interpreter.read_back()


__all__ = ["Interpreter", "run_kernel"]
