"""The launch plan of a lowered module: what the runtime must do, as data.

After the ``gpu`` stage the host side is the graph function (its arguments:
the graph's inputs, then its outputs) calling kernel functions, which
allocate scratch buffers and launch kernels. ``extract`` walks it in program
order, following calls, and records:

* ``buffers``: the inputs and outputs (by position), then one workspace slice
  per ``memref.alloc`` (offsets aligned to ``ALIGNMENT`` bytes; nothing is
  reused yet);
* ``kernels``: one record per ``gpu.launch_func``: the kernel function it came
  from (``name``), the PTX ``entry``, that function's ``strategy`` and whole
  ``config`` (its ``dnn.config`` as JSON) and ``reason`` (see below), grid
  and block (constants), dynamic shared memory, the thread-block cluster
  shape of a launch in clusters (``cluster``, information: the kernel's PTX
  fixes it, dnn-kernel-clusters), and its arguments in PTX parameter order. Kernels are lowered with the bare-pointer convention, so
  a memref argument is one pointer parameter: a ``buffer`` arg, a buffer
  plus ``byte_offset`` (0: a view's static offset is folded into the
  kernel's code); an index / integer / float constant is a ``scalar`` arg;
  a TMA descriptor is a ``tma`` arg (below). A runtime scalar (a graph
  input marked ``dnn.by_value``) reaches a launch as the f32 that
  dnn-scalar-args loads from it on the host: a ``scalar_input`` arg naming
  the input's buffer, whose value the runtime takes from the call::

    {"kind": "scalar_input", "type": "f32", "buffer": 1}

TMA descriptors (the tensor-core GEMM strategy): a kernel function may make,
before its launch, ``nvgpu.tma.create.descriptor`` of a ``memref.cast`` of a
buffer (or a view of one) to an unranked memref, and pass the descriptor to
the kernel as ``builtin.unrealized_conversion_cast ... to !llvm.ptr`` (its
address). The runtime builds the 128-byte CUtensorMap and passes it by value
(dnn-tma-grid-constant makes the kernel's parameter ``.param .align 64 .b8
NAME[128]``), so such an argument records what it needs::

    {"kind": "tma", "buffer": 0, "byte_offset": 0, "dtype": "bf16",
     "shape": [256, 512], "strides": [512, 1], "box": [128, 64],
     "swizzle": 128, "l2_promotion": 256, "oob_fill": "zero"}

``shape`` and ``strides`` (in elements) are the ranked source memref's of
the ``memref.cast`` (strides from its layout), ``byte_offset`` its layout's
static offset in bytes, ``box`` the descriptor's ``tensor`` shape, all
outermost first; ``swizzle`` and ``l2_promotion`` are in bytes (0: none),
``oob_fill`` is ``zero`` or ``nan``. A descriptor of a memref the plan
cannot trace to a buffer, or with a dynamic or non-strided layout, raises
UnsupportedError; so does any other pointer argument. A ``tma`` arg over a
graph input is fine: the kernels only load through those (a GEMM's output
tiles are stored through a descriptor of its output buffer).

Im2col descriptors (the activation of an implicit-GEMM convolution, loaded
with ``cp.async.bulk.tensor`` in im2col mode): the same
``nvgpu.tma.create.descriptor``, of the activation as it lies in memory,
outermost first (``[N, H, W, C]`` or ``[N, D, H, W, C]``, C contiguous),
whose ``tensor`` (the box) is ``memref<PIXELSxCHANNELSxT, 3>``, carrying the
discardable attribute ``dnn.im2col``::

    %d = nvgpu.tma.create.descriptor %u box[%c128, %c64] {dnn.im2col = {
           lower = array<i64: -1, -1>, upper = array<i64: -1, -1>,
           element_strides = array<i64: 1, 1, 1, 1>}} : memref<*xbf16> -> ...

``lower`` and ``upper`` are the pixel box's lower and upper corners, one per
spatial dim (outermost first: ``[H, W]``, or ``[D, H, W]``), and
``element_strides`` the traversal stride of every dim of the tensor,
outermost first (the convolution's strides on the spatial dims, 1 on N and
C). The arg gets the attribute as an ``im2col`` field; everything else is as
for a tiled descriptor, ``box`` being ``[pixels, channels]``::

    {"kind": "tma", "buffer": 0, "byte_offset": 0, "dtype": "bf16",
     "shape": [8, 56, 56, 64], "strides": [200704, 3584, 64, 1],
     "box": [128, 64], "swizzle": 128, "l2_promotion": 256, "oob_fill": "zero",
     "im2col": {"lower": [-1, -1], "upper": [-1, -1],
                "element_strides": [1, 1, 1, 1]}}

The runtime encodes it with cuTensorMapEncodeIm2col. A tensor of rank other
than 3 to 5, a box of other than two dims, or an attribute that is not such
a dictionary of the right lengths raises UnsupportedError.

How a launch maps back to its kernel function: the graph function only
calls kernel functions (``func.call``), and gpu-kernel-outlining leaves each
``gpu.launch_func`` in the body of the function whose loops it came from. So
the walk follows every call into the callee and charges the launches found
there to it; one kernel function may make several launches (one per linalg
op it holds), which then share its config and reason.

The reason is dnn-configure's ``dnn.config_reason``. A kernel function born
after the heuristics ran (dnn-host-to-kernels' copies and fills,
dnn-io-strides' layout copies: ``dnn.anchor`` ``copy`` or ``fill``) has none;
its reason says who made it and that its config is dnn-default-config's.

A kernel whose loops have no iteration (a zero-size dim) is dropped before
this (dnn-distribute-loops erases it), so it makes no launch; one that still
has work (a matmul with K = 0 fills its output with zeros) is launched. A
graph left with no launch at all (every output has zero elements) raises
UnsupportedError naming its outputs: the package would hold no PTX.

Anything else on the host (a copy, a loop, a dynamic size) cannot be planned
and raises UnsupportedError naming the op. A kernel that stores into a graph
input (bufferization reusing an input buffer) is a LoweringError: the runtime
binds the caller's tensors, which must not change.
"""

