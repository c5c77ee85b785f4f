"""The launch plan of a lowered module: what the runtime must do, as data.

After the ``gpu`` stage the host side is the graph function (its arguments:
the graph's inputs, then its outputs) calling kernel functions, which
allocate scratch buffers and launch kernels. ``extract`` walks it in program
order, following calls, and records:

* ``buffers``: the inputs and outputs (by position), then one workspace slice
  per ``memref.alloc`` (offsets aligned to ``ALIGNMENT`` bytes; nothing is
  reused yet);
* ``kernels``: one record per ``gpu.launch_func``: the kernel function it came
  from (``name``), the PTX ``entry``, its strategy (and ``reason``, the
  heuristics' ``dnn.config_reason``, when the kernel function has one), grid
  and block (constants), dynamic shared memory, and its arguments in PTX
  parameter order. Kernels are lowered with the bare-pointer convention, so
  a memref argument is one pointer parameter: a buffer plus ``byte_offset``
  (0: a view's static offset is folded into the kernel's code); an index /
  integer / float constant is a scalar.

Anything else on the host (a copy, a loop, a dynamic size) cannot be planned
and raises UnsupportedError naming the op. A kernel that stores into a graph
input (bufferization reusing an input buffer) is a LoweringError: the runtime
binds the caller's tensors, which must not change.
"""

from mlir import ir

from dnnc.codegen.gpu import irutil
from dnnc.errors import LoweringError, UnsupportedError

ALIGNMENT = 256
MAX_BLOCK_THREADS = 1024
MAX_GRID = (2 ** 31 - 1, 65535, 65535)

# Ops whose result is a view of their first operand's memory: same pointer.
VIEWS = frozenset({"memref.subview", "memref.expand_shape", "memref.collapse_shape",
                   "memref.cast", "memref.reinterpret_cast"})
IGNORED = frozenset({"arith.constant", "memref.dealloc"})
REASON_ATTR = "dnn.config_reason"


class _Planner:
    def __init__(self, module, n_inputs):
        self.module = module
        self.functions = {irutil.symbol(f): f for f in irutil.functions(module)}
        self.n_inputs = n_inputs
        self.buffers = []
        self.workspace = 0
        self.kernels = []
        self.where = {}  # memref Value -> buffer index
        self.gpu_funcs = {}  # (module, kernel) -> gpu.func op
        for gm in irutil.body(module).operations:
            if gm.operation.name == "gpu.module":
                for f in irutil.body(gm.operation).operations:
                    if f.operation.name == "gpu.func":
                        key = (irutil.symbol(gm.operation), irutil.symbol(f.operation))
                        self.gpu_funcs[key] = f.operation

    def run(self):
        graph = irutil.graph_function(self.module)
        args = list(irutil.body(graph).arguments)
        if len(args) < self.n_inputs:
            raise LoweringError(f"graph function has {len(args)} arguments, expected at least "
                                f"{self.n_inputs} inputs")
        for i, arg in enumerate(args):
            kind, index = ("input", i) if i < self.n_inputs else ("output", i - self.n_inputs)
            self.where[arg] = self._add({"kind": kind, "index": index})
        self._function(graph, None)
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
            elif name == "func.call":
                self._call(op)
            elif name == "gpu.launch_func":
                self._launch(op, kernel_fn or fn)
            else:
                raise UnsupportedError(f"host plan: '{name}' on the host at {op.location} is "
                                       "not a launch, an allocation or a view; it cannot run "
                                       "on the GPU")

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
        args = []
        for value in launch.kernelOperands:
            if isinstance(value.type, ir.MemRefType):
                args.append({"kind": "buffer", "buffer": self._buffer_of(value, op),
                             "byte_offset": 0})
            else:
                args.append(self._scalar(value, op))
        target = tuple(ir.SymbolRefAttr(op.attributes["kernel"]).value)
        entry = target[-1]
        self._check_inputs_read_only(target, args, entry)
        record = {"name": irutil.symbol(fn), "entry": entry, "strategy": _strategy(fn)}
        reason = _reason(fn)
        if reason:
            record["reason"] = reason
        self.kernels.append({
            **record,
            "grid": grid,
            "block": block,
            "shared_bytes": self._const(shared, op, "shared memory") if shared is not None
            else 0,
            "args": args,
        })

    def _check_inputs_read_only(self, target, args, entry):
        fn = self.gpu_funcs.get(target)
        if fn is None:
            return  # after gpu-module-to-binary: the bodies are gone
        for index in _stored_arguments(fn):
            a = args[index]
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


def _stored_arguments(fn):
    """Indices of the arguments of gpu.func ``fn`` that some memref.store (or a
    store into a view of it) writes."""
    args = list(irutil.body(fn).arguments)
    stored = set()
    for store in irutil.ops(fn, "memref.store"):
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


def _reason(fn):
    """Why the kernel has its config (dnn-configure's dnn.config_reason); ""
    for a kernel made after the configured stage (a layout copy, a fill)."""
    if REASON_ATTR in fn.attributes:
        return ir.StringAttr(fn.attributes[REASON_ATTR]).value
    return ""


def extract(module, n_inputs):
    """The plan (``workspace_bytes``, ``buffers``, ``kernels``) of a module
    after the ``gpu`` stage or later, whose graph function takes ``n_inputs``
    inputs followed by the outputs."""
    with module.context:
        return _Planner(getattr(module, "operation", module), n_inputs).run()


def check(plan, entries):
    """Check a plan against the PTX ``entries`` (ptx.entries) and the launch
    limits; raise LoweringError naming the kernel on the first problem."""
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
        for a in k["args"]:
            if a["kind"] == "buffer" and not 0 <= a["buffer"] < n_buffers:
                raise LoweringError(f"kernel '{name}': argument names buffer {a['buffer']}, "
                                    f"expected 0 to {n_buffers - 1}")