import re

from mlir import ir
from mlir.dialects import llvm

from dnnc.codegen.gpu import irutil
from dnnc.dialect.walk import by_value_arguments
from dnnc.errors import LoweringError, UnsupportedError

ALIGNMENT = 256
MAX_BLOCK_THREADS = 1024
MAX_GRID = (2 ** 31 - 1, 65535, 65535)

# Ops whose result is a view of their first operand's memory: same pointer.
VIEWS = frozenset({"memref.subview", "memref.expand_shape", "memref.collapse_shape",
                   "memref.cast", "memref.reinterpret_cast"})
IGNORED = frozenset({"arith.constant", "memref.dealloc"})
REASON_ATTR = "dnn.config_reason"
TMA_CREATE = "nvgpu.tma.create.descriptor"
IM2COL_ATTR = "dnn.im2col"
_IM2COL_KEYS = ("lower", "upper", "element_strides")
CAST = "builtin.unrealized_conversion_cast"

# The fields of !nvgpu.tensormap.descriptor<...> (the bindings have no
# accessors for them) and their manifest values.
_DESCRIPTOR = re.compile(
    r"^!nvgpu\.tensormap\.descriptor<tensor\s*=\s*(memref<.*>)\s*,\s*"
    r"swizzle\s*=\s*(\w+)\s*,\s*l2promo\s*=\s*(\w+)\s*,\s*oob\s*=\s*(\w+)\s*,\s*"
    r"interleave\s*=\s*(\w+)\s*>$", re.S)
SWIZZLE_BYTES = {"swizzle_none": 0, "none": 0, "swizzle_32b": 32, "swizzle_64b": 64,
                 "swizzle_128b": 128}
L2_PROMOTION_BYTES = {"none": 0, "l2promo_64b": 64, "l2promo_128b": 128, "l2promo_256b": 256}
OOB_FILL = {"zero": "zero", "nan": "nan"}
# ptx.entries' type of the parameter a TMA descriptor is passed in.
TMA_PARAM = "b8[128]"


class _Planner:
    def __init__(self, module, n_inputs):
        self.module = module
        self.functions = {irutil.symbol(f): f for f in irutil.functions(module)}
        self.n_inputs = n_inputs
        self.buffers = []
        self.workspace = 0
        self.kernels = []
        self.where = {}  # memref Value -> buffer index
        self.descriptors = {}  # nvgpu.tma.create.descriptor result -> tma record
        self.tma = {}  # !llvm.ptr cast of a descriptor -> tma record
        self.graph_name = ""
        self.loaded = {}  # f32 loaded on the host from a runtime scalar -> its buffer
        self.by_value = set()  # buffers of the graph's runtime scalars
        self.gpu_funcs = {}  # (module, kernel) -> gpu.func op
        for gm in irutil.body(module).operations:
            if gm.operation.name == "gpu.module":
                for f in irutil.body(gm.operation).operations:
                    if f.operation.name == "gpu.func":
                        key = (irutil.symbol(gm.operation), irutil.symbol(f.operation))
                        self.gpu_funcs[key] = f.operation

    def run(self):
        graph = irutil.graph_function(self.module)
        self.graph_name = irutil.symbol(graph)
        args = list(irutil.body(graph).arguments)
        if len(args) < self.n_inputs:
            raise LoweringError(f"graph function has {len(args)} arguments, expected at least "
                                f"{self.n_inputs} inputs")
        for i, arg in enumerate(args):
            kind, index = ("input", i) if i < self.n_inputs else ("output", i - self.n_inputs)
            self.where[arg] = self._add({"kind": kind, "index": index})
        self.by_value = {self.where[args[i]] for i in by_value_arguments(graph)}
        self._function(graph, None)
        if not self.kernels:
            raise UnsupportedError(_nothing_to_launch(graph, self.n_inputs))
        return {"workspace_bytes": self.workspace, "buffers": self.buffers,
                "kernels": self.kernels}

    def _add(self, buffer):
        self.buffers.append(buffer)
        return len(self.buffers) - 1

    def _function(self, fn, kernel_fn):
        for op in irutil.body(fn).operations:
            op = op.operation
            name = op.name
            if name in IGNORED:
                continue
            if name == "func.return":
                return
            if name == "memref.alloc":
                self.where[op.results[0]] = self._alloc(op)
            elif name in VIEWS:
                self.where[op.results[0]] = self._buffer_of(op.operands[0], op)
            elif name == TMA_CREATE:
                self.descriptors[op.results[0]] = self._descriptor(op)
            elif name == CAST:
                self.tma[op.results[0]] = self._descriptor_address(op)
            elif name == "func.call":
                self._call(op)
            elif name == "memref.load":
                self.loaded[op.results[0]] = self._scalar_load(op)
            elif name == "gpu.launch_func":
                self._launch(op, kernel_fn or fn)
            else:
                raise UnsupportedError(f"host plan: '{name}' on the host at {op.location} is "
                                       "not a launch, an allocation, a view or a TMA "
                                       "descriptor; it cannot run on the GPU")

    def _scalar_load(self, op):
        """The buffer of a host-side load of a runtime scalar (dnn-scalar-args);
        any other load on the host cannot be planned."""
        source = op.operands[0]
        buffer = self.where.get(source)
        if len(op.operands) != 1 or buffer not in self.by_value:
            raise UnsupportedError(f"host plan: 'memref.load' on the host at {op.location} "
                                   "reads no runtime scalar (an input marked dnn.by_value); "
                                   "it cannot run on the GPU")
        return buffer

    def _alloc(self, op):
        t = ir.MemRefType(op.results[0].type)
        if not t.has_static_shape or len(op.operands):
            raise UnsupportedError(f"host plan: dynamic allocation at {op.location}")
        count = 1
        for n in t.shape:
            count *= n
        size = count * irutil.element_bytes(t.element_type)
        offset = -(-self.workspace // ALIGNMENT) * ALIGNMENT
        self.workspace = offset + size
        return self._add({"kind": "workspace", "offset": offset, "bytes": size})

    def _buffer_of(self, value, op):
        if value not in self.where:
            raise UnsupportedError(f"host plan: '{op.name}' at {op.location} uses a buffer "
                                   "the plan does not know (a global or a computed pointer)")
        return self.where[value]

    def _descriptor(self, op):
        """The tma record of an nvgpu.tma.create.descriptor: its memref is a
        memref.cast (to unranked) of a ranked view of a known buffer."""
        where = f"'{op.name}' at {op.location}"
        source = op.operands[0]
        cast = irutil.defining_op(source)
        if cast is None or cast.name != "memref.cast" or \
                not isinstance(cast.operands[0].type, ir.MemRefType):
            raise UnsupportedError(f"host plan: {where}: expected its memref to be a "
                                   "memref.cast of a ranked memref, got "
                                   f"{'an argument' if cast is None else repr(cast.name)}")
        if source not in self.where:
            raise UnsupportedError(f"host plan: {where} describes a memref the plan does not "
                                   "know (a global or a computed pointer)")
        buffer = self.where[source]
        ranked = ir.MemRefType(cast.operands[0].type)
        if not ranked.has_static_shape:
            raise UnsupportedError(f"host plan: {where}: the memref {ranked} has a dynamic "
                                   "shape")
        try:
            strides, offset = ranked.get_strides_and_offset()
        except (RuntimeError, ValueError):
            raise UnsupportedError(f"host plan: {where}: the memref {ranked} has no strided "
                                   "layout") from None
        if any(ranked.is_dynamic_stride_or_offset(v) for v in list(strides) + [offset]):
            raise UnsupportedError(f"host plan: {where}: the memref {ranked} has a dynamic "
                                   "stride or offset")
        element = ranked.element_type
        text = str(op.results[0].type)
        m = _DESCRIPTOR.match(text)
        if not m:
            raise UnsupportedError(f"host plan: {where}: cannot read the descriptor type "
                                   f"{text}")
        tensor, swizzle, l2promo, oob, interleave = m.groups()
        if interleave != "none":
            raise UnsupportedError(f"host plan: {where}: interleave {interleave} is not "
                                   "supported (expected none)")
        for value, table, what in ((swizzle, SWIZZLE_BYTES, "swizzle"),
                                   (l2promo, L2_PROMOTION_BYTES, "l2promo"),
                                   (oob, OOB_FILL, "oob")):
            if value not in table:
                raise UnsupportedError(f"host plan: {where}: {what} {value} is not one of "
                                       f"{', '.join(table)}")
        box = ir.MemRefType(ir.Type.parse(tensor))
        shape = [int(n) for n in ranked.shape]
        record = {"kind": "tma", "buffer": buffer,
                  "byte_offset": int(offset) * irutil.element_bytes(element),
                  "dtype": str(element), "shape": shape,
                  "strides": _unit_dims_aligned(shape, [int(v) for v in strides],
                                                irutil.element_bytes(element)),
                  "box": [int(n) for n in box.shape],
                  "swizzle": SWIZZLE_BYTES[swizzle],
                  "l2_promotion": L2_PROMOTION_BYTES[l2promo], "oob_fill": OOB_FILL[oob]}
        if IM2COL_ATTR in op.attributes:
            record["im2col"] = _im2col(op.attributes[IM2COL_ATTR], where, ranked.rank,
                                       record["box"])
        return record

    def _descriptor_address(self, op):
        """The tma record of an unrealized_conversion_cast of a descriptor to
        !llvm.ptr (the address the kernel gets)."""
        if len(op.operands) != 1 or len(op.results) != 1 or \
                op.operands[0] not in self.descriptors or \
                not isinstance(op.results[0].type, llvm.PointerType):
            raise UnsupportedError(f"host plan: '{op.name}' at {op.location}: expected a cast "
                                   "of one nvgpu.tma.create.descriptor result to !llvm.ptr")
        return self.descriptors[op.operands[0]]

    def _call(self, op):
        callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
        fn = self.functions.get(callee)
        if fn is None or not len(fn.regions[0].blocks):
            raise UnsupportedError(f"host plan: call of external function @{callee}")
        for arg, operand in zip(irutil.body(fn).arguments, op.operands):
            if isinstance(operand.type, ir.MemRefType):
                self.where[arg] = self._buffer_of(operand, op)
            # scalars flow through constants only; see _scalar.
        self._function(fn, fn)

    def _launch(self, op, fn):
        launch = op.opview
        grid = [self._const(v, op, "grid") for v in
                (launch.gridSizeX, launch.gridSizeY, launch.gridSizeZ)]
        block = [self._const(v, op, "block") for v in
                 (launch.blockSizeX, launch.blockSizeY, launch.blockSizeZ)]
        shared = launch.dynamicSharedMemorySize
        clusters = (launch.clusterSizeX, launch.clusterSizeY, launch.clusterSizeZ)
        cluster = None if any(v is None for v in clusters) else \
            [self._const(v, op, "cluster") for v in clusters]
        args = []
        for value in launch.kernelOperands:
            if isinstance(value.type, ir.MemRefType):
                args.append({"kind": "buffer", "buffer": self._buffer_of(value, op),
                             "byte_offset": 0})
            elif isinstance(value.type, llvm.PointerType):
                if value not in self.tma:
                    raise UnsupportedError(f"host plan: pointer kernel argument at "
                                           f"{op.location} is not the address of a TMA "
                                           "descriptor (nvgpu.tma.create.descriptor cast to "
                                           "!llvm.ptr)")
                args.append(dict(self.tma[value]))
            elif value in self.loaded:
                args.append({"kind": "scalar_input", "type": "f32",
                             "buffer": self.loaded[value]})
            else:
                args.append(self._scalar(value, op))
        target = tuple(ir.SymbolRefAttr(op.attributes["kernel"]).value)
        entry = target[-1]
        self._check_inputs_read_only(target, args, entry)
        record = {"name": irutil.symbol(fn), "entry": entry, "strategy": _strategy(fn)}
        config = _config(fn)
        if config:
            record["config"] = config
        reason = _reason(fn, self.graph_name)
        if reason:
            record["reason"] = reason
        self.kernels.append({
            **record,
            "grid": grid,
            "block": block,
            "shared_bytes": self._const(shared, op, "shared memory") if shared is not None
            else 0,
            **({"cluster": cluster} if cluster else {}),
            "args": args,
        })

    def _check_inputs_read_only(self, target, args, entry):
        fn = self.gpu_funcs.get(target)
        if fn is None:
            return  # after gpu-module-to-binary: the bodies are gone
        for index in _stored_arguments(fn):
            a = args[index]
            # A tma arg is only read (TMA loads): it may describe an input.
            if a["kind"] == "buffer" and self.buffers[a["buffer"]]["kind"] == "input":
                name = self.buffers[a["buffer"]]["index"]
                raise LoweringError(f"kernel '{entry}' writes graph input {name}: inputs are "
                                    "read-only")

    def _const(self, value, op, what):
        n = irutil.constant_int(value)
        if n is None:
            raise UnsupportedError(f"host plan: launch at {op.location} has a dynamic {what} "
                                   "size")
        return n

    def _scalar(self, value, op):
        number = irutil.constant_scalar(value)
        t = value.type
        if number is None:
            raise UnsupportedError(f"host plan: kernel argument of type {t} at {op.location} "
                                   "is not a constant")
        if isinstance(t, ir.IndexType) or (isinstance(t, ir.IntegerType) and t.width == 64):
            return {"kind": "scalar", "type": "i64", "value": int(number)}
        if isinstance(t, ir.IntegerType) and t.width == 32:
            return {"kind": "scalar", "type": "i32", "value": int(number)}
        if isinstance(t, ir.F32Type):
            return {"kind": "scalar", "type": "f32", "value": float(number)}
        raise UnsupportedError(f"host plan: kernel argument of type {t} at {op.location}: "
                               "expected a memref, index, i32, i64 or f32")


def _im2col(attr, where, rank, box):
    """The ``im2col`` field of a tma record: ``dnn.im2col`` of a descriptor
    of a rank ``rank`` tensor whose box is ``box``, checked."""
    what = f"host plan: {where}: {IM2COL_ATTR}"
    if not 3 <= rank <= 5:
        raise UnsupportedError(f"{what}: expected a tensor of rank 3 to 5 (N, [D, H,] W, C), "
                               f"got rank {rank}")
    if len(box) != 2:
        raise UnsupportedError(f"{what}: expected a box of two dims [pixels, channels], "
                               f"got {box}")
    keys = [] if not isinstance(attr, ir.DictAttr) else [attr[i].name for i in range(len(attr))]
    if sorted(keys) != sorted(_IM2COL_KEYS):
        raise UnsupportedError(f"{what}: expected a dictionary of {', '.join(_IM2COL_KEYS)}, "
                               f"got {attr}")
    field = {}
    for key, length in zip(_IM2COL_KEYS, (rank - 2, rank - 2, rank)):
        value = attr[key]
        if not isinstance(value, ir.DenseI64ArrayAttr):
            raise UnsupportedError(f"{what}: {key}: expected array<i64: ...>, got {value}")
        field[key] = [int(v) for v in value]
        if len(field[key]) != length:
            raise UnsupportedError(f"{what}: {key}: expected {length} entries for a rank "
                                   f"{rank} tensor, got {field[key]}")
    return field


def _stored_arguments(fn):
    """Indices of the arguments of gpu.func ``fn`` that some memref.store or
    vector.store (or a store into a view of it) writes. Workgroup buffers
    follow the arguments among the block's arguments: they are not counted."""
    params = len(irutil.function_type(fn).inputs)
    args = list(irutil.body(fn).arguments)[:params]
    stored = set()
    for store in irutil.ops(fn, "memref.store") + irutil.ops(fn, "vector.store"):
        target = store.operands[1]
        while not irutil.is_block_argument(target):
            op = irutil.defining_op(target)
            if op.name not in VIEWS:
                break
            target = op.operands[0]
        if irutil.is_block_argument(target) and target in args:
            stored.add(args.index(target))
    return sorted(stored)


def _strategy(fn):
    if irutil.CONFIG_ATTR in fn.attributes:
        config = ir.DictAttr(fn.attributes[irutil.CONFIG_ATTR])
        if "strategy" in config:
            return ir.StringAttr(config["strategy"]).value
    return "simt-generic"


def _config(fn):
    """The kernel function's ``dnn.config`` as a JSON-able dict ({} if none)."""
    if irutil.CONFIG_ATTR not in fn.attributes:
        return {}
    return _json(fn.attributes[irutil.CONFIG_ATTR])


def _json(attr):
    """A config attribute as JSON: strings, numbers, booleans, lists, dicts."""
    if isinstance(attr, ir.StringAttr):
        return attr.value
    if isinstance(attr, ir.BoolAttr):
        return bool(attr.value)
    if isinstance(attr, ir.IntegerAttr):
        return int(attr.value)
    if isinstance(attr, ir.FloatAttr):
        return float(attr.value)
    if isinstance(attr, ir.DictAttr):
        return {attr[i].name: _json(attr[i].attr) for i in range(len(attr))}
    if isinstance(attr, ir.ArrayAttr):
        return [_json(a) for a in attr]
    if isinstance(attr, ir.DenseI64ArrayAttr):
        return [int(v) for v in attr]
    return str(attr)


# Kernel functions made after the heuristics ran (dnn.anchor "copy" or
# "fill"), by the name their pass gives them: <graph><suffix>...
_LATE_KERNELS = (
    ("_load_", "dnn-io-strides", "copies a strided graph input to a row-major buffer"),
    ("_store_", "dnn-io-strides", "copies a row-major buffer to a strided graph output"),
    ("_fill", "dnn-host-to-kernels", "fills a splat constant"),
    ("_copy", "dnn-host-to-kernels", "a copy that bufferization left on the host"),
)


def _reason(fn, graph_name):
    """Why the kernel has its config: dnn-configure's dnn.config_reason, or,
    for a kernel made after the configured stage (a layout copy, a fill),
    which pass made it; "" when neither applies."""
    if REASON_ATTR in fn.attributes:
        return ir.StringAttr(fn.attributes[REASON_ATTR]).value
    anchor = ir.StringAttr(fn.attributes["dnn.anchor"]).value \
        if "dnn.anchor" in fn.attributes else ""
    if anchor not in ("copy", "fill"):
        return ""
    name = irutil.symbol(fn)
    config = ir.DictAttr(fn.attributes[irutil.CONFIG_ATTR]) \
        if irutil.CONFIG_ATTR in fn.attributes else None
    how = "default config (dnn-default-config)"
    if config is not None and "vector" in config:
        how += (f": vectors of {ir.IntegerAttr(config['vector']).value}, the copy keeps its "
                f"innermost dim")
    for suffix, made_by, what in _LATE_KERNELS:
        if name.startswith(graph_name + suffix):
            return f"created by {made_by} after the heuristics ({what}); {how}"
    return f"created by dnn-io-strides/dnn-host-to-kernels after the heuristics; {how}"


def _nothing_to_launch(graph, n_inputs):
    """The message for a graph whose plan has no launch: which outputs are empty."""
    args = list(irutil.body(graph).arguments)
    empty = []
    for i, arg in enumerate(args[n_inputs:]):
        t = ir.MemRefType(arg.type)
        if any(n == 0 for n in t.shape):
            empty.append(f"output '{_arg_name(graph, n_inputs + i, f'output{i}')}' dims "
                         f"{list(t.shape)}")
    name = irutil.symbol(graph)
    if empty and len(empty) == len(args) - n_inputs:
        return (f"graph '{name}': nothing to launch: every output has a zero-size dim "
                f"({', '.join(empty)}); a package without kernels is not supported: give "
                "some output at least one element")
    return f"graph '{name}': the host code launches no kernel"


def _arg_name(fn, index, default):
    if "arg_attrs" in fn.attributes:
        attrs = ir.DictAttr(ir.ArrayAttr(fn.attributes["arg_attrs"])[index])
        if "dnn.name" in attrs:
            return ir.StringAttr(attrs["dnn.name"]).value
    return default


def extract(module, n_inputs):
    """The plan (``workspace_bytes``, ``buffers``, ``kernels``) of a module
    after the ``gpu`` stage or later, whose graph function takes ``n_inputs``
    inputs followed by the outputs."""
    with module.context:
        return _Planner(getattr(module, "operation", module), n_inputs).run()


def check(plan, entries):
    """Check a plan against the PTX ``entries`` (ptx.entries) and the launch
    limits; raise LoweringError naming the kernel on the first problem. A
    ``tma`` argument's parameter must be the 128-byte descriptor by value
    (``b8[128]``)."""
    n_buffers = len(plan["buffers"])
    for k in plan["kernels"]:
        name = k["entry"]
        if name not in entries:
            raise LoweringError(f"kernel '{name}' is launched but not in the PTX")
        if len(entries[name]) != len(k["args"]):
            raise LoweringError(f"kernel '{name}': expected {len(entries[name])} PTX "
                                f"parameters, the plan has {len(k['args'])} arguments")
        threads = k["block"][0] * k["block"][1] * k["block"][2]
        if not 1 <= threads <= MAX_BLOCK_THREADS:
            raise LoweringError(f"kernel '{name}': expected 1 to {MAX_BLOCK_THREADS} threads "
                                f"per block, got {threads}")
        for g, limit in zip(k["grid"], MAX_GRID):
            if not 1 <= g <= limit:
                raise LoweringError(f"kernel '{name}': grid {k['grid']} exceeds {MAX_GRID}")
        for a, param in zip(k["args"], entries[name]):
            if a["kind"] in ("buffer", "tma", "scalar_input") and \
                    not 0 <= a["buffer"] < n_buffers:
                raise LoweringError(f"kernel '{name}': argument names buffer {a['buffer']}, "
                                    f"expected 0 to {n_buffers - 1}")
            if a["kind"] == "tma" and param != TMA_PARAM:
                raise LoweringError(f"kernel '{name}': a TMA descriptor argument needs the "
                                    f"PTX parameter .param .align 64 .b8 NAME[128] (the "
                                    f"CUtensorMap by value), got .{param} (did "
                                    "dnn-tma-grid-constant run?)")


def _unit_dims_aligned(shape, strides, element_bytes):
    """``strides`` with those of outer dims of size 1 replaced by the span of
    the dims inside them, rounded up to 16 bytes. A dim of size 1 is never
    stepped, so its stride addresses nothing, but cuTensorMapEncode wants
    every outer stride a multiple of 16 bytes (a GEMM of M = 1 over an odd
    K has a row stride of K elements: 122 bytes for 61 bf16)."""
    out = list(strides)
    for i in range(len(shape) - 1):
        if shape[i] == 1 and (out[i] * element_bytes) % 16:
            span = max(s * n for s, n in zip(out[i + 1:], shape[i + 1:]))
            out[i] = -(-span * element_bytes // 16) * 16 // element_bytes
    return out
